//! The toolchains on `PATH` (specs/sandbox.md *What a run may touch*): where a hidden
//! area (`$HOME`, `/root`, `/tmp`, …) holds a program the sandboxed process may run, the
//! directories it needs are shown read-only:
//!
//! - every `PATH` directory in a hidden area, or its parent when it is a `bin`, `sbin`
//!   or `shims` directory (`~/.cargo/bin` → `~/.cargo`, `~/.pyenv/shims` → `~/.pyenv`,
//!   a venv's `bin` → the venv) — never `$HOME` itself nor `~/.local`, whose `share/`
//!   holds other programs' credentials (`~/.local/bin` brings `~/.local/lib` instead);
//! - the install root of what each program there links to, and of the interpreter its
//!   `#!` line names, and what that interpreter links to (a venv's python → the Python it
//!   was made from; an npm `.bin` link → the prefix that holds `node_modules`);
//! - rustup's home when `PATH` has rustup's proxies (`cargo`, `rustc` in `~/.cargo/bin`).
//!
//! Credential files directly inside a shown directory (`~/.cargo/credentials.toml`, an
//! `auth.json`, …) are blanked.

use std::collections::{BTreeSet, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// File names that hold credentials; blanked when a shown toolchain directory has them.
const CREDENTIAL_FILES: &[&str] = &[
    "credentials",
    "credentials.toml",
    ".credentials.json",
    "auth.json",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
];

/// What no toolchain directory may show, relative to `$HOME`: credentials, agent and
/// keyring sockets, and every agent CLI's state (each CLI's own is shown by liza, to its
/// agent only).
const SENSITIVE_IN_HOME: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".password-store",
    ".vault-token",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".local/share/keyrings",
    ".claude",
    ".claude.json",
    ".codex",
    ".gemini",
    ".vibe",
    ".aider",
    ".config/opencode",
    ".local/share/opencode",
    ".local/state/opencode",
    ".cache/opencode",
    ".config/github-copilot",
];

/// What no toolchain directory may show anywhere: runtime sockets and kernel files.
const SENSITIVE: &[&str] = &["/run", "/var/run", "/proc", "/sys", "/dev"];

/// Directory names whose parent is a toolchain's root.
const BIN_DIRS: &[&str] = &["bin", "sbin", "shims"];

/// How many links are followed from one program.
const MAX_HOPS: usize = 4;
/// How many files one directory's programs may lead to (a bound, not a limit met).
const MAX_FILES: usize = 4096;

/// What the toolchains on `PATH` need shown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Toolchains {
    /// Shown read-only at their own paths.
    pub roots: Vec<PathBuf>,
    /// Credential files inside those roots, shown empty.
    pub blanked: Vec<PathBuf>,
}

/// Where the sandbox looks for toolchains.
pub(super) struct Search<'a> {
    /// The `PATH` the sandboxed process gets.
    pub path: &'a OsStr,
    pub home: Option<&'a Path>,
    /// rustup's home (`RUSTUP_HOME`, default `~/.rustup`).
    pub rustup_home: Option<PathBuf>,
    /// Whether a path lies in a hidden area (only those need showing).
    pub hidden: &'a dyn Fn(&Path) -> bool,
    /// Whether showing a directory would show too much (the project, `$HOME`, `/`).
    pub too_wide: &'a dyn Fn(&Path) -> bool,
    /// Whether a run can write there (its state, its worktree): nothing there is read
    /// to decide what to show, since the run chose it.
    pub agent_writable: &'a dyn Fn(&Path) -> bool,
}

impl Search<'_> {
    /// The toolchain directories to show and the credential files to blank.
    pub(super) fn run(&self) -> Toolchains {
        let mut roots = BTreeSet::new();
        let mut seen = HashSet::new();
        for dir in std::env::split_paths(self.path) {
            let Ok(dir) = dir.canonicalize() else {
                continue;
            };
            if !dir.is_absolute()
                || !(self.hidden)(&dir)
                || (self.agent_writable)(&dir)
                || !seen.insert(dir.clone())
            {
                continue;
            }
            self.add(&mut roots, self.root_of_dir(&dir));
            if self
                .home
                .is_some_and(|h| dir == h.join(".local").join("bin"))
            {
                self.add(&mut roots, self.home.map(|h| h.join(".local").join("lib")));
            }
            if dir.join("rustup").is_file() || dir.join("cargo").is_file() {
                self.add(&mut roots, self.rustup_home.clone());
            }
            for target in reached_from(&dir, &mut seen, self.agent_writable) {
                if (self.hidden)(&target) && !(self.agent_writable)(&target) {
                    self.add(&mut roots, self.install_root(&target));
                }
            }
        }
        // A root inside another shown root adds nothing.
        let roots: Vec<PathBuf> = roots
            .iter()
            .filter(|r| !roots.iter().any(|o| o != *r && r.starts_with(o)))
            .cloned()
            .collect();
        let blanked = roots
            .iter()
            .flat_map(|r| CREDENTIAL_FILES.iter().map(move |name| r.join(name)))
            .filter(|f| f.is_file())
            .collect();
        Toolchains { roots, blanked }
    }

    fn add(&self, roots: &mut BTreeSet<PathBuf>, dir: Option<PathBuf>) {
        if let Some(dir) = dir.and_then(|d| d.canonicalize().ok())
            && dir.is_dir()
            && !(self.too_wide)(&dir)
            && !self.sensitive(&dir)
            && !(self.agent_writable)(&dir)
        {
            roots.insert(dir);
        }
    }

    /// Whether `dir` is, holds or lies inside something no toolchain may show.
    fn sensitive(&self, dir: &Path) -> bool {
        let overlaps = |p: &Path| dir.starts_with(p) || p.starts_with(dir);
        SENSITIVE.iter().any(|s| overlaps(Path::new(s)))
            || self
                .home
                .is_some_and(|h| SENSITIVE_IN_HOME.iter().any(|s| overlaps(&h.join(s))))
    }

    /// A `PATH` directory, or the toolchain root above its `bin`.
    fn root_of_dir(&self, dir: &Path) -> Option<PathBuf> {
        let named_bin = dir
            .file_name()
            .and_then(OsStr::to_str)
            .is_some_and(|n| BIN_DIRS.contains(&n));
        let parent = dir.parent().filter(|p| {
            named_bin
                && self
                    .home
                    .is_none_or(|h| *p != h && *p != h.join(".local").as_path())
                && !(self.too_wide)(p)
        });
        Some(parent.unwrap_or(dir).to_path_buf())
    }

    /// Where the toolchain that holds `file` starts: the prefix holding its outermost
    /// `node_modules`, a venv (`pyvenv.cfg`), the parent of a `bin` directory, else the
    /// file's own directory.
    fn install_root(&self, file: &Path) -> Option<PathBuf> {
        let ancestors: Vec<&Path> = file.ancestors().skip(1).collect();
        if let Some(modules) = ancestors
            .iter()
            .rev()
            .find(|a| a.file_name() == Some(OsStr::new("node_modules")))
        {
            return modules.parent().map(Path::to_path_buf);
        }
        if let Some(venv) = ancestors.iter().find(|a| a.join("pyvenv.cfg").is_file()) {
            return Some(venv.to_path_buf());
        }
        let dir = file.parent()?;
        Some(self.root_of_dir(dir).unwrap_or_else(|| dir.to_path_buf()))
    }
}

/// Every file the programs of `dir` reach when run: each hop of their links, and the
/// interpreter their `#!` line names with that interpreter's links — each file looked at
/// once (`seen`: many programs share an interpreter). A program's own entry type comes
/// with the directory listing: only links and regular files are read.
fn reached_from(
    dir: &Path,
    seen: &mut HashSet<PathBuf>,
    agent_writable: &dyn Fn(&Path) -> bool,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut queue: Vec<(PathBuf, bool)> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let kind = e.file_type().ok()?;
                    (kind.is_symlink() || kind.is_file()).then(|| (e.path(), kind.is_symlink()))
                })
                .collect()
        })
        .unwrap_or_default();
    while let Some((path, link)) = queue.pop() {
        if out.len() > MAX_FILES || agent_writable(&path) || !seen.insert(path.clone()) {
            continue;
        }
        let mut at = path;
        if link {
            for _ in 0..MAX_HOPS {
                let Ok(target) = std::fs::read_link(&at) else {
                    break;
                };
                at = at.parent().map_or(target.clone(), |p| p.join(&target));
                out.push(at.clone());
            }
        }
        if agent_writable(&at) {
            continue;
        }
        if let Some(interpreter) = shebang(&at)
            && !seen.contains(&interpreter)
        {
            out.push(interpreter.clone());
            let is_link = std::fs::symlink_metadata(&interpreter).is_ok_and(|m| m.is_symlink());
            queue.push((interpreter, is_link));
        }
    }
    out
}

/// The interpreter a script's `#!` line names, if it is an absolute path.
fn shebang(file: &Path) -> Option<PathBuf> {
    let head = crate::untrusted::read_regular(file, 256)?;
    let line = head.strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let text = std::str::from_utf8(line).ok()?;
    let program = text.split_whitespace().next()?;
    program.starts_with('/').then(|| PathBuf::from(program))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn search_in<'a>(
        path: &'a OsStr,
        home: &'a Path,
        hidden: &'a dyn Fn(&Path) -> bool,
        too_wide: &'a dyn Fn(&Path) -> bool,
    ) -> Search<'a> {
        Search {
            path,
            home: Some(home),
            rustup_home: Some(home.join(".rustup")),
            hidden,
            too_wide,
            agent_writable: &|_| false,
        }
    }

    #[test]
    fn bin_directories_bring_their_toolchain_and_links_their_install_root() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap().join("home");
        let cargo_bin = home.join(".cargo/bin");
        std::fs::create_dir_all(&cargo_bin).unwrap();
        std::fs::write(cargo_bin.join("cargo"), "").unwrap();
        std::fs::write(home.join(".cargo/credentials.toml"), "token").unwrap();
        std::fs::create_dir_all(home.join(".rustup/toolchains")).unwrap();
        // An npm prefix whose .bin links into node_modules, linked from a bin of its own.
        let npm = home.join("cache/npm/node_modules");
        std::fs::create_dir_all(npm.join(".bin")).unwrap();
        std::fs::create_dir_all(npm.join("cli/dist")).unwrap();
        std::fs::write(npm.join("cli/dist/main.js"), "#!/usr/bin/env node\n").unwrap();
        symlink("../cli/dist/main.js", npm.join(".bin/cli")).unwrap();
        let tools = home.join("tools");
        std::fs::create_dir_all(&tools).unwrap();
        symlink(npm.join(".bin/cli"), tools.join("cli")).unwrap();
        // ~/.local/bin: never ~/.local (its share/ holds credentials), but lib/.
        std::fs::create_dir_all(home.join(".local/bin")).unwrap();
        std::fs::create_dir_all(home.join(".local/lib")).unwrap();
        std::fs::create_dir_all(home.join(".local/share/opencode")).unwrap();
        let path = std::env::join_paths([
            cargo_bin.clone(),
            tools.clone(),
            home.join(".local/bin"),
            PathBuf::from("/usr/bin"),
        ])
        .unwrap();
        let home2 = home.clone();
        let hidden = move |p: &Path| p.starts_with(&home2);
        let home3 = home.clone();
        let too_wide = move |p: &Path| home3.starts_with(p);
        let found = search_in(&path, &home, &hidden, &too_wide).run();
        assert_eq!(
            found.roots,
            [
                home.join(".cargo"),
                home.join(".local/bin"),
                home.join(".local/lib"),
                home.join(".rustup"),
                home.join("cache/npm"),
                tools.clone(),
            ]
        );
        assert_eq!(found.blanked, [home.join(".cargo/credentials.toml")]);
    }

    /// A script a run could write (in its CLI's state) naming `~/.ssh` or a runtime
    /// socket's directory as its interpreter shows neither.
    #[test]
    fn what_a_run_writes_or_secrets_are_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let local = home.join(".claude/local");
        std::fs::create_dir_all(&local).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(home.join("tools/bin")).unwrap();
        std::fs::write(
            local.join("helper"),
            format!("#!{}/.ssh/x\n", home.display()),
        )
        .unwrap();
        std::fs::write(
            home.join("tools/bin/helper"),
            format!("#!{}/.ssh/x\n#!/run/user/0/x\n", home.display()),
        )
        .unwrap();
        let path = std::env::join_paths([local.clone(), home.join("tools/bin")]).unwrap();
        let home2 = home.clone();
        let hidden = move |p: &Path| p.starts_with(&home2);
        let home3 = home.clone();
        let too_wide = move |p: &Path| home3.starts_with(p);
        let claude = home.join(".claude");
        let writable = move |p: &Path| p.starts_with(&claude);
        let found = Search {
            path: &path,
            home: Some(&home),
            rustup_home: None,
            hidden: &hidden,
            too_wide: &too_wide,
            agent_writable: &writable,
        }
        .run();
        assert_eq!(found.roots, [home.join("tools")], "{:?}", found.roots);
    }

    #[test]
    fn nothing_that_would_show_home_or_the_project_is_shown() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(home.join("bin")).unwrap();
        let path = std::env::join_paths([home.join("bin")]).unwrap();
        let home2 = home.clone();
        let hidden = move |p: &Path| p.starts_with(&home2);
        let home3 = home.clone();
        let too_wide = move |p: &Path| home3.starts_with(p);
        let found = search_in(&path, &home, &hidden, &too_wide).run();
        // ~/bin is shown, its parent (home) is not.
        assert_eq!(found.roots, [home.join("bin")]);
    }
}
