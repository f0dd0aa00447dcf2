//! The static invariants of one state (specs/blackboard.md *Validation*, rules 1–12).
//!
//! Type-level rules (statuses, ids, timestamps, required keys) are enforced while decoding
//! (see [`super::codec`]); this module checks everything that needs the whole decoded
//! state. The store runs the same checks before every commit.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::finding::{FieldPath, Finding};
use super::ids::{AgentId, TaskId};
use super::model::{AgentStatus, LEGACY_CONFIG_KEYS, State, Task, TaskStatus};
use super::node::Value;
use super::timestamp::Timestamp;

/// Seconds past an effective lease before a WORKING agent is reported (rule 8).
const LEASE_GRACE_SECONDS: i64 = 60;

/// What validation may look at besides the state itself.
pub struct ValidationEnv<'a> {
    /// The project root, for `spec_ref` files and worktree directories; `None` skips
    /// those filesystem checks.
    pub root: Option<&'a Path>,
    /// `SKIP_SPEC_FILE_CHECK=true` or `--skip-spec-check`.
    pub skip_spec_check: bool,
    /// The time leases are judged against.
    pub now: Timestamp,
    /// Task ids present in the file but left out of the decoded state because they had
    /// errors of their own; they still count as existing for references.
    pub undecoded_task_ids: HashSet<String>,
    /// Leases renewed by heartbeats (liveness records), by agent, when known.
    pub live_leases: HashMap<AgentId, Timestamp>,
    /// Liveness records read beside the file, turned into `live_leases` once the state
    /// they belong to is decoded.
    pub live_records: Option<crate::liveness::LiveRecords>,
    /// Filesystem answers already looked up (many tasks share a spec file, and the store
    /// validates twice per transaction).
    seen_paths: RefCell<HashMap<(String, bool), bool>>,
}

impl<'a> ValidationEnv<'a> {
    /// An environment for the project at `root` (`None`: no filesystem checks) at `now`;
    /// the spec-file check follows `SKIP_SPEC_FILE_CHECK`.
    pub fn new(root: Option<&'a Path>, now: Timestamp) -> Self {
        ValidationEnv {
            root,
            skip_spec_check: skip_spec_check_from_env(),
            now,
            undecoded_task_ids: HashSet::new(),
            live_leases: HashMap::new(),
            live_records: None,
            seen_paths: RefCell::new(HashMap::new()),
        }
    }

    /// Whether `root/relative` is a directory (`dir`) or a file.
    fn exists(&self, root: &Path, relative: &str, dir: bool) -> bool {
        let key = (relative.to_owned(), dir);
        if let Some(known) = self.seen_paths.borrow().get(&key) {
            return *known;
        }
        let path = root.join(relative);
        let found = if dir { path.is_dir() } else { path.is_file() };
        self.seen_paths.borrow_mut().insert(key, found);
        found
    }
}

/// `SKIP_SPEC_FILE_CHECK=true` as the original tooling defined it.
pub fn skip_spec_check_from_env() -> bool {
    std::env::var("SKIP_SPEC_FILE_CHECK").is_ok_and(|v| v == "true")
}

/// Runs rules 1–12 over a decoded state; findings carry paths but no positions yet.
pub fn validate(state: &State, env: &ValidationEnv<'_>) -> Vec<Finding> {
    let mut v = Validator {
        state,
        env,
        out: Vec::new(),
    };
    v.top_level();
    v.tasks();
    v.assignments();
    v.dependencies();
    v.agents();
    v.records();
    v.sprint();
    v.config();
    v.out
}

struct Validator<'s, 'e> {
    state: &'s State,
    env: &'e ValidationEnv<'e>,
    out: Vec<Finding>,
}

fn task_path(i: usize) -> FieldPath {
    FieldPath::root().key("tasks").index(i)
}

impl Validator<'_, '_> {
    fn error(
        &mut self,
        rule: u8,
        check: &'static str,
        path: FieldPath,
        id: Option<&str>,
        message: String,
    ) {
        let mut f = Finding::error(Some(rule), check, path, message);
        f.id = id.map(str::to_owned);
        self.out.push(f);
    }

    fn warn(
        &mut self,
        rule: u8,
        check: &'static str,
        path: FieldPath,
        id: Option<&str>,
        message: String,
    ) {
        let mut f = Finding::warning(Some(rule), check, path, message);
        f.id = id.map(str::to_owned);
        self.out.push(f);
    }

    fn hint(&mut self, hint: &str) {
        if let Some(last) = self.out.last_mut() {
            last.hint = Some(hint.to_owned());
        }
    }

    fn exists(&self, id: &TaskId) -> bool {
        self.state.task_exists(id) || self.env.undecoded_task_ids.contains(id.as_str())
    }

    /// Rules 1 and 12 beyond types.
    fn top_level(&mut self) {
        if self.state.version != 1 {
            self.error(
                1,
                "version-value",
                FieldPath::root().key("version"),
                None,
                format!(
                    "schema version {} is not supported (liza reads version 1)",
                    self.state.version
                ),
            );
        }
        if let Some(rev) = self.state.revision
            && rev < 0
        {
            self.error(
                12,
                "revision-negative",
                FieldPath::root().key("revision"),
                None,
                format!("revision {rev} is negative"),
            );
        }
        if !self.state.goal.id.starts_with("goal-") {
            self.warn(
                11,
                "goal-id",
                FieldPath::root().key("goal").key("id"),
                None,
                format!(
                    "goal id {:?} does not have the form goal-<n>",
                    self.state.goal.id
                ),
            );
        }
    }

    /// Rules 2, 3, 4, 7 and 9: each task on its own.
    fn tasks(&mut self) {
        let mut seen: HashMap<&TaskId, usize> = HashMap::new();
        let archived = self.state.archived.as_ref();
        for (i, task) in self.state.tasks.iter().enumerate() {
            let id = task.id.as_str();
            if let Some(first) = seen.insert(&task.id, i) {
                self.error(
                    2,
                    "task-id-duplicate",
                    task_path(i).key("id"),
                    Some(id),
                    format!("task id {id} is used twice (first at tasks[{first}])"),
                );
            } else if archived.is_some_and(|a| a.contains_key(&task.id)) {
                self.error(
                    2,
                    "task-id-duplicate",
                    task_path(i).key("id"),
                    Some(id),
                    format!("task id {id} is also in the archive index (archived)"),
                );
            }
            if let Some(p) = task.priority
                && !(1..=5).contains(&p)
            {
                self.error(
                    2,
                    "task-priority",
                    task_path(i).key("priority"),
                    Some(id),
                    format!("priority {p} is outside 1–5 (1 is highest)"),
                );
            }
            self.task_fields(i, task);
        }
    }

    fn task_fields(&mut self, i: usize, task: &Task) {
        let id = Some(task.id.as_str());
        let path = || task_path(i);
        match task.status {
            TaskStatus::Draft if task.assigned_to.is_some() => {
                self.error(
                    3,
                    "draft-assigned",
                    path().key("assigned_to"),
                    id,
                    "a DRAFT task has assigned_to; drafts are invisible to coders".into(),
                );
            }
            TaskStatus::Claimed => {
                if task.assigned_to.is_none() {
                    self.error(
                        3,
                        "claimed-unassigned",
                        path().key("assigned_to"),
                        id,
                        "a CLAIMED task has no assigned_to".into(),
                    );
                }
                match &task.worktree {
                    None => self.error(
                        3,
                        "claimed-no-worktree",
                        path().key("worktree"),
                        id,
                        "a CLAIMED task has no worktree".into(),
                    ),
                    Some(wt) => {
                        if let Some(root) = self.env.root
                            && !self.env.exists(root, wt, true)
                        {
                            self.error(
                                3,
                                "claimed-worktree-missing",
                                path().key("worktree"),
                                id,
                                format!("worktree directory {wt} does not exist"),
                            );
                            self.hint("recreate it by re-claiming the task, or reassign the task");
                        }
                    }
                }
                if task.lease_expires.is_none() {
                    self.error(
                        3,
                        "claimed-no-lease",
                        path().key("lease_expires"),
                        id,
                        "a CLAIMED task has no lease_expires".into(),
                    );
                }
                if task.base_commit.is_none() && task.integration_fix != Some(true) {
                    self.error(
                        3,
                        "claimed-no-base-commit",
                        path().key("base_commit"),
                        id,
                        "a CLAIMED task has no base_commit (only integration fixes may omit it)"
                            .into(),
                    );
                }
            }
            TaskStatus::ReadyForReview if task.review_commit.is_none() => {
                self.error(
                    4,
                    "review-no-commit",
                    path().key("review_commit"),
                    id,
                    "a READY_FOR_REVIEW task has no review_commit".into(),
                );
            }
            TaskStatus::Rejected if is_blank(&task.rejection_reason) => {
                self.error(
                    4,
                    "rejected-no-reason",
                    path().key("rejection_reason"),
                    id,
                    "a REJECTED task has no rejection_reason".into(),
                );
            }
            TaskStatus::Blocked => {
                if is_blank(&task.blocked_reason) {
                    self.error(
                        4,
                        "blocked-no-reason",
                        path().key("blocked_reason"),
                        id,
                        "a BLOCKED task has no blocked_reason".into(),
                    );
                }
                match task.blocked_questions.as_deref() {
                    None | Some([]) => self.error(
                        4,
                        "blocked-no-questions",
                        path().key("blocked_questions"),
                        id,
                        "a BLOCKED task has no blocked_questions".into(),
                    ),
                    Some(q) if q.len() > 3 => self.error(
                        4,
                        "blocked-questions-count",
                        path().key("blocked_questions"),
                        id,
                        format!("a BLOCKED task holds {} questions; at most 3", q.len()),
                    ),
                    _ => {}
                }
            }
            TaskStatus::Superseded => {
                if task.superseded_by.as_ref().is_none_or(Vec::is_empty) {
                    self.error(
                        4,
                        "superseded-no-successors",
                        path().key("superseded_by"),
                        id,
                        "a SUPERSEDED task has no superseded_by".into(),
                    );
                }
                if is_blank(&task.rescope_reason) {
                    self.error(
                        4,
                        "superseded-no-reason",
                        path().key("rescope_reason"),
                        id,
                        "a SUPERSEDED task has no rescope_reason".into(),
                    );
                }
            }
            TaskStatus::Merged if task.worktree.is_some() => {
                self.error(
                    4,
                    "merged-with-worktree",
                    path().key("worktree"),
                    id,
                    "a MERGED task still has a worktree".into(),
                );
            }
            _ => {}
        }
        if task.integration_fix == Some(true)
            && !task
                .history()
                .iter()
                .any(|h| h.kind() == Some(crate::EventKind::IntegrationFailed))
        {
            self.error(
                7,
                "integration-fix-without-failure",
                path().key("integration_fix"),
                id,
                "integration_fix is set but the history has no integration_failed event".into(),
            );
        }
        if let Some(failed) = &task.failed_by {
            let mut unique = HashSet::new();
            for (j, agent) in failed.iter().enumerate() {
                if !unique.insert(agent) {
                    self.error(
                        9,
                        "failed-by-duplicate",
                        path().key("failed_by").index(j),
                        id,
                        format!("failed_by lists {agent} twice"),
                    );
                }
            }
        }
        if task.status.needs_definition() {
            if is_blank(&task.done_when) {
                self.error(
                    9,
                    "missing-done-when",
                    path().key("done_when"),
                    id,
                    format!("a {} task has no done_when", task.status),
                );
                self.hint("state a falsifiable acceptance criterion, e.g. \"GET /users returns 200 with a JSON array\"");
            }
            if is_blank(&task.spec_ref) {
                self.error(
                    9,
                    "missing-spec-ref",
                    path().key("spec_ref"),
                    id,
                    format!("a {} task has no spec_ref", task.status),
                );
            }
        }
        if let Some(spec_ref) = &task.spec_ref
            && !self.env.skip_spec_check
            && let Some(root) = self.env.root
        {
            let file = spec_ref.split('#').next().unwrap_or_default();
            if !file.is_empty() && !self.env.exists(root, file, false) {
                self.error(
                    9,
                    "spec-file-missing",
                    path().key("spec_ref"),
                    id,
                    format!("spec file {file} does not exist"),
                );
                self.hint("create the spec, fix spec_ref, or set SKIP_SPEC_FILE_CHECK=true (--skip-spec-check)");
            }
        }
    }

    /// Rule 5: one active task per agent.
    fn assignments(&mut self) {
        let mut active: HashMap<&AgentId, &TaskId> = HashMap::new();
        for (i, task) in self.state.tasks.iter().enumerate() {
            if !matches!(
                task.status,
                TaskStatus::Claimed | TaskStatus::ReadyForReview | TaskStatus::Rejected
            ) {
                continue;
            }
            let Some(agent) = &task.assigned_to else {
                continue;
            };
            if let Some(other) = active.insert(agent, &task.id) {
                self.error(5, "agent-multiple-active", task_path(i).key("assigned_to"), Some(agent.as_str()), format!("{agent} is assigned to both {other} and {} (CLAIMED, READY_FOR_REVIEW or REJECTED)", task.id));
                active.insert(agent, other);
            }
        }
    }

    /// Rule 6: references, cycles, satisfied dependencies of CLAIMED tasks.
    fn dependencies(&mut self) {
        let index: HashMap<&TaskId, usize> = self
            .state
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (&t.id, i))
            .collect();
        for (i, task) in self.state.tasks.iter().enumerate() {
            for (j, dep) in task.depends_on().iter().enumerate() {
                if !self.exists(dep) {
                    self.error(
                        6,
                        "depends-on-unknown",
                        task_path(i).key("depends_on").index(j),
                        Some(task.id.as_str()),
                        format!("depends_on names {dep}, which is not a task"),
                    );
                }
            }
            if task.status == TaskStatus::Claimed {
                let unmet: Vec<&str> = task
                    .depends_on()
                    .iter()
                    .filter(|d| self.state.task_exists(d) && !self.state.dependency_satisfied(d))
                    .map(TaskId::as_str)
                    .collect();
                if !unmet.is_empty() {
                    self.error(6, "claimed-deps-unsatisfied", task_path(i).key("depends_on"), Some(task.id.as_str()), format!("a CLAIMED task depends on {}, not satisfied (MERGED, or SUPERSEDED by satisfied tasks)", unmet.join(", ")));
                }
            }
        }
        // Cycles: depth-first search with colours; each cycle reported once, at the task
        // where it was closed.
        let mut colour = vec![0u8; self.state.tasks.len()];
        let mut reported: HashSet<Vec<usize>> = HashSet::new();
        for start in 0..self.state.tasks.len() {
            let mut stack: Vec<(usize, usize)> = Vec::new();
            if colour[start] != 0 {
                continue;
            }
            colour[start] = 1;
            stack.push((start, 0));
            while let Some(&mut (node, ref mut next)) = stack.last_mut() {
                let deps = self.state.tasks[node].depends_on();
                if *next < deps.len() {
                    let dep = &deps[*next];
                    *next += 1;
                    let Some(&d) = index.get(dep) else { continue };
                    match colour[d] {
                        0 => {
                            colour[d] = 1;
                            stack.push((d, 0));
                        }
                        1 => {
                            let from = stack.iter().position(|(n, _)| *n == d).unwrap_or(0);
                            let cycle: Vec<usize> = stack[from..].iter().map(|(n, _)| *n).collect();
                            let mut key = cycle.clone();
                            key.sort_unstable();
                            if reported.insert(key) {
                                let mut names: Vec<&str> = cycle
                                    .iter()
                                    .map(|n| self.state.tasks[*n].id.as_str())
                                    .collect();
                                names.push(self.state.tasks[d].id.as_str());
                                let at = *cycle.last().unwrap_or(&d);
                                let task_id = self.state.tasks[at].id.as_str().to_owned();
                                self.error(
                                    6,
                                    "dependency-cycle",
                                    task_path(at).key("depends_on"),
                                    Some(&task_id),
                                    format!("dependency cycle: {}", names.join(" → ")),
                                );
                            }
                        }
                        _ => {}
                    }
                } else {
                    colour[node] = 2;
                    stack.pop();
                }
            }
        }
    }

    /// Rule 8: agents.
    fn agents(&mut self) {
        for (id, agent) in self.state.agents.iter() {
            let path = || FieldPath::root().key("agents").key(id.as_str());
            let aid = Some(id.as_str());
            if agent.role != id.role() {
                self.error(
                    8,
                    "agent-role-mismatch",
                    path().key("role"),
                    aid,
                    format!(
                        "agent {id} has role {} but its id names role {}",
                        agent.role,
                        id.role()
                    ),
                );
            }
            if agent.status != AgentStatus::Working {
                continue;
            }
            if agent.current_task.is_none() {
                self.error(
                    8,
                    "working-no-task",
                    path().key("current_task"),
                    aid,
                    "a WORKING agent has no current_task".into(),
                );
            }
            let live = self.env.live_leases.get(id).copied();
            let effective = match (agent.lease_expires, live) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            match effective {
                None => self.error(
                    8,
                    "working-no-lease",
                    path().key("lease_expires"),
                    aid,
                    "a WORKING agent has no lease_expires".into(),
                ),
                Some(lease) => {
                    let late = self.env.now.seconds_since(lease);
                    if late > LEASE_GRACE_SECONDS {
                        self.warn(
                            8,
                            "working-lease-expired",
                            path().key("lease_expires"),
                            aid,
                            format!("the WORKING agent's lease expired {late} s ago ({lease})"),
                        );
                        self.hint("the agent is probably gone: restart it or release its task (liza release-claim)");
                    }
                }
            }
        }
    }

    /// Rule 10: handoffs, discoveries (types only, see decoding), anomalies' details.
    fn records(&mut self) {
        if let Some(handoff) = &self.state.handoff {
            for (task, h) in handoff.iter() {
                let path = || FieldPath::root().key("handoff").key(task.as_str());
                if is_blank(&h.summary) {
                    self.error(
                        10,
                        "handoff-no-summary",
                        path().key("summary"),
                        Some(task.as_str()),
                        "a handoff has no summary".into(),
                    );
                }
                if is_blank(&h.next_action) {
                    self.error(
                        10,
                        "handoff-no-next-action",
                        path().key("next_action"),
                        Some(task.as_str()),
                        "a handoff has no next_action".into(),
                    );
                }
            }
        }
        for (i, anomaly) in self.state.anomalies().iter().enumerate() {
            let required = anomaly.kind.required_details();
            let missing: Vec<&str> = required
                .iter()
                .copied()
                .filter(|key| {
                    anomaly
                        .details
                        .as_ref()
                        .and_then(|d| d.get(key))
                        .is_none_or(|v| matches!(v.value, Value::Null))
                })
                .collect();
            if !missing.is_empty() {
                self.error(
                    10,
                    "anomaly-details",
                    FieldPath::root().key("anomalies").index(i).key("details"),
                    anomaly.task.as_deref(),
                    format!(
                        "a {} anomaly needs details {}",
                        anomaly.kind,
                        missing.join(", ")
                    ),
                );
            }
        }
    }

    /// Rule 11: sprint references and timeline.
    fn sprint(&mut self) {
        let sprint = &self.state.sprint;
        let path = || FieldPath::root().key("sprint");
        match &sprint.goal_ref {
            Some(r) if *r != self.state.goal.id => {
                self.error(
                    11,
                    "sprint-goal-ref",
                    path().key("goal_ref"),
                    None,
                    format!("sprint.goal_ref {r} is not goal.id {}", self.state.goal.id),
                );
            }
            None => self.warn(
                11,
                "sprint-goal-ref",
                path().key("goal_ref"),
                None,
                "sprint.goal_ref is missing".into(),
            ),
            _ => {}
        }
        for (list, ids) in [("planned", sprint.planned()), ("stretch", sprint.stretch())] {
            for (j, id) in ids.iter().enumerate() {
                if !self.exists(id) {
                    let check = if list == "planned" {
                        "sprint-planned-unknown"
                    } else {
                        "sprint-stretch-unknown"
                    };
                    self.error(
                        11,
                        check,
                        path().key("scope").key(list).index(j),
                        Some(id.as_str()),
                        format!("sprint.scope.{list} names {id}, which is not a task"),
                    );
                }
            }
        }
        if sprint.timeline.as_ref().and_then(|t| t.started).is_none() {
            self.error(
                11,
                "sprint-no-start",
                path().key("timeline").key("started"),
                None,
                "sprint.timeline.started is not set".into(),
            );
        }
    }

    /// Rule 11: config ranges and unknown keys.
    fn config(&mut self) {
        let config = &self.state.config;
        let path = |key: &str| {
            key.split('.')
                .fold(FieldPath::root().key("config"), |p, k| p.key(k))
        };
        for (key, value, min) in config.integer_settings() {
            if let Some(v) = value
                && v < min
            {
                self.error(
                    11,
                    "config-range",
                    path(key),
                    None,
                    format!("config.{key} is {v}; it must be at least {min}"),
                );
            }
        }
        if config.lease_duration() <= config.heartbeat_interval() {
            self.error(
                11,
                "config-range",
                path("lease_duration"),
                None,
                format!(
                    "config.lease_duration ({} s) must be longer than heartbeat_interval ({} s)",
                    config.lease_duration(),
                    config.heartbeat_interval()
                ),
            );
        }
        if let Some(timeouts) = &config.execution_timeout {
            for (role, value) in [
                ("coder", timeouts.coder),
                ("code-reviewer", timeouts.code_reviewer),
                ("planner", timeouts.planner),
            ] {
                if let Some(v) = value
                    && v < 1
                {
                    self.error(
                        11,
                        "config-range",
                        path("execution_timeout").key(role),
                        None,
                        format!("config.execution_timeout.{role} is {v}; it must be at least 1"),
                    );
                }
            }
        }
        if let Some(branch) = &config.integration_branch
            && let Some(problem) = integration_branch_problem(branch)
        {
            self.error(
                11,
                "config-value",
                path("integration_branch"),
                None,
                format!("integration_branch {branch:?} {problem}"),
            );
        }
        if let Some(remote) = &config.git_remote
            && let Some(problem) = git_remote_problem(remote)
        {
            self.error(
                11,
                "config-value",
                path("git_remote"),
                None,
                format!("git_remote {remote:?} {problem}"),
            );
        }
        for (model, price) in config.prices.iter().flat_map(|p| p.0.iter()) {
            for (key, value, needed) in [
                ("input", price.input, true),
                ("output", price.output, true),
                ("cache_read", price.cache_read, false),
                ("cache_write", price.cache_write, false),
            ] {
                let problem = match value.map(crate::codec::Number::as_f64) {
                    None if needed => Some("is missing".to_owned()),
                    Some(v) if !v.is_finite() || v < 0.0 => Some(format!("is {v}")),
                    _ => None,
                };
                if let Some(problem) = problem {
                    self.error(
                        11,
                        "config-value",
                        path("prices").key(model).key(key),
                        None,
                        format!(
                            "config.prices.{model}.{key} {problem}; it must be a price in US dollars per million tokens, 0 or more"
                        ),
                    );
                }
            }
        }
        if let Some(budget) = &config.budget {
            for (scope, limit) in [
                ("task", &budget.task),
                ("sprint", &budget.sprint),
                ("agent_per_day", &budget.agent_per_day),
            ] {
                let Some(limit) = limit else { continue };
                if let Some(t) = limit.tokens
                    && t < 1
                {
                    self.error(
                        11,
                        "config-range",
                        path("budget").key(scope).key("tokens"),
                        None,
                        format!("config.budget.{scope}.tokens is {t}; it must be at least 1"),
                    );
                }
                if let Some(usd) = limit.usd.map(crate::codec::Number::as_f64)
                    && !(usd.is_finite() && usd > 0.0)
                {
                    self.error(
                        11,
                        "config-range",
                        path("budget").key(scope).key("usd"),
                        None,
                        format!("config.budget.{scope}.usd is {usd}; it must be more than 0"),
                    );
                }
            }
        }
        for (i, check) in config.checks.iter().flatten().enumerate() {
            if let Some(t) = check.timeout
                && t < 1
            {
                self.error(
                    11,
                    "config-range",
                    path("checks").index(i).key("timeout"),
                    None,
                    format!(
                        "check {} has timeout {t}; it must be at least 1",
                        check.name
                    ),
                );
            }
        }
        if let Some(sandbox) = &config.sandbox {
            for (key, list) in [
                ("read_only", sandbox.read_only()),
                ("writable", sandbox.writable()),
            ] {
                for (i, entry) in list.iter().enumerate() {
                    if let Some(problem) = sandbox_path_problem(entry, key, self.env.root) {
                        self.error(
                            11,
                            "config-value",
                            path("sandbox").key(key).index(i),
                            None,
                            format!("sandbox.{key} {entry:?} {problem}"),
                        );
                    }
                }
            }
            for entry in sandbox.extra.iter() {
                self.warn(
                    11,
                    "config-unknown-key",
                    path("sandbox").key(&entry.key),
                    None,
                    format!(
                        "config.sandbox.{} is not a sandbox setting (mode, network, checks_network, read_only, writable); it is kept but does nothing",
                        entry.key
                    ),
                );
            }
        }
        for entry in config.extra.iter() {
            if LEGACY_CONFIG_KEYS.contains(&entry.key.as_str()) {
                self.warn(
                    11,
                    "config-legacy-key",
                    path(&entry.key),
                    None,
                    format!(
                        "config.{} is a setting of the original scripts; liza does not use it",
                        entry.key
                    ),
                );
            } else {
                self.warn(
                    11,
                    "config-unknown-key",
                    path(&entry.key),
                    None,
                    format!(
                        "config.{} is not a liza setting (misspelt?); it is kept but does nothing",
                        entry.key
                    ),
                );
            }
        }
    }
}

fn is_blank(text: &Option<String>) -> bool {
    text.as_deref().is_none_or(|t| t.trim().is_empty())
}

/// Why `entry` cannot be an extra path of the sandbox (specs/sandbox.md *Configuration*):
/// it must be absolute or under `~/`, without `..`, and must not show what the sandbox
/// hides by design — the whole machine, the whole home, the project's checkout, its
/// `.liza/`, `.git/` or other worktrees.
pub fn sandbox_path_problem(entry: &str, key: &str, root: Option<&Path>) -> Option<String> {
    let path = Path::new(entry.strip_prefix("~/").unwrap_or(entry));
    if entry == "~" || entry == "~/" {
        return Some("is the whole home directory: name the directories a run needs".into());
    }
    if !entry.starts_with('/') && !entry.starts_with("~/") {
        return Some("must be an absolute path or start with ~/".into());
    }
    if path
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Some("must not contain `..`".into());
    }
    if entry.trim_end_matches('/').is_empty() {
        return Some("is the whole machine".into());
    }
    if let Some(root) = root
        && entry.starts_with('/')
    {
        let shown = Path::new(entry);
        if root.starts_with(shown) {
            return Some(format!(
                "would show the project's checkout ({}) to every run",
                root.display()
            ));
        }
        for private in [".liza", ".git", ".worktrees"] {
            if shown.starts_with(root.join(private)) {
                return Some(format!(
                    "is inside the project's {private}/, which runs reach only as liza shows it"
                ));
            }
        }
        if key == "writable" && shown.starts_with(root) {
            return Some("is inside the project's checkout, which runs may not write".into());
        }
    }
    None
}

/// The subset of git's ref-name rules that matters for a branch liza creates.
/// What is wrong with `name` as the integration branch, if anything: it must be a plain
/// branch name (`refs/heads/x` would create `refs/heads/refs/heads/x`) outside the
/// `task/` namespace of task branches (`task/t1` would be one of them; a branch `task`
/// would make every `task/<id>` impossible to create).
/// Why `url` cannot be the shared remote: git reads an argument starting with `-` as an
/// option, and control characters or spaces are no URL or path a person meant.
pub fn git_remote_problem(url: &str) -> Option<String> {
    if url.trim().is_empty() {
        return Some("is empty".into());
    }
    if url.starts_with('-') {
        return Some("starts with '-', which git would read as an option".into());
    }
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Some("holds spaces or control characters".into());
    }
    None
}

/// What is wrong with `name` as the integration branch (the fragment follows the name in a
/// message), or `None` when it is a plain branch name of its own.
pub fn integration_branch_problem(name: &str) -> Option<String> {
    if !is_branch_name(name) {
        return Some("is not a valid git branch name".into());
    }
    if let Some(plain) = name
        .strip_prefix("refs/heads/")
        .or_else(|| name.strip_prefix("heads/"))
    {
        return Some(format!("is a ref, not a branch name; write {plain:?}"));
    }
    if name.starts_with("refs/") || name == "HEAD" {
        return Some("is not a plain branch name".into());
    }
    if name == "task" || name.starts_with("task/") {
        return Some("collides with the task branches (task/<id>); choose another name".into());
    }
    None
}

fn is_branch_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(['-', '/'])
        && !name.ends_with(['/', '.'])
        // git check-ref-format: no component starts with `.` or ends with `.lock`.
        && !name
            .split('/')
            .any(|part| part.starts_with('.') || part.ends_with(".lock"))
        && !name.contains("..")
        && !name.contains("//")
        && !name.contains("@{")
        && name != "@"
        && !name.chars().any(|c| {
            c.is_control()
                || c.is_whitespace()
                || matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '\\')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_paths_may_not_show_what_the_sandbox_hides_by_design() {
        let root = Path::new("/home/me/project");
        for (entry, key) in [
            ("~", "writable"),
            ("/", "read_only"),
            ("cache", "read_only"),
            ("~/../etc", "read_only"),
            ("/home/me", "read_only"),
            ("/home/me/project", "read_only"),
            ("/home/me/project/.liza", "read_only"),
            ("/home/me/project/.git/refs", "writable"),
            ("/home/me/project/.worktrees/t-2", "read_only"),
            ("/home/me/project/build", "writable"),
        ] {
            assert!(
                sandbox_path_problem(entry, key, Some(root)).is_some(),
                "{key} {entry}"
            );
        }
        for (entry, key) in [
            ("~/.cargo/registry", "writable"),
            ("/opt/sdk", "read_only"),
            ("/home/me/project/vendor", "read_only"),
            ("/home/me/other", "writable"),
        ] {
            assert_eq!(
                sandbox_path_problem(entry, key, Some(root)),
                None,
                "{key} {entry}"
            );
        }
    }

    #[test]
    fn branch_names() {
        // As git 2.47's `git check-ref-format --branch` judges them.
        for good in [
            "integration",
            "liza/integration",
            "int-2",
            "x/-y",
            "a@b",
            "a.b/c",
        ] {
            assert!(is_branch_name(good), "{good}");
        }
        for bad in [
            "refs/heads/x",
            "heads/x",
            "refs/tags/v1",
            "HEAD",
            "task",
            "task/t1",
        ] {
            assert!(integration_branch_problem(bad).is_some(), "{bad}");
        }
        assert_eq!(integration_branch_problem("liza/integration"), None);
        for bad in [
            "", "-x", "a..b", "a b", "x.lock", "a~1", "a:b", "a/", "@", "a/.b", "a.lock/b",
            "a/.lock", ".a", "a//b",
        ] {
            assert!(!is_branch_name(bad), "{bad}");
        }
    }
}
