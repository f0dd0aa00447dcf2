//! Leases as a claimant observes them (specs/blackboard.md *Leases are observed*): a
//! supervisor keeps watching ([`LeaseWatch`] in its session); a one-shot command — a
//! person's `claim-task`, `release-claim`, `reassign`, `clear-stale` — watches the leases it
//! would take for up to the lease period, and stops as soon as one is renewed. Either way a
//! holder whose process is gone on this host is dead at once, without a clock.

use std::time::{Duration, Instant};

use super::{OpsError, Project};
use crate::blackboard::liveness::{self, LiveRecords};
use crate::blackboard::model::State;
use crate::blackboard::{AgentId, Timestamp};
use crate::lifecycle::{LeaseKey, LeaseWatch, Leases};

/// How often a one-shot command looks while it watches.
const WATCH_STEP: Duration = Duration::from_millis(200);

/// The holders whose supervisor, by their own liveness record, ran on this host and is
/// gone: dead without any clock (by id and the generation that died).
pub fn dead_holders(state: &State, live: &LiveRecords) -> Vec<(AgentId, String)> {
    let here = liveness::pid_space_here();
    state
        .agents
        .iter()
        .filter_map(|(id, _)| {
            let record = live.current(state, id)?;
            (here.holds(record) && record.supervisor_pid.is_some_and(|p| !process_alive(p)))
                .then(|| (id.clone(), record.generation.clone()))
        })
        .collect()
}

/// Whether process `pid` exists on this host (a zombie counts until it is reaped).
pub fn process_alive(pid: i64) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) => true,
        Err(e) => e == nix::errno::Errno::EPERM,
    }
}

/// Whether process `pid` exists on this host and runs liza: a pid reused by another
/// program (after a reboot) is no supervisor.
pub fn liza_process_alive(pid: i64) -> bool {
    process_alive(pid)
        && std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| c.windows(4).any(|w| w == b"liza"))
}

/// A one-shot command's conclusion about `keys`: each lapsed (no holder, a dead one, or
/// seen silent for the lease period while this command watched), or not. Each key is
/// decided on its own: one renewed while watched is live and no longer waited for; the
/// others are watched on. A lease whose timestamp is still ahead of this host's clock is
/// not waited for when nothing else is: live by every account, it is refused at once.
/// `say` is told once when it watches.
pub fn watch(project: &Project, keys: &[LeaseKey], say: &dyn Fn(&str)) -> Result<Leases, OpsError> {
    let started = Instant::now();
    let mut watch = LeaseWatch::new();
    let mut told = false;
    loop {
        let state = project.store.snapshot()?.state;
        let live = project.store.live_records()?;
        let dead = dead_holders(&state, &live);
        let at = started.elapsed();
        let leases = watch
            .observe(&state, &live, at)
            .with_dead(dead)
            .unregistered_lapsed();
        // Still to decide: neither lapsed nor seen to change since the first look (its
        // holder lives).
        let undecided: Vec<&LeaseKey> = keys
            .iter()
            .filter(|k| !leases.lapsed(&state, k))
            .filter(|k| !leases.renewed(k))
            .collect();
        let ahead = |k: &&LeaseKey| {
            lease_timestamp(&state, k).is_some_and(|until| until > Timestamp::now())
        };
        if undecided.iter().all(ahead) || at > leases.period() + leases.period() / 2 {
            return Ok(leases);
        }
        if !told {
            told = true;
            let names: Vec<String> = undecided.iter().map(|k| describe(k)).collect();
            say(&format!(
                "watching {} for up to {} s: liza takes a lease over only once it has seen it silent for the lease period",
                names.join(", "),
                leases.period().as_secs()
            ));
        }
        std::thread::sleep(WATCH_STEP);
    }
}

/// The timestamp a lease carries, as its holder's clock put it.
fn lease_timestamp(state: &State, key: &LeaseKey) -> Option<Timestamp> {
    match key {
        LeaseKey::Agent(id) => state.agents.get(id)?.lease_expires,
        LeaseKey::Task(id) => state.task(id)?.lease_expires,
        LeaseKey::Review(id) => state.task(id)?.review_lease_expires,
    }
}

/// A lease, for a person.
pub fn describe(key: &LeaseKey) -> String {
    match key {
        LeaseKey::Agent(id) => format!("{id}'s registration"),
        LeaseKey::Task(id) => format!("the claim on {id}"),
        LeaseKey::Review(id) => format!("the review claim on {id}"),
    }
}

/// How an operation learns which leases lapsed.
#[derive(Clone, Copy)]
pub enum LeaseCheck<'a> {
    /// What a supervisor has been watching all along.
    Observed(&'a Leases),
    /// A one-shot command: watch now ([`watch`]), telling the person through the function.
    WatchNow(&'a dyn Fn(&str)),
}

impl LeaseCheck<'_> {
    /// The conclusions about `keys` (nothing is watched when there are none).
    pub fn leases(&self, project: &Project, keys: &[LeaseKey]) -> Result<Leases, OpsError> {
        match self {
            LeaseCheck::Observed(leases) => Ok((*leases).clone()),
            LeaseCheck::WatchNow(_) if keys.is_empty() => Ok(Leases::default()),
            LeaseCheck::WatchNow(say) => watch(project, keys, *say),
        }
    }
}
