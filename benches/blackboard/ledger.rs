//! The ledger's rows (specs/quality.md C1, C2; specs/ledger.md): `liza note` on a
//! blackboard whose ledger holds 10,000 runs beside the same note without it, sample by
//! sample (the ledger is never on a transition's path), and `liza cost` over those 10,000
//! runs, whole process.

use std::path::Path;
use std::time::{Duration, Instant};

use super::{Row, Sample, liza, ms, project, sample_of, verdict};
use liza::blackboard::ledger::{LedgerEntry, ModelUsage};

/// Runs in the generated ledger.
const RUNS: usize = 10_000;

pub fn rows(samples: usize) -> Vec<Row> {
    let (dir, _) = project(50, 2600, false);
    let p = dir.path();
    let ledger = p.join(".liza/ledger.jsonl");
    let aside = p.join(".liza/ledger.jsonl.aside");
    std::fs::write(&ledger, generated(RUNS)).unwrap();
    let bytes = std::fs::metadata(&ledger).unwrap().len();
    // Alternated sample by sample: with the ledger in place, then moved aside.
    let (mut with, mut without) = (Vec::new(), Vec::new());
    liza(p, &["note", "all", "warm-up"]);
    for i in 0..samples {
        for (present, times) in [(true, &mut with), (false, &mut without)] {
            if present {
                let _ = std::fs::rename(&aside, &ledger);
            } else {
                std::fs::rename(&ledger, &aside).unwrap();
            }
            let t = Instant::now();
            liza(p, &["note", "all", &format!("ledger bench {i}")]);
            times.push(t.elapsed());
        }
    }
    let _ = std::fs::rename(&aside, &ledger);
    let with = sample_of(&mut with, &mut Vec::new());
    let without = sample_of(&mut without, &mut Vec::new());
    let ratio = with.median.as_secs_f64() / without.median.as_secs_f64();
    let mut rows = vec![Row {
        id: "C1",
        scenario: format!(
            "liza note, 50 tasks, a {RUNS}-run ledger ({} KB) beside none (without: {:.2} ms; ratio {ratio:.3})",
            bytes / 1024,
            ms(without.median)
        ),
        target: "≤ 1.05 × without".into(),
        verdict: verdict(ratio <= 1.05),
        sample: with,
    }];
    let cost = measure_cost(p, samples);
    rows.push(Row {
        id: "C2",
        scenario: format!("liza cost --by task, whole process, {RUNS} runs"),
        target: "median ≤ 100 ms".into(),
        verdict: verdict(ms(cost.median) <= 100.0),
        sample: cost,
    });
    rows
}

fn measure_cost(p: &Path, samples: usize) -> Sample {
    liza(p, &["cost", "--by", "task"]);
    let mut times: Vec<Duration> = (0..samples)
        .map(|_| {
            let t = Instant::now();
            liza(p, &["cost", "--by", "task"]);
            t.elapsed()
        })
        .collect();
    sample_of(&mut times, &mut Vec::new())
}

/// `runs` entries as the supervisors write them: 200 tasks, 8 agents, two models a run
/// for a tenth of them.
fn generated(runs: usize) -> String {
    let mut text = String::with_capacity(runs * 420);
    for i in 0..runs {
        let model = |name: &str| ModelUsage {
            model: Some(name.to_owned()),
            input_tokens: Some(1200 + i as u64 % 500),
            output_tokens: Some(300),
            cache_read_tokens: Some(8000),
            cache_write_tokens: Some(40),
            cost_usd: Some(0.0123),
            cost_from: Some("cli".to_owned()),
        };
        let mut models = vec![model("claude-opus-4-8")];
        if i % 10 == 0 {
            models.push(model("claude-haiku-4-5"));
        }
        let entry = LedgerEntry {
            run: format!("coder-{}-20261129T{:06}Z-{:08x}", i % 8 + 1, i, i),
            agent: format!("coder-{}", i % 8 + 1),
            role: "coder".to_owned(),
            task: Some(format!("t-{}", i % 200 + 1)),
            sprint: Some("sprint-1".to_owned()),
            backend: "claude".to_owned(),
            started: "2026-11-29T10:00:00Z".to_owned(),
            ended: "2026-11-29T10:04:00Z".to_owned(),
            wall_ms: 240_000,
            exit_class: "ok".to_owned(),
            models,
            approximate: false,
        };
        text.push_str(&entry.to_line());
        text.push('\n');
    }
    text
}
