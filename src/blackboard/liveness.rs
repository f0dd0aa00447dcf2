//! Liveness records (`.liza/live/<agent>.<generation>.yaml`): heartbeats renew leases here,
//! without the state lock and without rewriting state.yaml (specs/blackboard.md *Liveness*).
//!
//! Every reader computes *effective* leases as the later of the state value and the live
//! record of the agent's current generation; the next transaction folds the records into
//! state.yaml ([`fold`]). A record of another generation is ignored, so a stale
//! supervisor's heartbeat can never extend the current incarnation's lease.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::codec::{Decoder, record};
use super::ids::AgentId;
use super::model::{State, TaskStatus};
use super::node::Extra;
use super::timestamp::Timestamp;
use super::yaml::{self, Emitter};

/// One heartbeat: `{generation, heartbeat, lease_expires, task_lease_expires?,
/// review_lease_expires?, host, pgid?}`.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct LiveRecord {
    pub generation: String,
    pub heartbeat: Timestamp,
    pub lease_expires: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_lease_expires: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_lease_expires: Option<Timestamp>,
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
    /// Where `supervisor_pid` and `pgid` are pids: the kernel's boot and the pid
    /// namespace (see [`PidSpace`]); absent in records of liza before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_namespace: Option<String>,
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

/// Writes `record` by temp file + rename, so readers never see half a record.
pub fn write(dir: &Path, agent: &AgentId, record: &LiveRecord) -> io::Result<PathBuf> {
    let path = record_path(dir, agent, &record.generation).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "generation {:?} is not 1-64 letters and digits",
                record.generation
            ),
        )
    })?;
    fs::create_dir_all(dir)?;
    let mut e = Emitter::default();
    super::codec::Emit::emit(record, &mut e);
    let text = e.finish();
    let mut temp = tempfile::Builder::new().prefix(".live.").tempfile_in(dir)?;
    temp.write_all(text.as_bytes())?;
    temp.persist(&path).map_err(|e| e.error)?;
    Ok(path)
}

/// Removes every record of `agent` (all generations); used by register and unregister.
pub fn remove_all(dir: &Path, agent: &AgentId) -> io::Result<()> {
    let prefix = format!("{agent}.");
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(rest) = name.strip_prefix(&prefix)
            && rest.ends_with(".yaml")
            && !rest[..rest.len() - 5].contains('.')
        {
            match fs::remove_file(entry.path()) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Reads every well-formed record under `dir`; unreadable or malformed files are skipped
/// (a record is advisory: the worst case is a lease that looks shorter than it is).
pub fn read_all(dir: &Path) -> LiveRecords {
    let mut records = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return LiveRecords(records);
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stem) = name.strip_suffix(".yaml") else {
            continue;
        };
        let Some((agent, generation)) = stem.rsplit_once('.') else {
            continue;
        };
        let Ok(agent) = AgentId::parse(agent) else {
            continue;
        };
        let Ok(bytes) = fs::read(entry.path()) else {
            continue;
        };
        if bytes.len() > 64 * 1024 {
            continue;
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        let Ok(parsed) = yaml::parse(text) else {
            continue;
        };
        let Some(root) = parsed.root else { continue };
        let mut d = Decoder::default();
        let Some(record) = <LiveRecord as super::codec::Decode>::decode(&root, &mut d) else {
            continue;
        };
        if !d.findings.is_empty() || record.generation != generation {
            continue;
        }
        records.push((agent, record));
    }
    records.sort_by(|a, b| a.0.cmp(&b.0));
    LiveRecords(records)
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

/// The name of this host in liveness records: `LIZA_HOST_ID`, else the hostname
/// (specs/shared-store.md: hosts sharing a blackboard in etcd tell their agents apart by it).
pub fn host_id() -> Option<String> {
    match std::env::var("LIZA_HOST_ID") {
        Ok(id) if !id.trim().is_empty() => Some(id.trim().to_owned()),
        _ => nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok()),
    }
}

/// Where a pid means one process: a host (by [`host_id`]) and, on it, one boot of the
/// kernel and one pid namespace. Two containers given one hostname, or one host before
/// and after a reboot, are different spaces: a pid of one says nothing of the other, so
/// no liveness is judged and no process group signalled across them
/// (specs/blackboard.md *Leases are observed*).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidSpace {
    pub host: Option<String>,
    /// `<boot id>/<pid namespace inode>`.
    pub namespace: Option<String>,
}

impl PidSpace {
    /// This process's.
    pub fn here() -> PidSpace {
        PidSpace {
            host: host_id(),
            namespace: pid_namespace(),
        }
    }

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

/// This process's kernel boot and pid namespace, `<boot id>/<inode>` (None where /proc
/// does not tell).
pub fn pid_namespace() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    static HERE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    HERE.get_or_init(|| {
        let boot = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        // The link's target is the namespace: its inode names it.
        let namespace = fs::metadata("/proc/self/ns/pid").ok()?.ino();
        Some(format!("{}/{namespace}", boot.trim()))
    })
    .clone()
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
    use crate::blackboard::model::{Agent, AgentStatus, Task};
    use crate::blackboard::{Role, TaskId};

    fn state_with(agent: &str, generation: &str) -> State {
        let mut state = crate::bench::generate_state(0, 0, Timestamp::from_unix(0));
        let id = AgentId::parse(agent).unwrap();
        state.agents.insert(
            id.clone(),
            Agent {
                role: Role::Coder,
                status: AgentStatus::Working,
                generation: Some(generation.into()),
                current_task: None,
                lease_expires: Some(Timestamp::from_unix(100)),
                heartbeat: Some(Timestamp::from_unix(0)),
                registered_at: None,
                terminal: None,
                cli: None,
                identity: None,
                pid: None,
                iterations_total: None,
                context_percent: None,
                extra: Extra::default(),
            },
        );
        let mut task = Task::new(TaskId::parse("t-1").unwrap(), TaskStatus::Claimed);
        task.assigned_to = Some(id);
        task.lease_expires = Some(Timestamp::from_unix(100));
        state.tasks.push_task(task);
        state
    }

    fn record(generation: &str, lease: i64) -> LiveRecord {
        LiveRecord {
            generation: generation.into(),
            heartbeat: Timestamp::from_unix(lease - 120),
            lease_expires: Timestamp::from_unix(lease),
            task_lease_expires: Some(Timestamp::from_unix(lease)),
            review_lease_expires: None,
            host: Some("h".into()),
            pgid: Some(4242),
            usage_limit_until: None,
            supervisor_pid: None,
            waiting: None,
            sandbox: None,
            sandbox_note: None,
            pid_namespace: Some("boot/1".into()),
            extra: Extra::default(),
        }
    }

    #[test]
    fn records_round_trip_and_fold_for_the_current_generation_only() {
        let dir = tempfile::tempdir().unwrap();
        let id = AgentId::parse("coder-1").unwrap();
        write(dir.path(), &id, &record("abc", 500)).unwrap();
        write(dir.path(), &id, &record("old", 900)).unwrap();
        let records = read_all(dir.path());
        assert_eq!(records.0.len(), 2);
        let mut state = state_with("coder-1", "abc");
        assert!(fold(&mut state, &records));
        let agent = state.agents.get(&id).unwrap();
        assert_eq!(agent.lease_expires, Some(Timestamp::from_unix(500)));
        assert_eq!(
            state.tasks[0].lease_expires,
            Some(Timestamp::from_unix(500))
        );
        // Folding again changes nothing; an older record never lowers a lease.
        assert!(!fold(&mut state, &records));
        let space = |host: &str, namespace: &str| PidSpace {
            host: Some(host.into()),
            namespace: Some(namespace.into()),
        };
        assert_eq!(
            records.agent_with_pgid(
                &state,
                4242,
                &space("h", "boot/1"),
                Timestamp::from_unix(10)
            ),
            Some(id.clone())
        );
        // The same process group number on another host is another process, and so
        // it is in another pid namespace (a container) or boot of the same host name.
        for elsewhere in [
            space("other", "boot/1"),
            space("h", "boot/2"),
            space("h", "reboot/1"),
        ] {
            assert_eq!(
                records.agent_with_pgid(&state, 4242, &elsewhere, Timestamp::from_unix(10)),
                None,
                "{elsewhere:?}"
            );
        }
        remove_all(dir.path(), &id).unwrap();
        assert!(read_all(dir.path()).0.is_empty());
    }

    #[test]
    fn unsafe_generations_never_become_file_names() {
        let dir = Path::new("/tmp");
        let id = AgentId::parse("coder-1").unwrap();
        for bad in ["", "../x", "a/b", "a.b", &"x".repeat(65)] {
            assert!(record_path(dir, &id, bad).is_none(), "{bad:?}");
        }
    }
}
