//! The web dashboard's rows (specs/quality.md W1–W3; specs/web.md): the sprint page of a
//! 300-task blackboard rendered in process, the CPU 50 open live streams add to an idle
//! `liza serve` beside the same server with none (measured in the same run), and how
//! soon a transition reaches a live page (its event, then the page fetched again).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{LIZA, Row, liza, ms, project, sample_of, verdict};

pub fn rows(samples: usize, quick: bool) -> Vec<Row> {
    let mut rows = Vec::new();
    {
        let (dir, size) = project(300, 13_500, false);
        let project = liza::ops::Project::discover(dir.path()).unwrap();
        let token = liza::web::auth::Token::random().unwrap();
        let site =
            liza::web::Site::new(project, token, false, "127.0.0.1:0".parse().unwrap()).unwrap();
        // Each render follows a transition, as a live page's does: the blackboard is read
        // anew, not served from what the last render read.
        let mut times: Vec<Duration> = (0..samples)
            .map(|i| {
                liza(dir.path(), &["note", "all", &format!("web bench {i}")]);
                let started = Instant::now();
                let page = site.get("/", &[]);
                let took = started.elapsed();
                assert_eq!(page.status, 200);
                std::hint::black_box(page.html);
                took
            })
            .collect();
        let page = sample_of(&mut times, &mut Vec::new());
        rows.push(Row {
            id: "W1",
            scenario: format!(
                "the sprint page, rendered in process after a transition, 300 tasks, {:.0} KB",
                size as f64 / 1024.0
            ),
            target: "median ≤ 50 ms".into(),
            verdict: verdict(ms(page.median) <= 50.0),
            sample: page,
        });
    }
    let (dir, _) = project(50, 2600, false);
    let served = Served::start(dir.path());
    let window = Duration::from_secs(if quick { 5 } else { 15 });
    // Idle, then with 50 streams open, on one idle blackboard.
    std::thread::sleep(Duration::from_secs(1));
    let alone = served.cpu_over(window);
    let streams: Vec<TcpStream> = (0..50).map(|_| served.stream()).collect();
    let with = served.cpu_over(window);
    let added = (with.as_secs_f64() - alone.as_secs_f64()).max(0.0) / window.as_secs_f64() * 100.0;
    rows.push(Row {
        id: "W2",
        scenario: format!(
            "50 open live streams on an idle blackboard, {} s: {:.1} ms CPU beside {:.1} ms with none: +{added:.3} % of a core",
            window.as_secs(),
            ms(with),
            ms(alone)
        ),
        target: "≤ 1 % CPU added".into(),
        verdict: verdict(added <= 1.0),
        sample: super::Sample {
            median: with,
            p95: with,
            floor: Duration::ZERO,
        },
    });
    drop(streams);

    // A transition, then its event on a live stream, then the page fetched again.
    let mut stream = served.stream();
    // Each sample waits for an event counting past the last one seen: one transition may
    // make two events (its state, then its log line), and a leftover must not count.
    let mut seen = 0u64;
    let mut times: Vec<Duration> = (0..samples)
        .map(|i| {
            std::thread::sleep(Duration::from_millis(200));
            seen = seen.max(drain(&mut stream));
            let started = Instant::now();
            liza(dir.path(), &["note", "all", &format!("web bench {i}")]);
            loop {
                let text = read_until(&mut stream, "event: changed\ndata: ");
                if last_count(&text) > seen {
                    seen = last_count(&text);
                    break;
                }
            }
            served.get("/");
            started.elapsed()
        })
        .collect();
    let shown = sample_of(&mut times, &mut Vec::new());
    rows.push(Row {
        id: "W3",
        scenario: "a transition (liza note, whole process) → its event on a live stream → the page fetched again, 50 tasks".into(),
        target: "p95 ≤ 1000 ms".into(),
        verdict: verdict(ms(shown.p95) <= 1000.0),
        sample: shown,
    });
    rows
}

/// A `liza serve` of the bench's release build.
struct Served {
    child: std::process::Child,
    addr: String,
    token: String,
}

impl Served {
    fn start(dir: &Path) -> Served {
        let mut child = Command::new(LIZA)
            .args(["--json", "serve", "--listen", "127.0.0.1:0"])
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let started: serde_json::Value = serde_json::from_str(&line).unwrap();
        let url = started["result"]["url"].as_str().unwrap();
        Served {
            addr: started["result"]["listen"].as_str().unwrap().to_owned(),
            token: url.split_once("token=").unwrap().1.to_owned(),
            child,
        }
    }

    /// An open `/events` stream, greeted.
    fn stream(&self) -> TcpStream {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            stream,
            "GET /events HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n",
            self.addr, self.token
        )
        .unwrap();
        read_until(&mut stream, "event: hello");
        stream
    }

    fn get(&self, path: &str) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n",
            self.addr, self.token
        )
        .unwrap();
        let mut page = Vec::new();
        stream.read_to_end(&mut page).unwrap();
        assert!(page.starts_with(b"HTTP/1.1 200"));
    }

    /// The CPU time (every thread) the server used over `window`.
    fn cpu_over(&self, window: Duration) -> Duration {
        let before = cpu_of(self.child.id());
        std::thread::sleep(window);
        cpu_of(self.child.id()).saturating_sub(before)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The CPU time process `pid`'s threads used, in nanoseconds (each thread's
/// `/proc/<pid>/task/<tid>/schedstat`: finer than the 10 ms ticks of `stat`).
fn cpu_of(pid: u32) -> Duration {
    let mut total = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        if let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) {
            total += stat
                .split_whitespace()
                .next()
                .and_then(|ns| ns.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    Duration::from_nanos(total)
}

/// What the stream says up to `what` and the end of that event.
fn read_until(stream: &mut TcpStream, what: &str) -> String {
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen
        .find(what)
        .is_some_and(|at| seen[at..].contains("\n\n"))
    {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended before {what}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    seen
}

/// The highest change count an unread part of the stream holds (0: none waiting).
fn drain(stream: &mut TcpStream) -> u64 {
    stream.set_nonblocking(true).unwrap();
    let mut text = String::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    stream.set_nonblocking(false).unwrap();
    last_count(&text)
}

/// The count of the last `changed` event in `text`.
fn last_count(text: &str) -> u64 {
    text.rsplit("event: changed\ndata: ")
        .next()
        .filter(|_| text.contains("event: changed"))
        .and_then(|rest| rest.lines().next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}
