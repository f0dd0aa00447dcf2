//! What the supervisor does around any agent CLI (issue 20): the agent's environment
//! (secrets stripped except those its backend passes, `${VAR}` in config), the output
//! scrubbed of keys, an agent that cannot run commands (its commits submitted for it once
//! the review checks pass; a reviewer's verdict taken from its answer), a run that left
//! work undone said in the next prompt, a CLI without credentials or waiting for a login
//! stopping the supervisor with the fix, and the planner refused a backend that cannot run
//! commands. Real supervisor processes drive the fake agent CLI.

use std::time::Duration;

use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;
use nix::sys::signal::Signal;

const GUARD: Duration = Duration::from_secs(60);

/// Adjusts the fake backend's config entry.
fn fake_tool(
    project: &AgentProject,
    mut change: impl FnMut(&mut liza::blackboard::model::AgentTool),
) {
    configure(&project.repo, |c| {
        let mut tools = c.agent_tools.clone().unwrap();
        change(&mut tools.0[0].1);
        c.agent_tools = Some(tools);
    });
}

/// The fake backend renamed to a built-in one, so that built-in's data (passed
/// variables, login phrases, dropped files) applies while the fake does the work.
fn as_built_in(project: &AgentProject, name: &str) {
    configure(&project.repo, |c| {
        let mut tools = c.agent_tools.clone().unwrap();
        tools.0[0].0 = name.into();
        tools.0[0].1.args = Some(Vec::new());
        tools.0[0].1.prompt = Some(liza::blackboard::model::PromptMode::Stdin);
        c.agent_tools = Some(tools);
        c.default_cli = Some(name.into());
    });
}

fn saved_prompts(project: &AgentProject) -> Vec<String> {
    let dir = project.repo.liza_dir().join("agent-prompts");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    names.sort();
    names
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

fn every_file_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((path, bytes));
            }
        }
    }
    out
}

#[test]
fn the_agent_gets_the_keys_its_backend_passes_and_no_other_secret_and_never_leaks_them() {
    let project = AgentProject::new();
    as_built_in(&project, "claude");
    fake_tool(&project, |t| {
        t.pass_env = Some(vec!["MY_PROXY_TOKEN".into()]);
        t.env = Some(liza::blackboard::codec::IdMap(vec![(
            "ANTHROPIC_CUSTOM_HEADERS".into(),
            "X-Key: ${HEADER_SECRET}".into(),
        )]));
    });
    add(&project.repo, "t-1", "");
    let env_file = project.scenario.path().join("env.txt");
    // The agent dumps its environment, and prints the key split across two writes.
    project.step(
        "coder",
        "t-1",
        &format!(
            "env > '{}'\nprintf 'using sk-ant-api03-canary'; sleep 0.2; printf 'Key0123456789abcdef now\\n'\nprintf 'header %s\\n' \"$ANTHROPIC_CUSTOM_HEADERS\"\nwork t-1.txt done\nsubmit\n",
            env_file.display()
        ),
    );
    let env = [
        (
            "ANTHROPIC_API_KEY",
            "sk-ant-api03-canaryKey0123456789abcdef",
        ),
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/anthropic"),
        ("MY_PROXY_TOKEN", "proxy-token-55555555"),
        ("HEADER_SECRET", "header-secret-77777777"),
        ("OPENAI_API_KEY", "sk-openai-canary-88888888"),
        ("GH_TOKEN", "ghp_canary999999999999999999999"),
        ("LIZA_LLM_API_KEY", "liza-canary-66666666"),
    ];
    let out = project.agent_command(
        &[&env[..], &[("LIZA_AGENT_ID", "coder-1")]].concat(),
        &["coder", "--once"],
    );
    assert_success(&out);
    assert_eq!(
        status(&project.repo, "t-1"),
        "READY_FOR_REVIEW",
        "{}",
        stdout(&out)
    );
    let seen = std::fs::read_to_string(&env_file).unwrap();
    for passed in [
        "ANTHROPIC_API_KEY=sk-ant-api03-canaryKey0123456789abcdef",
        "ANTHROPIC_BASE_URL=http://127.0.0.1:9/anthropic",
        "MY_PROXY_TOKEN=proxy-token-55555555",
        "ANTHROPIC_CUSTOM_HEADERS=X-Key: header-secret-77777777",
    ] {
        assert!(seen.contains(passed), "{passed} missing:\n{seen}");
    }
    for stripped in [
        "OPENAI_API_KEY",
        "GH_TOKEN",
        "LIZA_LLM_API_KEY",
        "HEADER_SECRET=",
    ] {
        assert!(
            !seen.contains(stripped),
            "{stripped} reached the agent:\n{seen}"
        );
    }
    std::fs::remove_file(&env_file).unwrap();
    // No secret value anywhere: .liza/ (logs, prompts, alarms), the worktrees, git objects.
    let mut files = every_file_under(&project.repo.liza_dir());
    files.extend(every_file_under(&project.repo.path().join(".worktrees")));
    let objects = project
        .repo
        .command_for("git")
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .output()
        .unwrap();
    files.push(("git objects".into(), objects.stdout));
    files.push(("stdout".into(), out.stdout.clone()));
    for (_, value) in env.iter().filter(|(k, _)| *k != "ANTHROPIC_BASE_URL") {
        for (path, bytes) in &files {
            let text = String::from_utf8_lossy(bytes);
            assert!(!text.contains(value), "{value} found in {}", path.display());
        }
    }
    let logs = every_file_under(&project.repo.liza_dir().join("agent-logs"));
    let log = String::from_utf8_lossy(&logs[0].1).into_owned();
    assert!(log.contains("using [REDACTED] now"), "{log}");
    assert!(log.contains("header X-Key: [REDACTED]"), "{log}");
}

#[test]
fn an_unset_variable_in_the_backends_env_is_a_configuration_error_naming_it() {
    let project = AgentProject::new();
    fake_tool(&project, |t| {
        t.env = Some(liza::blackboard::codec::IdMap(vec![(
            "TOKEN".into(),
            "${NOT_SET_ANYWHERE}".into(),
        )]));
    });
    let before = project.repo.files();
    let out = project.agent_command(&[("LIZA_AGENT_ID", "coder-1")], &["coder", "--once"]);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("${NOT_SET_ANYWHERE}"), "{err}");
    assert!(err.contains("hint: export NOT_SET_ANYWHERE"), "{err}");
    assert_eq!(
        project.repo.files(),
        before,
        "a refused start changes no file"
    );
}

#[test]
fn commits_of_an_agent_that_cannot_run_commands_are_submitted_for_it_once_the_checks_pass() {
    let project = AgentProject::new();
    fake_tool(&project, |t| t.runs_commands = Some(false));
    configure(&project.repo, |c| {
        c.checks = Some(vec![liza::blackboard::model::Check {
            name: "has-done".into(),
            run: liza::blackboard::model::CommandSpec::Shell("grep -q done t-1.txt".into()),
            timeout: None,
            on_review: Some(true),
            on_merge: None,
            extra: Default::default(),
        }]);
    });
    add(&project.repo, "t-1", "");
    // First run: commits work the check refuses; second: fixes it. Neither submits.
    project.step("coder", "t-1.1", "work t-1.txt 'not yet'\n");
    project.step("coder", "t-1.2", "work t-1.txt done\n");
    let coder = project.supervisor("coder", "coder-1");
    project.wait_until("t-1 submitted", GUARD, || {
        status(&project.repo, "t-1") == "READY_FOR_REVIEW"
    });
    let task = task_of(&project.repo, "t-1");
    let head = project.repo.git_in(
        &project.repo.path().join(".worktrees/t-1"),
        &["rev-parse", "HEAD"],
    );
    assert_eq!(task["review_commit"], head.trim());
    let submitted: Vec<_> = task["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "ready_for_review")
        .collect();
    assert_eq!(submitted.len(), 1, "{task}");
    assert_eq!(submitted[0]["agent"], "coder-1", "submitted as the agent");
    let prompts = saved_prompts(&project);
    assert!(
        prompts[0].contains("You cannot run commands here"),
        "{}",
        prompts[0]
    );
    assert!(
        prompts[1].contains("liza did not submit your work: the check has-done"),
        "{}",
        prompts[1]
    );
    let (code, out) = stop(coder, Signal::SIGTERM);
    assert_eq!(code, Some(143), "{out}");
}

#[test]
fn a_reviewer_that_cannot_run_commands_gives_its_verdict_in_its_answer() {
    let project = AgentProject::new();
    add(&project.repo, "t-1", "");
    project.step("coder", "t-1", "work t-1.txt done\nsubmit\n");
    assert_success(&project.agent_command(&[("LIZA_AGENT_ID", "coder-1")], &["coder", "--once"]));
    fake_tool(&project, |t| t.runs_commands = Some(false));
    project.step(
        "code-reviewer",
        "t-1",
        "echo 'The change looks fine.'\necho 'LIZA-VERDICT: reject'\necho '**Blockers**'\necho '- t-1.txt:1 — no test — add one'\n",
    );
    let out = project.agent_command(
        &[("LIZA_AGENT_ID", "code-reviewer-1")],
        &["code-reviewer", "--once"],
    );
    assert_success(&out);
    let task = task_of(&project.repo, "t-1");
    assert_eq!(
        task["status"],
        "REJECTED",
        "stdout:\n{}\nstderr:\n{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        task["rejection_reason"]
            .as_str()
            .unwrap()
            .contains("t-1.txt:1 — no test — add one"),
        "{task}"
    );
    let prompt = saved_prompts(&project)
        .into_iter()
        .find(|p| p.contains("ROLE: code-reviewer"))
        .unwrap();
    assert!(prompt.contains("LIZA-VERDICT:"), "{prompt}");
}

#[test]
fn a_run_that_committed_but_did_not_submit_is_progress_and_the_next_prompt_says_so() {
    let project = AgentProject::new();
    add(&project.repo, "t-1", "");
    project.step(
        "coder",
        "t-1.1",
        "work t-1.txt started\necho stray > \"$wt/stray.txt\"\n",
    );
    project.step("coder", "t-1.2", "rm \"$wt/stray.txt\"\nsubmit\n");
    let coder = project.supervisor("coder", "coder-1");
    project.wait_until("t-1 submitted", GUARD, || {
        status(&project.repo, "t-1") == "READY_FOR_REVIEW"
    });
    let prompts = saved_prompts(&project);
    assert!(!prompts[0].contains("Left undone"), "{}", prompts[0]);
    assert!(
        prompts[1].contains("committed but did not submit"),
        "{}",
        prompts[1]
    );
    assert!(
        prompts[1].contains("uncommitted changes (stray.txt)"),
        "{}",
        prompts[1]
    );
    let (code, out) = stop(coder, Signal::SIGTERM);
    assert_eq!(code, Some(143), "{out}");
}

#[test]
fn a_cli_without_credentials_stops_the_supervisor_with_the_fix_and_keeps_the_task() {
    let project = AgentProject::new();
    as_built_in(&project, "claude");
    add(&project.repo, "t-1", "");
    project.step(
        "coder",
        "t-1",
        "echo 'partial' > \"$wt/draft.txt\"\necho 'Not logged in · Please run /login'\nexit 1\n",
    );
    let out = project.agent_command(&[("LIZA_AGENT_ID", "coder-1")], &["coder"]);
    assert_exit(&out, 5);
    let err = stderr(&out);
    assert!(err.contains("could not log in: Not logged in"), "{err}");
    assert!(err.contains("hint: set ANTHROPIC_API_KEY"), "{err}");
    let task = task_of(&project.repo, "t-1");
    assert_eq!(task["status"], "CLAIMED");
    assert!(
        task["failed_by"].as_array().is_none_or(Vec::is_empty),
        "not the coder's failure: {task}"
    );
    // The draft is kept in a WIP commit.
    let log = project.repo.git_in(
        &project.repo.path().join(".worktrees/t-1"),
        &["log", "--format=%s", "-1"],
    );
    assert!(log.contains("WIP"), "{log}");
    let alerts = std::fs::read_to_string(project.repo.liza_dir().join("alerts.log")).unwrap();
    assert!(alerts.contains("AGENT_AUTH"), "{alerts}");
    assert_eq!(project.runs().len(), 1, "no second run");
}

#[test]
fn a_cli_waiting_for_a_login_is_stopped_within_seconds() {
    let project = AgentProject::new();
    as_built_in(&project, "aider");
    add(&project.repo, "t-1", "");
    project.step(
        "coder",
        "t-1",
        "printf 'Login to OpenRouter or create a free account? (Y)es/(N)o [Yes]: '\nsleep 600\n",
    );
    let started = std::time::Instant::now();
    let out = project.agent_command(&[("LIZA_AGENT_ID", "coder-1")], &["coder"]);
    assert_exit(&out, 5);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "stopped at once, not at the progress watchdog"
    );
    let err = stderr(&out);
    assert!(err.contains("Login to OpenRouter"), "{err}");
    assert!(err.contains("hint: set OPENAI_API_KEY"), "{err}");
}

#[test]
fn the_planner_is_refused_a_backend_that_cannot_run_commands() {
    let project = AgentProject::new();
    fake_tool(&project, |t| t.runs_commands = Some(false));
    let before = project.repo.files();
    let out = project.agent_command(&[("LIZA_AGENT_ID", "planner-1")], &["planner", "--once"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("cannot plan"), "{}", stderr(&out));
    assert_eq!(project.repo.files(), before);
}

#[test]
fn files_a_cli_drops_in_its_worktree_are_never_committed_nor_dirty() {
    let project = AgentProject::new();
    as_built_in(&project, "aider");
    add(&project.repo, "t-1", "");
    project.step(
        "coder",
        "t-1",
        "printf x > \"$wt/.aider.chat.history.md\"\nmkdir -p \"$wt/.aider.tags.cache.v4\" && printf y > \"$wt/.aider.tags.cache.v4/c\"\nwork t-1.txt done\nsubmit\n",
    );
    let out = project.agent_command(
        &[
            ("LIZA_AGENT_ID", "coder-1"),
            ("OPENAI_API_KEY", "sk-test-0123456789"),
        ],
        &["coder", "--once"],
    );
    assert_success(&out);
    assert_eq!(
        status(&project.repo, "t-1"),
        "READY_FOR_REVIEW",
        "{}",
        stderr(&out)
    );
    let wt = project.repo.path().join(".worktrees/t-1");
    assert_eq!(project.repo.git_in(&wt, &["status", "--porcelain"]), "");
    let tracked = project.repo.git_in(&wt, &["ls-files"]);
    assert!(!tracked.contains(".aider"), "{tracked}");
}

#[test]
fn the_model_reaches_the_cli_through_its_own_flag() {
    let project = AgentProject::new();
    as_built_in(&project, "gemini");
    fake_tool(&project, |t| t.model = Some("from-config".into()));
    add(&project.repo, "t-1", "");
    project.step("coder", "t-1", "work t-1.txt done\nsubmit\n");
    let out = project.agent_command(
        &[
            ("LIZA_AGENT_ID", "coder-1"),
            ("GEMINI_API_KEY", "g-test-0123456789"),
        ],
        &["coder", "--once", "--model", "from-flag"],
    );
    assert_success(&out);
    let argv = std::fs::read_to_string(project.scenario.path().join("argv.log")).unwrap();
    assert!(argv.contains("--model from-flag"), "{argv}");
    assert!(!argv.contains("from-config"), "{argv}");
}

#[test]
fn a_usage_limit_at_exit_0_waits_for_the_announced_reset_and_status_shows_it() {
    let project = AgentProject::new();
    as_built_in(&project, "aider");
    add(&project.repo, "t-1", "");
    // aider 0.86.2 after its retries: the provider's message, wrapped, and exit 0.
    project.step(
        "coder",
        "t-1",
        "echo draft > \"$wt/draft.txt\"\nprintf 'litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for\\ngpt-4.1 in organization org-e2e on tokens per min (TPM): Limit 30000, Used\\n30000, Requested 100. Please try again in 2h13m.\\nThe API provider has rate limited you. Try again later or check your quotas.\\n'\nexit 0\n",
    );
    let started = liza::blackboard::Timestamp::now();
    let coder = project.supervisor("coder", "coder-1");
    let alerts = project.repo.liza_dir().join("alerts.log");
    project.wait_until("the usage-limit alarm", GUARD, || {
        std::fs::read_to_string(&alerts).is_ok_and(|a| a.contains("PROVIDER_QUOTA_EXHAUSTED"))
    });
    let status = json(&project.repo.liza(&["status", "--json"]));
    let agent = status["result"]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "coder-1")
        .unwrap()
        .clone();
    let until =
        liza::blackboard::Timestamp::parse(agent["usage_limit_until"].as_str().unwrap()).unwrap();
    let wait = until.seconds_since(started);
    assert!(
        (2 * 3600 + 13 * 60..=2 * 3600 + 13 * 60 + 60 + 10).contains(&wait),
        "waits until the announced reset plus at most a minute of jitter: {wait} s"
    );
    let human = stdout(&project.repo.liza(&["status"]));
    assert!(
        human.contains("coder-1 waiting for usage limit until"),
        "{human}"
    );
    let task = task_of(&project.repo, "t-1");
    assert_eq!(task["status"], "CLAIMED");
    assert!(
        task["failed_by"].as_array().is_none_or(Vec::is_empty),
        "{task}"
    );
    let ended: Vec<_> = project
        .repo
        .log()
        .into_iter()
        .filter(|e| e["action"] == "agent_run_ended")
        .collect();
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["exit_class"], "usage_limit", "{:?}", ended[0]);
    // The draft was saved, and no second run started.
    let wt = project.repo.path().join(".worktrees/t-1");
    assert_eq!(project.repo.git_in(&wt, &["status", "--porcelain"]), "");
    assert_eq!(project.runs().len(), 1);
    let (code, out) = stop(coder, Signal::SIGTERM);
    assert_eq!(code, Some(143), "{out}");
    assert!(
        out.contains("coder-1 waiting for usage limit until"),
        "{out}"
    );
}
