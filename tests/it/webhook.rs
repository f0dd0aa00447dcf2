//! The escalation webhook against a real HTTP receiver on loopback: the documented JSON,
//! retried after a failure, and a receiver that is down never blocks the sender.

use std::time::Duration;

use liza::llm::scripted_server::{Script, ScriptedServer, Step};
use liza::monitor::webhook::{AlarmPayload, Delivery, Webhook};
use liza::ops::alarms::{Alarm, Level};

fn alarm(key: &str) -> AlarmPayload {
    AlarmPayload {
        ts: "2026-11-22T23:59:00Z".into(),
        alarm: Alarm {
            level: Level::Error,
            category: "TASK_BLOCKED".into(),
            message: "t-1 is BLOCKED: the spec is silent".into(),
            task: Some("t-1".into()),
            agent: Some("coder-1".into()),
            revision: Some(42),
            key: key.into(),
        },
        project: "/work/demo".into(),
    }
}

fn fast() -> Delivery {
    Delivery {
        attempts: 3,
        backoff: Duration::from_millis(20),
        timeout: Duration::from_secs(5),
    }
}

fn status(code: u16) -> Step {
    Step {
        status: Some(code),
        body: Some(String::new()),
        ..Step::default()
    }
}

#[test]
fn alarms_are_posted_as_documented_and_retried_after_a_failure() {
    let receiver = ScriptedServer::start(Script {
        steps: vec![status(503), status(200), status(200)],
    })
    .unwrap();
    let url = format!("{}/hooks/liza", receiver.base_url());
    let hook = Webhook::start(&url, fast()).unwrap();
    hook.send(alarm("blocked:t-1:42"));
    hook.send(alarm("blocked:t-2:43"));
    let done = hook.finish();
    assert_eq!(done.delivered, ["blocked:t-1:42", "blocked:t-2:43"]);
    assert_eq!(done.attempts, 3);
    let requests = receiver.requests();
    assert_eq!(requests.len(), 3, "the first alarm was retried once");
    assert_eq!(requests[0].path, "/v1/hooks/liza");
    assert_eq!(requests[0].headers["content-type"], "application/json");
    let body: serde_json::Value = serde_json::from_str(&requests[1].body).unwrap();
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "agent", "category", "key", "level", "message", "project", "revision", "task", "ts"
        ]
    );
    assert_eq!(body["key"], "blocked:t-1:42");
    assert_eq!(body["revision"], 42);
    assert_eq!(body["level"], "ERROR");
    assert_eq!(body["task"], "t-1");
    let last: serde_json::Value = serde_json::from_str(&requests[2].body).unwrap();
    assert_eq!(last["key"], "blocked:t-2:43");
}

#[test]
fn a_receiver_that_is_down_is_retried_then_given_up_and_the_sender_goes_on() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let hook = Webhook::start(&format!("http://127.0.0.1:{port}/hook"), fast()).unwrap();
    for i in 0..5 {
        hook.send(alarm(&format!("k{i}")));
    }
    // Every alarm is tried, each as often as allowed, and given up on in order; the
    // sender never waited.
    let done = hook.finish();
    assert!(done.delivered.is_empty());
    assert_eq!(done.given_up, ["k0", "k1", "k2", "k3", "k4"]);
    assert_eq!(done.attempts, 5 * fast().attempts);
}

#[test]
fn a_bad_url_is_refused_with_what_to_write() {
    let err = Webhook::start("hooks.example.com", fast()).err().unwrap();
    assert!(err.contains("http://"), "{err}");
}

#[test]
fn dropped_connections_are_retried_until_the_receiver_answers() {
    let dropped = || Step {
        close: true,
        ..Step::default()
    };
    let receiver = ScriptedServer::start(Script {
        steps: vec![dropped(), dropped(), status(204)],
    })
    .unwrap();
    let hook = Webhook::start(&format!("{}/hook", receiver.base_url()), fast()).unwrap();
    hook.send(alarm("k"));
    let done = hook.finish();
    assert_eq!(done.delivered, ["k"]);
    assert_eq!(done.attempts, 3);
    assert_eq!(receiver.requests().len(), 3);
    assert_eq!(receiver.unused_steps(), 0, "delivered on the third try");
}
