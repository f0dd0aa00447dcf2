//! bubblewrap's `--info-fd`: where a sandbox's first process runs on the host. That
//! process leads the session and process group of everything inside (`--new-session`),
//! so a stop signal sent to that group reaches the agent (bubblewrap itself would die of
//! it at once and take the sandbox down without the grace an agent gets to save its
//! work).

use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::Duration;

use nix::fcntl::{FcntlArg, FdFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// The pipe bubblewrap writes its JSON information to.
pub struct InfoPipe {
    read: OwnedFd,
    write: Option<OwnedFd>,
}

impl InfoPipe {
    /// A pipe whose write end the next spawned process inherits (its read end does not).
    pub fn new() -> std::io::Result<InfoPipe> {
        let (read, write) = nix::unistd::pipe().map_err(std::io::Error::from)?;
        fcntl(&read, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(std::io::Error::from)?;
        Ok(InfoPipe {
            read,
            write: Some(write),
        })
    }

    /// `--info-fd <n>`.
    pub fn args(&self) -> [String; 2] {
        let fd = self.write.as_ref().map_or(-1, AsRawFd::as_raw_fd);
        ["--info-fd".into(), fd.to_string()]
    }

    /// After the spawn: closes this process's write end, then reads the host pid of the
    /// sandbox's first process (`None` when bubblewrap failed before saying it).
    pub fn child_pid(mut self, wait: Duration) -> Option<i32> {
        self.write = None;
        let mut text = Vec::new();
        let deadline = std::time::Instant::now() + wait;
        let mut file = std::fs::File::from(self.read.try_clone().ok()?);
        loop {
            if let Some(pid) = pid_in(&text) {
                return Some(pid);
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let millis = u16::try_from(left.as_millis()).unwrap_or(u16::MAX);
            if millis == 0 {
                return None;
            }
            let mut fds = [PollFd::new(self.read.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(millis)) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            let mut chunk = [0u8; 512];
            match file.read(&mut chunk) {
                Ok(0) | Err(_) => return pid_in(&text),
                Ok(n) => text.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

/// `"child-pid": N` in bubblewrap's information.
fn pid_in(text: &[u8]) -> Option<i32> {
    let text = std::str::from_utf8(text).ok()?;
    let value: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
    value
        .get("child-pid")?
        .as_i64()
        .and_then(|p| i32::try_from(p).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_pid_is_read_from_bubblewraps_information() {
        assert_eq!(
            pid_in(br#"{ "child-pid": 3729, "mnt-namespace": 4026532184 }"#),
            Some(3729)
        );
        assert_eq!(pid_in(br#"{ "child-pid": 37"#), None);
    }
}
