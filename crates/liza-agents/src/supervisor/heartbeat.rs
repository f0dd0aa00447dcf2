//! Heartbeats (specs/blackboard.md *Liveness*): what one reports — the agent's running process
//! group, a usage-limit wait, what the supervisor waits for, its own pid — and the thread
//! that beats on time whatever the supervisor is doing. A beat refused because the
//! registration was replaced supersedes the supervisor.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::policy::Waiting;
use super::stop::Stop;
use crate::blackboard::{Actor, AgentId, Timestamp};
use crate::ops::{self, OpsError, Project, RuleId};

/// What a heartbeat reports, shared by the runner (which updates it) and the thread.
#[derive(Clone)]
pub(super) struct Pulse {
    project: Arc<Project>,
    agent: AgentId,
    generation: String,
    /// The running agent's process group (0: none).
    pgid: Arc<AtomicI64>,
    /// A usage-limit wait as a Unix time (0: none), so `liza status` says until when.
    usage_limit_until: Arc<AtomicI64>,
    /// What the supervisor waits for while it runs nothing.
    waiting: Arc<Mutex<Option<Waiting>>>,
    /// Whether the agent runs sandboxed (`on`, `off`, `unavailable`) and the note.
    sandbox: Arc<Mutex<(String, String)>>,
    /// The backend its agent runs on now (a fallback while its own is limited).
    cli: Arc<Mutex<String>>,
}

impl Pulse {
    pub(super) fn new(project: Arc<Project>, agent: AgentId, generation: String) -> Pulse {
        Pulse {
            project,
            agent,
            generation,
            pgid: Arc::default(),
            usage_limit_until: Arc::default(),
            waiting: Arc::default(),
            sandbox: Arc::default(),
            cli: Arc::default(),
        }
    }

    /// Records the backend the agent runs on now.
    pub(super) fn set_cli(&self, name: &str) {
        if let Ok(mut slot) = self.cli.lock() {
            name.clone_into(&mut slot);
        }
    }

    /// Records how the agent's runs are confined.
    pub(super) fn set_sandbox(&self, confinement: &crate::sandbox::Confinement) {
        if let Ok(mut slot) = self.sandbox.lock() {
            *slot = (confinement.state_name().to_owned(), confinement.note());
        }
    }

    pub(super) fn set_pgid(&self, pgid: i64) {
        self.pgid.store(pgid, Ordering::SeqCst);
    }

    pub(super) fn set_usage_limit(&self, until: Option<Timestamp>) {
        let unix = until.map_or(0, Timestamp::unix);
        self.usage_limit_until.store(unix, Ordering::SeqCst);
    }

    /// Records what the supervisor waits for; whether that changed.
    pub(super) fn set_waiting(&self, why: Option<Waiting>) -> bool {
        match self.waiting.lock() {
            Ok(mut slot) if *slot != why => {
                *slot = why;
                true
            }
            _ => false,
        }
    }

    /// One heartbeat, as the supervisor of its registration.
    pub(super) fn beat(&self) -> Result<ops::Heartbeat, OpsError> {
        let pgid = self.pgid.load(Ordering::SeqCst);
        let until = self.usage_limit_until.load(Ordering::SeqCst);
        let waiting = self.waiting.lock().ok().and_then(|w| *w);
        let given = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        let sandbox = match self.sandbox.lock() {
            Ok(s) => (given(&s.0), given(&s.1)),
            Err(_) => (None, None),
        };
        let facts = ops::BeatFacts {
            pgid: (pgid > 0).then_some(pgid),
            usage_limit_until: (until > 0).then(|| Timestamp::from_unix(until)),
            supervisor_pid: Some(i64::from(std::process::id())),
            waiting: waiting.map(|w| w.as_str().to_owned()),
            sandbox: sandbox.0,
            sandbox_note: sandbox.1,
            cli: self.cli.lock().ok().and_then(|c| given(&c)),
        };
        let actor = Actor::Supervisor {
            id: self.agent.clone(),
            generation: self.generation.clone(),
        };
        ops::heartbeat(
            &self.project,
            &actor,
            &self.agent,
            Some(&self.generation),
            &facts,
        )
    }

    /// A beat whose refusal means the registration is gone supersedes the supervisor.
    pub(super) fn beat_or_supersede(&self, stop: &Stop) -> bool {
        match self.beat() {
            Err(e) if registration_gone(&e) => {
                stop.supersede(e.to_string());
                false
            }
            Err(e) => {
                tracing::warn!(error = %e, "heartbeat failed");
                true
            }
            Ok(_) => true,
        }
    }
}

/// Whether a heartbeat was refused because this registration is no longer the agent's:
/// registered anew under another generation, or unregistered.
fn registration_gone(e: &OpsError) -> bool {
    matches!(
        e.rule(),
        Some(RuleId::StaleGeneration | RuleId::Registered | RuleId::AgentGeneration)
    )
}

/// The heartbeat thread: beats every `every` on a thread of its own, so nothing the
/// supervisor does — git on a large repository, parsing a large state, a stalled
/// filesystem — delays a beat past the lease.
#[derive(Default)]
pub(super) struct Heartbeats {
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<std::thread::Thread>>,
}

impl Heartbeats {
    pub(super) fn start(&self, pulse: Pulse, every: Duration, stop: Stop) {
        let done = self.stop.clone();
        let spawned = std::thread::Builder::new()
            .name("liza-heartbeat".into())
            .spawn(move || {
                let mut next = Instant::now();
                while !done.load(Ordering::SeqCst) {
                    let now = Instant::now();
                    if now < next {
                        std::thread::park_timeout(next - now);
                        continue;
                    }
                    next = now + every;
                    if !pulse.beat_or_supersede(&stop) {
                        return;
                    }
                }
            });
        match spawned {
            Ok(handle) => {
                if let Ok(mut slot) = self.thread.lock() {
                    *slot = Some(handle.thread().clone());
                }
            }
            Err(e) => tracing::error!(error = %e, "could not start the heartbeat thread"),
        }
    }

    /// Stops the beats (before unregistering: no beat after the entry is gone).
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Ok(slot) = self.thread.lock()
            && let Some(thread) = slot.as_ref()
        {
            thread.unpark();
        }
    }
}
