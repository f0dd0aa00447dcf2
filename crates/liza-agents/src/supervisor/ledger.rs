//! Each agent run into the ledger (specs/ledger.md): once the run has ended and been
//! logged, its entry — who ran, on what, for how long, how it ended, and what its CLI
//! reported of tokens and dollars, priced from `config.prices` where it reported no cost
//! — appended once under its run id, outside any transition of the blackboard.

use liza_model::ledger::{self, LedgerEntry};

use super::session::Session;
use crate::blackboard::{State, TaskId, Timestamp};

impl Session {
    /// Appends the run that just ended to the ledger, and says what it used.
    pub(super) async fn record_in_ledger(
        &mut self,
        task: Option<&TaskId>,
        exit_class: &str,
        state: &State,
    ) {
        let Some((started, clock)) = self.run_started.take() else {
            return;
        };
        let usage = self.last_usage.take();
        let prices = ledger::prices(&state.config);
        let mut models = usage.as_ref().map(|u| u.models.clone()).unwrap_or_default();
        for m in &mut models {
            m.price(&prices);
        }
        let ended = Timestamp::now();
        let entry = LedgerEntry {
            run: run_id(self.agent.as_str(), started),
            agent: self.agent.to_string(),
            role: self.role().yaml_name().to_owned(),
            task: task.map(ToString::to_string),
            sprint: Some(state.sprint.id.clone()).filter(|s| !s.is_empty()),
            backend: self.backend.name.clone(),
            started: started.to_string(),
            ended: ended.to_string(),
            wall_ms: u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX),
            exit_class: exit_class.to_owned(),
            models,
            approximate: usage.is_some_and(|u| u.approximate),
        };
        self.console.info(&summary(&entry));
        let added = self
            .blocking(move |project| project.store.append_ledger(&[entry]))
            .await;
        if let Err(e) = added {
            tracing::warn!(error = %e, "could not record the run in the ledger");
            self.console.info(&format!(
                "{}: the run could not be recorded in the ledger: {e}",
                self.agent
            ));
        }
    }
}

/// `<agent>-<started, compact>-<8 hex>`: unique across processes and hosts.
fn run_id(agent: &str, started: Timestamp) -> String {
    let stamp = started.to_string().replace(['-', ':'], "");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!("{agent}:{}:{nanos}:{}", std::process::id(), host());
    let nonce = blake3::hash(seed.as_bytes()).to_hex();
    format!("{agent}-{stamp}-{}", &nonce[..8])
}

fn host() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default()
}

/// One line for the console: what the run used, as far as its CLI said.
fn summary(entry: &LedgerEntry) -> String {
    let total = entry.total();
    if entry.models.is_empty() {
        return format!(
            "{}: run recorded ({} s); {} reports no token usage",
            entry.agent,
            entry.wall_ms / 1000,
            entry.backend
        );
    }
    format!(
        "{}: run used {}{} ({} s)",
        entry.agent,
        ledger::phrase(&total),
        if entry.approximate { ", at least" } else { "" },
        entry.wall_ms / 1000
    )
}
