//! A registered supervisor: startup in the order of specs/supervisor.md, the main loop (abort,
//! pause, find work, wait), heartbeats, signals, and the way out (unregister).

use crate::blackboard::control::Control;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use super::clock::Clock;
use super::heartbeat::{Heartbeats, Pulse};
use super::identity::{check_identity, normalise_role};
use super::policy::{
    self, Action, BackendView, Controls, Exit, Memory, Observation, View, Waiting,
};
use super::ports::{Ports, Spawner};
use super::stop::Stop;
use super::wake::Wake;
use super::{Console, Options, SupervisorError};
use crate::backend::Backend;
use crate::blackboard::StoreError;
use crate::blackboard::liveness::LiveRecords;
use crate::blackboard::log::LogEntry;
use crate::blackboard::log_tally;
use crate::blackboard::node::{Node, Value};
use crate::blackboard::{Actor, AgentId, Role, State, TaskId};
use crate::lifecycle::{LeaseWatch, Leases, Registration, RuleId};
use crate::off_runtime::off_runtime;
use crate::ops::SUPERVISOR_PID_VAR;
use crate::ops::{self, OpsError, Project};

/// One registered supervisor: the agent it serves, its registration, its backend, and the
/// runner around [`policy::decide`] — started by [`Session::start`], run by
/// [`Session::serve`], ended by [`Session::finish`].
pub struct Session {
    pub(super) project: Arc<Project>,
    pub(super) agent: AgentId,
    pub(super) generation: String,
    pub(super) backend: Backend,
    pub(super) options: Options,
    pub(super) console: Arc<dyn Console>,
    /// Where its agents come from.
    pub(super) spawner: Arc<dyn Spawner>,
    /// liza's own executable (`liza worktree-state` reads a live run's worktree).
    pub(super) liza: PathBuf,
    pub(super) wake: Wake,
    /// What heartbeats report (the agent's process group, a usage-limit wait, what the
    /// supervisor waits for), and the thread that beats.
    pub(super) pulse: Pulse,
    heartbeats: Heartbeats,
    /// A signal or a superseded registration: the loop ends, waits end.
    pub(super) stop: Stop,
    /// What the policies remember (`policy::Memory`).
    pub(super) memory: Memory,
    /// Where the policies read the time.
    pub(super) clock: Arc<dyn Clock>,
    /// The tail of the last run's output (usage-limit messages, diagnostics).
    pub(super) last_output: String,
    /// When the last agent run ended, as logged (`agent_run_ended`): alarm keys of crash
    /// loops and usage limits name it, as the watcher's rules do.
    pub(super) last_run_end: Option<crate::blackboard::Timestamp>,
    /// When the run under way started (by the wall clock, and for its wall time):
    /// taken when it is recorded in the ledger.
    pub(super) run_started: Option<(crate::blackboard::Timestamp, std::time::Instant)>,
    /// What the last run reported of usage, until it is recorded in the ledger.
    pub(super) last_usage: Option<liza_model::ledger::RunUsage>,
    /// The backends it may run, its own first, then its fallbacks (specs/ledger.md
    /// *Fallbacks*); `backend` is the one in use.
    pub(super) backends: Vec<Backend>,
    /// Each backend's account, the key its usage limits are shared under.
    pub(super) accounts: Vec<String>,
    /// Which of `backends` is in use.
    pub(super) in_use: usize,
    /// `config.budget.task` is set, as the last look saw: the run counter is given what
    /// the task used only then.
    pub(super) task_budget: bool,
    /// The usage limits this supervisor's runs hit, kept in case the store could not
    /// record them.
    pub(super) local_quota: Vec<liza_model::quota::QuotaHit>,
    /// Since when no agent of this supervisor has run (its start, then each run's end):
    /// a git lock older than that is no live git's of its own (specs/git.md *Git's locks*).
    pub(super) quiet_since: super::clock::Moment,
    /// Milliseconds from the last state change to the wake-up it caused (-1: none
    /// pending); logged as `woke` when the wake-up leads to work.
    pending_wake_us: Arc<AtomicI64>,
    /// Stops what runs beside the planner (its watcher) when the supervisor ends.
    beside_stop: Arc<std::sync::atomic::AtomicBool>,
    /// The reviewer's merge of the queue, on a thread of its own so the reviewer reviews
    /// while the checks run (specs/git.md *The queue*); joined before the supervisor ends.
    pub(super) background_merge: Option<std::thread::JoinHandle<()>>,
    /// How the last run was confined (specs/sandbox.md *Modes*), as heartbeats report it.
    pub(super) confinement: crate::sandbox::Confinement,
    /// A short private directory for the channel's socket, when the agent's scratch
    /// directory's path is too long for a socket address.
    pub(super) socket_dir: std::sync::OnceLock<tempfile::TempDir>,
    /// The other agents' leases as this supervisor watches them on its monotonic clock,
    /// and what it last concluded (specs/blackboard.md *Leases are observed*).
    lease_watch: std::sync::Mutex<(LeaseWatch, Leases)>,
    /// Why there is no work, as of the last look (`lifecycle::idle`), and what the
    /// console was last told of waiting: said once, and again on change.
    idle: std::sync::Mutex<(String, Option<String>)>,
}

impl Session {
    /// Startup steps 1–5, through `ports` to the world.
    pub async fn start(options: Options, ports: Ports) -> Result<Session, SupervisorError> {
        let Ports {
            console,
            spawner,
            clock,
            cwd,
            signals,
            beside_planner,
            liza,
        } = ports;
        let role = normalise_role(&options.role).map_err(SupervisorError::Identity)?;
        let wanted = if options.auto_id {
            None
        } else {
            Some(
                check_identity(options.agent_id.as_deref(), role)
                    .map_err(SupervisorError::Identity)?,
            )
        };
        let project = Project::discover(&cwd).map_err(no_blackboard)?;
        let patient = std::env::var_os("LIZA_LOCK_TIMEOUT").is_none();
        let project = if patient {
            Project {
                root: project.root,
                store: project.store.with_lock_timeout(Duration::from_secs(60)),
            }
        } else {
            project
        };
        let state = project
            .store
            .snapshot()
            .map_err(|e| no_blackboard(e.into()))?
            .state;
        let name = options
            .cli
            .clone()
            .unwrap_or_else(|| state.config.default_cli().to_owned());
        // In the user's cache, not the project: a CLI may refuse a settings file with a
        // parent directory others can write (gemini does), and projects live in /tmp too.
        let settings_dir = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map_or_else(
                || project.store.paths().dir.join("backends"),
                |c| c.join("liza/backends"),
            );
        let mut names = super::backends::names(&name, &state.config);
        if options.interactive {
            // A person's terminal runs the one backend they asked for.
            names.truncate(1);
        }
        let backends = super::backends::resolve(
            &names,
            &super::backends::Wanted {
                config: &state.config,
                model: options.model.as_deref(),
                interactive: options.interactive,
                role,
                spawner: spawner.as_ref(),
                root: &project.root,
                settings_dir: &settings_dir,
            },
        )?;
        let name = names.join(",");
        let accounts: Vec<String> = backends
            .iter()
            .map(|b| super::backends::account(b, &|var| std::env::var(var).ok()))
            .collect();
        let backend = backends[0].clone();
        if let Some(identity) = &options.identity {
            // Fail fast (specs/builtin-agent.md *Identities*): a bad identities.yaml or an
            // unknown identity is found before the first run, not in every run.
            crate::builtin::identities::find(&project.root, identity)
                .map_err(SupervisorError::AgentIdentity)?;
        }
        if options.no_sandbox {
            crate::sandbox::turn_off_for_process("liza-agent --no-sandbox");
        }
        let confinement = crate::sandbox::Confinement::for_process(&state.config.sandbox())
            .map_err(SupervisorError::SandboxRequired)?;
        let info = Registration {
            pid: Some(i64::from(std::process::id())),
            terminal: terminal(),
            cli: Some(name),
            identity: options.identity.clone(),
            holder_dead: false,
            holder_alive: false,
            supervised: true,
        };
        let (agent, generation) =
            register(&project, role, wanted, &info, &|line| console.info(line))?;
        // An interrupted merge is finished or dropped when a supervisor starts.
        let actor = Actor::Supervisor {
            id: agent.clone(),
            generation: generation.clone(),
        };
        match ops::recover_merges(&project, &actor) {
            Ok(recovered) => {
                for r in recovered {
                    console.info(&format!(
                        "recovered the interrupted merge of {} ({})",
                        r.task, r.action
                    ));
                }
            }
            Err(e) => tracing::warn!(error = %e, "merge recovery failed"),
        }
        console.info(&format!(
            "{agent} registered (generation {generation}), backend {}",
            backend.name
        ));
        console.info(&confinement_line(&agent, &confinement));
        let first_task = options.task.as_deref().and_then(|t| TaskId::parse(t).ok());
        let wake = Wake::start(&project.store);
        let project = Arc::new(project);
        let pulse = Pulse::new(project.clone(), agent.clone(), generation.clone());
        pulse.set_sandbox(&confinement);
        pulse.set_cli(&backend.name);
        let session = Session {
            project,
            agent,
            generation,
            backend,
            options,
            console,
            spawner,
            liza,
            wake,
            pulse,
            heartbeats: Heartbeats::default(),
            stop: Stop::default(),
            memory: Memory::new(first_task, clock.now()),
            quiet_since: clock.now().at,
            clock,
            last_output: String::new(),
            last_run_end: None,
            run_started: None,
            last_usage: None,
            backends,
            accounts,
            in_use: 0,
            task_budget: false,
            local_quota: Vec::new(),
            pending_wake_us: Arc::new(AtomicI64::new(-1)),
            beside_stop: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            background_merge: None,
            confinement,
            socket_dir: std::sync::OnceLock::new(),
            lease_watch: std::sync::Mutex::default(),
            idle: std::sync::Mutex::default(),
        };
        if let crate::sandbox::Confinement::Unconfined {
            state: crate::sandbox::Unconfined::Unavailable,
            ..
        } = &session.confinement
        {
            session
                .alarm(
                    ops::alarms::Level::Warn,
                    "SANDBOX_UNAVAILABLE",
                    &confinement_line(&session.agent, &session.confinement),
                    &format!("sandbox:{}:{}", session.agent, session.generation),
                )
                .await;
        }
        if role == Role::Planner
            && let Some(beside) = beside_planner
        {
            session.start_beside(beside);
        }
        session.start_heartbeats(&state);
        if signals {
            session.watch_signals();
        }
        Ok(session)
    }

    pub(super) fn role(&self) -> Role {
        self.agent.role()
    }

    /// The main loop: observe, let the policy decide, execute; returns the exit code.
    pub async fn serve(&mut self) -> Result<i32, SupervisorError> {
        let mut observation = Observation::Look;
        let mut last: Option<(State, Controls, Leases)> = None;
        loop {
            let stopping = match self.stop.signal() {
                Some(signal) => Some(Observation::Signalled(signal)),
                None => self.superseded_by().map(Observation::Superseded),
            };
            // Once stopping, the blackboard is not read again (nor a hand edit reconciled).
            let (state, controls, leases) = match (&stopping, last.take()) {
                (Some(_), Some(seen)) => seen,
                _ => self.observe().await?,
            };
            // Before a look: the backend to run and what holds runs back (the shared
            // quota, the budgets), read outside any transaction.
            let spending = if stopping.is_none() && matches!(observation, Observation::Look) {
                self.spending(&state).await
            } else {
                super::policy::spending::Spending::default()
            };
            let (agent, generation) = (self.agent.clone(), self.generation.clone());
            let backend = self.backend.name.clone();
            let auth_hint = self.backend.spec.map_or(
                "set the key the agent CLI documents, then start the supervisor again",
                |s| s.auth_hint,
            );
            let view = View {
                state: &state,
                agent: &agent,
                generation: &generation,
                controls,
                leases: &leases,
                once: self.options.once,
                backend: BackendView {
                    name: &backend,
                    soft_and_hard: self.backend.reports_soft_and_hard_failures(),
                    auth_hint,
                    runs_commands: self.backend.runs_commands,
                    fallbacks: self.backends.len() > 1,
                },
                spending,
            };
            if let Some(stop) = stopping {
                // A signal still lets what a finished run left be reconciled (a verdict
                // voided, a claim released, work saved, a task blocked at its limit);
                // a superseded registration writes nothing more.
                // What liza does for an agent that cannot run commands is finished
                // first, and the run reconciled with what came of it.
                let mut ended = (matches!(stop, Observation::Signalled(_))
                    && !matches!(observation, Observation::Look))
                .then_some(observation);
                while let Some(seen) = ended.take() {
                    let pending = policy::decide(&view, &mut self.memory, seen, self.clock.now());
                    for action in pending {
                        if action.acts_for_agent() {
                            ended = Some(self.act_for_agent(action).await);
                        } else if action.is_effect() {
                            self.apply(action).await;
                        }
                    }
                }
                observation = stop;
            }
            let actions = policy::decide(&view, &mut self.memory, observation, self.clock.now());
            observation = Observation::Look;
            if let Ok(mut idle) = self.idle.lock() {
                idle.0 = crate::lifecycle::idle::explain(&state, &self.agent);
            }
            for action in actions {
                match self.execute(action).await? {
                    Executed::Done => {}
                    Executed::Observed(next) => observation = next,
                    Executed::Exit(code) => return code,
                }
            }
            last = Some((state, controls, leases));
        }
    }

    /// Records what the supervisor now waits for (`None`: it works); a change is
    /// heartbeaten at once, so `liza status` says it as soon as it holds.
    async fn say_waiting(&self, why: Option<Waiting>) {
        if self.pulse.set_waiting(why) {
            self.heartbeat_now().await;
        }
        // Said on the console once, and again when it changes.
        let said = why.map(|why| match why {
            Waiting::Work => self.idle.lock().map(|i| i.0.clone()).unwrap_or_default(),
            other => other.sentence().to_owned(),
        });
        if let Ok(mut idle) = self.idle.lock()
            && idle.1 != said
        {
            idle.1.clone_from(&said);
            if let Some(line) = said.filter(|l| !l.is_empty()) {
                self.console.info(&format!("{}: {line}", self.agent));
            }
        }
    }

    /// The blackboard (a hand edit reconciled first), the control files and what the
    /// leases it holds show, read off the runtime's thread.
    async fn observe(&self) -> Result<(State, Controls, Leases), SupervisorError> {
        let state = self.snapshot_reconciled().await?;
        // A person's save this supervisor's transactions set aside, said where it runs.
        for told in ops::take_set_aside() {
            self.console.info(&told);
        }
        let live = self
            .blocking(|project| project.store.live_records().map_err(OpsError::from))
            .await?;
        let leases = self.watch_leases(&state, &live);
        let controls = self
            .blocking(|project| project.store.control_flags().map_err(OpsError::from))
            .await?;
        let controls = Controls {
            abort: controls.is_raised(Control::Abort),
            pause: controls.is_raised(Control::Pause),
            checkpoint: controls.is_raised(Control::Checkpoint),
        };
        Ok((state, controls, leases))
    }

    /// Watches the leases of `state` one more time, on this supervisor's monotonic clock.
    fn watch_leases(&self, state: &State, live: &LiveRecords) -> Leases {
        let at = self.clock.now().at.since_start();
        let dead = ops::leases::dead_holders(state, live);
        let mut watch = self.lease_watch.lock().unwrap_or_else(|e| e.into_inner());
        let leases = watch.0.observe(state, live, at).with_dead(dead);
        watch.1 = leases.clone();
        leases
    }

    /// What this supervisor last concluded about the leases it watches.
    pub(super) fn leases(&self) -> Leases {
        let watch = self.lease_watch.lock().unwrap_or_else(|e| e.into_inner());
        watch.1.clone()
    }

    /// Carries out what liza does for an agent that cannot run commands; the run is
    /// reported again with what came of it.
    async fn act_for_agent(&mut self, action: Action) -> Observation {
        match action {
            Action::SubmitForAgent(run) => self.submit_for_agent(*run).await,
            Action::VerdictForAgent {
                run,
                verdict,
                commit,
            } => self.verdict_for_agent(*run, verdict, commit).await,
            other => unreachable!("{other:?} is not done for an agent"),
        }
    }

    /// Carries out one action of the policy.
    async fn execute(&mut self, action: Action) -> Result<Executed, SupervisorError> {
        if matches!(
            action,
            Action::Work(_) | Action::Review(_) | Action::Merge(_) | Action::PlannerTurn
        ) {
            self.say_waiting(None).await;
        }
        let observed = match action {
            Action::Work(task) => self.work(task).await?,
            Action::Review(task) => self.claim_and_review(task).await?,
            Action::Merge(task) => self.merge(task).await,
            Action::PlannerTurn => self.planner_turn().await?,
            Action::Acknowledge(shown) => self.acknowledge(shown).await?,
            for_agent @ (Action::SubmitForAgent(_) | Action::VerdictForAgent { .. }) => {
                self.act_for_agent(for_agent).await
            }
            Action::Wait {
                until,
                on_change,
                why,
            } => {
                self.say_waiting(Some(why)).await;
                let d = self.clock.now().at.until(until);
                if on_change {
                    self.wait(d).await;
                } else {
                    self.sleep(d).await;
                }
                return Ok(Executed::Done);
            }
            Action::Exit(exit) => {
                return Ok(Executed::Exit(match exit {
                    Exit::Done => Ok(super::error::EXIT_DONE),
                    Exit::Signal(signal) => Ok(super::error::EXIT_SIGNAL_BASE + signal),
                    Exit::Superseded(why) => Err(SupervisorError::Superseded(why)),
                    Exit::ClaimsFailing { count, last } => {
                        Err(SupervisorError::ClaimsFailing { count, last })
                    }
                    Exit::AuthRequired {
                        backend,
                        line,
                        hint,
                    } => Err(SupervisorError::AuthRequired {
                        name: backend,
                        message: line,
                        hint,
                    }),
                }));
            }
            effect => {
                self.apply(effect).await;
                return Ok(Executed::Done);
            }
        };
        if matches!(
            observed,
            Observation::CoderRunEnded(_)
                | Observation::ReviewRunEnded(_)
                | Observation::MergeEnded { ran: true, .. }
                | Observation::PlannerTurnEnded(Some(_))
        ) {
            let woke_us = self.pending_wake_us.swap(-1, Ordering::SeqCst);
            if woke_us >= 0 {
                self.log_wake(woke_us).await;
            }
        }
        Ok(Executed::Observed(observed))
    }

    /// Unregisters (only this generation) and stops heartbeats' effect.
    pub async fn finish(&mut self) {
        self.beside_stop.store(true, Ordering::SeqCst);
        // A merge at work ends first: cut, it would leave intents for the next merger.
        if let Some(merge) = self.background_merge.take() {
            self.console
                .info("waiting for the merge of the queue to end");
            let _ = off_runtime(move || merge.join()).await;
        }
        self.stop_heartbeats();
        if self.superseded_by().is_some() {
            // The entry is the newer registration's now.
            return;
        }
        let project = self.project.clone();
        let (agent, generation) = (self.agent.clone(), self.generation.clone());
        let result = off_runtime(move || {
            let actor = Actor::Supervisor {
                id: agent.clone(),
                generation: generation.clone(),
            };
            ops::unregister(&project, &actor, &agent, Some(&generation))
        })
        .await;
        if let Err(e) = result
            && !matches!(e, OpsError::Nothing)
        {
            tracing::warn!(error = %e, "could not unregister");
        }
    }

    /// Waits up to `d` for a state change or a signal.
    pub(super) async fn wait(&self, d: Duration) {
        let stop = self.stop.clone();
        tokio::select! {
            woken = self.wake.wait(d) => {
                if woken {
                    self.note_wake();
                }
            }
            _ = stop.asked() => {}
        }
    }

    /// Remembers how long after state.yaml last changed this wake-up came (a wake-up by a
    /// control file, or long after the change, is not a state change's latency).
    fn note_wake(&self) {
        let path = self.project.store.paths().state();
        let Some(changed) = std::fs::metadata(&path)
            .ok()
            .and_then(|m| m.modified().ok())
        else {
            return;
        };
        if let Ok(latency) = std::time::SystemTime::now().duration_since(changed)
            && latency < Duration::from_secs(10)
        {
            self.pending_wake_us
                .store(latency.as_micros() as i64, Ordering::SeqCst);
        }
    }

    /// Logs a wake-up that led to work, with its latency (specs/operations.md *Metrics*).
    async fn log_wake(&self, micros: i64) {
        let mut entry = LogEntry::new(
            crate::blackboard::Timestamp::now(),
            self.agent.as_str(),
            log_tally::WOKE,
        );
        entry.extra.insert(
            "wake_latency_ms",
            Node::new(Value::Float(micros as f64 / 1000.0)),
        );
        self.append_log(entry).await;
    }

    /// Appends a log entry that changes no state (wake-ups, run ends).
    pub(super) async fn append_log(&self, entry: LogEntry) {
        if self.superseded_by().is_some() {
            return;
        }
        let appended = self
            .blocking(move |project| project.store.append_log(&[entry]))
            .await;
        if let Err(e) = appended {
            tracing::warn!(error = %e, "could not append to log.yaml");
        }
    }

    /// What runs beside the planner's supervisor (`liza watch`, put there by the front),
    /// on a thread of its own until the supervisor ends.
    fn start_beside(&self, beside: super::ports::Beside) {
        let (root, stop, console) = (
            self.project.root.clone(),
            self.beside_stop.clone(),
            self.console.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name("liza-watch".into())
            .spawn(move || beside(root, stop, console));
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "could not start the watcher; run `liza watch` yourself");
        }
    }

    /// Sleeps `d` (backoff) unless a signal comes.
    pub(super) async fn sleep(&self, d: Duration) {
        let stop = self.stop.clone();
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = stop.asked() => {}
        }
    }

    /// This supervisor's agent, with its generation, as the author of what liza submits
    /// for an agent that cannot run commands.
    pub(super) fn as_agent(&self) -> Actor {
        Actor::Agent {
            id: self.agent.clone(),
            generation: Some(self.generation.clone()),
        }
    }

    /// A number that differs between supervisors and between calls: jitter for the
    /// policies (a retry after a failed claim, a usage-limit wait).
    pub(super) fn seed(&self) -> u64 {
        let now = self.clock.now();
        u64::from(std::process::id())
            ^ self
                .generation
                .bytes()
                .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
            ^ now.at.since_start().as_nanos() as u64
    }

    /// A snapshot; a hand edit it shows is reconciled first (applied, merged or set
    /// aside), so a person's save takes effect within a wake-up, not at the next claim.
    async fn snapshot_reconciled(&self) -> Result<State, SupervisorError> {
        let snapshot = self
            .blocking(|project| project.store.snapshot())
            .await
            .map_err(OpsError::from)?;
        if !snapshot.pending_hand_edit {
            return Ok(snapshot.state);
        }
        let reconciled = self.blocking(|project| project.store.reconcile()).await;
        if let Err(e) = reconciled {
            tracing::warn!(error = %e, "could not reconcile the hand edit of state.yaml");
        }
        self.snapshot().await
    }

    /// The blackboard, parsed off the runtime's thread (a large state takes a while).
    pub(super) async fn snapshot(&self) -> Result<State, SupervisorError> {
        let snapshot = self.blocking(|project| project.store.snapshot()).await;
        Ok(snapshot.map_err(OpsError::from)?.state)
    }

    /// Who this supervisor's writes are by: its registration, fenced by the generation.
    pub(super) fn actor(&self) -> Actor {
        Actor::Supervisor {
            id: self.agent.clone(),
            generation: self.generation.clone(),
        }
    }

    /// Runs a write as this supervisor ([`Session::actor`]) on the blocking pool. A write
    /// refused because the registration was superseded stops the supervisor: nothing it
    /// does after that first refusal changes the blackboard.
    pub(super) async fn write<R: Send + 'static>(
        &self,
        work: impl FnOnce(&Project, &Actor) -> Result<R, OpsError> + Send + 'static,
    ) -> Result<R, OpsError> {
        let actor = self.actor();
        let result = self.blocking(move |project| work(project, &actor)).await;
        if let Err(e) = &result
            && e.superseded()
        {
            self.stop.supersede(e.to_string());
        }
        result
    }

    /// Why this supervisor was superseded, once it was.
    pub(super) fn superseded_by(&self) -> Option<String> {
        self.stop.superseded_by()
    }

    /// Runs blocking work (store, git, merges) on the blocking pool.
    pub(super) async fn blocking<R: Send + 'static>(
        &self,
        work: impl FnOnce(&Project) -> R + Send + 'static,
    ) -> R {
        let project = self.project.clone();
        off_runtime(move || work(&project)).await
    }

    /// Raises an alarm once per key (a file lock, or a request to etcd: on the blocking
    /// pool), and shows it.
    pub(super) async fn alarm(
        &self,
        level: ops::alarms::Level,
        category: &str,
        message: &str,
        key: &str,
    ) {
        let (category, message, key) = (category.to_owned(), message.to_owned(), key.to_owned());
        let raised = self
            .blocking(move |project| ops::alarms::raise(project, level, &category, &message, &key))
            .await;
        match raised {
            Ok(Some(line)) => self.console.info(&line),
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "could not raise the alarm"),
        }
    }

    /// The agent's environment additions (specs/supervisor.md *Backends*).
    pub(super) fn agent_env(
        &self,
        task: Option<&TaskId>,
        workdir: &std::path::Path,
    ) -> Vec<(String, String)> {
        let mut env = vec![
            ("LIZA_AGENT_ID".to_owned(), self.agent.to_string()),
            ("LIZA_AGENT_GENERATION".to_owned(), self.generation.clone()),
            ("LIZA_ROLE".to_owned(), self.role().id_prefix().to_owned()),
            (
                "LIZA_PROJECT_ROOT".to_owned(),
                self.project.root.display().to_string(),
            ),
            ("LIZA_WORKTREE".to_owned(), workdir.display().to_string()),
            // The agent's commands use this supervisor's blackboard, however it was named.
            (
                "LIZA_STORE".to_owned(),
                self.project
                    .store
                    .address()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
            ),
            // The mark of a supervised process that `setsid` does not remove (people's
            // commands refuse it; see ops::authority).
            (
                SUPERVISOR_PID_VAR.to_owned(),
                std::process::id().to_string(),
            ),
        ];
        if let Some(task) = task {
            env.push(("LIZA_TASK_ID".to_owned(), task.to_string()));
        }
        if let Some(identity) = &self.options.identity {
            env.push(("LIZA_IDENTITY".to_owned(), identity.clone()));
        }
        let own_dir = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(PathBuf::from));
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs: Vec<PathBuf> = own_dir.into_iter().collect();
        dirs.extend(std::env::split_paths(&path));
        if let Ok(joined) = std::env::join_paths(dirs) {
            env.push(("PATH".to_owned(), joined.to_string_lossy().into_owned()));
        }
        env.extend(self.backend.env.iter().cloned());
        env
    }

    /// Heartbeats on a thread of their own (`heartbeat.rs`).
    fn start_heartbeats(&self, state: &State) {
        let every = Duration::from_secs(state.config.heartbeat_interval().max(1).unsigned_abs());
        self.heartbeats
            .start(self.pulse.clone(), every, self.stop.clone());
    }

    /// Stops the heartbeats (before unregistering: no beat after the entry is gone).
    fn stop_heartbeats(&self) {
        self.heartbeats.stop();
    }

    /// Writes a heartbeat now (e.g. right after the agent started, to record its group).
    pub(super) async fn heartbeat_now(&self) {
        let (pulse, stop) = (self.pulse.clone(), self.stop.clone());
        self.blocking(move |_| pulse.beat_or_supersede(&stop)).await;
    }

    fn watch_signals(&self) {
        use tokio::signal::unix::{SignalKind, signal};
        let stop = self.stop.clone();
        tokio::spawn(async move {
            // SIGHUP (the terminal or tmux pane closed) stops as gracefully as SIGTERM:
            // the work is saved and the agent unregistered, never left for a lease to lapse.
            let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
                signal(SignalKind::hangup()),
            ) else {
                return;
            };
            let sig = tokio::select! {
                _ = int.recv() => 2,
                _ = term.recv() => 15,
                _ = hup.recv() => 1,
            };
            stop.signalled(sig);
        });
    }
}

/// What executing an action led to.
enum Executed {
    /// An effect, carried out.
    Done,
    /// Work ran: what happened, for the next decision.
    Observed(Observation),
    /// The supervisor stops.
    Exit(Result<i32, SupervisorError>),
}

fn no_blackboard(e: OpsError) -> SupervisorError {
    match &e {
        OpsError::NoProject { .. } => SupervisorError::NoBlackboard(e.to_string()),
        // A missing blackboard gets the `liza init` hint; an invalid one keeps its findings.
        OpsError::Store(StoreError::NotInitialized { .. } | StoreError::StateMissing { .. }) => {
            SupervisorError::NoBlackboard(e.to_string())
        }
        _ => SupervisorError::Ops(e),
    }
}

/// Registers `wanted`, or with `--auto-id` the lowest free `<role>-N`.
fn register(
    project: &Project,
    role: Role,
    wanted: Option<AgentId>,
    info: &Registration,
    say: &dyn Fn(&str),
) -> Result<(AgentId, String), SupervisorError> {
    let ids: Vec<AgentId> = match wanted {
        Some(id) => vec![id],
        None => (1..=999)
            .filter_map(|n| AgentId::parse(&format!("{}-{n}", role.id_prefix())).ok())
            .collect(),
    };
    let single = ids.len() == 1;
    let mut last = None;
    // One id asked for: its earlier registration is watched until seen silent. Any id
    // will do: a free one is taken rather than waiting for one.
    let nothing_watched = crate::lifecycle::Leases::default();
    let check = if single {
        ops::LeaseCheck::WatchNow(say)
    } else {
        ops::LeaseCheck::Observed(&nothing_watched)
    };
    for id in ids {
        match ops::register(project, &Actor::Human, &id, info, check) {
            Ok(done) => return Ok((id, done.value)),
            Err(e) if !single && e.rule() == Some(RuleId::Collision) => last = Some(e),
            Err(e) => return Err(SupervisorError::Registration(e)),
        }
    }
    Err(SupervisorError::Registration(
        last.unwrap_or(OpsError::Nothing),
    ))
}

/// What the supervisor says of its agent's confinement at start (loudly when there is
/// none).
pub(super) fn confinement_line(
    agent: &AgentId,
    confinement: &crate::sandbox::Confinement,
) -> String {
    match confinement {
        crate::sandbox::Confinement::Sandboxed(bwrap) => {
            format!("{agent}: runs sandboxed ({})", bwrap.version)
        }
        other => format!(
            "{agent}: runs UNSANDBOXED, with your user's full access to this machine: {}",
            other.note()
        ),
    }
}

/// The controlling terminal, for the COLLISION message.
fn terminal() -> Option<String> {
    std::fs::read_link("/proc/self/fd/0")
        .ok()
        .map(|p| p.display().to_string())
        .filter(|p| p.starts_with("/dev/"))
}
