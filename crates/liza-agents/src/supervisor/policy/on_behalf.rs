//! What an agent left undone at the end of a run that exited 0, and what the supervisor
//! does about it (specs/supervisor.md *Running the agent*). An agent that
//! cannot run commands (aider; any backend with `runs_commands: false`) commits but can
//! never run `liza submit-for-review` or `liza submit-verdict`: liza runs the review checks
//! and submits its commits for it ([`Action::SubmitForAgent`]), and records a reviewer's
//! verdict from a `LIZA-VERDICT:` line of its answer ([`Action::VerdictForAgent`]); the
//! runner carries either out and reports the run again with what came of it. An agent
//! that could have run them but did not is told in its next prompt what it left.

use super::{Action, CoderRun, Memory, ReviewRun, RunEnd, View};
use crate::lifecycle::Verdict;

/// How a reviewer that cannot run commands gives its verdict: the line starts with this,
/// then `approve` or `reject`; a rejection's text follows on the next lines.
pub const VERDICT_MARK: &str = "LIZA-VERDICT:";

/// The prompt section for an agent that cannot run commands.
pub fn no_commands_note(reviewer: bool) -> String {
    if reviewer {
        format!(
            "## You cannot run commands here\nDo not run `liza`, git or any other command, and do not change any file. \
             Give your verdict at the very end of your answer as one line that starts with `{VERDICT_MARK}` followed by \
             the word approve or the word reject; after a reject, write the rejection (Blockers, Concerns, Overall) \
             on the lines below it. liza records the verdict for you."
        )
    } else {
        "## You cannot run commands here\nDo not run `liza`, git or the tests yourself. Make your changes to the \
         files (tests first); they are committed for you. When you are done, liza runs the project's checks and \
         submits your commits for review on your behalf."
            .to_owned()
    }
}

/// The verdict in an agent's answer: the last line starting with [`VERDICT_MARK`].
pub fn parse_verdict(output: &str) -> Option<Verdict> {
    let lines: Vec<&str> = output.lines().collect();
    let (at, line) = lines
        .iter()
        .enumerate()
        .rev()
        .find(|(_, l)| l.trim_start().starts_with(VERDICT_MARK))?;
    let word = line.trim_start()[VERDICT_MARK.len()..]
        .trim()
        .trim_matches(|c: char| !c.is_ascii_alphabetic())
        .to_ascii_lowercase();
    match word.as_str() {
        "approve" | "approved" => Some(Verdict::Approve),
        "reject" | "rejected" => {
            let reason = lines[at + 1..].join("\n").trim().to_owned();
            let reason: String = reason.chars().take(8000).collect();
            Some(Verdict::Reject {
                reason: if reason.is_empty() {
                    "rejected without a reason (the reviewer gave none)".to_owned()
                } else {
                    reason
                },
            })
        }
        _ => None,
    }
}

/// What a coder run left undone, for its next prompt.
pub fn left_undone(committed: bool, dirty: &[String], runs_commands: bool) -> Option<String> {
    let mut parts = Vec::new();
    if !dirty.is_empty() {
        let shown: Vec<&str> = dirty.iter().take(10).map(String::as_str).collect();
        parts.push(format!(
            "Your last run left uncommitted changes ({}{}): commit what belongs to the task, remove the rest.",
            shown.join(", "),
            if dirty.len() > 10 { ", …" } else { "" }
        ));
    }
    if committed && runs_commands {
        parts.push(
            "Your last run committed but did not submit: if the task is done, run the tests and submit it \
             with `liza submit-for-review`; otherwise finish it first."
                .to_owned(),
        );
    }
    (!parts.is_empty()).then(|| format!("## Left undone by your last run\n{}", parts.join("\n")))
}

/// What liza did for an agent that cannot run commands, as the run is reported again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnBehalf {
    /// Submitted for review, or the verdict recorded.
    Done,
    /// Not done, and why (a check failed, a rule refused it).
    Refused(String),
}

/// A coder run that exited 0 with the task still the agent's, by an agent that cannot run
/// commands, having committed and left nothing uncommitted: liza submits for it.
pub fn submission(view: &View, run: &CoderRun) -> Option<Action> {
    (!view.backend.runs_commands
        && run.on_behalf.is_none()
        && run.end == RunEnd::Exited(Some(0))
        && run.still_mine
        && run.committed
        && run.dirty.is_empty())
    .then(|| Action::SubmitForAgent(Box::new(run.clone())))
}

/// A review run that exited 0 without a verdict and without touching the worktree, by an
/// agent that cannot run commands, whose answer ends with a verdict line: liza records it
/// as the reviewer, on the commit it reviewed.
pub fn verdict(view: &View, run: &ReviewRun) -> Option<Action> {
    if view.backend.runs_commands
        || run.on_behalf.is_some()
        || run.end != RunEnd::Exited(Some(0))
        || !run.still_reviewing
        || run.changed_worktree
    {
        return None;
    }
    let commit = run.review_commit.clone()?;
    let verdict = parse_verdict(&run.output_tail)?;
    Some(Action::VerdictForAgent {
        run: Box::new(run.clone()),
        verdict,
        commit,
    })
}

/// After a coder run that exited 0 with the task still the agent's: what its next prompt
/// says was left undone, and a line when liza could not submit for it.
pub fn coder_left(view: &View, memory: &mut Memory, run: &CoderRun) -> Vec<Action> {
    if run.end != RunEnd::Exited(Some(0)) || !run.still_mine {
        return Vec::new();
    }
    let task = &run.task;
    if let Some(OnBehalf::Refused(why)) = &run.on_behalf {
        memory.task(task).left_undone = Some(format!(
            "## Left undone by your last run\nliza did not submit your work: {why}\nFix it; liza submits again when you are done."
        ));
        return vec![Action::Say(format!(
            "{}: {task} not submitted: {why}",
            view.agent
        ))];
    }
    memory.task(task).left_undone =
        left_undone(run.committed, &run.dirty, view.backend.runs_commands);
    Vec::new()
}

/// A line when the verdict liza took from a reviewer's answer was refused.
pub fn reviewer_left(view: &View, run: &ReviewRun) -> Vec<Action> {
    match &run.on_behalf {
        Some(OnBehalf::Refused(why)) => vec![Action::Say(format!(
            "{}: the agent's verdict on {} was refused: {why}",
            view.agent, run.task
        ))],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_verdict_line_counts_and_a_rejection_keeps_its_text() {
        let out = "Reviewing.\nLIZA-VERDICT: approve\nOn second thought:\n  LIZA-VERDICT: **reject**\n**Blockers**\n- a.rs:3 — no test — add one\n";
        match parse_verdict(out) {
            Some(Verdict::Reject { reason }) => {
                assert!(reason.starts_with("**Blockers**"), "{reason}");
                assert!(reason.contains("a.rs:3"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_verdict("ok\nLIZA-VERDICT: Approve."),
            Some(Verdict::Approve)
        );
        assert_eq!(parse_verdict("no verdict here"), None);
        assert_eq!(parse_verdict("LIZA-VERDICT: maybe"), None);
        // The prompt's own instruction is not a verdict line.
        assert_eq!(parse_verdict(&no_commands_note(true)), None);
    }

    #[test]
    fn what_was_left_undone_is_said() {
        assert_eq!(left_undone(false, &[], true), None);
        assert_eq!(left_undone(true, &[], false), None);
        let note = left_undone(true, &["a.rs".into()], true).unwrap();
        assert!(note.contains("uncommitted changes (a.rs)"), "{note}");
        assert!(note.contains("did not submit"), "{note}");
    }
}
