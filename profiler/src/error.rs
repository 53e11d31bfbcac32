//! Everything that can stop a profile, each with one line saying what happened
//! and what to do.

use std::path::PathBuf;

use crate::model::AppExit;

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("app file {0} not found")]
    AppNotFound(PathBuf),

    #[error("{0} is a directory, not a Python file: give the script to run, e.g. {0}/main.py")]
    AppIsDirectory(PathBuf),

    #[error("cannot start Python {python}: {source}; pass --python PATH or activate a virtual environment")]
    PythonNotFound {
        python: PathBuf,
        source: std::io::Error,
    },

    #[error("the sampling rate must be between 1 and 10000 Hz, not {0}")]
    BadRate(u64),

    #[error("no permission to sample the app (pid {pid}): {why}; {fix}")]
    PermissionDenied { pid: u32, why: String, fix: String },

    #[error("could not attach py-spy to the app (pid {pid}): {message}")]
    Attach { pid: u32, message: String },

    #[error("{app} failed before any sample was taken: {}", .exit.describe())]
    AppFailedEarly { app: PathBuf, exit: AppExit },

    #[error("cannot set up Ctrl-C handling: {0}")]
    Interrupt(String),

    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("cannot draw the flame graph: {0}")]
    Flamegraph(String),
}

/// Whether an error chain from py-spy (or the OS) is a refusal to read the
/// process, rather than a missing process or an unsupported interpreter.
/// py-spy's errors are `anyhow` chains over `remoteprocess` and `std::io`
/// errors, so the text is the common ground.
pub fn is_permission_error(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("permission denied")
        || m.contains("operation not permitted")
        || m.contains("os error 1)")
        || m.contains("os error 13)")
}

/// The system facts that decide whether one process may read another.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PtraceFacts {
    /// `/proc/sys/kernel/yama/ptrace_scope`, when Yama is present.
    pub ptrace_scope: Option<u8>,
    /// Whether this process has `CAP_SYS_PTRACE` in its effective set.
    pub has_cap_sys_ptrace: bool,
    pub is_root: bool,
    /// Running inside a container (Docker, Podman, Kubernetes).
    pub in_container: bool,
    /// The app's owner, when it is not us.
    pub other_owner: Option<u32>,
}

impl PtraceFacts {
    /// Reads the facts for sampling `pid` from this process.
    pub fn read(pid: u32) -> Self {
        let ptrace_scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
            .ok()
            .and_then(|s| s.trim().parse().ok());
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let has_cap_sys_ptrace = capability_from_status(&status, 19);
        // SAFETY: geteuid has no preconditions and cannot fail.
        let euid = unsafe { libc::geteuid() };
        let in_container = std::path::Path::new("/.dockerenv").exists()
            || std::path::Path::new("/run/.containerenv").exists()
            || std::fs::read_to_string("/proc/1/cgroup")
                .map(|c| c.contains("docker") || c.contains("kubepods") || c.contains("containerd"))
                .unwrap_or(false);
        let other_owner = owner_uid(pid).filter(|&uid| uid != euid);
        PtraceFacts {
            ptrace_scope,
            has_cap_sys_ptrace,
            is_root: euid == 0,
            in_container,
            other_owner,
        }
    }

    /// (why, fix): the most likely cause first.
    pub fn explain(&self) -> (String, String) {
        if let Some(uid) = self.other_owner {
            if !self.is_root && !self.has_cap_sys_ptrace {
                return (
                    format!("the app runs as another user (uid {uid})"),
                    "run port as that user, or as root".to_string(),
                );
            }
        }
        if !self.has_cap_sys_ptrace && self.is_root && self.in_container {
            return (
                "this container lacks CAP_SYS_PTRACE, which reading another process's memory needs"
                    .to_string(),
                "restart the container with `--cap-add SYS_PTRACE` (docker/podman) or add SYS_PTRACE to the pod's securityContext capabilities".to_string(),
            );
        }
        match self.ptrace_scope {
            Some(scope) if scope >= 3 => (
                format!("kernel.yama.ptrace_scope is {scope}, which forbids sampling any process"),
                "it can only be lowered by rebooting; profile on a machine with ptrace_scope 0 or 1".to_string(),
            ),
            Some(2) => (
                "kernel.yama.ptrace_scope is 2: only processes with CAP_SYS_PTRACE may sample".to_string(),
                "run port as root (sudo), or `echo 1 | sudo tee /proc/sys/kernel/yama/ptrace_scope`".to_string(),
            ),
            Some(scope) if !self.is_root => (
                format!(
                    "the app refuses to be read (kernel.yama.ptrace_scope is {scope}; a non-dumpable or setuid program, or a security module, blocks it)"
                ),
                "run port as root (sudo), or `echo 0 | sudo tee /proc/sys/kernel/yama/ptrace_scope`".to_string(),
            ),
            None if !self.is_root => (
                "the app refuses to be read (it is non-dumpable or setuid, or a security module blocks ptrace)".to_string(),
                "run port as root (sudo) or with CAP_SYS_PTRACE".to_string(),
            ),
            _ if self.in_container => (
                "the container's seccomp profile or missing CAP_SYS_PTRACE blocks process_vm_readv/ptrace".to_string(),
                "restart the container with `--cap-add SYS_PTRACE` (and `--security-opt seccomp=unconfined` on old Docker)".to_string(),
            ),
            _ => (
                "the kernel refused ptrace/process_vm_readv (a security module such as SELinux or AppArmor may block it)".to_string(),
                "allow ptrace for port in the security policy, or profile outside the sandbox".to_string(),
            ),
        }
    }
}

/// Bit `cap` of the `CapEff:` line of a `/proc/PID/status` text.
fn capability_from_status(status: &str, cap: u32) -> bool {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .map(|bits| bits & (1u64 << cap) != 0)
        .unwrap_or(false)
}

fn owner_uid(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let uids = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    // Real, effective, saved, filesystem: the effective one decides.
    uids.split_whitespace().nth(1)?.parse().ok()
}

/// The error for py-spy's `message` about `pid`, permission problems explained.
pub fn attach_error(pid: u32, message: String) -> ProfileError {
    if is_permission_error(&message) {
        let (why, fix) = PtraceFacts::read(pid).explain();
        ProfileError::PermissionDenied { pid, why, fix }
    } else {
        ProfileError::Attach { pid, message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_errors_are_recognised_in_py_spy_chains() {
        assert!(is_permission_error(
            "Failed to open process - check if it is running.: Permission denied (os error 13)"
        ));
        assert!(is_permission_error("Operation not permitted (os error 1)"));
        assert!(!is_permission_error("No such process (os error 3)"));
        assert!(!is_permission_error(
            "Failed to find python version from target process"
        ));
    }

    #[test]
    fn cap_sys_ptrace_is_bit_19_of_capeff() {
        assert!(capability_from_status(
            "Name:\tx\nCapEff:\t000001ffffffffff\n",
            19
        ));
        assert!(!capability_from_status("CapEff:\t00000000a80425fb\n", 19));
        assert!(!capability_from_status("no caps line", 19));
    }

    #[test]
    fn explanations_name_the_cause_and_the_fix() {
        let other_user = PtraceFacts {
            other_owner: Some(1001),
            ..Default::default()
        };
        let (why, fix) = other_user.explain();
        assert!(why.contains("another user (uid 1001)"), "{why}");
        assert!(fix.contains("root"), "{fix}");

        let container = PtraceFacts {
            is_root: true,
            in_container: true,
            ..Default::default()
        };
        let (why, fix) = container.explain();
        assert!(why.contains("CAP_SYS_PTRACE"), "{why}");
        assert!(fix.contains("--cap-add SYS_PTRACE"), "{fix}");

        let yama = PtraceFacts {
            ptrace_scope: Some(2),
            ..Default::default()
        };
        let (why, fix) = yama.explain();
        assert!(why.contains("ptrace_scope is 2"), "{why}");
        assert!(fix.contains("/proc/sys/kernel/yama/ptrace_scope"), "{fix}");

        let scope1_user = PtraceFacts {
            ptrace_scope: Some(1),
            ..Default::default()
        };
        assert!(scope1_user.explain().1.contains("echo 0"));
    }

    #[test]
    fn permission_error_display_is_one_line() {
        let e = ProfileError::PermissionDenied {
            pid: 42,
            why: "w".into(),
            fix: "f".into(),
        };
        let text = e.to_string();
        assert_eq!(text, "no permission to sample the app (pid 42): w; f");
        assert!(!text.contains('\n'));
    }
}
