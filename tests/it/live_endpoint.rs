//! Calls a real model endpoint — only with `LIVE_TESTS=1` and `DRY_RUN` not `1`
//! (specs/builtin-agent.md *DRY_RUN and LIVE_TESTS*): every other test uses the scripted server
//! on loopback. Configure it like the agent: `LIZA_LLM_BASE_URL`, `LIZA_LLM_API_KEY`,
//! `LIZA_LLM_MODEL`.

use liza::blackboard::ids::Role;
use liza::blackboard::model::BuiltinConfig;
use liza::llm::client::{Call, ChatClient, RetryPolicy};
use liza::llm::endpoint::{Endpoint, ProcessEnv};
use liza::llm::response::{self, Expect};

fn live() -> bool {
    let live = std::env::var("LIVE_TESTS").is_ok_and(|v| v == "1");
    let dry = std::env::var("DRY_RUN").is_ok_and(|v| v == "1");
    if !live || dry {
        println!("skipped: set LIVE_TESTS=1 (and DRY_RUN unset or 0) to call a real endpoint");
    }
    live && !dry
}

#[test]
fn a_real_endpoint_answers_in_json() {
    if !live() {
        return;
    }
    let endpoint = Endpoint::resolve(&ProcessEnv, &BuiltinConfig::default(), Role::Coder).unwrap();
    let client = ChatClient::new(endpoint, RetryPolicy::default(), false).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let outcome = runtime.block_on(client.complete(&Call {
        system: "Reply with JSON only.",
        user: "Return {\"ok\": true}.",
        dry_run_answer: "{}",
    }));
    let answer = outcome.result.expect("the endpoint answers");
    let parsed = response::parse(&answer.content, Expect::Object).expect("JSON in the answer");
    assert_eq!(parsed.value["ok"], true);
}

#[test]
fn liza_retro_codes_a_sprint_with_a_real_model_and_every_quote_holds() {
    if !live() {
        return;
    }
    let repo = crate::common::Repo::initialized();
    crate::common::assert_success(&repo.liza(&[
        "note",
        "all",
        "The reviewer rejected t-1 twice because the totals key was missing; please add a test for it.",
    ]));
    std::fs::write(
        repo.path().join("identities.yaml"),
        "- id: quality\n  name: Quality\n  prompt_prefix: You look for defects and missing tests.\n",
    )
    .unwrap();
    let env: Vec<(String, String)> = [
        "LIZA_LLM_BASE_URL",
        "LIZA_LLM_API_KEY",
        "OPENAI_API_KEY",
        "LIZA_LLM_MODEL",
    ]
    .iter()
    .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
    .collect();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let out = repo.liza_env(&env, &["retro", "--json"]);
    crate::common::assert_success(&out);
    let report = crate::common::retro::report(&repo);
    let checked = crate::common::retro::assert_grounded(&report);
    println!("{checked} quotes verbatim at their offsets");
}
