//! The circuit breaker's anomaly patterns (specs/operations.md *Sprints, checkpoints, circuit
//! breaker*), as a pure function of the state: every pattern that matches the current
//! sprint's anomalies, each with its severity, evidence and the tasks it touches. Groups
//! are keyed by the detail the pattern names; an anomaly without that detail belongs to no
//! group (nulls never make a cluster).

use crate::EventKind;
use std::collections::BTreeMap;

use crate::State;
use crate::event::RunEnded;
use crate::model::{Anomaly, AnomalyType};

/// How serious a match is; `config.circuit_breaker.checkpoint_at` lists the severities
/// that stop the sprint for a person.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The design is at fault.
    ArchitectureFlaw,
    /// The spec is at fault.
    SpecFlaw,
    /// Something outside the project is at fault.
    ExternalDependency,
}

impl Severity {
    /// The name `checkpoint_at` lists it by.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::ArchitectureFlaw => "ARCHITECTURE_FLAW",
            Severity::SpecFlaw => "SPEC_FLAW",
            Severity::ExternalDependency => "EXTERNAL_DEPENDENCY",
        }
    }
}

/// One pattern that matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternMatch {
    /// The pattern's name, e.g. `retry_cluster`.
    pub pattern: &'static str,
    /// How serious it is.
    pub severity: Severity,
    /// The shared value (error pattern, assumption, spec, service), when grouped.
    pub group: Option<String>,
    /// How many occurrences made the match: anomalies, crash loops, usage limits hit or
    /// churned tasks.
    pub count: usize,
    /// One line per anomaly: reporter, task and the detail that put it in the group.
    pub evidence: Vec<String>,
    /// The tasks it touches.
    pub tasks: Vec<String>,
}

/// A pattern: the anomaly type, the detail it groups by (`None`: all of that type form one
/// group), how many make a match, and its severity.
struct Pattern {
    name: &'static str,
    kind: AnomalyType,
    group_by: Option<&'static str>,
    /// With `group_by: None`, only anomalies that have this detail count.
    requires: Option<&'static str>,
    at_least: usize,
    severity: Severity,
}

const PATTERNS: &[Pattern] = &[
    Pattern {
        name: "retry_cluster",
        kind: AnomalyType::RetryLoop,
        group_by: Some("error_pattern"),
        requires: None,
        at_least: 3,
        severity: Severity::ArchitectureFlaw,
    },
    Pattern {
        name: "debt_accumulation",
        kind: AnomalyType::TradeOff,
        group_by: None,
        requires: Some("debt_created"),
        at_least: 3,
        severity: Severity::ArchitectureFlaw,
    },
    Pattern {
        name: "assumption_cascade",
        kind: AnomalyType::AssumptionViolated,
        group_by: Some("assumption"),
        requires: None,
        at_least: 2,
        severity: Severity::SpecFlaw,
    },
    Pattern {
        name: "spec_gap_cluster",
        kind: AnomalyType::SpecAmbiguity,
        group_by: Some("spec_ref"),
        requires: None,
        at_least: 2,
        severity: Severity::SpecFlaw,
    },
    Pattern {
        name: "workaround_pattern",
        kind: AnomalyType::Workaround,
        group_by: None,
        requires: None,
        at_least: 3,
        severity: Severity::ArchitectureFlaw,
    },
    Pattern {
        name: "external_service_outage",
        kind: AnomalyType::ExternalBlocker,
        group_by: Some("blocker_service"),
        requires: None,
        at_least: 2,
        severity: Severity::ExternalDependency,
    },
];

/// `anomaly`'s detail `key` as text (numbers too); `None` when absent, null or blank.
fn detail(anomaly: &Anomaly, key: &str) -> Option<String> {
    let node = anomaly.details.as_ref()?.get(key)?;
    let text = match &node.value {
        crate::node::Value::Str(s) => s.trim().to_owned(),
        crate::node::Value::Int(n) => n.to_string(),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// Every pattern matching the current sprint's anomalies (those since the sprint started),
/// all of them, in pattern then group order.
pub fn analyze(state: &State) -> Vec<PatternMatch> {
    let since = state.sprint.timeline.as_ref().and_then(|t| t.started);
    let current: Vec<&Anomaly> = state
        .anomalies()
        .iter()
        .filter(|a| match (since, a.timestamp) {
            (Some(since), Some(at)) => at >= since,
            _ => true,
        })
        .collect();
    let mut matches = Vec::new();
    for p in PATTERNS {
        let mut groups: BTreeMap<Option<String>, Vec<&Anomaly>> = BTreeMap::new();
        for a in current.iter().filter(|a| a.kind == p.kind) {
            match p.group_by {
                Some(key) => {
                    if let Some(value) = detail(a, key) {
                        groups.entry(Some(value)).or_default().push(a);
                    }
                }
                None => {
                    if p.requires.is_none_or(|key| detail(a, key).is_some()) {
                        groups.entry(None).or_default().push(a);
                    }
                }
            }
        }
        for (group, members) in groups {
            if members.len() < p.at_least {
                continue;
            }
            let key = p.group_by.or(p.requires);
            let mut tasks: Vec<String> = members.iter().filter_map(|a| a.task.clone()).collect();
            tasks.sort();
            tasks.dedup();
            matches.push(PatternMatch {
                pattern: p.name,
                severity: p.severity,
                group,
                count: members.len(),
                evidence: members
                    .iter()
                    .map(|a| {
                        format!(
                            "{} on {}{}",
                            a.reporter.as_deref().unwrap_or("?"),
                            a.task.as_deref().unwrap_or("?"),
                            key.and_then(|k| detail(a, k))
                                .map(|v| format!(": {v}"))
                                .unwrap_or_default()
                        )
                    })
                    .collect(),
                tasks,
            });
        }
    }
    matches
}

/// Crash loops (3 crashes of one agent on one task within 5 minutes) by this many
/// distinct agents in a sprint say the agents' tooling or environment is broken.
pub const CRASH_LOOP_AGENTS: usize = 2;
/// Usage limits hit by this many distinct agents within [`STORM_WINDOW_S`].
pub const STORM_AGENTS: usize = 2;
/// The window, in seconds, of a usage-limit storm.
pub const STORM_WINDOW_S: i64 = 30 * 60;
/// Tasks rejected at least [`CHURN_REJECTIONS`] times each, this many in one sprint.
pub const CHURN_TASKS: usize = 2;
/// Rejections of one task that count it towards rejection churn.
pub const CHURN_REJECTIONS: usize = 3;

/// The runtime patterns of the current sprint: crash loops, usage-limit storms (from the
/// agents' run ends in log.yaml) and rejection churn (from the tasks' histories).
pub fn analyze_runtime(state: &State, run_ends: &[RunEnded]) -> Vec<PatternMatch> {
    let since = state.sprint.timeline.as_ref().and_then(|t| t.started);
    let ends: Vec<&RunEnded> = run_ends
        .iter()
        .filter(|r| since.is_none_or(|s| r.ts >= s))
        .collect();
    let mut matches = Vec::new();
    // Crash loops, per agent and task.
    let mut windows: BTreeMap<(&str, Option<&str>), Vec<crate::Timestamp>> = BTreeMap::new();
    let mut loops: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for end in ends.iter().filter(|e| e.is_crash()) {
        let times = windows
            .entry((end.agent.as_str(), end.task.as_deref()))
            .or_default();
        times.retain(|t| end.ts.seconds_since(*t) < 300);
        times.push(end.ts);
        if times.len() == 3 {
            loops.entry(end.agent.as_str()).or_default().push(format!(
                "{} crashed 3 times in 5 minutes{} (last at {})",
                end.agent,
                end.task
                    .as_deref()
                    .map_or(String::new(), |t| format!(" on {t}")),
                end.ts
            ));
        }
    }
    if loops.len() >= CRASH_LOOP_AGENTS {
        let tasks = sorted(
            ends.iter()
                .filter(|e| e.is_crash() && loops.contains_key(e.agent.as_str()))
                .filter_map(|e| e.task.clone()),
        );
        matches.push(PatternMatch {
            pattern: "crash_loops",
            severity: Severity::ExternalDependency,
            group: None,
            count: loops.values().map(Vec::len).sum(),
            evidence: loops.into_values().flatten().collect(),
            tasks,
        });
    }
    // Usage-limit storms: distinct agents within a sliding window.
    let limits: Vec<&&RunEnded> = ends
        .iter()
        .filter(|e| e.exit_class == "usage_limit")
        .collect();
    for (i, last) in limits.iter().enumerate() {
        let window: Vec<&&&RunEnded> = limits[..=i]
            .iter()
            .filter(|e| last.ts.seconds_since(e.ts) <= STORM_WINDOW_S)
            .collect();
        let agents = sorted(window.iter().map(|e| e.agent.clone()));
        if agents.len() >= STORM_AGENTS {
            matches.push(PatternMatch {
                pattern: "usage_limit_storm",
                severity: Severity::ExternalDependency,
                group: None,
                count: window.len(),
                evidence: window
                    .iter()
                    .map(|e| format!("{} hit a provider usage limit at {}", e.agent, e.ts))
                    .collect(),
                tasks: sorted(window.iter().filter_map(|e| e.task.clone())),
            });
            break;
        }
    }
    // Rejection churn: tasks of this sprint rejected again and again.
    let churned: Vec<(String, usize)> = state
        .tasks
        .iter()
        .map(|t| {
            let n = t
                .history()
                .iter()
                .filter(|e| {
                    e.kind() == Some(EventKind::Rejected) && since.is_none_or(|s| e.time >= s)
                })
                .count();
            (t.id.to_string(), n)
        })
        .filter(|(_, n)| *n >= CHURN_REJECTIONS)
        .collect();
    if churned.len() >= CHURN_TASKS {
        matches.push(PatternMatch {
            pattern: "rejection_churn",
            severity: Severity::SpecFlaw,
            group: None,
            count: churned.len(),
            evidence: churned
                .iter()
                .map(|(t, n)| format!("{t} rejected {n} times this sprint"))
                .collect(),
            tasks: churned.into_iter().map(|(t, _)| t).collect(),
        });
    }
    matches
}

fn sorted(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = items.collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{Entry, Node, Pos, Value};

    fn anomaly(kind: AnomalyType, task: &str, details: &[(&str, Option<&str>)]) -> Anomaly {
        Anomaly {
            timestamp: None,
            task: Some(task.into()),
            reporter: Some("coder-1".into()),
            kind,
            details: Some(Node::new(Value::Map(
                details
                    .iter()
                    .map(|(k, v)| Entry {
                        key: (*k).into(),
                        key_pos: Pos::UNKNOWN,
                        value: Node::new(v.map_or(Value::Null, |s| Value::Str(s.into()))),
                    })
                    .collect(),
            ))),
            seen_by: None,
            extra: Default::default(),
        }
    }

    fn state_with(anomalies: Vec<Anomaly>) -> State {
        let text = include_str!("../../../../tests/fixtures/mid-sprint.yaml");
        let mut state = crate::document::decode(text.as_bytes()).unwrap().state;
        if let Some(t) = state.sprint.timeline.as_mut() {
            t.started = None;
        }
        state.anomalies = Some(anomalies);
        state
    }

    fn names(matches: &[PatternMatch]) -> Vec<(&str, Option<&str>, usize)> {
        matches
            .iter()
            .map(|m| (m.pattern, m.group.as_deref(), m.count))
            .collect()
    }

    #[test]
    fn each_pattern_triggers_on_its_set() {
        use AnomalyType::*;
        let retry = |t: &str, p: &str| {
            anomaly(
                RetryLoop,
                t,
                &[("count", Some("3")), ("error_pattern", Some(p))],
            )
        };
        let state = state_with(vec![
            retry("t-1", "E0308"),
            retry("t-2", "E0308"),
            retry("t-3", "E0308"),
            retry("t-4", "timeout"),
            anomaly(TradeOff, "t-1", &[("debt_created", Some("no cache"))]),
            anomaly(TradeOff, "t-2", &[("debt_created", Some("no index"))]),
            anomaly(TradeOff, "t-3", &[("debt_created", Some("sync io"))]),
            anomaly(
                AssumptionViolated,
                "t-1",
                &[("assumption", Some("UTF-8 input"))],
            ),
            anomaly(
                AssumptionViolated,
                "t-5",
                &[("assumption", Some("UTF-8 input"))],
            ),
            anomaly(
                SpecAmbiguity,
                "t-1",
                &[("spec_ref", Some("specs/report.md"))],
            ),
            anomaly(
                SpecAmbiguity,
                "t-2",
                &[("spec_ref", Some("specs/report.md"))],
            ),
            anomaly(Workaround, "t-1", &[]),
            anomaly(Workaround, "t-2", &[]),
            anomaly(Workaround, "t-3", &[]),
            anomaly(
                ExternalBlocker,
                "t-1",
                &[("blocker_service", Some("registry"))],
            ),
            anomaly(
                ExternalBlocker,
                "t-4",
                &[("blocker_service", Some("registry"))],
            ),
        ]);
        let found = analyze(&state);
        assert_eq!(
            names(&found),
            [
                ("retry_cluster", Some("E0308"), 3),
                ("debt_accumulation", None, 3),
                ("assumption_cascade", Some("UTF-8 input"), 2),
                ("spec_gap_cluster", Some("specs/report.md"), 2),
                ("workaround_pattern", None, 3),
                ("external_service_outage", Some("registry"), 2),
            ]
        );
        assert_eq!(found[0].tasks, ["t-1", "t-2", "t-3"]);
        assert_eq!(found[0].evidence[0], "coder-1 on t-1: E0308");
        assert_eq!(found[5].severity, Severity::ExternalDependency);
    }

    #[test]
    fn sets_below_the_threshold_or_grouped_by_null_do_not() {
        use AnomalyType::*;
        let state = state_with(vec![
            anomaly(RetryLoop, "t-1", &[("error_pattern", Some("E1"))]),
            anomaly(RetryLoop, "t-2", &[("error_pattern", Some("E2"))]),
            anomaly(RetryLoop, "t-3", &[("error_pattern", Some("E3"))]),
            // Nulls never cluster, however many.
            anomaly(SpecAmbiguity, "t-1", &[("spec_ref", None)]),
            anomaly(SpecAmbiguity, "t-2", &[("spec_ref", None)]),
            anomaly(SpecAmbiguity, "t-3", &[]),
            anomaly(ExternalBlocker, "t-1", &[("blocker_service", Some("  "))]),
            anomaly(ExternalBlocker, "t-2", &[("blocker_service", Some(""))]),
            // Trade-offs without debt are not debt.
            anomaly(TradeOff, "t-1", &[("debt_created", None)]),
            anomaly(TradeOff, "t-2", &[("debt_created", None)]),
            anomaly(TradeOff, "t-3", &[("debt_created", Some("x"))]),
            anomaly(Workaround, "t-1", &[]),
            anomaly(Workaround, "t-2", &[]),
        ]);
        assert!(analyze(&state).is_empty(), "{:?}", names(&analyze(&state)));
    }

    #[test]
    fn only_the_current_sprints_anomalies_count() {
        let mut state = state_with(Vec::new());
        let started = crate::Timestamp::parse("2026-03-01T10:00:00Z").unwrap();
        state
            .sprint
            .timeline
            .get_or_insert_with(Default::default)
            .started = Some(started);
        let mut old = anomaly(AnomalyType::Workaround, "t-1", &[]);
        old.timestamp = Some(started.plus_seconds(-60));
        let mut new = anomaly(AnomalyType::Workaround, "t-2", &[]);
        new.timestamp = Some(started.plus_seconds(60));
        state.anomalies = Some(vec![old.clone(), old, new.clone(), new]);
        assert!(analyze(&state).is_empty());
    }

    fn end(agent: &str, task: Option<&str>, class: &str, at: i64) -> RunEnded {
        RunEnded {
            ts: crate::Timestamp::parse("2026-03-01T10:00:00Z")
                .unwrap()
                .plus_seconds(at),
            agent: agent.into(),
            role: "coder".into(),
            task: task.map(Into::into),
            exit_class: class.into(),
            revision: None,
        }
    }

    #[test]
    fn crash_loops_of_two_agents_trigger_and_one_or_slow_crashes_do_not() {
        let state = state_with(Vec::new());
        let looped = |agent: &'static str, task: &'static str, start: i64| {
            (0..3).map(move |i| end(agent, Some(task), "crash", start + i * 60))
        };
        let two: Vec<RunEnded> = looped("coder-1", "t-1", 0)
            .chain(looped("coder-2", "t-2", 30))
            .collect();
        let m = analyze_runtime(&state, &two);
        assert_eq!(names(&m), [("crash_loops", None, 2)]);
        assert_eq!(m[0].severity, Severity::ExternalDependency);
        assert_eq!(m[0].tasks, ["t-1", "t-2"]);
        // One agent's loop is the supervisor's business (the task is blocked), not a pattern.
        let one: Vec<RunEnded> = looped("coder-1", "t-1", 0).collect();
        assert!(analyze_runtime(&state, &one).is_empty());
        // Three crashes spread over more than 5 minutes are no loop.
        let slow: Vec<RunEnded> = (0..3)
            .flat_map(|i| {
                [
                    end("coder-1", Some("t-1"), "crash", i * 200),
                    end("coder-2", Some("t-2"), "crash", i * 200),
                ]
            })
            .collect();
        assert!(analyze_runtime(&state, &slow).is_empty());
        // Runs that ended otherwise never count as crashes.
        let fine: Vec<RunEnded> = (0..6)
            .map(|i| end("coder-1", Some("t-1"), "graceful_abort", i))
            .collect();
        assert!(analyze_runtime(&state, &fine).is_empty());
    }

    #[test]
    fn usage_limits_of_two_agents_within_half_an_hour_are_a_storm() {
        let state = state_with(Vec::new());
        let storm = [
            end("coder-1", Some("t-1"), "usage_limit", 0),
            end("code-reviewer-1", None, "usage_limit", 600),
        ];
        let m = analyze_runtime(&state, &storm);
        assert_eq!(names(&m), [("usage_limit_storm", None, 2)]);
        let same_agent = [
            end("coder-1", Some("t-1"), "usage_limit", 0),
            end("coder-1", Some("t-1"), "usage_limit", 600),
        ];
        assert!(analyze_runtime(&state, &same_agent).is_empty());
        let apart = [
            end("coder-1", Some("t-1"), "usage_limit", 0),
            end("coder-2", Some("t-2"), "usage_limit", 3600),
        ];
        assert!(analyze_runtime(&state, &apart).is_empty());
    }

    #[test]
    fn rejection_churn_needs_two_tasks_rejected_three_times() {
        use crate::model::HistoryEvent;
        let mut state = state_with(Vec::new());
        let at = crate::Timestamp::parse("2026-03-01T10:00:00Z").unwrap();
        let rejected = |n: usize| -> Vec<HistoryEvent> {
            (0..n)
                .map(|i| HistoryEvent {
                    time: at.plus_seconds(i as i64),
                    event: "rejected".into(),
                    agent: Some("code-reviewer-1".into()),
                    extra: Default::default(),
                })
                .collect()
        };
        let ids: Vec<_> = state.tasks.iter().map(|t| t.id.clone()).collect();
        assert!(ids.len() >= 2);
        state.task_mut(&ids[0]).unwrap().history = Some(rejected(3).into());
        state.task_mut(&ids[1]).unwrap().history = Some(rejected(2).into());
        assert!(analyze_runtime(&state, &[]).is_empty(), "one churned task");
        state.task_mut(&ids[1]).unwrap().history = Some(rejected(3).into());
        let m = analyze_runtime(&state, &[]);
        assert_eq!(names(&m), [("rejection_churn", None, 2)]);
        assert_eq!(m[0].severity, Severity::SpecFlaw);
    }
}
