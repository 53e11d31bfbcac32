//! The app's process: starting it, finding its descendants, ending it.
//!
//! Linux-only: descendants are found through `/proc`, signals through libc.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::error::ProfileError;
use crate::model::AppExit;
use crate::options::AppOutput;

/// How the app's standard streams are connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streams {
    /// stdin and stderr are the user's own; stdout goes where
    /// [`AppOutput`] says. (The one kind since capture joined the sampled run.)
    Inherit,
}

/// Starts `python app args...` with extra environment variables.
pub fn spawn(
    python: &Path,
    leading: &[String],
    app: &Path,
    args: &[String],
    env: &[(String, String)],
    streams: Streams,
    output: &AppOutput,
) -> Result<Child, ProfileError> {
    let mut cmd = Command::new(python);
    cmd.args(leading).arg(app).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    match streams {
        Streams::Inherit => match output {
            AppOutput::Inherit => {}
            AppOutput::Stderr => {
                cmd.stdout(Stdio::from(std::io::stderr()));
            }
            AppOutput::File(path) => {
                let file = std::fs::File::create(path).map_err(|source| ProfileError::Write {
                    path: path.clone(),
                    source,
                })?;
                cmd.stdout(Stdio::from(file));
            }
        },
    }
    cmd.spawn().map_err(|source| ProfileError::PythonNotFound {
        python: python.to_path_buf(),
        source,
    })
}

/// The exit of a finished child.
pub fn exit_of(status: ExitStatus) -> AppExit {
    use std::os::unix::process::ExitStatusExt;
    AppExit {
        code: status.code(),
        signal: status.signal(),
        interrupted: false,
        timed_out: false,
    }
}

/// Parent of every live process, read from `/proc/*/stat`.
fn parent_map() -> HashMap<u32, u32> {
    let mut parents = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return parents;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            if let Some(ppid) = ppid_from_stat(&stat) {
                parents.insert(pid, ppid);
            }
        }
    }
    parents
}

/// The 4th field of `/proc/PID/stat`; the 2nd (the command) may contain spaces
/// and parentheses, so fields are counted from its closing parenthesis.
fn ppid_from_stat(stat: &str) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Every live descendant of `root`, parents before children.
pub fn descendants(root: u32) -> Vec<u32> {
    descendants_in(root, &parent_map())
}

fn descendants_in(root: u32, parents: &HashMap<u32, u32>) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, &ppid) in parents {
        children.entry(ppid).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut seen = HashSet::from([root]);
    let mut queue = vec![root];
    while let Some(p) = queue.pop() {
        if let Some(kids) = children.get_mut(&p) {
            kids.sort_unstable();
            for &k in kids.iter() {
                if seen.insert(k) {
                    out.push(k);
                    queue.push(k);
                }
            }
        }
    }
    out
}

fn signal(pid: u32, sig: i32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: kill(2) with a positive pid only sends a signal; failure (the
    // process is already gone) is harmless and ignored.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// Ends the app and all its descendants: SIGTERM, then SIGKILL after `grace`.
/// Returns the app's exit status.
pub fn terminate_tree(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    if let Ok(Some(status)) = child.try_wait() {
        // The app is gone; children it left behind were re-parented and are
        // no longer ours to find.
        return Some(status);
    }
    let root = child.id();
    let tree = descendants(root);
    signal(root, libc::SIGTERM);
    for &pid in &tree {
        signal(pid, libc::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                for &pid in &tree {
                    signal(pid, libc::SIGKILL);
                }
                return Some(status);
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => break,
        }
    }
    for &pid in &tree {
        signal(pid, libc::SIGKILL);
    }
    let _ = child.kill();
    child.wait().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppid_is_read_past_a_command_with_spaces_and_parens() {
        assert_eq!(
            ppid_from_stat("123 (python (x) y) S 77 123 123 0 -1"),
            Some(77)
        );
        assert_eq!(ppid_from_stat("garbage"), None);
    }

    #[test]
    fn descendants_cover_grandchildren_only() {
        let parents = HashMap::from([(2, 1), (3, 2), (4, 3), (5, 1), (9, 8)]);
        let mut d = descendants_in(2, &parents);
        d.sort_unstable();
        assert_eq!(d, vec![3, 4]);
        assert!(descendants_in(9, &parents).is_empty());
    }

    #[test]
    fn a_real_child_tree_is_found_and_terminated() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30; wait"])
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut tree = descendants(child.id());
        while tree.len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            tree = descendants(child.id());
        }
        assert_eq!(tree.len(), 2, "two sleeps under sh");
        let status = terminate_tree(&mut child, Duration::from_secs(2)).unwrap();
        assert_eq!(exit_of(status).signal, Some(libc::SIGTERM));
        std::thread::sleep(Duration::from_millis(100));
        for pid in tree {
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| !s.contains(") Z "))
                .unwrap_or(false);
            assert!(!alive, "descendant {pid} survived");
        }
    }
}
