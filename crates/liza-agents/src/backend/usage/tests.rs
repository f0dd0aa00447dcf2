//! Each reader against the real CLI's output (tests/fixtures/clis/usage/: each CLI run
//! against a model server that served, per call, 1234 input tokens — Anthropic's
//! uncached count, OpenAI's and Gemini's whole prompt —, 56 output tokens (5 of them
//! reasoning where the API has the field), 789 cache reads and, where the API has the
//! field, 12 cache writes; README.md there tells the runs apart).

use std::path::PathBuf;

use chrono::{TimeZone, Utc};
use liza_model::ledger::{ModelUsage, RunUsage};

use super::{Transcript, UsageFormat};
use crate::backend::{auth, catalog, signals};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/clis/usage")
}

fn read(name: &str) -> String {
    let path = dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text a person reads of a fixture's stdout, and the usage read from it.
fn transcript(
    format: UsageFormat,
    fixture: &str,
    hint: Option<&str>,
) -> (String, Option<RunUsage>) {
    let (rendered, usage) = rendered(format, fixture, hint);
    (rendered.shown, usage)
}

/// What a person reads of a fixture's stdout and what is judged of it, and the usage.
fn rendered(
    format: UsageFormat,
    fixture: &str,
    hint: Option<&str>,
) -> (super::Rendered, Option<RunUsage>) {
    let mut t = Transcript::new(format, hint.map(str::to_owned));
    let mut all = super::Rendered::default();
    let mut add = |r: super::Rendered| {
        all.shown.push_str(&r.shown);
        all.judged.push_str(&r.judged);
    };
    for line in read(&format!("{fixture}.stdout")).lines() {
        if t.is_json() {
            add(t.line(line));
        } else {
            t.text_line(line);
            add(super::Rendered {
                shown: format!("{line}\n"),
                judged: format!("{line}\n"),
            });
        }
    }
    add(t.end());
    let export = std::fs::read(dir().join(format!("{fixture}.export.json"))).ok();
    (all, t.usage(export.as_deref()))
}

fn one_model(usage: &RunUsage) -> &ModelUsage {
    assert_eq!(usage.models.len(), 1, "{usage:?}");
    &usage.models[0]
}

fn counts(m: &ModelUsage) -> [Option<u64>; 4] {
    [
        m.input_tokens,
        m.output_tokens,
        m.cache_read_tokens,
        m.cache_write_tokens,
    ]
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

/// claude 2.1.197: every call counted — the session-title call too, which `.usage`
/// leaves out — with its cost; never the stream's first count of an `assistant` event.
#[test]
fn claude_counts_every_call_it_made_from_the_final_result() {
    let (text, usage) = transcript(
        UsageFormat::ClaudeStreamJson,
        "claude-2.1.197-stream-json",
        None,
    );
    let m = one_model(usage.as_ref().unwrap()).clone();
    // Two calls: the title and the answer.
    assert_eq!(counts(&m), [Some(2468), Some(112), Some(1578), Some(24)]);
    assert_eq!(m.model.as_deref(), Some("claude-opus-4-8[1m]"));
    assert!(close(m.cost_usd, 0.016079), "{m:?}");
    assert_eq!(m.cost_from.as_deref(), Some("cli"));
    assert_eq!(text, "OK.\n");
    // Three calls: the title and two turns.
    let (text, usage) = transcript(
        UsageFormat::ClaudeStreamJson,
        "claude-2.1.197-stream-json-multiturn",
        None,
    );
    let m = one_model(usage.as_ref().unwrap());
    assert_eq!(counts(m), [Some(3702), Some(168), Some(2367), Some(36)]);
    assert!(text.contains("→ Bash "), "{text}");
    // Text mode printed the final answer only: the steps are not judged for limits.
    let (r, _) = rendered(
        UsageFormat::ClaudeStreamJson,
        "claude-2.1.197-stream-json-multiturn",
        None,
    );
    assert!(!r.judged.contains("→ Bash"), "{}", r.judged);
    assert!(!r.judged.is_empty());
}

/// A step that talks about rate limits (an agent fixing a retry) is shown, never judged:
/// only what claude's text mode printed — the final answer — is.
#[test]
fn a_claude_step_about_rate_limits_is_not_judged_a_limit() {
    let now = Utc
        .with_ymd_and_hms(2026, 11, 29, 10, 0, 0)
        .unwrap()
        .fixed_offset();
    let mut t = Transcript::new(UsageFormat::ClaudeStreamJson, None);
    let step = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Error: the rate limit was reached; retry later"},{"type":"tool_use","name":"Bash","input":{"command":"rg -n rate_limit_error src/"}}]}}"#;
    let r = t.line(step);
    assert!(r.shown.contains("rate limit"), "{r:?}");
    assert_eq!(r.judged, "");
    let done =
        r#"{"type":"result","subtype":"success","is_error":false,"result":"Fixed the retry."}"#;
    let r = t.line(done);
    assert_eq!(r.judged, "Fixed the retry.\n");
    assert!(signals::usage_limit(catalog::find("claude"), &r.judged, now).is_none());
}

/// codex 0.169.0: input includes the cached tokens (and the cache writes); the ledger's
/// input is the rest. No model in its events: the one liza chose.
#[test]
fn codex_counts_its_turns_with_the_cached_input_apart() {
    let (text, usage) = transcript(UsageFormat::CodexJson, "codex-0.169.0-json", Some("gpt-x"));
    let m = one_model(usage.as_ref().unwrap());
    assert_eq!(counts(m), [Some(445), Some(56), Some(789), Some(0)]);
    assert_eq!(m.model.as_deref(), Some("gpt-x"));
    assert_eq!(m.cost_usd, None);
    assert!(text.contains("OK.\n"), "{text}");
    // What text mode prints on stderr for the reconnections is shown as it was.
    assert!(text.contains("ERROR: Reconnecting... 2/5"), "{text}");
    let (_, usage) = transcript(
        UsageFormat::CodexJson,
        "codex-0.169.0-json-cachewrite",
        None,
    );
    let m = one_model(usage.as_ref().unwrap());
    assert_eq!(counts(m), [Some(433), Some(56), Some(789), Some(12)]);
    assert_eq!(m.model, None);
    let (_, usage) = transcript(UsageFormat::CodexJson, "codex-0.169.0-json-multiturn", None);
    let m = one_model(usage.as_ref().unwrap());
    assert_eq!(counts(m), [Some(890), Some(112), Some(1578), Some(0)]);
}

/// gemini 0.61.0: the router's call is counted with the answer's; no cache writes (the
/// API has no such count: absent, not 0), no cost.
#[test]
fn gemini_counts_every_call_from_the_final_stats() {
    let (text, usage) = transcript(
        UsageFormat::GeminiStreamJson,
        "gemini-0.61.0-stream-json",
        None,
    );
    let m = one_model(usage.as_ref().unwrap());
    assert_eq!(counts(m), [Some(890), Some(112), Some(1578), None]);
    assert_eq!(m.model.as_deref(), Some("gemini-2.5-pro"));
    assert_eq!(m.cost_usd, None);
    assert_eq!(text, "Add hello.txt\n");
    let (_, usage) = transcript(
        UsageFormat::GeminiStreamJson,
        "gemini-0.61.0-stream-json-multiturn",
        None,
    );
    let m = one_model(usage.as_ref().unwrap());
    assert_eq!(counts(m), [Some(1335), Some(168), Some(2367), None]);
}

/// opencode 1.18.33: steps added up; its output count leaves the reasoning out, which is
/// put back; the cost is its own.
#[test]
fn opencode_adds_up_its_steps_with_the_reasoning_in_the_output() {
    let (text, usage) = transcript(
        UsageFormat::OpencodeJson,
        "opencode-1.18.33-json",
        Some("openai/gpt-4.1"),
    );
    let m = one_model(usage.as_ref().unwrap());
    assert_eq!(counts(m), [Some(445), Some(56), Some(789), Some(0)]);
    assert!(close(m.cost_usd, 0.0017325), "{m:?}");
    assert_eq!(m.model.as_deref(), Some("openai/gpt-4.1"));
    assert_eq!(text, "OK.\n");
    let (_, usage) = transcript(
        UsageFormat::OpencodeJson,
        "opencode-1.18.33-json-multiturn",
        None,
    );
    let m = one_model(usage.as_ref().unwrap());
    assert_eq!(counts(m), [Some(890), Some(112), Some(1578), Some(0)]);
    assert!(close(m.cost_usd, 0.003465), "{m:?}");
    // With a title of liza's own it makes no session-title call: every call it made is
    // reported (1 call; without the title, 2 calls for the same report).
    let (_, usage) = transcript(
        UsageFormat::OpencodeJson,
        "opencode-1.18.33-json-title",
        None,
    );
    let m = one_model(usage.as_ref().unwrap());
    assert_eq!(counts(m), [Some(445), Some(56), Some(789), Some(0)]);
    let (_, usage) = transcript(
        UsageFormat::OpencodeJson,
        "opencode-1.18.33-json-cachewrite",
        None,
    );
    let m = one_model(usage.as_ref().unwrap());
    assert_eq!(counts(m), [Some(433), Some(56), Some(789), Some(12)]);
}

/// vibe 3.0.2: `export.json` only; its output reports nothing.
#[test]
fn vibe_reports_through_its_export() {
    let (_, usage) = transcript(UsageFormat::VibeExport, "vibe-3.0.2-text", None);
    let m = one_model(usage.as_ref().unwrap());
    assert_eq!(counts(m), [Some(445), Some(56), Some(789), None]);
    assert!(close(m.cost_usd, 0.00120585), "{m:?}");
    assert_eq!(m.model.as_deref(), Some("mistral-medium-3.5"));
    let (_, usage) = transcript(UsageFormat::VibeExport, "vibe-3.0.2-text-multiturn", None);
    let m = one_model(usage.as_ref().unwrap());
    assert_eq!(counts(m), [Some(890), Some(112), Some(1578), None]);
    // No export: nothing reported, not zero.
    let t = Transcript::new(UsageFormat::VibeExport, None);
    assert_eq!(t.usage(None), None);
}

/// aider 0.86.2, `--no-stream`: its printed counts, rounded ones read low, so the
/// ledger never counts more than was served.
#[test]
fn aider_counts_what_it_prints_never_more_than_was_served() {
    let (_, usage) = transcript(
        UsageFormat::AiderText,
        "aider-0.86.2-text-gpt41-nostream-cachewrite",
        None,
    );
    let usage = usage.unwrap();
    assert!(usage.approximate);
    let m = one_model(&usage);
    // "1.2k sent" of a 1246-token prompt: at least 1150, of which 12 written, 789 read.
    assert_eq!(counts(m), [Some(349), Some(56), Some(789), Some(12)]);
    assert!(m.tokens() <= 1246 + 56);
    assert!(close(m.cost_usd, 0.0017), "{m:?}");
    assert_eq!(m.model.as_deref(), Some("openai/gpt-4.1"));
    // A run that failed before any message reports nothing.
    let (_, usage) = transcript(UsageFormat::AiderText, "aider-0.86.2-text-401auth", None);
    assert_eq!(usage, None);
}

/// Failed runs: every CLI's JSON mode read back to text is judged as its text mode was —
/// an invalid key is an authentication failure, a 429 a usage limit — on the output's
/// end (stderr, then what the last event said, as the CLI writes them as it exits).
#[test]
fn failed_runs_read_back_to_text_are_judged_as_in_text_mode() {
    let now = Utc
        .with_ymd_and_hms(2026, 11, 29, 10, 0, 0)
        .unwrap()
        .fixed_offset();
    #[rustfmt::skip]
    let cases = [
        ("claude", UsageFormat::ClaudeStreamJson, "claude-2.1.197", "stream-json", "429rate", "401auth"),
        ("codex", UsageFormat::CodexJson, "codex-0.169.0", "json", "429quota", "401auth"),
        ("gemini", UsageFormat::GeminiStreamJson, "gemini-0.61.0", "stream-json", "429rate-long", "400auth"),
        ("opencode", UsageFormat::OpencodeJson, "opencode-1.18.33", "json", "429rate-retryafter1", "401auth"),
    ];
    for (cli, format, version, json, limit, auth_case) in cases {
        let spec = catalog::find(cli);
        let end = |fixture: String, render: bool| {
            let stderr = std::fs::read_to_string(dir().join(format!("{fixture}.stderr")))
                .unwrap_or_default();
            let stdout = if render {
                rendered(format, &fixture, None).0.judged
            } else {
                read(&format!("{fixture}.stdout"))
            };
            format!("{stderr}{stdout}")
        };
        let json_limit = end(format!("{version}-{json}-{limit}"), true);
        assert!(
            signals::usage_limit(spec, &json_limit, now).is_some(),
            "{cli} {json}-{limit} is not seen as a usage limit:\n{json_limit}"
        );
        let json_auth = end(format!("{version}-{json}-{auth_case}"), true);
        assert!(
            auth::auth_failure(spec, &json_auth).is_some(),
            "{cli} {json}-{auth_case} is not seen as an authentication failure:\n{json_auth}"
        );
    }
}
