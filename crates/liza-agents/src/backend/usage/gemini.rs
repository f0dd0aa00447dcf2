//! Gemini CLI 0.61.0, `--output-format stream-json`: JSON lines on stdout. The answer
//! arrives in `message` deltas; the final `result` holds the run's stats, every call
//! counted (the model router's too), per model: `input` the uncached input, `cached`
//! the cache reads, `output_tokens`; no cache writes, no cost. A failed run's `result`
//! says why (`status: error`), as text mode says it on stderr. Text mode printed the
//! answer, not the tool calls: those are shown to a person, not judged.

use liza_model::ledger::ModelUsage;
use serde_json::Value;

use super::{Out, Tally, count};

pub(super) fn read(event: &Value, tally: &mut Tally) -> Option<Out> {
    match event["type"].as_str()? {
        "message" if event["role"] == "assistant" => {
            let text = event["content"].as_str()?.to_owned();
            Some(if event["delta"] == true {
                Out::inline(text)
            } else {
                Out::block(text)
            })
        }
        "tool_use" => Some(Out::shown_only(format!(
            "→ {} {}",
            event["tool_name"].as_str().unwrap_or("tool"),
            summary(&event["parameters"])
        ))),
        "tool_result" if event["status"] == "error" => Some(Out::shown_only(format!(
            "tool error: {}",
            event["error"]["message"].as_str().unwrap_or_default()
        ))),
        "error" => Some(Out::block(format!(
            "Error: {}",
            event["message"].as_str().unwrap_or_default()
        ))),
        "result" => {
            take_stats(&event["stats"], tally);
            (event["status"] == "error").then(|| {
                Out::block(format!(
                    "Error: {}",
                    event["error"]["message"]
                        .as_str()
                        .unwrap_or("the run failed")
                ))
            })
        }
        _ => None,
    }
}

fn summary(parameters: &Value) -> String {
    ["command", "file_path", "absolute_path", "path", "pattern"]
        .iter()
        .find_map(|k| parameters[*k].as_str())
        .unwrap_or_default()
        .to_owned()
}

fn take_stats(stats: &Value, tally: &mut Tally) {
    if !stats.is_object() {
        return;
    }
    tally.models.clear();
    tally.reported = true;
    let usage = |name: Option<&str>, s: &Value| ModelUsage {
        model: name.map(str::to_owned),
        input_tokens: count(&s["input"]),
        output_tokens: count(&s["output_tokens"]),
        cache_read_tokens: count(&s["cached"]),
        ..ModelUsage::default()
    };
    let models = stats["models"].as_object();
    // A model asked for but never answered (an error run names them) used nothing.
    let used: Vec<ModelUsage> = models
        .into_iter()
        .flatten()
        .filter(|(_, s)| count(&s["total_tokens"]).unwrap_or(1) > 0)
        .map(|(name, s)| usage(Some(name), s))
        .collect();
    if used.is_empty() {
        tally.add(usage(None, stats));
    } else {
        used.into_iter().for_each(|u| tally.add(u));
    }
}
