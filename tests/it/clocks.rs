//! Clocks that disagree (specs/blackboard.md *Leases are observed*, *Timestamps*), with the real
//! libfaketime (Debian's `faketime`, installed by `.ci/run`): a claimant two hours ahead
//! takes nothing from a live coder; one an hour behind writes log entries that never go
//! backwards, say by how much it was behind, and raise `CLOCK_SKEW`; `status` shows no
//! negative age and `doctor` names the clock.

use std::process::{Command, Output};
use std::time::Duration;

use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;

const GUARD: Duration = Duration::from_secs(60);

/// Whether libfaketime is here; outside CI its absence skips with the reason.
pub(crate) fn faketime_available() -> bool {
    let found = Command::new("faketime")
        .args(["-f", "+1h", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "no faketime in CI: .ci/run installs it"
        );
        eprintln!("skipped: faketime is not installed (apt install faketime)");
    }
    found
}

/// `liza args` in `repo` with its clock moved by `offset` (`+2h`, `-1h`).
fn liza_at(repo: &Repo, offset: &str, args: &[&str]) -> Output {
    let mut cmd = repo.command_for("faketime");
    cmd.args(["-f", offset, LIZA]).args(args);
    cmd.output().unwrap()
}

#[test]
fn a_clock_two_hours_ahead_takes_nothing_from_a_live_coder() {
    if !faketime_available() {
        return;
    }
    let project = one_task_short_leases();
    let repo = &project.repo;
    let coder = project.supervisor("coder", "coder-1");
    project.wait_for_agent("coder-1", "started", GUARD);
    register(repo, "coder-2");
    let before = task_of(repo, "t-1");
    assert_eq!(before["assigned_to"], "coder-1");
    // By a clock two hours ahead the lease ran out long ago; coder-1 still heartbeats.
    let out = liza_at(repo, "+2h", &["claim-task", "t-1", "coder-2"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("whose lease is live"), "{said}");
    assert!(said.contains("renewed while watched"), "{said}");
    let after = task_of(repo, "t-1");
    assert_eq!(after["assigned_to"], "coder-1");
    assert!(
        !history_events(repo, "t-1").contains(&"lease_expired_reassigned".to_owned()),
        "{:?}",
        history_events(repo, "t-1")
    );
    assert!(
        repo.path().join(".worktrees/t-1/.git").exists(),
        "coder-1's worktree stays"
    );
    // The same claim on this host's clock, once coder-1 is gone for good: taken over
    // after its lease was seen silent.
    let (_, _) = stop(coder, nix::sys::signal::Signal::SIGKILL);
    let out = repo.liza(&["claim-task", "t-1", "coder-2"]);
    assert_success(&out);
    assert_eq!(task_of(repo, "t-1")["assigned_to"], "coder-2");
}

/// Registering an id whose holder runs elsewhere (another host name: its pid cannot be
/// looked at) by a clock two hours ahead: the holder's lease looks long run out, but it
/// is watched, seen renewed, and the registration is refused; the holder keeps its
/// generation and its task (specs/blackboard.md *Leases are observed*).
#[test]
fn a_clock_two_hours_ahead_on_another_host_registers_nothing_over_a_live_coder() {
    if !faketime_available() {
        return;
    }
    let project = one_task_short_leases();
    let repo = &project.repo;
    let _coder = project.supervisor("coder", "coder-1");
    project.wait_for_agent("coder-1", "started", GUARD);
    let generation = |repo: &Repo| model(repo)["agents"]["coder-1"]["generation"].clone();
    let before = generation(repo);
    let out = repo
        .command_for("faketime")
        .env("LIZA_HOST_ID", "another-host")
        .args(["-f", "+2h", LIZA, "register", "coder-1"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", stdout(&out));
    let said = stderr(&out);
    assert!(said.contains("watching coder-1's registration"), "{said}");
    assert!(said.contains("COLLISION"), "{said}");
    assert_eq!(generation(repo), before);
    assert_eq!(task_of(repo, "t-1")["assigned_to"], "coder-1");
}

#[test]
fn a_clock_behind_never_writes_the_log_backwards_and_is_named() {
    if !faketime_available() {
        return;
    }
    let repo = Repo::initialized();
    assert_success(&repo.liza(&["note", "all", "on time"]));
    let out = liza_at(&repo, "-1h", &["note", "all", "an hour late"]);
    assert_success(&out);
    let log = repo.log();
    let stamps: Vec<String> = log
        .iter()
        .map(|e| e["timestamp"].as_str().unwrap().to_owned())
        .collect();
    let mut sorted = stamps.clone();
    sorted.sort();
    assert_eq!(stamps, sorted, "log timestamps go backwards: {stamps:?}");
    let late = log
        .iter()
        .find(|e| {
            e["detail"]
                .as_str()
                .is_some_and(|d| d.contains("an hour late"))
        })
        .expect("the late note is logged");
    let behind = late["clock_behind_s"]
        .as_i64()
        .expect("the skew is recorded");
    assert!((3590..=3610).contains(&behind), "{behind}");
    // The watcher raises it once; status shows no negative age; doctor names the clock.
    assert_success(&repo.liza(&["watch", "--cycles", "1", "--interval", "0.05"]));
    let alerts = std::fs::read_to_string(repo.liza_dir().join("alerts.log")).unwrap();
    assert_eq!(alerts.matches("CLOCK_SKEW").count(), 1, "{alerts}");
    assert_success(&repo.liza(&["watch", "--cycles", "1", "--interval", "0.05"]));
    let alerts = std::fs::read_to_string(repo.liza_dir().join("alerts.log")).unwrap();
    assert_eq!(
        alerts.matches("CLOCK_SKEW").count(),
        1,
        "raised once: {alerts}"
    );
    let doctor = liza_at(&repo, "-1h", &["--json", "doctor"]);
    let checks = json(&doctor)["result"]["checks"].clone();
    let clock = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "clock")
        .unwrap_or_else(|| panic!("no clock check: {checks}"))
        .clone();
    assert_eq!(clock["status"], "warn", "{clock}");
    assert!(
        clock["detail"]
            .as_str()
            .unwrap()
            .contains("ahead of this host's clock"),
        "{clock}"
    );
}

/// One writer a year ahead carries the log's time: the next entries, by right clocks,
/// are stamped at its time and say how far behind they were — and `doctor` names the
/// entry whose clock set it, the one to fix (specs/blackboard.md *Timestamps*).
#[test]
fn a_clock_a_year_ahead_is_named_as_what_set_the_logs_time() {
    if !faketime_available() {
        return;
    }
    let repo = Repo::initialized();
    assert_success(&liza_at(
        &repo,
        "+8760h",
        &["note", "all", "from the future"],
    ));
    assert_success(&repo.liza(&["note", "all", "on time"]));
    let log = repo.log();
    let future = log
        .iter()
        .find(|e| e["detail"].as_str().is_some_and(|d| d.contains("future")))
        .unwrap();
    let on_time = log
        .iter()
        .find(|e| e["detail"].as_str().is_some_and(|d| d.contains("on time")))
        .unwrap();
    assert_eq!(
        on_time["timestamp"], future["timestamp"],
        "never earlier than the entry before"
    );
    assert!(
        on_time["clock_behind_s"].as_i64().unwrap() > 8700 * 3600,
        "{on_time}"
    );
    assert!(future.get("clock_behind_s").is_none(), "{future}");
    let clock = doctor_check(&repo, "clock");
    assert_eq!(clock["status"], "warn", "{clock}");
    let detail = clock["detail"].as_str().unwrap();
    assert!(
        detail.contains("set ahead by human's clock (human_note at"),
        "{detail}"
    );
}

#[test]
fn no_age_is_negative_when_a_clock_behind_reads_the_blackboard() {
    if !faketime_available() {
        return;
    }
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    let status = liza_at(&repo, "-1h", &["--json", "status"]);
    assert_success(&status);
    let v = json(&status);
    for task in v["result"]["tasks"].as_array().unwrap() {
        if let Some(age) = task["age_s"].as_i64() {
            assert!(age >= 0, "{task}");
        }
    }
    let text = stdout(&liza_at(&repo, "-1h", &["status"]));
    let negative = regex::Regex::new(r"\s-\d+[smhd]").unwrap();
    assert!(!negative.is_match(&text), "a negative age: {text}");
}

/// libfaketime preloaded into a process with its wall clock moved by `offset`. Its
/// monotonic clock is left alone (`DONT_FAKE_MONOTONIC`), as on a real machine whose time
/// is wrong: libfaketime shifting it too turns the supervisor's timed waits into hour-long
/// ones, which no real clock does.
fn faked(offset: &str) -> [(&'static str, String); 3] {
    [
        (
            "LD_PRELOAD",
            "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1".to_owned(),
        ),
        ("FAKETIME", offset.to_owned()),
        ("DONT_FAKE_MONOTONIC", "1".to_owned()),
    ]
}

#[test]
fn a_live_coder_whose_clock_is_an_hour_behind_keeps_its_task() {
    if !faketime_available() {
        return;
    }
    let project = one_task_short_leases();
    let repo = &project.repo;
    let env = faked("-1h");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let _behind = project.supervisor_env("coder", "coder-1", &env);
    project.wait_for_agent("coder-1", "started", GUARD);
    // By this clock its lease ran out an hour ago; it heartbeats all the same.
    let lease = task_of(repo, "t-1")["lease_expires"].as_i64().unwrap();
    let now = liza::blackboard::Timestamp::now().unix();
    assert!(lease < now - 3000, "its clock is behind: {lease} vs {now}");
    let _other = project.supervisor("coder", "coder-2");
    std::thread::sleep(Duration::from_secs(9));
    assert_eq!(
        task_of(repo, "t-1")["assigned_to"],
        "coder-1",
        "{:?}\n{}",
        history_events(repo, "t-1"),
        project.diagnostics()
    );
    let out = repo.liza(&["claim-task", "t-1", "coder-2"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("renewed while watched"),
        "{}",
        stderr(&out)
    );
    assert!(!history_events(repo, "t-1").contains(&"lease_expired_reassigned".to_owned()));
}
