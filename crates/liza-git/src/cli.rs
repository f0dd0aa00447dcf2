//! The few read-only git commands the built-in agent and the demo run as processes
//! (`ls-files`, `grep`, `diff`, `show`): what the `git` binary prints, as text.

use std::path::Path;
use std::process::Command;

use super::GitError;

/// `git <args>` in `dir`: its output, or what went wrong.
pub fn git(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    let command = args.join(" ");
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|source| GitError::NotRun {
            command: command.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(GitError::Refused {
            command,
            said: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `git <args>` in `dir`, its output read up to `limit` bytes and for at most `time`: the
/// text and whether it was cut (git is then stopped), or what went wrong. What a page
/// shows of a diff an agent could make as large, and as slow to compute, as it likes.
pub fn git_head(
    dir: &Path,
    args: &[&str],
    limit: usize,
    time: std::time::Duration,
) -> Result<(String, bool), GitError> {
    use std::io::Read;
    use std::process::Stdio;
    let command = args.join(" ");
    use std::os::unix::process::CommandExt as _;
    let mut child = Command::new("git")
        .args(args)
        .current_dir(dir)
        // A group of its own: stopping it stops what it started too (their pipes close).
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| GitError::NotRun {
            command: command.clone(),
            source,
        })?;
    // Its complaints are drained beside the output, so neither pipe can stall git.
    let stderr = child.stderr.take().map(|mut pipe| {
        std::thread::spawn(move || {
            let mut said = Vec::new();
            let _ = (&mut pipe).take(64 * 1024).read_to_end(&mut said);
            let _ = std::io::copy(&mut pipe, &mut std::io::sink());
            said
        })
    });
    // Out of time, git is killed: its output ends there. The child is reaped only after
    // the watchdog is told, so its pid cannot be another process's when it fires.
    let (done, watched) = std::sync::mpsc::channel::<()>();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let watchdog = std::thread::spawn(move || {
        let expired = watched.recv_timeout(time).is_err();
        if expired {
            let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
        }
        expired
    });
    let mut out = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = stdout.take(limit as u64 + 1).read_to_end(&mut out);
    }
    let mut more = out.len() > limit;
    if more {
        out.truncate(limit);
        let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
    }
    let _ = done.send(());
    more |= watchdog.join().unwrap_or(false);
    let status = child.wait().map_err(|source| GitError::NotRun {
        command: command.clone(),
        source,
    })?;
    let said = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    if !more && !status.success() {
        return Err(GitError::Refused {
            command,
            said: String::from_utf8_lossy(&said).trim().to_owned(),
        });
    }
    // Cut inside a character, the text ends before it (never past `limit`).
    if more && let Err(e) = std::str::from_utf8(&out) {
        out.truncate(e.valid_up_to());
    }
    Ok((String::from_utf8_lossy(&out).into_owned(), more))
}

/// What `git --version` of the git at `path` prints (`liza doctor`), trimmed.
pub fn version(path: &Path) -> Result<String, GitError> {
    let out = Command::new(path)
        .arg("--version")
        .output()
        .map_err(|source| GitError::NotRun {
            command: "--version".into(),
            source,
        })?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The lines `git <args>` prints in `dir`; none when it fails (`git grep` finding
/// nothing exits 1).
pub fn git_lines(dir: &Path, args: &[&str]) -> Vec<String> {
    git(dir, args)
        .map(|out| out.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Reads, with the git binary, every object `tip` brings that `base` lacks — commits,
/// trees and the full content of blobs — and says which one cannot be read. liza runs it
/// before libgit2 reads what a task brings: libgit2 1.9.7 (libgit2-sys 0.18.8) loops for
/// ever on a truncated loose object (libgit2/libgit2#7342, fixed upstream by #7346 and not
/// yet in a release the crate vendors), where git fails with a message.
pub fn unreadable_object(dir: &Path, tip: &str, base: Option<&str>) -> Option<String> {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let mut args = vec!["rev-list", "--objects", tip];
    let not_base = base.map(|b| format!("^{b}"));
    args.extend(not_base.as_deref());
    let listed = match git(dir, &args) {
        Ok(listed) => listed,
        Err(why) => return Some(why.to_string()),
    };
    let ids: String = listed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|id| format!("{id}\n"))
        .collect();
    let mut child = match Command::new("git")
        .args(["cat-file", "--batch"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return Some(format!("could not run git: {e}")),
    };
    let mut stdin = child.stdin.take()?;
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(ids.as_bytes());
    });
    let mut stdout = child.stdout.take()?;
    // The contents themselves are not needed: read and dropped, so git is never blocked.
    let drain = std::thread::spawn(move || {
        let mut sink = [0u8; 64 * 1024];
        while matches!(stdout.read(&mut sink), Ok(n) if n > 0) {}
    });
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    let _ = feeder.join();
    let _ = drain.join();
    let status = child.wait().ok()?;
    // Judged by the exit status alone: git also writes warnings and traces on stderr.
    (!status.success()).then(|| stderr.trim().to_owned())
}

/// `git apply --whitespace=nowarn --recount -` of `patch` in the worktree `dir`, its argv
/// passed through `confine` first (the sandbox a task's edits are applied in); git's
/// complaint when it refuses the patch.
pub fn apply_patch<E: std::error::Error + Send + Sync + 'static>(
    dir: &Path,
    patch: &str,
    confine: impl FnOnce(&[String]) -> Result<Vec<String>, E>,
) -> Result<(), GitError> {
    use std::io::Write;
    const COMMAND: &str = "apply --whitespace=nowarn --recount -";
    let not_run = |source| GitError::NotRun {
        command: COMMAND.to_owned(),
        source,
    };
    let argv =
        confine(&["git", "apply", "--whitespace=nowarn", "--recount", "-"].map(String::from))
            .map_err(|why| not_run(std::io::Error::other(why)))?;
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| not_run(std::io::Error::other("no command")))?;
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(not_run)?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(patch.as_bytes());
    }
    let out = child.wait_with_output().map_err(not_run)?;
    if out.status.success() {
        Ok(())
    } else {
        Err(GitError::Refused {
            command: COMMAND.to_owned(),
            said: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_output_is_cut_at_its_limit_and_git_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| git(dir.path(), args).unwrap();
        run(&["init", "-q"]);
        let commit = |name: &str, text: String| {
            std::fs::write(dir.path().join(name), text).unwrap();
            run(&["add", name]);
            let message = name.trim_end_matches(".txt");
            run(&[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "-m",
                message,
            ]);
        };
        commit("big.txt", "a line of text\n".repeat(200_000));
        let time = std::time::Duration::from_secs(60);
        let (text, more) = git_head(dir.path(), &["show", "HEAD"], 4096, time).unwrap();
        assert!(more);
        assert_eq!(text.len(), 4096);
        let (text, more) = git_head(dir.path(), &["log", "--format=%s"], 4096, time).unwrap();
        assert_eq!((text.as_str(), more), ("big\n", false));
        let refused = git_head(dir.path(), &["show", "no-such-ref"], 4096, time).unwrap_err();
        assert!(refused.to_string().contains("no-such-ref"), "{refused}");
        // Out of time: stopped, what it wrote so far kept (here, git's own `sleep` alias).
        let started = std::time::Instant::now();
        let (_, more) = git_head(
            dir.path(),
            &["-c", "alias.slow=!sleep 30", "slow"],
            4096,
            std::time::Duration::from_millis(200),
        )
        .unwrap();
        assert!(more);
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        // Cut inside a character: the text ends before it.
        commit("e.txt", "é".repeat(5000));
        let (text, more) = git_head(dir.path(), &["show", "HEAD:e.txt"], 4095, time).unwrap();
        assert!(more);
        assert_eq!(text, "é".repeat(2047));
    }
}
