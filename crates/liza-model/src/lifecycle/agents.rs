//! Agent registration: the collision rule, the `generation` fencing token, and leaving.

use crate::EventKind;
use crate::model::{Agent, AgentStatus, State, TaskStatus};
use crate::{AgentId, Role, Timestamp};

use super::RuleId;
use super::context::{Outcome, history, task_mut};
use super::leases::{LeaseKey, Leases};
use super::refusal::Refusal;

/// Who is registering, for the diagnostic fields of the agent entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registration {
    /// The registering process's pid.
    pub pid: Option<i64>,
    /// The terminal it runs in.
    pub terminal: Option<String>,
    /// The backend's name (`--cli`).
    pub cli: Option<String>,
    /// The built-in agent's identity (`--identity`).
    pub identity: Option<String>,
    /// The registered holder's supervisor process is known to be gone (it ran on this
    /// host and its pid no longer exists), so its lease holds nothing.
    pub holder_dead: bool,
    /// The registered holder's supervisor is known to run (on this host, its pid exists):
    /// its registration holds whatever its lease's timestamp says against this clock.
    pub holder_alive: bool,
    /// The registering process is the supervisor that will heartbeat for the agent
    /// (`liza-agent`), not a one-shot `liza register`: its pid stands for the agent.
    pub supervised: bool,
}

/// Registers `id` as `role` with a freshly minted `generation`: succeeds if the id is
/// absent, its holder known dead, or its registration seen silent for the lease period
/// (`leases`, never this clock against the holder's timestamps: specs/blackboard.md
/// *Leases are observed*); a live entry makes it a collision and nothing changes. A reviewer's stale review claims (from its previous incarnation) are released.
pub fn register(
    state: &mut State,
    id: &AgentId,
    role: Role,
    generation: &str,
    info: &Registration,
    leases: &Leases,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    if id.role() != role {
        return Err(Refusal::new(
            RuleId::AgentRole,
            format!("{id} is a {} id, not a {} one", id.role(), role),
            format!(
                "use an id starting with {}- (e.g. {}-1)",
                role.id_prefix(),
                role.id_prefix()
            ),
        ));
    }
    if let Some(existing) = state.agents.get(id)
        && (info.holder_alive
            || (!leases.lapsed(state, &LeaseKey::Agent(id.clone())) && !info.holder_dead))
    {
        return Err(Refusal::new(
            RuleId::Collision,
            format!(
                "COLLISION: {id} already registered{} until {} (pid {}, terminal {})",
                if info.holder_alive {
                    ", its supervisor running on this host,"
                } else {
                    ""
                },
                existing
                    .lease_expires
                    .map(|l| l.to_string())
                    .unwrap_or_default(),
                existing.pid.map_or("unknown".into(), |p| p.to_string()),
                existing.terminal.as_deref().unwrap_or("unknown"),
            ),
            "pick another id (or --auto-id), or stop the running agent first",
        ));
    }
    let lease = now.plus_seconds(state.config.lease_duration());
    let previous = state.agents.get(id).cloned();
    let agent = Agent {
        role,
        status: AgentStatus::Idle,
        generation: Some(generation.to_owned()),
        current_task: None,
        lease_expires: Some(lease),
        heartbeat: Some(now),
        registered_at: Some(now),
        terminal: info.terminal.clone(),
        cli: info.cli.clone(),
        identity: info.identity.clone(),
        pid: info.pid,
        iterations_total: previous.as_ref().and_then(|p| p.iterations_total),
        context_percent: None,
        extra: previous.map(|p| p.extra).unwrap_or_default(),
    };
    state.agents.insert(id.clone(), agent);
    let mut outcome = Outcome::default();
    if role == Role::CodeReviewer {
        let held: Vec<_> = state
            .tasks
            .iter()
            .filter(|t| {
                t.reviewing_by.as_ref() == Some(id) && t.status == TaskStatus::ReadyForReview
            })
            .map(|t| t.id.clone())
            .collect();
        for task in held {
            let t = task_mut(state, &task);
            t.reviewing_by = None;
            t.review_lease_expires = None;
            history(t, now, EventKind::ReviewClaimReleased, id.as_str(), &[]);
            outcome.event(
                EventKind::ReviewClaimReleased,
                id.as_str(),
                Some(&task),
                Some("stale claim of a previous run".into()),
            );
        }
    }
    outcome.event(
        EventKind::AgentRegistered,
        id.as_str(),
        None,
        Some(format!("{role}, generation {generation}")),
    );
    Ok(outcome)
}

/// Removes the agent entry, only if `generation` is the registered one (a stale
/// supervisor never removes its successor).
pub fn unregister(
    state: &mut State,
    id: &AgentId,
    generation: Option<&str>,
) -> Result<Outcome, Refusal> {
    let Some(agent) = state.agents.get(id) else {
        return Err(Refusal::new(
            RuleId::Registered,
            format!("{id} is not registered"),
            "nothing to do",
        ));
    };
    check_generation(id, agent.generation.as_deref(), generation)?;
    state.agents.remove(id);
    let mut outcome = Outcome::default();
    outcome.event(EventKind::AgentUnregistered, id.as_str(), None, None);
    Ok(outcome)
}

/// Refuses a write from a superseded generation ("stale agent generation").
pub fn check_generation(
    id: &AgentId,
    registered: Option<&str>,
    presented: Option<&str>,
) -> Result<(), Refusal> {
    match (registered, presented) {
        (Some(r), Some(p)) if r == p => Ok(()),
        // Entries written by the original tooling carry no generation.
        (None, _) => Ok(()),
        (Some(_), None) => Err(Refusal::new(
            RuleId::AgentGeneration,
            format!("{id} presented no generation"),
            "agents get LIZA_AGENT_GENERATION from their supervisor (`liza register` prints it)",
        )),
        (Some(_), Some(p)) => Err(Refusal::new(
            RuleId::StaleGeneration,
            format!(
                "stale agent generation: {id} generation {p} was superseded by a newer registration"
            ),
            "this process belongs to an old run of the agent; stop it",
        )),
    }
}
