//! codex-cli 0.169.0, `exec --json`: JSON lines on stdout. `turn.completed` carries the
//! usage of the turn's calls: `input_tokens` includes the cached ones (OpenAI's
//! meaning), `cache_write_input_tokens` when the provider reports it, `output_tokens`
//! reasoning included; no model, no cost. `error` events are shown as text mode shows
//! them on stderr (`ERROR: …`) — a reconnection is one too, and only `turn.failed` ends
//! the turn.

use liza_model::ledger::ModelUsage;
use serde_json::Value;

use super::{Out, Tally, count, less};

pub(super) fn read(event: &Value, tally: &mut Tally) -> Option<Out> {
    match event["type"].as_str()? {
        "error" => Some(Out::block(format!("ERROR: {}", text(&event["message"])))),
        "turn.failed" => Some(Out::block(format!(
            "ERROR: {}",
            text(&event["error"]["message"])
        ))),
        "turn.completed" => {
            let u = &event["usage"];
            let cached = count(&u["cached_input_tokens"]);
            let written = count(&u["cache_write_input_tokens"]);
            tally.add(ModelUsage {
                input_tokens: less(count(&u["input_tokens"]), &[cached, written]),
                output_tokens: count(&u["output_tokens"]),
                cache_read_tokens: cached,
                cache_write_tokens: written,
                ..ModelUsage::default()
            });
            None
        }
        "item.started" => match event["item"]["type"].as_str()? {
            "command_execution" => Some(Out::block(format!(
                "exec {}",
                text(&event["item"]["command"])
            ))),
            _ => None,
        },
        "item.completed" => {
            let item = &event["item"];
            match item["type"].as_str()? {
                "agent_message" => Some(Out::block(text(&item["text"]))),
                "error" => Some(Out::block(format!("warning: {}", text(&item["message"])))),
                "command_execution" => item["exit_code"]
                    .as_i64()
                    .filter(|code| *code != 0)
                    .map(|code| Out::block(format!("exited {code}"))),
                "file_change" => {
                    let paths: Vec<&str> = item["changes"]
                        .as_array()
                        .map(|c| c.iter().filter_map(|c| c["path"].as_str()).collect())
                        .unwrap_or_default();
                    Some(Out::block(format!("edited {}", paths.join(", "))))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}
