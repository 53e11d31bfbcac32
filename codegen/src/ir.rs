//! The kernel IR: the one language the rewriter writes and codegen reads.
//!
//! A [`Module`] holds kernels and device functions. Bodies are structured
//! statements ([`Stmt`]) over typed expressions ([`Expr`]); there is no CFG and
//! no SSA, so the rewriter can build it straight from Python's AST and a person
//! can read its text form (see [`crate::text`]).
//!
//! Typing is strict: a binary operator takes two operands of the same scalar
//! type and there is no implicit promotion. The rewriter inserts [`Expr::Cast`]
//! where Python would promote. Integers are `i8` … `i64` and `u8` … `u64`:
//! they wrap on overflow, unsigned ones divide, compare and shift as
//! unsigned, and a literal of a type other than `i32`/`i64` is a cast of an
//! `i64` literal. Array indices may be any integer type (signed ones are
//! sign-extended to 64 bits, unsigned ones zero-extended); shapes, strides
//! and the variables of a [`Stmt::ParallelFor`] are `i64`. Indices must be
//! non-negative: Python's negative-index wrap-around is the rewriter's job
//! to normalise.

use serde::{Deserialize, Serialize};

/// A scalar type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ScalarType {
    Bool,
    I32,
    I64,
    F32,
    F64,
    I8,
    I16,
    U8,
    U16,
    U32,
    U64,
    /// `complex64`: two `f32`, real part first (NumPy's layout).
    C64,
    /// `complex128`: two `f64`, real part first.
    C128,
}

impl ScalarType {
    /// The name used in the text form (`bool`, `i32`, `i64`, `f32`, `f64`).
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Bool => "bool",
            ScalarType::I32 => "i32",
            ScalarType::I64 => "i64",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
            ScalarType::I8 => "i8",
            ScalarType::I16 => "i16",
            ScalarType::U8 => "u8",
            ScalarType::U16 => "u16",
            ScalarType::U32 => "u32",
            ScalarType::U64 => "u64",
            ScalarType::C64 => "c64",
            ScalarType::C128 => "c128",
        }
    }

    /// Parses a text-form type name.
    pub fn from_name(name: &str) -> Option<ScalarType> {
        Some(match name {
            "bool" => ScalarType::Bool,
            "i32" => ScalarType::I32,
            "i64" => ScalarType::I64,
            "f32" => ScalarType::F32,
            "f64" => ScalarType::F64,
            "i8" => ScalarType::I8,
            "i16" => ScalarType::I16,
            "u8" => ScalarType::U8,
            "u16" => ScalarType::U16,
            "u32" => ScalarType::U32,
            "u64" => ScalarType::U64,
            "c64" => ScalarType::C64,
            "c128" => ScalarType::C128,
            _ => return None,
        })
    }

    pub fn is_int(self) -> bool {
        self.is_signed() || self.is_unsigned()
    }

    /// A signed integer type (`i8` … `i64`).
    pub fn is_signed(self) -> bool {
        use ScalarType::*;
        matches!(self, I8 | I16 | I32 | I64)
    }

    /// An unsigned integer type (`u8` … `u64`): zero-extended, divided,
    /// compared and shifted as unsigned.
    pub fn is_unsigned(self) -> bool {
        use ScalarType::*;
        matches!(self, U8 | U16 | U32 | U64)
    }

    /// Width in bits of the type in memory.
    pub fn bits(self) -> u32 {
        self.size_bytes() as u32 * 8
    }

    /// Every real scalar type, for tests and tables (complex ones are
    /// [`ScalarType::C64`] and [`ScalarType::C128`]).
    pub const ALL: [ScalarType; 11] = {
        use ScalarType::*;
        [Bool, I8, I16, I32, I64, U8, U16, U32, U64, F32, F64]
    };

    pub fn is_float(self) -> bool {
        matches!(self, ScalarType::F32 | ScalarType::F64)
    }

    /// A complex type (`c64`, `c128`): arithmetic, `==`/`!=`, casts from
    /// any number and the complex math functions; no ordering.
    pub fn is_complex(self) -> bool {
        matches!(self, ScalarType::C64 | ScalarType::C128)
    }

    /// The type of a complex number's parts (`c64` → `f32`); a real type
    /// is its own.
    pub fn component(self) -> ScalarType {
        match self {
            ScalarType::C64 => ScalarType::F32,
            ScalarType::C128 => ScalarType::F64,
            t => t,
        }
    }

    /// The complex type whose parts are `self` (`f32` → `c64`, else `c128`).
    pub fn complexified(self) -> ScalarType {
        match self {
            ScalarType::F32 | ScalarType::C64 => ScalarType::C64,
            _ => ScalarType::C128,
        }
    }

    /// Size of one element in memory, in bytes (`bool` is stored as one byte).
    pub fn size_bytes(self) -> usize {
        match self {
            ScalarType::Bool | ScalarType::I8 | ScalarType::U8 => 1,
            ScalarType::I16 | ScalarType::U16 => 2,
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 4,
            ScalarType::I64 | ScalarType::U64 | ScalarType::F64 | ScalarType::C64 => 8,
            ScalarType::C128 => 16,
        }
    }
}

impl std::fmt::Display for ScalarType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The most dimensions an array of a kernel has (NumPy programs use
/// 4-D tensors — batches of images, attention heads — and physics codes
/// 5-D and 6-D ones: momentum × energy × orbital blocks).
pub const MAX_DIMS: u8 = 8;

/// An array type: element type, number of dimensions, and whether the array
/// is known to be C-contiguous (the fast path: no strides are passed and
/// addresses are computed from the shape alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ArrayType {
    pub elem: ScalarType,
    pub ndim: u8,
    pub contiguous: bool,
}

/// The type of a parameter or a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Type {
    Scalar(ScalarType),
    Array(ArrayType),
}

impl Type {
    pub fn scalar(self) -> Option<ScalarType> {
        match self {
            Type::Scalar(s) => Some(s),
            Type::Array(_) => None,
        }
    }
}

impl From<ScalarType> for Type {
    fn from(s: ScalarType) -> Type {
        Type::Scalar(s)
    }
}

/// A constant.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Literal {
    Bool(bool),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
}

impl Literal {
    pub fn ty(self) -> ScalarType {
        match self {
            Literal::Bool(_) => ScalarType::Bool,
            Literal::I32(_) => ScalarType::I32,
            Literal::I64(_) => ScalarType::I64,
            Literal::F32(_) => ScalarType::F32,
            Literal::F64(_) => ScalarType::F64,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UnaryOp {
    /// Arithmetic negation (ints and floats).
    Neg,
    /// Logical not (bool) or bitwise not (ints).
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Floats: IEEE division. Ints: truncating division (C semantics).
    Div,
    /// Python's `//`: rounds towards negative infinity, for ints and floats.
    FloorDiv,
    /// Remainder with the sign of the dividend (C `%`, `fmod` for floats).
    Rem,
    Min,
    Max,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    /// Arithmetic shift right.
    Shr,
    /// Short-circuit logical and (bool).
    And,
    /// Short-circuit logical or (bool).
    Or,
    /// Python's `+` of two ints, on `i64`: the wrapped sum; where Python's
    /// int, which has no bound, would leave `i64`, the launch also raises
    /// its overflow flag (see [`Module::checks_overflow`]), and its results
    /// are not Python's: the caller runs the original instead.
    CheckedAdd,
    /// Python's `-` of two ints, on `i64`, as [`BinOp::CheckedAdd`].
    CheckedSub,
    /// Python's `*` of two ints, on `i64`, as [`BinOp::CheckedAdd`].
    CheckedMul,
}

impl BinOp {
    /// The operator's spelling in the text form (`min`/`max` are written as calls).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Rem => "%",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::CheckedAdd => "checked_add",
            BinOp::CheckedSub => "checked_sub",
            BinOp::CheckedMul => "checked_mul",
        }
    }

    /// Whether the operator is written as a call in the text form
    /// (`min(a, b)`, `checked_mul(a, b)`).
    pub fn is_call(self) -> bool {
        matches!(self, BinOp::Min | BinOp::Max) || self.is_checked()
    }

    /// Whether the operator is Python's int arithmetic, checked for
    /// overflow ([`BinOp::CheckedAdd`]…).
    pub fn is_checked(self) -> bool {
        matches!(
            self,
            BinOp::CheckedAdd | BinOp::CheckedSub | BinOp::CheckedMul
        )
    }

    /// The checked form of `+`, `-` or `*` (Python's ints), else `None`.
    pub fn checked(self) -> Option<BinOp> {
        match self {
            BinOp::Add => Some(BinOp::CheckedAdd),
            BinOp::Sub => Some(BinOp::CheckedSub),
            BinOp::Mul => Some(BinOp::CheckedMul),
            _ => None,
        }
    }

    /// The wrapping operator a checked one computes (`CheckedAdd` → `Add`).
    pub fn unchecked(self) -> BinOp {
        match self {
            BinOp::CheckedAdd => BinOp::Add,
            BinOp::CheckedSub => BinOp::Sub,
            BinOp::CheckedMul => BinOp::Mul,
            op => op,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// Whether `a op b`.
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// Math functions, on `f32` or `f64` (the result has the argument type).
/// On the GPU they come from libdevice (`__nv_sin`, `__nv_sinf`, …); on the
/// simulator from the host's libm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MathFn {
    Sqrt,
    Cbrt,
    Exp,
    Exp2,
    Expm1,
    Log,
    Log2,
    Log10,
    Log1p,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    Erf,
    Erfc,
    /// The gamma function (`math.gamma`, `scipy.special.gamma`).
    Tgamma,
    /// The log of the gamma function's absolute value (`math.lgamma`,
    /// `scipy.special.gammaln`).
    Lgamma,
    Fabs,
    Floor,
    Ceil,
    Trunc,
    /// Round half to even (`np.rint`).
    Rint,
    Pow,
    Atan2,
    Hypot,
    Fmod,
    Fmin,
    Fmax,
    Copysign,
}

impl MathFn {
    pub const ALL: [MathFn; 37] = [
        MathFn::Sqrt,
        MathFn::Cbrt,
        MathFn::Exp,
        MathFn::Exp2,
        MathFn::Expm1,
        MathFn::Log,
        MathFn::Log2,
        MathFn::Log10,
        MathFn::Log1p,
        MathFn::Sin,
        MathFn::Cos,
        MathFn::Tan,
        MathFn::Asin,
        MathFn::Acos,
        MathFn::Atan,
        MathFn::Sinh,
        MathFn::Cosh,
        MathFn::Tanh,
        MathFn::Asinh,
        MathFn::Acosh,
        MathFn::Atanh,
        MathFn::Erf,
        MathFn::Erfc,
        MathFn::Tgamma,
        MathFn::Lgamma,
        MathFn::Fabs,
        MathFn::Floor,
        MathFn::Ceil,
        MathFn::Trunc,
        MathFn::Rint,
        MathFn::Pow,
        MathFn::Atan2,
        MathFn::Hypot,
        MathFn::Fmod,
        MathFn::Fmin,
        MathFn::Fmax,
        MathFn::Copysign,
    ];

    /// The C / Python `math` name (`sqrt`, `atan2`, …), also the text-form name.
    pub fn name(self) -> &'static str {
        match self {
            MathFn::Sqrt => "sqrt",
            MathFn::Cbrt => "cbrt",
            MathFn::Exp => "exp",
            MathFn::Exp2 => "exp2",
            MathFn::Expm1 => "expm1",
            MathFn::Log => "log",
            MathFn::Log2 => "log2",
            MathFn::Log10 => "log10",
            MathFn::Log1p => "log1p",
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Tan => "tan",
            MathFn::Asin => "asin",
            MathFn::Acos => "acos",
            MathFn::Atan => "atan",
            MathFn::Sinh => "sinh",
            MathFn::Cosh => "cosh",
            MathFn::Tanh => "tanh",
            MathFn::Asinh => "asinh",
            MathFn::Acosh => "acosh",
            MathFn::Atanh => "atanh",
            MathFn::Erf => "erf",
            MathFn::Erfc => "erfc",
            MathFn::Tgamma => "tgamma",
            MathFn::Lgamma => "lgamma",
            MathFn::Fabs => "fabs",
            MathFn::Floor => "floor",
            MathFn::Ceil => "ceil",
            MathFn::Trunc => "trunc",
            MathFn::Rint => "rint",
            MathFn::Pow => "pow",
            MathFn::Atan2 => "atan2",
            MathFn::Hypot => "hypot",
            MathFn::Fmod => "fmod",
            MathFn::Fmin => "fmin",
            MathFn::Fmax => "fmax",
            MathFn::Copysign => "copysign",
        }
    }

    pub fn from_name(name: &str) -> Option<MathFn> {
        MathFn::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether the function has a complex form (the arguments may then be
    /// `c64`/`c128`; `fabs` of a complex number is its modulus, a real).
    pub fn takes_complex(self) -> bool {
        use MathFn::*;
        matches!(
            self,
            Sqrt | Exp | Log | Log10 | Sin | Cos | Tan | Sinh | Cosh | Tanh | Fabs | Pow
        )
    }

    /// Number of arguments.
    pub fn arity(self) -> usize {
        match self {
            MathFn::Pow
            | MathFn::Atan2
            | MathFn::Hypot
            | MathFn::Fmod
            | MathFn::Fmin
            | MathFn::Fmax
            | MathFn::Copysign => 2,
            _ => 1,
        }
    }
}

/// Read-only special registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Special {
    ThreadIdx,
    BlockIdx,
    BlockDim,
    GridDim,
}

impl Special {
    pub fn name(self) -> &'static str {
        match self {
            Special::ThreadIdx => "threadIdx",
            Special::BlockIdx => "blockIdx",
            Special::BlockDim => "blockDim",
            Special::GridDim => "gridDim",
        }
    }
}

/// A grid axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Axis {
    X,
    Y,
    Z,
}

impl Axis {
    pub fn index(self) -> usize {
        match self {
            Axis::X => 0,
            Axis::Y => 1,
            Axis::Z => 2,
        }
    }

    pub fn name(self) -> &'static str {
        ["x", "y", "z"][self.index()]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AtomicOp {
    Add,
    Sub,
    Min,
    Max,
    Exch,
}

impl AtomicOp {
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "atomic_add",
            AtomicOp::Sub => "atomic_sub",
            AtomicOp::Min => "atomic_min",
            AtomicOp::Max => "atomic_max",
            AtomicOp::Exch => "atomic_exch",
        }
    }
}

/// An element of an array: `name[indices…]`, one index per dimension.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElemRef {
    pub array: String,
    pub indices: Vec<Expr>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Expr {
    Lit(Literal),
    /// A local, a parameter (scalar or array) or a shared array.
    Var(String),
    Special(Special, Axis),
    /// `a.shape[axis]`, an `i64`.
    Shape {
        array: String,
        axis: u8,
    },
    Unary(UnaryOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    Cast(ScalarType, Box<Expr>),
    /// `select(cond, a, b)`: both sides are evaluated.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    Load(ElemRef),
    Math(MathFn, Vec<Expr>),
    /// A call to a device function.
    Call(String, Vec<Expr>),
    /// An atomic read-modify-write; its value is the old element.
    Atomic(AtomicOp, ElemRef, Box<Expr>),
    /// `atomic_cas(a[i], expected, new)`; its value is the old element.
    AtomicCas(ElemRef, Box<Expr>, Box<Expr>),
    /// `complex(re, im)`: a complex number from two reals of one float type.
    Complex(Box<Expr>, Box<Expr>),
    /// `z.real` / `z.imag` of a complex number (a real of its part type).
    Part(Part, Box<Expr>),
}

/// Which part of a complex number [`Expr::Part`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Part {
    Re,
    Im,
}

impl Part {
    /// The Python attribute (`real`, `imag`), also the text form's.
    pub fn name(self) -> &'static str {
        match self {
            Part::Re => "real",
            Part::Im => "imag",
        }
    }
}

/// The parallel loop: `parallel for i in range(n)` or
/// `parallel for (i, j) in range(n, m)`. Codegen lowers it to a grid-stride
/// loop; the last variable is mapped to the grid's x axis (so that the
/// fastest-varying index of a C-order array is spread over neighbouring
/// threads), the one before it to y.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParallelFor {
    pub vars: Vec<String>,
    pub extents: Vec<Expr>,
    pub body: Vec<Stmt>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Stmt {
    /// Declares a local in the current block.
    Let {
        name: String,
        ty: ScalarType,
        init: Expr,
    },
    Assign {
        name: String,
        value: Expr,
    },
    Store {
        target: ElemRef,
        value: Expr,
    },
    If {
        cond: Expr,
        then_body: Vec<Stmt>,
        else_body: Vec<Stmt>,
    },
    While {
        cond: Expr,
        body: Vec<Stmt>,
    },
    /// Python's `for var in range(start, stop, step)`; the variable's type is
    /// that of `start`, `stop` and `step` (all the same integer type). The
    /// step's sign picks the direction, as in Python.
    For {
        var: String,
        start: Expr,
        stop: Expr,
        step: Expr,
        body: Vec<Stmt>,
    },
    ParallelFor(ParallelFor),
    Break,
    Continue,
    Return(Option<Expr>),
    /// `syncthreads()`: a block-wide barrier. Only in kernels, never in code
    /// whose execution differs between the threads of a block.
    Barrier,
    /// An expression evaluated for its effect (an atomic, a call).
    Eval(Expr),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    pub ty: Type,
}

/// A block-shared array with a constant shape, C-contiguous.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedArray {
    pub name: String,
    pub elem: ScalarType,
    pub shape: Vec<u32>,
}

impl SharedArray {
    pub fn len(&self) -> u64 {
        self.shape.iter().map(|&d| u64::from(d)).product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn array_type(&self) -> ArrayType {
        ArrayType {
            elem: self.elem,
            ndim: self.shape.len() as u8,
            contiguous: true,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    pub name: String,
    pub params: Vec<Param>,
    pub shared: Vec<SharedArray>,
    pub body: Vec<Stmt>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceFunction {
    pub name: String,
    pub params: Vec<Param>,
    /// `None` for a function that returns nothing.
    pub ret: Option<ScalarType>,
    pub body: Vec<Stmt>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Module {
    pub device_functions: Vec<DeviceFunction>,
    pub kernels: Vec<Kernel>,
}

impl Module {
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }

    pub fn device_function(&self, name: &str) -> Option<&DeviceFunction> {
        self.device_functions.iter().find(|f| f.name == name)
    }

    /// Whether any function calls a math function (libdevice is linked only then).
    pub fn uses_math(&self) -> bool {
        let mut found = false;
        let mut visit = |e: &Expr| found |= matches!(e, Expr::Math(..));
        for k in &self.kernels {
            walk_body_exprs(&k.body, &mut visit);
        }
        for f in &self.device_functions {
            walk_body_exprs(&f.body, &mut visit);
        }
        found
    }

    /// Whether any function computes Python int arithmetic that can
    /// overflow (`BinOp::CheckedAdd` and the like): each function then
    /// takes the error record (see `kernel_abi`), in which a launch whose
    /// arithmetic left `i64` records [`OVERFLOW_FLAG`].
    pub fn checks_overflow(&self) -> bool {
        let mut found = false;
        let mut visit = |e: &Expr| {
            found |= matches!(e, Expr::Binary(op, ..) if op.is_checked());
        };
        for k in &self.kernels {
            walk_body_exprs(&k.body, &mut visit);
        }
        for f in &self.device_functions {
            walk_body_exprs(&f.body, &mut visit);
        }
        found
    }
}

/// The error record's first field after a launch in which Python int
/// arithmetic overflowed `i64` (an out-of-bounds access in debug mode
/// records 1).
pub const OVERFLOW_FLAG: u64 = 2;

impl Kernel {
    /// Whether the kernel contains a barrier (the simulator then runs each
    /// block's threads concurrently).
    pub fn has_barrier(&self) -> bool {
        any_stmt(&self.body, &|s| matches!(s, Stmt::Barrier))
    }
}

/// Whether `pred` holds for a statement of `body`, at any depth.
pub fn any_stmt(body: &[Stmt], pred: &dyn Fn(&Stmt) -> bool) -> bool {
    body.iter().any(|s| {
        pred(s)
            || match s {
                Stmt::If {
                    then_body,
                    else_body,
                    ..
                } => any_stmt(then_body, pred) || any_stmt(else_body, pred),
                Stmt::While { body, .. } | Stmt::For { body, .. } => any_stmt(body, pred),
                Stmt::ParallelFor(p) => any_stmt(&p.body, pred),
                _ => false,
            }
    })
}

/// Calls `f` on every expression (and sub-expression) in `body`.
pub fn walk_body_exprs(body: &[Stmt], f: &mut dyn FnMut(&Expr)) {
    for s in body {
        match s {
            Stmt::Let { init: e, .. } | Stmt::Assign { value: e, .. } | Stmt::Eval(e) => {
                walk_expr(e, f)
            }
            Stmt::Store { target, value } => {
                target.indices.iter().for_each(|i| walk_expr(i, f));
                walk_expr(value, f);
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                walk_expr(cond, f);
                walk_body_exprs(then_body, f);
                walk_body_exprs(else_body, f);
            }
            Stmt::While { cond, body } => {
                walk_expr(cond, f);
                walk_body_exprs(body, f);
            }
            Stmt::For {
                start,
                stop,
                step,
                body,
                ..
            } => {
                walk_expr(start, f);
                walk_expr(stop, f);
                walk_expr(step, f);
                walk_body_exprs(body, f);
            }
            Stmt::ParallelFor(p) => {
                p.extents.iter().for_each(|e| walk_expr(e, f));
                walk_body_exprs(&p.body, f);
            }
            Stmt::Return(Some(e)) => walk_expr(e, f),
            Stmt::Return(None) | Stmt::Break | Stmt::Continue | Stmt::Barrier => {}
        }
    }
}

/// Calls `f` on `e` and each of its sub-expressions, parents first.
pub fn walk_expr(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    match e {
        Expr::Lit(_) | Expr::Var(_) | Expr::Special(..) | Expr::Shape { .. } => {}
        Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Part(_, a) => walk_expr(a, f),
        Expr::Binary(_, a, b) | Expr::Cmp(_, a, b) | Expr::Complex(a, b) => {
            walk_expr(a, f);
            walk_expr(b, f);
        }
        Expr::Select(c, a, b) => {
            walk_expr(c, f);
            walk_expr(a, f);
            walk_expr(b, f);
        }
        Expr::Load(r) => r.indices.iter().for_each(|i| walk_expr(i, f)),
        Expr::Math(_, args) | Expr::Call(_, args) => args.iter().for_each(|a| walk_expr(a, f)),
        Expr::Atomic(_, r, v) => {
            r.indices.iter().for_each(|i| walk_expr(i, f));
            walk_expr(v, f);
        }
        Expr::AtomicCas(r, c, v) => {
            r.indices.iter().for_each(|i| walk_expr(i, f));
            walk_expr(c, f);
            walk_expr(v, f);
        }
    }
}

/// Small constructors for building IR in Rust (the rewriter's side).
///
/// ```
/// use port_codegen::ir::build::*;
/// use port_codegen::ir::*;
/// // out[i] = a[i] + b[i]
/// let body = vec![parallel_for1(
///     "i",
///     shape("out", 0),
///     vec![store("out", vec![var("i")], add(load("a", vec![var("i")]), load("b", vec![var("i")])))],
/// )];
/// let k = Kernel {
///     name: "vadd".into(),
///     params: vec![
///         param("a", array(ScalarType::F32, 1)),
///         param("b", array(ScalarType::F32, 1)),
///         param("out", array(ScalarType::F32, 1)),
///     ],
///     shared: vec![],
///     body,
/// };
/// let m = Module { kernels: vec![k], device_functions: vec![] };
/// port_codegen::verify::verify_module(&m).unwrap();
/// ```
pub mod build {
    use super::*;

    pub fn param(name: &str, ty: impl Into<Type>) -> Param {
        Param {
            name: name.to_string(),
            ty: ty.into(),
        }
    }

    /// A C-contiguous array type.
    pub fn array(elem: ScalarType, ndim: u8) -> Type {
        Type::Array(ArrayType {
            elem,
            ndim,
            contiguous: true,
        })
    }

    /// An array type of any layout (strides are passed).
    pub fn strided_array(elem: ScalarType, ndim: u8) -> Type {
        Type::Array(ArrayType {
            elem,
            ndim,
            contiguous: false,
        })
    }

    pub fn var(name: &str) -> Expr {
        Expr::Var(name.to_string())
    }

    pub fn i32(v: i32) -> Expr {
        Expr::Lit(Literal::I32(v))
    }

    pub fn i64(v: i64) -> Expr {
        Expr::Lit(Literal::I64(v))
    }

    pub fn f32(v: f32) -> Expr {
        Expr::Lit(Literal::F32(v))
    }

    pub fn f64(v: f64) -> Expr {
        Expr::Lit(Literal::F64(v))
    }

    pub fn bool(v: bool) -> Expr {
        Expr::Lit(Literal::Bool(v))
    }

    pub fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    pub fn add(a: Expr, b: Expr) -> Expr {
        binary(BinOp::Add, a, b)
    }

    pub fn sub(a: Expr, b: Expr) -> Expr {
        binary(BinOp::Sub, a, b)
    }

    pub fn mul(a: Expr, b: Expr) -> Expr {
        binary(BinOp::Mul, a, b)
    }

    pub fn div(a: Expr, b: Expr) -> Expr {
        binary(BinOp::Div, a, b)
    }

    pub fn cmp(op: CmpOp, a: Expr, b: Expr) -> Expr {
        Expr::Cmp(op, Box::new(a), Box::new(b))
    }

    pub fn cast(ty: ScalarType, e: Expr) -> Expr {
        Expr::Cast(ty, Box::new(e))
    }

    pub fn math(f: MathFn, args: Vec<Expr>) -> Expr {
        Expr::Math(f, args)
    }

    pub fn call(name: &str, args: Vec<Expr>) -> Expr {
        Expr::Call(name.to_string(), args)
    }

    pub fn elem(array: &str, indices: Vec<Expr>) -> ElemRef {
        ElemRef {
            array: array.to_string(),
            indices,
        }
    }

    pub fn load(array: &str, indices: Vec<Expr>) -> Expr {
        Expr::Load(elem(array, indices))
    }

    pub fn shape(array: &str, axis: u8) -> Expr {
        Expr::Shape {
            array: array.to_string(),
            axis,
        }
    }

    pub fn special(s: Special, axis: Axis) -> Expr {
        Expr::Special(s, axis)
    }

    pub fn atomic(op: AtomicOp, array: &str, indices: Vec<Expr>, value: Expr) -> Expr {
        Expr::Atomic(op, elem(array, indices), Box::new(value))
    }

    pub fn let_(name: &str, ty: ScalarType, init: Expr) -> Stmt {
        Stmt::Let {
            name: name.to_string(),
            ty,
            init,
        }
    }

    pub fn assign(name: &str, value: Expr) -> Stmt {
        Stmt::Assign {
            name: name.to_string(),
            value,
        }
    }

    pub fn store(array: &str, indices: Vec<Expr>, value: Expr) -> Stmt {
        Stmt::Store {
            target: elem(array, indices),
            value,
        }
    }

    pub fn if_(cond: Expr, then_body: Vec<Stmt>, else_body: Vec<Stmt>) -> Stmt {
        Stmt::If {
            cond,
            then_body,
            else_body,
        }
    }

    pub fn while_(cond: Expr, body: Vec<Stmt>) -> Stmt {
        Stmt::While { cond, body }
    }

    pub fn for_range(var: &str, start: Expr, stop: Expr, step: Expr, body: Vec<Stmt>) -> Stmt {
        Stmt::For {
            var: var.to_string(),
            start,
            stop,
            step,
            body,
        }
    }

    pub fn parallel_for1(var: &str, extent: Expr, body: Vec<Stmt>) -> Stmt {
        Stmt::ParallelFor(ParallelFor {
            vars: vec![var.to_string()],
            extents: vec![extent],
            body,
        })
    }

    pub fn parallel_for2(vars: [&str; 2], extents: [Expr; 2], body: Vec<Stmt>) -> Stmt {
        Stmt::ParallelFor(ParallelFor {
            vars: vars.iter().map(|v| v.to_string()).collect(),
            extents: extents.into(),
            body,
        })
    }
}

/// Rebuilds `e` bottom-up; `f` may replace a node (children are not then
/// visited).
pub fn map_expr(e: &Expr, f: &dyn Fn(&Expr) -> Option<Expr>) -> Expr {
    if let Some(r) = f(e) {
        return r;
    }
    let m = |x: &Expr| Box::new(map_expr(x, f));
    match e {
        Expr::Lit(_) | Expr::Var(_) | Expr::Special(..) | Expr::Shape { .. } => e.clone(),
        Expr::Unary(op, a) => Expr::Unary(*op, m(a)),
        Expr::Binary(op, a, b) => Expr::Binary(*op, m(a), m(b)),
        Expr::Cmp(op, a, b) => Expr::Cmp(*op, m(a), m(b)),
        Expr::Cast(t, a) => Expr::Cast(*t, m(a)),
        Expr::Select(c, a, b) => Expr::Select(m(c), m(a), m(b)),
        Expr::Load(r) => Expr::Load(map_ref(r, f)),
        Expr::Math(g, args) => Expr::Math(*g, args.iter().map(|a| map_expr(a, f)).collect()),
        Expr::Call(n, args) => Expr::Call(n.clone(), args.iter().map(|a| map_expr(a, f)).collect()),
        Expr::Atomic(op, r, v) => Expr::Atomic(*op, map_ref(r, f), m(v)),
        Expr::AtomicCas(r, c, v) => Expr::AtomicCas(map_ref(r, f), m(c), m(v)),
        Expr::Complex(a, b) => Expr::Complex(m(a), m(b)),
        Expr::Part(p, a) => Expr::Part(*p, m(a)),
    }
}

fn map_ref(r: &ElemRef, f: &dyn Fn(&Expr) -> Option<Expr>) -> ElemRef {
    ElemRef {
        array: r.array.clone(),
        indices: r.indices.iter().map(|i| map_expr(i, f)).collect(),
    }
}
