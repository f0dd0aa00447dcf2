//! Liveness records (`.liza/live/<agent>.<generation>.yaml`): heartbeats renew leases here,
//! without the state lock and without rewriting state.yaml (specs/blackboard.md *Liveness*).
//!
//! Every reader computes *effective* leases as the later of the state value and the live
//! record of the agent's current generation; the next transaction folds the records into
//! state.yaml ([`fold`]). A record of another generation is ignored, so a stale
//! supervisor's heartbeat can never extend the current incarnation's lease.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::codec::record;
use super::ids::AgentId;
use super::model::{State, TaskStatus};
use super::node::Extra;
use super::timestamp::Timestamp;

/// One heartbeat: `{generation, heartbeat, lease_expires, task_lease_expires?,
/// review_lease_expires?, host, pgid?}`.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct LiveRecord {
    /// The registration it renews; a record of another generation than the registered one
    /// is ignored.
    pub generation: String,
    /// When the heartbeat was written.
    pub heartbeat: Timestamp,
    /// The registration lease.
    pub lease_expires: Timestamp,
    /// The lease on the agent's task, when it holds one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_lease_expires: Option<Timestamp>,
    /// The lease on the review it holds, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_lease_expires: Option<Timestamp>,
    /// The host it was written on (`LIZA_HOST_ID`, else the hostname).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Process group of the agent process currently running, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgid: Option<i64>,
    /// Until when the supervisor waits for a provider usage limit to reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_limit_until: Option<Timestamp>,
    /// The supervisor's own pid (on `host`): a command whose ancestry leads to it runs
    /// under that supervisor, whatever process group or session it made for itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor_pid: Option<i64>,
    /// What the supervisor is waiting for when it runs nothing (`paused`, `checkpoint`,
    /// `usage_limit`, `backoff`, …): `liza status` says why an agent is idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
    /// Whether the agent runs sandboxed: `on`, `off` or `unavailable`
    /// (specs/sandbox.md *Modes*); `liza status` says it loudly when not `on`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The sandbox's version, or why there is none and the fix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_note: Option<String>,
    /// The backend its agent runs on now: its own, or a fallback while that one is
    /// limited (specs/ledger.md *Fallbacks*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli: Option<String>,
    /// Where `supervisor_pid` and `pgid` are pids: the kernel's boot and the pid
    /// namespace (see [`PidSpace`]); absent in records of liza before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_namespace: Option<String>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(LiveRecord {
    req generation: "generation",
    req heartbeat: "heartbeat",
    req lease_expires: "lease_expires",
    opt task_lease_expires: "task_lease_expires",
    opt review_lease_expires: "review_lease_expires",
    opt host: "host",
    opt pgid: "pgid",
    opt usage_limit_until: "usage_limit_until",
    opt supervisor_pid: "supervisor_pid",
    opt waiting: "waiting",
    opt sandbox: "sandbox",
    opt sandbox_note: "sandbox_note",
    opt cli: "cli",
    opt pid_namespace: "pid_namespace",
});

/// The records of one blackboard, by agent.
#[derive(Debug, Clone, Default)]
pub struct LiveRecords(pub Vec<(AgentId, LiveRecord)>);

/// `live/<agent>.<generation>.yaml`; generations are checked to be file-name safe.
pub fn record_path(dir: &Path, agent: &AgentId, generation: &str) -> Option<PathBuf> {
    is_valid_generation(generation).then(|| dir.join(format!("{agent}.{generation}.yaml")))
}

/// A generation is 1–64 ASCII letters and digits (liza mints 16 hex digits).
pub fn is_valid_generation(generation: &str) -> bool {
    (1..=64).contains(&generation.len()) && generation.bytes().all(|b| b.is_ascii_alphanumeric())
}

impl LiveRecords {
    /// The record of `agent`'s registered generation in `state`, if any.
    pub fn current<'a>(&'a self, state: &State, agent: &AgentId) -> Option<&'a LiveRecord> {
        let generation = state.agents.get(agent)?.generation.as_deref()?;
        self.0
            .iter()
            .find(|(id, r)| id == agent && r.generation == generation)
            .map(|(_, r)| r)
    }

    /// Each agent's lease from its current record (for validation of a file read as is).
    pub fn agent_leases(&self, state: &State) -> std::collections::HashMap<AgentId, Timestamp> {
        self.0
            .iter()
            .filter(|(id, r)| self.current(state, id).is_some_and(|c| c == r))
            .map(|(id, r)| (id.clone(), r.lease_expires))
            .collect()
    }

    /// The agent whose live supervisor, in pid space `here`, is one of `ancestors`.
    pub fn agent_supervising(
        &self,
        state: &State,
        ancestors: &[i64],
        here: &PidSpace,
        now: Timestamp,
    ) -> Option<AgentId> {
        self.0
            .iter()
            .filter(|(id, r)| {
                r.supervisor_pid.is_some_and(|pid| ancestors.contains(&pid))
                    && here.holds(r)
                    && r.lease_expires > now
                    && self.current(state, id).is_some_and(|c| c == r)
            })
            .map(|(id, _)| id.clone())
            .next()
    }

    /// Agents whose current record names process group `pgid` in pid space `here` and
    /// whose lease is live (a process group number means nothing on another host).
    pub fn agent_with_pgid(
        &self,
        state: &State,
        pgid: i64,
        here: &PidSpace,
        now: Timestamp,
    ) -> Option<AgentId> {
        self.0
            .iter()
            .filter(|(id, r)| {
                r.pgid == Some(pgid)
                    && here.holds(r)
                    && r.lease_expires > now
                    && self.current(state, id).is_some_and(|c| c == r)
            })
            .map(|(id, _)| id.clone())
            .next()
    }
}

/// Where a pid means one process: a host (by liza's `host_id`: `LIZA_HOST_ID`, else the hostname) and, on it, one boot of the
/// kernel and one pid namespace. Two containers given one hostname, or one host before
/// and after a reboot, are different spaces: a pid of one says nothing of the other, so
/// no liveness is judged and no process group signalled across them
/// (specs/blackboard.md *Leases are observed*).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidSpace {
    /// The host (`LIZA_HOST_ID`, else the hostname), if known.
    pub host: Option<String>,
    /// `<boot id>/<pid namespace inode>`.
    pub namespace: Option<String>,
}

impl PidSpace {
    /// Whether the pids `record` names are pids here. A record without a namespace
    /// (written by a liza that did not keep one) is judged by its host alone, as then;
    /// one whose writer could not tell its namespace (`unknown`) is nobody's here.
    pub fn holds(&self, record: &LiveRecord) -> bool {
        self.host.is_some()
            && record.host == self.host
            && match (&record.pid_namespace, &self.namespace) {
                (None, _) => true,
                (Some(theirs), Some(ours)) => theirs == ours,
                (Some(_), None) => false,
            }
    }
}

/// Folds the records into `state`: each lease and heartbeat becomes the later of the state
/// value and the record of the agent's current generation. Returns whether anything moved.
pub fn fold(state: &mut State, records: &LiveRecords) -> bool {
    let mut changed = false;
    for (id, record) in &records.0 {
        let Some(agent) = state.agents.get_mut(id) else {
            continue;
        };
        if agent.generation.as_deref() != Some(record.generation.as_str()) {
            continue;
        }
        changed |= raise(&mut agent.lease_expires, Some(record.lease_expires));
        changed |= raise(&mut agent.heartbeat, Some(record.heartbeat));
        for index in 0..state.tasks.len() {
            let task = &state.tasks[index];
            let coder = task.assigned_to.as_ref() == Some(id)
                && task.status == TaskStatus::Claimed
                && record.task_lease_expires > task.lease_expires;
            let reviewer = task.reviewing_by.as_ref() == Some(id)
                && task.status == TaskStatus::ReadyForReview
                && record.review_lease_expires > task.review_lease_expires;
            if coder || reviewer {
                let task = state.tasks.get_mut(index).expect("index in range");
                if coder {
                    changed |= raise(&mut task.lease_expires, record.task_lease_expires);
                }
                if reviewer {
                    changed |= raise(&mut task.review_lease_expires, record.review_lease_expires);
                }
            }
        }
    }
    changed
}

fn raise(field: &mut Option<Timestamp>, candidate: Option<Timestamp>) -> bool {
    match candidate {
        Some(c) if field.is_none_or(|f| c > f) => {
            *field = Some(c);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_generations_never_become_file_names() {
        let dir = Path::new("/tmp");
        let id = AgentId::parse("coder-1").unwrap();
        for bad in ["", "../x", "a/b", "a.b", &"x".repeat(65)] {
            assert!(record_path(dir, &id, bad).is_none(), "{bad:?}");
        }
    }
}
