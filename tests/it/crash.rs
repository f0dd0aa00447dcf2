//! Crash safety (specs/quality.md R1): a process aborted at every step of a transaction, each
//! step several times, and random SIGKILLs of `liza note` processes under load. After
//! each crash: state.yaml parses and validates, the revision never goes back, every
//! command that exited 0 is present, nothing is taken for a hand edit, log.yaml reads.

use std::collections::HashSet;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{Lcg, Repo, assert_success};
use liza::failpoint::STEPS;

struct Invariants {
    last_revision: u64,
    acknowledged: Vec<String>,
}

impl Invariants {
    fn check(&mut self, repo: &Repo, context: &str) {
        let out = repo.liza(&["--json", "validate"]);
        assert_success(&out);
        let v = repo.state_json();
        let revision = v["revision"].as_u64().unwrap();
        assert!(
            revision >= self.last_revision,
            "{context}: revision went back from {} to {revision}",
            self.last_revision
        );
        self.last_revision = revision;
        let state = repo.state_text();
        for message in &self.acknowledged {
            assert!(
                state.contains(&format!("message: {message}\n")),
                "{context}: acknowledged note {message} lost"
            );
        }
        // liza log reads the log (a torn tail is tolerated) and nothing was taken for a
        // hand edit.
        let log = repo.log();
        assert!(
            log.iter()
                .all(|e| e["action"] != "human_edit" && e["action"] != "hand_edit_rejected"),
            "{context}: {log:?}"
        );
        assert!(
            !repo.liza_dir().join("rejected").exists(),
            "{context}: a file was quarantined"
        );
        assert_eq!(
            v["pending_hand_edit"], false,
            "{context}: a crash is not a hand edit"
        );
    }
}

#[test]
fn a_crash_at_every_step_loses_nothing_acknowledged() {
    let repo = Repo::initialized();
    let mut inv = Invariants {
        last_revision: 1,
        acknowledged: Vec::new(),
    };
    for step in STEPS {
        for round in 0..3 {
            let message = format!("crash-{step}-{round}");
            let out = repo.liza_env(&[("LIZA_FAILPOINT", step)], &["note", "all", &message]);
            assert_eq!(
                out.status.code(),
                None,
                "{step}: the failpoint must abort the process"
            );
            inv.check(&repo, &format!("after crash at {step}"));

            let message = format!("ok-{step}-{round}");
            let before = inv.last_revision;
            assert_success(&repo.liza(&["note", "all", &message]));
            inv.acknowledged.push(message);
            inv.check(&repo, &format!("after recovery from {step}"));
            assert!(
                inv.last_revision > before,
                "{step}: the next note must commit"
            );
        }
    }
    // The torn log item left by `during-log` was cut off by the following append.
    let out = repo.liza(&["--json", "log"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["result"]["torn_tail"], false);
    // No temp files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(repo.liza_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn random_sigkills_under_load_lose_nothing_acknowledged() {
    let repo = Arc::new(Repo::initialized());
    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut workers = Vec::new();
    for worker in 0..3u64 {
        let repo = Arc::clone(&repo);
        let acknowledged = Arc::clone(&acknowledged);
        workers.push(std::thread::spawn(move || {
            let mut rng = Lcg(worker * 7919 + 17);
            for i in 0..50 {
                let message = format!("w{worker}-n{i}");
                let mut child = repo
                    .command()
                    .env("LIZA_LOCK_TIMEOUT", "60")
                    .args(["note", "all", &message])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                std::thread::sleep(Duration::from_micros(rng.next(12_000) as u64));
                let _ = child.kill();
                let status = child.wait().unwrap();
                if status.success() {
                    acknowledged.lock().unwrap().push(message);
                }
            }
        }));
    }
    for w in workers {
        w.join().unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    // One more transaction recovers whatever a kill left behind.
    assert_success(&repo.liza(&["note", "all", "final"]));
    let mut inv = Invariants {
        last_revision: 1,
        acknowledged,
    };
    inv.check(&repo, "after the storm");
    let state = repo.state_text();
    let ids: Vec<&str> = state
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- id: note-"))
        .collect();
    let unique: HashSet<_> = ids.iter().collect();
    assert_eq!(ids.len(), unique.len(), "note ids are unique");
    eprintln!(
        "{} of 150 killed notes had exited 0 before the kill",
        inv.acknowledged.len()
    );
}
