//! The supervisor benchmark: specs/quality.md P5 (a BLOCKED transition → the planner's agent
//! process started), P6 (a new UNCLAIMED task → a waiting coder supervisor claimed it) and
//! P7 (idle supervisors — planner, 4 coders, 2 reviewers — with nothing to do: state.yaml
//! rewrites, CPU, RSS), with real `liza agent` processes and the fake agent CLI of the
//! tests. Run with `cargo bench --bench supervisors`; `LIZA_BENCH_QUICK=1` takes fewer
//! samples and a 30 s idle window (`LIZA_BENCH_IDLE_SECS` sets it; specs/quality.md says 600).

#![expect(
    clippy::unwrap_used,
    reason = "a benchmark's setup that fails is a failed run, with its line"
)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use liza::blackboard::model::{AgentTool, PromptMode, TaskStatus};
use liza::blackboard::{Actor, Store, TaskId};

const LIZA: &str = env!("CARGO_BIN_EXE_liza");

fn fake_agent() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake-agent/agent.sh")
}

fn quick() -> bool {
    std::env::var_os("LIZA_BENCH_QUICK").is_some()
}

fn run(dir: &Path, program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

struct Bench {
    dir: tempfile::TempDir,
    scenario: tempfile::TempDir,
    store: Store,
}

impl Bench {
    fn new() -> Bench {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-tmp");
        std::fs::create_dir_all(&root).unwrap();
        let dir = tempfile::Builder::new()
            .prefix("liza-agents-")
            .tempdir_in(&root)
            .unwrap();
        let p = dir.path();
        run(p, "git", &["init", "-q", "-b", "main"]);
        std::fs::create_dir_all(p.join("specs")).unwrap();
        std::fs::write(p.join("specs/vision.md"), "# Vision\n").unwrap();
        run(p, "git", &["add", "."]);
        run(p, "git", &["commit", "-q", "-m", "start"]);
        run(p, LIZA, &["init", "Benchmark goal"]);
        let store = liza::ops::open_store(p).unwrap();
        let agent = fake_agent().display().to_string();
        // The fake agent stamps its turns in the scenario directory: the one place outside
        // its worktree a sandboxed run may write; the fakes themselves are shown read-only.
        let scenario = tempfile::tempdir().unwrap();
        let sandbox = liza::blackboard::model::SandboxConfig {
            writable: Some(vec![scenario.path().display().to_string()]),
            read_only: Some(vec![
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests")
                    .display()
                    .to_string(),
            ]),
            ..Default::default()
        };
        store
            .transact(&Actor::Human, |tx| {
                tx.state.config.sandbox = Some(sandbox.clone());
                let tool = AgentTool {
                    executable: Some(agent.clone()),
                    prompt: Some(PromptMode::Stdin),
                    ..Default::default()
                };
                tx.state.config.agent_tools =
                    Some(liza::blackboard::codec::IdMap(vec![("fake".into(), tool)]));
                tx.state.config.default_cli = Some("fake".into());
                tx.log_named("bench_config");
                Ok::<_, ()>(())
            })
            .unwrap();
        Bench {
            dir,
            scenario,
            store,
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn step(&self, role: &str, name: &str, script: &str) {
        let path = self.scenario.path().join(role).join(format!("{name}.sh"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, script).unwrap();
    }

    fn supervisor(&self, role: &str, id: &str) -> Child {
        Command::new(LIZA)
            .args(["agent", role])
            .current_dir(self.path())
            .env("LIZA_AGENT_ID", id)
            .env("FAKE_AGENT_DIR", self.scenario.path())
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.com")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.com")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.scenario.path().join(format!("{id}.err"))).unwrap())
            .spawn()
            .unwrap()
    }

    fn wait(&self, what: &str, mut done: impl FnMut(&Bench) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done(self) {
            if Instant::now() > deadline {
                let mut logs = String::new();
                for e in std::fs::read_dir(self.scenario.path()).unwrap().flatten() {
                    if e.path()
                        .extension()
                        .is_some_and(|x| x == "err" || x == "log")
                    {
                        logs.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
                    }
                }
                panic!("timed out: {what}\n{logs}");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn status(&self, id: &str) -> Option<TaskStatus> {
        let id = TaskId::parse(id).unwrap();
        self.store
            .snapshot()
            .ok()?
            .state
            .task(&id)
            .map(|t| t.status)
    }

    fn stamps(&self, name: &str) -> Vec<u128> {
        std::fs::read_to_string(self.scenario.path().join(name))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }
}

struct Row {
    id: &'static str,
    scenario: String,
    median: Duration,
    p95: Duration,
    target: &'static str,
    verdict: String,
}

fn stats(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let median = samples[samples.len() / 2];
    let p95 = samples[(samples.len() * 95 / 100).min(samples.len() - 1)];
    (median, p95)
}

/// P5 and P6 with one planner and one coder supervisor: each sample adds a task (P6:
/// until it is CLAIMED), whose agent blocks it at once (P5: from the block committed to
/// the planner's agent started).
fn wake_latencies(samples: usize) -> Vec<Row> {
    let bench = Bench::new();
    bench.step(
        "coder",
        "default",
        "liza block \"$key\" --reason 'bench' --question 'what now?'\ndate +%s%N >> \"$FAKE_AGENT_DIR/blocked.stamps\"\n",
    );
    bench.step(
        "planner",
        "BLOCKED_TASKS",
        "date +%s%N >> \"$FAKE_AGENT_DIR/planner.stamps\"\n",
    );
    // One DRAFT task keeps the planner from initial planning.
    run(
        bench.path(),
        LIZA,
        &[
            "add-task",
            "--id",
            "draft",
            "--desc",
            "Kept as a draft",
            "--spec",
            "specs/vision.md",
            "--done",
            "it prints draft",
            "--scope",
            "draft",
        ],
    );
    let mut planner = bench.supervisor("planner", "planner-1");
    let mut coder = bench.supervisor("coder", "coder-1");
    std::thread::sleep(Duration::from_millis(500));
    let mut claims = Vec::new();
    for i in 0..=samples {
        let id = format!("b-{i}");
        let start = Instant::now();
        run(
            bench.path(),
            LIZA,
            &[
                "add-task",
                "--id",
                &id,
                "--desc",
                "Bench task",
                "--spec",
                "specs/vision.md",
                "--done",
                "it prints bench",
                "--scope",
                "bench",
                "--finalize",
            ],
        );
        bench.wait("claimed", |b| {
            b.status(&id).is_some_and(|s| s != TaskStatus::Unclaimed)
        });
        if i > 0 {
            claims.push(start.elapsed());
        }
        bench.wait("blocked", |b| b.status(&id) == Some(TaskStatus::Blocked));
        bench.wait("planner turn", |b| b.stamps("planner.stamps").len() > i);
        // Let the planner's acknowledgement land before the next sample.
        std::thread::sleep(Duration::from_millis(100));
    }
    let blocked = bench.stamps("blocked.stamps");
    let planner_started = bench.stamps("planner.stamps");
    let wakes: Vec<Duration> = blocked
        .iter()
        .zip(&planner_started)
        .skip(1)
        .map(|(b, p)| Duration::from_nanos(p.saturating_sub(*b) as u64))
        .collect();
    let _ = planner.kill();
    let _ = coder.kill();
    let _ = planner.wait();
    let _ = coder.wait();
    let (m5, p5) = stats(wakes);
    let (m6, p6) = stats(claims);
    vec![
        Row {
            id: "P5",
            scenario: format!("BLOCKED → planner agent process started ({samples} samples)"),
            median: m5,
            p95: p5,
            target: "p95 ≤ 200 ms",
            verdict: verdict(p5 <= Duration::from_millis(200)),
        },
        Row {
            id: "P6",
            scenario: format!(
                "new UNCLAIMED task → claimed by a waiting coder, incl. add-task ({samples} samples)"
            ),
            median: m6,
            p95: p6,
            target: "p95 ≤ 300 ms",
            verdict: verdict(p6 <= Duration::from_millis(300)),
        },
    ]
}

fn verdict(ok: bool) -> String {
    if ok { "ok".into() } else { "MISSED".into() }
}

/// utime + stime of `pid`, and its resident set.
fn cpu_and_rss(pid: u32) -> (Duration, u64) {
    let ticks = 100u64; // USER_HZ on Linux
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let time = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let cpu = Duration::from_millis((time(11) + time(12)) * 1000 / ticks);
    let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0);
    (cpu, rss)
}

/// P7: planner + 4 coders + 2 reviewers with nothing to do for `window`.
fn idle(window: Duration) -> Row {
    let bench = Bench::new();
    run(
        bench.path(),
        LIZA,
        &[
            "add-task",
            "--id",
            "draft",
            "--desc",
            "Kept as a draft",
            "--spec",
            "specs/vision.md",
            "--done",
            "it prints draft",
            "--scope",
            "draft",
        ],
    );
    let ids = [
        ("planner", "planner-1"),
        ("coder", "coder-1"),
        ("coder", "coder-2"),
        ("coder", "coder-3"),
        ("coder", "coder-4"),
        ("code-reviewer", "code-reviewer-1"),
        ("code-reviewer", "code-reviewer-2"),
    ];
    let mut children: Vec<Child> = ids.iter().map(|(r, id)| bench.supervisor(r, id)).collect();
    bench.wait("registrations", |b| {
        b.store
            .snapshot()
            .is_ok_and(|s| s.state.agents.len() == ids.len())
    });
    std::thread::sleep(Duration::from_secs(1));
    let revision = |b: &Bench| b.store.snapshot().unwrap().state.revision.unwrap_or(0);
    let start_revision = revision(&bench);
    let before: Vec<(Duration, u64)> = children.iter().map(|c| cpu_and_rss(c.id())).collect();
    std::thread::sleep(window);
    let after: Vec<(Duration, u64)> = children.iter().map(|c| cpu_and_rss(c.id())).collect();
    let rewrites = revision(&bench) - start_revision;
    let mut worst_cpu = 0.0f64;
    let mut worst_rss = 0u64;
    for (b, a) in before.iter().zip(&after) {
        let share = (a.0.saturating_sub(b.0)).as_secs_f64() / window.as_secs_f64() * 100.0;
        worst_cpu = worst_cpu.max(share);
        worst_rss = worst_rss.max(a.1);
    }
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    let ok = rewrites == 0 && worst_cpu <= 0.5 && worst_rss <= 20 * 1024;
    Row {
        id: "P7",
        scenario: format!(
            "7 idle supervisors, {} s: {rewrites} state.yaml rewrites, worst CPU {worst_cpu:.2} %, worst RSS {:.1} MB",
            window.as_secs(),
            worst_rss as f64 / 1024.0
        ),
        median: Duration::ZERO,
        p95: Duration::ZERO,
        target: "0 rewrites, ≤0.5 % CPU, ≤20 MB",
        verdict: verdict(ok),
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let samples = if quick() { 10 } else { 40 };
    let window = std::env::var("LIZA_BENCH_IDLE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(if quick() { 30 } else { 600 }));
    let mut rows = wake_latencies(samples);
    rows.push(idle(window));
    println!(
        "{:<4} {:<100} {:>10} {:>10}  {:<32} verdict",
        "id", "scenario", "median", "p95", "target"
    );
    for r in rows {
        println!(
            "{:<4} {:<100} {:>8.1}ms {:>8.1}ms  {:<32} {}",
            r.id,
            r.scenario,
            r.median.as_secs_f64() * 1000.0,
            r.p95.as_secs_f64() * 1000.0,
            r.target,
            r.verdict
        );
    }
}
