//! The merge queue benchmark (specs/quality.md Q1, Q2): 16 approved one-file tasks and an
//! `on_merge` check that sleeps 2 s, merged by `liza merge` — with the queue's batches and
//! speculation, and side by side in the same run one task at a time (`merge.max_batch: 1`,
//! `parallel_batches: 1`, how merges went before the queue). Times are given in units of
//! the check's own time. Real repositories, the real `liza` binary, the check run
//! sandboxed. Run with `cargo bench --bench merge_queue` (or `scripts/bench`).

#![expect(
    clippy::unwrap_used,
    reason = "a benchmark's setup that fails is a failed run, with its line"
)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use liza::blackboard::model::{Check, CommandSpec, MergeConfig, TaskStatus};
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

/// A project whose queue holds `TASKS` approved one-file tasks; those of `failing` write a
/// file the check rejects.
fn queue(failing: &[usize], max_batch: i64, parallel: i64) -> tempfile::TempDir {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-tmp");
    std::fs::create_dir_all(&root).unwrap();
    let dir = tempfile::Builder::new()
        .prefix("liza-queue-")
        .tempdir_in(&root)
        .unwrap();
    let p = dir.path();
    run(p, "git", &["init", "-q", "-b", "main"], &[]);
    std::fs::create_dir_all(p.join("specs")).unwrap();
    std::fs::write(p.join("specs/vision.md"), "# Vision\n").unwrap();
    run(p, "git", &["add", "."], &[]);
    run(p, "git", &["commit", "-q", "-m", "start"], &[]);
    run(p, LIZA, &["init", "Benchmark the merge queue"], &[]);
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
        run(
            p,
            LIZA,
            &[
                "add-task",
                "--id",
                &task,
                "--desc",
                "One file",
                "--spec",
                "specs/vision.md",
                "--done",
                "the file is there",
                "--scope",
                "one file",
                "--finalize",
            ],
            &[],
        );
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
    for (id, scenario, failing, target) in rows {
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
    let _ = std::fs::remove_dir_all(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-tmp"));
}
