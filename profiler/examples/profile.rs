//! Profiles a Python app from the command line, without the `port` binary:
//!
//! ```text
//! cargo run -p port-profiler --example profile -- [OPTIONS] APP.py [-- ARGS...]
//!   --python PATH   --rate HZ   --duration SECS   --idle   --subprocesses
//!   --no-capture    --capture-dir DIR   --json OUT.json
//!   --flamegraph OUT.svg   --speedscope OUT.json   --quiet
//! ```
//!
//! Prints the hottest functions (or writes the whole profile as JSON) and
//! exits 1 with one line on stderr when profiling fails. Used by
//! `scripts/bench-profile-overhead.sh` and the Ctrl-C test.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use port_profiler::{
    profile, resolve_python, write_flamegraph, write_speedscope, AppDirResolver, ProfileOptions,
};

struct Cli {
    opts: ProfileOptions,
    json: Option<PathBuf>,
    flamegraph: Option<PathBuf>,
    speedscope: Option<PathBuf>,
    quiet: bool,
}

fn parse() -> Result<Cli, String> {
    let mut args = std::env::args().skip(1);
    let mut python = None;
    let mut app = None;
    let mut rest = Vec::new();
    let mut rate = 100;
    let mut duration = None;
    let (mut idle, mut subprocesses, mut capture, mut quiet) = (false, false, true, false);
    let mut capture_dir = None;
    let (mut json, mut flamegraph, mut speedscope) = (None, None, None);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--python" => python = Some(PathBuf::from(value("--python")?)),
            "--rate" => {
                rate = value("--rate")?
                    .parse()
                    .map_err(|e| format!("--rate: {e}"))?
            }
            "--duration" => {
                let secs: f64 = value("--duration")?
                    .parse()
                    .map_err(|e| format!("--duration: {e}"))?;
                duration = Some(Duration::try_from_secs_f64(secs).map_err(|e| e.to_string())?);
            }
            "--capture-dir" => capture_dir = Some(PathBuf::from(value("--capture-dir")?)),
            "--json" => json = Some(PathBuf::from(value("--json")?)),
            "--flamegraph" => flamegraph = Some(PathBuf::from(value("--flamegraph")?)),
            "--speedscope" => speedscope = Some(PathBuf::from(value("--speedscope")?)),
            "--idle" => idle = true,
            "--subprocesses" => subprocesses = true,
            "--no-capture" => capture = false,
            "--quiet" => quiet = true,
            "--" => {
                rest.extend(args.by_ref());
            }
            _ if a.starts_with("--") => return Err(format!("unknown option {a}")),
            _ if app.is_none() => app = Some(PathBuf::from(a)),
            _ => rest.push(a),
        }
    }
    let app = app.ok_or("usage: profile [OPTIONS] APP.py [-- ARGS...]")?;
    let mut opts = ProfileOptions::new(resolve_python(python), app);
    opts.args = rest;
    opts.rate_hz = rate;
    opts.duration = duration;
    opts.idle = idle;
    opts.subprocesses = subprocesses;
    opts.capture = capture;
    if let Some(dir) = capture_dir {
        opts.capture_dir = dir;
    }
    Ok(Cli {
        opts,
        json,
        flamegraph,
        speedscope,
        quiet,
    })
}

fn main() -> ExitCode {
    let cli = match parse() {
        Ok(cli) => cli,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let resolver = AppDirResolver::for_app(&cli.opts.app);
    let result = profile(&cli.opts, &resolver, &|_| {});
    let p = match result {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    if let Some(path) = &cli.json {
        let text = serde_json::to_string_pretty(&p).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    for (path, write) in [
        (&cli.flamegraph, write_flamegraph as fn(_, _) -> _),
        (&cli.speedscope, write_speedscope),
    ] {
        if let Some(path) = path {
            if let Err(e) = write(&p, path.as_path()) {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        }
    }
    if !cli.quiet {
        eprintln!(
            "{} samples in {:.2} s at {} Hz; {}",
            p.samples,
            p.duration_s,
            p.rate_hz,
            p.exit.describe()
        );
        for f in p.functions.iter().take(10) {
            eprintln!(
                "{:6.1}% self {:6.1}% total  {}",
                f.self_pct, f.total_pct, f.key
            );
        }
        for w in &p.warnings {
            eprintln!("warning: {w}");
        }
    }
    ExitCode::SUCCESS
}
