//! The sandbox (specs/sandbox.md): every agent process and every project command liza
//! runs — the agent CLIs, `config.agent_tools` entries, checks, `post_worktree_cmd`, the
//! built-in agent's commands — runs inside a bubblewrap sandbox where it can write its
//! worktree, liza's scratch `$HOME` and `/tmp` and its own CLI's state, read the system
//! and its toolchains, and nothing else: not `.liza/`, not other worktrees, not the
//! person's checkout, not the rest of `$HOME`, not the repository's objects and refs
//! (a coder commits into a private store liza checks and copies in), and it sees no
//! process outside. The blackboard is reached only through the agent's own supervisor,
//! over a Unix socket whose far end knows whose sandbox it is in.
//!
//! - [`mechanism`]: bubblewrap found and proven to work here, or why not and the fix.
//! - [`Confinement`]: what `config.sandbox.mode`, `--no-sandbox` and the machine decide.
//! - [`layout`]: what a process may touch, as ordered mounts, and bubblewrap's arguments.
//! - `toolchains`: the toolchains on `PATH` a hidden `$HOME` must still show.
//! - [`git_view`]: a coder's private git store and its checked sync.
//! - `scratch`: liza's scratch directories; [`CheckJail`]: a project command's sandbox.
//! - [`info_pipe`]: where a sandbox's processes are, for a graceful stop.
//! - [`channel`]: the wire format between `liza` in a sandbox and its supervisor.

pub mod channel;
mod check_jail;
mod confinement;
pub mod git_view;
pub mod info_pipe;
pub mod layout;
pub mod mechanism;
mod scratch;
mod toolchains;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use check_jail::{CheckJail, Jail, JailRefused};
pub use confinement::{Confinement, SandboxRequired, Unconfined};
pub use layout::{CHANNEL_SOCKET, Layout, Plan, PrivateGit, Scratch, View};
pub use scratch::agent_dir;

use crate::blackboard::model::SandboxConfig;
use crate::error::{Diagnostic, ErrorClass};

/// Why a sandbox could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// `config.sandbox.mode` is `required`, and no sandbox can be started here.
    #[error(transparent)]
    Required(#[from] SandboxRequired),
    /// A file or directory the sandbox needs could not be made.
    #[error("cannot {action} {path}")]
    Io {
        /// What was being done, as a verb phrase before the path.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The repository could not be opened for the sandbox's view of git.
    #[error("cannot prepare the sandbox's git")]
    Git(#[source] crate::git::GitError),
}

impl Diagnostic for SandboxError {
    fn class(&self) -> ErrorClass {
        match self {
            SandboxError::Required(_) => ErrorClass::Refused,
            SandboxError::Io { .. } => ErrorClass::Blackboard,
            SandboxError::Git(_) => ErrorClass::Git,
        }
    }

    fn hints(&self) -> Vec<String> {
        match self {
            SandboxError::Required(r) => vec![
                r.fix.clone(),
                "or set config.sandbox.mode to auto (runs unsandboxed where it cannot) with `liza edit`".into(),
            ],
            _ => vec!["`liza doctor` tries the sandbox and says what is wrong".into()],
        }
    }
}

/// Who turned the sandbox off for this whole process (`liza-agent --no-sandbox`).
static TURNED_OFF_BY: OnceLock<String> = OnceLock::new();

/// Turns the sandbox off for every agent and check this process runs.
pub fn turn_off_for_process(by: &str) {
    let _ = TURNED_OFF_BY.set(by.to_owned());
}

impl Confinement {
    /// The confinement of what this process runs, as `config` asks on this machine.
    pub fn for_process(config: &SandboxConfig) -> Result<Confinement, SandboxRequired> {
        Confinement::decide(config, TURNED_OFF_BY.get().map(String::as_str))
    }
}

/// `path` from `config.sandbox` as an absolute path: `~/x` under `home`; `None` for a
/// relative path (validation reports it).
pub fn expand(path: &str, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(rest) = path.strip_prefix("~/") {
        return home.map(|h| h.join(rest));
    }
    if path == "~" {
        return home.map(Path::to_path_buf);
    }
    let path = PathBuf::from(path);
    path.is_absolute().then_some(path)
}

/// Paths shown inside a sandbox: (the host's path, the path inside).
pub type Shown = Vec<(PathBuf, PathBuf)>;

/// `config.sandbox.read_only` and `writable`, expanded, as (host, inside) pairs; an entry
/// validation refuses (one that would show the project, its `.liza/`, `.git/`, the whole
/// home) is left out here too, whatever `$HOME` is.
pub fn extra_paths(config: &SandboxConfig, home: Option<&Path>, root: &Path) -> (Shown, Shown) {
    let allowed = |key: &'static str| {
        move |p: &PathBuf| {
            let text = p.display().to_string();
            crate::blackboard::validate::sandbox_path_problem(&text, key, Some(root)).is_none()
                && home.is_none_or(|h| h != p.as_path())
        }
    };
    let read_only = config
        .read_only()
        .iter()
        .filter_map(|p| expand(p, home))
        .filter(allowed("read_only"))
        .filter_map(|p| p.canonicalize().ok())
        .map(|p| (p.clone(), p))
        .collect();
    let writable = config
        .writable()
        .iter()
        .filter_map(|p| expand(p, home))
        .filter(allowed("writable"))
        .map(|p| (p.clone(), p))
        .collect();
    (read_only, writable)
}

/// rustup's home: `RUSTUP_HOME`, else `~/.rustup`.
pub fn rustup_home(home: Option<&Path>) -> Option<PathBuf> {
    std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".rustup")))
}
