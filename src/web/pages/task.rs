//! `/task/<id>`: one task — its fields, what a person can do about it, its history from
//! the log, iterations and review verdicts, what its runs used, its agent logs (scrubbed
//! as on disk), its saved work in the attic, and the diff of its branch against the
//! integration branch. `/task/<id>/log/<file>`: one of its agent logs.

use std::fmt::Write as _;
use std::io::{Read as _, Seek as _};
use std::path::Path;

use super::Board;
use crate::blackboard::TaskId;
use crate::blackboard::log::LogEntry;
use crate::blackboard::model::{Task, TaskStatus};
use crate::ops::Project;
use crate::web::html::{E, Q, agent_link, badge, commit_link, form, hidden, task_link, time};
use crate::web::pages::sprint::first_line;

/// The most of a diff shown; the rest is cut with a note.
pub(crate) const DIFF_SHOWN: usize = 512 * 1024;
/// The longest git may take for a page: an agent can make a diff as slow as it likes.
pub(crate) const GIT_TIME: std::time::Duration = std::time::Duration::from_secs(10);
/// Files larger than this are diffed as binary (observed with git 2.47.3: `core.
/// bigFileThreshold` makes `diff` and `show` print `Bin 0 -> N bytes` for them).
pub(crate) const BIG_FILE: &str = "core.bigFileThreshold=1m";
/// The most of an agent log shown: its end.
pub(crate) const LOG_SHOWN: u64 = 1024 * 1024;

pub(crate) fn render(
    project: &Project,
    board: &Board,
    task: &Task,
    log: &[LogEntry],
    csrf: Option<&str>,
) -> String {
    let now = board.now;
    let id = task.id.as_str();
    let mut s = format!(
        "<h1>{} {} <span class=\"title\">{}</span></h1>",
        badge(task.status.as_str()),
        E(id),
        E(first_line(task.description.as_deref().unwrap_or("")))
    );
    if let Some(description) = &task.description
        && description.lines().nth(1).is_some()
    {
        let _ = write!(s, "<pre class=\"description\">{}</pre>", E(description));
    }
    s.push_str(&fields(task, board));
    if task.status == TaskStatus::Blocked {
        s.push_str(&super::inbox::blocked(task, csrf, now));
    }
    s.push_str(&actions(task, csrf));

    // Verdicts and iterations, from its history.
    let history = task.history();
    let verdicts: Vec<String> = history
        .iter()
        .filter(|e| matches!(e.event.as_str(), "approved" | "rejected"))
        .map(|e| {
            let fields = event_fields(e);
            let text = |k: &str| {
                fields
                    .iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            };
            format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"detail\">{}</td></tr>",
                time(e.time, now),
                badge(&e.event.to_ascii_uppercase()),
                e.agent
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), agent_link),
                commit_link(&text("commit")),
                E(&text("reason")),
            )
        })
        .collect();
    if !verdicts.is_empty() {
        s.push_str("<section id=\"verdicts\"><h2>Review verdicts</h2>");
        s.push_str(&super::table(
            "verdicts",
            &["when", "verdict", "reviewer", "commit", "reason"],
            &verdicts,
        ));
        s.push_str("</section>");
    }
    let rows: Vec<String> = history
        .iter()
        .rev()
        .map(|e| {
            let mut extra = String::new();
            for (k, v) in event_fields(e) {
                let shown = if k.ends_with("commit") {
                    commit_link(&v)
                } else {
                    E(&v).to_string()
                };
                let _ = write!(extra, "<span class=\"kv\"><b>{}</b> {shown}</span> ", E(&k));
            }
            format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"detail\">{extra}</td></tr>",
                time(e.time, now),
                E(&e.event),
                e.agent
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), agent_link),
            )
        })
        .collect();
    let _ = write!(
        s,
        "<section id=\"history\"><h2>History ({})</h2>",
        rows.len()
    );
    s.push_str(&super::table(
        "history",
        &["when", "event", "who", "detail"],
        &rows,
    ));
    s.push_str("</section>");

    // What its runs used.
    let ledger = project.store.ledger().unwrap_or_default();
    let by_agent = crate::blackboard::ledger::group(
        ledger.iter().filter(|e| e.task.as_deref() == Some(id)),
        crate::blackboard::ledger::GroupBy::Agent,
    );
    if !by_agent.is_empty() {
        let rows: Vec<String> = by_agent
            .iter()
            .map(|(agent, t)| {
                format!(
                    "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                    agent_link(agent),
                    t.runs,
                    E(&crate::blackboard::ledger::phrase(&t.usage()))
                )
            })
            .collect();
        s.push_str("<section id=\"usage\"><h2>Usage</h2>");
        s.push_str(&super::table("usage", &["agent", "runs", "used"], &rows));
        s.push_str("</section>");
    }

    // Notes for it.
    let notes: Vec<String> = board
        .snapshot
        .state
        .human_notes
        .iter()
        .flatten()
        .filter(|n| matches!(n.target.as_deref(), Some(t) if t == id || t == "all"))
        .map(|n| {
            format!(
                "<li>{} {}: {}</li>",
                n.timestamp.map(|t| time(t, now)).unwrap_or_default(),
                E(n.target.as_deref().unwrap_or("")),
                E(&n.message)
            )
        })
        .collect();
    if !notes.is_empty() {
        let _ = write!(
            s,
            "<section id=\"notes\"><h2>Notes</h2><ul>{}</ul></section>",
            notes.concat()
        );
    }

    // Its agent logs, newest first.
    let logs = agent_logs(&project.store.paths().dir.join("agent-logs"), id);
    if !logs.is_empty() {
        s.push_str("<section id=\"agent-logs\"><h2>Agent logs</h2><ul>");
        for (name, agent) in &logs {
            let _ = write!(
                s,
                "<li><a href=\"/task/{}/log/{}\">{}</a> ({})</li>",
                Q(id),
                Q(name),
                E(name),
                agent_link(agent)
            );
        }
        s.push_str("</ul></section>");
    }

    // Its saved work.
    let repo = crate::git::Repo::open(&project.root).ok();
    let attic = repo
        .as_ref()
        .map(|r| r.attic_refs(&task.id))
        .unwrap_or_default();
    if !attic.is_empty() {
        s.push_str("<section id=\"attic\"><h2>Saved work</h2><ul>");
        for (name, tip) in &attic {
            let _ = write!(
                s,
                "<li><code>{}</code> at {}</li>",
                E(name),
                commit_link(tip)
            );
        }
        s.push_str("</ul></section>");
    }

    // Its log entries.
    let mine: Vec<&LogEntry> = log
        .iter()
        .filter(|e| e.task.as_deref() == Some(id))
        .collect();
    let _ = write!(
        s,
        "<section id=\"task-log\"><h2>Log (<a href=\"/log?task={}\">{}</a>)</h2>",
        Q(id),
        mine.len()
    );
    s.push_str(&super::log::entries(mine.into_iter().rev().take(50), now));
    s.push_str("</section>");

    s.push_str("<section id=\"diff\"><h2>Diff</h2>");
    s.push_str(&diff(
        project,
        task,
        board.snapshot.state.config.integration_branch(),
    ));
    s.push_str("</section>");
    s
}

/// A history event's own fields (beyond its time, event and agent), as text.
fn event_fields(e: &crate::blackboard::model::HistoryEvent) -> Vec<(String, String)> {
    let json = serde_json::to_value(&e.extra).unwrap_or_default();
    let serde_json::Value::Object(map) = json else {
        return Vec::new();
    };
    map.into_iter()
        .map(|(k, v)| {
            let v = match v {
                serde_json::Value::String(text) => text,
                other => other.to_string(),
            };
            (k, v)
        })
        .collect()
}

/// The task's fields a person looks for, in a definition list.
fn fields(task: &Task, board: &Board) -> String {
    let now = board.now;
    let mut s = String::from("<dl class=\"fields\">");
    let mut add = |name: &str, html: String| {
        if !html.is_empty() {
            let _ = write!(s, "<dt>{name}</dt><dd>{html}</dd>");
        }
    };
    let text = |v: Option<&str>| v.map(|v| E(v).to_string()).unwrap_or_default();
    add(
        "status since",
        task.entered_status_at()
            .map(|t| time(t, now))
            .unwrap_or_default(),
    );
    add("priority", task.priority().to_string());
    add(
        "assignee",
        task.assigned_to
            .as_ref()
            .map(|a| agent_link(a.as_str()))
            .unwrap_or_default(),
    );
    add(
        "reviewer",
        task.reviewing_by
            .as_ref()
            .map(|a| agent_link(a.as_str()))
            .unwrap_or_default(),
    );
    add(
        "approved by",
        task.approved_by
            .as_ref()
            .map(|a| agent_link(a.as_str()))
            .unwrap_or_default(),
    );
    add(
        "iteration",
        task.iteration
            .map(|i| match task.max_iterations {
                Some(max) => format!("{i} of {max}"),
                None => i.to_string(),
            })
            .unwrap_or_default(),
    );
    add(
        "review cycles",
        format!(
            "{} now, {} in all",
            task.review_cycles_current.unwrap_or(0),
            task.review_cycles_total.unwrap_or(0)
        ),
    );
    add(
        "lease",
        task.lease_expires.map(|t| time(t, now)).unwrap_or_default(),
    );
    add("spec", text(task.spec_ref.as_deref()));
    add("done when", text(task.done_when.as_deref()));
    add("scope", text(task.scope.as_deref()));
    add(
        "paths",
        text(task.paths.as_ref().map(|p| p.join(", ")).as_deref()),
    );
    add(
        "depends on",
        task.depends_on()
            .iter()
            .map(|d| task_link(d.as_str()))
            .collect::<Vec<_>>()
            .join(", "),
    );
    add("worktree", text(task.worktree.as_deref()));
    add(
        "base",
        task.base_commit
            .as_deref()
            .map(commit_link)
            .unwrap_or_default(),
    );
    add(
        "review commit",
        task.review_commit
            .as_deref()
            .map(commit_link)
            .unwrap_or_default(),
    );
    add(
        "merge commit",
        task.merge_commit
            .as_deref()
            .map(commit_link)
            .unwrap_or_default(),
    );
    add("rejected because", text(task.rejection_reason.as_deref()));
    add("rescoped because", text(task.rescope_reason.as_deref()));
    add(
        "superseded by",
        task.superseded_by
            .iter()
            .flatten()
            .map(|d| task_link(d.as_str()))
            .collect::<Vec<_>>()
            .join(", "),
    );
    add(
        "attempted",
        text(task.attempted.as_ref().map(|a| a.join("; ")).as_deref()),
    );
    if let Some(place) = board
        .report
        .merge_queue
        .iter()
        .position(|q| q.task == task.id.as_str())
    {
        add(
            "merge queue",
            format!("{} of {}", place + 1, board.report.merge_queue.len()),
        );
    }
    s.push_str("</dl>");
    s
}

/// A note for the task's agents, and releasing a claim on it.
fn actions(task: &Task, csrf: Option<&str>) -> String {
    if csrf.is_none() {
        return String::new();
    }
    let id = task.id.as_str();
    let mut s = String::from("<section id=\"actions\" class=\"controls\">");
    s.push_str(&form(
        csrf,
        "note",
        &format!(
            "{}<label>Note for its agents <input name=\"message\" required maxlength=\"4000\"></label>",
            hidden("target", id)
        ),
        "Add note",
        &format!("liza note {id} <message>"),
    ));
    let claimed = task.assigned_to.is_some() && task.status == TaskStatus::Claimed;
    let reviewing = task.reviewing_by.is_some();
    if claimed || reviewing {
        s.push_str(&form(
            csrf,
            "release-claim",
            &format!(
                "{}<label>Whose claim <select name=\"role\"><option value=\"{}\">{}</option><option value=\"both\">both</option></select></label>\
                 <label>Why <input name=\"reason\" required maxlength=\"4000\"></label>\
                 <label class=\"check\"><input type=\"checkbox\" name=\"force\"> even if its lease is live</label>",
                hidden("task", id),
                if claimed { "coder" } else { "reviewer" },
                if claimed { "the coder's" } else { "the reviewer's" },
            ),
            "Release the claim",
            &format!("liza release-claim {id} --role <role> --reason <why>"),
        ));
    }
    s.push_str("</section>");
    s
}

/// The diff the task brings: its branch against where it left the integration branch;
/// for a merged task whose branch is gone, its merge commit against its first parent.
fn diff(project: &Project, task: &Task, integration: &str) -> String {
    let branch = format!("task/{}", task.id.as_str());
    let has_branch = crate::git::cli::git(
        &project.root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
    .is_ok();
    // Full ref names: a tag an agent made named like the branch changes nothing here.
    let range = if has_branch {
        format!("refs/heads/{integration}...refs/heads/{branch}")
    } else if let Some(merge) = task
        .merge_commit
        .as_deref()
        .filter(|c| crate::web::html::is_commit_id(c))
    {
        format!("{merge}^1..{merge}")
    } else {
        return "<p>no branch and no merge commit: nothing to compare</p>".into();
    };
    show_diff(
        &project.root,
        &[
            "-c",
            BIG_FILE,
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--stat",
            "--patch",
            "--end-of-options",
            &range,
            "--",
        ],
        &range,
    )
}

/// `git <args>` as a coloured diff (escaped), read only up to [`DIFF_SHOWN`].
pub(crate) fn show_diff(root: &Path, args: &[&str], what: &str) -> String {
    match crate::git::cli::git_head(root, args, DIFF_SHOWN, GIT_TIME) {
        Ok((text, _)) if text.trim().is_empty() => format!("<p>{}: no change</p>", E(what)),
        Ok((text, more)) => {
            let mut s = format!(
                "<p class=\"meta\"><code>git {}</code></p><pre class=\"diff\">",
                E(&args.join(" "))
            );
            for line in text.lines() {
                let class = if line.starts_with("+++")
                    || line.starts_with("---")
                    || line.starts_with("diff ")
                {
                    "h"
                } else if line.starts_with('+') {
                    "a"
                } else if line.starts_with('-') {
                    "d"
                } else if line.starts_with("@@") {
                    "c"
                } else {
                    ""
                };
                if class.is_empty() {
                    let _ = writeln!(s, "{}", E(line));
                } else {
                    let _ = writeln!(s, "<span class=\"{class}\">{}</span>", E(line));
                }
            }
            s.push_str("</pre>");
            if more {
                let _ = write!(
                    s,
                    "<p class=\"meta\">cut (at {} KiB or {} s): <code>git {}</code> shows it all</p>",
                    DIFF_SHOWN / 1024,
                    GIT_TIME.as_secs(),
                    E(&args.join(" "))
                );
            }
            s
        }
        Err(e) => format!(
            "<p class=\"warn\">git could not show it: {}</p>",
            E(&e.to_string())
        ),
    }
}

/// The agent logs of task `id` in `dir`, newest first, with the agent of each:
/// `<agent>-<task>-<YYYYMMDDTHHMMSSZ>[.n].log`.
pub(crate) fn agent_logs(dir: &Path, id: &str) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(String, String)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let agent = agent_of(&name, id)?;
            Some((name, agent))
        })
        .collect();
    found.sort_by(|a, b| {
        stamp_of(&b.0)
            .cmp(stamp_of(&a.0))
            .then_with(|| b.0.cmp(&a.0))
    });
    found
}

fn stamp_of(name: &str) -> &str {
    name.rsplit_once('-').map_or(name, |(_, stamp)| stamp)
}

/// The agent whose run on task `id` wrote the log `name`, when it is one.
fn agent_of(name: &str, id: &str) -> Option<String> {
    let stem = name.strip_suffix(".log")?;
    let (before, stamp) = stem.rsplit_once('-')?;
    let agent = before.strip_suffix(id)?.strip_suffix('-')?;
    let (time, n) = match stamp.split_once('.') {
        Some((time, n)) => (time, Some(n)),
        None => (stamp, None),
    };
    let b = time.as_bytes();
    let stamp_ok = b.len() == 16
        && b[8] == b'T'
        && b[15] == b'Z'
        && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit)
        && n.is_none_or(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()));
    (stamp_ok && crate::blackboard::AgentId::parse(agent).is_ok()).then(|| agent.to_owned())
}

/// `/task/<id>/log/<file>`: the end of one agent log of the task, as text in a page;
/// `None` when `file` is not one of its logs.
pub(crate) fn render_log(project: &Project, id: &TaskId, file: &str) -> Option<String> {
    let dir = project.store.paths().dir.join("agent-logs");
    agent_of(file, id.as_str())?;
    let mut f = liza_base::untrusted::open_regular(&dir.join(file)).ok()?;
    let len = f.metadata().ok()?.len();
    let start = len.saturating_sub(LOG_SHOWN);
    f.seek(std::io::SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    f.take(LOG_SHOWN).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut s = format!(
        "<h1>{} <span class=\"title\">{}</span></h1><p class=\"meta\">{} KiB{}</p>",
        task_link(id.as_str()),
        E(file),
        len / 1024,
        if start > 0 {
            format!(", its last {} KiB shown", LOG_SHOWN / 1024)
        } else {
            String::new()
        }
    );
    let _ = write!(s, "<pre class=\"agent-log\">{}</pre>", E(&text));
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_logs_are_told_apart_by_task() {
        assert_eq!(
            agent_of("coder-1-t-1-20261129T091551Z.log", "t-1").as_deref(),
            Some("coder-1")
        );
        assert_eq!(
            agent_of("coder-1-t-1-20261129T091551Z.2.log", "t-1").as_deref(),
            Some("coder-1")
        );
        // t-1's logs are not t-1-2's, nor the other way round.
        assert_eq!(agent_of("coder-1-t-1-2-20261129T091551Z.log", "t-1"), None);
        assert_eq!(agent_of("../x-t-1-20261129T091551Z.log", "t-1"), None);
        assert_eq!(
            agent_of("coder-1-t-1-20261129T091551Z.log.bak", "t-1"),
            None
        );
    }
}
