//! What only the blackboard in etcd has (specs/shared-store.md): checkouts that join it,
//! the read-only mirror, the store address, and an etcd that does not answer.

use crate::common::board::{Board, Kind};
use crate::common::*;

fn board() -> Option<Board> {
    Board::initialized(Kind::Etcd)
}

/// A second clone of the repository, as another host has it.
fn second_checkout(board: &Board) -> Repo {
    Repo::cloned(&board.repo.path().display().to_string())
}

#[test]
fn a_checkout_that_joins_sees_the_same_blackboard_log_and_revisions() {
    let Some(board) = board() else { return };
    let (_, address) = board.etcd.as_ref().unwrap();
    assert_success(&board.repo.liza(&["note", "all", "from host A"]));
    let other = second_checkout(&board);
    let joined = json(&other.liza(&["--json", "join", address]));
    assert_eq!(joined["result"]["revision"], 2, "{joined}");
    assert_eq!(
        std::fs::read_to_string(other.liza_dir().join("store")).unwrap(),
        format!("{address}\n")
    );
    // A change on either host is the other's next revision; both list the same log.
    assert_success(&other.liza(&["note", "all", "from host B"]));
    assert_eq!(board.repo.revision(), 3);
    assert_eq!(board.repo.log(), other.log());
    // Joining twice, or joining a prefix with no project, is refused with what to do.
    let again = other.liza(&["join", address]);
    assert_exit(&again, 1);
    let elsewhere = Repo::new();
    let empty = address.replace("/team/project", "/team/nothing-here");
    let out = elsewhere.liza(&["join", &empty]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("no head key"), "{err}");
    assert!(!elsewhere.liza_dir().exists(), "a failed join left .liza/");
}

#[test]
fn a_write_to_the_mirror_changes_nothing_and_is_reported() {
    let Some(board) = board() else { return };
    let mirror = board.repo.state_path();
    let text = board.repo.state_text();
    assert!(text.starts_with("# Read-only mirror"), "{text}");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&mirror).unwrap().permissions());
    assert_eq!(mode & 0o222, 0, "the mirror is writable");
    // A person forces a write (as `:w!` does).
    std::fs::set_permissions(&mirror, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    std::fs::write(&mirror, text.replace("Add a --json flag", "Hijacked goal")).unwrap();
    let out = board.repo.liza(&["note", "all", "next change"]);
    assert_success(&out);
    let err = stderr(&out);
    assert!(err.contains("liza edit"), "{err}");
    // The blackboard is unchanged by it; the mirror is liza's again; the write is kept.
    let status = board.repo.state_json();
    assert_eq!(
        status["goal"]["description"],
        "Add a --json flag to the report CLI"
    );
    assert!(!board.repo.state_text().contains("Hijacked"));
    let kept = board.repo.rejected();
    assert_eq!(kept.len(), 1);
    assert!(kept[0].0.contains("Hijacked goal"));
    assert!(kept[0].1.contains("liza edit"), "{}", kept[0].1);
}

#[test]
fn a_bad_store_address_is_refused_naming_where_it_came_from() {
    let Some(board) = board() else { return };
    std::fs::write(
        board.repo.liza_dir().join("store"),
        "etcd://127.0.0.1:2379\n",
    )
    .unwrap();
    let out = board.repo.liza(&["status"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains(".liza/store"), "{err}");
    assert!(err.contains("PREFIX"), "{err}");
    let out = board
        .repo
        .liza_env(&[("LIZA_STORE", "etcd://[::1/x")], &["status"]);
    let err = stderr(&out);
    assert!(err.contains("LIZA_STORE"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn an_etcd_that_does_not_answer_is_a_clear_error_and_changes_nothing() {
    let Some(mut board) = board() else { return };
    let before = board.repo.files();
    board.etcd.as_mut().unwrap().0.kill();
    // A command waits for etcd as it waits for the file store's lock, then gives up.
    let out = board
        .repo
        .liza_env(&[("LIZA_LOCK_TIMEOUT", "1")], &["note", "all", "lost?"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("cannot reach etcd"), "{err}");
    assert!(err.contains("start etcd"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(board.repo.files(), before);
    // A command started while etcd is down completes when it is back within the wait;
    // every acknowledged transition is there.
    let waiting = board
        .repo
        .command()
        .args(["note", "all", "patient"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    board.etcd.as_mut().unwrap().0.restart();
    assert_success(&waiting.wait_with_output().unwrap());
    assert_eq!(board.repo.revision(), 2);
    assert_success(&board.repo.liza(&["note", "all", "now"]));
    assert_eq!(board.repo.revision(), 3);
}

#[test]
fn etcd_history_is_compacted_to_the_revisions_the_journal_keeps_and_the_log_stays_whole() {
    let Some(board) = board() else { return };
    crate::common::team::configure(&board.repo, |c| {
        c.journal_keep = Some(liza::blackboard::model::JournalKeep {
            revisions: Some(5),
            ..Default::default()
        });
    });
    for i in 0..110 {
        assert_success(&board.repo.liza(&["note", "all", &format!("note {i}")]));
    }
    let last = board.repo.revision();
    assert_eq!(last, 112);
    let history = json(&board.repo.liza(&["--json", "history"]));
    let kept: Vec<u64> = history["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["revision"].as_u64().unwrap())
        .collect();
    // Compacted at revision 100 to the last five: 96..=112 readable, nothing older.
    assert_eq!(kept, (96..=last).collect::<Vec<_>>());
    let out = board.repo.liza(&["history", "--rev", "50"]);
    assert!(!out.status.success());
    // etcd itself refuses a read from before the compaction.
    let client = board.client().unwrap();
    let old = client.range(b"team/project/head", &[], 2).unwrap_err();
    assert!(old.is_compacted(), "{old}");
    // The log keeps every entry.
    assert_eq!(board.repo.log().len() as u64, last);
}

/// `liza doctor --json`'s check named `name`.
fn doctor_check(repo: &Repo, name: &str) -> serde_json::Value {
    let out = repo.liza(&["--json", "doctor"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    report["result"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no {name} check: {report}"))
}

#[test]
fn doctor_checks_the_members_the_prefix_the_leases_and_the_hosts_clocks() {
    let Some(board) = board() else { return };
    for name in ["etcd", "etcd prefix", "etcd leases", "clocks"] {
        assert_eq!(doctor_check(&board.repo, name)["status"], "ok", "{name}");
    }
    let client = board.client().unwrap();
    // Another program's key under the prefix; a record written with no lease; a host
    // whose clock runs 30 s ahead (its record ends 30 s after its etcd lease does).
    client.put(b"team/project/other-tool/x", b"1", 0).unwrap();
    let now = liza::blackboard::Timestamp::now();
    let record = |lease_expires: liza::blackboard::Timestamp| {
        serde_json::json!({
            "generation": "0123456789abcdef",
            "heartbeat": now.unix(),
            "lease_expires": lease_expires.unix(),
            "host": "host-fast",
        })
        .to_string()
    };
    client
        .put(
            b"team/project/live/coder-8.0123456789abcdef",
            record(now).as_bytes(),
            0,
        )
        .unwrap();
    let lease = client.grant_lease(60).unwrap();
    let ahead = liza::blackboard::Timestamp::from_unix(now.unix() + 90);
    client
        .put(
            b"team/project/live/coder-9.0123456789abcdef",
            record(ahead).as_bytes(),
            lease,
        )
        .unwrap();
    let prefix = doctor_check(&board.repo, "etcd prefix");
    assert_eq!(prefix["status"], "warn");
    assert!(
        prefix["detail"]
            .as_str()
            .unwrap()
            .contains("team/project/other-tool/x"),
        "{prefix}"
    );
    let leases = doctor_check(&board.repo, "etcd leases");
    assert_eq!(leases["status"], "warn");
    assert!(
        leases["detail"].as_str().unwrap().contains("coder-8"),
        "{leases}"
    );
    let clocks = doctor_check(&board.repo, "clocks");
    assert_eq!(clocks["status"], "warn", "{clocks}");
    let detail = clocks["detail"].as_str().unwrap();
    assert!(detail.contains("host-fast is 3"), "{detail}");
    assert!(detail.contains("ahead of this host"), "{detail}");
    // A member that does not answer is named.
    std::fs::write(
        board.repo.liza_dir().join("store"),
        format!(
            "etcd://{},127.0.0.1:9/team/project\n",
            board.etcd.as_ref().unwrap().0.endpoint()
        ),
    )
    .unwrap();
    let members = doctor_check(&board.repo, "etcd");
    assert_eq!(members["status"], "warn");
    assert!(
        members["detail"].as_str().unwrap().contains("127.0.0.1:9"),
        "{members}"
    );
}
