//! Bad input (specs/quality.md R4): invalid YAML, wrong types, unknown statuses, duplicate ids,
//! cycles, a 100 MB file, binary junk, a symlinked or read-only state.yaml, a missing
//! `.liza/`. Never a panic, and nothing a person wrote is overwritten: a broken state.yaml
//! is set aside under `.liza/rejected/` byte for byte, the last good revision restored, and
//! an alarm names the file, line and column; a symlinked or read-only one is refused with
//! a clear error.

use std::os::unix::fs::PermissionsExt;

use crate::common::{Repo, assert_exit, assert_success, json, stderr, stdout};
use proptest::prelude::*;

fn no_panic(out: &std::process::Output) {
    let text = format!("{}{}", stdout(out), stderr(out));
    assert!(!text.contains("panicked"), "{text}");
    assert!(out.status.code().is_some(), "killed by a signal: {text}");
}

/// Writes `content` as state.yaml, then checks: `liza validate` reports the finding; the
/// next transaction sets the file aside under `.liza/rejected/` byte for byte (nothing the
/// person wrote is overwritten or lost), goes on from the last good revision, and raises
/// an alarm with `message` (file, line and column where there is one); never a panic.
fn set_aside(repo: &Repo, content: &[u8], message: &str, check: &str) {
    let good = repo.revision();
    std::fs::write(repo.state_path(), content).unwrap();
    let out = repo.liza(&["--json", "validate"]);
    no_panic(&out);
    assert_exit(&out, 1);
    let findings = json(&out)["result"]["findings"].as_array().unwrap().clone();
    assert!(
        findings.iter().any(|f| f["check"] == check),
        "{check}: {findings:?}"
    );
    let out = repo.liza(&["note", "all", "x"]);
    no_panic(&out);
    assert_success(&out);
    let kept = std::fs::read_dir(repo.liza_dir().join("rejected"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .any(|p| std::fs::read(p).unwrap() == content);
    assert!(kept, "{message}: the person's file was not kept as it was");
    let alerts = std::fs::read_to_string(repo.liza_dir().join("alerts.log")).unwrap();
    assert!(alerts.contains(message), "{message}: {alerts}");
    assert_eq!(
        repo.revision(),
        good + 1,
        "{message}: went on from the last good revision"
    );
}

#[test]
fn malformed_blackboards_are_set_aside_with_their_location() {
    let repo = Repo::initialized();
    let good = repo.state_text();
    set_aside(
        &repo,
        b"version: 1\ngoal: [unclosed\n",
        ".liza/state.yaml:2:7: invalid YAML: unclosed bracket",
        "yaml-syntax",
    );
    set_aside(
        &repo,
        good.replace("version: 1\n", "version: \"1\"\n").as_bytes(),
        ".liza/state.yaml:1:10: expected an integer",
        "version-int",
    );
    set_aside(
        &repo,
        good.replace("tasks: []\n", "tasks: {}\n").as_bytes(),
        "expected a list, found a mapping",
        "type",
    );
    let with_task = |status: &str, id2: &str, deps: &str| {
        good.replace(
            "tasks: []\n",
            &format!(
                "tasks:\n  - id: a\n    status: {status}\n    depends_on: [{deps}]\n  - id: {id2}\n    status: DRAFT\n    depends_on: [a]\n"
            ),
        )
    };
    set_aside(
        &repo,
        with_task("DONE", "b", "").as_bytes(),
        "task status \"DONE\" is not one of",
        "task-status",
    );
    set_aside(
        &repo,
        with_task("DRAFT", "a", "").as_bytes(),
        "task id a is used twice",
        "task-id-duplicate",
    );
    set_aside(
        &repo,
        with_task("DRAFT", "b", "b").as_bytes(),
        "dependency cycle: a → b → a",
        "dependency-cycle",
    );
    set_aside(
        &repo,
        b"version: 1\n\xff\xfe\x00\x01binary",
        ".liza/state.yaml:2:1: the file is not UTF-8",
        "utf8",
    );
    set_aside(
        &repo,
        b"",
        "the file holds no YAML document",
        "top-level-key",
    );
}

#[test]
fn a_huge_file_is_set_aside_without_being_parsed() {
    let repo = Repo::initialized();
    let mut big = repo.state_text().into_bytes();
    big.extend(std::iter::repeat_n(b'#', 100 * 1024 * 1024));
    let started = std::time::Instant::now();
    set_aside(&repo, &big, "larger than 64 MB", "file-size");
    // Refused at once (a guard against hangs, not a benchmark).
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn a_symlinked_state_file_is_not_replaced() {
    let repo = Repo::initialized();
    let elsewhere = repo.path().join("real-state.yaml");
    std::fs::rename(repo.state_path(), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, repo.state_path()).unwrap();
    let target_before = std::fs::read(&elsewhere).unwrap();
    let out = repo.liza(&["note", "all", "x"]);
    no_panic(&out);
    assert_exit(&out, 4);
    assert!(
        stderr(&out).contains(".liza/state.yaml is a symbolic link"),
        "{}",
        stderr(&out)
    );
    assert!(
        std::fs::symlink_metadata(repo.state_path())
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(&elsewhere).unwrap(), target_before);
    // Reading through the link is harmless.
    assert_success(&repo.liza(&["status"]));
}

#[test]
fn a_read_only_state_file_is_not_replaced() {
    let repo = Repo::initialized();
    std::fs::set_permissions(repo.state_path(), std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = repo.files();
    let out = repo.liza(&["note", "all", "x"]);
    no_panic(&out);
    assert_exit(&out, 4);
    assert!(
        stderr(&out).contains(".liza/state.yaml is read-only"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("chmod u+w .liza/state.yaml"));
    assert_eq!(repo.files(), before);
    let mode = std::fs::metadata(repo.state_path())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o444);
    assert_success(&repo.liza(&["status"]));
}

#[test]
fn a_missing_state_file_or_blackboard_is_named_with_a_fix() {
    let repo = Repo::initialized();
    std::fs::remove_file(repo.state_path()).unwrap();
    let out = repo.liza(&["note", "all", "x"]);
    no_panic(&out);
    assert_exit(&out, 4);
    assert!(
        stderr(&out).contains(".liza/state.yaml is missing"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out)
            .contains("hint: restore the last committed revision: cp .liza/journal/000000000001-")
    );
    assert!(!repo.state_path().exists());

    std::fs::remove_dir_all(repo.liza_dir()).unwrap();
    let out = repo.liza(&["note", "all", "x"]);
    no_panic(&out);
    assert_exit(&out, 4);
    assert!(
        stderr(&out).contains(".liza does not exist"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("hint: run `liza init"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_unwritable_blackboard_directory_is_an_error_not_a_loss() {
    let repo = Repo::initialized();
    std::fs::set_permissions(repo.liza_dir(), std::fs::Permissions::from_mode(0o555)).unwrap();
    // Root ignores directory permissions: probe before relying on them.
    let probe = repo.liza_dir().join("probe");
    if std::fs::write(&probe, b"").is_ok() {
        std::fs::remove_file(&probe).unwrap();
        std::fs::set_permissions(repo.liza_dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
        eprintln!("skipped: running as root, directory permissions do not apply");
        return;
    }
    let before = repo.files();
    let out = repo.liza(&["note", "all", "x"]);
    std::fs::set_permissions(repo.liza_dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    no_panic(&out);
    assert_exit(&out, 4);
    assert_eq!(repo.files(), before);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The loader and validator never panic, whatever the bytes (mutations of a real
    /// blackboard: cut, spliced, bytes flipped).
    #[test]
    fn the_loader_never_panics(cut in 0usize..3000, splice in "\\PC{0,12}", flip in 0usize..3000, byte in any::<u8>()) {
        let base = crate::common::MID_SPRINT.as_bytes();
        let mut text = base[..cut.min(base.len())].to_vec();
        text.extend_from_slice(splice.as_bytes());
        text.extend_from_slice(&base[cut.min(base.len())..]);
        if flip < text.len() {
            text[flip] = byte;
        }
        let mut env = liza::blackboard::validate::ValidationEnv::new(None, liza::blackboard::Timestamp::now());
        let checked = liza::blackboard::document::check(&text, &mut env);
        if let Some(decoded) = checked.decoded {
            // Whatever decodes, writes back and decodes to the same state.
            let again = liza::blackboard::document::emit(&decoded.state, 0);
            let back = liza::blackboard::document::decode(again.as_bytes()).expect("liza reads what it writes");
            prop_assert_eq!(back.state, decoded.state);
        }
    }
}
