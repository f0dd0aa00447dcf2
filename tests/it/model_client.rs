//! The built-in agent's model client against a real HTTP server on loopback (specs/quality.md
//! R7): every misbehaviour bounded, retried only when it is transient, never a crash.

use std::time::{Duration, Instant};

use liza::blackboard::ids::Role;
use liza::blackboard::model::BuiltinConfig;
use liza::llm::client::{Call, ChatClient, Failure, Outcome, RetryPolicy, Transient, Usage};
use liza::llm::endpoint::Endpoint;
use liza::llm::response::{self, Expect, ParseFailure};
use liza::llm::scripted_server::{Script, ScriptedServer, Step};

const KEY: &str = "canary-key-5f1e2d3c4b";

fn server(steps: Vec<Step>) -> ScriptedServer {
    ScriptedServer::start(Script { steps }).unwrap()
}

fn client_for(base_url: &str, timeout_secs: &str, dry_run: bool) -> ChatClient {
    let (base_url, timeout) = (base_url.to_owned(), timeout_secs.to_owned());
    let env = move |name: &str| match name {
        "LIZA_LLM_BASE_URL" => Some(base_url.clone()),
        "LIZA_LLM_API_KEY" => Some(KEY.to_owned()),
        "LIZA_LLM_MODEL" => Some("test-model".to_owned()),
        "LIZA_LLM_TIMEOUT" => Some(timeout.clone()),
        _ => None,
    };
    let endpoint = Endpoint::resolve(&env, &BuiltinConfig::default(), Role::Coder).unwrap();
    let retry = RetryPolicy {
        retries: 3,
        base: Duration::from_millis(10),
        max_wait: Duration::from_secs(5),
    };
    ChatClient::new(endpoint, retry, dry_run).unwrap()
}

fn ask(client: &ChatClient, user: &str) -> Outcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(client.complete(&Call {
        system: "You are a test.",
        user,
        dry_run_answer: "{\"dry\": true}",
    }))
}

#[test]
fn an_answer_with_its_usage_and_nothing_secret_sent() {
    let s = server(vec![Step {
        usage: Some(Usage {
            prompt_tokens: 120,
            completion_tokens: 30,
        }),
        ..Step::answer("{\"verdict\": \"approve\"}")
    }]);
    let client = client_for(&s.base_url(), "5", false);
    let outcome = ask(
        &client,
        &format!("review this; OPENAI_API_KEY={KEY} and sk-abcdefghijklmnopqrstuvwx"),
    );
    let answer = outcome.result.unwrap();
    assert_eq!(answer.content, "{\"verdict\": \"approve\"}");
    assert_eq!(
        answer.usage,
        Some(Usage {
            prompt_tokens: 120,
            completion_tokens: 30
        })
    );
    assert!(outcome.retries.is_empty());
    let requests = s.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.headers["authorization"], format!("Bearer {KEY}"));
    assert!(r.body.contains("\"model\":\"test-model\""), "{}", r.body);
    // The key only travels in the header; secrets in the prompt are scrubbed.
    assert!(!r.body.contains(KEY), "{}", r.body);
    assert!(!r.body.contains("sk-abcdefghij"), "{}", r.body);
    assert!(r.messages_text().contains("OPENAI_API_KEY=[REDACTED]"));
}

#[test]
fn server_errors_are_retried_until_an_answer() {
    let s = server(vec![
        Step {
            status: Some(500),
            body: Some("oops".into()),
            ..Step::default()
        },
        Step {
            status: Some(503),
            body: Some(String::new()),
            ..Step::default()
        },
        Step::answer("{}"),
    ]);
    let outcome = ask(&client_for(&s.base_url(), "5", false), "hi");
    assert_eq!(outcome.result.unwrap().content, "{}");
    assert_eq!(
        outcome.retries,
        [Transient::Server(500), Transient::Server(503)]
    );
    assert_eq!(s.requests().len(), 3);
}

#[test]
fn a_rate_limit_waits_as_long_as_retry_after_says() {
    let s = server(vec![
        Step {
            status: Some(429),
            headers: [("retry-after".to_owned(), "1".to_owned())].into(),
            body: Some("{\"error\": {\"message\": \"slow down\"}}".into()),
            ..Step::default()
        },
        Step::answer("{}"),
    ]);
    let outcome = ask(&client_for(&s.base_url(), "5", false), "hi");
    assert!(outcome.result.is_ok());
    assert_eq!(
        outcome.retries,
        [Transient::RateLimited {
            retry_after: Some(Duration::from_secs(1))
        }]
    );
    let requests = s.requests();
    // A lower bound only: the client slept at least what the server asked.
    assert!(requests[1].received - requests[0].received >= Duration::from_secs(1));
}

#[test]
fn a_client_error_is_not_retried_and_says_what_to_check() {
    let s = server(vec![Step {
        status: Some(401),
        times: Some(0),
        body: Some(format!("{{\"error\": {{\"message\": \"bad key {KEY}\"}}}}")),
        ..Step::default()
    }]);
    let outcome = ask(&client_for(&s.base_url(), "5", false), "hi");
    let failure = outcome.result.unwrap_err();
    assert_eq!(s.requests().len(), 1);
    let text = failure.to_string();
    assert!(
        text.contains("HTTP 401") && text.contains("LIZA_LLM_API_KEY"),
        "{text}"
    );
    assert!(
        !text.contains(KEY),
        "the key echoed by the endpoint is scrubbed: {text}"
    );
    let s = server(vec![Step {
        status: Some(400),
        times: Some(0),
        body: Some("bad request".into()),
        ..Step::default()
    }]);
    let outcome = ask(&client_for(&s.base_url(), "5", false), "hi");
    assert!(matches!(
        outcome.result,
        Err(Failure::Rejected { status: 400, .. })
    ));
    assert_eq!(s.requests().len(), 1);
}

#[test]
fn timeouts_are_retried_then_give_no_result() {
    let s = server(vec![Step {
        delay_ms: 3_000,
        times: Some(0),
        ..Step::answer("{}")
    }]);
    let started = Instant::now();
    let outcome = ask(&client_for(&s.base_url(), "0.3", false), "hi");
    assert_eq!(
        outcome.result.unwrap_err(),
        Failure::Exhausted {
            last: Transient::Timeout
        }
    );
    assert_eq!(outcome.retries.len(), 3);
    assert_eq!(s.requests().len(), 4);
    assert!(started.elapsed() < Duration::from_secs(60), "bounded");
}

#[test]
fn a_trickling_answer_is_cut_off_by_the_request_timeout() {
    let s = server(vec![Step {
        trickle_ms: 20,
        times: Some(0),
        ..Step::answer("x".repeat(500))
    }]);
    let outcome = ask(&client_for(&s.base_url(), "0.4", false), "hi");
    assert_eq!(
        outcome.result.unwrap_err(),
        Failure::Exhausted {
            last: Transient::Timeout
        }
    );
}

#[test]
fn a_huge_body_is_refused_without_reading_it_all() {
    let s = server(vec![Step {
        body_bytes: Some(50 * 1024 * 1024),
        times: Some(0),
        ..Step::default()
    }]);
    let outcome = ask(&client_for(&s.base_url(), "30", false), "hi");
    assert_eq!(outcome.result.unwrap_err(), Failure::TooLarge);
    assert_eq!(s.requests().len(), 1, "not retried");
}

#[test]
fn malformed_envelopes_and_dropped_connections() {
    let s = server(vec![Step {
        body: Some("this is not json".into()),
        ..Step::default()
    }]);
    let outcome = ask(&client_for(&s.base_url(), "5", false), "hi");
    assert!(matches!(outcome.result, Err(Failure::BadEnvelope(_))));
    let s = server(vec![Step {
        body: Some("{\"choices\": []}".into()),
        ..Step::default()
    }]);
    let outcome = ask(&client_for(&s.base_url(), "5", false), "hi");
    assert!(matches!(outcome.result, Err(Failure::BadEnvelope(_))));
    let s = server(vec![
        Step {
            close: true,
            ..Step::default()
        },
        Step::answer("{}"),
    ]);
    let outcome = ask(&client_for(&s.base_url(), "5", false), "hi");
    assert!(outcome.result.is_ok());
    assert_eq!(outcome.retries.len(), 1);
}

#[test]
fn a_wrong_schema_answer_is_a_parse_failure_not_a_crash() {
    let s = server(vec![Step::answer("[1, 2, 3]")]);
    let outcome = ask(&client_for(&s.base_url(), "5", false), "hi");
    let content = outcome.result.unwrap().content;
    assert_eq!(
        response::parse(&content, Expect::Object).unwrap_err(),
        ParseFailure::WrongShape { found: "an array" }
    );
}

#[test]
fn connection_refused_is_retried_then_gives_no_result() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let outcome = ask(
        &client_for(&format!("http://127.0.0.1:{port}/v1"), "5", false),
        "hi",
    );
    assert_eq!(
        outcome.result.unwrap_err(),
        Failure::Exhausted {
            last: Transient::Connect
        }
    );
    assert_eq!(outcome.retries, vec![Transient::Connect; 3]);
}

#[test]
fn missing_usage_is_none_and_the_call_still_answers() {
    let s = server(vec![Step {
        no_usage: true,
        ..Step::answer("{}")
    }]);
    let answer = ask(&client_for(&s.base_url(), "5", false), "hi")
        .result
        .unwrap();
    assert_eq!(answer.usage, None);
}

#[test]
fn a_dry_run_makes_no_call_and_reports_100_and_50_tokens() {
    let s = server(vec![Step::answer("{}")]);
    let answer = ask(&client_for(&s.base_url(), "5", true), "hi")
        .result
        .unwrap();
    assert_eq!(answer.content, "{\"dry\": true}");
    assert_eq!(
        answer.usage,
        Some(Usage {
            prompt_tokens: 100,
            completion_tokens: 50
        })
    );
    assert!(s.requests().is_empty());
}
