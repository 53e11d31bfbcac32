//! The py-spy edge: attach to the running app (and, if asked, its children),
//! read every thread's stack at the sampling rate, stop when the app ends, the
//! duration runs out or the stop signal is raised.
//!
//! Each sampled process gets its own thread, which owns its `PythonSpy` (they
//! are not `Send`), attaches with retries while the interpreter starts, and
//! reads stacks on py-spy's jittered timer (which avoids aliasing with periodic
//! work in the app). Stacks come back over a channel. The calling thread only
//! watches: the app's exit, the clock, the stop signal, new child processes.
//! So attaching to a slow-starting child never delays sampling the others.

use std::collections::{HashMap, HashSet};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use py_spy::config::{Config, LockingStrategy};
use py_spy::PythonSpy;
use rand::Rng;
use rand_distr::Exp;

use crate::aggregate::{RawFrame, SampleSet};
use crate::child;
use crate::error::{attach_error, is_permission_error, ProfileError};
use crate::interrupt::StopSignal;
use crate::model::AppExit;
use crate::progress::{Phase, ProgressTick};

/// How long to keep trying to attach to the freshly started app.
const ROOT_ATTACH_TIMEOUT: Duration = Duration::from_secs(10);
/// The same for a child process: a forked one attaches at once, an exec'd
/// Python within its start-up; anything else (`sh`, a compiler) never does.
const CHILD_ATTACH_TIMEOUT: Duration = Duration::from_secs(2);
/// How often to look for new child processes with `subprocesses`.
const CHILD_SCAN_INTERVAL: Duration = Duration::from_millis(50);
/// Consecutive failed reads after which a process is attached afresh: a
/// process that exec'd (a child caught between fork and exec) has new memory.
const READ_FAILURES_BEFORE_REATTACH: u32 = 3;
/// Immediate re-reads after a failed read, before counting it as failed.
const IMMEDIATE_RETRIES: u32 = 3;
/// Grace between SIGTERM and SIGKILL when the app has to be stopped.
pub const TERMINATE_GRACE: Duration = Duration::from_secs(2);
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);
/// The longest the watching thread sleeps when nothing arrives: how soon it
/// sees a stop (Ctrl-C) or the end of `--duration`. The app's exit wakes it at
/// once (see [`watch_exit`]); without that thread, this is also how late port
/// sees the exit. Waking every 2 ms instead, as port once did, cost the app's
/// machine 2-3% of a core in context switches.
const WATCH_INTERVAL: Duration = Duration::from_millis(25);

pub struct SamplerSettings {
    pub rate_hz: u64,
    pub idle: bool,
    pub subprocesses: bool,
    /// Sampling ends this long after `started`.
    pub duration: Option<Duration>,
    pub stop: StopSignal,
}

/// What one sampled run produced.
pub struct SampledRun {
    pub samples: SampleSet,
    pub exit: AppExit,
    pub wall: Duration,
    pub python_version: Option<String>,
    pub processes_sampled: u32,
    pub warnings: Vec<String>,
}

/// The frame name of the capture's trampoline (before Python 3.12), which sits
/// between a function and its caller during the function's first call. It
/// carries the app's file and line, so it must go before anything reads the
/// stack as the app's: the caller → callee edge is the caller's and the
/// function's, and no function calls itself.
const TRAMPOLINE: &str = "_port_first_call";

/// Drops the capture bootstrap's own frames (`python -c`: `<module>` in
/// `<string>`, and its functions while it starts up) from the bottom of a
/// stack (frames innermost first), so the app's `<module>` is the root as in
/// a plain run, and the trampolines of first calls wherever they are.
/// A stack of the bootstrap alone (before the app starts), or one taken while
/// the capture records a call (its functions on the stack, saving `.npz`
/// files), becomes empty: that time is port's, not the app's, and would
/// otherwise land on the caller of the function being captured.
fn strip_bootstrap(frames: &mut Vec<RawFrame>) {
    frames.retain(|f| f.name != TRAMPOLINE);
    let is_boot = |f: &RawFrame| f.file.as_os_str() == "<string>";
    if frames
        .iter()
        .any(|f| is_boot(f) && f.name.starts_with("_port_capture."))
    {
        frames.clear();
        return;
    }
    if frames.len() > 1
        && frames
            .last()
            .is_some_and(|f| f.name == "<module>" && is_boot(f))
    {
        while frames.last().is_some_and(is_boot) {
            frames.pop();
        }
    }
    // The hook's own work with no frame of the app under it (its exit
    // handler saving the manifest): not the app's time.
    let lone_module = frames.len() == 1 && frames[0].name == "<module>";
    if frames.iter().all(is_boot) && !lone_module {
        frames.clear();
    }
}

fn spy_config(settings: &SamplerSettings) -> Config {
    Config {
        // Read without pausing the app: no slowdown from ptrace stops, and no
        // ptrace `waitpid` that could reap the app and swallow its exit status
        // (py-spy's locking does that when the app exits mid-read). A read torn
        // by the running app is rare, and py-spy drops such frames.
        blocking: LockingStrategy::NonBlocking,
        sampling_rate: settings.rate_hz,
        include_idle: settings.idle,
        subprocesses: settings.subprocesses,
        collect_thread_names: false,
        ..Config::default()
    }
}

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// What a process's sampling thread reports.
enum Report {
    Attached {
        version: String,
    },
    AttachFailed {
        pid: u32,
        message: String,
    },
    /// One read: the stacks of the threads that count (idle ones dropped unless asked).
    Stacks {
        pid: u32,
        stacks: Vec<Vec<RawFrame>>,
    },
    ReadFailed {
        message: String,
    },
    /// The app has ended (not yet reaped): from [`watch_exit`].
    AppEnded,
}

/// Wakes the watching loop when `pid` (a child of this process) ends: a
/// thread blocks in `waitid(WNOWAIT)`, which leaves the child to be reaped
/// by `Child::try_wait`, then reports. Without it (no thread, an error) the
/// loop still sees the exit by polling, every [`WATCH_INTERVAL`].
fn watch_exit(pid: u32, tx: Sender<Report>) {
    let spawned = std::thread::Builder::new()
        .name("port-app-exit".into())
        .spawn(move || loop {
            // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: waitid only writes `info`; WNOWAIT leaves the child unreaped.
            let rc = unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if rc == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
                continue;
            }
            let _ = tx.send(Report::AppEnded);
            return;
        });
    drop(spawned);
}

fn attach(pid: u32, config: &Config) -> Result<PythonSpy, String> {
    quiet_sampler_panics();
    let attached = std::panic::catch_unwind(|| PythonSpy::new(pid as _, config))
        .map_err(|_| "py-spy failed while attaching".to_string())?;
    let mut spy = attached.map_err(|e| format!("{e:#}"))?;
    read_stacks(&mut spy)?;
    Ok(spy)
}

/// Attaches to `pid`, retrying while it starts up, until `timeout`.
fn attach_with_retries(
    pid: u32,
    config: &Config,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<PythonSpy, Option<String>> {
    let deadline = Instant::now() + timeout;
    loop {
        if stop.load(Ordering::SeqCst) {
            return Err(None);
        }
        match attach(pid, config) {
            Ok(spy) => return Ok(spy),
            Err(message) => {
                if !alive(pid) {
                    return Err(None);
                }
                if is_permission_error(&message) || Instant::now() >= deadline {
                    return Err(Some(message));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// One read of every thread's stack. A torn read hands py-spy garbage, and
/// some garbage makes it panic (an arithmetic overflow in a debug build, say):
/// that is a failed read like any other, not the end of sampling.
fn read_stacks(spy: &mut PythonSpy) -> Result<Vec<py_spy::StackTrace>, String> {
    quiet_sampler_panics();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| spy.get_stack_traces())) {
        Ok(read) => read.map_err(|e| format!("{e:#}")),
        Err(_) => Err("py-spy failed on a torn read".to_string()),
    }
}

/// Keeps panics caught in sampling threads off the user's terminal; panics
/// anywhere else still reach the hook that was there before.
fn quiet_sampler_panics() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_sampler = std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with(SAMPLER_THREAD_PREFIX));
            if !in_sampler {
                previous(info);
            }
        }));
    });
}

/// Sampling threads are named `port-sample-PID`.
const SAMPLER_THREAD_PREFIX: &str = "port-sample-";

/// The body of a process's sampling thread.
fn sample_process(
    pid: u32,
    config: Config,
    attach_timeout: Duration,
    stop: Arc<AtomicBool>,
    tx: Sender<Report>,
) {
    let mut spy = match attach_with_retries(pid, &config, attach_timeout, &stop) {
        Ok(spy) => spy,
        Err(Some(message)) => {
            let _ = tx.send(Report::AttachFailed { pid, message });
            return;
        }
        Err(None) => return,
    };
    if tx
        .send(Report::Attached {
            version: spy.version.to_string(),
        })
        .is_err()
    {
        return;
    }
    let idle = config.include_idle;
    let mut failures = 0;
    let mut schedule = Schedule::new(config.sampling_rate as f64);
    loop {
        if !schedule.wait(&stop) {
            return;
        }
        // A read that races the app's own stack changes fails; reading again
        // at once almost always succeeds, and skipping it would under-count
        // code that calls many short functions.
        let mut read = read_stacks(&mut spy);
        for _ in 0..IMMEDIATE_RETRIES {
            if read.is_ok() {
                break;
            }
            read = read_stacks(&mut spy);
        }
        let report = match read {
            Ok(traces) => {
                failures = 0;
                let stacks = traces
                    .into_iter()
                    .filter(|t| (idle || t.active) && !t.frames.is_empty())
                    .map(|t| {
                        let mut frames: Vec<RawFrame> = t
                            .frames
                            .into_iter()
                            .map(|f| RawFrame {
                                name: f.name,
                                file: f.filename.into(),
                                line: u32::try_from(f.line).unwrap_or(0),
                            })
                            .collect();
                        strip_bootstrap(&mut frames);
                        frames
                    })
                    .filter(|frames| !frames.is_empty())
                    .collect();
                Report::Stacks { pid, stacks }
            }
            Err(message) => {
                if !alive(pid) || message.contains("No such process") {
                    return;
                }
                failures += 1;
                if failures >= READ_FAILURES_BEFORE_REATTACH {
                    failures = 0;
                    if let Ok(fresh) = attach(pid, &config) {
                        spy = fresh;
                        continue;
                    }
                }
                Report::ReadFailed { message }
            }
        };
        if tx.send(report).is_err() {
            return;
        }
    }
}

/// When to sample: py-spy's schedule (its `timer::Timer`), gaps drawn from an
/// exponential distribution at the sampling rate so that a sampler never
/// keeps step with a periodic app, each sample due at a fixed time from the
/// start (the time a read takes is not added). Unlike the Timer's sleep, the
/// wait ends as soon as the sampling is stopped: a gap is 10 ms on average
/// at 100 Hz and, the distribution having no memory, so is what is left of
/// one; every run would wait for that at its end, a whole second at 1 Hz.
struct Schedule {
    start: Instant,
    due: Duration,
    gap: Exp<f64>,
}

impl Schedule {
    fn new(rate_hz: f64) -> Self {
        Schedule {
            start: Instant::now(),
            due: Duration::ZERO,
            gap: Exp::new(rate_hz).expect("a positive rate"),
        }
    }

    /// Waits until the next sample is due; false when stopped first. Behind
    /// schedule, it returns at once.
    fn wait(&mut self, stop: &AtomicBool) -> bool {
        self.due += Duration::from_secs_f64(rand::rng().sample(self.gap));
        loop {
            if stop.load(Ordering::SeqCst) {
                return false;
            }
            let now = self.start.elapsed();
            if now >= self.due {
                return true;
            }
            // Woken early by `Samplers::shut_down` (or spuriously): look again.
            std::thread::park_timeout(self.due - now);
        }
    }
}

/// The threads sampling the app's processes.
struct Samplers {
    config: Config,
    stop: Arc<AtomicBool>,
    tx: Sender<Report>,
    threads: Vec<JoinHandle<()>>,
    started: HashSet<u32>,
}

impl Samplers {
    fn start(&mut self, pid: u32, attach_timeout: Duration) {
        if !self.started.insert(pid) {
            return;
        }
        let (config, stop, tx) = (self.config.clone(), self.stop.clone(), self.tx.clone());
        let handle = std::thread::Builder::new()
            .name(format!("{SAMPLER_THREAD_PREFIX}{pid}"))
            .spawn(move || sample_process(pid, config, attach_timeout, stop, tx));
        match handle {
            Ok(h) => self.threads.push(h),
            // No thread, no samples of this process; the others go on.
            Err(_) => {
                self.started.remove(&pid);
            }
        }
    }

    /// Stops and joins every sampling thread, waking those that wait for
    /// their next sample.
    fn shut_down(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in &self.threads {
            t.thread().unpark();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Tallies of what the sampling threads reported.
#[derive(Default)]
struct Tally {
    samples: SampleSet,
    version: Option<String>,
    sampled: HashSet<u32>,
    attach_failures: HashMap<u32, String>,
    read_failures: u64,
    permission_failures: u64,
    last_failure: String,
    last_permission_failure: String,
}

impl Tally {
    fn take(&mut self, report: Report) {
        match report {
            Report::Attached { version, .. } => {
                self.version.get_or_insert(version);
            }
            Report::AttachFailed { pid, message } => {
                self.attach_failures.insert(pid, message);
            }
            Report::Stacks { pid, stacks } => {
                for stack in stacks {
                    self.sampled.insert(pid);
                    self.samples.add(stack);
                }
            }
            Report::AppEnded => {}
            Report::ReadFailed { message } => {
                if is_permission_error(&message) {
                    self.permission_failures += 1;
                    self.last_permission_failure = message.clone();
                }
                self.read_failures += 1;
                self.last_failure = message;
            }
        }
    }

    fn drain(&mut self, rx: &Receiver<Report>) {
        while let Ok(r) = rx.try_recv() {
            self.take(r);
        }
    }
}

/// Samples `app` (already started at `started`) until it ends.
pub fn sample(
    app: &mut Child,
    started: Instant,
    settings: &SamplerSettings,
    progress: &dyn Fn(ProgressTick),
) -> Result<SampledRun, ProfileError> {
    let root = app.id();
    let deadline = settings.duration.map(|d| started + d);
    let (tx, rx) = mpsc::channel();
    let mut samplers = Samplers {
        config: spy_config(settings),
        stop: Arc::new(AtomicBool::new(false)),
        tx,
        threads: Vec::new(),
        started: HashSet::new(),
    };
    samplers.start(root, ROOT_ATTACH_TIMEOUT);
    watch_exit(root, samplers.tx.clone());

    let mut tally = Tally::default();
    let mut warnings = Vec::new();
    let mut last_scan = Instant::now();
    let mut last_tick = Instant::now();
    let (end, exit) = loop {
        let mut wake = WATCH_INTERVAL.min(PROGRESS_INTERVAL.saturating_sub(last_tick.elapsed()));
        if settings.subprocesses {
            wake = wake.min(CHILD_SCAN_INTERVAL.saturating_sub(last_scan.elapsed()));
        }
        if let Some(d) = deadline {
            wake = wake.min(d.saturating_duration_since(Instant::now()));
        }
        match rx.recv_timeout(wake) {
            Ok(report) => tally.take(report),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
        }
        tally.drain(&rx);

        if let Some(message) = tally.attach_failures.get(&root) {
            // The app runs but cannot be sampled: stop it, say why.
            if tally.samples.total() == 0 && !matches!(app.try_wait(), Ok(Some(_))) {
                let message = message.clone();
                samplers.shut_down();
                let _ = child::terminate_tree(app, TERMINATE_GRACE);
                return Err(attach_error(root, message));
            }
        }
        if let Some(reason) = stop_reason(settings, deadline) {
            break (reason, None);
        }
        match app.try_wait() {
            Ok(Some(status)) => break (End::Exited, Some(child::exit_of(status))),
            Ok(None) => {}
            Err(e) => {
                // Someone else reaped it: ended, status unknown.
                warnings.push(format!("the app's exit status is unknown: {e}"));
                break (End::Exited, Some(AppExit::default()));
            }
        }
        if settings.subprocesses && last_scan.elapsed() >= CHILD_SCAN_INTERVAL {
            last_scan = Instant::now();
            for pid in child::descendants(root) {
                samplers.start(pid, CHILD_ATTACH_TIMEOUT);
            }
        }
        if last_tick.elapsed() >= PROGRESS_INTERVAL {
            last_tick = Instant::now();
            progress(ProgressTick {
                phase: Phase::Sampling,
                elapsed: started.elapsed(),
                samples: tally.samples.total(),
            });
        }
    };

    let wall = started.elapsed();
    samplers.shut_down();
    let exit = match exit {
        Some(exit) => exit,
        None => {
            let status = child::terminate_tree(app, TERMINATE_GRACE);
            let mut exit = status.map(child::exit_of).unwrap_or_default();
            exit.interrupted = end == End::Interrupted;
            exit.timed_out = end == End::TimedOut;
            exit
        }
    };
    drop(samplers);
    tally.drain(&rx);

    // Reads refused for lack of permission outnumber the good ones (the app
    // locked itself down after start-up, say): what was sampled means little.
    if tally.permission_failures > tally.samples.total() {
        return Err(attach_error(root, tally.last_permission_failure));
    }
    if tally.samples.total() == 0 {
        if let Some(message) = tally.attach_failures.get(&root) {
            if is_permission_error(message) {
                return Err(attach_error(root, message.clone()));
            }
        }
        if tally.version.is_none() {
            warnings
                .push("the app ended before py-spy could attach; nothing was sampled".to_string());
        }
    }
    // Reading a running process now and then catches a stack mid-change; only
    // a failure rate that could skew the shares is worth a warning.
    let reads = tally.read_failures + tally.samples.total();
    if tally.read_failures > 0 && tally.read_failures * 50 > reads {
        warnings.push(format!(
            "{} of {reads} stack reads failed and were skipped (last: {})",
            tally.read_failures,
            tally.last_failure.lines().next().unwrap_or_default()
        ));
    }
    Ok(SampledRun {
        python_version: tally.version,
        processes_sampled: tally.sampled.len() as u32,
        samples: tally.samples,
        exit,
        wall,
        warnings,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Exited,
    Interrupted,
    TimedOut,
}

fn stop_reason(settings: &SamplerSettings, deadline: Option<Instant>) -> Option<End> {
    if settings.stop.is_stopped() {
        Some(End::Interrupted)
    } else if deadline.is_some_and(|d| Instant::now() >= d) {
        Some(End::TimedOut)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bootstrap_frame_at_the_root_is_dropped() {
        let app = RawFrame::new("<module>", "/app/a.py", 9);
        let f = RawFrame::new("f", "/app/a.py", 3);
        let boot = RawFrame::new("<module>", "<string>", 600);
        let mut stack = vec![f.clone(), app.clone(), boot.clone()];
        strip_bootstrap(&mut stack);
        assert_eq!(stack, vec![f.clone(), app.clone()]);
        // A plain run's stack, and an exec'd string inside the app, stay.
        strip_bootstrap(&mut stack);
        assert_eq!(stack, vec![f.clone(), app.clone()]);
        let mut inner = vec![boot.clone(), f, app];
        strip_bootstrap(&mut inner);
        assert_eq!(inner.len(), 3);
        let mut alone = vec![boot.clone()];
        strip_bootstrap(&mut alone);
        assert_eq!(alone.len(), 1);
        // Start-up: the bootstrap's functions under its `<module>` go too.
        let import = RawFrame::new("_find_and_load", "<frozen importlib._bootstrap>", 1);
        let setup = RawFrame::new("_port_main", "<string>", 530);
        let mut starting = vec![import.clone(), setup.clone(), boot.clone()];
        strip_bootstrap(&mut starting);
        assert_eq!(starting, vec![import]);
        // At exit, the hook's handler alone: nothing of the app.
        let mut exiting = vec![
            RawFrame::new("_port_capture.<locals>.write_manifest", "<string>", 300),
            RawFrame::new("_port_capture.<locals>.at_exit", "<string>", 320),
        ];
        strip_bootstrap(&mut exiting);
        assert!(exiting.is_empty());
        // The bootstrap alone, before the app runs: nothing of the app.
        let mut before = vec![setup, boot.clone()];
        strip_bootstrap(&mut before);
        assert!(before.is_empty());
    }

    #[test]
    fn first_call_trampolines_are_dropped_wherever_they_are() {
        // main's first call is the whole run: its trampoline (in the app's
        // file, at main's first line) sits under everything main calls.
        let module = RawFrame::new("<module>", "/app/a.py", 40);
        let tramp = |line| RawFrame::new(TRAMPOLINE, "/app/a.py", line);
        let main = RawFrame::new("main", "/app/a.py", 33);
        let shade = RawFrame::new("shade", "/app/a.py", 12);
        let mut stack = vec![
            shade.clone(),
            tramp(10),
            main.clone(),
            tramp(30),
            module.clone(),
            RawFrame::new("<module>", "<string>", 600),
        ];
        strip_bootstrap(&mut stack);
        assert_eq!(stack, vec![shade, main, module.clone()]);
        let mut alone = vec![tramp(30)];
        strip_bootstrap(&mut alone);
        assert!(alone.is_empty());
        // Recording main's first call of shade: the capture's time, dropped.
        let mut recording = vec![
            RawFrame::new("savez", "/venv/site-packages/numpy/lib/_npyio_impl.py", 700),
            RawFrame::new("_port_capture.<locals>.begin", "<string>", 250),
            RawFrame::new("_port_capture.<locals>.first_call", "<string>", 640),
            tramp(10),
            RawFrame::new("main", "/app/a.py", 33),
            module,
        ];
        strip_bootstrap(&mut recording);
        assert!(recording.is_empty());
    }

    #[test]
    fn a_sampler_waiting_for_its_next_sample_stops_at_once() {
        // A gap of some 10^6 s on average: only a wait cut short returns.
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let waiting = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut schedule = Schedule::new(1e-6);
                tx.send(schedule.wait(&stop)).unwrap();
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        stop.store(true, Ordering::SeqCst);
        waiting.thread().unpark();
        assert_eq!(rx.recv_timeout(Duration::from_secs(60)), Ok(false));
        waiting.join().unwrap();
    }

    #[test]
    fn samples_come_at_the_rate_on_average() {
        let stop = AtomicBool::new(false);
        let mut schedule = Schedule::new(1000.0);
        let start = Instant::now();
        for _ in 0..200 {
            assert!(schedule.wait(&stop));
        }
        // 200 gaps of 1 ms on average: their sum is due, not much sooner.
        assert!(
            start.elapsed() >= Duration::from_millis(100),
            "{:?}",
            start.elapsed()
        );
    }
}
