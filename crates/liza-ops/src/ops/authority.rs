//! Who may act, checked where it counts: under the state lock, against the registered
//! agent entry (id, generation, role), and — for people — against the process groups of
//! running agents (an agent must not act without its identity). Every lifecycle change
//! runs through [`transition`], which also completes the sprint when the change finished
//! it and writes the log entries.

use super::OpsError;
use crate::blackboard::liveness::LiveRecords;
use crate::blackboard::node::Node;
use crate::blackboard::{Actor, AgentId, State, Store, Timestamp};
use crate::lifecycle::{self, Outcome, Refusal, RuleId, Who};

/// How the caller's authority is established.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authority {
    /// The caller acts as itself: an agent (verified id, generation, role) or a person.
    Caller,
    /// A supervisor-only operation run by a person or script on the CLI (agents refused
    /// before this point), or by `liza-agent` in-process.
    Supervisor,
}

/// A committed lifecycle change.
#[derive(Debug)]
pub struct Transition<R> {
    /// What the change returned besides its outcome.
    pub value: R,
    /// The log entries written and the warnings for the caller, the sprint's completion
    /// included when the change finished it.
    pub outcome: Outcome,
    /// The revision the change was committed as.
    pub revision: u64,
}

/// Refuses supervisor-only commands when an agent identity is set (specs/lifecycle.md *Actors
/// and permissions*).
pub fn supervisor_only(actor: &Actor, command: &str) -> Result<(), OpsError> {
    if let Actor::Agent { id, .. } = actor {
        return Err(OpsError::refused(
            RuleId::SupervisorOnly,
            format!(
                "{command} is performed by supervisors; it is refused when an agent identity is set ({id})"
            ),
            "agents report through submit-for-review, block, handoff and submit-verdict; unset LIZA_AGENT_ID to run it as a person",
        ));
    }
    Ok(())
}

/// The variable a supervisor sets, to its own pid, for the agent processes it starts.
/// `setsid` keeps it; clearing it by hand still leaves the pid ancestry.
pub const SUPERVISOR_PID_VAR: &str = "LIZA_SUPERVISOR_PID";

/// Facts about the calling process read before the transaction (no I/O under the lock
/// beyond the store's own). The liveness records they are judged against are the
/// transaction's own ([`Tx::live`](crate::blackboard::store::Tx::live)): a command reads
/// them once, and in etcd its commit is guarded by them.
pub struct CallerFacts {
    pgid: i64,
    /// This process's ancestors' pids, parent first, read from /proc (before any lock):
    /// only a person's command is judged by them.
    ancestors: Vec<i64>,
    here: crate::blackboard::liveness::PidSpace,
    /// The supervisor pid a supervisor put in this process's environment.
    marker: Option<String>,
}

impl CallerFacts {
    /// This process's facts, as far as `actor`'s command is judged by them: an agent
    /// acts under its verified identity and a supervisor under its fence, so only a
    /// person's command reads its ancestry.
    pub fn of(actor: &Actor) -> CallerFacts {
        let ancestors = if matches!(actor, Actor::Human) {
            ancestors()
        } else {
            Vec::new()
        };
        CallerFacts {
            pgid: i64::from(nix::unistd::getpgrp().as_raw()),
            ancestors,
            here: crate::blackboard::liveness::pid_space_here(),
            marker: std::env::var(SUPERVISOR_PID_VAR)
                .ok()
                .filter(|v| !v.is_empty()),
        }
    }

    /// Why a command without an agent identity is an agent's all the same: it runs in a
    /// running agent's process group, under a supervisor's pid (even after `setsid` or
    /// a double fork while the parent lives), or with a supervisor's mark in its
    /// environment.
    fn agent_behind(&self, state: &State, records: &LiveRecords, now: Timestamp) -> Option<String> {
        if let Some(agent) = records.agent_with_pgid(state, self.pgid, &self.here, now) {
            return Some(format!("it runs inside {agent}'s process group"));
        }
        if let Some(agent) = records.agent_supervising(state, &self.ancestors, &self.here, now) {
            return Some(format!("it runs under {agent}'s supervisor"));
        }
        self.marked()
    }

    /// The supervisor's mark in the environment, said as a reason.
    fn marked(&self) -> Option<String> {
        self.marker
            .as_ref()
            .map(|pid| format!("it was started by a liza supervisor ({SUPERVISOR_PID_VAR}={pid})"))
    }
}

/// The pids above this process, parent first, read from `/proc` (empty elsewhere).
fn ancestors() -> Vec<i64> {
    let mut pids = Vec::new();
    let mut pid = i64::from(std::process::id());
    // A chain longer than this is not a process tree a person builds.
    while pids.len() < 256 {
        let Some(parent) = parent_of(pid) else { break };
        if parent <= 1 {
            break;
        }
        pids.push(parent);
        pid = parent;
    }
    pids
}

/// `ppid` from `/proc/<pid>/stat`: the field after the state, after the command name in
/// parentheses (which may itself hold spaces and parentheses).
fn parent_of(pid: i64) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Refuses a command for people to a caller with an agent identity.
pub(super) fn no_agent_identity(actor: &Actor, command: &str) -> Result<(), OpsError> {
    if let Actor::Agent { id, .. } = actor {
        return Err(OpsError::refused(
            RuleId::HumanOnly,
            format!("{command} is a command for people, refused for {id}"),
            "agents report through submit-for-review, block, discover and anomaly; a person runs it without LIZA_AGENT_ID",
        ));
    }
    Ok(())
}

/// The variable that puts `liza` in channel mode: a command a sandboxed agent sent
/// through its supervisor (specs/sandbox.md *The blackboard through the supervisor*);
/// its value is the agent's role. Set only by the supervisor's end of the channel.
pub const CHANNEL_ROLE_VAR: &str = "LIZA_CHANNEL_ROLE";
/// In channel mode: the file arguments the sandbox sent, as a JSON object from the path
/// the agent typed to where the supervisor keeps its bytes.
pub const CHANNEL_FILES_VAR: &str = "LIZA_CHANNEL_FILES";

/// The commands any agent may send through the channel: reading the blackboard and
/// reporting what it found (specs/operations.md *Commands*, "any").
const ANY_AGENT: &[&str] = &[
    "status", "show", "log", "history", "diff", "validate", "discover", "anomaly", "help",
];
/// The planner's commands (people's too): what a planner may send through the channel
/// beyond `ANY_AGENT`'s, and its group in `liza --help`.
pub const PLANNER_COMMANDS: &[&str] = &[
    "add-task",
    "add-tasks",
    "amend-task",
    "finalize-task",
    "unblock",
    "reassign",
    "rescope",
    "abandon",
    "discovery",
    "goal",
    "sprint",
    "checkpoint",
];
/// The coder's commands (channel and `liza --help`, as [`PLANNER_COMMANDS`]).
pub const CODER_COMMANDS: &[&str] = &["submit-for-review", "block", "handoff"];
/// The reviewer's commands (channel and `liza --help`, as [`PLANNER_COMMANDS`]).
pub const REVIEWER_COMMANDS: &[&str] = &["submit-verdict"];

/// The `liza` commands an agent of `role` may send through the channel.
pub fn channel_commands(role: crate::blackboard::Role) -> Vec<&'static str> {
    use crate::blackboard::Role;
    let own = match role {
        Role::Planner => PLANNER_COMMANDS,
        Role::Coder => CODER_COMMANDS,
        Role::CodeReviewer => REVIEWER_COMMANDS,
    };
    ANY_AGENT.iter().chain(own).copied().collect()
}

/// Refuses `command` (a top-level subcommand) to a sandboxed agent of `role` unless its
/// role may run it: supervisor commands, commands for people, `init`, `agent`,
/// `builtin`, `demo`… never pass, whatever the agent's process did to its environment.
pub fn channel_allows(role: crate::blackboard::Role, command: &str) -> Result<(), OpsError> {
    let allowed = channel_commands(role);
    if allowed.contains(&command) {
        return Ok(());
    }
    Err(OpsError::refused(
        RuleId::ChannelCommand,
        format!(
            "`liza {command}` is not open to a {} agent: it came through the supervisor's channel from a sandboxed run",
            role.id_prefix()
        ),
        format!(
            "an agent of this role may run: liza {}",
            allowed.join(", liza ")
        ),
    ))
}

/// Refuses a command for people (specs/operations.md: `edit`, `note`, `release-claim`,
/// `clear-stale`, `pause`, `resume`, `abort`, `analyze`, `retro`, `watch`, `up`,
/// `gc --apply`) to an agent: one with its identity set, or one that unset it.
pub fn people_only(project: &super::Project, actor: &Actor, command: &str) -> Result<(), OpsError> {
    no_agent_identity(actor, command)?;
    let facts = CallerFacts::of(actor);
    let records = project.store.live_records().unwrap_or_default();
    // Without a liveness record no agent can be behind the caller but by the mark, and
    // the blackboard need not be read (the command reads it next). An unreadable
    // blackboard cannot say whose records are current: the mark alone decides, and the
    // command reports the blackboard itself (watch, edit repair it).
    let why = if records.0.is_empty() {
        facts.marked()
    } else {
        match project.store.snapshot() {
            Ok(snapshot) => facts.agent_behind(&snapshot.state, &records, Timestamp::now()),
            Err(_) => facts.marked(),
        }
    };
    match why {
        Some(why) => Err(not_for_agents(command, &why).into()),
        None => Ok(()),
    }
}

/// [`people_only`] inside a command's own transaction, against the liveness records
/// the transaction folded (`Tx::live`): a command for people that is one transaction
/// checks there, and reads the records once.
pub(super) fn people_only_in(
    tx: &crate::blackboard::store::Tx,
    facts: &CallerFacts,
    command: &str,
) -> Result<(), Refusal> {
    match facts.agent_behind(&tx.state, tx.live(), tx.now) {
        Some(why) => Err(not_for_agents(command, &why)),
        None => Ok(()),
    }
}

fn not_for_agents(command: &str, why: &str) -> Refusal {
    Refusal::new(
        RuleId::HumanOnly,
        format!("{command} is a command for people, and {why}"),
        "run it from your own terminal, outside any agent's run",
    )
}

/// Refuses a supervisor whose registration is no longer `id`'s current one.
fn fenced(state: &State, id: &AgentId, generation: &str) -> Result<(), Refusal> {
    match state.agents.get(id).map(|a| a.generation.as_deref()) {
        Some(Some(current)) if current == generation => Ok(()),
        Some(_) => Err(Refusal::new(
            RuleId::Superseded,
            format!(
                "{id}'s supervisor (generation {generation}) was superseded by a newer registration"
            ),
            "this supervisor stops; the newer registration's supervisor serves the agent",
        )),
        None => Err(Refusal::new(
            RuleId::Superseded,
            format!(
                "{id}'s supervisor (generation {generation}) was superseded: {id} is no longer registered"
            ),
            "this supervisor stops; start it again to register anew",
        )),
    }
}

/// Before a step outside the blackboard that cannot be undone (publishing a merge):
/// a supervisor checks that its registration is still the current one. The store fences
/// every transaction; this narrows what a supervisor paused for long can do on waking to
/// the moment between this read and the step.
pub fn still_current(store: &Store, actor: &Actor) -> Result<(), OpsError> {
    if let Actor::Supervisor { id, generation } = actor {
        let snapshot = store.snapshot()?;
        // A person's save not yet reconciled is not the blackboard yet (a stale copy may
        // lack this registration): judge by the last committed revision.
        let state = if snapshot.pending_hand_edit {
            store.committed_state().unwrap_or(snapshot.state)
        } else {
            snapshot.state
        };
        fenced(&state, id, generation)?;
    }
    Ok(())
}

/// Establishes `Who` for `actor` against `state` and the liveness records folded into
/// it (`records`: a person's command is refused when an agent is behind it).
pub fn authorize(
    state: &State,
    records: &LiveRecords,
    actor: &Actor,
    authority: Authority,
    facts: &CallerFacts,
    now: Timestamp,
) -> Result<Who, Refusal> {
    match actor {
        Actor::Agent { id, generation } => {
            let Some(agent) = state.agents.get(id) else {
                return Err(Refusal::new(
                    RuleId::Registered,
                    format!("{id} is not registered"),
                    "agents act only while their supervisor keeps them registered",
                ));
            };
            lifecycle::check_generation(id, agent.generation.as_deref(), generation.as_deref())?;
            if agent.role != id.role() {
                return Err(Refusal::new(
                    RuleId::AgentRole,
                    format!("{id} is registered with role {}", agent.role),
                    "fix the agent entry",
                ));
            }
            Ok(match authority {
                Authority::Caller => Who::Agent(id.clone()),
                Authority::Supervisor => Who::Supervisor,
            })
        }
        // Fenced by the store inside every transaction, and by `still_current` before
        // slow work (a dry run, a claim's git work, a merge's publication).
        Actor::Supervisor { .. } | Actor::Liza => Ok(Who::Supervisor),
        Actor::Human => {
            if let Some(why) = facts.agent_behind(state, records, now) {
                return Err(Refusal::new(
                    RuleId::AgentIdentity,
                    format!(
                        "agents act under their own identity: this command has no LIZA_AGENT_ID, but {why}"
                    ),
                    "the agent must use the LIZA_AGENT_ID and LIZA_AGENT_GENERATION its supervisor exported",
                ));
            }
            Ok(match authority {
                Authority::Caller => Who::Human,
                Authority::Supervisor => Who::Supervisor,
            })
        }
    }
}

/// Runs `change` as one transaction: authority checked under the lock, the change
/// applied, the sprint completed if this change finished it, log entries written.
pub fn transition<R>(
    store: &Store,
    actor: &Actor,
    authority: Authority,
    mut change: impl FnMut(&mut State, &Who, Timestamp) -> Result<(Outcome, R), Refusal>,
) -> Result<Transition<R>, OpsError> {
    let facts = CallerFacts::of(actor);
    let committed = store.transact(actor, |tx| {
        let who = authorize(&tx.state, tx.live(), actor, authority, &facts, tx.now)
            .map_err(OpsError::from)?;
        let (mut outcome, value) = change(&mut tx.state, &who, tx.now).map_err(OpsError::from)?;
        if let Some(done) = lifecycle::complete_if_done(&mut tx.state, tx.now) {
            outcome.merge(done);
        }
        if outcome.events.is_empty() {
            return Err(OpsError::Nothing);
        }
        for event in &outcome.events {
            let entry = tx.log_named(&event.action);
            entry.agent = Some(event.agent.clone());
            entry.task = event.task.as_ref().map(ToString::to_string);
            entry.detail = event.detail.clone();
            for (key, value) in &event.fields {
                entry.extra.insert(key, Node::new(value.value()));
            }
        }
        Ok((outcome, value))
    })?;
    let (outcome, value) = committed.value;
    Ok(Transition {
        value,
        outcome,
        revision: committed.revision,
    })
}

/// Runs `change` on a copy of a snapshot, to find out before slow work (git) whether the
/// transaction would be refused. The real transaction checks again.
pub fn dry_run(
    store: &Store,
    actor: &Actor,
    authority: Authority,
    change: impl FnOnce(&mut State, &Who, Timestamp) -> Result<Outcome, Refusal>,
) -> Result<State, OpsError> {
    still_current(store, actor)?;
    let snapshot = store.snapshot()?;
    let now = Timestamp::now();
    let mut state = snapshot.state;
    let who = authorize_on(store, &state, actor, authority, now)?;
    change(&mut state, &who, now)?;
    Ok(state)
}

/// [`authorize`] against a state read outside a transaction (a snapshot, before slow
/// work): the liveness records are read for a person's command alone.
pub(super) fn authorize_on(
    store: &Store,
    state: &State,
    actor: &Actor,
    authority: Authority,
    now: Timestamp,
) -> Result<Who, OpsError> {
    let records = match actor {
        Actor::Human => store.live_records().unwrap_or_default(),
        _ => LiveRecords::default(),
    };
    Ok(authorize(
        state,
        &records,
        actor,
        authority,
        &CallerFacts::of(actor),
        now,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blackboard::Role;

    #[test]
    fn each_role_may_send_its_own_commands_and_the_readers_only() {
        for (role, own, others) in [
            (Role::Coder, "submit-for-review", "submit-verdict"),
            (Role::CodeReviewer, "submit-verdict", "add-task"),
            (Role::Planner, "add-tasks", "handoff"),
        ] {
            assert!(channel_allows(role, own).is_ok());
            assert!(channel_allows(role, "status").is_ok());
            assert_eq!(
                channel_allows(role, others).unwrap_err().rule(),
                Some(RuleId::ChannelCommand)
            );
            for people_or_supervisors in [
                "note",
                "edit",
                "pause",
                "resume",
                "abort",
                "gc",
                "register",
                "heartbeat",
                "claim-task",
                "merge",
                "agent",
                "builtin",
                "init",
                "join",
                "demo",
                "up",
                "watch",
                "retro",
                "release-claim",
                "doctor",
            ] {
                assert!(
                    channel_allows(role, people_or_supervisors).is_err(),
                    "{role}: {people_or_supervisors}"
                );
            }
        }
    }
}
