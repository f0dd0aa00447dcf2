//! `/inbox`: what waits for a person — the sprint states that need one, BLOCKED questions
//! (answered here: `liza unblock --reason`), failed integrations, open alarms, hand edits
//! set aside, usage limits holding.

use std::fmt::Write as _;

use super::Board;
use crate::blackboard::model::{Task, TaskStatus};
use crate::web::html::{E, badge, form, hidden, task_link, time};
use crate::web::pages::sprint::first_line;

pub(crate) fn render(board: &Board, csrf: Option<&str>) -> String {
    let now = board.now;
    let state = &board.snapshot.state;
    let r = &board.report;
    let mut s = format!(
        "<h1>Inbox <span class=\"count\">{}</span></h1>",
        board.inbox_count()
    );
    if board.inbox_count() == 0 {
        s.push_str("<p id=\"empty\">Nothing waits for you.</p>");
    }
    for a in &r.attention {
        let _ = write!(
            s,
            "<article class=\"item attention\"><h2>{}</h2><p>{}</p>",
            E(a.state),
            E(&a.next)
        );
        if matches!(a.state, "PAUSED" | "CHECKPOINT" | "ABORTED") {
            // The checkpoint's decisions, as `liza resume --decision` takes them.
            let decision = if a.state == "CHECKPOINT" {
                let options: String = crate::lifecycle::sprint::DECISIONS
                    .iter()
                    .map(|d| format!("<option>{d}</option>"))
                    .collect();
                format!(
                    "<label>Decision <select name=\"decision\"><option value=\"\">none</option>{options}</select></label>"
                )
            } else {
                String::new()
            };
            s.push_str(&form(
                csrf,
                "resume",
                &decision,
                "Resume",
                "liza resume [--decision D]",
            ));
        }
        s.push_str("</article>");
    }
    if r.plan_waiting > 0 {
        let _ = write!(
            s,
            "<article class=\"item\"><h2>Plan waiting</h2><p>{} DRAFT task(s) wait for your approval: <code>liza finalize-task --all</code></p></article>",
            r.plan_waiting
        );
    }
    for task in state
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Blocked)
    {
        s.push_str(&blocked(task, csrf, now));
    }
    for task in state
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::IntegrationFailed)
    {
        let _ = write!(
            s,
            "<article class=\"item\" id=\"failed-{}\"><h2>{} {} {}</h2>",
            E(task.id.as_str()),
            badge(task.status.as_str()),
            task_link(task.id.as_str()),
            E(first_line(task.description.as_deref().unwrap_or("")))
        );
        if let Some(f) = &task.integration_failure {
            let _ = write!(
                s,
                "<p>{}{}{}</p>",
                match f.kind.as_str() {
                    "conflict" => "The merge conflicted",
                    _ => "The integration checks failed",
                },
                f.at.map(|t| format!(" {}", time(t, now)))
                    .unwrap_or_default(),
                f.paths
                    .as_ref()
                    .map(|p| format!(": {}", E(&p.join(", "))))
                    .unwrap_or_default(),
            );
            if let Some(log) = &f.log {
                let _ = write!(
                    s,
                    "<p class=\"meta\">checks' output: <code>{}</code></p>",
                    E(log)
                );
            }
        }
        s.push_str("<p class=\"meta\">The planner is woken for it; its page has the diff and the history.</p></article>");
    }
    if !board.open_alarms.is_empty() {
        let _ = write!(
            s,
            "<article class=\"item\" id=\"inbox-alarms\"><h2>Alarms ({})</h2><ul>",
            board.open_alarms.len()
        );
        for alarm in &board.open_alarms {
            let _ = write!(s, "<li>{}</li>", E(alarm));
        }
        s.push_str("</ul></article>");
    }
    for kept in &board.rejected {
        let _ = write!(
            s,
            "<article class=\"item\"><h2>Hand edit set aside{}</h2><p class=\"meta\"><code>.liza/rejected/{}</code></p><pre>{}</pre></article>",
            kept.at
                .map(|t| format!(" {}", time(t, now)))
                .unwrap_or_default(),
            E(&kept.name),
            E(&kept.note)
        );
    }
    if let Some(usage) = &r.usage {
        for hit in &usage.limits {
            let _ = write!(
                s,
                "<article class=\"item\"><h2>Usage limit: {}</h2><p>Agents on {} (account {}) wait until {}: {}</p></article>",
                E(&hit.backend),
                E(&hit.backend),
                E(&hit.account),
                time(hit.resets_at, now),
                E(&hit.line)
            );
        }
    }
    s
}

/// A BLOCKED task: why, its questions, and the form that answers them.
pub(crate) fn blocked(
    task: &Task,
    csrf: Option<&str>,
    now: crate::blackboard::Timestamp,
) -> String {
    let id = task.id.as_str();
    let mut s = format!(
        "<article class=\"item blocked\" id=\"blocked-{}\"><h2>{} {} {}</h2>",
        E(id),
        badge("BLOCKED"),
        task_link(id),
        E(first_line(task.description.as_deref().unwrap_or("")))
    );
    let _ = write!(
        s,
        "<p>{}{}</p>",
        task.assigned_to
            .as_ref()
            .map(|a| format!("{} blocked it", crate::web::html::agent_link(a.as_str())))
            .unwrap_or_else(|| "Blocked".to_owned()),
        task.entered_status_at()
            .map(|t| format!(" {}", time(t, now)))
            .unwrap_or_default()
    );
    if let Some(reason) = &task.blocked_reason {
        let _ = write!(s, "<p class=\"reason\">{}</p>", E(reason));
    }
    if let Some(questions) = task.blocked_questions.as_ref().filter(|q| !q.is_empty()) {
        s.push_str("<ol class=\"questions\">");
        for q in questions {
            let _ = write!(s, "<li>{}</li>", E(q));
        }
        s.push_str("</ol>");
    }
    s.push_str(&form(
        csrf,
        "unblock",
        &format!(
            "{}<label>Your answer <textarea name=\"reason\" required rows=\"3\" maxlength=\"8000\"></textarea></label>\
             <label class=\"check\"><input type=\"checkbox\" name=\"reset_review_cycles\"> reset its review cycles</label>",
            hidden("task", id)
        ),
        "Answer and unblock",
        &format!("liza unblock {id} --reason <answer>"),
    ));
    s.push_str("</article>");
    s
}
