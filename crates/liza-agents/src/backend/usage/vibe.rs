//! Vibe 3.0.2 reports usage only in `--output-dir DIR`'s `export.json`, written as it
//! ends: `.usage` (`input_tokens` including `cached_input_tokens`, `output_tokens`),
//! `.cost_usd` in dollars. `.config.active_model` is empty when the default model runs;
//! then the one model `.config.models` holds names it. Its output stays text.

use liza_model::ledger::ModelUsage;
use serde_json::Value;

use super::{Tally, count, dollars, less};

pub(super) fn read_export(bytes: &[u8], tally: &mut Tally) {
    let Ok(export) = serde_json::from_slice::<Value>(bytes) else {
        return;
    };
    let u = &export["usage"];
    if !u.is_object() {
        return;
    }
    let cached = count(&u["cached_input_tokens"]);
    tally.add(ModelUsage {
        model: model(&export["config"]),
        input_tokens: less(count(&u["input_tokens"]), &[cached]),
        output_tokens: count(&u["output_tokens"]),
        cache_read_tokens: cached,
        cache_write_tokens: None,
        cost_usd: dollars(&export["cost_usd"]),
        cost_from: None,
    });
}

fn model(config: &Value) -> Option<String> {
    let active = config["active_model"].as_str().filter(|m| !m.is_empty());
    let only = config["models"]
        .as_object()
        .filter(|models| models.len() == 1)
        .and_then(|models| models.keys().next());
    active.or(only.map(String::as_str)).map(str::to_owned)
}
