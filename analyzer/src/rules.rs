//! The catalogue of findings, in ruff's manner: one entry per code with its
//! severity, a short name, and the explanation `port explain CODE` prints.
//! Codes are stable and grouped by prefix:
//! PORT1xx force object mode, PORT2xx block the GPU, PORT3xx cost speed on
//! the GPU, PORT4xx are notes on what a verdict rests on.

use crate::model::Severity;

pub struct Rule {
    pub code: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    /// Markdown: what it does, why it matters, an example, the fix.
    pub doc: &'static str,
}

macro_rules! rules {
    ($($code:literal $name:literal $sev:ident $doc:literal;)*) => {
        pub const RULES: &[Rule] = &[$(Rule { code: $code, name: $name, severity: Severity::$sev, doc: $doc }),*];
    };
}

rules! {
"PORT101" "unsupported-module" Object
"## What it does
Flags use of a module that Numba's nopython mode cannot type (`hashlib`, `os`,
`time`, `pandas`, `scipy`, …).

## Why is this bad?
Nopython mode compiles only what it can type. Numba's own error is
`Unknown attribute 'md5' of type Module(hashlib)`; the function falls back to
object mode, which runs at interpreter speed and can never reach the GPU.

## Example
```python
def hash_computation(x):
    for i in range(len(x)):
        x[i] = x[i] ** 2
    return hashlib.md5(x).digest()
```

## Fix
Outline the numeric part into its own function (port lists it as a liftable
loop) and keep the library call outside it:
```python
def square(x):
    for i in range(len(x)):
        x[i] = x[i] ** 2

def hash_computation(x):
    square(x)
    return hashlib.md5(x).digest()
```";

"PORT102" "unsupported-numpy" Object
"## What it does
Flags a NumPy function that Numba's nopython mode does not implement
(`np.fft.*`, `np.einsum`, `np.pad`, `np.save`, `np.vectorize`, …).

## Why is this bad?
Numba reimplements NumPy; what it has not reimplemented cannot be typed
(`Use of unsupported NumPy function 'numpy.fft.fft'`), so the function needs
object mode.

## Example
```python
def spectrum(x):
    return np.abs(np.fft.fft(x))
```

## Fix
Call the unsupported function outside the compiled code, and pass its result in.
See Numba's list of supported NumPy features.";

"PORT103" "unsupported-builtin" Object
"## What it does
Flags a builtin that nopython mode does not support (`open`, `getattr`,
`setattr`, `eval`, `super`, `id`, …).

## Why is this bad?
These builtins work on arbitrary Python objects; nopython mode has no type for
them (`Untyped global name 'open'`).

## Example
```python
def load(path):
    return open(path).read()
```

## Fix
Do the I/O or reflection in plain Python around the numeric function.";

"PORT104" "python-object" Object
"## What it does
Flags Python classes and instances: instantiating an app class, reading or
writing attributes of `self` or of any object that is not an array.

## Why is this bad?
Nopython mode types values, not objects: a Python class instance has no Numba
type (`Cannot determine Numba type of <class 'Particle'>`).

## Example
```python
def step(self, dt):
    self.x += self.v * dt
```

## Fix
Keep the data in NumPy arrays and pass the arrays, not the object, to the
numeric function (`step(x, v, dt)`), or use `numba.experimental.jitclass`.";

"PORT105" "context-manager" Object
"## What it does
Flags `with` blocks.

## Why is this bad?
Nopython mode supports no context manager except `numba.objmode`
(`Unsupported context manager in use`).

## Example
```python
def log_sum(x, path):
    with open(path, 'w') as f:
        f.write(str(x.sum()))
```

## Fix
Move the `with` block out of the numeric function.";

"PORT106" "exception-handling" Object
"## What it does
Flags `try` statements in forms nopython mode cannot compile: catching a
specific exception class, binding the exception (`as e`), `finally`, or
`except*`.

## Why is this bad?
Numba compiles only `try: … except:` and `try: … except Exception:` without
binding the exception object.

## Example
```python
def safe_div(a, b):
    try:
        return a / b
    except ZeroDivisionError as e:
        return 0.0
```

## Fix
Test the condition instead of catching (`if b == 0: return 0.0`).";

"PORT107" "string-formatting" Object
"## What it does
Flags string formatting (`'%d' % n`, `str.format`, f-strings with non-string
values) and string operations nopython mode does not implement.

## Why is this bad?
Numba's unicode support covers slicing, comparison, concatenation and common
methods, not formatting of numbers.

## Example
```python
def report(x):
    return 'mean = {}'.format(x.mean())
```

## Fix
Compute in the compiled function, format the result outside it.";

"PORT108" "kwargs" Object
"## What it does
Flags `**kwargs` parameters.

## Why is this bad?
Nopython mode cannot type a dictionary of keyword arguments.

## Example
```python
def scale(x, **opts):
    return x * opts['factor']
```

## Fix
Name the parameters explicitly: `def scale(x, factor):`.";

"PORT109" "global-mutation" Object
"## What it does
Flags `global` and `nonlocal` statements that rebind names outside the function.

## Why is this bad?
Numba freezes globals as compile-time constants; it cannot store to them
(`Use of unsupported opcode (STORE_GLOBAL)`).

## Example
```python
calls = 0
def f(x):
    global calls
    calls += 1
    return x * 2
```

## Fix
Return the new value, or keep the state in an array passed as an argument.";

"PORT110" "mutable-global" Object
"## What it does
Flags reads of a module-level list, dict, set or object from inside a function.

## Why is this bad?
Numba treats globals as constants and can only freeze numbers, tuples and
arrays; a reflected list or a dict global cannot be typed.

## Example
```python
WEIGHTS = [0.2, 0.5, 0.3]
def blend(x):
    return x * WEIGHTS[0]
```

## Fix
Make the global a tuple or a NumPy array, or pass it as an argument.";

"PORT111" "escaping-function" Object
"## What it does
Flags functions or lambdas that escape: returned, stored, or passed to
something that is not compiled.

## Why is this bad?
Numba can inline a closure called where it is defined, but cannot return one
or hand it to the interpreter.

## Example
```python
def make_scaler(k):
    return lambda x: x * k
```

## Fix
Return values, not functions; or define the callee at module level and pass
its parameters.";

"PORT112" "unsupported-syntax" Object
"## What it does
Flags syntax nopython mode cannot compile: `async`/`await`, `match`,
`import` inside a function, class definitions inside a function, starred
assignment targets, `del` of subscripts.

## Why is this bad?
Each compiles to bytecode that Numba does not translate
(`Use of unsupported opcode`).

## Example
```python
def f(x):
    import math
    return math.sqrt(x)
```

## Fix
Move imports and classes to module level; replace `match` with `if`/`elif`.";

"PORT113" "calls-object-mode" Object
"## What it does
Flags calls to app functions whose own verdict is `object`.

## Why is this bad?
A compiled function can only call compiled functions; if the callee needs
object mode, so does the caller.

## Example
```python
def checksum(x):
    return hashlib.md5(x).digest()

def process(x):
    x *= 2
    return checksum(x)
```

## Fix
Fix the callee first (see its findings), or move the call out of the numeric
function.";

"PORT114" "unsupported-method" Object
"## What it does
Flags a method call or attribute that nopython mode does not implement for the
receiver's type (`ndarray.tolist()`, `str.format()`, attributes of values
returned by unsupported libraries).

## Why is this bad?
Numba implements a subset of each type's methods; the rest cannot be typed.

## Example
```python
def to_list(x):
    return (x * 2).tolist()
```

## Fix
Call the method outside the compiled function.";

"PORT115" "unknown-name" Object
"## What it does
Flags calls to names port cannot resolve to a function Numba can compile:
names imported from packages Numba does not support, or undefined names.

## Why is this bad?
Numba must type every callee (`Untyped global name 'erf'`).

## Example
```python
from scipy.special import erf
def cdf(x):
    return 0.5 * (1 + erf(x / 1.4142135623730951))
```

## Fix
Use the `math` equivalent (`math.erf`) or compute the value outside.";

"PORT116" "numpy-axis" Object
"## What it does
Flags an `axis=` argument (keyword or positional) to a NumPy reduction whose
nopython implementation takes none: `np.mean`, `np.max`/`np.amax`,
`np.min`/`np.amin`, `np.std`, `np.var`, `np.prod`, `np.any`, `np.all`,
`np.median`, `np.ptp`, `np.cumprod`, the `np.nan*` reductions and their
array methods (`a.mean(axis=0)`). `np.sum`,
`np.argmax`, `np.argmin` and `np.cumsum` do take an integer `axis`.

## Why is this bad?
Numba 0.68 supports the function but not the argument: `No implementation of
function ... mean(array(float64, 2d, A), axis=int64)`, so `@njit` fails and
the function needs object mode. When `port migrate` can still plan it (the
`axis_reduction` rewrite), the verdict is `cuda` with a PORT406 note: a lead
over Numba, not a disagreement.

## Example
```python
def col_means(a):
    return np.mean(a, axis=0)
```

## Fix
For Numba, write the reduction as a loop over the other axis; or migrate it
with `port migrate`, which reduces along an axis on the GPU.";

"PORT117" "numpy-keepdims" Object
"## What it does
Flags `keepdims=` in a call to a NumPy reduction.

## Why is this bad?
No reduction in Numba 0.68's nopython mode takes `keepdims`
(`np.sum(a, axis=0, keepdims=True)` fails to type), so the function needs
object mode.

## Example
```python
def normalise(x):
    return x / np.max(x, axis=-1, keepdims=True)
```

## Fix
Reduce without `keepdims` and index the result with `None` where it is
broadcast (`m[:, None]`); `port migrate` takes the `keepdims` form as it is.";

"PORT118" "numpy-keyword" Object
"## What it does
Flags a keyword argument that Numba's implementation of a supported NumPy
function does not accept: `np.histogram(..., weights=/density=)`,
`np.linspace(..., dtype=/endpoint=/retstep=/axis=)`, and any keyword
(`out=`, `where=`, `dtype=`) to a ufunc such as `np.sqrt`.

## Why is this bad?
Numba documents its NumPy support argument by argument: an accepted function
with an unaccepted argument still fails to type (`unsupported keyword
arguments when calling Function(<ufunc 'sqrt'>)`), so the function needs
object mode.

## Example
```python
def weighted_hist(a, w):
    return np.histogram(a, bins=10, weights=w)
```

## Fix
Drop the argument and do its work by hand: cast after `np.linspace`
(`.astype(np.float32)`), pass a ufunc's output positionally
(`np.sqrt(a, out)`), bin with weights in a loop.";

"PORT119" "ufunc-method" Object
"## What it does
Flags the methods of NumPy ufuncs: `np.add.outer`, `np.add.reduce`,
`np.multiply.accumulate`, `np.maximum.at`, `.reduceat`.

## Why is this bad?
Numba 0.68 compiles ufunc calls but not their methods: `Unknown attribute
'outer' of type Function(<ufunc 'add'>)`, so the function needs object mode.

## Example
```python
def pairwise(a, b):
    return np.add.outer(a, b)
```

## Fix
Broadcast instead: `a[:, None] + b[None, :]` for `outer`, `np.sum` for
`reduce`, `np.cumsum` for `add.accumulate`.";

"PORT120" "list-shape" Object
"## What it does
Flags a shape or axes given as a list where Numba wants a tuple:
`np.empty([n, m])`, `np.zeros([n])`, `np.full([n, m], v)`,
`np.transpose(a, [1, 0, 2])`.

## Why is this bad?
Numba types a list as a reflected/typed list, not as a shape:
`No implementation of function ... empty(list(int64))`. The function needs
object mode although the tuple form compiles.

## Example
```python
def grid(n, m):
    return np.zeros([n, m])
```

## Fix
Write the shape as a tuple: `np.zeros((n, m))`.";

"PORT121" "matmul-rank" Object
"## What it does
Flags `@`, `np.dot` and `np.matmul` on arrays of more than two dimensions,
and the function `np.matmul` itself.

## Why is this bad?
Numba 0.68 implements `@` and `np.dot` for vectors and matrices only
(`_impl(array(float64, 3d, A), ...)` has no implementation), and does not
implement `np.matmul` at all. The function needs object mode.

## Example
```python
def batched(a, b):   # a, b: float64[:, :, :]
    return a @ b
```

## Fix
Loop over the leading (batch) dimension and multiply matrices; write
`np.matmul(a, b)` as `a @ b` for 2-D arrays.";

"PORT122" "scipy-special" Object
"## What it does
Flags calls of `scipy.special` functions that have a CUDA equivalent: `erf`,
`erfc`, `gamma`, `gammaln`, `expit`, however imported (`scipy.special.erf`, `from scipy.special
import erf`, `special.erf`).

## Why is this bad?
Numba compiles `scipy.special` only with the separate numba-scipy package
(`Untyped global name 'erf'`), so plain `@njit` needs object mode for them.
`port migrate` maps them to libdevice's `erf`/`erfc`/`tgamma`/`lgamma`
(real arguments) and to scipy's own
formula for `expit` (`1 / (1 + exp(-x))`), element by element, keeping
float32 as float32.

## Example
```python
from scipy.special import expit
def logistic_layer(x, w):
    return expit(x @ w)
```

## Fix
Nothing, for `port migrate`. For `@njit`, install numba-scipy or use
`math.erf`.";

"PORT201" "container" Blocker
"## What it does
Flags Python lists, dicts, sets and comprehensions that build them.

## Why is this bad?
Nopython mode compiles them (typed lists and dicts), but a CUDA kernel has no
heap: numba-cuda supports neither lists nor dicts on the device.

## Example
```python
def squares(n):
    return [i * i for i in range(n)]
```

## Fix
Use a preallocated NumPy array (port hoists the allocation to the host
wrapper) or a tuple of fixed size.";

"PORT202" "recursion" Blocker
"## What it does
Flags functions that call themselves, directly or through others.

## Why is this bad?
Nopython mode compiles type-stable recursion, but port will not turn recursion
into a kernel: each GPU thread has a tiny stack and the depth is data-dependent.

## Example
```python
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
```

## Fix
Rewrite as a loop with explicit state.";

"PORT203" "generator" Blocker
"## What it does
Flags generator functions (`yield`).

## Why is this bad?
Nopython mode compiles simple generators; a GPU thread cannot suspend and
resume.

## Example
```python
def evens(x):
    for v in x:
        if v % 2 == 0:
            yield v
```

## Fix
Write results into an output array instead of yielding them.";

"PORT204" "loop-carried-dependence" Blocker
"## What it does
Flags a loop over array elements whose iterations depend on each other and
that is not a recognised reduction: a scan (`acc += x[i]; out[i] = acc`), a
recurrence (`y[i] = y[i-1] * a + x[i]`), or every iteration writing the same
element.

## Why is this bad?
A grid-stride loop runs iterations at the same time on different threads;
with a dependence the result would be wrong, and port never emits a kernel
that races. A reduction (`s += f(x[i])` with `s` not read otherwise) is fine:
it becomes a reduction kernel.

## Example
```python
def cumulative(x, out):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc
```

## Fix
Use a parallel scan (CuPy's `cumsum`), or restructure so each iteration only
reads its own inputs.";

"PORT205" "data-dependent-allocation" Blocker
"## What it does
Flags arrays whose size depends on the data: boolean-mask indexing
(`x[x > 0]`), `np.nonzero`, `np.unique`, sizes computed from array values.

## Why is this bad?
A kernel cannot allocate; port hoists allocations to the host wrapper, which
must know their size before the launch.

## Example
```python
def positives(x):
    return x[x > 0]
```

## Fix
Produce a mask or a fixed-size output and compact on the host.";

"PORT206" "numpy-no-kernel" Blocker
"## What it does
Flags NumPy functions nopython mode supports but a CUDA kernel cannot run:
`np.linalg`, sorting, scans (`cumsum`), `np.random`, whole-array linear algebra.

## Why is this bad?
numba-cuda implements math on scalars, not NumPy's library. Elementwise
ufuncs and simple reductions are rewritten by port; these are not.

## Example
```python
def solve(a, b):
    return np.linalg.solve(a, b)
```

## Fix
Keep the call on the host, or use the CUDA library that provides it (CuPy,
cuBLAS, cuSOLVER).";

"PORT207" "string" Blocker
"## What it does
Flags string values and string operations.

## Why is this bad?
Nopython mode supports Unicode strings; CUDA kernels do not.

## Example
```python
def label(x):
    return 'big' if x > 10 else 'small'
```

## Fix
Use integer codes on the device and map them to strings on the host.";

"PORT208" "exception-in-kernel" Blocker
"## What it does
Flags `try`/`except` in a function otherwise fit for the GPU.

## Why is this bad?
CUDA kernels cannot catch exceptions.

## Example
```python
def f(x):
    try:
        return 1.0 / x
    except Exception:
        return 0.0
```

## Fix
Test the condition explicitly.";

"PORT209" "calls-serial-function" Blocker
"## What it does
Flags calls to app functions whose verdict is `nopython`.

## Why is this bad?
A kernel can only call device functions; a callee that cannot go to the GPU
keeps its caller off it too.

## Example
```python
def prefix(x, out):           # nopython: a scan
    ...
def pipeline(x, out):
    prefix(x, out)
```

## Fix
Fix the callee (see its findings), or split the caller so the GPU part does
not call it.";

"PORT210" "closure" Blocker
"## What it does
Flags nested functions and lambdas.

## Why is this bad?
Nopython mode inlines closures called locally; port's rewriter does not turn
them into device functions yet.

## Example
```python
def apply(x):
    sq = lambda v: v * v
    return sq(x)
```

## Fix
Define the helper at module level; port makes it a device function.";

"PORT211" "varargs" Blocker
"## What it does
Flags `*args` parameters.

## Why is this bad?
Nopython mode types `*args` as a tuple; a CUDA kernel needs a fixed
parameter list.

## Example
```python
def total(*arrays):
    ...
```

## Fix
Name the parameters.";

"PORT212" "builtin-no-kernel" Blocker
"## What it does
Flags builtins nopython supports but kernels do not (`sorted`, `str`, `list`,
`sum` over iterables, `isinstance`, …).

## Why is this bad?
numba-cuda supports the numeric builtins (`abs`, `min`, `max`, `range`,
`len`, `float`, `int`, `round`) and not the ones that build or walk
containers.

## Example
```python
def top(x):
    return sorted(x)[-1]
```

## Fix
Use a loop or a NumPy reduction that port rewrites.";

"PORT213" "random" Blocker
"## What it does
Flags use of the `random` module.

## Why is this bad?
Nopython mode supports `random`; a kernel needs per-thread generator state
(`numba.cuda.random.xoroshiro128p`), which changes the program's random
stream.

## Example
```python
def compute_pi(n):
    inside = 0
    for i in range(n):
        x, y = random.random(), random.random()
        if x * x + y * y <= 1.0:
            inside += 1
    return 4.0 * inside / n
```

## Fix
Rewrite with `create_xoroshiro128p_states` and `xoroshiro128p_uniform_float32`.";

"PORT214" "gpu-plan-refused" Blocker
"## What it does
Says why `port migrate` cannot plan the function: the migration planner was
asked at analysis time, with the captured argument types (or, without a
profile, the types read from how the body uses each argument, shown in
`migration_plan.signature`), and this is its refusal, with its line.

## Why is this bad?
The verdict `cuda` means exactly that `port migrate` has a plan for the
function; the planner is the one source of truth for what the GPU path takes.
A function it refuses compiles with `@njit` (or needs object mode, per the
other findings), but does not migrate.

## Example
`port migrate refuses it (host_schedule): a chained assignment whose first
target is not a name`

## Fix
Rewrite the construct the refusal names, or keep the function on the CPU
with `@njit`. If the assumed types are wrong, profile the program so real
types are captured, or migrate with `--signature`.";

"PORT301" "float64" Performance
"## What it does
Notes double-precision arithmetic in a function bound for the GPU.

## Why is this bad?
Consumer and many datacentre GPUs run float64 at 1/32 to 1/2 the rate of
float32; memory traffic doubles.

## Example
```python
x = np.zeros(n, dtype=np.float64)
```

## Fix
If the accuracy allows, migrate with `port migrate --fp32`.";

"PORT302" "tiny-loop" Performance
"## What it does
Notes a parallel loop over a small constant range.

## Why is this bad?
A kernel launch costs microseconds; a few dozen iterations cannot fill a GPU
with tens of thousands of threads.

## Example
```python
for i in range(3):
    out[i] = a[i] + b[i]
```

## Fix
Keep it on the CPU, or fuse it into a larger kernel.";

"PORT303" "small-arrays" Performance
"## What it does
Notes that a real call does little work: the trip counts of its loops (from
the captured arrays' shapes) times the elements each statement touches come
to fewer than 16,384 element operations. Said only when every trip count is
known; an all-pairs loop over two small arrays is not small.

## Why is this bad?
Host-device transfers and the launch cost more than so little work, and it
cannot fill a GPU's threads: offloading would not pay.

## Example
A function called with 100-element arrays and one loop over them.

## Fix
Batch calls together, or keep the function on the CPU.";

"PORT401" "assumed-type" Note
"## What it does
Says what type port assumed for a value it could not infer, and from which use.

## Why is this bad?
It is not: it tells you what the verdict rests on. If the assumption is wrong
the verdict may be too. Profiling (`port analyze APP.py`) replaces assumptions
with the types of real calls.

## Example
`assumes x is an array: indexed as x[i]`

## Fix
Annotate the parameter or profile the program.";

"PORT402" "reduction" Note
"## What it does
Notes a recognised reduction across a parallel loop (`s += f(x[i])`,
`np.sum(expr)`).

## Why is this bad?
It is not: port turns it into a reduction kernel (a block tree in shared
memory, one atomic per block).

## Example
```python
s = 0.0
for i in range(x.shape[0]):
    s += x[i] * x[i]
```

## Fix
Nothing to fix.";

"PORT403" "hoisted-allocation" Note
"## What it does
Notes an array allocation inside the function (`np.empty_like(x)`, an array
expression's result).

## Why is this bad?
It is not: kernels cannot allocate, so port's host wrapper allocates the array
before the launch and passes it in.

## Example
```python
def scale(x, a):
    return a * x
```

## Fix
Nothing to fix.";

"PORT404" "liftable-loop" Note
"## What it does
Names a loop of an object-mode function whose body would compile in nopython
mode: Numba's loop lifting would outline it.

## Why is this bad?
It is not: it shows you what to outline into its own function so that port can
move it to the GPU.

## Example
The squaring loop of `hash_computation` next to `hashlib.md5`.

## Fix
Move the loop into its own function.";

"PORT405" "gpu-plan" Note
"## What it does
Says how port would move a `cuda` function to the GPU: which loop becomes a
grid-stride loop, or that a scalar function becomes a device function.

## Why is this bad?
It is not: it is the plan `port migrate` follows, so you can check it before
migrating.

## Example
`loop at line 63 has independent iterations: it becomes a grid-stride loop`

## Fix
Nothing to fix.";

"PORT406" "lead-over-numba" Note
"## What it does
Says that `port migrate` can plan a function that Numba's nopython mode
would refuse (the PORT1xx findings beside it say why Numba refuses).

## Why is this bad?
It is not: the verdict is `cuda` because port migrates the construct to the
GPU (an `axis=`/`keepdims` reduction, say); Numba itself would need object
mode or a rewrite. A lead over Numba, not a disagreement.

## Example
`port migrates it, but Numba's nopython mode would refuse it: PORT116 at line 4`

## Fix
Nothing to fix for `port migrate`; for `@njit`, fix the PORT1xx findings.";
}

/// Object-mode findings about a call's arguments (PORT116–PORT121) that
/// port's migration planner may still take (an `axis=` reduction, a list
/// shape): a function whose object-mode findings are all among these is
/// still planned, and is `cuda` when the planner takes it.
pub const ARGUMENT_LEVEL_CODES: &[&str] = &[
    "PORT116", "PORT117", "PORT118", "PORT119", "PORT120", "PORT121",
];

/// Object-mode findings that are Numba's lists of NumPy functions (PORT102)
/// and methods (PORT114), or scipy.special functions port maps (PORT122),
/// not port's: the planner has its own list and
/// refuses what it cannot take by name and line (`np.ogrid`, `np.ndarray`
/// are templates to it).
pub const NUMBA_LIST_CODES: &[&str] = &["PORT102", "PORT114", "PORT122"];

/// Whether the migration planner should be asked despite an `object`
/// verdict: every object-mode finding is argument-level, a NumPy function
/// or method missing from Numba's lists, or a call to a function of the
/// program (PORT113), which the planner inlines and judges by its own body
/// (`mlp` calling a `softmax` that uses `keepdims=`).
pub fn planner_may_take(findings: &[crate::model::Finding]) -> bool {
    findings
        .iter()
        .filter(|f| f.severity == Severity::Object)
        .all(|f| {
            let code = f.code.as_str();
            ARGUMENT_LEVEL_CODES.contains(&code)
                || NUMBA_LIST_CODES.contains(&code)
                || code == "PORT113"
        })
}

pub fn rule(code: &str) -> Option<&'static Rule> {
    let code = code.trim().to_ascii_uppercase();
    RULES.iter().find(|r| r.code == code)
}

/// The group a code belongs to, for summaries ("PORT1xx: object mode").
pub fn group_of(code: &str) -> &'static str {
    match code.get(4..5) {
        Some("1") => "PORT1xx: needs object mode",
        Some("2") => "PORT2xx: blocks the GPU",
        Some("3") => "PORT3xx: GPU performance",
        _ => "PORT4xx: notes",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_documented_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for r in RULES {
            assert!(seen.insert(r.code), "duplicate code {}", r.code);
            for part in [
                "## What it does",
                "## Why is this bad?",
                "## Example",
                "## Fix",
            ] {
                assert!(r.doc.contains(part), "{} lacks {part}", r.code);
            }
            let expected = match &r.code[4..5] {
                "1" => Severity::Object,
                "2" => Severity::Blocker,
                "3" => Severity::Performance,
                _ => Severity::Note,
            };
            assert_eq!(r.severity, expected, "{} is in the wrong group", r.code);
        }
    }

    #[test]
    fn numba_list_gaps_let_the_planner_try_other_object_reasons_do_not() {
        let f = |code: &str| crate::model::Finding {
            code: code.into(),
            severity: rule(code).unwrap().severity,
            line: 1,
            message: String::new(),
        };
        assert!(planner_may_take(&[
            f("PORT102"),
            f("PORT116"),
            f("PORT204")
        ]));
        assert!(planner_may_take(&[f("PORT114"), f("PORT113")]));
        assert!(!planner_may_take(&[f("PORT102"), f("PORT104")]));
        assert!(!planner_may_take(&[f("PORT106")]));
    }

    #[test]
    fn lookup_is_case_insensitive() {
        assert_eq!(rule("port204").unwrap().name, "loop-carried-dependence");
        assert!(rule("PORT999").is_none());
    }
}
