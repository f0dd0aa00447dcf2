//! The E rows (specs/quality.md): the blackboard in a local etcd (Debian's etcd-server),
//! beside the file store's rows. Skipped, saying so, where `etcd` is not installed.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use liza::blackboard::store::hand_edit::{HandEditOutcome, HandEditPolicy};
use liza::blackboard::{Actor, State, Store, Timestamp};

use super::{
    Row, Sample, bench_root, floor_once, git, measure, note_in_process, sample_of, verdict,
};

/// A member on free loopback ports, its data beside the file store's benchmarks (the
/// same disk).
struct Member {
    child: Child,
    endpoint: String,
    _data: tempfile::TempDir,
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start() -> Option<Member> {
    let installed = Command::new("etcd")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        println!("E rows skipped: etcd is not installed (apt install etcd-server)\n");
        return None;
    }
    let data = tempfile::tempdir_in(bench_root()).unwrap();
    let (client, peer) = (free_port(), free_port());
    let client_url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let child = Command::new("etcd")
        .arg("--data-dir")
        .arg(data.path().join("member"))
        .args(["--listen-client-urls", &client_url])
        .args(["--advertise-client-urls", &client_url])
        .args(["--listen-peer-urls", &peer_url])
        .args(["--initial-advertise-peer-urls", &peer_url])
        .args(["--initial-cluster", &format!("default={peer_url}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start etcd");
    let member = Member {
        child,
        endpoint: format!("127.0.0.1:{client}"),
        _data: data,
    };
    let probe = liza::blackboard::etcd::Client::new(
        std::slice::from_ref(&member.endpoint),
        Duration::from_secs(1),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while probe.get(b"probe").is_err() {
        assert!(Instant::now() < deadline, "etcd did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(member)
}

/// The benchmark's project needs no hand-edit rules: nobody edits it.
struct NoHandEdits;

impl HandEditPolicy for NoHandEdits {
    fn forbidden_changes(&self, _before: &State, _after: &State) -> Vec<String> {
        Vec::new()
    }

    fn reconciled(&self, _outcome: &HandEditOutcome) {}
}

/// A checkout whose blackboard — the generated one of `tasks` tasks — is in etcd, under
/// `bench/<name>`.
fn project(member: &Member, name: &str, tasks: usize, per_task: usize) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("liza-bench-etcd-")
        .tempdir_in(bench_root())
        .unwrap();
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(p.join("specs")).unwrap();
    std::fs::write(p.join("specs/vision.md"), "# Vision\n").unwrap();
    git(p, &["add", "."]);
    git(p, &["commit", "-q", "-m", "start"]);
    git(p, &["branch", "integration"]);
    let state = liza::bench::generate_state(tasks, per_task, Timestamp::now());
    for spec in liza::bench::spec_files() {
        std::fs::write(p.join(spec), "# spec\n").unwrap();
    }
    for wt in liza::bench::worktree_dirs(&state) {
        std::fs::create_dir_all(p.join(wt)).unwrap();
    }
    let address = format!("etcd://{}/bench/{name}", member.endpoint)
        .parse()
        .unwrap();
    let entry = liza::blackboard::log::LogEntry::new(
        Timestamp::now(),
        "human",
        liza::blackboard::EventKind::Init,
    );
    Store::initialize(p, Some(address), state, entry, Arc::new(NoHandEdits)).unwrap();
    dir
}

pub fn rows(samples: usize) -> Vec<Row> {
    let Some(member) = start() else {
        return Vec::new();
    };
    let dir = project(&member, "p50", 50, 2600);
    let p = dir.path();
    let mut rows = Vec::new();

    // E1: a durable transition in process (etcd fsyncs its log before it answers),
    // beside its floor: the keys and values the last transition wrote, sent again alone
    // in one guarded txn, as many times, right after. (Not alternately: a txn between two
    // transitions would move etcd's revision under the store, which would then take the
    // path of a writer that lost a race.)
    let store = liza::ops::open_store(p).unwrap();
    let mut k = 0;
    let mut e1 = measure(samples, || {
        k += 1;
        note_in_process(&store, k);
    });
    let client = liza_etcd::Client::new(
        std::slice::from_ref(&member.endpoint),
        Duration::from_secs(5),
    )
    .unwrap();
    let (guard, writes) = same_writes(&client, "bench/p50/", "bench/p50-floor/");
    let mut floors: Vec<Duration> = (0..samples)
        .map(|_| {
            let t = Instant::now();
            let outcome = client.txn(std::slice::from_ref(&guard), &writes).unwrap();
            let elapsed = t.elapsed();
            assert!(matches!(outcome, liza_etcd::TxnOutcome::Applied { .. }));
            elapsed
        })
        .collect();
    floors.sort();
    e1.floor = floors[floors.len() / 2];
    rows.push(Row {
        id: "E1",
        scenario: "etcd: one transition (note) in process, 50 tasks; floor: its writes alone"
            .into(),
        target: "≤ 2 ms".into(),
        verdict: verdict(super::ms(e1.median) <= 2.0),
        sample: e1,
    });

    rows.push(contention(p));
    // The process rows compare like with like: a blackboard generated as the file
    // store's, through the same commands in the same order.
    let fresh = project(&member, "processes", 50, 2600);
    rows.extend(processes(fresh.path(), samples));
    rows.push(wake_across_hosts(&member, samples / 2));
    rows
}

/// The keys the newest revision under `prefix` wrote, moved under `shadow`, and a guard
/// as a commit's: no key under `shadow` written after a revision that etcd is past
/// (the floor's txns write the same keys again and again, so it always holds).
fn same_writes(
    client: &liza_etcd::Client,
    prefix: &str,
    shadow: &str,
) -> (liza_etcd::Condition, Vec<liza_etcd::Change>) {
    let end = liza_etcd::prefix_end(prefix.as_bytes());
    let (kvs, _) = client.range(prefix.as_bytes(), &end, 0).unwrap();
    let newest = kvs.iter().map(|kv| kv.mod_revision).max().unwrap();
    let writes: Vec<_> = kvs
        .iter()
        .filter(|kv| kv.mod_revision == newest)
        .map(|kv| liza_etcd::Change::Put {
            key: [shadow.as_bytes(), &kv.key[prefix.len()..]].concat(),
            value: kv.value.clone(),
            lease: 0,
        })
        .collect();
    assert!(
        writes.len() >= 2,
        "the newest revision wrote its head and more"
    );
    let guard = liza_etcd::Condition::UnchangedSince {
        key: shadow.as_bytes().to_vec(),
        range_end: liza_etcd::prefix_end(shadow.as_bytes()),
        revision: i64::MAX / 2,
    };
    (guard, writes)
}

/// Runs of E4 and of the file store's P4, alternated.
const CONTENTION_RUNS: usize = 3;

/// E5 and E4: `liza note` as whole processes — one at a time, and 16 at once × 100 — on
/// etcd, beside the same on a file store of the same blackboard in the same run (P1, P4):
/// agents use liza one process per command.
fn processes(etcd: &Path, samples: usize) -> Vec<Row> {
    let (file, _) = super::project(50, 2600, false);
    // The file store's project was adopted by one command; so is this one.
    super::liza(etcd, &["note", "all", "adopt"]);
    let mut on_file = Vec::new();
    let mut on_etcd = Vec::new();
    let mut floors = Vec::new();
    // Alternated, so drift in the machine affects both alike.
    for i in 0..samples {
        for (dir, times) in [(file.path(), &mut on_file), (etcd, &mut on_etcd)] {
            let t = Instant::now();
            super::liza(dir, &["note", "all", &format!("process note {i}")]);
            times.push(t.elapsed());
        }
        floors.push(floor_once());
    }
    let p1 = sample_of(&mut on_file, &mut floors.clone());
    let e5 = sample_of(&mut on_etcd, &mut floors);
    let ratio = e5.median.as_secs_f64() / p1.median.as_secs_f64();
    // Three runs of each, alternated (a burst of the machine's neighbours falls on one
    // run, not on one store), compared by their medians.
    let rate = |row: &Row| 1.0 / row.sample.median.as_secs_f64();
    let mut runs: Vec<(f64, f64)> = Vec::new();
    let mut etcd_rows = Vec::new();
    for _ in 0..CONTENTION_RUNS {
        let file_row = super::contention(file.path());
        let etcd_row = super::contention(etcd);
        runs.push((rate(&etcd_row), rate(&file_row)));
        etcd_rows.push(etcd_row);
    }
    let median = |mut rates: Vec<f64>| {
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    };
    let e4 = median(runs.iter().map(|r| r.0).collect());
    let p4 = median(runs.iter().map(|r| r.1).collect());
    let exact = etcd_rows.iter().all(|r| r.scenario.contains("(exact)"));
    let each: Vec<String> = runs.iter().map(|(e, f)| format!("{e:.0}/{f:.0}")).collect();
    let etcd_rate = etcd_rows
        .into_iter()
        .min_by(|a, b| (rate(a) - e4).abs().total_cmp(&(rate(b) - e4).abs()))
        .expect("runs were made");
    vec![
        Row {
            id: "E5",
            scenario: format!(
                "etcd: `liza note` whole process, 50 tasks: {ratio:.2} × the file store's P1 ({:.2} ms) in this run",
                super::ms(p1.median)
            ),
            target: "≤ 1.5 × P1".into(),
            verdict: verdict(ratio <= 1.5),
            sample: e5,
        },
        Row {
            id: "E4",
            scenario: format!(
                "etcd: 16 processes × 100 `liza note`: {e4:.0}/s against the file store's {p4:.0}/s (P4), medians of {CONTENTION_RUNS} runs alternated in this run ({}); revision {}",
                each.join(", "),
                if exact {
                    "exact +1600 in each"
                } else {
                    "LOST UPDATES"
                }
            ),
            target: "≥ P4, exact +1600".into(),
            verdict: verdict(e4 >= p4 && exact),
            sample: etcd_rate.sample,
        },
    ]
}

/// `liza` in `dir` with `env`; its stdout.
fn liza_env(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> String {
    let out = Command::new(super::LIZA)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .expect("liza runs");
    assert!(
        out.status.success(),
        "liza {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// E3: a task BLOCKED from host A's checkout until the planner's agent starts on host B
/// (another checkout of the project): the etcd watch, the supervisor's decision and the
/// agent's spawn. The agent is the test suite's fake agent CLI; its step script abandons
/// the task, so each sample starts from a quiet blackboard.
fn wake_across_hosts(member: &Member, samples: usize) -> Row {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let a = project(member, "p0", 0, 0);
    let scenario = tempfile::tempdir_in(bench_root()).unwrap();
    let address = format!("etcd://{}/bench/p0", member.endpoint);
    // Host B: a clone of A's repository that joined the blackboard.
    let b = tempfile::tempdir_in(bench_root()).unwrap();
    git(
        b.path(),
        &["clone", "-q", &a.path().display().to_string(), "."],
    );
    liza_env(b.path(), &[], &["join", &address]);
    let agent = root.join("tests/fake-agent/agent.sh").display().to_string();
    let store = liza::ops::open_store(a.path()).unwrap();
    store
        .transact(&Actor::Human, |tx| {
            let tool = liza::blackboard::model::AgentTool {
                executable: Some(agent.clone()),
                prompt: Some(liza::blackboard::model::PromptMode::Stdin),
                ..Default::default()
            };
            tx.state.config.agent_tools = Some(liza::blackboard::codec::IdMap(vec![(
                "fake".to_owned(),
                tool,
            )]));
            tx.state.config.default_cli = Some("fake".into());
            // The fake agent logs its runs in the scenario and runs from this checkout:
            // both where a sandboxed run (specs/sandbox.md) may reach them.
            tx.state.config.sandbox = Some(liza::blackboard::model::SandboxConfig {
                writable: Some(vec![scenario.path().display().to_string()]),
                read_only: Some(vec![root.join("tests").display().to_string()]),
                ..Default::default()
            });
            // Only the watch wakes the planner: no poll comes to the rescue.
            tx.state.config.planner_poll_interval = Some(3600);
            tx.log_named("bench_config");
            Ok::<_, String>(())
        })
        .unwrap();
    std::fs::create_dir_all(scenario.path().join("planner")).unwrap();
    std::fs::write(
        scenario.path().join("planner/BLOCKED_TASKS.sh"),
        r#"t=$(printf '%s\n' "$prompt" | sed -n 's/^WOKEN FOR: BLOCKED_TASKS \([^ ]*\).*/\1/p' | head -n 1)
liza abandon "$t" --reason 'benchmark sample done' >/dev/null
"#,
    )
    .unwrap();
    let add = |id: &str| {
        liza_env(
            a.path(),
            &[],
            &[
                "add-task",
                "--id",
                id,
                "--desc",
                "Implement part of the report flag",
                "--spec",
                "specs/vision.md",
                "--done",
                "report --json prints a totals key",
                "--scope",
                "the report command",
                "--finalize",
            ],
        );
    };
    // A planned sprint: the planner is not woken for its initial planning.
    add("seed");
    let generation = liza_env(a.path(), &[], &["register", "coder-9"])
        .trim()
        .to_owned();
    let mut planner = Command::new(env!("CARGO_BIN_EXE_liza-agent"))
        .arg("planner")
        .current_dir(b.path())
        .env("LIZA_AGENT_ID", "planner-9")
        .env("LIZA_HOST_ID", "host-b")
        .env("FAKE_AGENT_DIR", scenario.path())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(scenario.path().join("planner.err")).unwrap())
        .spawn()
        .unwrap();
    let runs = scenario.path().join("runs.log");
    let started = || {
        std::fs::read_to_string(&runs)
            .map(|t| t.lines().filter(|l| l.contains("BLOCKED_TASKS")).count())
            .unwrap_or(0)
    };
    let mut times = Vec::new();
    let mut floors = Vec::new();
    for k in 0..samples + 1 {
        let id = format!("e3-{k}");
        add(&id);
        liza_env(a.path(), &[], &["claim-task", &id, "coder-9"]);
        let before = started();
        liza_env(
            a.path(),
            &[
                ("LIZA_AGENT_ID", "coder-9"),
                ("LIZA_AGENT_GENERATION", &generation),
            ],
            &["block", &id, "--reason", "benchmark", "--question", "why?"],
        );
        let t = Instant::now();
        let deadline = t + Duration::from_secs(30);
        while started() == before {
            assert!(
                Instant::now() < deadline,
                "the planner on host B never started:\n{}",
                std::fs::read_to_string(scenario.path().join("planner.err")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_micros(500));
        }
        if k > 0 {
            times.push(t.elapsed());
            floors.push(floor_once());
        }
        // Wait for its step (the abandon) before the next sample.
        let done = Instant::now() + Duration::from_secs(30);
        while !liza_env(a.path(), &[], &["show", &id]).contains("ABANDONED") {
            assert!(Instant::now() < done, "the planner did not abandon {id}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let _ = planner.kill();
    let _ = planner.wait();
    let sample = sample_of(&mut times, &mut floors);
    Row {
        id: "E3",
        scenario: "etcd: a task BLOCKED on host A → the planner's agent started on host B".into(),
        target: "p95 ≤ 200 ms".into(),
        verdict: verdict(super::ms(sample.p95) <= 200.0),
        sample,
    }
}

/// E2: 16 writers, each its own store (its own connection), 100 transitions each.
fn contention(p: &Path) -> Row {
    let store = liza::ops::open_store(p).unwrap();
    let start = store.snapshot().unwrap().state.revision();
    let mut floors: Vec<Duration> = (0..10).map(|_| floor_once()).collect();
    let t = Instant::now();
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let p = p.to_path_buf();
            std::thread::spawn(move || {
                let store = liza::ops::open_store(&p).unwrap();
                for i in 0..100 {
                    note_in_process(&store, 10_000 + w * 100 + i);
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let elapsed = t.elapsed();
    let end = store.snapshot().unwrap().state.revision();
    let rate = 1600.0 / elapsed.as_secs_f64();
    let exact = end == start + 1600;
    // Every transition rewrites the head: its size is what each commit carries.
    let head = store
        .address()
        .and_then(|a| {
            let client =
                liza::blackboard::etcd::Client::new(&a.endpoints, Duration::from_secs(5)).ok()?;
            client
                .get(&liza::blackboard::store::etcd::layout::head_key(a))
                .ok()?
        })
        .map_or(0, |kv| kv.value.len());
    floors.extend((0..10).map(|_| floor_once()));
    let sample: Sample = sample_of(&mut [elapsed / 1600], &mut floors);
    Row {
        id: "E2",
        scenario: format!(
            "etcd: 16 writers × 100 notes, 50 tasks: {rate:.0} transitions/s, revision +{} ({}), head {} KB",
            end - start,
            if exact { "exact" } else { "LOST UPDATES" },
            head / 1024
        ),
        sample,
        target: "≥ 500/s, exact +1600".into(),
        verdict: verdict(rate >= 500.0 && exact),
    }
}
