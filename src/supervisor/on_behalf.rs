//! What an agent left undone at the end of a run that exited 0, and what the supervisor
//! does about it. An agent that cannot run commands (aider; any backend with
//! `runs_commands: false`) commits but can never run `liza submit-for-review` or
//! `liza submit-verdict`: the supervisor runs the review checks and submits its commits
//! for it, and takes a reviewer's verdict from a `LIZA-VERDICT:` line of its answer. An
//! agent that could have run them but did not is told in its next prompt what it left.

use super::session::Session;
use crate::blackboard::{Actor, TaskId};
use crate::git::dirty_files;
use crate::lifecycle::Verdict;
use crate::ops;

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

impl Session {
    /// After a coder run that exited 0 with the task still claimed: submits for an agent
    /// that cannot run commands when it committed and left a clean worktree and the
    /// review checks pass; otherwise remembers what was left undone for the next prompt.
    /// Returns whether it submitted.
    pub(super) async fn finish_for_agent(
        &mut self,
        task: &TaskId,
        workdir: &std::path::Path,
        committed: bool,
    ) -> bool {
        let dir = workdir.to_path_buf();
        let dirty = self
            .blocking(move |_| dirty_files(&dir))
            .await
            .unwrap_or_default();
        let runs_commands = self.backend.runs_commands;
        if committed && dirty.is_empty() && !runs_commands {
            match self.submit_for_agent(task, workdir).await {
                Ok(()) => return true,
                Err(why) => {
                    self.console
                        .info(&format!("{}: {task} not submitted: {why}", self.agent));
                    self.memory.task(task).left_undone = Some(format!(
                        "## Left undone by your last run\nliza did not submit your work: {why}\nFix it; liza submits again when you are done."
                    ));
                    return false;
                }
            }
        }
        self.memory.task(task).left_undone = left_undone(committed, &dirty, runs_commands);
        false
    }

    /// Runs the `on_review` checks in the worktree, then submits as the agent.
    async fn submit_for_agent(
        &mut self,
        task: &TaskId,
        workdir: &std::path::Path,
    ) -> Result<(), String> {
        let state = self.snapshot().await.map_err(|e| e.to_string())?;
        let checks: Vec<_> = state.config.review_checks().cloned().collect();
        let dir = workdir.to_path_buf();
        let sandbox = state.config.sandbox();
        let failed = self
            .blocking(move |project| {
                let jail = crate::sandbox::Jail::for_checks(&project.root, &dir, &sandbox);
                checks
                    .iter()
                    .filter_map(|c| ops::run_check(c, &dir, &jail))
                    .filter(|run| !run.passed)
                    .map(|run| {
                        let tail: Vec<&str> = run.output.lines().rev().take(20).collect();
                        let tail: Vec<&str> = tail.into_iter().rev().collect();
                        format!("the check {} {}:\n{}", run.name, run.exit, tail.join("\n"))
                    })
                    .collect::<Vec<_>>()
            })
            .await;
        if !failed.is_empty() {
            return Err(failed.join("\n"));
        }
        let actor = self.as_agent();
        let id = task.clone();
        let submitted = self
            .blocking(move |project| ops::submit_for_review(project, &actor, &id, None))
            .await
            .map_err(|e| e.to_string())?;
        self.console.info(&format!(
            "{}: submitted {task} for review on the agent's behalf ({})",
            self.agent, submitted.value
        ));
        Ok(())
    }

    /// After a review run that exited 0 without a verdict, by an agent that cannot run
    /// commands: the verdict line of its answer, submitted as the reviewer. Returns
    /// whether a verdict was recorded.
    pub(super) async fn verdict_for_agent(&mut self, task: &TaskId, review_commit: &str) -> bool {
        let Some(verdict) = parse_verdict(&self.last_output) else {
            return false;
        };
        let (actor, id, commit) = (self.as_agent(), task.clone(), review_commit.to_owned());
        let word = match verdict {
            Verdict::Approve => "approved",
            Verdict::Reject { .. } => "rejected",
        };
        let recorded = self
            .blocking(move |project| ops::submit_verdict(project, &actor, &id, &verdict, &commit))
            .await;
        match recorded {
            Ok(_) => {
                self.console.info(&format!(
                    "{}: {task} {word} (the verdict line of the agent's answer)",
                    self.agent
                ));
                true
            }
            Err(e) => {
                self.console.info(&format!(
                    "{}: the agent's verdict on {task} was refused: {e}",
                    self.agent
                ));
                false
            }
        }
    }

    /// This supervisor's agent, with its generation, as the author of what it submits for
    /// the agent.
    fn as_agent(&self) -> Actor {
        Actor::Agent {
            id: self.agent.clone(),
            generation: Some(self.generation.clone()),
        }
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
