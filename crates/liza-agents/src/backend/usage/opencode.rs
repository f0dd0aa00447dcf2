//! opencode 1.18.33, `run --format json`: JSON lines on stdout. Each model step ends with
//! a `step_finish` whose part holds that step's tokens — `input` uncached, `output`
//! without the reasoning (counted apart), `cache.read`, `cache.write` — and its `cost` in
//! dollars; there is no run total, so steps are added up. The session-title call is not
//! reported at all. No model name: the one liza started it with, if any.

use liza_model::ledger::ModelUsage;
use serde_json::Value;

use super::{Out, Tally, count, dollars};

pub(super) fn read(event: &Value, tally: &mut Tally) -> Option<Out> {
    let part = &event["part"];
    match event["type"].as_str()? {
        "text" => Some(Out::block(part["text"].as_str()?.to_owned())),
        "tool_use" => {
            let state = &part["state"];
            let what = state["title"]
                .as_str()
                .or_else(|| state["input"]["command"].as_str())
                .unwrap_or_default();
            Some(Out::block(format!(
                "→ {} {what}",
                part["tool"].as_str().unwrap_or("tool")
            )))
        }
        "step_finish" => {
            let t = &part["tokens"];
            if t.is_object() {
                let output = match (count(&t["output"]), count(&t["reasoning"])) {
                    (Some(o), Some(r)) => Some(o.saturating_add(r)),
                    (o, _) => o,
                };
                tally.add(ModelUsage {
                    input_tokens: count(&t["input"]),
                    output_tokens: output,
                    cache_read_tokens: count(&t["cache"]["read"]),
                    cache_write_tokens: count(&t["cache"]["write"]),
                    cost_usd: dollars(&part["cost"]),
                    ..ModelUsage::default()
                });
            }
            None
        }
        "error" => {
            let error = &event["error"];
            let message = error["data"]["message"]
                .as_str()
                .or_else(|| error["message"].as_str())
                .or_else(|| error["name"].as_str())
                .unwrap_or("the run failed");
            Some(Out::block(format!("Error: {message}")))
        }
        _ => None,
    }
}
