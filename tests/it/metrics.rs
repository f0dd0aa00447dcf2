//! `liza watch --metrics-addr`: after a real sprint run by coder and reviewer supervisors
//! (fake agents), `/metrics` is scraped by a real HTTP client, parsed, and compared with
//! the blackboard, log.yaml and `liza status --json`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;

/// `name{labels}` → value, from the Prometheus text format; every sample line is checked.
fn parse(text: &str) -> BTreeMap<String, f64> {
    let mut samples = BTreeMap::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            assert!(
                line.is_empty() || line.starts_with("# HELP ") || line.starts_with("# TYPE "),
                "{line}"
            );
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("{line}"));
        assert!(
            samples.insert(series.to_owned(), value).is_none(),
            "duplicate {series}"
        );
    }
    samples
}

fn scrape(url: &str) -> (u16, String, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = reqwest::get(url).await.unwrap();
        let status = response.status().as_u16();
        let kind = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, kind, response.text().await.unwrap())
    })
}

/// A watcher serving metrics on a free loopback port; killed on drop.
struct Watcher {
    child: std::process::Child,
    url: String,
}

impl Watcher {
    fn start(repo: &Repo) -> Watcher {
        let mut child = repo
            .command()
            .args([
                "watch",
                "--metrics-addr",
                "127.0.0.1:0",
                "--interval",
                "0.2",
            ])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let url = loop {
            line.clear();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "the watcher exited"
            );
            if let Some(rest) = line.trim().strip_prefix("liza watch: metrics at ") {
                break rest.to_owned();
            }
        };
        // Keep draining its stderr so it never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while stderr.read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
        });
        Watcher { child, url }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn metrics_after_a_sprint_match_the_blackboard_and_status() {
    let project = AgentProject::new();
    let repo = &project.repo;
    add(repo, "t-1", "");
    add(repo, "t-2", "");
    project.step(
        "coder",
        "default",
        "work \"$key.txt\" \"the text of $key\"\nsubmit\n",
    );
    project.step("code-reviewer", "default", "approve\n");
    let supervisors = vec![
        project.supervisor("code-reviewer", "code-reviewer-1"),
        project.supervisor("coder", "coder-1"),
    ];
    for (name, out) in project.wait_all(supervisors, Duration::from_secs(120)) {
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let state = model(repo);
    assert_eq!(state["sprint"]["status"], "COMPLETED");

    let watcher = Watcher::start(repo);
    let (status, kind, body) = scrape(&watcher.url);
    assert_eq!(status, 200);
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    let m = parse(&body);

    // Values match the blackboard and log.yaml.
    assert_eq!(m["liza_tasks{status=\"MERGED\"}"], 2.0);
    assert_eq!(
        m["liza_blackboard_revision"],
        state["revision"].as_u64().unwrap() as f64
    );
    let log = repo.log();
    let count = |action: &str| log.iter().filter(|e| e["action"] == action).count() as f64;
    assert_eq!(m["liza_merges_total"], count("merged"));
    assert_eq!(m["liza_merges_total"], 2.0);
    assert_eq!(
        m["liza_transitions_total{kind=\"claimed\"}"],
        count("claimed")
    );
    assert_eq!(m["liza_integration_failures_total"], 0.0);
    let timed: std::collections::BTreeSet<u64> = log
        .iter()
        .filter(|e| e["lock_hold_ms"].is_number())
        .map(|e| e["revision"].as_u64().unwrap())
        .collect();
    let transactions = timed.len() as f64;
    assert_eq!(m["liza_lock_wait_milliseconds_count"], transactions);
    assert_eq!(m["liza_lock_hold_milliseconds_count"], transactions);
    assert_eq!(
        m["liza_lock_hold_milliseconds_bucket{le=\"+Inf\"}"],
        transactions
    );
    assert!(transactions > 10.0);
    // Supervisors woke on the other's transitions and acted: latency observed.
    assert!(m["liza_wake_latency_milliseconds_count"] >= 1.0, "{body}");
    assert_eq!(
        m["liza_wake_latency_milliseconds_count"],
        count("woke"),
        "one observation per logged wake-up"
    );
    assert_eq!(
        m["liza_agent_runs_total{role=\"coder\",exit_class=\"ok\"}"],
        2.0
    );
    assert_eq!(
        m["liza_agent_runs_total{role=\"code_reviewer\",exit_class=\"ok\"}"],
        2.0
    );
    assert_eq!(count("agent_run_ended"), 4.0);

    // `liza status --json` carries the same numbers.
    let status = json(&repo.liza(&["--json", "status"]));
    let ops = &status["result"]["operations"];
    assert_eq!(ops["merges"].as_f64().unwrap(), m["liza_merges_total"]);
    assert_eq!(
        ops["lock_hold_ms"]["count"].as_f64().unwrap(),
        m["liza_lock_hold_milliseconds_count"]
    );
    assert_eq!(
        ops["wake_latency_ms"]["count"].as_f64().unwrap(),
        m["liza_wake_latency_milliseconds_count"]
    );
    assert_eq!(ops["tasks_by_status"]["MERGED"], 2);
    assert_eq!(
        ops["revision"].as_f64().unwrap(),
        m["liza_blackboard_revision"]
    );

    // A new transaction shows at the next scrape; other paths are 404.
    assert_success(&repo.liza(&["note", "all", "after the sprint"]));
    let again = parse(&scrape(&watcher.url).2);
    assert_eq!(
        again["liza_blackboard_revision"],
        m["liza_blackboard_revision"] + 1.0
    );
    assert_eq!(
        again["liza_transitions_total{kind=\"human_note\"}"],
        count("human_note") + 1.0
    );
    let root = watcher.url.trim_end_matches("/metrics");
    assert_eq!(scrape(&format!("{root}/other")).0, 404);
}

fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count())
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Hostile clients of `/metrics`: 300 idle connections, a 64 MiB request line and a client
/// sending a byte a second. The watcher's threads and memory stay bounded, the slow
/// client is cut off, and a scraper is served again afterwards.
#[test]
fn hostile_metrics_clients_cannot_exhaust_the_watcher() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    let repo = Repo::initialized();
    let watcher = Watcher::start(&repo);
    let pid = watcher.child.id();
    let addr = watcher
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/metrics")
        .to_owned();
    assert_eq!(scrape(&watcher.url).0, 200);
    let base_threads = threads(pid);
    let base_rss = rss_kib(pid);

    let idle: Vec<TcpStream> = (0..300)
        .filter_map(|_| TcpStream::connect(&addr).ok())
        .collect();
    assert!(idle.len() > 100, "{} connections", idle.len());
    // A connection made after them is answered or closed once the watcher has taken
    // every one before it in: then its threads are counted.
    let mut probe = TcpStream::connect(&addr).unwrap();
    probe
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let _ = probe.write_all(b"GET /metrics HTTP/1.1\r\nHost: liza\r\n\r\n");
    let _ = probe.read(&mut [0u8; 64]);
    let during = threads(pid);
    assert!(
        during <= base_threads + 2,
        "{base_threads} → {during} threads"
    );

    // A 64 MiB request line: refused after the head limit, never buffered whole.
    let mut big = TcpStream::connect(&addr);
    let mut sent = 0usize;
    if let Ok(stream) = big.as_mut() {
        stream
            .set_write_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let chunk = vec![b'a'; 1 << 20];
        let _ = stream.write_all(b"GET /");
        for _ in 0..64 {
            match stream.write_all(&chunk) {
                Ok(()) => sent += chunk.len(),
                Err(_) => break,
            }
        }
    }
    let grown = rss_kib(pid).saturating_sub(base_rss);
    assert!(
        grown < 16 * 1024,
        "the watcher grew by {grown} KiB ({sent} bytes sent)"
    );
    drop(big);
    drop(idle);

    // A slow client: the connection is closed by the server, not held.
    let mut slow = TcpStream::connect(&addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
    let start = std::time::Instant::now();
    let closed = loop {
        assert!(
            start.elapsed() < Duration::from_secs(40),
            "the slow client is still served"
        );
        if slow.write_all(b"X").is_err() {
            break true;
        }
        let mut buf = [0u8; 512];
        match slow.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => {} // an error response (408) before the close
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break true,
        }
    };
    assert!(closed);
    // And a scraper is served again.
    let start = std::time::Instant::now();
    while scrape_status(&watcher.url) != Some(200) {
        assert!(
            start.elapsed() < Duration::from_secs(40),
            "never served again"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(threads(pid) <= base_threads + 2);
}

/// The status of a GET, `None` when the connection was closed or refused.
fn scrape_status(url: &str) -> Option<u16> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async { reqwest::get(url).await.ok().map(|r| r.status().as_u16()) })
}
