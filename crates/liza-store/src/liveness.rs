//! Liveness records on disk (`.liza/live/<agent>.<generation>.yaml`, specs/blackboard.md
//! *Liveness*): written by heartbeats by temp file and rename, read by every reader of the
//! file store, and where this process's pids belong. The records themselves, and how they
//! fold into state.yaml, are the model's (`liza_model::liveness`), re-exported here.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub use liza_model::liveness::*;

use liza_model::codec::{Decode, Decoder, Emit};
use liza_model::ids::AgentId;
use liza_yaml::{self, Emitter};

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
    record.emit(&mut e);
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
        let Ok(parsed) = liza_yaml::parse(text) else {
            continue;
        };
        let Some(root) = parsed.root else { continue };
        let mut d = Decoder::default();
        let Some(record) = LiveRecord::decode(&root, &mut d) else {
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

/// This process's pid space.
pub fn pid_space_here() -> PidSpace {
    PidSpace {
        host: host_id(),
        namespace: pid_namespace(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use liza_model::model::{Agent, AgentStatus, State, Task, TaskStatus};
    use liza_model::timestamp::Timestamp;
    use liza_model::{Role, TaskId};
    use liza_yaml::node::Extra;

    fn state_with(agent: &str, generation: &str) -> State {
        let mut state = State::initial(
            "goal",
            "specs/vision.md",
            "integration",
            Timestamp::from_unix(0),
        );
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
            cli: None,
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
}
