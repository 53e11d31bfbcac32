//! What a port run leaves behind if it is stopped: the Python children it
//! started and the temporary folders it made (a verification's inputs run
//! to hundreds of megabytes). Each is registered while it lives; on SIGINT,
//! SIGTERM or SIGHUP, and on a panic, every registered child's process
//! group is killed and every registered folder removed, and the process
//! exits with 128 + the signal (130, 143, 129), as a shell reports it.
//!
//! A caller that wants a signal for itself (a profile stops its app and
//! keeps what it sampled) holds an [`Interception`] meanwhile.
//!
//! Invariants: a child is registered before anything can wait on it, and
//! started in its own process group ([`own_group`]), so a terminal's Ctrl-C
//! reaches port alone and port decides; nothing here runs on the signal
//! itself: a thread of [`signal_hook`] receives it and does the work.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// The signals that end a run (or are intercepted).
pub const SIGNALS: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

type Handler = Arc<dyn Fn(i32) + Send + Sync>;

#[derive(Default)]
struct Registry {
    /// Children by registration id: their pid (and process group).
    children: HashMap<u64, u32>,
    /// Temporary folders by registration id.
    dirs: HashMap<u64, PathBuf>,
    /// The innermost interception, if any.
    intercept: Vec<(u64, Handler)>,
}

static NEXT: AtomicU64 = AtomicU64::new(1);

fn registry() -> MutexGuard<'static, Registry> {
    static R: OnceLock<Mutex<Registry>> = OnceLock::new();
    // A panic while the lock is held leaves the data consistent (each
    // change is one insert or remove): go on with it.
    R.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Installs the signal thread and the panic hook, once per process (later
/// calls do nothing). Fails only when the signals cannot be registered.
pub fn install() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        let mut signals =
            signal_hook::iterator::Signals::new(SIGNALS).map_err(|e| e.to_string())?;
        std::thread::Builder::new()
            .name("port-signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    let handler = registry().intercept.last().map(|(_, h)| Arc::clone(h));
                    match handler {
                        Some(h) => h(sig),
                        None => {
                            // The lock stays held to the exit: nothing new
                            // is started meanwhile.
                            let mut r = registry();
                            clean(&mut r);
                            std::process::exit(128 + sig);
                        }
                    }
                }
            })
            .map_err(|e| e.to_string())?;
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            clean(&mut registry());
            previous(info);
        }));
        Ok(())
    })
    .clone()
}

/// Kills every registered child's process group and removes every
/// registered folder.
fn clean(r: &mut Registry) {
    for (_, pid) in r.children.drain() {
        kill_group(pid);
    }
    for (_, dir) in r.dirs.drain() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn kill_group(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pid <= 0 {
        return;
    }
    // SAFETY: kill(2) only sends a signal. The group is the child's own
    // (see `own_group`); when it is not, the pid alone is killed. Failure
    // (already gone) is harmless.
    unsafe {
        if libc::kill(-pid, libc::SIGKILL) != 0 {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// Starts `cmd`'s child in a process group of its own, so that it and its
/// own children can be ended together, and a terminal's Ctrl-C goes to port
/// alone.
pub fn own_group(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0)
}

/// A registered child: killed (with its process group) if port is stopped
/// while this lives. Dropping it only forgets the child.
#[must_use = "the child is forgotten when this is dropped"]
pub struct ChildGuard(u64);

/// Registers a running child by its pid.
pub fn child(pid: u32) -> ChildGuard {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    registry().children.insert(id, pid);
    ChildGuard(id)
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        registry().children.remove(&self.0);
    }
}

/// [`Command::output`] with the child in its own group and registered while
/// it runs.
pub fn output(cmd: &mut Command) -> std::io::Result<std::process::Output> {
    use std::process::Stdio;
    own_group(cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let c = cmd.spawn()?;
    let _g = child(c.id());
    c.wait_with_output()
}

/// A temporary folder removed when dropped, and if port is stopped first.
pub struct TempDir {
    dir: tempfile::TempDir,
    id: u64,
}

/// A new temporary folder (in `$TMPDIR`), registered.
pub fn temp_dir() -> std::io::Result<TempDir> {
    let dir = tempfile::Builder::new().prefix("port-").tempdir()?;
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    registry().dirs.insert(id, dir.path().to_path_buf());
    Ok(TempDir { dir, id })
}

impl TempDir {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        registry().dirs.remove(&self.id);
        // `tempfile::TempDir`'s own drop removes the folder.
    }
}

/// While alive, the signals call its handler instead of ending the run.
/// Interceptions nest; the innermost one alive gets the signal.
#[must_use = "the interception ends when this is dropped"]
pub struct Interception(u64);

pub fn intercept(handler: impl Fn(i32) + Send + Sync + 'static) -> Interception {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    registry().intercept.push((id, Arc::new(handler)));
    Interception(id)
}

impl Drop for Interception {
    fn drop(&mut self) {
        registry().intercept.retain(|(id, _)| *id != self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrations_end_with_their_guards() {
        let d = temp_dir().unwrap();
        let p = d.path().to_path_buf();
        assert!(registry().dirs.values().any(|x| *x == p));
        drop(d);
        assert!(!p.exists());
        assert!(!registry().dirs.values().any(|x| *x == p));
        let g = child(u32::MAX);
        assert!(registry().children.values().any(|&x| x == u32::MAX));
        drop(g);
        assert!(!registry().children.values().any(|&x| x == u32::MAX));
    }

    #[test]
    fn a_child_in_its_own_group_is_killed_with_its_children() {
        // `sh` starts a `sleep` of its own: both are in the group.
        let mut c = own_group(Command::new("sh").args(["-c", "sleep 30 & wait"]))
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        kill_group(c.id());
        let status = c.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        // No process of the group is left running (a zombie waits for
        // init to reap it).
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(live_in_group(c.id()), Vec::<u32>::new());
    }

    /// The processes of group `g` that are not zombies, from `/proc`.
    fn live_in_group(g: u32) -> Vec<u32> {
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // After the command's closing parenthesis: state, ppid, pgrp.
            let rest: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
            if rest[2] == g.to_string() && rest[0] != "Z" {
                out.push(pid);
            }
        }
        out
    }
}
