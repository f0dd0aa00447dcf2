//! The status report: goal, sprint, agents, tasks and alarms of a snapshot — what
//! `liza status` prints (text or `--json`) and the dashboard draws.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::blackboard::model::{
    AgentStatus, GoalStatus, PlanApproval, SprintStatus, State, TaskStatus,
};
use crate::blackboard::timestamp::{human_duration, rfc3339};
use crate::blackboard::{LizaPaths, Snapshot, Timestamp};

/// Everything `liza status` shows, in the shape `--json` prints.
#[derive(Debug, Serialize)]
pub struct Report {
    pub revision: u64,
    /// state.yaml was changed outside liza since the last commit.
    pub pending_hand_edit: bool,
    /// Why that changed file does not read, when it does not (`file:line:column: what`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_hand_edit_problem: Option<String>,
    pub goal: GoalLine,
    pub sprint: SprintLine,
    pub plan_waiting: usize,
    pub agents: Vec<AgentLine>,
    pub tasks: Vec<TaskLine>,
    /// The merge queue, in the order its tasks are merged (specs/git.md *The queue*).
    pub merge_queue: Vec<QueueLine>,
    /// The last alarms whose cause is still there (at most [`ALARMS_SHOWN`]).
    pub alarms: Vec<String>,
    /// Alarms among those read whose cause is gone (ops::alarms::still_current).
    pub alarms_cleared: usize,
    pub integration_branch: String,
    /// The built-in agent's metrics, per agent and in total.
    pub builtin: crate::builtin::metrics::Metrics,
    /// The operational metrics `/metrics` serves (`--json` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operations: Option<crate::monitor::metrics::Numbers>,
    /// Sprint and goal states that wait for a person, each with the command that
    /// continues (shown at the top).
    pub attention: Vec<Attention>,
    /// What the agents' runs used, and the usage limits holding (specs/ledger.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageReport>,
}

/// What the agents' runs used, from the ledger, and the usage limits that hold now.
#[derive(Debug, Serialize)]
pub struct UsageReport {
    /// The sprint under way.
    pub sprint: crate::blackboard::ledger::Totals,
    /// Each agent's runs today (UTC).
    pub agents_today: BTreeMap<String, crate::blackboard::ledger::Totals>,
    /// The usage limits still holding, by backend and account.
    pub limits: Vec<crate::blackboard::quota::QuotaHit>,
}

/// A task in the merge queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueLine {
    pub task: String,
    /// A merger has built its merge (its `merge_intent`): checked or about to be.
    pub merging: bool,
    /// Its merge commit being checked, when it is merging.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate: Option<String>,
    /// The merger at work (`<host>/<pid>/<checkout>`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merger: Option<String>,
}

/// The merge queue as `status` shows it.
pub fn queue_lines(state: &State) -> Vec<QueueLine> {
    crate::lifecycle::merge_queue(state)
        .into_iter()
        .map(|id| {
            let intent = state.task(&id).and_then(|t| t.merge_intent.as_ref());
            QueueLine {
                task: id.to_string(),
                merging: intent.is_some(),
                candidate: intent.map(|i| i.candidate.to_string()),
                merger: intent.and_then(|i| i.merger.clone()),
            }
        })
        .collect()
}

/// A state of the sprint or goal that holds the agents or waits for a person, and what
/// continues it (specs/operations.md *Status and the live view*).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attention {
    pub state: &'static str,
    pub next: String,
}

/// What holds the team, from the sprint and goal statuses and the raised control flags.
pub fn attention(
    goal: Option<GoalStatus>,
    sprint: SprintStatus,
    flags: &crate::blackboard::control::ControlFlags,
) -> Vec<Attention> {
    use crate::blackboard::control::Control;
    let mut found = Vec::new();
    let mut add = |state: &'static str, next: &str| {
        found.push(Attention {
            state,
            next: next.to_owned(),
        })
    };
    if sprint == SprintStatus::Aborted || flags.is_raised(Control::Abort) {
        add(
            "ABORTED",
            if goal == Some(GoalStatus::Aborted) {
                "`liza resume` reopens the sprint and the goal; `liza goal next \"<goal>\"` starts another"
            } else {
                "supervisors stop; `liza resume` reopens the sprint, `liza sprint next` opens the next one"
            },
        );
    }
    if sprint == SprintStatus::Checkpoint || flags.is_raised(Control::Checkpoint) {
        add(
            "CHECKPOINT",
            "review .liza/sprint_summary.md, then `liza resume [--decision D]`",
        );
    }
    if flags.is_raised(Control::Pause) {
        add("PAUSED", "no agent starts a run: `liza resume` lets them");
    }
    match (sprint, goal) {
        (_, Some(GoalStatus::Completed)) => add(
            "GOAL COMPLETED",
            "`liza goal next \"<goal>\"` starts the next goal on this blackboard",
        ),
        (SprintStatus::Completed, _) => add(
            "SPRINT COMPLETED",
            "`liza sprint next` opens the next sprint, or `liza goal complete` declares the goal met",
        ),
        _ => {}
    }
    found
}

#[derive(Debug, Serialize)]
pub struct GoalLine {
    pub id: String,
    pub status: Option<GoalStatus>,
    pub description: String,
    pub spec_ref: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct SprintLine {
    pub id: String,
    pub status: SprintStatus,
    #[serde(serialize_with = "rfc3339::option")]
    pub started: Option<Timestamp>,
    pub counts: BTreeMap<String, usize>,
    pub planned: usize,
    pub planned_terminal: usize,
    pub metrics: serde_json::Value,
}

#[derive(Debug, Serialize)]
pub struct AgentLine {
    pub id: String,
    pub role: String,
    pub status: AgentStatus,
    pub task: Option<String>,
    #[serde(serialize_with = "rfc3339::option")]
    pub lease_expires: Option<Timestamp>,
    /// Seconds until the effective lease expires (negative: expired).
    pub lease_remaining_s: Option<i64>,
    pub cli: Option<String>,
    /// Seconds since its agent last wrote output (its newest `.liza/agent-logs/` file).
    pub output_age_s: Option<i64>,
    /// Until when its supervisor waits for a provider usage limit (its heartbeat says).
    #[serde(serialize_with = "rfc3339::option")]
    pub usage_limit_until: Option<Timestamp>,
    /// What its supervisor waits for while it runs nothing (`paused`, `backoff`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
    /// The host its supervisor runs on (`LIZA_HOST_ID`, else the hostname), as its
    /// last heartbeat says.
    pub host: Option<String>,
    /// Whether its agent runs sandboxed: `on`, `off` or `unavailable`
    /// (specs/sandbox.md *Modes*), as its heartbeat says.
    pub sandbox: Option<String>,
    /// The sandbox's version, or why there is none and the fix.
    pub sandbox_note: Option<String>,
}

impl AgentLine {
    /// Whether its supervisor says its agent runs outside the sandbox.
    pub fn unsandboxed(&self) -> bool {
        self.sandbox.as_deref().is_some_and(|s| s != "on")
    }
}

#[derive(Debug, Serialize)]
pub struct TaskLine {
    pub id: String,
    pub status: TaskStatus,
    pub priority: i64,
    pub assignee: Option<String>,
    pub iteration: Option<i64>,
    pub review_cycles_current: i64,
    pub review_cycles_total: i64,
    /// Seconds in the current status.
    pub age_s: Option<i64>,
    pub depends_on: Vec<String>,
}

impl AgentLine {
    pub const HEADER: [&'static str; 7] =
        ["ID", "ROLE", "STATUS", "TASK", "LEASE", "CLI", "OUTPUT"];

    /// The row `liza status` and the dashboard show, in [`AgentLine::HEADER`] order.
    pub fn cells(&self) -> Vec<String> {
        vec![
            self.id.clone(),
            self.role.clone(),
            match self.waiting.as_deref() {
                Some(why) if why != "work" => format!("{} · {why}", self.status),
                _ => self.status.to_string(),
            },
            self.task.clone().unwrap_or_else(|| "-".into()),
            self.lease_remaining_s
                .map_or_else(|| "-".into(), lease_text),
            self.cli.clone().unwrap_or_else(|| "-".into()),
            self.output_age_s
                .map_or_else(|| "-".into(), |age| format!("{} ago", human_duration(age))),
        ]
    }
}

impl TaskLine {
    pub const HEADER: [&'static str; 8] = [
        "ID", "STATUS", "PRI", "ASSIGNEE", "ITER", "REVIEWS", "AGE", "DEPENDS",
    ];

    /// The row `liza status` and the dashboard show, in [`TaskLine::HEADER`] order.
    pub fn cells(&self) -> Vec<String> {
        vec![
            self.id.clone(),
            self.status.to_string(),
            self.priority.to_string(),
            self.assignee.clone().unwrap_or_else(|| "-".into()),
            self.iteration.map_or_else(|| "-".into(), |i| i.to_string()),
            format!(
                "{}/{}",
                self.review_cycles_current, self.review_cycles_total
            ),
            self.age_s.map_or_else(|| "-".into(), human_duration),
            if self.depends_on.is_empty() {
                "-".into()
            } else {
                self.depends_on.join(",")
            },
        ]
    }
}

/// The backend in use, said as a fallback when it is not the first of those registered
/// (`codex, for claude`).
fn in_use_of(registered: Option<&str>, in_use: String) -> String {
    match registered.and_then(|r| r.split(',').next()) {
        Some(first) if first != in_use => format!("{in_use}, for {first}"),
        _ => in_use,
    }
}

/// The sprint's usage, each agent's today, and the limits holding, under the agents.
fn render_usage(s: &mut String, sprint: &str, usage: &UsageReport) {
    use crate::blackboard::ledger;
    if usage.sprint.runs > 0 {
        let _ = writeln!(
            s,
            "Usage, sprint {sprint}: {} over {} run(s) (liza cost)",
            ledger::phrase(&usage.sprint.usage()),
            usage.sprint.runs
        );
    }
    for (agent, used) in &usage.agents_today {
        let _ = writeln!(
            s,
            "  {agent} today: {} over {} run(s)",
            ledger::phrase(&used.usage()),
            used.runs
        );
    }
    for hit in &usage.limits {
        let _ = writeln!(
            s,
            "Usage limit: {} (account {}) until {}, seen by {}: {}",
            hit.backend,
            hit.account,
            crate::supervisor::local_clock(hit.resets_at),
            hit.seen_by,
            crate::terminal_text::visible(&hit.line)
        );
    }
}

/// How many open alarms `liza status` shows (the newest).
pub const ALARMS_SHOWN: usize = 5;

/// How many of the newest alarm lines are read to find the open ones.
pub const ALARMS_READ: usize = 200;

impl Report {
    pub fn new(
        snapshot: &Snapshot,
        live: &crate::blackboard::liveness::LiveRecords,
        paths: &LizaPaths,
        now: Timestamp,
        alarms: Vec<String>,
    ) -> Report {
        let state = &snapshot.state;
        let (mut alarms, cleared): (Vec<String>, Vec<String>) = alarms
            .into_iter()
            .partition(|line| crate::ops::alarms::still_current(line, state));
        alarms.drain(..alarms.len().saturating_sub(ALARMS_SHOWN));
        let alarms_cleared = cleared.len();
        Report {
            revision: state.revision(),
            pending_hand_edit: snapshot.pending_hand_edit,
            pending_hand_edit_problem: None,
            goal: GoalLine {
                id: state.goal.id.clone(),
                status: state.goal.status,
                description: state.goal.description.clone(),
                spec_ref: state.goal.spec_ref.clone(),
            },
            sprint: sprint_line(state),
            plan_waiting: if state.config.plan_approval() == PlanApproval::Human {
                state
                    .tasks
                    .iter()
                    .filter(|t| t.status == TaskStatus::Draft)
                    .count()
            } else {
                0
            },
            agents: state
                .agents
                .iter()
                .map(|(id, a)| AgentLine {
                    id: id.to_string(),
                    role: a.role.to_string(),
                    status: a.status,
                    task: a.current_task.as_ref().map(ToString::to_string),
                    lease_expires: a.lease_expires,
                    lease_remaining_s: a.lease_expires.map(|l| l.seconds_since(now)),
                    // The backend in use, as the heartbeat says (a fallback while the
                    // agent's own is limited), else the one it registered with.
                    cli: live
                        .current(state, id)
                        .filter(|r| r.lease_expires > now)
                        .and_then(|r| r.cli.clone())
                        .map(|in_use| in_use_of(a.cli.as_deref(), in_use))
                        .or_else(|| a.cli.clone()),
                    output_age_s: output_age(&paths.dir.join("agent-logs"), id.as_str(), now),
                    usage_limit_until: live
                        .current(state, id)
                        .and_then(|r| r.usage_limit_until)
                        .filter(|until| *until > now),
                    waiting: live
                        .current(state, id)
                        .filter(|r| r.lease_expires > now)
                        .and_then(|r| r.waiting.clone()),
                    host: live.current(state, id).and_then(|r| r.host.clone()),
                    sandbox: live.current(state, id).and_then(|r| r.sandbox.clone()),
                    sandbox_note: live.current(state, id).and_then(|r| r.sandbox_note.clone()),
                })
                .collect(),
            tasks: state
                .tasks
                .iter()
                .map(|t| TaskLine {
                    id: t.id.to_string(),
                    status: t.status,
                    priority: t.priority(),
                    assignee: t.assigned_to.as_ref().map(ToString::to_string),
                    iteration: t.iteration,
                    review_cycles_current: t.review_cycles_current.unwrap_or(0),
                    review_cycles_total: t.review_cycles_total.unwrap_or(0),
                    age_s: t.entered_status_at().map(|at| at.age_at(now)),
                    depends_on: t.depends_on().iter().map(ToString::to_string).collect(),
                })
                .collect(),
            merge_queue: queue_lines(state),
            alarms_cleared,
            alarms,
            builtin: crate::builtin::metrics::collect(state),
            integration_branch: state.config.integration_branch().to_owned(),
            operations: None,
            attention: attention(state.goal.status, state.sprint.status, &Default::default()),
            usage: None,
        }
    }

    /// The whole report of `snapshot` as `liza status` prints it: the control flags,
    /// why a pending hand edit does not read, and what the ledger's runs used.
    pub fn read(
        snapshot: &Snapshot,
        store: &crate::blackboard::Store,
        now: Timestamp,
    ) -> Result<Report, crate::blackboard::StoreError> {
        let live = store.live_records()?;
        Ok(Report::new(
            snapshot,
            &live,
            store.paths(),
            now,
            store.recent_alarms(ALARMS_READ),
        )
        .with_controls(&store.control_flags().unwrap_or_default())
        .with_hand_edit_checked(&store.paths().state())
        .with_usage(
            &snapshot.state.sprint.id,
            &store.ledger().unwrap_or_default(),
            store.quotas().unwrap_or_default(),
            now,
        ))
    }

    /// With what the ledger's runs used — the sprint's, each agent's today — and the
    /// usage limits of `quotas` holding at `now`.
    pub fn with_usage(
        mut self,
        sprint: &str,
        entries: &[crate::blackboard::ledger::LedgerEntry],
        quotas: Vec<crate::blackboard::quota::QuotaHit>,
        now: Timestamp,
    ) -> Report {
        use crate::blackboard::ledger;
        let today = now.to_string().get(..10).unwrap_or_default().to_owned();
        let limits: Vec<_> = quotas.into_iter().filter(|h| h.holds_at(now)).collect();
        if entries.is_empty() && limits.is_empty() {
            return self;
        }
        self.usage = Some(UsageReport {
            sprint: ledger::total(
                entries
                    .iter()
                    .filter(|e| e.sprint.as_deref() == Some(sprint)),
            ),
            agents_today: ledger::group(
                entries.iter().filter(|e| e.day() == today),
                ledger::GroupBy::Agent,
            ),
            limits,
        });
        self
    }

    /// With why a pending hand edit of `state_file` does not read, when it does not.
    pub fn with_hand_edit_checked(mut self, state_file: &std::path::Path) -> Report {
        if self.pending_hand_edit
            && let Ok(bytes) = std::fs::read(state_file)
            && let Err(findings) = crate::blackboard::document::decode(&bytes)
        {
            self.pending_hand_edit_problem = findings
                .first()
                .map(|f| format!("state.yaml:{}:{}: {}", f.line, f.column, f.message));
        }
        self
    }

    /// With the control flags raised now (PAUSE, CHECKPOINT, ABORT) counted in.
    pub fn with_controls(mut self, flags: &crate::blackboard::control::ControlFlags) -> Report {
        self.attention = attention(self.goal.status, self.sprint.status, flags);
        self
    }

    /// The text form, in columns sized to the data.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for a in &self.attention {
            let _ = writeln!(s, ">> {} — {}", a.state, a.next);
        }
        let goal_status = self.goal.status.map_or("-", GoalStatus::as_str);
        let _ = writeln!(
            s,
            "Goal {} ({goal_status}): {}",
            self.goal.id, self.goal.description
        );
        let _ = writeln!(
            s,
            "  spec {} · integration branch {} · revision {}",
            self.goal.spec_ref.as_deref().unwrap_or("-"),
            self.integration_branch,
            self.revision
        );
        let sp = &self.sprint;
        let started = sp
            .started
            .map_or_else(|| "start unknown".to_owned(), |t| format!("started {t}"));
        let _ = writeln!(s, "Sprint {} ({}), {started}", sp.id, sp.status);
        let _ = writeln!(
            s,
            "  {} {}/{} planned tasks terminal",
            bar(sp.planned_terminal, sp.planned, 20),
            sp.planned_terminal,
            sp.planned
        );
        if !sp.counts.is_empty() {
            let counts: Vec<String> = sp.counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let _ = writeln!(s, "  {}", counts.join(" · "));
        }
        if self.plan_waiting > 0 {
            let _ = writeln!(
                s,
                "Plan waiting for approval: {} DRAFT task(s) (plan_approval: human); approve with liza finalize-task --all",
                self.plan_waiting
            );
        }
        match (&self.pending_hand_edit_problem, self.pending_hand_edit) {
            (Some(problem), _) => {
                let _ = writeln!(
                    s,
                    "Note: state.yaml was changed outside liza since revision {} and does not read ({problem}); \
                     the next transaction sets it aside under .liza/rejected/ — fix it now (`liza validate` lists every problem)",
                    self.revision
                );
            }
            (None, true) => {
                let _ = writeln!(
                    s,
                    "Note: state.yaml was changed outside liza since revision {}; the next transaction records (or refuses) the edit",
                    self.revision
                );
            }
            (None, false) => {}
        }

        let _ = writeln!(s, "\nAgents ({})", self.agents.len());
        let rows: Vec<Vec<String>> = self.agents.iter().map(AgentLine::cells).collect();
        table(&mut s, &AgentLine::HEADER, &rows);
        for agent in self.agents.iter().filter(|a| a.unsandboxed()) {
            let _ = writeln!(
                s,
                "UNSANDBOXED: {} runs its agent with your user's full access to this machine ({})",
                agent.id,
                agent.sandbox_note.as_deref().unwrap_or("no reason given")
            );
        }
        if let Some(usage) = &self.usage {
            render_usage(&mut s, &self.sprint.id, usage);
        }
        for agent in &self.agents {
            if let Some(until) = agent.usage_limit_until {
                let _ = writeln!(
                    s,
                    "{} waiting for usage limit until {}",
                    agent.id,
                    crate::supervisor::local_clock(until)
                );
            }
        }

        let _ = writeln!(s, "\nTasks ({})", self.tasks.len());
        let rows: Vec<Vec<String>> = self.tasks.iter().map(TaskLine::cells).collect();
        table(&mut s, &TaskLine::HEADER, &rows);

        if !self.merge_queue.is_empty() {
            let _ = writeln!(s, "\nMerge queue ({})", self.merge_queue.len());
            for (place, q) in self.merge_queue.iter().enumerate() {
                let doing = match &q.candidate {
                    Some(c) => format!(" — merging, {} checked", &c[..12.min(c.len())]),
                    None => String::new(),
                };
                let _ = writeln!(s, "  {}. {}{doing}", place + 1, q.task);
            }
        }

        let _ = writeln!(s, "\nAlarms");
        if self.alarms.is_empty() {
            let _ = writeln!(s, "  none open");
        }
        for alarm in &self.alarms {
            let _ = writeln!(s, "  {alarm}");
        }
        if self.alarms_cleared > 0 {
            let _ = writeln!(
                s,
                "  ({} cleared: their cause is gone; .liza/alerts.log keeps every alarm)",
                self.alarms_cleared
            );
        }
        s
    }
}

fn sprint_line(state: &State) -> SprintLine {
    let mut counts = BTreeMap::new();
    for t in &state.tasks {
        *counts.entry(t.status.to_string()).or_insert(0) += 1;
    }
    // Tasks of this sprint moved to the archive still count.
    for (_, a) in state.archived.iter().flat_map(|a| a.iter()) {
        if a.sprint.as_deref() == Some(state.sprint.id.as_str()) {
            *counts.entry(a.status.to_string()).or_insert(0) += 1;
        }
    }
    let planned = state.sprint.planned();
    let terminal = planned
        .iter()
        .filter(|id| match state.task(id) {
            Some(t) => t.status.is_terminal(),
            None => state.archived.as_ref().is_some_and(|a| a.contains_key(id)),
        })
        .count();
    SprintLine {
        id: state.sprint.id.clone(),
        status: state.sprint.status,
        started: state.sprint.timeline.as_ref().and_then(|t| t.started),
        counts,
        planned: planned.len(),
        planned_terminal: terminal,
        metrics: serde_json::to_value(&state.sprint.metrics).unwrap_or_default(),
    }
}

pub fn lease_text(remaining: i64) -> String {
    if remaining >= 0 {
        human_duration(remaining)
    } else {
        format!("expired {} ago", human_duration(-remaining))
    }
}

pub fn bar(done: usize, total: usize, width: usize) -> String {
    let filled = (done * width).checked_div(total).unwrap_or(0);
    format!("[{}{}]", "#".repeat(filled), "-".repeat(width - filled))
}

fn table(s: &mut String, header: &[&str], rows: &[Vec<String>]) {
    if rows.is_empty() {
        let _ = writeln!(s, "  none");
        return;
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::from(" ");
        for (cell, w) in cells.zip(&widths) {
            out.push(' ');
            out.push_str(cell);
            out.extend(std::iter::repeat_n(
                ' ',
                w.saturating_sub(cell.chars().count()) + 1,
            ));
        }
        let _ = writeln!(s, "{}", out.trim_end());
    };
    line(&mut header.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
}

/// Seconds since the newest `<agent>-….log` in `dir` was written (this host's agents).
fn output_age(dir: &Path, agent: &str, now: Timestamp) -> Option<i64> {
    let prefix = format!("{agent}-");
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .filter_map(|e| e.metadata().ok()?.modified().ok())
        .max()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| (now.unix() - d.as_secs() as i64).max(0))
}

/// The mid-sprint fixture as a snapshot read at a fixed time, with no `.liza/` to look
/// at: what the status and dashboard rendering tests draw.
#[cfg(test)]
pub(crate) fn mid_sprint_fixture() -> (Snapshot, LizaPaths, Timestamp) {
    let text = include_str!("../tests/fixtures/mid-sprint.yaml");
    let state = crate::blackboard::document::decode(text.as_bytes())
        .unwrap()
        .state;
    let snapshot = Snapshot {
        state,
        hash: crate::blackboard::store::hash::ContentHash::of(text.as_bytes()),
        pending_hand_edit: false,
    };
    let paths = LizaPaths::new(std::path::Path::new("/nonexistent"));
    let now = Timestamp::parse("2026-03-01T12:30:00Z").unwrap();
    (snapshot, paths, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_of_a_mid_sprint_board_reads_well() {
        let (snapshot, paths, now) = mid_sprint_fixture();
        insta::assert_snapshot!(
            Report::new(&snapshot, &Default::default(), &paths, now, Vec::new()).render()
        );
    }
}

#[cfg(test)]
mod alarm_tests {
    use crate::ops::alarms::still_current;

    #[test]
    fn an_alarm_about_a_task_clears_when_its_cause_is_gone() {
        let (snapshot, _, _) = super::mid_sprint_fixture();
        let s = &snapshot.state;
        let line = |key: &str| format!("2026-03-01T12:00:00Z WARN X a message [{key}]");
        assert!(still_current(
            &line("blocked:t-blocked:2026-03-01T09:11:00Z"),
            s
        ));
        // An earlier stay in BLOCKED: that occurrence is over.
        assert!(!still_current(
            &line("blocked:t-blocked:2026-03-01T08:00:00Z"),
            s
        ));
        assert!(!still_current(
            &line("blocked:t-merged:2026-03-01T10:00:00Z"),
            s
        ));
        assert!(!still_current(
            &line("blocked:t-gone:2026-03-01T10:00:00Z"),
            s
        ));
        assert!(still_current(&line("review-loop:t-rejected:3:warn"), s));
        assert!(!still_current(&line("review-loop:t-merged:3:warn"), s));
        assert!(still_current(
            &line("crash-loop:coder-1:-:2026-03-01T10:00:00Z"),
            s
        ));
        assert!(still_current("a line without a key", s));
    }
}
