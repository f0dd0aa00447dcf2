//! `/`: the sprint at a glance — what holds the team, the goal and the sprint's progress,
//! the agents (what each runs and since when, where, sandboxed or not, what it used
//! today), the tasks by status, the merge queue, the alarms, the usage limits and what
//! the sprint cost, and the newest log entries.

use std::fmt::Write as _;

use super::{Board, table};
use crate::blackboard::ledger;
use crate::blackboard::model::TaskStatus;
use crate::status::lease_text;
use crate::web::html::{E, agent_link, badge, form, hidden, task_link, time};

/// Log entries shown at the foot of the page.
const LOG_SHOWN: usize = 15;

pub(crate) fn render(
    board: &Board,
    log: &[crate::blackboard::log::LogEntry],
    csrf: Option<&str>,
) -> String {
    let r = &board.report;
    let state = &board.snapshot.state;
    let now = board.now;
    let mut s = String::with_capacity(64 * 1024 + state.tasks.len() * 400);
    for a in &r.attention {
        let _ = write!(
            s,
            "<p class=\"attention\"><strong>{}</strong> — {}</p>",
            E(a.state),
            E(&a.next)
        );
    }
    if let Some(problem) = &r.pending_hand_edit_problem {
        let _ = write!(
            s,
            "<p class=\"attention\">state.yaml was changed outside liza and does not read: {} — fix it (<code>liza validate</code>)</p>",
            E(problem)
        );
    }

    // The goal and the sprint.
    let goal_status = r.goal.status.map_or("-", |g| g.as_str());
    let _ = write!(
        s,
        "<section id=\"goal\"><h1>{}</h1><p class=\"meta\">goal {} {} · sprint {} {}{} · integration <code>{}</code> · revision {}</p>",
        E(first_line(&r.goal.description)),
        E(&r.goal.id),
        badge(goal_status),
        E(&r.sprint.id),
        badge(r.sprint.status.as_str()),
        r.sprint
            .started
            .map(|t| format!(" · started {}", time(t, now)))
            .unwrap_or_default(),
        E(&r.integration_branch),
        r.revision,
    );
    let (done, planned) = (r.sprint.planned_terminal, r.sprint.planned);
    let _ = write!(
        s,
        "<p class=\"progress\"><progress max=\"{}\" value=\"{done}\"></progress> {done}/{planned} planned tasks done</p><p class=\"counts\">",
        planned.max(1)
    );
    for (status, count) in &r.sprint.counts {
        let _ = write!(s, "{} {count} ", badge(status));
    }
    s.push_str("</p>");
    if r.plan_waiting > 0 {
        let _ = write!(
            s,
            "<p class=\"attention\">Plan waiting for approval: {} DRAFT task(s) — <code>liza finalize-task --all</code></p>",
            r.plan_waiting
        );
    }
    s.push_str(&controls(csrf));
    s.push_str("</section>");

    // The agents.
    let rows: Vec<String> = r
        .agents
        .iter()
        .map(|a| {
            let status = match a.waiting.as_deref() {
                Some(why) if why != "work" => format!("{} · {}", badge(a.status.as_str()), E(why)),
                _ => badge(a.status.as_str()),
            };
            let task = a.task.as_deref().map_or_else(|| "-".to_owned(), task_link);
            let since = a
                .task
                .as_deref()
                .and_then(|t| state.task(&crate::blackboard::TaskId::parse(t).ok()?))
                .and_then(|t| t.entered_status_at())
                .map(|at| time(at, now))
                .unwrap_or_default();
            let sandbox = match a.sandbox.as_deref() {
                Some("on") => "on".to_owned(),
                Some(other) => format!(
                    "<strong class=\"warn\" title=\"{}\">{}</strong>",
                    E(a.sandbox_note.as_deref().unwrap_or("")),
                    E(other)
                ),
                None => "-".to_owned(),
            };
            let limit = a
                .usage_limit_until
                .map(|t| format!("<br><span class=\"warn\">usage limit until {}</span>", time(t, now)))
                .unwrap_or_default();
            let used = r
                .usage
                .as_ref()
                .and_then(|u| u.agents_today.get(&a.id))
                .map(|t| E(&ledger::phrase(&t.usage())).to_string())
                .unwrap_or_else(|| "-".into());
            format!(
                "<tr id=\"agent-{}\"><td>{}</td><td>{}</td><td>{status}{limit}</td><td>{task} {since}</td><td>{}</td><td>{}</td><td class=\"opt\">{}</td><td>{sandbox}</td><td class=\"opt\">{}</td><td class=\"opt\">{used}</td></tr>",
                E(&a.id),
                agent_link(&a.id),
                E(&a.role),
                a.lease_remaining_s.map_or_else(|| "-".into(), lease_text),
                E(a.cli.as_deref().unwrap_or("-")),
                E(a.host.as_deref().unwrap_or("-")),
                a.output_age_s
                    .map_or_else(|| "-".into(), |age| format!("{} ago", crate::blackboard::timestamp::human_duration(age))),
            )
        })
        .collect();
    let _ = write!(
        s,
        "<section id=\"agents\"><h2>Agents ({})</h2>",
        r.agents.len()
    );
    s.push_str(&table(
        "agents",
        &[
            "agent",
            "role",
            "status",
            "task",
            "lease",
            "cli",
            "~host",
            "sandbox",
            "~output",
            "~used today",
        ],
        &rows,
    ));
    for a in r.agents.iter().filter(|a| a.unsandboxed()) {
        let _ = write!(
            s,
            "<p class=\"warn\">UNSANDBOXED: {} runs its agent with your user's full access to this machine ({})</p>",
            E(&a.id),
            E(a.sandbox_note.as_deref().unwrap_or("no reason given"))
        );
    }
    if let Some(usage) = &r.usage {
        if usage.sprint.runs > 0 {
            let _ = write!(
                s,
                "<p id=\"cost\">Sprint {}: {} over {} run(s)</p>",
                E(&r.sprint.id),
                E(&ledger::phrase(&usage.sprint.usage())),
                usage.sprint.runs
            );
        }
        for hit in &usage.limits {
            let _ = write!(
                s,
                "<p class=\"warn\">Usage limit: {} (account {}) until {}, seen by {}: {}</p>",
                E(&hit.backend),
                E(&hit.account),
                time(hit.resets_at, now),
                agent_link(&hit.seen_by),
                E(&hit.line)
            );
        }
    }
    s.push_str("</section>");

    // The tasks, grouped by status in the order work moves.
    let _ = write!(
        s,
        "<section id=\"tasks\"><h2>Tasks ({})</h2>",
        r.tasks.len()
    );
    for status in ORDER {
        let rows: Vec<String> = r
            .tasks
            .iter()
            .zip(&state.tasks)
            .filter(|(line, _)| line.status == status)
            .map(|(line, task)| {
                format!(
                    "<tr class=\"task\" data-href=\"/task/{0}\"><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td><td class=\"opt\">{5}</td><td class=\"opt\">{6}/{7}</td><td>{8}</td><td class=\"opt\">{9}</td></tr>",
                    E(&line.id),
                    task_link(&line.id),
                    E(first_line(task.description.as_deref().unwrap_or(""))),
                    line.priority,
                    line.assignee.as_deref().map_or_else(|| "-".to_owned(), agent_link),
                    line.iteration.map_or_else(|| "-".into(), |i| i.to_string()),
                    line.review_cycles_current,
                    line.review_cycles_total,
                    task.entered_status_at().map(|at| time(at, now)).unwrap_or_else(|| "-".into()),
                    if line.depends_on.is_empty() {
                        "-".to_owned()
                    } else {
                        line.depends_on.iter().map(|d| task_link(d)).collect::<Vec<_>>().join(", ")
                    },
                )
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = write!(
            s,
            "<h3>{} <span class=\"count\">{}</span></h3>",
            badge(status.as_str()),
            rows.len()
        );
        s.push_str(&table(
            "tasks",
            &[
                "id", "title", "pri", "assignee", "~iter", "~reviews", "since", "~depends",
            ],
            &rows,
        ));
    }
    s.push_str("</section>");

    if !r.merge_queue.is_empty() {
        let _ = write!(
            s,
            "<section id=\"queue\"><h2>Merge queue ({})</h2><ol>",
            r.merge_queue.len()
        );
        for q in &r.merge_queue {
            let _ = write!(
                s,
                "<li>{}{}</li>",
                task_link(&q.task),
                q.candidate
                    .as_deref()
                    .map(|c| format!(" — merging, {} checked", crate::web::html::commit_link(c)))
                    .unwrap_or_default()
            );
        }
        s.push_str("</ol></section>");
    }

    let _ = write!(s, "<section id=\"alarms\"><h2>Alarms</h2>");
    if r.alarms.is_empty() {
        s.push_str("<p>none open</p>");
    } else {
        s.push_str("<ul>");
        for alarm in r.alarms.iter().rev() {
            let _ = write!(s, "<li>{}</li>", E(alarm));
        }
        s.push_str("</ul>");
    }
    if r.alarms_cleared > 0 {
        let _ = write!(
            s,
            "<p class=\"meta\">{} cleared: their cause is gone</p>",
            r.alarms_cleared
        );
    }
    s.push_str("</section>");

    let _ = write!(
        s,
        "<section id=\"recent\"><h2>Latest (<a href=\"/log\">the log</a>)</h2>"
    );
    s.push_str(&super::log::entries(log.iter().rev().take(LOG_SHOWN), now));
    s.push_str("</section>");
    s
}

/// The order task statuses are shown in: what needs a person first, then as work moves.
const ORDER: [TaskStatus; 11] = [
    TaskStatus::Blocked,
    TaskStatus::IntegrationFailed,
    TaskStatus::Claimed,
    TaskStatus::Rejected,
    TaskStatus::ReadyForReview,
    TaskStatus::Approved,
    TaskStatus::Unclaimed,
    TaskStatus::Draft,
    TaskStatus::Merged,
    TaskStatus::Superseded,
    TaskStatus::Abandoned,
];

/// The sprint's buttons: pause, resume, checkpoint, abort, and a note for every agent.
fn controls(csrf: Option<&str>) -> String {
    if csrf.is_none() {
        return String::new();
    }
    let mut s = String::from("<div class=\"controls\">");
    s.push_str(&form(csrf, "pause", "", "Pause", "liza pause"));
    s.push_str(&form(csrf, "resume", "", "Resume", "liza resume"));
    s.push_str(&form(
        csrf,
        "checkpoint",
        "",
        "Checkpoint",
        "liza checkpoint",
    ));
    s.push_str(&form(csrf, "abort", "", "Abort the sprint", "liza abort"));
    s.push_str(&form(
        csrf,
        "note",
        &format!(
            "{}<label>Note for every agent <input name=\"message\" required maxlength=\"4000\"></label>",
            hidden("target", "all")
        ),
        "Add note",
        "liza note all <message>",
    ));
    s.push_str("</div>");
    s
}

/// The first line of a text (a task's title is its description's first line).
pub(crate) fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
