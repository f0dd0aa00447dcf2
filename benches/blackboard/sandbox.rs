//! The S row (specs/quality.md, specs/sandbox.md *Cost*): what the sandbox adds to starting
//! an agent run. A coder's supervisor runs its agent once (`liza agent coder --once`, the
//! agent a shell that writes one file in the worktree) on a claimed task, sandboxed and
//! with `--no-sandbox`, alternated so drift in the machine affects both alike; the
//! difference of the medians is the sandbox's cost: scratch directories, the toolchain
//! search on this machine's `PATH`, the private git store and its sync, the channel,
//! bubblewrap. Skipped, saying so, where no sandbox can start.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::{LIZA, Row, Sample, bench_root, floor_once, git, sample_of};

/// One `liza agent coder --once` run, its wall time.
fn once(dir: &Path, sandboxed: bool) -> Duration {
    let mut cmd = Command::new(LIZA);
    cmd.args(["agent", "coder", "t-1", "--once"])
        .current_dir(dir)
        .env("LIZA_AGENT_ID", "coder-1")
        .env("LIZA_LOCK_TIMEOUT", "120");
    if !sandboxed {
        cmd.arg("--no-sandbox");
    }
    let t = Instant::now();
    let out = cmd.output().expect("liza agent runs");
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "liza agent: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

pub fn rows(samples: usize) -> Vec<Row> {
    if let liza::sandbox::mechanism::Availability::Unavailable { reason, .. } =
        liza::sandbox::mechanism::probe()
    {
        println!("S rows skipped: no sandbox here ({reason})\n");
        return Vec::new();
    }
    let dir = tempfile::tempdir_in(bench_root()).unwrap();
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(p.join("specs")).unwrap();
    std::fs::write(p.join("specs/vision.md"), "# Vision\n").unwrap();
    git(p, &["add", "."]);
    git(p, &["commit", "-q", "-m", "start"]);
    super::liza(p, &["init", "Bench the sandbox"]);
    super::liza(
        p,
        &[
            "add-task",
            "--id",
            "t-1",
            "--desc",
            "Write the progress file",
            "--spec",
            "specs/vision.md",
            "--done",
            "progress.txt holds a time",
            "--scope",
            "progress.txt",
            "--finalize",
        ],
    );
    // The agent: one write in its worktree (progress, so the task stays the coder's).
    let store = liza::ops::open_store(p).unwrap();
    store
        .transact(&liza::blackboard::Actor::Human, |tx| {
            let c = &mut tx.state.config;
            c.max_coder_iterations = Some(100_000);
            c.default_cli = Some("sh".into());
            c.agent_tools = Some(liza::blackboard::codec::IdMap(vec![(
                "sh".to_owned(),
                liza::blackboard::model::AgentTool {
                    executable: Some("/bin/sh".into()),
                    args: Some(vec!["-c".into(), "date +%N > progress.txt".into()]),
                    ..Default::default()
                },
            )]));
            tx.log_named("bench_config");
            Ok::<_, ()>(())
        })
        .unwrap();
    // Warm-up: the claim and the worktree, then one run of each.
    once(p, true);
    once(p, false);
    let (mut on, mut off, mut floors) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..samples {
        on.push(once(p, true));
        off.push(once(p, false));
        floors.push(floor_once());
    }
    let sandboxed: Sample = sample_of(&mut on, &mut floors.clone());
    let plain = sample_of(&mut off, &mut floors);
    let added = sandboxed.median.as_secs_f64() - plain.median.as_secs_f64();
    vec![Row {
        id: "S1",
        scenario: format!(
            "a coder's agent run, whole supervisor (liza agent --once), sandboxed; unsandboxed {:.2} ms, +{:.2} ms",
            super::ms(plain.median),
            added * 1000.0
        ),
        target: "≤ unsandboxed + 20 ms".into(),
        verdict: super::verdict(added * 1000.0 <= 20.0),
        sample: sandboxed,
    }]
}
