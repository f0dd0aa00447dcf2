//! The blackboard benchmark: prints the specs/quality.md table for P1, P2, P3, P4, P8 and P10
//! on generated 50 / 300 / 1000-task blackboards, plus the lifecycle's `claim-task` and
//! `submit-for-review` (L1, L2) and `merge` (M1), with the fsync floor measured in the same run. Run with `cargo bench --bench blackboard` (or `scripts/bench`);
//! `LIZA_BENCH_QUICK=1` takes fewer samples; `LIZA_BENCH_ONLY=etcd` runs only the E rows
//! (the blackboard in a local etcd), `LIZA_BENCH_ONLY=sandbox` only the S row (the
//! sandbox's cost), `LIZA_BENCH_ONLY=ledger` only the C rows (the token ledger).

#![expect(
    unreachable_pub,
    reason = "the benchmark modules share helpers within one binary"
)]
#![expect(
    clippy::unwrap_used,
    reason = "a benchmark's setup that fails is a failed run, with its line"
)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use liza::blackboard::log::{self as activity, LogEntry};
use liza::blackboard::store::hash::ContentHash;
use liza::blackboard::store::journal::Journal;
use liza::blackboard::store::{atomic, write_revision_files};
use liza::blackboard::{Actor, Timestamp};
use liza::status::Report;

#[path = "blackboard/etcd.rs"]
mod etcd;
#[path = "blackboard/ledger.rs"]
mod ledger;
#[path = "blackboard/sandbox.rs"]
mod sandbox;
#[path = "blackboard/web.rs"]
mod web;

const LIZA: &str = env!("CARGO_BIN_EXE_liza");

struct Sample {
    median: Duration,
    p95: Duration,
    /// Median of the 20 KB fsync floor sampled between the runs: disks of shared
    /// machines drift by several times within minutes, so each row says what it ran on.
    floor: Duration,
}

/// Runs `f` `n` times after a warm-up, sampling the fsync floor after each run.
fn measure(n: usize, mut f: impl FnMut()) -> Sample {
    f();
    let mut times = Vec::with_capacity(n);
    let mut floors = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
        floors.push(floor_once());
    }
    sample_of(&mut times, &mut floors)
}

fn sample_of(times: &mut [Duration], floors: &mut [Duration]) -> Sample {
    times.sort();
    floors.sort();
    Sample {
        median: times[times.len() / 2],
        p95: times[(times.len() * 95 / 100).min(times.len() - 1)],
        floor: floors.get(floors.len() / 2).copied().unwrap_or_default(),
    }
}

/// One sample of the specs/quality.md floor: write + fsync + rename + directory fsync of a
/// 20 KB file.
fn floor_once() -> Duration {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = DIR
        .get_or_init(|| tempfile::tempdir_in(bench_root()).unwrap())
        .path();
    let bytes = [b'x'; 20 * 1024];
    let t = Instant::now();
    let temp = atomic::write_temp_synced(dir, "f.", &bytes).unwrap();
    std::fs::rename(&temp, dir.join("state.yaml")).unwrap();
    atomic::fsync_dir(dir).unwrap();
    t.elapsed()
}

/// CPU time (user + system) of this process so far.
fn cpu_time() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_SELF).expect("getrusage");
    let tv =
        |t: nix::sys::time::TimeVal| Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000);
    tv(usage.user_time()) + tv(usage.system_time())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .output()
        .expect("git runs")
        .status
        .success();
    assert!(ok, "git {args:?}");
}

fn liza(dir: &Path, args: &[&str]) {
    let out = Command::new(LIZA)
        .args(args)
        .current_dir(dir)
        .env("LIZA_LOCK_TIMEOUT", "120")
        .output()
        .expect("liza runs");
    assert!(
        out.status.success(),
        "liza {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A repository whose blackboard holds a generated state of `tasks` tasks; `commented`
/// puts a person's comment above every tenth task and at the top, so every transaction
/// takes the minimal-edit path that keeps them.
fn project(tasks: usize, bytes_per_task: usize, commented: bool) -> (tempfile::TempDir, usize) {
    project_with(tasks, bytes_per_task, commented, None)
}

/// [`project`], plus `history` = (count, archived): that many MERGED tasks of earlier work,
/// in state.yaml or moved to the archive (its file written, its index in state.yaml).
fn project_with(
    tasks: usize,
    bytes_per_task: usize,
    commented: bool,
    history: Option<(usize, bool)>,
) -> (tempfile::TempDir, usize) {
    let dir = tempfile::Builder::new()
        .prefix("liza-bench-")
        .tempdir_in(bench_root())
        .expect("temp dir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(p.join("specs")).unwrap();
    std::fs::write(p.join("specs/vision.md"), "# Vision\n").unwrap();
    git(p, &["add", "."]);
    git(p, &["commit", "-q", "-m", "start"]);
    liza(p, &["init", "Benchmark goal"]);
    let mut state = liza::bench::generate_state(tasks, bytes_per_task, Timestamp::now());
    if let Some((count, archived)) = history {
        let records = liza::bench::add_history(&mut state, count, 2600, archived);
        if archived {
            let archive = liza::blackboard::model::Archive {
                sprint: "sprint-0".into(),
                tasks: liza::blackboard::model::TaskList(records),
                extra: Default::default(),
            };
            std::fs::create_dir_all(p.join(".liza/archive")).unwrap();
            std::fs::write(
                p.join(".liza/archive/sprint-0.yaml"),
                liza::blackboard::document::emit_record(&archive),
            )
            .unwrap();
        }
    }
    for spec in liza::bench::spec_files() {
        std::fs::write(p.join(spec), "# spec\n").unwrap();
    }
    for wt in liza::bench::worktree_dirs(&state) {
        std::fs::create_dir_all(p.join(wt)).unwrap();
    }
    let mut text = liza::blackboard::document::emit(&state, 0);
    if commented {
        text = with_comments(&text);
    }
    liza::bench::adopt_state(&p.join(".liza"), &text).unwrap();
    // Adopt it (a full parse once), so the parse cache is warm like in real use.
    liza(p, &["note", "all", "adopt"]);
    let size = std::fs::metadata(p.join(".liza/state.yaml")).unwrap().len() as usize;
    (dir, size)
}

/// `text` with a comment at the top and one above every tenth task, indented like it.
fn with_comments(text: &str) -> String {
    let mut out = String::from("# Edited by hand: the benchmark's person.\n");
    let mut task = 0;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("- id: task-") {
            if task % 10 == 0 {
                let indent = &line[..line.len() - trimmed.len()];
                out.push_str(&format!("{indent}# watch this one ({task})\n"));
            }
            task += 1;
        }
        out.push_str(line);
        out.push('\n');
    }
    assert!(
        task > 0,
        "the generated state lists its tasks as `- id: task-…`"
    );
    out
}

/// Benchmarks write where the project lives (a real disk), not in a tmpfs.
fn bench_root() -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-tmp");
    std::fs::create_dir_all(&root).unwrap();
    root
}

/// The same fsync'd writes a commit does, with no parsing or logic: journal entry and
/// temp file (fsynced side by side, as the store does), atomic swap, directory fsync, log
/// append.
fn floor_commit(dir: &Path, bytes: &[u8], round: usize) {
    let journal = Journal::new(dir.join("journal"));
    let hash = ContentHash::of(bytes);
    let (temp, _) =
        write_revision_files(&journal, &[], dir, round as u64, hash, bytes).expect("floor writes");
    let target = dir.join("state.yaml");
    atomic::exchange(dir, &temp, &target).unwrap();
    let _ = std::fs::remove_file(&temp);
    atomic::fsync_dir(dir).unwrap();
    let entry = LogEntry::new(Timestamp::now(), "bench", liza::blackboard::EventKind::Note);
    activity::append(&dir.join("log.yaml"), &[entry]).unwrap();
    if round > 2 {
        for old in journal
            .entries()
            .unwrap()
            .iter()
            .filter(|e| e.revision + 2 < round as u64)
        {
            let _ = std::fs::remove_file(&old.path);
        }
    }
}

struct Row {
    id: &'static str,
    scenario: String,
    sample: Sample,
    target: String,
    verdict: String,
}

fn verdict(ok: bool) -> String {
    if ok { "ok".into() } else { "MISSED".into() }
}

fn main() {
    let quick = std::env::var("LIZA_BENCH_QUICK").is_ok();
    let n = |full: usize| if quick { (full / 4).max(5) } else { full };
    let mut rows: Vec<Row> = Vec::new();

    let floor = measure(n(60), || {
        floor_once();
    });
    println!(
        "fsync floor (write + fsync + rename + dir fsync, 20 KB): median {:.2} ms, p95 {:.2} ms\n",
        ms(floor.median),
        ms(floor.p95)
    );

    // `LIZA_BENCH_ONLY=etcd`: the E rows alone; `=sandbox`: the S rows alone.
    let only = std::env::var("LIZA_BENCH_ONLY").ok();
    let only_etcd = only.is_some();
    if only.as_deref() == Some("ledger") {
        rows.extend(ledger::rows(n(40)));
        print_rows(&rows);
        return;
    }
    if only.as_deref() == Some("web") {
        rows.extend(web::rows(n(20), quick));
        print_rows(&rows);
        return;
    }
    for (tasks, per_task, cli_target, validate_target, status_target) in [
        (50usize, 2600usize, Some(("P1", 3.0)), Some(15.0), Some(5.0)),
        (300, 13_500, Some(("P2", 25.0)), Some(200.0), Some(40.0)),
        (1000, 13_500, None, None, None),
    ]
    .into_iter()
    .filter(|_| !only_etcd)
    {
        let (dir, size) = project(tasks, per_task, false);
        let p = dir.path();
        let label = format!("{tasks} tasks, {:.0} KB", size as f64 / 1024.0);
        let samples = if tasks >= 1000 {
            n(10)
        } else if tasks >= 300 {
            n(20)
        } else {
            n(40)
        };

        // P1 / P2: one transition, whole process.
        let note = note_cli(p, samples);
        let plain_note = note.median;
        let (id, target) = cli_target.unwrap_or(("slope", f64::NAN));
        rows.push(Row {
            id,
            scenario: format!("liza note (whole process), {label}"),
            target: if target.is_nan() {
                "-".into()
            } else {
                format!("median ≤ {target} ms")
            },
            verdict: if target.is_nan() {
                "-".into()
            } else {
                verdict(ms(note.median) <= target)
            },
            sample: note,
        });

        // P3: in-process transaction vs the floor of the same writes.
        let (tx, same_writes, cpu) = in_process(p, samples);
        let plain_tx = tx.median;
        let ratio = tx.median.as_secs_f64() / same_writes.median.as_secs_f64();
        rows.push(Row {
            id: if tasks == 50 { "P3" } else { "slope" },
            scenario: format!(
                "in-process transaction, {label} (same writes alone: {:.2} ms, ratio {ratio:.2}; cpu {:.2} ms)",
                ms(same_writes.median),
                ms(cpu)
            ),
            target: if tasks == 50 {
                "≤ 1.5 × same writes".into()
            } else {
                "-".into()
            },
            verdict: if tasks == 50 {
                verdict(ratio <= 1.5)
            } else {
                "-".into()
            },
            sample: tx,
        });

        // P8: validate, whole process, full YAML parse.
        let validate = measure(samples, || liza(p, &["validate"]));
        rows.push(Row {
            id: if validate_target.is_some() {
                "P8"
            } else {
                "slope"
            },
            scenario: format!("liza validate (whole process), {label}"),
            target: validate_target.map_or_else(|| "-".into(), |t| format!("≤ {t} ms")),
            verdict: validate_target
                .map_or_else(|| "-".into(), |t| verdict(ms(validate.median) <= t)),
            sample: validate,
        });

        // P10: snapshot read + status render, in process.
        // A fresh store each time: a new reader process decodes the parse cache (a
        // long-running one reuses what it read last, which would hide that cost).
        let status = measure(samples, || {
            let store = liza::ops::open_store(p).unwrap();
            let snapshot = store.snapshot().unwrap();
            let live = store.live_records().unwrap();
            let report = Report::new(
                &snapshot,
                &live,
                store.paths(),
                Timestamp::now(),
                store.recent_alarms(5),
            );
            std::hint::black_box(report.render());
        });
        rows.push(Row {
            id: if status_target.is_some() {
                "P10"
            } else {
                "slope"
            },
            scenario: format!("snapshot read + status render, {label}"),
            target: status_target.map_or_else(|| "-".into(), |t| format!("≤ {t} ms")),
            verdict: status_target.map_or_else(|| "-".into(), |t| verdict(ms(status.median) <= t)),
            sample: status,
        });

        if tasks <= 300 {
            rows.extend(lifecycle(p, samples, &label, tasks == 50));
        }
        if tasks == 50 {
            rows.push(contention(p));
        }
        let id = cli_target.map_or("1000c", |(id, _)| id);
        rows.extend(commented_rows(
            tasks,
            per_task,
            samples,
            id,
            (plain_note, plain_tx),
        ));
    }

    if !only_etcd {
        rows.extend(growth_rows(n(20)));
    }
    if only.as_deref() != Some("sandbox") {
        rows.extend(etcd::rows(n(40)));
    }
    if only.as_deref() != Some("etcd") {
        rows.extend(sandbox::rows(n(30)));
    }
    if only.is_none() {
        rows.extend(ledger::rows(n(40)));
        rows.extend(web::rows(n(20), quick));
    }
    print_rows(&rows);
    let _ = std::fs::remove_dir_all(bench_root());
}

fn print_rows(rows: &[Row]) {
    println!(
        "{:<8} {:<92} {:>10} {:>10} {:>8} {:>8}  {:<22} verdict",
        "id", "scenario", "median", "p95", "floor", "×floor", "target"
    );
    for row in rows {
        let (floor, ratio) = if row.sample.floor.is_zero() {
            ("-".to_owned(), "-".to_owned())
        } else {
            (
                format!("{:.2}ms", ms(row.sample.floor)),
                format!(
                    "×{:.1}",
                    row.sample.median.as_secs_f64() / row.sample.floor.as_secs_f64()
                ),
            )
        };
        println!(
            "{:<8} {:<92} {:>8.2}ms {:>8.2}ms {:>8} {:>8}  {:<22} {}",
            row.id,
            row.scenario,
            ms(row.sample.median),
            ms(row.sample.p95),
            floor,
            ratio,
            row.target,
            row.verdict
        );
    }
}

/// Archiving keeps a transaction's cost with the live work (specs/blackboard.md *Growth*): P1
/// and P2 with 1 000 terminal tasks of earlier sprints left in state.yaml, and archived —
/// the archived case must stay within 1.25 × the same board without that history.
fn growth_rows(samples: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    for (tasks, per_task, id) in [(50usize, 2600usize, "P1"), (300, 13_500, "P2")] {
        let (plain, _) = project(tasks, per_task, false);
        let (kept, kept_size) = project_with(tasks, per_task, false, Some((1000, false)));
        let (archived, archived_size) = project_with(tasks, per_task, false, Some((1000, true)));
        // Alternate the three so drift in the machine affects each alike.
        let time = |p: &Path, i: usize| {
            let t = Instant::now();
            liza(p, &["note", "all", &format!("growth {i}")]);
            t.elapsed()
        };
        for dir in [&plain, &kept, &archived] {
            time(dir.path(), 0);
        }
        let (mut a, mut b, mut c, mut floors) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for i in 1..=samples {
            a.push(time(plain.path(), i));
            b.push(time(kept.path(), i));
            c.push(time(archived.path(), i));
            floors.push(floor_once());
        }
        let base = sample_of(&mut a, &mut floors.clone());
        let kept_s = sample_of(&mut b, &mut floors.clone());
        let archived_s = sample_of(&mut c, &mut floors);
        let ratio = archived_s.median.as_secs_f64() / base.median.as_secs_f64();
        rows.push(Row {
            id: if id == "P1" { "P1h" } else { "P2h" },
            scenario: format!(
                "liza note, {tasks} live + 1000 terminal tasks left in state.yaml ({:.0} KB); without them {:.2} ms",
                kept_size as f64 / 1024.0,
                ms(base.median)
            ),
            target: "reported".into(),
            verdict: format!("×{:.2}", kept_s.median.as_secs_f64() / base.median.as_secs_f64()),
            sample: kept_s,
        });
        rows.push(Row {
            id: if id == "P1" { "P1a" } else { "P2a" },
            scenario: format!(
                "liza note, {tasks} live + 1000 archived tasks ({:.0} KB; index only)",
                archived_size as f64 / 1024.0
            ),
            target: "≤ 1.25 × without history".into(),
            verdict: format!("{} (×{ratio:.2})", verdict(ratio <= 1.25)),
            sample: archived_s,
        });
    }
    rows
}

/// `liza note` as a whole process, `samples` times.
fn note_cli(p: &Path, samples: usize) -> Sample {
    let mut i = 0;
    measure(samples, || {
        i += 1;
        liza(p, &["note", "all", &format!("bench note {i}")]);
    })
}

/// In-process transactions vs the floor of the same writes, measured alternately in the
/// same run so drift in the machine's disk affects both. Returns the transactions (with
/// the 20 KB floor), the same writes alone, and the CPU time per transaction.
fn in_process(p: &Path, samples: usize) -> (Sample, Sample, Duration) {
    let store = liza::ops::open_store(p).unwrap();
    let floor_dir = tempfile::tempdir_in(bench_root()).unwrap();
    let mut tx_times = Vec::new();
    let mut floor_times = Vec::new();
    let mut floors_20k = Vec::new();
    let mut tx_cpu = Duration::ZERO;
    for k in 1..=samples + 1 {
        let (t, cpu) = (Instant::now(), cpu_time());
        note_in_process(&store, k);
        tx_times.push(t.elapsed());
        tx_cpu += cpu_time() - cpu;
        let bytes = std::fs::read(p.join(".liza/state.yaml")).unwrap();
        let t = Instant::now();
        floor_commit(floor_dir.path(), &bytes, k);
        floor_times.push(t.elapsed());
        floors_20k.push(floor_once());
    }
    let tx = sample_of(&mut tx_times[1..].to_vec(), &mut floors_20k);
    let same_writes = sample_of(&mut floor_times[1..].to_vec(), &mut Vec::new());
    (tx, same_writes, tx_cpu / (samples as u32 + 1))
}

/// One `note` transaction in process, as `liza note` makes it (the next `note-<n>` id).
fn note_in_process(store: &liza::blackboard::Store, k: usize) {
    store
        .transact(&Actor::Human, |tx| {
            let id = tx.state.next_note_id();
            let notes = tx.state.human_notes.get_or_insert_with(Vec::new);
            notes.push(liza::blackboard::model::HumanNote {
                id: Some(id),
                timestamp: Some(tx.now),
                message: format!("in-process {k}"),
                target: Some("all".into()),
                seen_by: Some(Vec::new()),
                extra: Default::default(),
            });
            tx.log(liza::blackboard::EventKind::HumanNote);
            Ok::<_, String>(())
        })
        .unwrap();
}

/// The cost of keeping a person's comments (specs/quality.md: P1c ≤ 1.3 × P1, P2c ≤ 1.3 ×
/// P2, in-process ≤ 1.5 × plain; the 1000-task row is reported): `liza note` and the
/// in-process transaction on the same state with comments in it, next to the
/// comment-free `plain` medians (CLI, in-process).
fn commented_rows(
    tasks: usize,
    per_task: usize,
    samples: usize,
    id: &str,
    plain: (Duration, Duration),
) -> Vec<Row> {
    let (dir, size) = project(tasks, per_task, true);
    let p = dir.path();
    let label = format!("{tasks} tasks, {:.0} KB, commented", size as f64 / 1024.0);
    let note = note_cli(p, samples);
    let (tx, _, cpu) = in_process(p, samples);
    let text = std::fs::read_to_string(p.join(".liza/state.yaml")).unwrap();
    assert!(
        text.contains("# watch this one (0)"),
        "the comments survived the benchmark's transactions"
    );
    let (id_cli, id_tx, targeted): (&'static str, &'static str, bool) = match id {
        "P1" => ("P1c", "P3c", true),
        "P2" => ("P2c", "P2c-tx", true),
        _ => ("1000c", "1000c-tx", false),
    };
    let cli_ratio = note.median.as_secs_f64() / plain.0.as_secs_f64();
    let tx_ratio = tx.median.as_secs_f64() / plain.1.as_secs_f64();
    let judged = |ratio: f64, bound: f64| {
        if targeted {
            format!("{} (×{ratio:.2})", verdict(ratio <= bound))
        } else {
            format!("×{ratio:.2}")
        }
    };
    vec![
        Row {
            id: id_cli,
            scenario: format!("liza note (whole process), {label}"),
            target: if targeted {
                "≤ 1.3 × plain"
            } else {
                "reported"
            }
            .into(),
            verdict: judged(cli_ratio, 1.3),
            sample: note,
        },
        Row {
            id: id_tx,
            scenario: format!("in-process transaction, {label} (cpu {:.2} ms)", ms(cpu)),
            target: if targeted {
                "≤ 1.5 × plain"
            } else {
                "reported"
            }
            .into(),
            verdict: judged(tx_ratio, 1.5),
            sample: tx,
        },
    ]
}

/// `claim-task` (with the worktree created from the integration tip) and
/// `submit-for-review` (with git's submit-time checks), whole process: `samples` fresh
/// tasks, each claimed by its own registered coder; the commit in each worktree is made
/// outside the timing.
fn lifecycle(p: &Path, samples: usize, label: &str, reference: bool) -> Vec<Row> {
    let count = samples + 1;
    let file: String = (0..count)
        .map(|i| format!("- {{id: bench-{i}, desc: Implement bench {i}, spec: specs/vision.md, done: bench {i} prints its number, scope: bench, finalize: true}}\n"))
        .collect();
    std::fs::write(p.join("bench-tasks.yaml"), file).unwrap();
    liza(p, &["add-tasks", "--file", "bench-tasks.yaml"]);
    let mut generations = Vec::new();
    for i in 0..count {
        let out = Command::new(LIZA)
            .args(["register", &format!("coder-{}", 500 + i)])
            .current_dir(p)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "register: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        generations.push(String::from_utf8(out.stdout).unwrap().trim().to_owned());
    }
    let mut i = 0;
    let claim = measure(samples, || {
        liza(
            p,
            &[
                "claim-task",
                &format!("bench-{i}"),
                &format!("coder-{}", 500 + i),
            ],
        );
        i += 1;
    });
    let mut floors = Vec::new();
    let mut times = Vec::new();
    for (i, generation) in generations.iter().enumerate() {
        let wt = p.join(format!(".worktrees/bench-{i}"));
        std::fs::write(wt.join(format!("bench-{i}.txt")), format!("{i}\n")).unwrap();
        git(&wt, &["add", "-A"]);
        git(&wt, &["commit", "-q", "-m", "bench"]);
        let t = Instant::now();
        let out = Command::new(LIZA)
            .args(["submit-for-review", &format!("bench-{i}")])
            .current_dir(p)
            .env("LIZA_AGENT_ID", format!("coder-{}", 500 + i))
            .env("LIZA_AGENT_GENERATION", generation)
            .output()
            .unwrap();
        let elapsed = t.elapsed();
        assert!(
            out.status.success(),
            "submit: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if i > 0 {
            times.push(elapsed);
            floors.push(floor_once());
        }
    }
    let submit = sample_of(&mut times, &mut floors);
    let merge = merges(p, count);
    let id = if reference { "L1" } else { "slope" };
    vec![
        Row {
            id,
            scenario: format!("liza claim-task with worktree creation (whole process), {label}"),
            target: "-".into(),
            verdict: "-".into(),
            sample: claim,
        },
        Row {
            id: if reference { "L2" } else { "slope" },
            scenario: format!("liza submit-for-review with git checks (whole process), {label}"),
            target: "-".into(),
            verdict: "-".into(),
            sample: submit,
        },
        Row {
            id: if reference { "M1" } else { "slope" },
            scenario: format!(
                "liza merge of a one-file change, no checks, merge commit (whole process), {label}"
            ),
            target: "-".into(),
            verdict: "-".into(),
            sample: merge,
        },
    ]
}

/// `merge` of each submitted bench task after a reviewer approved it (outside the
/// timing): the first is a fast-forward and is not counted, the others merge commits.
fn merges(p: &Path, count: usize) -> Sample {
    let out = Command::new(LIZA)
        .args(["register", "code-reviewer-900"])
        .current_dir(p)
        .output()
        .unwrap();
    assert!(out.status.success(), "register the reviewer");
    let generation = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let mut times = Vec::new();
    let mut floors = Vec::new();
    for i in 0..count {
        let task = format!("bench-{i}");
        let wt = p.join(format!(".worktrees/{task}"));
        let head = Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&wt)
            .output()
            .unwrap();
        let head = String::from_utf8(head.stdout).unwrap().trim().to_owned();
        liza(p, &["claim-review", &task, "code-reviewer-900"]);
        let out = Command::new(LIZA)
            .args(["submit-verdict", &task, "approve", "--commit", &head])
            .current_dir(p)
            .env("LIZA_AGENT_ID", "code-reviewer-900")
            .env("LIZA_AGENT_GENERATION", &generation)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "approve: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let t = Instant::now();
        liza(p, &["merge", &task]);
        let elapsed = t.elapsed();
        if i > 0 {
            times.push(elapsed);
            floors.push(floor_once());
        }
    }
    sample_of(&mut times, &mut floors)
}

/// P4: 16 processes × 100 transitions on the 50-task blackboard.
fn contention(p: &Path) -> Row {
    let store = liza::ops::open_store(p).unwrap();
    let start = store.snapshot().unwrap().state.revision();
    let mut floors: Vec<Duration> = (0..10).map(|_| floor_once()).collect();
    let t = Instant::now();
    let workers: Vec<_> = (0..16)
        .map(|w| {
            let p = p.to_path_buf();
            std::thread::spawn(move || {
                for i in 0..100 {
                    liza(&p, &["note", "all", &format!("p{w}-{i}")]);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let elapsed = t.elapsed();
    let end = store.snapshot().unwrap().state.revision();
    let rate = 1600.0 / elapsed.as_secs_f64();
    let exact = end == start + 1600;
    Row {
        id: "P4",
        scenario: format!(
            "16 processes × 100 notes, 50 tasks: {rate:.0} transitions/s, revision +{} ({})",
            end - start,
            if exact { "exact" } else { "LOST UPDATES" }
        ),
        sample: {
            floors.extend((0..10).map(|_| floor_once()));
            let mut per = [elapsed / 1600];
            sample_of(&mut per, &mut floors)
        },
        target: "≥ 300/s, exact +1600".into(),
        verdict: verdict(rate >= 300.0 && exact),
    }
}
