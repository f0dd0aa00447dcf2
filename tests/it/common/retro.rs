//! Reading `liza retro`'s report in tests, and checking that its quotes hold.

use serde_json::Value;

use super::Repo;

/// The report's YAML, read with liza's own parser.
pub fn report(repo: &Repo) -> Value {
    report_of(repo, None)
}

/// The report of `sprint` (default: the current one).
pub fn report_of(repo: &Repo, sprint: Option<&str>) -> Value {
    let sprint = match sprint {
        Some(s) => s.to_owned(),
        None => repo.state_json()["sprint"]["id"]
            .as_str()
            .unwrap()
            .to_owned(),
    };
    let text =
        std::fs::read_to_string(repo.liza_dir().join(format!("retro/{sprint}.yaml"))).unwrap();
    liza::blackboard::yaml::parse(&text)
        .unwrap()
        .root
        .unwrap()
        .to_json()
}

/// The code points `start..end` of `text`.
pub fn slice(text: &str, start: usize, end: usize) -> String {
    text.chars().skip(start).take(end - start).collect()
}

/// Every quote in the report is verbatim at its offsets in the message it names, and its
/// id encodes interaction, message, chunk and offsets. Returns how many were checked.
pub fn assert_grounded(report: &Value) -> usize {
    let mut checked = 0;
    for code in report["codes"].as_array().unwrap() {
        for q in code["quotes"].as_array().unwrap() {
            let interaction = report["interactions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["id"] == q["interaction"])
                .unwrap_or_else(|| panic!("no interaction for {q}"));
            let n = q["message"].as_u64().unwrap() as usize;
            let text = interaction["messages"][n]["text"].as_str().unwrap();
            let (start, end) = (
                q["start_pos"].as_u64().unwrap() as usize,
                q["end_pos"].as_u64().unwrap() as usize,
            );
            assert_eq!(slice(text, start, end), q["text"].as_str().unwrap(), "{q}");
            assert_eq!(
                q["id"],
                format!(
                    "{}:msg_{n}:{}:{start}-{end}",
                    q["interaction"].as_str().unwrap(),
                    q["chunk_index"]
                ),
            );
            checked += 1;
        }
    }
    checked
}
