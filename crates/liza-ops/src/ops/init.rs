//! `liza init`: the blackboard, the integration branch and the git excludes.

use crate::blackboard::EventKind;
use crate::lifecycle::RuleId;
use std::path::{Path, PathBuf};

use super::OpsError;
use super::spec_committed::{SpecAt, Start, not_committed, spec_at};
use crate::blackboard::etcd::StoreAddress;
use crate::blackboard::log::LogEntry;
use crate::blackboard::model::State;
use crate::blackboard::validate::integration_branch_problem;
use crate::blackboard::{LizaPaths, Store, StoreError, Timestamp};
use crate::git::{GitError, Lease, Pushed, Remote, Repo, find_project_root};

/// What `liza init` was asked for.
pub struct InitRequest {
    /// The goal, in a sentence; refused when empty.
    pub goal: String,
    /// The goal's spec, relative to the current directory or the project root
    /// (default `specs/vision.md` in the root).
    pub spec: Option<PathBuf>,
    /// The integration branch's name (default `integration`).
    pub integration_branch: Option<String>,
    /// Where a new integration branch starts (default `HEAD`).
    pub base: Option<String>,
    /// The bare repository hosts share (`config.git_remote`).
    pub git_remote: Option<String>,
    /// Where `liza init` runs: the project is the repository around it.
    pub cwd: PathBuf,
}

/// A project set up by `liza init`.
#[derive(Debug, serde::Serialize)]
pub struct InitOutcome {
    /// The project's main checkout.
    pub root: PathBuf,
    /// The first goal's id.
    pub goal_id: String,
    /// The first sprint's id.
    pub sprint_id: String,
    /// The goal's spec, relative to the project root.
    pub spec_ref: String,
    /// The integration branch.
    pub integration_branch: String,
    /// The commit the integration branch is at.
    pub integration_tip: crate::blackboard::model::CommitId,
    /// Whether init created the branch (it was neither here nor on the shared remote).
    pub branch_created: bool,
    /// The patterns added to the repository's exclude file (those not there already).
    pub excludes_added: Vec<String>,
}

/// `liza init "<goal>"`: creates the blackboard (in `.liza/`, or in etcd with `--store`)
/// for the repository around `req.cwd`, and the integration branch if missing, and
/// excludes `.liza/` and `.worktrees/` from git. Refused when the goal's spec is not
/// committed where integration starts (agents' worktrees would not have it).
pub fn init(req: InitRequest) -> Result<InitOutcome, OpsError> {
    let root = find_project_root(&req.cwd)?;
    let paths = LizaPaths::new(&root);
    if paths.dir.exists() {
        return Err(StoreError::AlreadyInitialized {
            dir: paths.dir.display().to_string(),
        }
        .into());
    }
    // The global `--store` or LIZA_STORE: the blackboard goes to etcd.
    let address = crate::blackboard::store::locate(&root)?;
    let goal = req.goal.trim();
    if goal.is_empty() {
        return Err(OpsError::refused(
            RuleId::GoalText,
            "the goal is empty",
            "describe the goal in one sentence: liza init \"Add a --json flag to the report CLI\"",
        ));
    }
    let spec_ref = resolve_spec(&root, &req.cwd, req.spec.as_deref())?;
    let branch = req
        .integration_branch
        .as_deref()
        .unwrap_or("integration")
        .to_owned();
    if !Repo::is_valid_branch_name(&branch) {
        return Err(GitError::InvalidBranchName { name: branch }.into());
    }
    if let Some(problem) = integration_branch_problem(&branch) {
        return Err(OpsError::refused(
            RuleId::IntegrationBranch,
            format!("--integration-branch {branch} {problem}"),
            "name a branch of its own for approved work, e.g. --integration-branch integration",
        ));
    }
    let repo = Repo::open(&root)?;
    if let Some(path) = repo.checkouts_on_branch(&branch).first() {
        return Err(OpsError::refused(
            RuleId::IntegrationCheckedOut,
            format!(
                "{branch} is checked out in {}; liza merges approved work into the integration \
                 branch and never moves a branch under someone's checkout",
                path.display()
            ),
            "choose a branch nobody has checked out (the default, integration, is created for you)",
        ));
    }
    let remote = match &req.git_remote {
        Some(url) => Some(shared_remote(&root, url)?),
        None => None,
    };
    // A shared remote that has the branch already is where it is.
    let on_remote = match &remote {
        Some(remote) => remote.fetch(&branch)?,
        None => None,
    };
    // Where integration starts: the shared remote's branch, this repository's, or the base.
    let local = repo.branch_tip(&branch)?;
    let start = match (&on_remote, &local) {
        (Some(tip), _) | (None, Some(tip)) => tip.clone(),
        (None, None) => repo.resolve_commit(req.base.as_deref().unwrap_or("HEAD"))?,
    };
    // Worktrees start at the integration tip: a spec only in this checkout is one agents
    // are pointed at and do not have.
    if spec_at(&repo, &root, &start, &spec_ref) == SpecAt::Absent {
        let at = match (&req.git_remote, local.is_none() && on_remote.is_none()) {
            (_, true) => Start::NewBranch,
            (Some(url), false) => Start::Remote(url),
            (None, false) => Start::Local,
        };
        return Err(not_committed(&spec_ref, &branch, &start, at));
    }
    if let Some(tip) = &on_remote {
        repo.set_branch(
            &branch,
            tip.as_str(),
            "liza init: the shared remote's branch",
        )?;
    }
    let created = local.is_none() && on_remote.is_none();
    if created {
        repo.create_branch(&branch, &start)?;
    }
    let tip = start;

    if let Some(remote) = &remote
        && on_remote.is_none()
        && let Pushed::Rejected { reason } = remote.push(tip.as_str(), &branch, &Lease::Absent)?
    {
        return Err(OpsError::refused(
            RuleId::IntegrationBranch,
            format!("{branch} appeared on {} meanwhile ({reason})", remote.url()),
            "run `liza init` again: it takes the remote's branch",
        ));
    }
    let now = Timestamp::now();
    let mut state = State::initial(goal, &spec_ref, &branch, now);
    state.config.git_remote = req.git_remote.clone();
    let mut entry = LogEntry::new(now, "human", EventKind::Init);
    entry.detail = Some(goal.to_owned());
    let rules = super::hand_edits::HandEditRules::new(crate::blackboard::LizaPaths::new(&root).dir);
    if let Err(err) = Store::initialize(&root, address, state, entry, std::sync::Arc::new(rules)) {
        if created {
            // Leave the repository as it was.
            let _ = repo.delete_branch(&branch);
        }
        return Err(err.into());
    }
    let excludes_added =
        repo.add_excludes(&[".liza/", ".worktrees/"], "blackboard and task worktrees")?;
    Ok(InitOutcome {
        root,
        goal_id: "goal-1".into(),
        sprint_id: "sprint-1".into(),
        spec_ref,
        integration_branch: branch,
        integration_tip: tip,
        branch_created: created,
        excludes_added,
    })
}

/// A checkout attached to a blackboard in etcd by `liza join`.
#[derive(Debug, serde::Serialize)]
pub struct JoinOutcome {
    /// The project's main checkout.
    pub root: PathBuf,
    /// The blackboard's address, `etcd://HOST:PORT[,…]/PREFIX`.
    pub address: String,
    /// The blackboard's revision when joined.
    pub revision: u64,
    /// The patterns added to the repository's exclude file (those not there already).
    pub excludes_added: Vec<String>,
}

/// `liza join URL`: attaches the repository at `cwd` to the blackboard in etcd at `url`.
pub fn join(cwd: &Path, url: &str) -> Result<JoinOutcome, OpsError> {
    let root = find_project_root(cwd)?;
    let address: StoreAddress = url.parse().map_err(|source| StoreError::Address {
        origin: "the address".into(),
        source,
    })?;
    let rules = super::hand_edits::HandEditRules::new(LizaPaths::new(&root).dir);
    let store = Store::join(&root, address.clone(), std::sync::Arc::new(rules))?;
    let revision = store.snapshot()?.state.revision();
    let excludes_added = Repo::open(&root)?
        .add_excludes(&[".liza/", ".worktrees/"], "blackboard and task worktrees")?;
    Ok(JoinOutcome {
        root,
        address: address.to_string(),
        revision,
        excludes_added,
    })
}

/// The shared remote `url`, checked: a URL git will not read as an option, that answers.
fn shared_remote(root: &Path, url: &str) -> Result<Remote, OpsError> {
    if let Some(problem) = crate::blackboard::validate::git_remote_problem(url) {
        return Err(OpsError::refused(
            RuleId::IntegrationBranch,
            format!("--git-remote {url:?} {problem}"),
            "give the URL or path of a bare repository every host reaches",
        ));
    }
    let remote = Remote::new(root, url);
    remote.reachable()?;
    Ok(remote)
}

/// The spec must be an existing file inside the project; its path is stored relative to
/// the project root.
pub(super) fn resolve_spec(
    root: &Path,
    cwd: &Path,
    spec: Option<&Path>,
) -> Result<String, OpsError> {
    let default = Path::new("specs/vision.md");
    let candidates: Vec<PathBuf> = match spec {
        None => vec![root.join(default)],
        Some(p) if p.is_absolute() => vec![p.to_path_buf()],
        Some(p) => vec![cwd.join(p), root.join(p)],
    };
    let shown = spec.unwrap_or(default).display().to_string();
    let found = candidates
        .iter()
        .find(|c| c.is_file())
        .and_then(|c| c.canonicalize().ok())
        .ok_or_else(|| {
            OpsError::refused(
                RuleId::SpecPath,
                format!("spec file {shown} does not exist"),
                "write the goal's spec first (agents read it), e.g. specs/vision.md, or pass --spec PATH",
            )
        })?;
    let relative = found.strip_prefix(root).map_err(|_| {
        OpsError::refused(
            RuleId::SpecPath,
            format!(
                "spec file {} is outside the project {}",
                found.display(),
                root.display()
            ),
            "keep specs inside the repository so every worktree sees them",
        )
    })?;
    Ok(relative.to_string_lossy().into_owned())
}
