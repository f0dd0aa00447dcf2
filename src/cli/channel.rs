//! `liza` on both ends of the channel (specs/sandbox.md *The blackboard through the
//! supervisor*).
//!
//! Inside a sandbox the blackboard is out of sight: [`forward_from_sandbox`] sends the
//! whole command line to the agent's supervisor over the socket the sandbox shows at
//! [`CHANNEL_SOCKET`], with the files its file arguments name (read here, where the agent
//! sees them), and prints what comes back. It does not depend on the environment: an
//! agent that cleared it (`env -i`), left its process group (`setsid`) or double-forked
//! still reaches only its supervisor.
//!
//! On the supervisor's side the command runs as `liza` in channel mode ([`ChannelMode`]):
//! only the commands the agent's role may run, file arguments read only from what the
//! sandbox sent.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::CliError;
use crate::blackboard::Role;
use crate::ops::{CHANNEL_FILES_VAR, CHANNEL_ROLE_VAR};
use crate::sandbox::CHANNEL_SOCKET;
use crate::sandbox::channel::{self, Kind, MAX_FILES, MAX_FRAME, Request};

/// Inside a sandbox: sends the command to the supervisor and returns its exit code.
/// `None` outside a sandbox (no channel socket): the command runs here.
pub(super) fn forward_from_sandbox(args: &[OsString]) -> Option<i32> {
    let socket = Path::new(CHANNEL_SOCKET);
    let is_socket = std::fs::metadata(socket).is_ok_and(|m| m.file_type().is_socket());
    if !is_socket {
        return None;
    }
    Some(match forward(socket, args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "error: liza could not reach its supervisor through {CHANNEL_SOCKET}: {e}\n\
                 hint: this run is sandboxed; its liza commands go through the supervisor, \
                 which stops serving them when the run ends"
            );
            super::EXIT_BLACKBOARD
        }
    })
}

fn forward(socket: &Path, args: &[OsString]) -> std::io::Result<i32> {
    let argv: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let files = file_arguments(args);
    let mut contents = Vec::new();
    for name in &files {
        let bytes = crate::blackboard::document::read_limited(Path::new(name))
            .map_err(|e| std::io::Error::other(format!("cannot read {name}: {e}")))?;
        if bytes.len() > MAX_FRAME {
            return Err(std::io::Error::other(format!(
                "{name} is over {MAX_FRAME} bytes"
            )));
        }
        contents.push(bytes);
    }
    let request = Request { argv, cwd, files };
    let mut stream = UnixStream::connect(socket)?;
    let payload = serde_json::to_vec(&request).map_err(std::io::Error::other)?;
    channel::write_frame(&mut stream, Kind::Request, &payload)?;
    for bytes in &contents {
        channel::write_frame(&mut stream, Kind::File, bytes)?;
    }
    let (mut stdout, mut stderr) = (std::io::stdout(), std::io::stderr());
    loop {
        match channel::read_frame(&mut stream)? {
            Some((Kind::Stdout, bytes)) => {
                stdout.write_all(&bytes)?;
                stdout.flush()?;
            }
            Some((Kind::Stderr, bytes)) => {
                stderr.write_all(&bytes)?;
                stderr.flush()?;
            }
            Some((Kind::Exit, bytes)) => {
                let code: [u8; 4] = bytes
                    .try_into()
                    .map_err(|_| channel::bad("a malformed exit frame".into()))?;
                return Ok(i32::from_be_bytes(code));
            }
            Some((kind, _)) => return Err(channel::bad(format!("unexpected {kind:?} frame"))),
            None => return Err(channel::bad("the supervisor closed the channel".into())),
        }
    }
}

/// The file arguments of a command line, as typed (`add-tasks --file`,
/// `submit-verdict --reason-file`), at most [`MAX_FILES`].
fn file_arguments(args: &[OsString]) -> Vec<String> {
    let Ok(matches) = super::reference::command().try_get_matches_from(args) else {
        return Vec::new();
    };
    let mut files = Vec::new();
    if let Some((name, sub)) = matches.subcommand() {
        for (command, id) in FILE_ARGUMENTS {
            if name == *command
                && let Ok(Some(path)) = sub.try_get_one::<PathBuf>(id)
            {
                files.push(path.display().to_string());
            }
        }
    }
    files.truncate(MAX_FILES);
    files
}

/// (command, argument id) of every argument that names a file to read.
const FILE_ARGUMENTS: &[(&str, &str)] = &[("add-tasks", "file"), ("submit-verdict", "reason_file")];

/// `liza` running a command a sandboxed agent sent through the channel.
pub(super) struct ChannelMode {
    pub role: Role,
    files: HashMap<String, PathBuf>,
}

impl ChannelMode {
    /// Channel mode, when the supervisor's end of the channel started this process.
    pub(super) fn get() -> Option<&'static ChannelMode> {
        static MODE: OnceLock<Option<ChannelMode>> = OnceLock::new();
        MODE.get_or_init(|| {
            let role = std::env::var(CHANNEL_ROLE_VAR).ok()?;
            let role = Role::from_yaml_name(&role)?;
            let files = std::env::var(CHANNEL_FILES_VAR)
                .ok()
                .and_then(|text| serde_json::from_str::<HashMap<String, PathBuf>>(&text).ok())
                .unwrap_or_default();
            Some(ChannelMode { role, files })
        })
        .as_ref()
    }

    /// Refuses what a sandboxed agent may not run: a command its role may not, and
    /// `--store` (the supervisor's blackboard is the only one).
    pub(super) fn check(&self, command: &str, args: &[OsString]) -> Result<(), CliError> {
        crate::ops::channel_allows(self.role, command)?;
        if args
            .iter()
            .any(|a| a == "--store" || a.to_string_lossy().starts_with("--store="))
        {
            return Err(CliError::refused(
                "--store is not open to a sandboxed agent: its commands use its supervisor's blackboard".into(),
            ));
        }
        Ok(())
    }
}

/// The bytes of a file argument: in channel mode only what the sandbox sent for it,
/// else the file itself (bounded like every file liza reads).
pub(super) fn read_file_argument(path: &Path) -> Result<Vec<u8>, CliError> {
    let typed = path.display().to_string();
    let real = match ChannelMode::get() {
        Some(mode) => mode.files.get(&typed).cloned().ok_or_else(|| {
            CliError::refused(format!(
                "{typed} was not sent by the sandbox (liza reads a sandboxed agent's files only from its sandbox)"
            ))
        })?,
        None => path.to_path_buf(),
    };
    crate::blackboard::document::read_limited(&real)
        .map_err(|e| CliError::refused(format!("cannot read {typed}: {e}")))
}
