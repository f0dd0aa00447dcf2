//! The merge queue benchmark (specs/quality.md Q1, Q2, Q3). Q1, Q2: 16 approved one-file
//! tasks and an `on_merge` check that sleeps 2 s, merged by `liza merge` — with the
//! queue's batches and speculation, and side by side in the same run one task at a time
//! (`merge.max_batch: 1`, `parallel_batches: 1`, how merges went before the queue); times
//! in units of the check's own time. Q3: a whole sprint — 32 tasks, 8 coder and 2 reviewer
//! supervisors whose agents (the fake agent CLI of the tests) take a fixed time per run —
//! against the schedule's lower bound. Real repositories, the real `liza` binary, agents
//! and checks sandboxed. Run with `cargo bench --bench merge_queue` (or `scripts/bench`).

#![expect(
    clippy::unwrap_used,
    reason = "a benchmark's setup that fails is a failed run, with its line"
)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use liza::blackboard::model::{
    AgentTool, Check, CommandSpec, MergeConfig, PromptMode, SandboxConfig, TaskStatus,
};
use liza::blackboard::{Actor, TaskId};

const LIZA: &str = env!("CARGO_BIN_EXE_liza");
/// The `on_merge` check's own time.
const CHECK: Duration = Duration::from_secs(2);
const TASKS: usize = 16;

fn run(dir: &Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .env("LIZA_LOCK_TIMEOUT", "120")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A repository with a spec, and `liza init` run in it, under `target/bench-tmp`.
fn fresh_project(prefix: &str, goal: &str) -> tempfile::TempDir {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-tmp");
    std::fs::create_dir_all(&root).unwrap();
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&root)
        .unwrap();
    let p = dir.path();
    run(p, "git", &["init", "-q", "-b", "main"], &[]);
    std::fs::create_dir_all(p.join("specs")).unwrap();
    std::fs::write(p.join("specs/vision.md"), "# Vision\n").unwrap();
    run(p, "git", &["add", "."], &[]);
    run(p, "git", &["commit", "-q", "-m", "start"], &[]);
    run(p, LIZA, &["init", goal], &[]);
    dir
}

/// Adds `task`, one file in `scope`, finalized.
fn add_task(p: &Path, task: &str, scope: &str) {
    let args = [
        "add-task",
        "--id",
        task,
        "--desc",
        "One file",
        "--spec",
        "specs/vision.md",
        "--done",
        "the file is there",
        "--scope",
        scope,
        "--finalize",
    ];
    run(p, LIZA, &args, &[]);
}

/// A project whose queue holds `TASKS` approved one-file tasks; those of `failing` write a
/// file the check rejects.
fn queue(failing: &[usize], max_batch: i64, parallel: i64) -> tempfile::TempDir {
    let dir = fresh_project("liza-queue-", "Benchmark the merge queue");
    let p = dir.path();
    let store = liza::ops::open_store(p).unwrap();
    let script = format!(
        "sleep {}; if grep -rl BROKEN --include='*.txt' . ; then exit 1; fi",
        CHECK.as_secs()
    );
    store
        .transact(&Actor::Human, |tx| {
            tx.state.config.checks = Some(vec![Check {
                name: "slow-check".into(),
                run: CommandSpec::Argv(vec!["sh".into(), "-c".into(), script.clone()]),
                timeout: Some(120),
                on_review: None,
                on_merge: Some(true),
                extra: Default::default(),
            }]);
            tx.state.config.merge = Some(MergeConfig {
                max_batch: Some(max_batch),
                parallel_batches: Some(parallel),
                extra: Default::default(),
            });
            tx.log_named("bench_config");
            Ok::<_, ()>(())
        })
        .unwrap();
    let reviewer = run(p, LIZA, &["register", "code-reviewer-1"], &[]);
    let reviewer = reviewer.trim();
    for i in 1..=TASKS {
        let (task, coder) = (format!("t-{i}"), format!("coder-{i}"));
        let generation = run(p, LIZA, &["register", &coder], &[]);
        let coder_env = [
            ("LIZA_AGENT_ID", coder.as_str()),
            ("LIZA_AGENT_GENERATION", generation.trim()),
        ];
        add_task(p, &task, "one file");
        run(p, LIZA, &["claim-task", &task, &coder], &[]);
        let wt = p.join(".worktrees").join(&task);
        let text = if failing.contains(&i) {
            "BROKEN\n"
        } else {
            "fine\n"
        };
        std::fs::write(wt.join(format!("f{i}.txt")), text).unwrap();
        run(&wt, "git", &["add", "."], &[]);
        run(
            &wt,
            "git",
            &["commit", "-q", "-m", &format!("work on {task}")],
            &[],
        );
        let head = run(&wt, "git", &["rev-parse", "HEAD"], &[]);
        run(
            p,
            LIZA,
            &["submit-for-review", &task, head.trim()],
            &coder_env,
        );
        run(p, LIZA, &["claim-review", &task, "code-reviewer-1"], &[]);
        run(
            p,
            LIZA,
            &["submit-verdict", &task, "approve", "--commit", head.trim()],
            &[
                ("LIZA_AGENT_ID", "code-reviewer-1"),
                ("LIZA_AGENT_GENERATION", reviewer),
            ],
        );
    }
    dir
}

/// The time `liza merge` takes to end every task of the queue, checked: the failing ones
/// INTEGRATION_FAILED, every other MERGED.
fn drain(failing: &[usize], max_batch: i64, parallel: i64) -> Duration {
    let dir = queue(failing, max_batch, parallel);
    let p = dir.path();
    let started = Instant::now();
    let out = Command::new(LIZA)
        .arg("merge")
        .current_dir(p)
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    let expected = if failing.is_empty() { 0 } else { 1 };
    assert_eq!(
        out.status.code(),
        Some(expected),
        "liza merge: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state = liza::ops::open_store(p).unwrap().snapshot().unwrap().state;
    for i in 1..=TASKS {
        let id = TaskId::parse(&format!("t-{i}")).unwrap();
        let want = if failing.contains(&i) {
            TaskStatus::IntegrationFailed
        } else {
            TaskStatus::Merged
        };
        assert_eq!(state.task(&id).unwrap().status, want, "t-{i}");
    }
    elapsed
}

/// Q3's agents: a coder's run and a reviewer's take this long.
const CODER_RUN: Duration = Duration::from_secs(4);
const REVIEW_RUN: Duration = Duration::from_secs(1);
const SPRINT_TASKS: usize = 32;
const CODERS: usize = 8;
const REVIEWERS: usize = 2;

/// The sprint's lower bound under the lifecycle's rules: the least time in which every
/// task can be approved when nothing but the runs and the reviews takes time, then one
/// check. A coder works on one task at a time (specs/lifecycle.md, UNCLAIMED → CLAIMED:
/// "no other active task"), so its next claim waits for its task's approval: the bound
/// is found exactly, by trying every choice the reviewers have at each step — which of
/// the waiting submissions to review, or none — with every coder claiming as soon as it
/// may (claiming later never helps).
fn ideal_makespan() -> Duration {
    // One step is one review; a coder's run is a whole number of them.
    let step = REVIEW_RUN;
    assert_eq!(CODER_RUN.as_millis() % step.as_millis(), 0);
    let run = (CODER_RUN.as_millis() / step.as_millis()) as u32;
    // Each coder: the steps left of its run (0: its task waits for a review), or `None`
    // once no task is left to claim. Coders are alike, so a state keeps them sorted;
    // then the tasks left to claim, and the tasks approved.
    type Sprint = (Vec<Option<u32>>, usize, usize);
    let first = SPRINT_TASKS.min(CODERS);
    let mut coders = vec![Some(run); first];
    coders.resize(CODERS, None);
    let mut states: HashSet<Sprint> = HashSet::from([(coders, SPRINT_TASKS - first, 0)]);
    for steps in 1u32.. {
        let mut next = HashSet::new();
        for (coders, left, approved) in &states {
            let waiting = coders.iter().filter(|c| **c == Some(0)).count();
            for reviewed in 0..=waiting.min(REVIEWERS) {
                let (mut left, mut taken) = (*left, 0);
                let mut after: Vec<Option<u32>> = coders
                    .iter()
                    .map(|c| match c {
                        Some(0) if taken < reviewed => {
                            taken += 1;
                            // Approved at the step's end: the coder claims the next task.
                            (left > 0).then(|| {
                                left -= 1;
                                run
                            })
                        }
                        Some(r) if *r > 0 => Some(r - 1),
                        other => *other,
                    })
                    .collect();
                if approved + reviewed == SPRINT_TASKS {
                    return step * steps + CHECK;
                }
                after.sort_unstable();
                next.insert((after, left, approved + reviewed));
            }
        }
        states = next;
    }
    unreachable!("every task is approved after finitely many steps")
}

/// Q3: the time from the supervisors' start until every task is MERGED, and the
/// reviewers' gaps between runs.
fn sprint() -> (Duration, Vec<f64>) {
    let dir = fresh_project("liza-sprint-", "Benchmark a sprint");
    let p = dir.path();
    let scenario = tempfile::tempdir().unwrap();
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let agent: PathBuf = tests.join("fake-agent/agent.sh");
    let store = liza::ops::open_store(p).unwrap();
    let check = format!("sleep {}", CHECK.as_secs());
    store
        .transact(&Actor::Human, |tx| {
            // The fake agent counts its runs in the scenario directory: the one place
            // outside its worktree a sandboxed run may write.
            tx.state.config.sandbox = Some(SandboxConfig {
                writable: Some(vec![scenario.path().display().to_string()]),
                read_only: Some(vec![tests.display().to_string()]),
                ..Default::default()
            });
            let tool = AgentTool {
                executable: Some(agent.display().to_string()),
                prompt: Some(PromptMode::Stdin),
                ..Default::default()
            };
            tx.state.config.agent_tools =
                Some(liza::blackboard::codec::IdMap(vec![("fake".into(), tool)]));
            tx.state.config.default_cli = Some("fake".into());
            tx.state.config.checks = Some(vec![Check {
                name: "slow-check".into(),
                run: CommandSpec::Argv(vec!["sh".into(), "-c".into(), check.clone()]),
                timeout: Some(120),
                on_review: None,
                on_merge: Some(true),
                extra: Default::default(),
            }]);
            tx.log_named("bench_config");
            Ok::<_, ()>(())
        })
        .unwrap();
    for i in 1..=SPRINT_TASKS {
        let task = format!("t-{i}");
        add_task(p, &task, &format!("{task}.txt"));
    }
    // Each run notes when it started and ended (`$dir` is the scenario directory), so
    // the time a reviewer spends between runs is shown beside the makespan.
    let stamp =
        |what: &str| format!("echo \"{what} $(date +%s.%N)\" >> \"$dir/times.$LIZA_AGENT_ID\"\n");
    for (role, script) in [
        (
            "coder",
            format!(
                "{}sleep {}\nwork \"$key.txt\" \"text of $key\"\nsubmit\n{}",
                stamp("start"),
                CODER_RUN.as_secs_f64(),
                stamp("end")
            ),
        ),
        (
            "code-reviewer",
            format!(
                "{}sleep {}\napprove\n{}",
                stamp("start"),
                REVIEW_RUN.as_secs_f64(),
                stamp("end")
            ),
        ),
    ] {
        let path = scenario.path().join(role).join("default.sh");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, script).unwrap();
    }
    let supervisor = |role: &str, id: String| -> Child {
        Command::new(LIZA)
            .args(["agent", role])
            .current_dir(p)
            .env("LIZA_AGENT_ID", &id)
            .env("FAKE_AGENT_DIR", scenario.path())
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.com")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.com")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(scenario.path().join(format!("{id}.err"))).unwrap())
            .spawn()
            .unwrap()
    };
    let started = Instant::now();
    let mut supervisors: Vec<Child> = (1..=CODERS)
        .map(|n| supervisor("coder", format!("coder-{n}")))
        .chain((1..=REVIEWERS).map(|n| supervisor("code-reviewer", format!("code-reviewer-{n}"))))
        .collect();
    let all_merged = || {
        store
            .snapshot()
            .is_ok_and(|s| s.state.tasks.iter().all(|t| t.status == TaskStatus::Merged))
    };
    let deadline = started + Duration::from_secs(300);
    while !all_merged() {
        assert!(Instant::now() < deadline, "the sprint did not end in 300 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let makespan = started.elapsed();
    for child in &mut supervisors {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    for mut child in supervisors {
        let _ = child.wait();
    }
    let gaps: Vec<f64> = (1..=REVIEWERS)
        .flat_map(|n| run_gaps(&scenario.path().join(format!("times.code-reviewer-{n}"))))
        .collect();
    (makespan, gaps)
}

/// The time between each run's end and the next run's start, in seconds, from the
/// agent's `start`/`end` lines.
fn run_gaps(times: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(times).unwrap_or_default();
    let stamps: Vec<(&str, f64)> = text
        .lines()
        .filter_map(|l| {
            let (what, at) = l.split_once(' ')?;
            Some((what, at.parse().ok()?))
        })
        .collect();
    stamps
        .windows(2)
        .filter(|w| w[0].0 == "end" && w[1].0 == "start")
        .map(|w| w[1].1 - w[0].1)
        .collect()
}

fn main() {
    let check = CHECK.as_secs_f64();
    println!(
        "{:<4} {:<78} {:>9} {:>8} {:>10} {:>8}  {:<12} verdict",
        "id", "scenario", "queue", "×check", "serial", "×check", "target"
    );
    let rows: [(&str, &str, Vec<usize>, f64); 2] = [
        (
            "Q1",
            "16 approved one-file tasks, a 2 s on_merge check: until all are merged",
            Vec::new(),
            4.0,
        ),
        (
            "Q2",
            "the same with task 6 failing the check: it alone INTEGRATION_FAILED",
            vec![6],
            6.0,
        ),
    ];
    // `LIZA_BENCH_ONLY=sprint`: Q3 alone.
    let sprint_only = std::env::var("LIZA_BENCH_ONLY").is_ok_and(|o| o == "sprint");
    for (id, scenario, failing, target) in rows.into_iter().filter(|_| !sprint_only) {
        let queued = drain(&failing, 8, 2);
        let serial = drain(&failing, 1, 1);
        let ratio = queued.as_secs_f64() / check;
        println!(
            "{id:<4} {scenario:<78} {:>8.1}s {:>7.1}× {:>9.1}s {:>7.1}×  {:<12} {}",
            queued.as_secs_f64(),
            ratio,
            serial.as_secs_f64(),
            serial.as_secs_f64() / check,
            format!("≤ {target:.0} × check"),
            if ratio <= target { "ok" } else { "MISSED" }
        );
    }
    let (makespan, mut gaps) = sprint();
    let ideal = ideal_makespan();
    let ratio = makespan.as_secs_f64() / ideal.as_secs_f64();
    println!(
        "{:<4} {:<78} {:>8.1}s {:>8} {:>9.1}s {:>8}  {:<12} {}",
        "Q3",
        format!(
            "a sprint: {SPRINT_TASKS} tasks, {CODERS} coders ({} s runs), {REVIEWERS} reviewers ({} s), a {} s check: makespan ÷ ideal {ratio:.2}",
            CODER_RUN.as_secs(),
            REVIEW_RUN.as_secs(),
            CHECK.as_secs()
        ),
        makespan.as_secs_f64(),
        "",
        ideal.as_secs_f64(),
        "(ideal)",
        "≤ 1.25 × ideal",
        if ratio <= 1.25 { "ok" } else { "MISSED" }
    );
    gaps.sort_by(f64::total_cmp);
    if let (Some(first), Some(last)) = (gaps.first(), gaps.last()) {
        println!(
            "     a reviewer between two runs (its run's end to the next one's start, {} gaps): median {:.0} ms, from {:.0} to {:.0} ms",
            gaps.len(),
            gaps[gaps.len() / 2] * 1000.0,
            first * 1000.0,
            last * 1000.0
        );
    }
    let _ = std::fs::remove_dir_all(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-tmp"));
}
