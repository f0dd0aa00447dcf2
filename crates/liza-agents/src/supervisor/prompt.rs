//! Agent prompts (specs/supervisor.md *Prompts*): templates compiled into the binary, filled from
//! the blackboard, saved under `.liza/agent-prompts/` and handed to the backend.

use std::path::{Path, PathBuf};

use crate::blackboard::model::{State, Task};
use crate::blackboard::{AgentId, Role, TaskId, Timestamp};
use crate::lifecycle::Trigger;

const BASE: &str = include_str!("../prompts/base.md");
const CODER: &str = include_str!("../prompts/coder.md");
const REVIEWER: &str = include_str!("../prompts/reviewer.md");
const PLANNER: &str = include_str!("../prompts/planner.md");

/// Replaces every `{{key}}` of `template`; unknown keys become empty.
pub fn render(template: &str, vars: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let key = &after[..end];
        if let Some((_, value)) = vars.iter().find(|(k, _)| *k == key) {
            out.push_str(value);
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The variables every prompt shares.
fn base_vars(
    state: &State,
    root: &Path,
    agent: &AgentId,
    workdir: &Path,
) -> Vec<(&'static str, String)> {
    let role = match agent.role() {
        Role::Coder => "coder",
        Role::CodeReviewer => "code-reviewer",
        Role::Planner => "planner",
    };
    let workplace = if agent.role() == Role::Planner {
        format!(
            "in the project root {} (read files; do not write code)",
            root.display()
        )
    } else {
        format!("in your worktree {}", workdir.display())
    };
    vec![
        ("agent_id", agent.to_string()),
        ("role", role.to_owned()),
        ("project", root.display().to_string()),
        ("goal", state.goal.description.clone()),
        ("goal_spec", state.goal.spec_ref.clone().unwrap_or_default()),
        ("workdir", workdir.display().to_string()),
        ("workplace", workplace),
    ]
}

fn notes_for(state: &State, task: Option<&TaskId>) -> String {
    let notes: Vec<String> = state
        .human_notes
        .iter()
        .flatten()
        .filter(|n| match (n.target.as_deref(), task) {
            (None | Some("all"), _) => true,
            (Some(t), Some(id)) => t == id.as_str(),
            _ => false,
        })
        .map(|n| {
            format!(
                "- {} ({}): {}",
                n.id.as_deref().unwrap_or("note"),
                n.target.as_deref().unwrap_or("all"),
                n.message
            )
        })
        .collect();
    if notes.is_empty() {
        "(none)".into()
    } else {
        notes.join("\n")
    }
}

fn or_none(text: Option<&str>) -> String {
    text.filter(|t| !t.is_empty())
        .unwrap_or("(none)")
        .to_owned()
}

/// The coder's prompt for `task`; `situation` says why this run happens (rework after a
/// rejection, an integration fix, a resumed handoff) and what to read first.
pub fn coder(
    state: &State,
    root: &Path,
    agent: &AgentId,
    task: &Task,
    workdir: &Path,
    situation: &str,
) -> String {
    let mut vars = base_vars(state, root, agent, workdir);
    let deps: Vec<String> = task
        .depends_on()
        .iter()
        .map(|d| {
            let merged = state
                .task(d)
                .and_then(|t| t.merge_commit.as_ref())
                .map(|c| c.to_string())
                .unwrap_or_else(|| "not merged".into());
            format!("{d} ({merged})")
        })
        .collect();
    vars.extend([
        ("task_id", task.id.to_string()),
        ("iteration", task.iteration.unwrap_or(0).to_string()),
        ("description", or_none(task.description.as_deref())),
        ("done_when", or_none(task.done_when.as_deref())),
        ("scope", or_none(task.scope.as_deref())),
        (
            "paths",
            crate::lifecycle::task_scope::TaskScope::of(task, &state.config).describe(),
        ),
        ("spec_ref", or_none(task.spec_ref.as_deref())),
        (
            "dependencies",
            if deps.is_empty() {
                "(none)".into()
            } else {
                deps.join(", ")
            },
        ),
        ("situation", situation.to_owned()),
        ("notes", notes_for(state, Some(&task.id))),
    ]);
    render(BASE, &vars) + "\n" + &render(CODER, &vars)
}

/// What a reviewer is shown beyond the task itself.
pub struct ReviewFacts {
    /// The files the change touches, one `- <path>` a line.
    pub diff_stat: String,
    /// The changed files that are tests (`config.test_paths`), or `NONE`.
    pub tests_changed: String,
    /// Changed files outside the task's scope or in protected paths, one a line.
    pub path_warnings: String,
    /// The results of the `on_review` checks liza ran on the review commit, or why none
    /// ran.
    pub checks: String,
    /// How the spec changed since the task was finalized, with the diff; empty when it
    /// did not.
    pub spec_changed: String,
    /// The prior rejection to check, and what an agent that cannot run commands does
    /// instead.
    pub situation: String,
}

/// The reviewer's prompt for `task`, its worktree `workdir`, with `facts`.
pub fn reviewer(
    state: &State,
    root: &Path,
    agent: &AgentId,
    task: &Task,
    workdir: &Path,
    facts: &ReviewFacts,
) -> String {
    let mut vars = base_vars(state, root, agent, workdir);
    vars.extend([
        ("task_id", task.id.to_string()),
        ("iteration", task.iteration.unwrap_or(0).to_string()),
        (
            "author",
            task.assigned_to
                .as_ref()
                .map_or("unknown".into(), |a| a.to_string()),
        ),
        (
            "base_commit",
            task.base_commit
                .as_ref()
                .map_or(String::new(), |c| c.to_string()),
        ),
        (
            "review_commit",
            task.review_commit
                .as_ref()
                .map_or(String::new(), |c| c.to_string()),
        ),
        ("description", or_none(task.description.as_deref())),
        ("done_when", or_none(task.done_when.as_deref())),
        ("spec_ref", or_none(task.spec_ref.as_deref())),
        ("spec_changed", facts.spec_changed.clone()),
        ("diff_stat", facts.diff_stat.clone()),
        ("tests_changed", facts.tests_changed.clone()),
        ("path_warnings", facts.path_warnings.clone()),
        ("checks", facts.checks.clone()),
        ("situation", facts.situation.clone()),
    ]);
    render(BASE, &vars) + "\n" + &render(REVIEWER, &vars)
}

/// The planner's prompt: the `triggers` that hold (the first named as the one to handle),
/// the sprint, every task with its status, and the human notes addressed to all.
pub fn planner(state: &State, root: &Path, agent: &AgentId, triggers: &[Trigger]) -> String {
    let mut vars = base_vars(state, root, agent, root);
    let listed: Vec<String> = triggers
        .iter()
        .map(|t| format!("- {}", t.describe()))
        .collect();
    let tasks: Vec<String> = state
        .tasks
        .iter()
        .map(|t| {
            let mut line = format!(
                "- {} [{}] {}",
                t.id,
                t.status.as_str(),
                t.description.as_deref().unwrap_or("")
            );
            if let Some(reason) = &t.blocked_reason {
                line.push_str(&format!(" — blocked: {reason}"));
            }
            line
        })
        .collect();
    vars.extend([
        (
            "trigger",
            triggers.first().map_or(String::new(), Trigger::describe),
        ),
        ("triggers", listed.join("\n")),
        (
            "sprint",
            format!("{} ({})", state.sprint.id, state.sprint.status.as_str()),
        ),
        (
            "tasks",
            if tasks.is_empty() {
                "TASKS: (none yet)".into()
            } else {
                format!("TASKS:\n{}", tasks.join("\n"))
            },
        ),
        ("notes", notes_for(state, None)),
    ]);
    render(BASE, &vars) + "\n" + &render(PLANNER, &vars)
}

/// Saves `prompt` as `.liza/agent-prompts/<agent>-<what>-<timestamp>.md`.
pub fn save(
    liza_dir: &Path,
    agent: &AgentId,
    what: &str,
    prompt: &str,
) -> std::io::Result<PathBuf> {
    let dir = liza_dir.join("agent-prompts");
    std::fs::create_dir_all(&dir)?;
    let stamp = Timestamp::now().to_string().replace(['-', ':'], "");
    let mut path = dir.join(format!("{agent}-{what}-{stamp}.md"));
    let mut n = 2;
    while path.exists() {
        path = dir.join(format!("{agent}-{what}-{stamp}-{n}.md"));
        n += 1;
    }
    std::fs::write(&path, prompt)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_fills_known_keys_and_drops_unknown_ones() {
        let vars = [("a", "1".to_owned())];
        assert_eq!(render("x {{a}} {{b}} {{a", &vars), "x 1  {{a");
    }

    /// The mid-sprint fixture (every task status), decoded.
    fn fixture() -> State {
        let text = include_str!("../../../../tests/fixtures/mid-sprint.yaml");
        crate::blackboard::document::decode(text.as_bytes())
            .unwrap_or_else(|f| panic!("fixture: {f:?}"))
            .state
    }

    fn id(text: &str) -> TaskId {
        TaskId::parse(text).unwrap()
    }

    #[test]
    fn the_coder_prompt_has_every_section() {
        let state = fixture();
        let agent = AgentId::parse("coder-2").unwrap();
        let task = state.task(&id("t-rejected")).unwrap();
        let root = Path::new("/project");
        let text = coder(
            &state,
            root,
            &agent,
            task,
            &root.join(".worktrees/t-rejected"),
            "## The reviewer rejected the last submission\nsee above",
        );
        insta::assert_snapshot!(text);
    }

    #[test]
    fn the_reviewer_prompt_has_every_section() {
        let state = fixture();
        let agent = AgentId::parse("code-reviewer-1").unwrap();
        let task = state.task(&id("t-review")).unwrap();
        let root = Path::new("/project");
        let facts = ReviewFacts {
            diff_stat: "- src/report.rs\n- tests/report_test.rs".into(),
            tests_changed: "tests/report_test.rs".into(),
            path_warnings: String::new(),
            checks: "- unit: passed".into(),
            spec_changed: String::new(),
            situation: String::new(),
        };
        let text = reviewer(
            &state,
            root,
            &agent,
            task,
            &root.join(".worktrees/t-review"),
            &facts,
        );
        insta::assert_snapshot!(text);
    }

    #[test]
    fn the_planner_prompt_names_its_triggers() {
        let state = fixture();
        let agent = AgentId::parse("planner-1").unwrap();
        let triggers = crate::lifecycle::planner_triggers(&state, &agent);
        assert!(!triggers.is_empty());
        let text = planner(&state, Path::new("/project"), &agent, &triggers);
        insta::assert_snapshot!(text);
    }
}
