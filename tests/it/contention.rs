//! Contention (specs/quality.md P4, correctness part): 16 processes × 100 `liza note` on one
//! 50-task blackboard. The revision ends at exactly start + 1600 and no note is lost.
//! (Throughput is measured by the benchmark, never asserted here.)

use std::collections::HashSet;

use crate::common::{Repo, assert_success};

#[test]
fn sixteen_writers_lose_no_update() {
    // A realistic 50-task blackboard, adopted as another tool's.
    let repo = Repo::with_generated_board(50, 2600);
    let start = repo.revision();

    let repo = std::sync::Arc::new(repo);
    let workers: Vec<_> = (0..16)
        .map(|w| {
            let repo = std::sync::Arc::clone(&repo);
            std::thread::spawn(move || {
                for i in 0..100 {
                    let out = repo.liza_env(
                        &[("LIZA_LOCK_TIMEOUT", "120")],
                        &["note", "all", &format!("p{w}-{i}")],
                    );
                    assert_success(&out);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(repo.revision(), start + 1600);
    let text = repo.state_text();
    let messages: HashSet<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("message: "))
        .collect();
    for w in 0..16 {
        for i in 0..100 {
            assert!(
                messages.contains(format!("p{w}-{i}").as_str()),
                "note p{w}-{i} lost"
            );
        }
    }
    let log = repo.log();
    let revisions: Vec<u64> = log.iter().filter_map(|e| e["revision"].as_u64()).collect();
    let unique: HashSet<_> = revisions.iter().collect();
    assert_eq!(unique.len(), revisions.len(), "one log entry per revision");
    assert_success(&repo.liza(&["validate"]));
}
