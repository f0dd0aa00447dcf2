//! The one tmux wrapper: every call is an argv vector (never a shell string), run against
//! the server the environment names — the current one inside tmux, else the default
//! socket under `TMUX_TMPDIR` — so a test or a person can keep liza's sessions apart.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::backend::find_executable;

#[derive(Debug, thiserror::Error)]
pub enum TmuxError {
    #[error("tmux is not installed (not on PATH)")]
    Missing,
    #[error("tmux {args}: {message}")]
    Failed { args: String, message: String },
}

impl crate::error::Diagnostic for TmuxError {
    fn class(&self) -> crate::error::ErrorClass {
        match self {
            TmuxError::Missing => crate::error::ErrorClass::MissingProgram,
            TmuxError::Failed { .. } => crate::error::ErrorClass::Refused,
        }
    }

    fn hints(&self) -> Vec<String> {
        match self {
            TmuxError::Missing => vec![
                "install tmux (apt install tmux, brew install tmux), or start the supervisors yourself: scripts/liza-tmux.sh shows the commands".into(),
            ],
            TmuxError::Failed { .. } => Vec::new(),
        }
    }
}

/// A pane of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pane {
    pub id: String,
    pub pid: i32,
    pub title: String,
    pub dead: bool,
}

pub(crate) struct Tmux {
    program: PathBuf,
}

impl Tmux {
    pub(crate) fn find() -> Result<Tmux, TmuxError> {
        find_executable("tmux")
            .map(|program| Tmux { program })
            .ok_or(TmuxError::Missing)
    }

    /// Runs `tmux args…`; its stdout when it succeeded.
    pub(crate) fn run(&self, args: &[&str]) -> Result<String, TmuxError> {
        let out = self.output(args)?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        Err(TmuxError::Failed {
            args: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }

    fn output(&self, args: &[&str]) -> Result<Output, TmuxError> {
        Command::new(&self.program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| TmuxError::Failed {
                args: args.join(" "),
                message: e.to_string(),
            })
    }

    pub(crate) fn has_session(&self, name: &str) -> bool {
        self.output(&["has-session", "-t", &format!("={name}")])
            .is_ok_and(|o| o.status.success())
    }

    /// A new detached session whose first window runs `argv` in `dir` with `env`;
    /// returns the pane id.
    pub(crate) fn new_session(
        &self,
        name: &str,
        window: &str,
        dir: &Path,
        env: &[(&str, &str)],
        argv: &[String],
    ) -> Result<String, TmuxError> {
        let head = [
            "new-session",
            "-s",
            name,
            "-n",
            window,
            "-x",
            "200",
            "-y",
            "50",
        ];
        self.start_pane(&head, dir, env, argv)
    }

    /// Splits pane `target` for `argv`, the new pane placed just before it, and re-tiles
    /// the window; returns the new pane's id.
    pub(crate) fn split_before(
        &self,
        target: &str,
        dir: &Path,
        env: &[(&str, &str)],
        argv: &[String],
    ) -> Result<String, TmuxError> {
        let pane = self.start_pane(&["split-window", "-b", "-t", target], dir, env, argv)?;
        // Re-tile after each split so the next one has room.
        self.run(&["select-layout", "-t", target, "tiled"])?;
        Ok(pane)
    }

    /// `tmux <head…> -d -P -F #{pane_id} -c dir [-e k=v…] -- argv…`: a pane running
    /// `argv` directly (no shell); returns its id.
    fn start_pane(
        &self,
        head: &[&str],
        dir: &Path,
        env: &[(&str, &str)],
        argv: &[String],
    ) -> Result<String, TmuxError> {
        let mut args: Vec<String> = head.iter().map(|s| (*s).to_owned()).collect();
        args.extend(["-d", "-P", "-F", "#{pane_id}", "-c"].map(str::to_owned));
        args.push(dir.display().to_string());
        for (k, v) in env {
            args.push("-e".into());
            args.push(format!("{k}={v}"));
        }
        args.push("--".into());
        args.extend(argv.iter().cloned());
        self.run_owned(&args).map(|s| s.trim().to_owned())
    }

    fn run_owned(&self, args: &[String]) -> Result<String, TmuxError> {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run(&refs)
    }

    /// The panes of every window of session `name`.
    pub(crate) fn panes(&self, name: &str) -> Result<Vec<Pane>, TmuxError> {
        let text = self.run(&[
            "list-panes",
            "-s",
            "-t",
            &format!("={name}"),
            "-F",
            "#{pane_id}|#{pane_pid}|#{pane_dead}|#{pane_title}",
        ])?;
        Ok(text
            .lines()
            .filter_map(|line| {
                let mut f = line.splitn(4, '|');
                Some(Pane {
                    id: f.next()?.to_owned(),
                    pid: f.next()?.parse().ok()?,
                    dead: f.next()? == "1",
                    title: f.next().unwrap_or("").to_owned(),
                })
            })
            .collect())
    }
}
