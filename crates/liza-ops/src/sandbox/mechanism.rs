//! The mechanism (specs/sandbox.md *The mechanism*): bubblewrap found on `PATH` and
//! proven to work here by starting one sandbox with the namespaces liza uses — once per
//! process, since a probe costs a few milliseconds. Where it does not work, the reason
//! and the fix a person needs.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// bubblewrap, found and proven to work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bwrap {
    /// The `bwrap` executable found on `PATH`.
    pub path: PathBuf,
    /// As `bwrap --version` says it (`bubblewrap 0.8.0`).
    pub version: String,
}

/// Whether agents and checks can be sandboxed on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// bubblewrap started a trial sandbox here.
    Available(Bwrap),
    /// No sandbox can be started here.
    Unavailable {
        /// What is missing or refused, in a person's words.
        reason: String,
        /// What to do about it.
        fix: String,
    },
}

/// How to install bubblewrap on the common distributions.
pub const INSTALL_FIX: &str = "install bubblewrap: `sudo apt install bubblewrap` (Debian, Ubuntu), \
     `sudo dnf install bubblewrap` (Fedora), `sudo pacman -S bubblewrap` (Arch)";

/// How every sandbox is set apart from the host, whatever it shows: its own user, process,
/// IPC, host-name and cgroup namespaces, no namespace of its own making (a run could
/// otherwise unmount what hides the host), gone when liza is, and no capability (run as
/// root, bubblewrap would keep them inside). The probe starts one sandbox with exactly
/// these.
pub const ISOLATION: &[&str] = &[
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--disable-userns",
    "--die-with-parent",
    "--cap-drop",
    "ALL",
];

/// The mechanism on this machine, probed on first use and remembered for the process.
pub fn availability() -> &'static Availability {
    static PROBED: OnceLock<Availability> = OnceLock::new();
    PROBED.get_or_init(probe)
}

/// Looks for `bwrap` on `PATH` and starts one sandbox with every namespace liza asks for.
pub fn probe() -> Availability {
    if !cfg!(target_os = "linux") {
        return Availability::Unavailable {
            reason: format!(
                "the sandbox uses Linux namespaces, and this is {}",
                std::env::consts::OS
            ),
            fix: "run liza in a Linux VM or container to confine the agents".into(),
        };
    }
    let Some(path) = crate::program::find_executable("bwrap") else {
        return Availability::Unavailable {
            reason: "bubblewrap (bwrap) is not on PATH".into(),
            fix: INSTALL_FIX.into(),
        };
    };
    // One sandbox isolated as every run is, running bubblewrap itself to say
    // its version: the trial and the version in one start.
    let trial = Command::new(&path)
        .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
        .args(ISOLATION)
        .args(["--new-session", "--"])
        .arg(&path)
        .arg("--version")
        .stdin(Stdio::null())
        .output();
    match trial {
        Ok(out) if out.status.success() => {
            let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            let version = if version.is_empty() {
                "bubblewrap (version unknown)".into()
            } else {
                version
            };
            Availability::Available(Bwrap { path, version })
        }
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            Availability::Unavailable {
                fix: fix_for(&said),
                reason: format!(
                    "{} cannot start a sandbox here: {}",
                    path.display(),
                    if said.is_empty() {
                        format!("it exited with {}", out.status)
                    } else {
                        said
                    }
                ),
            }
        }
        Err(e) => Availability::Unavailable {
            reason: format!("{} could not be run: {e}", path.display()),
            fix: INSTALL_FIX.into(),
        },
    }
}

/// The fix for what bubblewrap said when it could not start a sandbox.
fn fix_for(said: &str) -> String {
    let said = said.to_ascii_lowercase();
    if said.contains("user namespace")
        || said.contains("uid map")
        || said.contains("no permissions to create")
        || said.contains("operation not permitted")
        || said.contains("permission denied")
    {
        "allow unprivileged user namespaces: `sudo sysctl -w kernel.unprivileged_userns_clone=1` \
         (Debian), `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` (Ubuntu 24.04 \
         and later, or give bwrap an AppArmor profile), `sudo sysctl -w user.max_user_namespaces=15000`; \
         in a container, start it with user namespaces allowed (e.g. Docker's --security-opt \
         seccomp=unconfined)"
            .into()
    } else if said.contains("disable-userns") || said.contains("unrecognized option") {
        "upgrade bubblewrap to 0.8 or later (liza uses --disable-userns)".into()
    } else {
        format!(
            "run `bwrap --ro-bind / / --unshare-user --unshare-pid true` to see why; {INSTALL_FIX}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_of_user_namespaces_point_at_the_sysctl() {
        for said in [
            "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.",
            "bwrap: setting up uid map: Permission denied",
            "bwrap: Creating new namespace failed: Operation not permitted",
        ] {
            assert!(fix_for(said).contains("user namespaces"), "{said}");
        }
        assert!(fix_for("bwrap: Unknown option --disable-userns").contains("0.8"));
    }
}
