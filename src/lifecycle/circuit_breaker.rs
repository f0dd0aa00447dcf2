//! The circuit breaker's anomaly patterns (operations.md *Sprints, checkpoints, circuit
//! breaker*), as a pure function of the state: every pattern that matches the current
//! sprint's anomalies, each with its severity, evidence and the tasks it touches. Groups
//! are keyed by the detail the pattern names; an anomaly without that detail belongs to no
//! group (nulls never make a cluster).

use std::collections::BTreeMap;

use crate::blackboard::State;
use crate::blackboard::model::{Anomaly, AnomalyType};

/// How serious a match is; `config.circuit_breaker.checkpoint_at` lists the severities
/// that stop the sprint for a person.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    ArchitectureFlaw,
    SpecFlaw,
    ExternalDependency,
}

impl Severity {
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
    pub pattern: &'static str,
    pub severity: Severity,
    /// The shared value (error pattern, assumption, spec, service), when grouped.
    pub group: Option<String>,
    pub count: usize,
    /// One line per anomaly: reporter, task and the detail that put it in the group.
    pub evidence: Vec<String>,
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
        crate::blackboard::node::Value::Str(s) => s.trim().to_owned(),
        crate::blackboard::node::Value::Int(n) => n.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blackboard::node::{Entry, Node, Pos, Value};

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
        let text = include_str!("../../tests/fixtures/mid-sprint.yaml");
        let mut state = crate::blackboard::document::decode(text.as_bytes())
            .unwrap()
            .state;
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
        let started = crate::blackboard::Timestamp::parse("2026-03-01T10:00:00Z").unwrap();
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
}
