//! The git configuration a sandboxed process sees (specs/sandbox.md *Git in the
//! sandbox*): the repository's own without what holds credentials or reaches outside
//! (`.git/config` is where CI writes `http.extraheader` tokens and people keep
//! `https://user:token@` remotes), and a global one of the user's identity only, in place
//! of a `~/.gitconfig` the sandbox hides.

use super::GitError;
use super::repo::{Repo, git2_err};

/// Sections kept from the repository's configuration: what git needs to read and write
/// this repository the same way inside the sandbox. Everything else — `remote`,
/// `credential`, `http`, `url`, `include`, `includeIf`, `gc`, `maintenance`, `lfs`,
/// `sendemail`, tools' own sections — is left out.
const KEPT_SECTIONS: &[&str] = &[
    "core",
    "extensions",
    "user",
    "branch",
    "diff",
    "merge",
    "filter",
    "status",
    "commit",
    "init",
    "index",
    "rerere",
    "rebase",
    "submodule",
    "worktree",
    "feature",
    "color",
    "i18n",
    "log",
    "format",
    "apply",
    "pack",
];

/// Keys left out of kept sections: commands that reach outside, signing that needs keys
/// the sandbox hides, anything named like a secret.
const DROPPED_KEYS: &[&str] = &[
    "core.sshcommand",
    "core.askpass",
    "commit.gpgsign",
    "user.signingkey",
    "branch.autosetupmerge",
];

impl Repo {
    /// The repository's own configuration file, without credentials (only the sections `KEPT_SECTIONS` names).
    pub fn sandbox_repo_config(&self) -> Result<String, GitError> {
        let path = self.inner.commondir().join("config");
        let config =
            git2::Config::open(&path).map_err(git2_err(format!("read {}", path.display())))?;
        let mut entries = Vec::new();
        let mut iter = config
            .entries(None)
            .map_err(git2_err(format!("read {}", path.display())))?;
        while let Some(entry) = iter.next() {
            let Ok(entry) = entry else { continue };
            if let (Some(name), Some(value)) = (entry.name(), entry.value()) {
                entries.push((name.to_owned(), value.to_owned()));
            }
        }
        Ok(render(entries.iter().filter(|(name, _)| kept(name))))
    }

    /// A global configuration with the user's identity as this repository resolves it,
    /// and no automatic gc (a sandboxed run has its own object store).
    pub fn sandbox_global_config(&self) -> String {
        let config = self.inner.config().ok();
        let get = |key: &str| config.as_ref().and_then(|c| c.get_string(key).ok());
        let mut entries = Vec::new();
        for key in ["user.name", "user.email"] {
            if let Some(value) = get(key) {
                entries.push((key.to_owned(), value));
            }
        }
        entries.push(("gc.auto".into(), "0".into()));
        entries.push(("maintenance.auto".into(), "false".into()));
        render(entries.iter())
    }
}

/// Whether the entry `name` (`section[.subsection].key`, lower case) is kept.
fn kept(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let section = lower.split('.').next().unwrap_or("");
    let key = lower.rsplit('.').next().unwrap_or("");
    KEPT_SECTIONS.contains(&section)
        && !DROPPED_KEYS.contains(&lower.as_str())
        && ![
            "token",
            "password",
            "secret",
            "cookie",
            "credential",
            "auth",
        ]
        .iter()
        .any(|w| key.contains(w))
}

/// Entries as a git configuration file, in order, one section header per run of entries.
fn render<'a>(entries: impl Iterator<Item = &'a (String, String)>) -> String {
    let mut out = String::from("# written by liza for a sandboxed run (specs/sandbox.md)\n");
    let mut current = String::new();
    for (name, value) in entries {
        let (Some(first_dot), Some(last_dot)) = (name.find('.'), name.rfind('.')) else {
            continue;
        };
        let section = &name[..first_dot];
        let key = &name[last_dot + 1..];
        let header = if first_dot == last_dot {
            format!("[{section}]")
        } else {
            format!("[{section} \"{}\"]", escape(&name[first_dot + 1..last_dot]))
        };
        if header != current {
            out.push_str(&header);
            out.push('\n');
            current = header;
        }
        out.push_str(&format!("\t{key} = \"{}\"\n", escape(value)));
    }
    out
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
        .replace('\t', "\\t")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_remotes_are_left_out_and_values_quoted() {
        let entries = [
            ("core.bare", "false"),
            ("extensions.worktreeconfig", "true"),
            ("remote.origin.url", "https://me:ghp_secret@github.com/x/y"),
            (
                "http.https://github.com/.extraheader",
                "AUTHORIZATION: basic c2VjcmV0",
            ),
            ("credential.helper", "store"),
            (
                "url.https://tok@github.com/.insteadof",
                "https://github.com/",
            ),
            ("include.path", "~/secrets.inc"),
            ("user.name", "A \"quoted\" name"),
            ("lfs.url", "https://u:p@host/lfs"),
            ("filter.lfs.process", "git-lfs filter-process"),
            ("core.sshcommand", "ssh -i ~/.ssh/deploy"),
            ("branch.main.merge", "refs/heads/main"),
            ("commit.gpgsign", "true"),
            ("diff.tool.token", "x"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        let text = render(entries.iter().filter(|(name, _)| kept(name)));
        assert_eq!(
            text,
            "# written by liza for a sandboxed run (specs/sandbox.md)\n\
             [core]\n\tbare = \"false\"\n\
             [extensions]\n\tworktreeconfig = \"true\"\n\
             [user]\n\tname = \"A \\\"quoted\\\" name\"\n\
             [filter \"lfs\"]\n\tprocess = \"git-lfs filter-process\"\n\
             [branch \"main\"]\n\tmerge = \"refs/heads/main\"\n"
        );
    }
}
