//! Progress of long-running commands (specs/operations.md *CLI conventions*): an `indicatif`
//! spinner with the current step and its elapsed time on a terminal, one plain line per
//! step otherwise, nothing with `--json` (stdout carries the one JSON object).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

pub(super) struct Progress {
    mode: Mode,
}

enum Mode {
    Quiet,
    Lines,
    Spinner(ProgressBar),
}

impl Progress {
    pub(super) fn start(json: bool) -> Progress {
        let mode = if json {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} {wide_msg} ({elapsed})") {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(100));
            Mode::Spinner(bar)
        } else {
            Mode::Lines
        };
        Progress { mode }
    }

    /// Shows that the command moved on to `step`.
    pub(super) fn step(&self, step: &str) {
        match &self.mode {
            Mode::Quiet => {}
            Mode::Lines => eprintln!("liza: {step}"),
            Mode::Spinner(bar) => {
                bar.reset_elapsed();
                bar.set_message(step.to_owned());
            }
        }
    }

    /// Updates the spinner's message only (no line when there is no spinner): for a
    /// command that prints its own lines.
    pub(super) fn status(&self, text: &str) {
        if let Mode::Spinner(bar) = &self.mode {
            bar.set_message(text.to_owned());
        }
    }

    /// Prints a line that stays (above the spinner on a terminal) on stdout.
    pub(super) fn println(&self, line: &str) {
        match &self.mode {
            Mode::Spinner(bar) => bar.suspend(|| println!("{line}")),
            _ => println!("{line}"),
        }
    }

    /// Clears the spinner before the result is printed.
    pub(super) fn finish(self) {
        if let Mode::Spinner(bar) = self.mode {
            bar.finish_and_clear();
        }
    }
}
