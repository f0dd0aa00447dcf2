//! Claude Code 2.1.197, `-p --output-format stream-json --verbose`: one JSON event per
//! line. The final `result` carries the run's usage — `modelUsage` per model, every call
//! counted (the session-title call too, which `.usage` leaves out), `input_tokens` the
//! uncached input, `costUSD` in dollars. The `assistant` events' usage is the stream's
//! first count (`output_tokens: 1`) and is never added up. Text mode printed the final
//! answer only: the steps (messages, tool calls) are shown to a person but not judged for
//! logins and limits; the final `result` is judged (and shown when it says more than the
//! last step did, or failed).

use liza_model::ledger::ModelUsage;
use serde_json::Value;

use super::{Out, Tally, count, dollars};

pub(super) fn read(event: &Value, tally: &mut Tally) -> Option<Out> {
    match event["type"].as_str()? {
        "system" => match event["subtype"].as_str()? {
            "init" => {
                tally.model = event["model"].as_str().map(str::to_owned);
                None
            }
            "api_retry" => Some(Out::block(format!(
                "API retry {}/{}: {} ({}), next in {} ms",
                event["attempt"],
                event["max_retries"],
                event["error"].as_str().unwrap_or("error"),
                event["error_status"],
                event["retry_delay_ms"]
            ))),
            _ => None,
        },
        // The synthetic message of an API error repeats the result's text.
        "assistant" if event["message"]["model"] == "<synthetic>" => None,
        "assistant" => {
            let blocks = event["message"]["content"].as_array()?;
            let text: Vec<String> = blocks.iter().filter_map(block).collect();
            tally.last_text = blocks
                .iter()
                .rev()
                .filter(|b| b["type"] == "text")
                .find_map(|b| b["text"].as_str())
                .map(|t| t.trim().to_owned())
                .or(tally.last_text.take());
            (!text.is_empty()).then(|| Out::shown_only(text.join("\n")))
        }
        "result" => {
            take_result(event, tally);
            let failed = event["is_error"] == true
                || event["subtype"].as_str().is_some_and(|s| s != "success");
            let text = event["result"]
                .as_str()
                .map_or_else(|| format!("claude: {}", event["subtype"]), str::to_owned);
            let already_read = !failed && tally.last_text.as_deref() == Some(text.trim());
            Some(if already_read {
                Out::judged_only(text)
            } else {
                Out::block(text)
            })
        }
        _ => None,
    }
}

/// A content block as a person reads it: text, or the tool it calls.
fn block(block: &Value) -> Option<String> {
    match block["type"].as_str()? {
        "text" => block["text"].as_str().map(str::to_owned),
        "tool_use" => {
            let input = &block["input"];
            let what = ["command", "file_path", "path", "pattern", "description"]
                .iter()
                .find_map(|k| input[*k].as_str())
                .unwrap_or("");
            Some(format!(
                "→ {} {what}",
                block["name"].as_str().unwrap_or("tool")
            ))
        }
        _ => None,
    }
}

fn take_result(event: &Value, tally: &mut Tally) {
    if let Some(models) = event["modelUsage"].as_object() {
        tally.models.clear();
        for (name, u) in models {
            tally.add(ModelUsage {
                model: Some(name.clone()),
                input_tokens: count(&u["inputTokens"]),
                output_tokens: count(&u["outputTokens"]),
                cache_read_tokens: count(&u["cacheReadInputTokens"]),
                cache_write_tokens: count(&u["cacheCreationInputTokens"]),
                cost_usd: dollars(&u["costUSD"]),
                cost_from: None,
            });
        }
        if !models.is_empty() {
            return;
        }
    }
    // An older result without `modelUsage`: its main-loop usage and total cost.
    let u = &event["usage"];
    if u.is_object() {
        tally.models.clear();
        tally.add(ModelUsage {
            model: None,
            input_tokens: count(&u["input_tokens"]),
            output_tokens: count(&u["output_tokens"]),
            cache_read_tokens: count(&u["cache_read_input_tokens"]),
            cache_write_tokens: count(&u["cache_creation_input_tokens"]),
            cost_usd: dollars(&event["total_cost_usd"]),
            cost_from: None,
        });
    }
}
