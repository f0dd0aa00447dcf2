//! Who merges (specs/git.md *A batch*): this process as a merger — its host, its pid and
//! its checkout, as `merge_intent.merger` names it — and whether a merger of this host
//! lives, so that no two mergers take one task and recovery leaves a live one's intents.

use super::Project;
use crate::lifecycle::Merger;

/// This process as a merger.
pub(super) fn this_merger(project: &Project) -> Merger {
    let root = std::fs::canonicalize(&project.root).unwrap_or_else(|_| project.root.clone());
    let hash = blake3::hash(root.as_os_str().as_encoded_bytes()).to_hex();
    Merger {
        host: crate::blackboard::liveness::host_id().unwrap_or_else(|| "localhost".into()),
        pid: std::process::id(),
        checkout: hash[..8].to_owned(),
    }
}

/// Whether process `pid` of this host lives.
pub(super) fn pid_alive(pid: u32) -> bool {
    i32::try_from(pid)
        .is_ok_and(|pid| nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok())
}
