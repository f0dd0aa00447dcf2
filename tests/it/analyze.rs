//! `liza analyze` end to end: anomalies recorded through the CLI, the circuit breaker's
//! report, the state's `circuit_breaker`, and the automatic checkpoint.

use crate::common::team::{add, retry_loop};
use crate::common::{Repo, assert_success, json};

#[test]
fn a_retry_cluster_is_reported_recorded_and_checkpoints_the_sprint() {
    let repo = Repo::initialized();
    for t in ["t-1", "t-2", "t-3"] {
        add(&repo, t, "");
        retry_loop(&repo, t, "E0308 mismatched types");
    }
    let out = repo.liza(&["analyze", "--json"]);
    assert_success(&out);
    let v = json(&out);
    assert_eq!(v["result"]["status"], "TRIGGERED");
    assert_eq!(v["result"]["matches"][0]["pattern"], "retry_cluster");
    assert_eq!(
        v["result"]["matches"][0]["tasks"],
        serde_json::json!(["t-1", "t-2", "t-3"])
    );
    assert_eq!(v["result"]["checkpointed_by"], "retry_cluster");
    let report =
        std::fs::read_to_string(repo.liza_dir().join("circuit_breaker_report.md")).unwrap();
    assert!(
        report.contains("## retry_cluster — ARCHITECTURE_FLAW")
            && report.contains("E0308 mismatched types"),
        "{report}"
    );
    let state = repo.state_json();
    assert_eq!(
        crate::common::team::model(&repo)["circuit_breaker"]["status"],
        "TRIGGERED"
    );
    assert_eq!(state["sprint"]["status"], "CHECKPOINT");
    assert!(repo.liza_dir().join("CHECKPOINT").exists());
}

#[test]
fn scattered_anomalies_leave_the_sprint_running() {
    let repo = Repo::initialized();
    for (t, p) in [("t-1", "E1"), ("t-2", "E2"), ("t-3", "E3")] {
        add(&repo, t, "");
        retry_loop(&repo, t, p);
    }
    let out = repo.liza(&["analyze"]);
    assert_success(&out);
    assert!(crate::common::stdout(&out).contains("circuit breaker: OK"));
    let state = repo.state_json();
    assert_eq!(
        crate::common::team::model(&repo)["circuit_breaker"]["status"],
        "OK"
    );
    assert_eq!(state["sprint"]["status"], "IN_PROGRESS");
}

#[test]
fn a_severity_left_out_of_checkpoint_at_is_reported_without_a_checkpoint() {
    let repo = Repo::initialized();
    crate::common::team::configure(&repo, |c| {
        c.circuit_breaker = Some(liza::blackboard::model::CircuitBreakerConfig {
            checkpoint_at: Some(vec!["SPEC_FLAW".into()]),
            extra: Default::default(),
        });
    });
    for t in ["t-1", "t-2", "t-3"] {
        add(&repo, t, "");
        retry_loop(&repo, t, "same");
    }
    let v = json(&repo.liza(&["analyze", "--json"]));
    assert_eq!(v["result"]["status"], "TRIGGERED");
    assert!(v["result"]["checkpointed_by"].is_null());
    assert_eq!(repo.state_json()["sprint"]["status"], "IN_PROGRESS");
}
