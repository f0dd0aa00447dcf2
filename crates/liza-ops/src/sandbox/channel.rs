//! The channel's wire format (specs/sandbox.md *The blackboard through the supervisor*):
//! how `liza` inside a sandbox hands a command to its supervisor over the Unix socket at
//! [`CHANNEL_SOCKET`](super::CHANNEL_SOCKET), and gets its output and exit code back.
//!
//! Frames are a kind byte, a big-endian `u32` length, then the payload. The client sends
//! one [`Request`] frame (JSON), then one file frame per file it names; the supervisor
//! answers with output frames as the command writes, then one exit frame. The request
//! carries no identity: the supervisor knows whose sandbox the socket is in.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

/// A request: the command line (without the program's name), where it was typed, and
/// the files named by its file arguments, read inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The command line, without the program's name.
    pub argv: Vec<String>,
    /// The directory it was typed in, inside the sandbox. The supervisor runs the command
    /// in the run's worktree, never there.
    pub cwd: String,
    /// The file arguments as typed, in the order their [`Kind::File`] frames follow.
    #[serde(default)]
    pub files: Vec<String>,
}

/// What a frame holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The [`Request`], as JSON (`R`).
    Request = b'R' as isize,
    /// The contents of one file argument (`F`).
    File = b'F' as isize,
    /// What the command wrote to its standard output (`O`).
    Stdout = b'O' as isize,
    /// What the command wrote to its standard error (`E`).
    Stderr = b'E' as isize,
    /// The exit code, as a big-endian `i32`.
    Exit = b'X' as isize,
}

impl Kind {
    fn of(byte: u8) -> Option<Kind> {
        [
            Kind::Request,
            Kind::File,
            Kind::Stdout,
            Kind::Stderr,
            Kind::Exit,
        ]
        .into_iter()
        .find(|k| *k as u8 == byte)
    }
}

/// The largest frame either side accepts: a file argument (a task list, a rejection
/// reason) or a request.
pub const MAX_FRAME: usize = 8 * 1024 * 1024;
/// The largest request (its command line, as JSON).
pub const MAX_REQUEST: usize = 256 * 1024;
/// How many file arguments one command may name.
pub const MAX_FILES: usize = 4;

/// A frame's header.
pub fn header(kind: Kind, len: usize) -> [u8; 5] {
    let len = u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes();
    [kind as u8, len[0], len[1], len[2], len[3]]
}

/// Reads a header: the kind and the payload's length (refused over [`MAX_FRAME`]).
pub fn parse_header(bytes: [u8; 5]) -> std::io::Result<(Kind, usize)> {
    let kind = Kind::of(bytes[0]).ok_or_else(|| bad(format!("unknown frame kind {}", bytes[0])))?;
    let len = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]) as usize;
    if len > MAX_FRAME {
        return Err(bad(format!(
            "a frame of {len} bytes is over the {MAX_FRAME}-byte limit"
        )));
    }
    Ok((kind, len))
}

/// Writes one frame (blocking).
pub fn write_frame(out: &mut impl Write, kind: Kind, payload: &[u8]) -> std::io::Result<()> {
    out.write_all(&header(kind, payload.len()))?;
    out.write_all(payload)
}

/// Reads one frame (blocking); `None` at a clean end of the stream.
pub fn read_frame(input: &mut impl Read) -> std::io::Result<Option<(Kind, Vec<u8>)>> {
    let mut head = [0u8; 5];
    match input.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let (kind, len) = parse_header(head)?;
    let mut payload = vec![0u8; len];
    input.read_exact(&mut payload)?;
    Ok(Some((kind, payload)))
}

/// The error of a malformed or unexpected frame: `what` is wrong with it.
pub fn bad(what: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_oversized_ones_are_refused() {
        let mut wire = Vec::new();
        write_frame(&mut wire, Kind::Stdout, b"hello").unwrap();
        write_frame(&mut wire, Kind::Exit, &3i32.to_be_bytes()).unwrap();
        let mut input = wire.as_slice();
        assert_eq!(
            read_frame(&mut input).unwrap(),
            Some((Kind::Stdout, b"hello".to_vec()))
        );
        assert_eq!(
            read_frame(&mut input).unwrap(),
            Some((Kind::Exit, 3i32.to_be_bytes().to_vec()))
        );
        assert_eq!(read_frame(&mut input).unwrap(), None);
        let huge = [b'F', 0xff, 0xff, 0xff, 0xff];
        assert!(parse_header(huge).is_err());
        assert!(parse_header([b'?', 0, 0, 0, 0]).is_err());
    }
}
