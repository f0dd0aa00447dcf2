//! `liza retro` (specs/builtin-agent.md *Retrospective coding*)
//! against the scripted model server on loopback: identities, grounded quotes, the model
//! call's retries and logging, token usage, parsing, chunking, DRY_RUN — and end to end on
//! the blackboard of a real sprint run by fake agents.

use std::path::Path;
use std::time::Duration;

use crate::common::retro::*;
use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;
use liza::llm::client::Usage;
use liza::llm::scripted_server::{Script, ScriptedServer, Step};
use serde_json::{Value, json};

const QUALITY: &str = "You read as the QUALITY-LENS reviewer of this team.";
const PROCESS: &str = "You read as the PROCESS-LENS coach of this team.";

const IDENTITIES: &str = "\
- id: quality
  name: Quality
  prompt_prefix: You read as the QUALITY-LENS reviewer of this team.
  description: Looks for defects and missing tests.
- id: process
  name: Process
  prompt_prefix: You read as the PROCESS-LENS coach of this team.
";

/// The reviewer's rejection and the person's note: multi-byte characters throughout.
const REASON: &str = "Le test « naïve » échoue: the totals key is missing 🙂 in report.json:12";
const NOTE: &str = "Merci à tous — keep commits small ✓ and name the task";

fn server(steps: Vec<Step>) -> ScriptedServer {
    ScriptedServer::start(Script { steps }).unwrap()
}

fn write_identities(repo: &Repo, text: &str) {
    std::fs::write(repo.path().join("identities.yaml"), text).unwrap();
}

/// `liza retro` with the model at `server` (no server: an address nothing listens on).
fn retro(
    repo: &Repo,
    server: Option<&ScriptedServer>,
    extra_env: &[(&str, &str)],
    args: &[&str],
) -> std::process::Output {
    let base = server.map_or_else(
        || "http://127.0.0.1:9/v1".to_owned(),
        ScriptedServer::base_url,
    );
    let mut env: Vec<(&str, &str)> = vec![
        ("LIZA_LLM_BASE_URL", &base),
        ("LIZA_LLM_API_KEY", "canary-key-0123456789"),
        ("LIZA_LLM_BACKOFF_MS", "10"),
    ];
    env.extend_from_slice(extra_env);
    let mut all = vec!["retro"];
    all.extend_from_slice(args);
    repo.liza_env(&env, &all)
}

fn pos(text: &str, needle: &str) -> usize {
    text[..text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in {text:?}"))]
        .chars()
        .count()
}

fn codes(answer: Value) -> String {
    answer.to_string()
}

fn quote(text: &str, start: usize, end: usize) -> Value {
    json!({"text": text, "start_pos": start, "end_pos": end})
}

#[test]
fn end_to_end_on_a_real_sprint_with_wrong_offsets_invented_quotes_and_multibyte_text() {
    let project = AgentProject::new();
    let repo = &project.repo;
    for t in ["t-1", "t-2"] {
        add(repo, t, "");
    }
    assert_success(&repo.liza(&["note", "all", NOTE]));
    project.step("planner", "SPRINT_COMPLETE", "liza goal complete\n");
    project.step(
        "coder",
        "default",
        "echo \"I wrote « $key.txt » 🙂\"\nwork \"$key.txt\" \"the text of $key\"\nsubmit\n",
    );
    project.step("code-reviewer", "t-1.1", &format!("reject \"{REASON}\"\n"));
    project.step("code-reviewer", "default", "approve\n");
    let outcomes = project.wait_all(project.team(), Duration::from_secs(180));
    for (name, out) in &outcomes {
        assert!(out.status.success(), "{name}: {}", project.diagnostics());
    }
    assert_eq!(task_of(repo, "t-1")["status"], "MERGED");
    write_identities(repo, IDENTITIES);

    // The chunk of the rejection reason, as the model sees it (the whole message).
    let reason_msg = format!("reason: {REASON}");
    let totals = pos(&reason_msg, "the totals key is missing");
    let smile_bytes = reason_msg.find('🙂').unwrap();
    let note_at = pos(NOTE, "keep commits small ✓");
    let s = server(vec![
        // The note's first call fails with a 503 and is retried.
        Step {
            when: Some("keep commits small".into()),
            status: Some(503),
            body: Some("{\"error\": {\"message\": \"overloaded\"}}".into()),
            ..Step::default()
        },
        Step {
            and_when: Some(QUALITY.into()),
            usage: Some(Usage {
                prompt_tokens: 200,
                completion_tokens: 40,
            }),
            ..Step::answer_when(
                "the totals key",
                codes(json!([
                    {"code": "missing totals", "description": "the report lacks a key",
                     "quotes": [
                        // Verbatim, right offsets.
                        quote("the totals key is missing", totals, totals + 25),
                        // Right text, wrong offsets: repaired.
                        quote("« naïve »", 0, 9),
                     ]},
                    // Not verbatim: the quote is dropped, and with it the code.
                    {"code": "flaky tests", "quotes": [quote("the test is flaky", 8, 25)]},
                ])),
            )
        },
        Step {
            and_when: Some(PROCESS.into()),
            ..Step::answer_when(
                "the totals key",
                format!(
                    "```json\n{}\n```",
                    codes(json!([
                        {"code": "Missing_Totals", "description": "a rework loop on a missing key",
                         "quotes": [
                            // Offsets in bytes, not code points: repaired.
                            quote("🙂 in report.json", smile_bytes, smile_bytes + 16),
                            // Paraphrased: dropped (the code keeps its other quote).
                            quote("the total key is missing", totals, totals + 24),
                         ]},
                    ]))
                ),
            )
        },
        Step {
            and_when: Some(QUALITY.into()),
            no_usage: true,
            ..Step::answer_when(
                "keep commits small",
                codes(
                    json!([{"code": "small commits", "description": "asked by the person",
                    "quotes": [quote("keep commits small ✓", note_at, note_at + 20)]}]),
                ),
            )
        },
        Step {
            and_when: Some(PROCESS.into()),
            ..Step::answer_when(
                "keep commits small",
                // Wrapped under "codes": normalised with a warning.
                codes(json!({"codes": [
                    {"code": "small commits", "quotes": [quote("Merci à tous", 0, 12)]},
                    // No quote at all: dropped.
                    {"code": "gratitude", "quotes": []},
                ]})),
            )
        },
        // Everything else (other messages of the threads): nothing to code.
        Step {
            times: Some(0),
            ..Step::answer("[]")
        },
    ]);
    let out = retro(repo, Some(&s), &[("LIZA_LOG", "info")], &["--json"]);
    assert_success(&out);
    let err = stderr(&out);
    let summary = json(&out)["result"].clone();

    let report = report(repo);
    // The interactions are the blackboard's: the reason the reviewer gave, the note.
    let t1 = report["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "t-1")
        .unwrap_or_else(|| {
            panic!(
                "no t-1 thread: {:#}\n{}",
                report["interactions"],
                repo.state_text()
            )
        });
    assert!(
        t1["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["text"] == reason_msg.as_str() && m["author"] == "code-reviewer-1"),
        "{t1}"
    );
    assert!(state_text_has(repo, REASON));
    // Every quote is verbatim at its offsets in the message its id names.
    assert_eq!(assert_grounded(&report), 5);
    let tally = &report["totals"]["tally"];
    assert_eq!(tally["quotes"]["verified"], 3, "{tally}");
    assert_eq!(tally["quotes"]["repaired"], 2, "{tally}");
    assert_eq!(tally["quotes"]["dropped"], 2, "{tally}");
    assert_eq!(tally["codes_dropped"], 2, "{tally}");
    assert_eq!(tally["usage_missing"], 1, "{tally}");
    assert_eq!(summary["tally"], *tally);
    // Codes found by both identities are marked; the most frequent first.
    let merged = report["codes"].as_array().unwrap();
    assert_eq!(merged.len(), 2, "{merged:#?}");
    for c in merged {
        assert_eq!(c["agreement"], true, "{c}");
        assert_eq!(c["frequency"], 2);
        assert_eq!(c["identities"], json!(["quality", "process"]));
    }
    let missing = merged
        .iter()
        .find(|c| c["code"] == "missing totals")
        .unwrap();
    assert_eq!(missing["tasks"], json!(["t-1"]));
    let small = merged
        .iter()
        .find(|c| c["code"] == "small commits")
        .unwrap();
    assert_eq!(small["tasks"], json!([]));
    // Token usage per identity (CoderResult), no cost anywhere.
    let ids = report["identities"].as_array().unwrap();
    let calls = report["totals"]["chunks"].as_u64().unwrap();
    let quality = &ids[0];
    assert_eq!(quality["id"], "quality");
    // One answer of 200 + 40, one without usage, the rest the server's 10 + 5.
    assert_eq!(
        quality["token_usage"]["prompt_tokens"].as_u64().unwrap(),
        200 + 10 * (calls - 2)
    );
    assert_eq!(
        ids[1]["token_usage"]["completion_tokens"].as_u64().unwrap(),
        5 * calls
    );
    let yaml = std::fs::read_to_string(
        repo.liza_dir()
            .join(format!("retro/{}.yaml", report["sprint"].as_str().unwrap())),
    )
    .unwrap();
    // The retro prices none of its own calls (its agents' runs are priced in the ledger).
    assert!(!yaml.contains("cost_usd") && !yaml.contains("price"));
    assert!(
        yaml.contains("runs_usage"),
        "what the sprint's runs used: {yaml}"
    );
    // The model: gpt-4o by default; the identity opens the system message; the chunk is
    // in the user message; the key never in a body.
    let requests = s.requests();
    assert_eq!(requests.len() as u64, 2 * calls + 1, "one retry");
    for r in &requests {
        let body: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["model"], "gpt-4o");
        let system = body["messages"][0]["content"].as_str().unwrap();
        assert!(system.starts_with(QUALITY) || system.starts_with(PROCESS));
        assert!(
            body["messages"][1]["content"]
                .as_str()
                .unwrap()
                .contains("JSON array only")
        );
        assert!(!r.body.contains("canary-key"));
    }
    assert!(
        requests
            .iter()
            .any(|r| r.messages_text().contains(&reason_msg)),
        "the chunk is in the user message"
    );
    // Logging: the retry succeeded at INFO, drops and the wrapper at WARN, never the
    // model's words at INFO.
    assert!(
        err.contains("INFO") && err.contains("model call succeeded after retrying"),
        "{err}"
    );
    assert!(err.contains("quote dropped"), "{err}");
    assert!(
        err.contains("a code with no quote that holds was dropped"),
        "{err}"
    );
    assert!(err.contains("unwrapped"), "{err}");
    assert!(err.contains("reported no token usage"), "{err}");
    for words in ["the test is flaky", "Missing_Totals", "gratitude"] {
        assert!(
            !err.contains(words),
            "model content {words:?} in the log:\n{err}"
        );
    }
    // The readable report: codes by frequency with their quotes, task and message.
    let md = std::fs::read_to_string(
        repo.liza_dir()
            .join(format!("retro/{}.md", report["sprint"].as_str().unwrap())),
    )
    .unwrap();
    assert!(md.contains("## Codes by frequency"), "{md}");
    assert!(
        md.contains("missing totals — 2× · found by 2 identities"),
        "{md}"
    );
    assert!(md.contains("> the totals key is missing"), "{md}");
    assert!(md.contains("— t-1 msg_"), "{md}");
    assert!(
        md.contains("Quotes: 3 verified, 2 repaired, 2 dropped"),
        "{md}"
    );

    // The agents' transcripts join their task's thread on request.
    let out = retro(repo, None, &[("DRY_RUN", "1")], &["--include-transcripts"]);
    assert_success(&out);
    let with_transcripts = self::report(repo);
    let t1 = with_transcripts["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "t-1")
        .unwrap()
        .clone();
    let transcripts: Vec<&Value> = t1["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["kind"] == "transcript" && m["author"].as_str().unwrap().starts_with("coder-")
        })
        .collect();
    assert_eq!(transcripts.len(), 2, "two coder runs on t-1: {t1:#}");
    assert!(transcripts.iter().all(|m| {
        m["text"]
            .as_str()
            .unwrap()
            .contains("I wrote « t-1.txt » 🙂")
    }));
    assert!(assert_grounded(&with_transcripts) > 0);

    // Terminal tasks archived mid-sprint are still the sprint's: read from its archive.
    let sprint = report["sprint"].as_str().unwrap().to_owned();
    configure(repo, |c| c.archive_after = Some(1));
    std::thread::sleep(Duration::from_millis(2100));
    assert_success(&repo.liza(&["watch", "--cycles", "1", "--interval", "0.1"]));
    assert!(task_of_is_gone(repo, "t-1"), "t-1 was not archived");
    let archive = repo.liza_dir().join(format!("archive/{sprint}.yaml"));
    let has_reason = |past: &Value| {
        past["interactions"].as_array().unwrap().iter().any(|i| {
            i["id"] == "t-1"
                && i["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["text"] == reason_msg.as_str())
        })
    };
    let out = retro(repo, None, &[("DRY_RUN", "1")], &[]);
    assert_success(&out);
    assert!(has_reason(&self::report(repo)));
    // And a sprint that is not the current one only from its archive.
    let text = std::fs::read_to_string(&archive).unwrap();
    let old = repo.liza_dir().join("archive/sprint-0.yaml");
    std::fs::write(
        &old,
        text.replace(&format!("sprint: {sprint}"), "sprint: sprint-0"),
    )
    .unwrap();
    let out = retro(repo, None, &[("DRY_RUN", "1")], &["--sprint", "sprint-0"]);
    assert_success(&out);
    let past = report_of(repo, Some("sprint-0"));
    assert_eq!(past["sprint"], "sprint-0");
    assert!(has_reason(&past), "{past:#}");
}

fn task_of_is_gone(repo: &Repo, id: &str) -> bool {
    repo.state_json()["tasks"]
        .as_array()
        .is_none_or(|tasks| tasks.iter().all(|t| t["id"] != id))
}

fn state_text_has(repo: &Repo, text: &str) -> bool {
    repo.state_text().contains(text)
        || std::fs::read_dir(repo.liza_dir().join("archive"))
            .map(|d| {
                d.flatten()
                    .any(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains(text)))
            })
            .unwrap_or(false)
}

/// A project whose sprint has one message: a note for everyone.
fn noted(note: &str) -> Repo {
    let repo = Repo::initialized();
    assert_success(&repo.liza(&["note", "all", note]));
    repo
}

fn retro_dir_is_absent(repo: &Repo) -> bool {
    !repo.liza_dir().join("retro").exists()
}

#[test]
fn identities_fail_fast_with_a_clear_error_before_any_call() {
    let repo = noted(NOTE);
    let s = server(vec![Step {
        times: Some(0),
        ..Step::answer("[]")
    }]);
    let cases: [(Option<&str>, &[&str]); 5] = [
        (None, &["identities.yaml", "missing"]),
        (
            Some("- id: a\n  name: [unclosed\n"),
            &["identities.yaml:2:", "not valid YAML"],
        ),
        (Some("[]\n"), &["identities.yaml", "no identities"]),
        (
            Some("- id: a\n  name: A\n"),
            &["identities.yaml:1:", "prompt_prefix"],
        ),
        (
            Some(
                "- id: a\n  name: A\n  prompt_prefix: p\n- id: a\n  name: B\n  prompt_prefix: q\n",
            ),
            &["identities.yaml:4:", "a"],
        ),
    ];
    for (text, expected) in cases {
        match text {
            Some(t) => write_identities(&repo, t),
            None => {
                let _ = std::fs::remove_file(repo.path().join("identities.yaml"));
            }
        }
        let before = repo.files();
        // DRY_RUN still validates the input.
        for dry in ["0", "1"] {
            let out = retro(&repo, Some(&s), &[("DRY_RUN", dry)], &[]);
            assert_exit(&out, 1);
            let err = stderr(&out);
            for e in expected {
                assert!(err.contains(e), "{text:?}: {e:?} not in\n{err}");
            }
            assert!(
                err.contains("prompt_prefix"),
                "the hint names the fields: {err}"
            );
        }
        assert_eq!(repo.files(), before, "{text:?}");
        assert!(retro_dir_is_absent(&repo));
    }
    assert!(s.requests().is_empty());
    // A description is optional; another file can be named.
    std::fs::write(
        repo.path().join("lenses.yaml"),
        "- id: a\n  name: A\n  prompt_prefix: p\n  description: optional\n- id: b\n  name: B\n  prompt_prefix: q\n",
    )
    .unwrap();
    let out = retro(&repo, Some(&s), &[], &["--identities", "lenses.yaml"]);
    assert_success(&out);
    assert_eq!(report(&repo)["identities"].as_array().unwrap().len(), 2);
}

#[test]
fn timeouts_and_server_errors_are_retried_and_a_final_failure_gives_no_codes() {
    let repo = noted("the first note about reviews");
    assert_success(&repo.liza(&["note", "all", "the second note about merges"]));
    write_identities(&repo, "- id: a\n  name: A\n  prompt_prefix: p\n");
    let answer = |word: &str| codes(json!([{"code": word, "quotes": [quote(word, 0, 3)]}]));
    let s = server(vec![
        // The first note: a timeout, then a 500, then an answer.
        Step {
            when: Some("about reviews".into()),
            delay_ms: 6000,
            content: Some(answer("the")),
            ..Step::default()
        },
        Step {
            when: Some("about reviews".into()),
            status: Some(500),
            body: Some("{}".into()),
            ..Step::default()
        },
        Step::answer_when("about reviews", answer("the")),
        // The second note: four 502s: no result.
        Step {
            when: Some("about merges".into()),
            status: Some(502),
            body: Some("{}".into()),
            times: Some(4),
            ..Step::default()
        },
    ]);
    let out = retro(
        &repo,
        Some(&s),
        &[("LIZA_LLM_TIMEOUT", "2"), ("LIZA_LOG", "info")],
        &["--json"],
    );
    assert_success(&out);
    let err = stderr(&out);
    assert!(err.contains(" INFO ") || err.contains("INFO"), "{err}");
    assert!(err.contains("model call succeeded after retrying"), "{err}");
    assert!(
        err.contains("WARN") && err.contains("model call failed; no result"),
        "{err}"
    );
    assert_eq!(s.requests().len(), 3 + 4);
    let report = report(&repo);
    assert_eq!(report["totals"]["tally"]["calls_failed"], 1);
    assert_eq!(report["codes"].as_array().unwrap().len(), 1);
    assert_eq!(assert_grounded(&report), 1);

    // Every call failing writes nothing and says where to look.
    let other = noted("a lone note");
    write_identities(&other, "- id: a\n  name: A\n  prompt_prefix: p\n");
    let before = other.files();
    let out = retro(&other, None, &[], &[]);
    assert_exit(&out, 5);
    assert!(stderr(&out).contains("answered none"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("LIZA_LLM_BASE_URL"),
        "{}",
        stderr(&out)
    );
    assert_eq!(other.files(), before);
    assert!(retro_dir_is_absent(&other));
}

#[test]
fn unreadable_answers_give_no_codes_and_a_warning_and_the_rest_continues() {
    let repo = noted("a note about the planner");
    assert_success(&repo.liza(&["note", "all", "a note about the reviewer"]));
    write_identities(&repo, "- id: a\n  name: A\n  prompt_prefix: p\n");
    let s = server(vec![
        Step::answer_when(
            "about the planner",
            "I would rather not answer in JSON today.",
        ),
        Step::answer_when(
            "about the reviewer",
            format!(
                "Sure! The codes are:\n{} Hope this helps.",
                codes(json!([{"code": "reviewer", "quotes": [quote("a note", 0, 6)]}]))
            ),
        ),
    ]);
    let out = retro(&repo, Some(&s), &[("LIZA_LOG", "info")], &[]);
    assert_success(&out);
    let err = stderr(&out);
    assert!(
        err.contains("WARN") && err.contains("no JSON found"),
        "{err}"
    );
    assert!(!err.contains("rather not"), "raw content in the log: {err}");
    let report = report(&repo);
    assert_eq!(report["totals"]["tally"]["answers_unreadable"], 1);
    assert_eq!(report["codes"][0]["code"], "reviewer");
    assert_eq!(assert_grounded(&report), 1);
    // The raw answer is in the debug artifacts, not in the log.
    let artifacts = repo.liza_dir().join("agent-outputs");
    assert!(
        files_under(&artifacts)
            .iter()
            .any(|t| t.contains("rather not answer"))
    );
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().is_dir() {
            out.extend(files_under(&e.path()));
        } else if let Ok(t) = std::fs::read_to_string(e.path()) {
            out.push(t);
        }
    }
    out
}

#[test]
fn a_long_message_is_chunked_and_every_chunk_is_coded() {
    let paragraphs = [
        "Première étape: le planificateur a découpé la tâche en trois parties égales.",
        "Deuxième étape: « le relecteur a rejeté » le travail deux fois 🙂 de suite.",
        "Troisième étape: le codeur a corrigé, et la fusion a réussi sans conflit.",
    ];
    let note = paragraphs.join("\n\n");
    let repo = noted(&note);
    write_identities(&repo, "- id: a\n  name: A\n  prompt_prefix: p\n");
    let mut steps = Vec::new();
    for (word, quoted) in [
        ("Première", "le planificateur"),
        ("Deuxième", "« le relecteur a rejeté »"),
        ("Troisième", "la fusion a réussi"),
    ] {
        steps.push(Step::answer_when(
            word,
            // Offsets deliberately 0: repaired within the chunk.
            codes(json!([{"code": format!("step {word}"), "quotes": [quote(quoted, 0, 0)]}])),
        ));
    }
    let s = server(steps);
    let out = retro(&repo, Some(&s), &[], &["--chunk-tokens", "20", "--json"]);
    assert_success(&out);
    let report = report(&repo);
    assert_eq!(report["totals"]["chunks"], 3);
    assert_eq!(assert_grounded(&report), 3);
    let mut chunk_indexes: Vec<u64> = report["codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["quotes"][0]["chunk_index"].as_u64().unwrap())
        .collect();
    chunk_indexes.sort();
    assert_eq!(chunk_indexes, [0, 1, 2]);
    assert_eq!(report["totals"]["tally"]["quotes"]["repaired"], 3);
}

#[test]
fn a_dry_run_calls_nothing_and_still_grounds_and_encodes_quote_ids() {
    let repo = noted("  « naïve » 🙂 — a note that starts with spaces and multi-byte characters");
    write_identities(&repo, IDENTITIES);
    let s = server(vec![Step {
        times: Some(0),
        ..Step::answer("[]")
    }]);
    let out = retro(&repo, Some(&s), &[("DRY_RUN", "1")], &["--json"]);
    assert_success(&out);
    assert!(s.requests().is_empty());
    let report = report(&repo);
    assert_eq!(report["dry_run"], true);
    assert_eq!(
        assert_grounded(&report),
        1,
        "one quote, cited by both identities"
    );
    assert_eq!(report["codes"][0]["agreement"], true);
    for identity in report["identities"].as_array().unwrap() {
        assert_eq!(
            identity["token_usage"],
            json!({"prompt_tokens": 100, "completion_tokens": 50})
        );
    }
    let q = &report["codes"][0]["quotes"][0];
    assert!(q["text"].as_str().unwrap().starts_with("« naïve »"));
}

#[test]
fn calls_run_in_parallel_up_to_the_bound() {
    let repo = noted("the first note");
    for n in ["second", "third"] {
        assert_success(&repo.liza(&["note", "all", &format!("the {n} note")]));
    }
    write_identities(&repo, IDENTITIES);
    let delay = Duration::from_millis(1500);
    let s = server(vec![Step {
        times: Some(0),
        delay_ms: delay.as_millis() as u64,
        ..Step::answer("[]")
    }]);
    let out = retro(&repo, Some(&s), &[], &["--jobs", "2"]);
    assert_success(&out);
    let mut received: Vec<_> = s.requests().iter().map(|r| r.received).collect();
    received.sort();
    assert_eq!(received.len(), 6, "3 notes × 2 identities");
    // Never more than 2 in flight: a third starts only when an answer came back.
    for w in received.windows(3) {
        assert!(w[2] - w[0] >= delay, "3 calls in flight at once");
    }
    // But 2 are: the second starts before the first is answered.
    assert!(
        received[1] - received[0] < delay,
        "the calls ran one at a time"
    );
    // Each identity's CoderResult holds its codes and usage.
    let report = report(&repo);
    for identity in report["identities"].as_array().unwrap() {
        assert_eq!(identity["codes"], json!([]));
        assert_eq!(identity["token_usage"]["prompt_tokens"], 30);
    }
}

#[test]
fn a_past_sprint_is_read_from_its_archive_and_an_unknown_one_is_refused() {
    let repo = noted("a note");
    write_identities(&repo, "- id: a\n  name: A\n  prompt_prefix: p\n");
    let before = repo.files();
    let out = retro(&repo, None, &[("DRY_RUN", "1")], &["--sprint", "sprint-0"]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("there is no sprint sprint-0"),
        "{}",
        stderr(&out)
    );
    let out = retro(&repo, None, &[("DRY_RUN", "1")], &["--sprint", "../escape"]);
    assert_exit(&out, 1);
    assert_eq!(repo.files(), before);
    assert!(retro_dir_is_absent(&repo));
}
