//! `liza doctor`'s look at an installed agent CLI: its `--version` and `--help`, run with
//! a short timeout, against the release range liza's arguments were verified with and
//! the flags liza passes. The reading of their output is pure; running them is
//! [`run_briefly`].

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Backend;
use super::environment::is_secret;

/// How long `--version` or `--help` may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// A release number.
pub type Version = (u64, u64, u64);

/// The first `x.y.z` in `text` ("2.1.197 (Claude Code)", "codex-cli 0.169.0").
pub fn parse_version(text: &str) -> Option<Version> {
    let re = regex::Regex::new(r"(\d+)\.(\d+)\.(\d+)").expect("the version pattern compiles");
    let caps = re.captures(text)?;
    Some((
        caps[1].parse().ok()?,
        caps[2].parse().ok()?,
        caps[3].parse().ok()?,
    ))
}

/// Whether `version` lies in the tested range `(low, high)` (both `x.y.z`, inclusive).
pub fn in_range(version: Version, tested: (&str, &str)) -> bool {
    match (parse_version(tested.0), parse_version(tested.1)) {
        (Some(low), Some(high)) => low <= version && version <= high,
        _ => true,
    }
}

/// The subcommand the arguments start with (`exec`, `run`), whose help lists their
/// flags.
pub fn subcommand(args: &[String]) -> Option<&str> {
    args.first()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-') && !a.contains('{') && !a.contains(' '))
}

/// The flags in `args` (`--flag=value` counts as `--flag`; values and `-` do not).
pub fn flags(args: &[String]) -> Vec<String> {
    let mut out: Vec<String> = args
        .iter()
        .filter(|a| a.starts_with('-') && a.len() > 1 && !a.contains(' '))
        .map(|a| a.split('=').next().unwrap_or(a).to_owned())
        .collect();
    out.dedup();
    out
}

/// The flags of `flags` that `help` does not list.
pub fn unknown_flags(flags: &[String], help: &str) -> Vec<String> {
    flags
        .iter()
        .filter(|flag| !lists(help, flag))
        .cloned()
        .collect()
}

/// Whether `help` mentions `flag` as a flag: followed by a character a flag name cannot
/// hold (so `--auto` is not found in `--auto-approve`).
fn lists(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        let before = help[..at].chars().next_back();
        let after = help[at + flag.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '-')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
    })
}

/// Everything liza may pass this backend, for checking: unattended, model and
/// environment-driven arguments, and the interactive ones.
pub fn passed_args(backend: &Backend) -> (Vec<String>, Vec<String>) {
    let model = if backend.model_args.is_empty() {
        backend
            .spec
            .map(|s| s.model_args.iter().map(|a| (*a).to_owned()).collect())
            .unwrap_or_default()
    } else {
        backend.model_args.clone()
    };
    let mut main = backend.args.clone();
    main.extend(model.clone());
    main.extend(backend.env_args.iter().flat_map(|(_, a)| a.iter().cloned()));
    let mut interactive = backend.interactive_args.clone();
    interactive.extend(model);
    (main, interactive)
}

/// Runs `program args` with stdin closed and no secrets in its environment, for at most
/// `timeout`; returns its output (stdout then stderr), or why not.
pub fn run_briefly(program: &Path, args: &[&str], timeout: Duration) -> Result<String, ProbeError> {
    let dir = tempfile::tempdir().map_err(ProbeError::NotRun)?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for (key, _) in std::env::vars() {
        if is_secret(&key) {
            cmd.env_remove(&key);
        }
    }
    let mut child = cmd.spawn().map_err(ProbeError::NotRun)?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > timeout => {
                if let Ok(pid) = i32::try_from(child.id()) {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                let _ = child.wait();
                return Err(ProbeError::Silent(timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(ProbeError::NotRun(e)),
        }
    }
    let out = child.wait_with_output().map_err(ProbeError::NotRun)?;
    Ok(format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// Why a program asked for its version or help did not answer.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// It could not be started or waited for.
    #[error("{0}")]
    NotRun(#[source] std::io::Error),
    /// It said nothing within the time given, and was killed.
    #[error("did not answer within {} s", .0.as_secs())]
    Silent(Duration),
}

#[cfg(test)]
mod tests {
    use super::super::catalog::CLIS;
    use super::super::kind::BackendKind;
    use super::*;
    use crate::blackboard::model::Config;

    fn help(name: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/clis/help")
            .join(format!("{name}.txt"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn versions_are_read_and_compared_numerically() {
        assert_eq!(parse_version("2.1.197 (Claude Code)"), Some((2, 1, 197)));
        assert_eq!(parse_version("codex-cli 0.169.0"), Some((0, 169, 0)));
        assert_eq!(parse_version("no version"), None);
        assert!(in_range((0, 169, 0), ("0.169.0", "0.169.999")));
        assert!(!in_range((0, 99, 0), ("0.169.0", "0.169.999")));
        assert!(!in_range((0, 170, 0), ("0.169.0", "0.169.999")));
        assert!(in_range((2, 1, 10), ("2.1.0", "2.1.999")));
    }

    #[test]
    fn a_flag_is_known_only_as_a_whole_word() {
        let text = "  --auto-approve   approve\n  -p, --prompt <P>\n  --add-dir <DIR>\n";
        let flags = flags(&[
            "--auto".into(),
            "--auto-approve".into(),
            "-p".into(),
            "--add-dir={git_dir}".into(),
            "-".into(),
            "{prompt_file}".into(),
        ]);
        assert_eq!(flags, ["--auto", "--auto-approve", "-p", "--add-dir"]);
        assert_eq!(unknown_flags(&flags, text), ["--auto"]);
    }

    /// Every flag liza passes a built-in CLI is listed by the help of the release it
    /// was verified against (captured from the real CLIs, tests/fixtures/clis/help/).
    #[test]
    fn every_flag_liza_passes_is_in_the_real_clis_help() {
        for cli in CLIS {
            let backend = Backend::resolve(cli.name, &Config::default(), None, &|_| None).unwrap();
            let (main, interactive) = passed_args(&backend);
            let text = match (cli.name, subcommand(&main)) {
                ("mistral", _) => help("vibe"),
                (name, Some(sub)) => help(&format!("{name}-{sub}")),
                (name, None) => help(name),
            };
            assert_eq!(
                unknown_flags(&flags(&main), &text),
                Vec::<String>::new(),
                "{}",
                cli.name
            );
            let top = help(if BackendKind::of(cli.name) == BackendKind::Mistral {
                "vibe"
            } else {
                cli.name
            });
            assert_eq!(
                unknown_flags(&flags(&interactive), &top),
                Vec::<String>::new(),
                "{} interactive",
                cli.name
            );
        }
    }
}
