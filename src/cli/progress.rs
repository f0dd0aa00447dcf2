//! Progress of long-running commands (operations.md *CLI conventions*): a spinner with
//! the current step and its elapsed time on a terminal, one plain line per step
//! otherwise, nothing with `--json` (stdout carries the one JSON object).

use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct Progress {
    mode: Mode,
}

enum Mode {
    Quiet,
    Lines,
    Spinner {
        steps: Sender<String>,
        drawer: Option<JoinHandle<()>>,
    },
}

const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

impl Progress {
    pub fn start(json: bool) -> Progress {
        let mode = if json {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            let (steps, received) = mpsc::channel::<String>();
            let drawer = std::thread::spawn(move || {
                let mut step = String::new();
                let mut since = Instant::now();
                let mut frame = 0;
                loop {
                    match received.recv_timeout(Duration::from_millis(100)) {
                        Ok(next) => {
                            step = next;
                            since = Instant::now();
                        }
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                    if !step.is_empty() {
                        frame = (frame + 1) % FRAMES.len();
                        let mut err = std::io::stderr().lock();
                        let _ = write!(
                            err,
                            "\r\x1b[2K{} {step} ({} s)",
                            FRAMES[frame],
                            since.elapsed().as_secs()
                        );
                        let _ = err.flush();
                    }
                }
                let _ = write!(std::io::stderr(), "\r\x1b[2K");
            });
            Mode::Spinner {
                steps,
                drawer: Some(drawer),
            }
        } else {
            Mode::Lines
        };
        Progress { mode }
    }

    /// Shows that the command moved on to `step`.
    pub fn step(&self, step: &str) {
        match &self.mode {
            Mode::Quiet => {}
            Mode::Lines => eprintln!("liza: {step}"),
            Mode::Spinner { steps, .. } => {
                let _ = steps.send(step.to_owned());
            }
        }
    }

    /// Clears the spinner before the result is printed.
    pub fn finish(self) {
        if let Mode::Spinner { steps, drawer } = self.mode {
            drop(steps);
            if let Some(drawer) = drawer {
                let _ = drawer.join();
            }
        }
    }
}
