//! Carrying out the policy's effects (`policy::Action`s that observe nothing): blackboard
//! writes as this supervisor, alarms, WIP commits, the usage-limit state the heartbeats
//! report, console lines. Each is done as asked; none decides anything.

use super::policy::Action;
use super::session::Session;
use crate::git::{Repo, worktree_dir};
use crate::ops;

impl Session {
    /// Applies an effect. A write refused because this registration was superseded
    /// stops the supervisor at the next decision (`Session::write` records it); other
    /// failures are logged: the policy sees their result in the next snapshot.
    pub(super) async fn apply(&mut self, effect: Action) {
        match effect {
            Action::Block {
                task,
                reason,
                questions,
            } => {
                let id = task.clone();
                let cause = crate::lifecycle::BlockCause::CoderFailure;
                let blocked = self
                    .write(move |project, actor| {
                        ops::supervisor_block(project, actor, &id, &reason, &questions, cause)
                    })
                    .await;
                if let Err(e) = blocked {
                    tracing::warn!(task = %task, error = %e, "could not block the task");
                }
            }
            Action::ReleaseReview(task) => self.release_review(&task).await,
            Action::VoidVerdict { task, why } => {
                let id = task.clone();
                let voided = self
                    .write(move |project, actor| ops::void_verdict(project, actor, &id, &why))
                    .await;
                if let Err(e) = voided {
                    tracing::warn!(task = %task, error = %e, "could not void the verdict");
                }
            }
            Action::BoundaryViolation { task, message, key } => {
                self.role_boundary_violation(&message, task.as_ref(), &key)
                    .await;
            }
            Action::SaveWip { task, why } => {
                let (root, dir) = (
                    self.project.root.clone(),
                    worktree_dir(&self.project.root, &task),
                );
                let saved = self
                    .blocking(move |_| Repo::open(&root).and_then(|r| r.commit_wip(&dir, &why)))
                    .await;
                if let Err(e) = saved {
                    tracing::warn!(task = %task, error = %e, "could not save the work in progress");
                }
            }
            Action::LogClaimFailed { task, detail } => {
                let _ = self
                    .write(move |project, actor| {
                        ops::log_add(project, actor, "claim_failed", &detail, Some(&task))
                    })
                    .await;
            }
            Action::Alarm {
                level,
                category,
                message,
                key,
            } => self.alarm(level, &category, &message, &key).await,
            Action::UsageLimit { until } => {
                self.pulse.set_usage_limit(until.map(|(_, wall)| wall));
                self.heartbeat_now().await;
            }
            Action::Say(line) => self.console.info(&line),
            Action::Work(_)
            | Action::Review(_)
            | Action::Merge(_)
            | Action::PlannerTurn
            | Action::Acknowledge(_)
            | Action::SubmitForAgent(_)
            | Action::VerdictForAgent { .. }
            | Action::Wait { .. }
            | Action::Exit(_) => {
                unreachable!("the session executes {effect:?} itself")
            }
        }
    }
}
