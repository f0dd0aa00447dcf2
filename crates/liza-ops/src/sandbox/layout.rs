//! What a sandboxed process may touch (specs/sandbox.md *What a run may touch*), as the
//! ordered mounts of its view of the machine. [`Plan`] says what the process is run for;
//! [`Layout::build`] turns it into mounts in the one order that works — the system
//! read-only, the hidden areas masked, liza's scratch directories, the toolchains, the
//! extra paths, the project, the git metadata, the channel — and [`Layout::bwrap_args`]
//! into bubblewrap's arguments. Building reads the file system (what exists, where links
//! lead) and writes nothing.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::toolchains::{Search, Toolchains};
use crate::blackboard::model::SandboxNetwork;

/// Where liza's own files are inside every sandbox: its scratch [`Scratch::run`],
/// read-only, one mount for all of them.
pub const LIZA_RUN: &str = "/run/liza";
/// Where the channel's socket is inside every sandbox (`liza` looks for it there).
pub const CHANNEL_SOCKET: &str = "/run/liza/supervisor.sock";
/// Where the repository's real object store is shown, read-only, to a run that commits
/// into a private one.
pub const SHARED_OBJECTS: &str = "/run/liza/git-objects";
/// Where the generated global git configuration (the identity) is shown.
pub const GLOBAL_GIT_CONFIG: &str = "/run/liza/gitconfig";

/// Directories hidden from every sandboxed process when they exist: other users' homes,
/// the runtime directories (agent and D-Bus sockets, docker.sock), temporary files,
/// mounted media.
const SYSTEM_HIDDEN: &[&str] = &[
    "/home", "/root", "/run", "/tmp", "/var/tmp", "/mnt", "/media",
];

/// The entries of the git directory a run sees (besides `config`, `objects` and
/// `worktrees`, shown as liza makes them): what git reads to work in a worktree.
const GIT_ENTRIES_SHOWN: &[&str] = &[
    "HEAD",
    "refs",
    "packed-refs",
    "info",
    "hooks",
    "modules",
    "shallow",
    "lfs",
    "commondir",
];

/// How much a shadow directory holds (bytes): lock files and the like, not data.
const SHADOW_BYTES: u64 = 16 * 1024 * 1024;

/// Variables removed from a sandboxed process's environment: they name sockets the
/// sandbox hides.
const UNSET: &[&str] = &[
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
];

/// liza's own per-process directories and generated files.
#[derive(Debug, Clone)]
pub struct Scratch {
    /// Shown as `$HOME` (the CLI's state and the toolchains are shown inside it).
    pub home: PathBuf,
    /// Shown as `/tmp` and `/var/tmp`.
    pub tmp: PathBuf,
    /// The repository's git configuration without credentials, shown over the real one.
    pub repo_config: PathBuf,
    /// Shown read-only as [`LIZA_RUN`]: the global git configuration (`gitconfig`: the
    /// user's identity, no automatic gc), the channel's socket (`supervisor.sock`, when its
    /// path fits a socket address), the mount point of [`SHARED_OBJECTS`]. A socket needs
    /// no write permission on its file system to be connected to.
    pub run: PathBuf,
}

impl Scratch {
    /// The global git configuration (in [`Scratch::run`]).
    pub fn global_config(&self) -> PathBuf {
        self.run.join("gitconfig")
    }

    /// Where the channel's socket is best made: in [`Scratch::run`], shown with it.
    pub fn socket(&self) -> PathBuf {
        self.run.join("supervisor.sock")
    }
}

/// The private git store of a run that commits (a coder): objects written there and
/// copied into the repository after checking them; the task branch's ref and reflog.
#[derive(Debug, Clone)]
pub struct PrivateGit {
    /// Shown as `objects/`; its `info/alternates` names [`SHARED_OBJECTS`].
    pub objects: PathBuf,
    /// Shown as `refs/heads/task/`: this task's ref, writable.
    pub refs: PathBuf,
    /// The other tasks' branches (their names in `refs/heads/task/`): shown read-only
    /// in `refs`, so moving one fails (git renames over a mount point in vain).
    pub other_tasks: Vec<String>,
    /// Shown as `logs/refs/heads/task/`.
    pub logs: PathBuf,
}

/// The project as the process sees it.
#[derive(Debug, Clone, Copy)]
pub enum View<'a> {
    /// A worktree, writable; its git metadata (`git_dir`) writable only with a private
    /// store to commit into.
    Worktree {
        /// The worktree.
        dir: &'a Path,
        /// The worktree's own git directory, where git keeps its HEAD and index (`None`
        /// for a main checkout).
        git_dir: Option<&'a Path>,
        /// The private store a run that commits writes its git work to.
        private: Option<&'a PrivateGit>,
    },
    /// The project's checkout, read-only, without `.liza/` and `.worktrees/` (the planner).
    Checkout,
}

/// What a sandboxed process is run for.
pub struct Plan<'a> {
    /// The project root (its checkout): hidden but for what the view shows.
    pub root: &'a Path,
    /// The repository's common git directory.
    pub common_git_dir: &'a Path,
    /// The user's `$HOME`: hidden, liza's scratch home shown in its place.
    pub home: Option<&'a Path>,
    /// The `PATH` the process gets.
    pub env_path: &'a OsStr,
    /// rustup's home (`RUSTUP_HOME`, default `~/.rustup`): shown read-only when a
    /// directory on `PATH` holds `rustup` or `cargo`.
    pub rustup_home: Option<PathBuf>,
    /// The program run (shown read-only when it lies in a hidden area).
    pub program: &'a Path,
    /// The project as the process sees it.
    pub view: View<'a>,
    /// liza's scratch directories and files for the process.
    pub scratch: &'a Scratch,
    /// Shown read-only: (host path, path inside).
    pub read_only: Vec<(PathBuf, PathBuf)>,
    /// Shown writable: (host path, path inside).
    pub writable: Vec<(PathBuf, PathBuf)>,
    /// Shown read-only over what is writable (a CLI's configuration inside its state).
    pub protected: Vec<PathBuf>,
    /// Hidden as well (the directory of the channel's socket).
    pub hidden: Vec<PathBuf>,
    /// Mounted over the project once it is shown: a reviewer's view of its CLI's
    /// configuration in the worktree, empty ([`Mount::Shadow`] for a directory, an empty
    /// file of liza's [`Mount::ReadOnly`] over a file).
    pub masks: Vec<Mount>,
    /// The channel's socket on the host, shown as [`CHANNEL_SOCKET`].
    pub channel: Option<&'a Path>,
    /// The host's network, or a loopback of its own.
    pub network: SandboxNetwork,
    /// An interactive run keeps the terminal's session (no `--new-session`).
    pub interactive: bool,
    /// The directory the process starts in.
    pub chdir: &'a Path,
}

/// One step of building the view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mount {
    /// An empty directory over a path (read-only once everything is mounted).
    Hide(PathBuf),
    /// A host path shown read-only.
    ReadOnly {
        /// The path on the host.
        from: PathBuf,
        /// Where the process sees it.
        to: PathBuf,
    },
    /// A host path shown writable.
    Writable {
        /// The path on the host.
        from: PathBuf,
        /// Where the process sees it.
        to: PathBuf,
    },
    /// Shown read-only if it is still there when the sandbox starts (an entry of a git
    /// directory that another process may remove meanwhile).
    ReadOnlyIfThere(PathBuf),
    /// A file shown empty.
    Blank(PathBuf),
    /// A small empty directory over a path that stays writable (what is written there
    /// is thrown away with the sandbox).
    Shadow(PathBuf),
}

/// The view of the machine a sandboxed process gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The mounts, in the order bubblewrap makes them.
    pub mounts: Vec<Mount>,
    /// The host's network, or a loopback of its own (`--unshare-net`).
    pub network: SandboxNetwork,
    /// Whether the process gets a session of its own, away from the terminal
    /// (`--new-session`).
    pub new_session: bool,
    /// The directory the process starts in.
    pub chdir: PathBuf,
    /// Variables set in the process's environment: `TMPDIR`, `GIT_CONFIG_GLOBAL` and,
    /// when there is a home, `HOME`.
    pub setenv: Vec<(String, String)>,
}

impl Layout {
    /// The mounts of `plan`, in order.
    pub fn build(plan: &Plan<'_>) -> Layout {
        let mut b = Builder::default();
        let home = plan.home.and_then(canonical);
        let root = canonical(plan.root).unwrap_or_else(|| plan.root.to_path_buf());
        let git =
            canonical(plan.common_git_dir).unwrap_or_else(|| plan.common_git_dir.to_path_buf());
        // 1. Hidden areas, then liza's scratch directories in their place.
        for dir in SYSTEM_HIDDEN {
            // An empty directory hides nothing; every mount costs the sandbox's start.
            let holds_something = |d: &PathBuf| {
                std::fs::read_dir(d).is_ok_and(|mut entries| entries.next().is_some())
            };
            if let Some(dir) = canonical(Path::new(dir)).filter(|d| d.is_dir())
                && (holds_something(&dir)
                    || dir == Path::new("/tmp")
                    || dir == Path::new("/var/tmp"))
            {
                b.hide(dir);
            }
        }
        if let Some(home) = &home
            && !b.is_hidden(home)
        {
            b.hide(home.clone());
        }
        // /tmp first: a $HOME under /tmp is mounted inside it, not hidden by it.
        b.writable(&plan.scratch.tmp, Path::new("/tmp"));
        b.writable(&plan.scratch.tmp, Path::new("/var/tmp"));
        if let Some(home) = &home {
            b.writable(&plan.scratch.home, home);
        }
        // The project and liza's private places are hidden over the scratch directories
        // (a project under /tmp would show through them otherwise).
        b.hide(root.clone());
        for dir in &plan.hidden {
            b.hide(canonical(dir).unwrap_or_else(|| dir.clone()));
        }
        // DNS keeps working when /etc/resolv.conf links into the hidden /run.
        if let Some(resolv) = canonical(Path::new("/etc/resolv.conf"))
            && b.is_hidden(&resolv)
        {
            b.read_only(&resolv, &resolv);
        }
        // 2. The toolchains on PATH and the program itself.
        let protected = [root.clone(), git.clone()];
        let too_wide = |p: &Path| {
            p.parent().is_none()
                || home.as_deref().is_some_and(|h| h.starts_with(p))
                || protected
                    .iter()
                    .any(|x| x.starts_with(p) || p.starts_with(x))
                || b.hidden_roots().any(|h| h.starts_with(p))
        };
        let hidden = |p: &Path| b.is_hidden(p);
        // What the run writes on the host: its worktree and git metadata, its CLI's
        // state, the extra writable paths, liza's scratch and private directories.
        let mut writes: Vec<PathBuf> = plan
            .writable
            .iter()
            .map(|(from, _)| canonical(from).unwrap_or_else(|| from.clone()))
            .collect();
        writes.extend([plan.scratch.home.clone(), plan.scratch.tmp.clone()]);
        if let View::Worktree {
            dir,
            git_dir,
            private,
        } = plan.view
        {
            writes.push(dir.to_path_buf());
            writes.extend(git_dir.map(Path::to_path_buf));
            if let Some(private) = private {
                writes.extend([
                    private.objects.clone(),
                    private.refs.clone(),
                    private.logs.clone(),
                ]);
            }
        }
        let agent_writable = |p: &Path| writes.iter().any(|w| p.starts_with(w));
        let mut path = plan.env_path.to_os_string();
        if let Some(dir) = plan.program.parent().filter(|d| d.is_absolute()) {
            path.push(":");
            path.push(dir);
        }
        // The search reads every program of the hidden PATH directories: a supervisor
        // starting run after run finds the same, so it is kept a while.
        let key = format!(
            "{}\0{}\0{}\0{}\0{:?}\0{:?}",
            path.to_string_lossy(),
            home.as_deref()
                .map(|h| h.display().to_string())
                .unwrap_or_default(),
            root.display(),
            git.display(),
            b.hidden_roots().collect::<Vec<_>>(),
            writes
        );
        let Toolchains { roots, blanked } = toolchains_for(&key, || {
            Search {
                path: &path,
                home: home.as_deref(),
                rustup_home: plan.rustup_home.clone(),
                hidden: &hidden,
                too_wide: &too_wide,
                agent_writable: &agent_writable,
            }
            .run()
        });
        for dir in roots {
            b.read_only(&dir, &dir);
        }
        for file in blanked {
            b.mounts.push(Mount::Blank(file));
        }
        // 3. What the run is handed and the extra paths.
        for (from, to) in &plan.read_only {
            if from.exists() && (b.is_hidden(to) || from != to) {
                b.read_only(from, to);
            }
        }
        for (from, to) in &plan.writable {
            if let Some(from) = canonical(from) {
                let to = if from == *to {
                    from.clone()
                } else {
                    to.clone()
                };
                b.writable(&from, &to);
            }
        }
        for path in &plan.protected {
            if let Some(path) = canonical(path) {
                b.read_only(&path, &path);
            }
        }
        // 4. The project.
        let in_view = match plan.view {
            View::Worktree {
                dir,
                git_dir,
                private,
            } => {
                let dir = canonical(dir).unwrap_or_else(|| dir.to_path_buf());
                b.writable(&dir, &dir);
                let pointer = dir.join(".git");
                if pointer.exists() {
                    // The worktree's link to its git metadata stays what liza made it.
                    b.read_only(&pointer, &pointer);
                }
                Some((git_dir.and_then(canonical), private))
            }
            View::Checkout => {
                b.read_only(&root, &root);
                for dir in [root.join(".liza"), root.join(".worktrees")] {
                    if dir.is_dir() {
                        b.hide(dir);
                    }
                }
                None
            }
        };
        b.mounts.extend(plan.masks.iter().cloned());
        // 5. The git metadata, as a shadow of the git directory: each of its entries shown
        // read-only in a small scratch directory of its own, so git may create what it
        // creates there (`packed-refs.lock` when it drops a pseudo-ref after a commit,
        // opencode's `.git/opencode`) without any of it reaching the repository; the
        // configuration without credentials; other worktrees' metadata hidden; a
        // committing run's objects, branch and reflog private.
        let private = match &in_view {
            Some((_, private)) => *private,
            None => None,
        };
        b.mounts.push(Mount::Shadow(git.clone()));
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&git)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        entries.sort();
        for entry in entries {
            match entry.file_name().and_then(OsStr::to_str) {
                Some("config") => b.read_only(&plan.scratch.repo_config, &entry),
                Some("worktrees") => b.hide(entry),
                Some("objects") if private.is_some() => {}
                Some("objects") => b.mounts.push(Mount::ReadOnlyIfThere(entry)),
                Some(name) if GIT_ENTRIES_SHOWN.contains(&name) && git_uses(&entry) => {
                    b.mounts.push(Mount::ReadOnlyIfThere(entry));
                }
                // The rest is the person's checkout's own (its index, ORIG_HEAD, …), or
                // a lock of git's on the host: a run needs none of it.
                _ => {}
            }
        }
        if let Some((Some(own), _)) = &in_view {
            if private.is_some() {
                b.writable(own, own);
            } else {
                b.read_only(own, own);
            }
            for name in ["commondir", "gitdir"] {
                let file = own.join(name);
                if file.is_file() {
                    b.read_only(&file, &file);
                }
            }
        }
        if let Some(private) = private {
            b.writable(&private.objects, &git.join("objects"));
            b.writable(&private.refs, &git.join("refs/heads/task"));
            for name in &private.other_tasks {
                let real = git.join("refs/heads/task").join(name);
                b.mounts.push(Mount::ReadOnlyIfThere(real));
            }
            b.writable(&private.logs, &git.join("logs/refs/heads/task"));
        }
        // 6. liza's own files: its scratch `run` directory, the repository's objects for a
        // private store, the channel's socket where it did not fit there.
        b.read_only(&plan.scratch.run, Path::new(LIZA_RUN));
        if private.is_some() {
            b.read_only(&git.join("objects"), Path::new(SHARED_OBJECTS));
        }
        if let Some(socket) = plan.channel.filter(|s| *s != plan.scratch.socket()) {
            b.writable(socket, Path::new(CHANNEL_SOCKET));
        }
        let mut setenv = vec![
            ("TMPDIR".to_owned(), "/tmp".to_owned()),
            ("GIT_CONFIG_GLOBAL".to_owned(), GLOBAL_GIT_CONFIG.to_owned()),
        ];
        if let Some(home) = &home {
            setenv.push(("HOME".to_owned(), home.display().to_string()));
        }
        Layout {
            mounts: effective(b.mounts),
            network: plan.network,
            new_session: !plan.interactive,
            chdir: plan.chdir.to_path_buf(),
            setenv,
        }
    }

    /// bubblewrap's arguments for this view, up to (not including) `--` and the command.
    pub fn bwrap_args(&self) -> Vec<String> {
        let mut args: Vec<String> = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
            .map(String::from)
            .to_vec();
        let text = |p: &Path| p.display().to_string();
        for mount in &self.mounts {
            match mount {
                Mount::Hide(dir) => args.extend(["--tmpfs".into(), text(dir)]),
                Mount::ReadOnly { from, to } => {
                    args.extend(["--ro-bind".into(), text(from), text(to)])
                }
                Mount::Writable { from, to } => {
                    args.extend(["--bind".into(), text(from), text(to)])
                }
                Mount::ReadOnlyIfThere(path) => {
                    args.extend(["--ro-bind-try".into(), text(path), text(path)])
                }
                Mount::Blank(file) => {
                    args.extend(["--ro-bind".into(), "/dev/null".into(), text(file)])
                }
                Mount::Shadow(dir) => args.extend([
                    "--size".into(),
                    SHADOW_BYTES.to_string(),
                    "--tmpfs".into(),
                    text(dir),
                ]),
            }
        }
        // A hidden directory becomes read-only once everything inside it is mounted,
        // unless something was mounted since at its path or above it (then it is gone
        // from the view, or no longer a mask).
        for (i, mount) in self.mounts.iter().enumerate() {
            if let Mount::Hide(dir) = mount {
                let covered = self.mounts[i + 1..].iter().any(|m| match m {
                    Mount::ReadOnly { to, .. } | Mount::Writable { to, .. } => dir.starts_with(to),
                    Mount::Hide(d) | Mount::Shadow(d) | Mount::ReadOnlyIfThere(d) => {
                        dir.starts_with(d)
                    }
                    Mount::Blank(_) => false,
                });
                if !covered {
                    args.extend(["--remount-ro".into(), text(dir)]);
                }
            }
        }
        args.extend(super::mechanism::ISOLATION.iter().map(|a| (*a).to_owned()));
        if self.network == SandboxNetwork::None {
            args.push("--unshare-net".into());
        }
        if self.new_session {
            args.push("--new-session".into());
        }
        for (key, value) in &self.setenv {
            args.extend(["--setenv".into(), key.clone(), value.clone()]);
        }
        for key in UNSET {
            args.extend(["--unsetenv".into(), (*key).to_owned()]);
        }
        args.extend(["--chdir".into(), text(&self.chdir)]);
        args
    }

    /// Whether `path` is hidden from the process (inside a hidden directory and not shown
    /// again by a later mount).
    pub fn hides(&self, path: &Path) -> bool {
        let mut hidden = false;
        for mount in &self.mounts {
            match mount {
                Mount::Hide(dir) | Mount::Shadow(dir) if path.starts_with(dir) => hidden = true,
                Mount::ReadOnly { to, .. } | Mount::Writable { to, .. } if path.starts_with(to) => {
                    hidden = false
                }
                Mount::ReadOnlyIfThere(to) if path.starts_with(to) => hidden = false,
                _ => {}
            }
        }
        hidden
    }
}

impl Mount {
    /// Where the process sees it.
    fn target(&self) -> &Path {
        match self {
            Mount::Hide(p) | Mount::ReadOnlyIfThere(p) | Mount::Blank(p) | Mount::Shadow(p) => p,
            Mount::ReadOnly { to, .. } | Mount::Writable { to, .. } => to,
        }
    }
}

/// The mounts that change what the process sees (each costs the sandbox's start some
/// 0.2–0.3 ms): without one that a later mount at its path or above replaces whole (a
/// hidden `/tmp` that liza's scratch `/tmp` is mounted over), nor a hiding one inside an
/// area hidden already with nothing shown in it since.
fn effective(mounts: Vec<Mount>) -> Vec<Mount> {
    let mut keep = vec![true; mounts.len()];
    for (i, mount) in mounts.iter().enumerate() {
        let at = mount.target();
        // An entry that may be gone by then replaces nothing.
        let replaced = mounts[i + 1..].iter().any(|later| {
            !matches!(later, Mount::ReadOnlyIfThere(_)) && at.starts_with(later.target())
        });
        let hidden_already = matches!(mount, Mount::Hide(_))
            && (0..i)
                .rev()
                .find(|&k| keep[k] && at.starts_with(mounts[k].target()))
                .is_some_and(|k| {
                    // (A shadow is writable: a hidden directory in it is not the same.)
                    matches!(mounts[k], Mount::Hide(_))
                        && !(k + 1..i).any(|x| keep[x] && mounts[x].target().starts_with(at))
                });
        keep[i] = !replaced && !hidden_already;
    }
    mounts
        .into_iter()
        .zip(keep)
        .filter_map(|(m, k)| k.then_some(m))
        .collect()
}

#[derive(Default)]
struct Builder {
    mounts: Vec<Mount>,
}

impl Builder {
    fn hide(&mut self, dir: PathBuf) {
        self.mounts.push(Mount::Hide(dir));
    }

    fn read_only(&mut self, from: &Path, to: &Path) {
        self.mounts.push(Mount::ReadOnly {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
        });
    }

    fn writable(&mut self, from: &Path, to: &Path) {
        self.mounts.push(Mount::Writable {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
        });
    }

    /// Whether `path` lies in a hidden area as mounted so far (a scratch directory shown
    /// in a hidden area's place is still liza's, not the host's: it counts as hidden).
    fn is_hidden(&self, path: &Path) -> bool {
        self.hidden_roots().any(|h| path.starts_with(h))
            && !self.mounts.iter().any(|m| match m {
                Mount::ReadOnly { from, to } => from == to && path.starts_with(to),
                _ => false,
            })
    }

    fn hidden_roots(&self) -> impl Iterator<Item = &Path> {
        self.mounts.iter().filter_map(|m| match m {
            Mount::Hide(dir) | Mount::Shadow(dir) => Some(dir.as_path()),
            _ => None,
        })
    }
}

/// Whether git would use an entry of the git directory: `hooks/` holding no more than
/// `git init`'s `*.sample` files and `info/` holding no more than a comment-only
/// `exclude` change nothing (and are left out of the view, a mount fewer each).
fn git_uses(entry: &Path) -> bool {
    let names = || {
        std::fs::read_dir(entry)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name())
    };
    match entry.file_name().and_then(OsStr::to_str) {
        Some("hooks") => names().any(|n| !n.to_string_lossy().ends_with(".sample")),
        Some("info") => names().any(|n| {
            n != "exclude"
                || std::fs::read_to_string(entry.join("exclude")).map_or(true, |text| {
                    text.lines()
                        .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
                })
        }),
        _ => true,
    }
}

/// How long a toolchain search is reused.
const TOOLCHAINS_KEPT: std::time::Duration = std::time::Duration::from_secs(60);

/// The toolchains for `key`: searched, or as searched less than [`TOOLCHAINS_KEPT`] ago.
fn toolchains_for(key: &str, search: impl FnOnce() -> Toolchains) -> Toolchains {
    type Kept = Option<(String, std::time::Instant, Toolchains)>;
    static KEPT: std::sync::Mutex<Kept> = std::sync::Mutex::new(None);
    if let Ok(kept) = KEPT.lock()
        && let Some((k, at, found)) = kept.as_ref()
        && k == key
        && at.elapsed() < TOOLCHAINS_KEPT
    {
        return found.clone();
    }
    let found = search();
    if let Ok(mut kept) = KEPT.lock() {
        *kept = Some((key.to_owned(), std::time::Instant::now(), found.clone()));
    }
    found
}

/// `path` with links resolved, when it exists.
fn canonical(path: &Path) -> Option<PathBuf> {
    path.canonicalize().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A project at `<tmp>/project` with a worktree, a home with secrets, and liza's
    /// scratch directories.
    struct Machine {
        _dir: tempfile::TempDir,
        root: PathBuf,
        home: PathBuf,
        worktree: PathBuf,
        common_git_dir: PathBuf,
        /// The worktree's own git directory (`.git/worktrees/t-1`).
        task_git_dir: PathBuf,
        scratch: Scratch,
        private: PrivateGit,
    }

    fn machine() -> Machine {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("project");
        let home = base.join("home");
        let worktree = root.join(".worktrees/t-1");
        for d in [
            root.join(".git/objects"),
            root.join(".git/refs/heads/task"),
            root.join(".git/worktrees/t-1"),
            root.join(".git/worktrees/t-2"),
            root.join(".liza/sandbox/coder-1/home"),
            root.join(".liza/sandbox/coder-1/tmp"),
            root.join(".worktrees/t-2"),
            worktree.clone(),
            home.join(".ssh"),
            home.join(".claude"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(
            worktree.join(".git"),
            format!("gitdir: {}\n", root.join(".git/worktrees/t-1").display()),
        )
        .unwrap();
        for f in ["commondir", "gitdir", "HEAD"] {
            std::fs::write(root.join(".git/worktrees/t-1").join(f), "x\n").unwrap();
        }
        let s = root.join(".liza/sandbox/coder-1");
        std::fs::create_dir_all(s.join("run")).unwrap();
        for f in ["git-config", "run/gitconfig"] {
            std::fs::write(s.join(f), "").unwrap();
        }
        let scratch = Scratch {
            home: s.join("home"),
            tmp: s.join("tmp"),
            repo_config: s.join("git-config"),
            run: s.join("run"),
        };
        let private = PrivateGit {
            objects: s.join("git/objects"),
            refs: s.join("git/refs"),
            other_tasks: vec!["t-2".into()],
            logs: s.join("git/logs"),
        };
        Machine {
            _dir: dir,
            common_git_dir: root.join(".git"),
            task_git_dir: root.join(".git/worktrees/t-1"),
            root,
            home,
            worktree,
            scratch,
            private,
        }
    }

    /// A run's plan on `m` with `view`, nothing configured: each test changes what it tries.
    fn plan<'a>(m: &'a Machine, view: View<'a>) -> Plan<'a> {
        Plan {
            root: &m.root,
            common_git_dir: &m.common_git_dir,
            home: Some(&m.home),
            env_path: OsStr::new("/usr/bin:/bin"),
            rustup_home: None,
            program: Path::new("/usr/bin/true"),
            view,
            scratch: &m.scratch,
            read_only: Vec::new(),
            writable: Vec::new(),
            protected: Vec::new(),
            hidden: Vec::new(),
            masks: Vec::new(),
            channel: None,
            network: SandboxNetwork::Full,
            interactive: false,
            chdir: &m.worktree,
        }
    }

    fn coder_layout(m: &Machine, network: SandboxNetwork) -> Layout {
        let view = View::Worktree {
            dir: &m.worktree,
            git_dir: Some(&m.task_git_dir),
            private: Some(&m.private),
        };
        Layout::build(&Plan {
            writable: vec![(m.home.join(".claude"), m.home.join(".claude"))],
            network,
            ..plan(m, view)
        })
    }

    /// What the process sees at `path`: the last mount whose destination holds it.
    fn seen(layout: &Layout, path: &Path) -> &'static str {
        let mut what = "host, read-only";
        for mount in &layout.mounts {
            match mount {
                Mount::Hide(d) if path.starts_with(d) => what = "hidden",
                Mount::Shadow(d) if path.starts_with(d) => what = "shadow",
                Mount::ReadOnly { to, .. } if path.starts_with(to) => what = "read-only",
                Mount::ReadOnlyIfThere(to) if path.starts_with(to) => what = "read-only",
                Mount::Writable { to, .. } if path.starts_with(to) => what = "writable",
                Mount::Blank(f) if path == f => what = "blank",
                _ => {}
            }
        }
        what
    }

    #[test]
    fn a_coder_writes_its_worktree_and_sees_nothing_of_the_blackboard_or_home() {
        let m = machine();
        let layout = coder_layout(&m, SandboxNetwork::Full);
        let git = m.root.join(".git");
        for (path, expected) in [
            (m.worktree.join("src/main.rs"), "writable"),
            (m.worktree.join(".git"), "read-only"),
            (m.root.join(".liza/state.yaml"), "hidden"),
            (
                m.root.join(".liza/sandbox/coder-1/run/supervisor.sock"),
                "hidden",
            ),
            (m.root.join("specs/vision.md"), "hidden"),
            (m.root.join(".worktrees/t-2/x"), "hidden"),
            (m.home.join(".ssh/id_ed25519"), "writable"), // the scratch $HOME, empty
            (m.home.join(".claude/settings.json"), "writable"),
            (git.join("HEAD"), "read-only"),
            (git.join("config"), "read-only"),
            (git.join("packed-refs.lock"), "shadow"),
            (git.join("objects/ab/cdef"), "writable"),
            (git.join("refs/heads/integration"), "read-only"),
            (git.join("refs/heads/task/t-1"), "writable"),
            (git.join("refs/heads/task/t-2"), "read-only"),
            (git.join("worktrees/t-1/HEAD"), "writable"),
            (git.join("worktrees/t-1/commondir"), "read-only"),
            (git.join("worktrees/t-2/HEAD"), "hidden"),
            (PathBuf::from("/run/user/1000/ssh-agent.sock"), "hidden"),
            (PathBuf::from("/usr/bin/git"), "host, read-only"),
        ] {
            assert_eq!(seen(&layout, &path), expected, "{}", path.display());
        }
        // The scratch $HOME is liza's directory, not the person's.
        assert!(layout.mounts.contains(&Mount::Writable {
            from: m.scratch.home.clone(),
            to: m.home.clone()
        }));
        assert!(layout.hides(&m.root.join(".liza/state.yaml")));
        assert!(!layout.hides(&m.worktree.join("a")));
    }

    #[test]
    fn a_reviewer_reads_the_repository_and_writes_no_git_metadata() {
        let m = machine();
        let layout = Layout::build(&plan(
            &m,
            View::Worktree {
                dir: &m.worktree,
                git_dir: Some(&m.task_git_dir),
                private: None,
            },
        ));
        let git = m.root.join(".git");
        for (path, expected) in [
            (m.worktree.join("target/debug/x"), "writable"),
            (git.join("objects/ab/cdef"), "read-only"),
            (git.join("refs/heads/task/t-1"), "read-only"),
            (git.join("worktrees/t-1/HEAD"), "read-only"),
            (git.join("index"), "shadow"),
        ] {
            assert_eq!(seen(&layout, &path), expected, "{}", path.display());
        }
    }

    #[test]
    fn masks_become_read_only_once_mounted_and_the_namespaces_are_all_asked_for() {
        let m = machine();
        let args = coder_layout(&m, SandboxNetwork::None).bwrap_args();
        let text = args.join(" ");
        for flag in [
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--unshare-net",
            &format!("--remount-ro {}", m.root.display()),
            "--remount-ro /home",
        ] {
            assert!(text.contains(flag), "{flag}: {text}");
        }
        // /tmp is liza's scratch directory: never remounted read-only over it; the shadow
        // of the git directory stays writable, and small.
        let remounted = remounted(&args);
        assert!(!remounted.contains(&"/tmp".to_owned()), "{text}");
        assert!(!remounted.contains(&m.root.join(".git").display().to_string()));
        assert!(text.contains(&format!(
            "--size {SHADOW_BYTES} --tmpfs {}",
            m.root.join(".git").display()
        )));
        let full = coder_layout(&m, SandboxNetwork::Full).bwrap_args();
        assert!(!full.contains(&"--unshare-net".to_owned()));
    }

    #[test]
    fn a_mount_that_changes_nothing_is_left_out() {
        let p = PathBuf::from;
        let mounts = vec![
            Mount::Hide(p("/tmp")),
            Mount::Writable {
                from: p("/s/tmp"),
                to: p("/tmp"),
            },
            Mount::Hide(p("/p")),
            Mount::Hide(p("/p/.liza/sandbox")),
            Mount::ReadOnly {
                from: p("/p/wt"),
                to: p("/p/wt"),
            },
            Mount::Hide(p("/p/wt/inner")),
            Mount::ReadOnly {
                from: p("/o"),
                to: p("/p/x/y"),
            },
            Mount::Hide(p("/p/x")),
            Mount::Shadow(p("/p/.git")),
            Mount::Hide(p("/p/.git/worktrees")),
            Mount::ReadOnlyIfThere(p("/p/.git/HEAD")),
        ];
        let kept = effective(mounts.clone());
        let dropped: Vec<&Mount> = mounts.iter().filter(|m| !kept.contains(m)).collect();
        assert_eq!(
            dropped,
            vec![
                &Mount::Hide(p("/tmp")),
                &Mount::Hide(p("/p/.liza/sandbox")),
                // Hidden by the mask over /p/x, which then masks nothing /p does not.
                &Mount::ReadOnly {
                    from: p("/o"),
                    to: p("/p/x/y")
                },
                &Mount::Hide(p("/p/x")),
            ],
            "replaced whole, or hidden already"
        );
        assert!(kept.contains(&Mount::Hide(p("/p/wt/inner"))));
        assert!(kept.contains(&Mount::Hide(p("/p/.git/worktrees"))));
        // An entry that may be gone replaces nothing.
        let kept = effective(vec![
            Mount::Blank(p("/p/.git/HEAD")),
            Mount::ReadOnlyIfThere(p("/p/.git/HEAD")),
        ]);
        assert_eq!(kept.len(), 2);
    }

    #[test]
    fn the_planner_sees_the_checkout_read_only_without_liza_or_worktrees() {
        let m = machine();
        let layout = Layout::build(&Plan {
            hidden: vec![m.root.join(".liza/sandbox/coder-1")],
            chdir: &m.root,
            ..plan(&m, View::Checkout)
        });
        assert_eq!(seen(&layout, &m.root.join("specs/vision.md")), "read-only");
        assert_eq!(seen(&layout, &m.root.join(".liza/state.yaml")), "hidden");
        assert_eq!(seen(&layout, &m.root.join(".worktrees/t-2/x")), "hidden");
        assert_eq!(
            seen(&layout, &m.root.join(".git/worktrees/t-1/HEAD")),
            "hidden"
        );
        // A mask that a later mount covers is not remounted (bubblewrap would fail on a
        // path that no longer exists in the view).
        let remounted = remounted(&layout.bwrap_args());
        assert!(
            !remounted.contains(&m.root.join(".liza/sandbox/coder-1").display().to_string()),
            "{remounted:?}"
        );
        assert!(remounted.contains(&m.root.join(".liza").display().to_string()));
    }

    /// The paths `--remount-ro` names.
    fn remounted(args: &[String]) -> Vec<String> {
        args.windows(2)
            .filter(|w| w[0] == "--remount-ro")
            .map(|w| w[1].clone())
            .collect()
    }
}
