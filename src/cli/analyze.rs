//! `liza analyze`: the circuit breaker's patterns over the current sprint.

use serde_json::json;

use super::output::Output;
use super::report::context;
use super::{CliError, EXIT_OK};
use crate::ops;

pub(super) fn cmd_analyze(out: &Output) -> Result<i32, CliError> {
    let (project, actor) = context()?;
    let analysis = ops::analyze(&project, &actor)?;
    let matches: Vec<_> = analysis
        .matches
        .iter()
        .map(|m| {
            json!({
                "pattern": m.pattern,
                "severity": m.severity.as_str(),
                "group": m.group,
                "count": m.count,
                "tasks": m.tasks,
                "evidence": m.evidence,
            })
        })
        .collect();
    let result = json!({
        "status": if matches.is_empty() { "OK" } else { "TRIGGERED" },
        "matches": matches,
        "report": analysis.report.display().to_string(),
        "checkpointed_by": analysis.checkpointed_by,
    });
    out.ok(result, || {
        let mut text = String::new();
        if analysis.matches.is_empty() {
            text.push_str("circuit breaker: OK — no pattern matches the sprint's anomalies\n");
        }
        for m in &analysis.matches {
            let group = m
                .group
                .as_deref()
                .map(|g| format!(" [{g}]"))
                .unwrap_or_default();
            text.push_str(&format!(
                "{} {}{group}: {} anomalies on {}\n",
                m.severity.as_str(),
                m.pattern,
                m.count,
                m.tasks.join(", ")
            ));
            for e in &m.evidence {
                text.push_str(&format!("  - {e}\n"));
            }
        }
        if let Some(p) = &analysis.checkpointed_by {
            text.push_str(&format!(
                "the sprint is at a checkpoint ({p}); `liza resume --decision …` continues\n"
            ));
        }
        text.push_str(&format!("report: {}\n", analysis.report.display()));
        text
    });
    Ok(EXIT_OK)
}
