//! The sandbox of a project command (specs/sandbox.md *Checks*): `on_review` and
//! `on_merge` checks, the integration script, the built-in coder's self-checks,
//! `post_worktree_cmd` and the built-in agent's `git apply` run code an agent wrote, so
//! each runs where it can write its worktree and a scratch `$HOME` and `/tmp` only, with
//! the checks' network (`none` by default).

use std::path::{Path, PathBuf};

use super::layout::{Layout, Plan, Scratch, View};
use super::{Confinement, SandboxError, extra_paths};
use crate::blackboard::model::{SandboxConfig, SandboxNetwork};
use crate::git::{Repo, own_git_dir};

/// Where a project command runs.
pub enum Jail {
    /// Unconfined: this process runs them so (`off`, `--no-sandbox`, or no mechanism in
    /// `auto` mode).
    Unconfined,
    /// In the sandbox prepared for its directory.
    Sandboxed(Box<CheckJail>),
    /// It may not run at all: why (`required` and no sandbox here, or no scratch space).
    Refused(String),
}

impl Jail {
    /// The checks' jail for `dir`: their network is `config.checks_network`.
    pub fn for_checks(root: &Path, dir: &Path, config: &SandboxConfig) -> Jail {
        Jail::for_dir(root, dir, config, config.checks_network())
    }

    /// A jail for `dir` with `network`.
    pub fn for_dir(
        root: &Path,
        dir: &Path,
        config: &SandboxConfig,
        network: SandboxNetwork,
    ) -> Jail {
        match CheckJail::for_dir(root, dir, config, network) {
            Ok(Some(jail)) => Jail::Sandboxed(Box::new(jail)),
            Ok(None) => Jail::Unconfined,
            Err(e) => Jail::Refused(match &e {
                SandboxError::Required(r) => format!("{r}; fix: {}", r.fix),
                other => other.to_string(),
            }),
        }
    }

    /// The argv that runs `argv` here; `Err`: why it may not run.
    pub fn argv(&self, argv: &[String]) -> Result<Vec<String>, JailRefused> {
        match self {
            Jail::Unconfined => Ok(argv.to_vec()),
            Jail::Sandboxed(jail) => Ok(jail.wrap(argv)),
            Jail::Refused(why) => Err(JailRefused(why.clone())),
        }
    }
}

/// A command the sandbox may not run here (it is required and cannot be set up), and
/// what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JailRefused(String);

/// A prepared sandbox for commands run in one directory.
pub struct CheckJail {
    bwrap: PathBuf,
    root: PathBuf,
    common_git_dir: PathBuf,
    dir: PathBuf,
    scratch: Scratch,
    config: SandboxConfig,
    network: SandboxNetwork,
    _scratch_dir: tempfile::TempDir,
}

impl CheckJail {
    /// The sandbox for commands in `dir` (a worktree of the project at `root`), or `None`
    /// where this process runs them unconfined (`config.sandbox.mode: off`, `--no-sandbox`,
    /// or no mechanism in `auto` mode).
    pub fn for_dir(
        root: &Path,
        dir: &Path,
        config: &SandboxConfig,
        network: SandboxNetwork,
    ) -> Result<Option<CheckJail>, SandboxError> {
        let confinement = Confinement::for_process(config)?;
        let Some(bwrap) = confinement.bwrap() else {
            return Ok(None);
        };
        let repo = Repo::open(root).map_err(SandboxError::Git)?;
        let scratch_dir = tempfile::Builder::new()
            .prefix("liza-check-")
            .tempdir()
            .map_err(|source| SandboxError::Io {
                action: "create a scratch directory in",
                path: std::env::temp_dir(),
                source,
            })?;
        let scratch =
            Scratch::prepare(scratch_dir.path(), &repo).map_err(|source| SandboxError::Io {
                action: "prepare the check's scratch directory",
                path: scratch_dir.path().to_path_buf(),
                source,
            })?;
        Ok(Some(CheckJail {
            bwrap: bwrap.path.clone(),
            root: root.to_path_buf(),
            common_git_dir: repo.common_dir(),
            dir: dir.to_path_buf(),
            scratch,
            config: config.clone(),
            network,
            _scratch_dir: scratch_dir,
        }))
    }

    /// The argv that runs `argv` in this sandbox (cwd `dir`).
    pub fn wrap(&self, argv: &[String]) -> Vec<String> {
        let Some(program) = argv.first() else {
            return Vec::new();
        };
        let program =
            crate::program::find_executable(program).unwrap_or_else(|| PathBuf::from(program));
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let env_path = std::env::var_os("PATH").unwrap_or_default();
        let git_dir = own_git_dir(&self.dir);
        let (read_only, writable) = extra_paths(&self.config, home.as_deref(), &self.root);
        let layout = Layout::build(&Plan {
            root: &self.root,
            common_git_dir: &self.common_git_dir,
            home: home.as_deref(),
            env_path: &env_path,
            rustup_home: super::rustup_home(home.as_deref()),
            program: &program,
            view: View::Worktree {
                dir: &self.dir,
                git_dir: git_dir.as_deref(),
                private: None,
            },
            scratch: &self.scratch,
            read_only,
            writable,
            protected: Vec::new(),
            hidden: Vec::new(),
            masks: Vec::new(),
            channel: None,
            network: self.network,
            interactive: false,
            chdir: &self.dir,
        });
        let mut out = vec![self.bwrap.display().to_string()];
        out.extend(layout.bwrap_args());
        out.push("--".into());
        out.extend(argv.iter().cloned());
        out
    }
}
