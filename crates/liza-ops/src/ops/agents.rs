//! Agent registration: `register` (mints the generation), `heartbeat` (a liveness record;
//! never a state.yaml rewrite), `unregister` (only the registered generation).

use std::sync::atomic::{AtomicU64, Ordering};

use super::leases::{LeaseCheck, process_alive};
use super::{Authority, OpsError, Project, Transition, supervisor_only, transition};
use crate::blackboard::liveness::LiveRecord;
use crate::blackboard::model::TaskStatus;
use crate::blackboard::{Actor, AgentId, Timestamp};
use crate::lifecycle::{self, LeaseKey, Registration, RuleId};

/// A fresh fencing token: 16 hex digits from the process, the clock and a counter.
pub fn mint_generation() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut hasher = blake3::Hasher::new();
    hasher.update(&std::process::id().to_le_bytes());
    hasher.update(&nanos.to_le_bytes());
    hasher.update(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    hasher.update(&(&hasher as *const _ as usize).to_le_bytes());
    hasher.finalize().to_hex()[..16].to_owned()
}

/// `register <agent-id>`: returns the generation. An id registered before whose holder
/// is not known dead is taken only once `check` finds its registration silent for the
/// lease period (a one-shot registration watches it; `--auto-id` passes an empty
/// observation and moves on to a free id).
pub fn register(
    project: &Project,
    actor: &Actor,
    id: &AgentId,
    info: &Registration,
    check: LeaseCheck,
) -> Result<Transition<String>, OpsError> {
    supervisor_only(actor, "register")?;
    let generation = mint_generation();
    let records = project.store.live_records().unwrap_or_default();
    let state = project.store.snapshot()?.state;
    let here = crate::blackboard::liveness::pid_space_here();
    let previous = records.current(&state, id).cloned();
    let on_this_host = previous.as_ref().is_some_and(|r| here.holds(r));
    // The holder's supervisor, by its record on this host: its pid says whether it
    // lives, whatever its lease's timestamp says against this clock.
    let holder_pid = previous
        .as_ref()
        .and_then(|r| r.supervisor_pid)
        .filter(|pid| on_this_host && *pid != i64::from(std::process::id()));
    let info = Registration {
        holder_dead: holder_pid.is_some_and(|pid| !process_alive(pid)),
        holder_alive: holder_pid.is_some_and(super::leases::liza_process_alive),
        ..info.clone()
    };
    let key = LeaseKey::Agent(id.clone());
    let keys = if state.agents.get(id).is_some() && !info.holder_alive && !info.holder_dead {
        vec![key]
    } else {
        Vec::new()
    };
    let leases = check.leases(project, &keys)?;
    let done = transition(
        &project.store,
        actor,
        Authority::Supervisor,
        |state, _who, now| {
            Ok((
                lifecycle::register(state, id, id.role(), &generation, &info, &leases, now)?,
                generation.clone(),
            ))
        },
    )?;
    // The previous incarnation's agent may still run on this host (its supervisor died):
    // it must not keep working under a dead identity.
    if on_this_host
        && let Some(pgid) = previous.and_then(|r| r.pgid)
        && let Ok(raw) = i32::try_from(pgid)
        && raw > 1
    {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(raw),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    // Records of earlier generations are dead: they never count again. The new one's
    // record is written at once — where its pids are, so that a registration after it
    // died before its first heartbeat (or any time later, on this host) sees it dead by
    // its pid instead of watching its lease.
    project.store.remove_live(id)?;
    let facts = BeatFacts {
        supervisor_pid: info.pid.filter(|_| info.supervised),
        ..BeatFacts::default()
    };
    let record = live_record(&state, id, &generation, &facts, Timestamp::now());
    project.store.write_live(id, &record)?;
    Ok(done)
}

fn hostname() -> Option<String> {
    crate::blackboard::liveness::host_id()
}

/// The record a heartbeat writes.
#[derive(Debug, serde::Serialize)]
pub struct Heartbeat {
    /// The registered generation the record is written for.
    pub generation: String,
    /// Until when the agent's lease now runs (RFC 3339).
    pub lease_expires: String,
    /// Until when its claim's lease runs, when it holds a claimed task.
    pub task_lease_expires: Option<String>,
    /// Until when its review's lease runs, when it reviews a task.
    pub review_lease_expires: Option<String>,
}

/// What a heartbeat reports besides the leases.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BeatFacts {
    /// The process group of the agent process now running.
    pub pgid: Option<i64>,
    /// Until when the supervisor waits for a provider usage limit to reset.
    pub usage_limit_until: Option<Timestamp>,
    /// The supervisor's own pid.
    pub supervisor_pid: Option<i64>,
    /// What the supervisor waits for while it runs nothing.
    pub waiting: Option<String>,
    /// Whether its agent runs sandboxed: `on`, `off` or `unavailable` (specs/sandbox.md).
    pub sandbox: Option<String>,
    /// The sandbox's version, or why there is none and the fix.
    pub sandbox_note: Option<String>,
    /// The backend its agent runs on now.
    pub cli: Option<String>,
}

/// `heartbeat <agent-id> [--generation G] [--pgid P]`: renews the agent's leases in its
/// liveness record, without the state lock.
pub fn heartbeat(
    project: &Project,
    actor: &Actor,
    id: &AgentId,
    generation: Option<&str>,
    facts: &BeatFacts,
) -> Result<Heartbeat, OpsError> {
    supervisor_only(actor, "heartbeat")?;
    let snapshot = project.store.snapshot()?;
    // A person's save not yet reconciled is not the blackboard yet (a stale copy may
    // lack this very agent): the heartbeat goes by the last committed revision.
    let state = if snapshot.pending_hand_edit {
        project.store.committed_state().unwrap_or(snapshot.state)
    } else {
        snapshot.state
    };
    let agent = state.agents.get(id).ok_or_else(|| {
        OpsError::refused(
            RuleId::Registered,
            format!("{id} is not registered"),
            format!("register it first: `liza register {id}`"),
        )
    })?;
    let registered = agent.generation.clone().ok_or_else(|| {
        OpsError::refused(
            RuleId::AgentGeneration,
            format!("{id} has no generation; it was registered by another tool"),
            format!("register it again with `liza register {id}`"),
        )
    })?;
    lifecycle::check_generation(
        id,
        Some(&registered),
        Some(generation.unwrap_or(&registered)),
    )?;
    let record = live_record(&state, id, &registered, facts, Timestamp::now());
    project.store.write_live(id, &record)?;
    Ok(Heartbeat {
        generation: registered,
        lease_expires: record.lease_expires.to_string(),
        task_lease_expires: record.task_lease_expires.map(|l| l.to_string()),
        review_lease_expires: record.review_lease_expires.map(|l| l.to_string()),
    })
}

/// The liveness record of `id`'s `generation` as of `now`: its leases renewed, where its
/// pids are pids (host and pid namespace), and what `facts` report.
fn live_record(
    state: &crate::blackboard::model::State,
    id: &AgentId,
    generation: &str,
    facts: &BeatFacts,
    now: Timestamp,
) -> LiveRecord {
    let lease = now.plus_seconds(state.config.lease_duration());
    let task_lease = state
        .tasks
        .iter()
        .any(|t| t.assigned_to.as_ref() == Some(id) && t.status == TaskStatus::Claimed)
        .then_some(lease);
    let review_lease = state
        .tasks
        .iter()
        .any(|t| t.reviewing_by.as_ref() == Some(id) && t.status == TaskStatus::ReadyForReview)
        .then_some(lease);
    LiveRecord {
        generation: generation.to_owned(),
        heartbeat: now,
        lease_expires: lease,
        task_lease_expires: task_lease,
        review_lease_expires: review_lease,
        host: hostname(),
        // Written even when /proc does not tell: such a record's pids are nobody's here.
        pid_namespace: Some(
            crate::blackboard::liveness::pid_namespace().unwrap_or_else(|| "unknown".into()),
        ),
        pgid: facts.pgid,
        usage_limit_until: facts.usage_limit_until,
        supervisor_pid: facts.supervisor_pid,
        waiting: facts.waiting.clone(),
        sandbox: facts.sandbox.clone(),
        sandbox_note: facts.sandbox_note.clone(),
        cli: facts.cli.clone(),
        extra: Default::default(),
    }
}

/// `unregister <agent-id> [--generation G]`.
pub fn unregister(
    project: &Project,
    actor: &Actor,
    id: &AgentId,
    generation: Option<&str>,
) -> Result<Transition<()>, OpsError> {
    supervisor_only(actor, "unregister")?;
    let done = transition(
        &project.store,
        actor,
        Authority::Supervisor,
        |state, _who, _now| {
            let presented = generation
                .map(str::to_owned)
                .or_else(|| state.agents.get(id).and_then(|a| a.generation.clone()));
            Ok((lifecycle::unregister(state, id, presented.as_deref())?, ()))
        },
    )?;
    project.store.remove_live(id)?;
    Ok(done)
}
