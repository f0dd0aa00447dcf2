//! The few read-only git commands the built-in agent and the demo run as processes
//! (`ls-files`, `grep`, `diff`, `show`): what the `git` binary prints, as text.

use std::path::Path;
use std::process::Command;

/// `git <args>` in `dir`: its output, or what went wrong.
pub fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("could not run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The lines `git <args>` prints in `dir`; none when it fails (`git grep` finding
/// nothing exits 1).
pub fn git_lines(dir: &Path, args: &[&str]) -> Vec<String> {
    git(dir, args)
        .map(|out| out.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}
