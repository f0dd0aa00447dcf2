//! `/commit/<id>`: one commit as `git show` prints it, and the tasks that name it.

use std::fmt::Write as _;

use super::Board;
use crate::ops::Project;
use crate::web::html::{E, badge, is_commit_id, task_link};

/// `None` when `id` is not a commit id (nothing else reaches git).
pub(crate) fn render(project: &Project, board: &Board, id: &str) -> Option<String> {
    if !is_commit_id(id) {
        return None;
    }
    let mut s = format!("<h1>Commit <code>{}</code></h1>", E(id));
    let naming: Vec<String> = board
        .snapshot
        .state
        .tasks
        .iter()
        .filter_map(|t| {
            let role = [
                (t.merge_commit.as_deref(), "merged as"),
                (t.review_commit.as_deref(), "submitted as"),
                (t.base_commit.as_deref(), "based on"),
            ]
            .into_iter()
            .find(|(c, _)| c.is_some_and(|c| c.starts_with(id) || id.starts_with(c)))?
            .1;
            Some(format!(
                "<li>{} {} {role} this commit</li>",
                task_link(t.id.as_str()),
                badge(t.status.as_str())
            ))
        })
        .collect();
    if !naming.is_empty() {
        let _ = write!(s, "<ul class=\"naming\">{}</ul>", naming.concat());
    }
    s.push_str(&super::task::show_diff(
        &project.root,
        &[
            "-c",
            super::task::BIG_FILE,
            "show",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--stat",
            "--patch",
            "--format=fuller",
            "--end-of-options",
            id,
            "--",
        ],
        id,
    ));
    Some(s)
}
