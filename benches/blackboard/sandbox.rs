//! The S row (specs/quality.md, specs/sandbox.md *Cost*): what the sandbox adds to each
//! agent run of a running supervisor. A coder's supervisor (`liza agent coder`) runs its
//! agent again and again on one task — the agent a shell that appends the time to a file
//! of its worktree and commits it (progress, so the task stays the coder's and the next
//! run starts at once; sandboxed, the commit goes through the private store and its
//! sync) — sandboxed, then with `--no-sandbox`, in alternating rounds so drift in the
//! machine affects both alike. The time between two runs' starts is one whole run of the
//! supervisor (its transactions, the prompt, the spawn, the end of the run); the
//! difference of the medians is the sandbox's cost per run: scratch directories, the
//! private git store and its sync, the channel, the view (toolchains kept a while), and
//! bubblewrap. Skipped, saying so, where no sandbox can start.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::{LIZA, Row, Sample, bench_root, floor_once, git, sample_of};

/// Runs a supervisor until its agent has started `runs` more times; the times between
/// consecutive starts.
fn intervals(dir: &Path, sandboxed: bool, runs: usize) -> Vec<Duration> {
    let progress = dir.join(".worktrees/t-1/progress.txt");
    let before = std::fs::read_to_string(&progress)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    let mut cmd = Command::new(LIZA);
    cmd.args(["agent", "coder", "t-1"])
        .current_dir(dir)
        .env("LIZA_AGENT_ID", "coder-1")
        .env("LIZA_LOCK_TIMEOUT", "120")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.join("supervisor.err")).expect("a log file"));
    if !sandboxed {
        cmd.arg("--no-sandbox");
    }
    let mut child = cmd.spawn().expect("liza agent starts");
    let deadline = Instant::now() + Duration::from_secs(300);
    let starts: Vec<u128> = loop {
        let text = std::fs::read_to_string(&progress).unwrap_or_default();
        let starts: Vec<u128> = text
            .lines()
            .skip(before)
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if starts.len() > runs {
            break starts;
        }
        assert!(
            Instant::now() < deadline,
            "the supervisor stopped running its agent:\n{}\nits last agent logs:\n{}",
            std::fs::read_to_string(dir.join("supervisor.err")).unwrap_or_default(),
            last_agent_logs(dir)
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = child.wait();
    starts
        .windows(2)
        .map(|w| Duration::from_nanos((w[1] - w[0]) as u64))
        .collect()
}

/// The tails of the last three agent logs, for a run that failed.
fn last_agent_logs(dir: &Path) -> String {
    let mut logs: Vec<_> = std::fs::read_dir(dir.join(".liza/agent-logs"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    logs.sort_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    logs.iter()
        .rev()
        .take(3)
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            format!("== {}\n{}", p.display(), tail.join("\n"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn rows(samples: usize) -> Vec<Row> {
    if let liza::sandbox::mechanism::Availability::Unavailable { reason, .. } =
        liza::sandbox::mechanism::probe()
    {
        println!("S rows skipped: no sandbox here ({reason})\n");
        return Vec::new();
    }
    let dir = tempfile::tempdir_in(bench_root()).unwrap();
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(p.join("specs")).unwrap();
    std::fs::write(p.join("specs/vision.md"), "# Vision\n").unwrap();
    git(p, &["add", "."]);
    git(p, &["commit", "-q", "-m", "start"]);
    super::liza(p, &["init", "Bench the sandbox"]);
    super::liza(
        p,
        &[
            "add-task",
            "--id",
            "t-1",
            "--desc",
            "Write the progress file",
            "--spec",
            "specs/vision.md",
            "--done",
            "progress.txt holds a time",
            "--scope",
            "progress.txt",
            "--finalize",
        ],
    );
    // The agent: one line in its worktree per run, committed (a run that only edits a file
    // already dirty shows no progress: the task would be blocked after three).
    let store = liza::ops::open_store(p).unwrap();
    store
        .transact(&liza::blackboard::Actor::Human, |tx| {
            let c = &mut tx.state.config;
            c.max_coder_iterations = Some(1_000_000);
            c.default_cli = Some("sh".into());
            c.agent_tools = Some(liza::blackboard::codec::IdMap(vec![(
                "sh".to_owned(),
                liza::blackboard::model::AgentTool {
                    executable: Some("/bin/sh".into()),
                    args: Some(vec![
                        "-c".into(),
                        "date +%s%N >> progress.txt && git add progress.txt \
                         && git -c user.name=bench -c user.email=bench@example.com \
                         commit -q -m run"
                            .into(),
                    ]),
                    ..Default::default()
                },
            )]));
            tx.log_named("bench_config");
            Ok::<_, ()>(())
        })
        .unwrap();
    // Warm-up, then alternating rounds.
    intervals(p, true, 3);
    intervals(p, false, 3);
    let per_round = (samples / 2).max(5);
    let (mut on, mut off, mut floors) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..2 {
        on.extend(intervals(p, true, per_round));
        off.extend(intervals(p, false, per_round));
        floors.push(floor_once());
    }
    let sandboxed: Sample = sample_of(&mut on, &mut floors.clone());
    let plain = sample_of(&mut off, &mut floors);
    let added = sandboxed.median.as_secs_f64() - plain.median.as_secs_f64();
    vec![Row {
        id: "S1",
        scenario: format!(
            "one agent run of a running coder supervisor, sandboxed; unsandboxed {:.2} ms, +{:.2} ms",
            super::ms(plain.median),
            added * 1000.0
        ),
        target: "≤ unsandboxed + 20 ms".into(),
        verdict: super::verdict(added * 1000.0 <= 20.0),
        sample: sandboxed,
    }]
}
