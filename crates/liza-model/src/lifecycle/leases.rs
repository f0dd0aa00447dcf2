//! Whether a lease has lapsed, decided on the claimant's own monotonic clock
//! (specs/blackboard.md *Leases are observed*): a lease is taken over only when its holder
//! was seen silent — nothing of its lease and heartbeat changing — for the lease period,
//! never because the lease's timestamp, written by another process or host, is earlier
//! than this process's wall clock. A clock two hours ahead therefore takes nothing from a
//! live agent, and a dead holder whose clock ran ahead keeps nothing for long.
//!
//! [`LeaseWatch`] remembers what it saw and when (the caller passes its monotonic time);
//! [`Leases`] is what it concluded, handed to the pure rules of this module's siblings.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::liveness::LiveRecords;
use crate::model::{State, TaskStatus};
use crate::{AgentId, TaskId, Timestamp};

/// One lease a claimant may want to take over.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LeaseKey {
    /// An agent's registration.
    Agent(AgentId),
    /// A coder's claim on a CLAIMED task.
    Task(TaskId),
    /// A reviewer's claim on a task under review.
    Review(TaskId),
}

/// What changes while a lease's holder is alive: the lease, and the holder's heartbeat as
/// the blackboard folds it and as its own liveness record has it (a holder whose clock
/// went back writes records the fold keeps below the state's values, and still lives).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseSign {
    holder: AgentId,
    lease: Option<Timestamp>,
    generation: Option<String>,
    heartbeat: Option<Timestamp>,
    agent_lease: Option<Timestamp>,
    record: Option<(Timestamp, Timestamp)>,
}

/// The holder of `key` and what shows it alive; `None` when nobody holds it.
pub fn sign(state: &State, live: &LiveRecords, key: &LeaseKey) -> Option<LeaseSign> {
    let (holder, lease) = match key {
        LeaseKey::Agent(id) => (id.clone(), state.agents.get(id)?.lease_expires),
        LeaseKey::Task(id) => {
            let t = state.task(id)?;
            let lease = (t.status == TaskStatus::Claimed).then_some(t.lease_expires);
            (t.assigned_to.clone()?, lease.flatten())
        }
        LeaseKey::Review(id) => {
            let t = state.task(id)?;
            (t.reviewing_by.clone()?, t.review_lease_expires)
        }
    };
    let agent = state.agents.get(&holder);
    Some(LeaseSign {
        lease,
        generation: agent.and_then(|a| a.generation.clone()),
        heartbeat: agent.and_then(|a| a.heartbeat),
        agent_lease: agent.and_then(|a| a.lease_expires),
        record: live
            .current(state, &holder)
            .map(|r| (r.heartbeat, r.lease_expires)),
        holder,
    })
}

/// Every lease of `state`, with its sign.
fn signs(state: &State, live: &LiveRecords) -> Vec<(LeaseKey, LeaseSign)> {
    let agents = state
        .agents
        .iter()
        .map(|(id, _)| LeaseKey::Agent(id.clone()));
    let tasks = state.tasks.iter().flat_map(|t| {
        let claimed = (t.status == TaskStatus::Claimed).then(|| LeaseKey::Task(t.id.clone()));
        let review = t
            .reviewing_by
            .is_some()
            .then(|| LeaseKey::Review(t.id.clone()));
        claimed.into_iter().chain(review)
    });
    agents
        .chain(tasks)
        .filter_map(|key| sign(state, live, &key).map(|s| (key, s)))
        .collect()
}

/// What a claimant concluded about each lease it watched.
#[derive(Debug, Clone, Default)]
pub struct Leases {
    period: Duration,
    /// Each lease watched: the sign seen, and for how long it has not changed.
    silent: HashMap<LeaseKey, (LeaseSign, Duration)>,
    /// The leases seen to change while watched: their holders live.
    renewed: HashSet<LeaseKey>,
    /// Holders known dead without a clock (their process is gone on this host), by id and
    /// the generation that died: a holder registered again since is not dead.
    dead: HashSet<(AgentId, String)>,
    /// The liveness records the conclusions were drawn from.
    live: LiveRecords,
    /// A lease whose holder is no longer registered (its supervisor stopped and left,
    /// `liza-agent --once` done) has lapsed: for a person's one-shot command, which
    /// nothing of that holder can answer. (A supervisor still waits the lease period,
    /// so that the same agent restarted resumes its task.)
    unregistered_lapsed: bool,
}

impl Leases {
    /// Whether `key` in `state` has lapsed: nobody holds it, its holder is dead, or it was
    /// seen unchanged for the lease period — and still is what was seen.
    pub fn lapsed(&self, state: &State, key: &LeaseKey) -> bool {
        self.left(state, key) == Some(Duration::ZERO)
    }

    /// How long until `key` lapses if its holder stays silent; `Some(ZERO)` when it has,
    /// `None` when it changed since it was watched (or was never watched).
    pub fn left(&self, state: &State, key: &LeaseKey) -> Option<Duration> {
        let Some(now) = sign(state, &self.live, key) else {
            return Some(Duration::ZERO);
        };
        if self.unregistered_lapsed && state.agents.get(&now.holder).is_none() {
            return Some(Duration::ZERO);
        }
        if let Some(generation) = &now.generation
            && self
                .dead
                .contains(&(now.holder.clone(), generation.clone()))
        {
            return Some(Duration::ZERO);
        }
        let (seen, silent) = self.silent.get(key)?;
        (*seen == now).then(|| self.period.saturating_sub(*silent))
    }

    /// The same conclusions, with `dead` (agent and generation) known to have no live
    /// process behind them.
    pub fn with_dead(mut self, dead: impl IntoIterator<Item = (AgentId, String)>) -> Leases {
        self.dead.extend(dead);
        self
    }

    /// The same conclusions, for a person's one-shot command: a holder no longer
    /// registered holds nothing.
    pub fn unregistered_lapsed(mut self) -> Leases {
        self.unregistered_lapsed = true;
        self
    }

    /// The holder of `key` and how long it was watched, for a refusal's message.
    pub fn watched_for(&self, key: &LeaseKey) -> Option<Duration> {
        self.silent.get(key).map(|(_, d)| *d)
    }

    /// Whether `key` was seen to change while it was watched: its holder lives.
    pub fn renewed(&self, key: &LeaseKey) -> bool {
        self.renewed.contains(key)
    }

    /// The lease period the conclusions were drawn against.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Every lease of `state` seen silent for the period (the rules' unit tests).
    #[cfg(test)]
    pub fn all_silent(state: &State) -> Leases {
        let mut watch = LeaseWatch::new();
        watch.observe(state, &LiveRecords::default(), Duration::ZERO);
        watch.observe(state, &LiveRecords::default(), Duration::from_secs(1 << 40))
    }
}

/// A claimant's memory of the leases it saw: for each, the sign and the moment (on the
/// claimant's monotonic clock) it last changed.
#[derive(Debug, Clone, Default)]
pub struct LeaseWatch {
    seen: HashMap<LeaseKey, (LeaseSign, Duration)>,
    renewed: HashSet<LeaseKey>,
}

impl LeaseWatch {
    /// A watch that has seen nothing yet.
    pub fn new() -> LeaseWatch {
        LeaseWatch::default()
    }

    /// Looks at `state` (with the liveness records it was folded from) at `at`, the
    /// claimant's monotonic time, and concludes. Leases no longer held are forgotten.
    pub fn observe(&mut self, state: &State, live: &LiveRecords, at: Duration) -> Leases {
        let period = Duration::from_secs(state.config.lease_duration().unsigned_abs());
        let mut seen = HashMap::new();
        let mut renewed = HashSet::new();
        for (key, sign) in signs(state, live) {
            let since = match self.seen.remove(&key) {
                Some((before, since)) if before == sign => {
                    if self.renewed.contains(&key) {
                        renewed.insert(key.clone());
                    }
                    since
                }
                Some(_) => {
                    renewed.insert(key.clone());
                    at
                }
                None => at,
            };
            seen.insert(key, (sign, since));
        }
        self.seen = seen;
        self.renewed = renewed;
        Leases {
            period,
            silent: self
                .seen
                .iter()
                .map(|(k, (s, since))| (k.clone(), (s.clone(), at.saturating_sub(*since))))
                .collect(),
            dead: HashSet::new(),
            live: live.clone(),
            renewed: self.renewed.clone(),
            unregistered_lapsed: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::Registration;
    use crate::liveness::LiveRecord;
    use crate::model::{Task, TaskStatus};

    /// coder-1 registered (generation g1), holding t-1 with a lease until `lease`.
    fn state(lease: i64) -> State {
        let at = Timestamp::from_unix(lease - 120);
        let mut s = crate::State::initial("goal", "specs/vision.md", "integration", at);
        let coder = AgentId::parse("coder-1").unwrap();
        crate::lifecycle::register(
            &mut s,
            &coder,
            coder.role(),
            "g1",
            &Registration::default(),
            &Leases::default(),
            at,
        )
        .unwrap();
        let mut t = Task::new(TaskId::parse("t-1").unwrap(), TaskStatus::Claimed);
        t.assigned_to = Some(coder);
        t.lease_expires = Some(Timestamp::from_unix(lease));
        s.tasks.push(t.into());
        s
    }

    fn task() -> LeaseKey {
        LeaseKey::Task(TaskId::parse("t-1").unwrap())
    }

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn a_lease_lapses_after_the_period_seen_unchanged_whatever_its_timestamp_says() {
        let none = LiveRecords::default();
        // Its timestamp is long past (a clock ahead would call it expired): not lapsed
        // until watched for the period.
        let s = state(1_000);
        let mut watch = LeaseWatch::new();
        let leases = watch.observe(&s, &none, S(5));
        assert!(!leases.lapsed(&s, &task()));
        assert_eq!(leases.left(&s, &task()), Some(S(120)));
        let leases = watch.observe(&s, &none, S(124));
        assert_eq!(leases.left(&s, &task()), Some(S(1)));
        // Far in the future (a dead holder's clock ran ahead): lapses all the same.
        let leases = watch.observe(&s, &none, S(125));
        assert!(leases.lapsed(&s, &task()));
        // A conclusion is about what was seen: a renewed lease is not lapsed.
        let renewed = state(1_015);
        assert!(!leases.lapsed(&renewed, &task()));
        assert_eq!(leases.left(&renewed, &task()), None);
    }

    #[test]
    fn a_holder_whose_record_changes_is_alive_even_when_the_fold_hides_it() {
        let s = state(1_000_000);
        let coder = AgentId::parse("coder-1").unwrap();
        let record = |beat: i64| {
            LiveRecords(vec![(
                coder.clone(),
                LiveRecord {
                    generation: "g1".into(),
                    // Its clock went back an hour: below the state's values.
                    heartbeat: Timestamp::from_unix(beat),
                    lease_expires: Timestamp::from_unix(beat + 120),
                    task_lease_expires: Some(Timestamp::from_unix(beat + 120)),
                    review_lease_expires: None,
                    host: None,
                    pgid: None,
                    usage_limit_until: None,
                    supervisor_pid: None,
                    waiting: None,
                    sandbox: None,
                    sandbox_note: None,
                    cli: None,
                    pid_namespace: None,
                    extra: Default::default(),
                },
            )])
        };
        let mut watch = LeaseWatch::new();
        for (i, at) in (0..400).step_by(15).enumerate() {
            let live = record(990_000 + i as i64 * 15);
            let leases = watch.observe(&s, &live, S(at));
            assert!(!leases.lapsed(&s, &task()), "at {at}");
        }
    }

    #[test]
    fn a_holder_known_dead_or_no_holder_at_all_is_lapsed_at_once() {
        let none = LiveRecords::default();
        let s = state(1_000);
        let leases = LeaseWatch::new()
            .observe(&s, &none, S(0))
            .with_dead([(AgentId::parse("coder-1").unwrap(), "g1".to_owned())]);
        assert!(leases.lapsed(&s, &task()));
        let mut free = state(1_000);
        free.task_mut(&TaskId::parse("t-1").unwrap())
            .unwrap()
            .assigned_to = None;
        assert!(Leases::default().lapsed(&free, &task()));
    }
}
