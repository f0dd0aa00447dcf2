//! The built-in coder end to end: a real supervisor (`liza agent coder --cli builtin`)
//! runs `liza builtin coder` against a scripted model server on loopback; the first draft
//! genuinely fails the project's check, the second passes, and the work is committed and
//! submitted under the agent's identity.

mod common;

use common::team::{add, configure};
use common::{Repo, stdout};
use liza::blackboard::model::{Check, CommandSpec};
use liza::builtin::scripted_server::{Script, ScriptedServer, Step};
use serde_json::json;

const CANARY: &str = "canary-api-key-0123456789";

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &std::path::Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else if std::fs::read(&path)
                .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

fn edits(content: &str) -> String {
    json!({"edits": [{"path": "greeting.txt", "content": content}]}).to_string()
}

#[test]
fn the_builtin_coder_reworks_a_failing_draft_then_commits_and_submits() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    configure(&repo, |c| {
        c.checks = Some(vec![Check {
            name: "greeting".into(),
            run: CommandSpec::Shell("grep -q hello greeting.txt".into()),
            timeout: Some(30),
            on_review: None,
            on_merge: None,
            extra: Default::default(),
        }]);
    });
    let server = ScriptedServer::start(Script {
        steps: vec![
            Step::answer_when("The project's checks failed", edits("hello, world\n")),
            Step::answer_when("# Task t-1", edits("hi\n")),
        ],
    })
    .unwrap();
    let out = repo
        .command()
        .env("LIZA_AGENT_ID", "coder-1")
        .env("LIZA_LLM_BASE_URL", server.base_url())
        .env("LIZA_LLM_API_KEY", CANARY)
        .env("LIZA_LLM_BACKOFF_MS", "10")
        .args(["agent", "coder", "t-1", "--cli", "builtin", "--once"])
        .output()
        .unwrap();
    let text = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.requests().len(), 2, "{text}");
    let task = common::supervision::task_of(&repo, "t-1");
    assert_eq!(task["status"], "READY_FOR_REVIEW", "{text}\n{task:#}");
    // The commit on the task branch carries the agent trailer and the passing content.
    let log = repo.git(&["log", "-1", "--format=%B", "task/t-1"]);
    assert!(
        log.starts_with("feat: ") && log.contains("[agent:t-1]"),
        "{log}"
    );
    assert_eq!(
        repo.git(&["show", "task/t-1:greeting.txt"]),
        "hello, world\n"
    );
    // The CommitResult is in the history, with the tokens of both calls in the usage.
    let history = task["history"].as_array().unwrap();
    let result = history
        .iter()
        .find(|e| e["event"] == "commit_result")
        .expect("commit_result");
    assert_eq!(result["agent"], "coder-1", "{result:#}");
    let fields = &result["extra"]["result"];
    assert_eq!(fields["status"], "SUCCESS", "{result:#}");
    assert_eq!(fields["retries"], 1);
    assert_eq!(fields["llm_tokens_used"], 30);
    assert_eq!(fields["branch_name"], "task/t-1");
    assert_eq!(task["usage"]["prompt_tokens"], 20);
    assert_eq!(task["usage"]["completion_tokens"], 10);
    // The second request carried the check's real failure back to the model.
    let second = server.requests()[1].messages_text();
    assert!(second.contains("## greeting (exit"), "{second}");
    // The run log has the patch, the check results and the CommitResult.
    let runs = std::fs::read_dir(repo.liza_dir().join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let lines = std::fs::read_to_string(runs).unwrap();
    for kind in [
        "\"type\":\"patch\"",
        "\"type\":\"test_result\"",
        "\"type\":\"commit_result\"",
    ] {
        assert!(lines.contains(kind), "{kind}: {lines}");
    }
    // S3: the key reached the endpoint in its header only; it is nowhere on disk or in
    // any git object.
    assert_eq!(
        server.requests()[0].headers["authorization"],
        format!("Bearer {CANARY}")
    );
    assert!(files_containing(&repo.liza_dir(), CANARY).is_empty());
    assert!(files_containing(&repo.path().join(".worktrees"), CANARY).is_empty());
    let objects = repo
        .command_for("git")
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .output()
        .unwrap();
    assert!(objects.status.success());
    assert!(
        !objects
            .stdout
            .windows(CANARY.len())
            .any(|w| w == CANARY.as_bytes())
    );
}
