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
    // Another project in the same etcd, keeping the default 200 revisions.
    let neighbour = Repo::new();
    let (_, address) = board.etcd.as_ref().unwrap();
    let theirs = address.replace("/team/project", "/team/neighbour");
    assert_success(&neighbour.liza(&["init", "Another goal", "--store", &theirs]));
    for i in 0..3 {
        assert_success(&neighbour.liza(&["note", "all", &format!("n{i}")]));
    }
    crate::common::team::configure(&board.repo, |c| {
        c.journal_keep = Some(liza::blackboard::model::JournalKeep {
            revisions: Some(5),
            ..Default::default()
        });
    });
    for i in 0..110 {
        assert_success(&board.repo.liza(&["note", "all", &format!("note {i}")]));
    }
    let kept = |repo: &Repo| -> Vec<u64> {
        json(&repo.liza(&["--json", "history"]))["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["revision"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(board.repo.revision(), 112);
    // Compaction is etcd-wide: it stopped at the neighbour's floor, whose history is
    // whole (this project's from just after the neighbour started, more than it keeps).
    assert_eq!(kept(&neighbour), [1, 2, 3, 4]);
    let ours = kept(&board.repo);
    assert!(ours[0] > 1 && ours[0] <= 96, "{ours:?}");
    assert_eq!(ours.last(), Some(&112));
    // Once the neighbour needs less (its floor moves past), history goes up to this
    // project's own floor: compacted at revision 150 to the last five, 146..=162.
    let client = board.client().unwrap();
    client
        .put(b"liza-floors/team/neighbour", b"999999", 0)
        .unwrap();
    for i in 0..50 {
        assert_success(&board.repo.liza(&["note", "all", &format!("more {i}")]));
    }
    assert_eq!(kept(&board.repo), (146..=162).collect::<Vec<_>>());
    assert!(
        !board
            .repo
            .liza(&["history", "--rev", "50"])
            .status
            .success()
    );
    // etcd itself refuses a read from before the compaction.
    let old = client.range(b"team/project/head", &[], 2).unwrap_err();
    assert!(old.is_compacted(), "{old}");
    // The log keeps every entry.
    assert_eq!(board.repo.log().len(), 162);
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

#[test]
fn a_commit_applied_after_its_sender_gave_up_on_it_is_applied_once() {
    let Some(board) = board() else { return };
    let member = board.etcd.as_ref().unwrap().0.endpoint();
    let proxy = crate::common::etcd::HoldingProxy::start(&member);
    let through = format!("etcd://{}/team/project", proxy.endpoint);
    let out = board
        .repo
        .liza(&["--store", &through, "note", "all", "only once"]);
    assert_success(&out);
    let notes: Vec<_> = board
        .repo
        .log()
        .into_iter()
        .filter(|e| e["action"] == "human_note")
        .collect();
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert_eq!(board.repo.revision(), 2);
    assert!(stdout(&out).contains("revision 2"), "{}", stdout(&out));
}

#[test]
fn a_store_named_by_an_override_never_writes_into_this_checkout() {
    let Some(board) = board() else { return };
    let (_, address) = board.etcd.as_ref().unwrap();
    // A file-store checkout, read through the override: its own state.yaml is left alone.
    let files = Repo::initialized();
    let before = files.files();
    let out = files.liza_env(&[("LIZA_STORE", address)], &["status"]);
    assert_success(&out);
    assert!(
        stdout(&out).contains("Add a --json flag"),
        "{}",
        stdout(&out)
    );
    assert_eq!(files.files(), before);
    assert_eq!(files.rejected(), []);
    // An etcd checkout of another project, read with --store: its mirror stays its own.
    let other = Repo::new();
    let theirs = address.replace("/team/project", "/team/other");
    assert_success(&other.liza(&["init", "Another goal", "--store", &theirs]));
    assert_success(&other.liza(&["--store", address, "status"]));
    assert!(other.state_text().contains("Another goal"));
    assert!(!other.state_text().contains("Add a --json flag"));
}

#[test]
fn a_deleted_mirror_is_written_again_by_the_next_command() {
    let Some(board) = board() else { return };
    std::fs::remove_file(board.repo.state_path()).unwrap();
    assert_success(&board.repo.liza(&["status"]));
    assert!(board.repo.state_text().starts_with("# Read-only mirror"));
    assert_success(&board.repo.liza(&["validate"]));
}

/// A command leaves the mirror to a writer of its checkout that waits for the turn: that
/// writer starts from the command's commit and brings the mirror up to its own as it
/// ends, committed or refused (specs/shared-store.md *Hand edits*). The last of a row
/// writes it; a commit made without the turn is never left.
#[test]
fn a_command_leaves_the_mirror_to_the_writer_after_it_and_the_last_one_writes_it() {
    let Some(board) = board() else { return };
    assert_success(&board.repo.liza(&["note", "all", "first"]));
    let mirrored = board.repo.state_text();
    assert!(mirrored.contains("first"), "{mirrored}");
    let dir = board.repo.liza_dir();
    let open = |name: &str| {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(name))
            .unwrap()
    };
    // Another process's writer announced as waiting for the turn.
    let waiting = open("etcd.wait");
    waiting.lock_shared().unwrap();
    assert_success(&board.repo.liza(&["note", "all", "second"]));
    assert_eq!(
        board.repo.state_text(),
        mirrored,
        "the mirror was written though a writer waits for the turn"
    );
    drop(waiting);
    // The writer after it, refused after it caught up, brings the mirror up to what it
    // read as it ends.
    let refused = board.repo.liza(&["note", "t-none", "test"]);
    assert!(stderr(&refused).contains("t-none"), "{}", stderr(&refused));
    assert!(!refused.status.success());
    assert!(board.repo.state_text().contains("second"));
    // A command that commits without the turn (another process kept it past the
    // command's wait; etcd guards the commit) writes the mirror itself, a writer waiting
    // or not: what it committed is not in etcd.known, where the next writer starts.
    let turn = open("etcd.lock");
    turn.lock().unwrap();
    let waiting = open("etcd.wait");
    waiting.lock_shared().unwrap();
    let out = board
        .repo
        .liza_env(&[("LIZA_LOCK_TIMEOUT", "0.2")], &["note", "all", "third"]);
    assert_success(&out);
    assert!(
        board.repo.state_text().contains("third"),
        "a commit made without the turn was left to the next writer"
    );
    drop((turn, waiting));
    // The last writer of a row brings it up to date.
    let mirrored = board.repo.state_text();
    let waiting = open("etcd.wait");
    waiting.lock_shared().unwrap();
    assert_success(&board.repo.liza(&["note", "all", "fourth"]));
    assert_eq!(board.repo.state_text(), mirrored);
    drop(waiting);
    assert_success(&board.repo.liza(&["note", "all", "fifth"]));
    let text = board.repo.state_text();
    for note in ["second", "third", "fourth", "fifth"] {
        assert!(text.contains(note), "{note} is not in the mirror:\n{text}");
    }
    assert_success(&board.repo.liza(&["validate"]));
}

#[test]
fn a_head_whose_revision_liza_cannot_have_written_is_refused_and_nothing_is_written() {
    let Some(board) = board() else { return };
    let client = board.client().unwrap();
    let head = client.get(b"team/project/head").unwrap().unwrap();
    let text = String::from_utf8(head.value).unwrap();
    for bad in ["-5", "9223372036854775807"] {
        let hostile = text.replacen("\"revision\":1", &format!("\"revision\":{bad}"), 1);
        assert_ne!(hostile, text);
        client
            .put(b"team/project/head", hostile.as_bytes(), 0)
            .unwrap();
        let before = board.everything();
        let out = board.repo.liza(&["note", "all", "x"]);
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(err.contains("team/project/head"), "{err}");
        assert!(err.contains("not one liza writes"), "{err}");
        assert_eq!(board.everything(), before);
    }
}

#[test]
fn a_log_key_written_by_another_tool_costs_only_itself() {
    let Some(board) = board() else { return };
    assert_success(&board.repo.liza(&["note", "all", "a"]));
    let client = board.client().unwrap();
    client
        .put(
            b"team/project/log/000000000002/001",
            b"junk-without-newline",
            0,
        )
        .unwrap();
    assert_success(&board.repo.liza(&["note", "all", "b"]));
    let actions: Vec<String> = board
        .repo
        .log()
        .iter()
        .map(|e| e["action"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(actions, ["init", "human_note", "human_note"]);
}

#[test]
fn init_over_an_existing_project_points_to_liza_join() {
    let Some(board) = board() else { return };
    let (_, address) = board.etcd.as_ref().unwrap();
    let other = Repo::new();
    let out = other.liza(&["init", "Again", "--store", address]);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains(&format!("liza join {address}")), "{err}");
    assert!(!other.liza_dir().exists());
}

/// What liza keeps beside the blackboard is in etcd, where another host reads it: the
/// spec text a task was finalized against (a reviewer on host B sees what changed since),
/// and documents larger than one etcd request, kept in chunks and replaced whole.
#[test]
fn spec_texts_and_documents_kept_on_one_host_are_read_on_another() {
    let Some(board) = board() else { return };
    let (_, address) = board.etcd.as_ref().unwrap();
    board.add_task("t-1", "Add the flag", true);
    assert!(!board.repo.liza_dir().join("specs").exists());
    let other = second_checkout(&board);
    assert_success(&other.liza(&["join", address]));
    let old = std::fs::read_to_string(other.path().join("specs/vision.md")).unwrap();
    let first = old
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap()
        .to_owned();
    std::fs::write(other.path().join("specs/vision.md"), "# A new vision\n").unwrap();
    let project = liza::ops::Project::discover(other.path()).unwrap();
    let state = project.store.snapshot().unwrap().state;
    let task = state
        .task(&liza::blackboard::TaskId::parse("t-1").unwrap())
        .unwrap()
        .clone();
    let then = task.spec_hash.clone().expect("finalized without a blob");
    let text = liza::ops::spec_change_text(&project, &task, &then, "now");
    assert!(text.contains(&format!("- {first}")), "{text}");
    assert!(text.contains("+ # A new vision"), "{text}");

    // 1.3 MB, past etcd's request limit, read back on the other host; then replaced by a
    // short text, whose one chunk is all that is left.
    let here = liza::ops::open_store(board.repo.path()).unwrap();
    let there = &project.store;
    let document = liza::blackboard::store::Document::Archive { sprint: "big" };
    let big: Vec<u8> = (0..1_300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    here.keep_document(&document, &big).unwrap();
    assert_eq!(
        there.document(&document).unwrap().as_deref(),
        Some(&big[..])
    );
    here.keep_document(&document, b"short\n").unwrap();
    assert_eq!(
        there.document(&document).unwrap().as_deref(),
        Some(&b"short\n"[..])
    );
    let client = board.client().unwrap();
    let address: liza::blackboard::etcd::StoreAddress = address.parse().unwrap();
    let prefix = address.key("doc/archive/big/");
    let end = liza::blackboard::etcd::prefix_end(&prefix);
    let chunks = client.keys(&prefix, &end).unwrap();
    assert_eq!(chunks.len(), 1, "chunks of the replaced text are left");
}

/// A transition that would write more keys than an etcd txn may (128 by default) is
/// refused before anything is sent, saying what to do; nothing in etcd or the checkout
/// changes. Archiving as many tasks moves them 100 at a time.
#[test]
fn a_transition_over_the_keys_a_txn_may_write_is_refused_and_archiving_goes_in_steps() {
    let Some(board) = board() else { return };
    let plan = |ids: std::ops::RangeInclusive<u32>| -> String {
        ids.map(|i| {
            format!(
                "- {{id: t-{i}, desc: Task {i}, spec: specs/vision.md, done: it works, scope: src}}\n"
            )
        })
        .collect()
    };
    std::fs::write(board.repo.path().join("tasks.yaml"), plan(1..=130)).unwrap();
    let before = board.everything();
    let out = board.repo.liza(&["add-tasks", "--file", "tasks.yaml"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("131 keys") || err.contains("keys to etcd"),
        "{err}"
    );
    assert!(err.contains("LIZA_ETCD_MAX_TXN_OPS"), "{err}");
    std::fs::remove_file(board.repo.path().join("tasks.yaml")).unwrap();
    assert_eq!(
        board.everything(),
        before,
        "a refused transition changed something"
    );
    // 130 tasks in steps the store takes, all abandoned: `sprint next` archives them.
    for (n, ids) in [1..=65, 66..=130].into_iter().enumerate() {
        let file = format!("tasks-{n}.yaml");
        std::fs::write(board.repo.path().join(&file), plan(ids)).unwrap();
        assert_success(&board.repo.liza(&["add-tasks", "--file", &file]));
    }
    for i in 1..=130 {
        let id = format!("t-{i}");
        assert_success(&board.repo.liza(&["abandon", &id, "--reason", "not needed"]));
    }
    let next = board.repo.liza(&["sprint", "next"]);
    assert_success(&next);
    let state = board.repo.state_json();
    assert_eq!(
        state["tasks"].as_array().map_or(0, Vec::len),
        0,
        "{}",
        stderr(&next)
    );
    let store = liza::ops::open_store(board.repo.path()).unwrap();
    let archive = store
        .document(&liza::blackboard::store::Document::Archive { sprint: "sprint-1" })
        .unwrap()
        .unwrap();
    let archive: liza::blackboard::model::Archive =
        liza::blackboard::document::decode_record(&archive).unwrap();
    assert_eq!(archive.tasks.0.len(), 130);
    let snapshot = store.snapshot().unwrap();
    assert_eq!(snapshot.state.archived.as_ref().map_or(0, |a| a.len()), 130);
}

/// `liza log` on etcd reads the log a page of keys at a time at one etcd revision: a log
/// of many more keys than a page is printed whole, once each and in key order, and
/// `--follow` goes on from where the pages ended (specs/operations.md *Commands*).
#[test]
fn liza_log_on_etcd_pages_through_a_long_log_in_order() {
    let Some(board) = board() else { return };
    let client = board.client().unwrap();
    const KEYS: usize = 700;
    for n in 0..KEYS {
        let key = format!("team/project/log/000000000001/x{n:020}-1-000");
        let line = format!(
            "- {{timestamp: 2026-11-27T17:00:00Z, agent: human, action: test_step, detail: step-{n:04}}}\n"
        );
        client.put(key.as_bytes(), line.as_bytes(), 0).unwrap();
    }
    let out = board.repo.liza(&["log"]);
    assert_success(&out);
    let steps: Vec<String> = stdout(&out)
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|w| w.starts_with("step-"))
        .map(str::to_owned)
        .collect();
    let expected: Vec<String> = (0..KEYS).map(|n| format!("step-{n:04}")).collect();
    assert_eq!(steps, expected);
    let mut follow = board
        .repo
        .command()
        .args(["log", "--follow"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(follow.stdout.take().unwrap());
    let mut line = String::new();
    use std::io::BufRead;
    for _ in 0..=KEYS {
        line.clear();
        lines.read_line(&mut line).unwrap();
    }
    assert!(line.contains("step-0699"), "{line}");
    assert_success(&board.repo.liza(&["note", "all", "after the pages"]));
    line.clear();
    lines.read_line(&mut line).unwrap();
    let _ = follow.kill();
    let _ = follow.wait();
    assert!(line.contains("after the pages"), "{line}");
}

/// A new process starts from what the checkout's last process read or wrote
/// (`.liza/etcd.known`): stale (another host wrote since), it still loses nothing —
/// the commit, guarded by "nothing changed since", brings back what changed; damaged or
/// another blackboard's, it is not used.
#[test]
fn a_process_starts_from_the_state_its_checkout_kept_and_a_stale_one_loses_nothing() {
    let Some(board) = board() else { return };
    let (_, address) = board.etcd.as_ref().unwrap();
    let known = board.repo.liza_dir().join("etcd.known");
    assert_success(&board.repo.liza(&["note", "all", "a1"]));
    assert!(known.exists(), "the process kept what it wrote");
    let start = board.repo.revision();
    let other = second_checkout(&board);
    assert_success(&other.liza(&["join", address]));
    assert_success(&other.liza(&["note", "all", "b1"]));
    // A's kept state is a revision behind: its next process still commits once, on top.
    assert_success(&board.repo.liza(&["note", "all", "a2"]));
    assert_success(&other.liza(&["note", "all", "b2"]));
    assert_success(&board.repo.liza(&["note", "all", "a3"]));
    assert_eq!(board.repo.revision(), start + 4);
    let notes: Vec<String> = crate::common::team::model(&board.repo)["human_notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["message"].as_str().unwrap().to_owned())
        .collect();
    for n in ["a1", "b1", "a2", "b2", "a3"] {
        assert!(notes.contains(&n.to_owned()), "{n} missing: {notes:?}");
    }
    // A refusal on a kept state is checked again on the blackboard as it is: t-9 exists
    // only since A's last process, and a note for it is not refused.
    crate::common::board::add_task_in(&other, "t-9", "Added on B", false);
    assert_success(&board.repo.liza(&["note", "t-9", "for the task B added"]));
    assert_eq!(board.repo.revision(), start + 6);
    // What a process reads from its kept state is what etcd holds.
    assert_eq!(
        json(&board.repo.liza(&["--json", "status"]))["result"]["revision"],
        json(&other.liza(&["--json", "status"]))["result"]["revision"]
    );
    // A damaged file is not used (and is written whole again).
    let mut bytes = std::fs::read(&known).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    std::fs::write(&known, &bytes).unwrap();
    assert_success(&board.repo.liza(&["note", "all", "a4"]));
    assert_eq!(board.repo.revision(), start + 7);
    assert_ne!(std::fs::read(&known).unwrap(), bytes, "written whole again");
    // Another blackboard's is not used either.
    let text = std::fs::read_to_string(&known).unwrap_or_default();
    std::fs::write(
        &known,
        text.replacen(address.as_str(), "etcd://127.0.0.1:1/elsewhere", 1),
    )
    .unwrap();
    assert_success(&board.repo.liza(&["note", "all", "a5"]));
    assert_eq!(board.repo.revision(), start + 8);
}

/// The processes of one checkout take turns (`.liza/etcd.lock`, shared by a process's
/// own writers): 4 processes × 10 notes at once lose nothing and make exactly 40 revisions.
#[test]
fn processes_of_one_checkout_writing_at_once_take_turns_and_lose_nothing() {
    let Some(board) = board() else { return };
    let start = board.repo.revision();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let repo = board.repo.path().to_path_buf();
            std::thread::spawn(move || {
                for i in 0..10 {
                    let out = std::process::Command::new(env!("CARGO_BIN_EXE_liza"))
                        .args(["note", "all", &format!("w{w}-{i}")])
                        .current_dir(&repo)
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(board.repo.revision(), start + 40);
    assert!(board.repo.liza_dir().join("etcd.lock").exists());
}

/// A writer whose turn it is hands the state it sends to the checkout's next writer
/// before etcd answers (`etcd.known`, pending) and lets the turn go: the next writer does
/// not wait for that answer. A commit handed over that never lands is seen nowhere: the
/// next writer's commit built on it is refused and runs again on what etcd holds, and a
/// read never takes what changed since it for the blackboard.
#[test]
fn a_writer_hands_its_commit_over_at_the_send_and_one_that_never_lands_is_never_seen() {
    let Some(board) = board() else { return };
    let (_, address) = board.etcd.as_ref().unwrap();
    board.add_task("t-1", "As planned", false);
    let other = second_checkout(&board);
    assert_success(&other.liza(&["join", address]));
    // The checkout's last commit is etcd's last write: B, reading after A stopped, makes
    // the same blackboard revision at the very etcd revision A announced.
    assert_success(&board.repo.liza(&["note", "all", "before A"]));
    let start = board.repo.revision();
    // Read as a command reads the whole blackboard: from what the checkout kept.
    let description = |repo: &Repo| {
        crate::common::team::model(repo)["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == "t-1")
            .unwrap()["description"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let gate = tempfile::tempdir().unwrap();
    let open = gate.path().join("open");
    let liza = |env: &[(&str, String)], args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_liza"));
        cmd.args(args)
            .current_dir(board.repo.path())
            .env("LIZA_LOCK_TIMEOUT", "600")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.spawn().unwrap()
    };
    // A hands its change over, then stops before sending it.
    let failpoint = format!("etcd-handed-over:until={}", open.display());
    let mut a = liza(
        &[("LIZA_FAILPOINT", failpoint)],
        &["amend-task", "t-1", "--desc", "From A"],
    );
    let waiting = gate.path().join("open.waiting");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !waiting.exists() {
        assert!(std::time::Instant::now() < deadline, "A never handed over");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // B has the turn at once (it would wait 600 s for a turn A kept to its answer),
    // builds on A's change, is refused (A is not in etcd), and commits on what is.
    let mut b = liza(&[], &["note", "all", "from B"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let b_status = loop {
        if let Some(status) = b.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = (a.kill(), b.kill());
            panic!("the next writer waited for the turn of a writer that had sent its commit");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(b_status.success(), "B failed");
    assert_eq!(board.repo.revision(), start + 1);
    assert_eq!(description(&board.repo), "As planned");
    assert!(
        !board.repo.state_text().contains("From A"),
        "the mirror shows A's change"
    );
    // The checkout's next writer starts from B's commit, not from A's change.
    assert_success(&board.repo.liza(&["note", "all", "after B"]));
    assert!(
        !board.repo.state_text().contains("From A"),
        "the writer after B committed A's change"
    );
    // A sends, is refused (B came first), and runs again on top of B.
    std::fs::write(&open, "").unwrap();
    assert!(a.wait().unwrap().success(), "A failed");
    assert_eq!(board.repo.revision(), start + 3);
    assert_eq!(description(&board.repo), "From A");
    // C dies between its hand-over and its send: its change is never read as the
    // blackboard — not by a read, nor by the next writer, nor in the mirror.
    let c = board.repo.liza_env(
        &[("LIZA_FAILPOINT", "etcd-handed-over")],
        &["amend-task", "t-1", "--desc", "From C"],
    );
    assert!(!c.status.success());
    assert_eq!(description(&board.repo), "From A");
    assert_success(&board.repo.liza(&["note", "all", "after C"]));
    assert_success(&board.repo.liza(&["note", "all", "after that"]));
    assert_eq!(board.repo.revision(), start + 5);
    assert_eq!(description(&board.repo), "From A");
    assert!(
        !board.repo.state_text().contains("From C"),
        "the mirror shows C's change"
    );
    // What this checkout reads is what etcd holds.
    assert_eq!(description(&other), "From A");
    assert_eq!(other.revision(), start + 5);
    let notes = crate::common::team::model(&other)["human_notes"].to_string();
    assert!(
        notes.contains("from B") && notes.contains("after C"),
        "{notes}"
    );
    assert_success(&board.repo.liza(&["validate"]));
}

/// The head of the blackboard in `board`'s etcd, and its section keys.
fn head_and_sections(board: &Board) -> (serde_json::Value, Vec<liza::blackboard::etcd::KeyValue>) {
    let client = board.client().unwrap();
    let head = client.get(b"team/project/head").unwrap().unwrap();
    let head = serde_json::from_slice(&head.value).unwrap();
    let (sections, _) = client
        .range(b"team/project/head/", b"team/project/head0", 0)
        .unwrap();
    (head, sections)
}

/// Rewrites the blackboard in `board`'s etcd as a liza of layout 1 laid it out: the
/// sections and the notes' ids back in the head, no section keys.
fn lay_out_as_layout_1(board: &Board) {
    use liza::blackboard::etcd::Change;
    let client = board.client().unwrap();
    let (head, sections) = head_and_sections(board);
    assert_eq!(head["layout"], 2, "{head}");
    assert_eq!(sections.len(), 13, "one key per section");
    // The state's JSON, each section's bytes as etcd holds them (a JSON map would sort
    // the agents by id).
    let mut state = format!(
        r#"{{"version":{},"revision":{},"tasks":[]"#,
        head["version"], head["revision"]
    );
    for kv in &sections {
        let name = String::from_utf8_lossy(&kv.key["team/project/head/".len()..]).into_owned();
        if name == "human_notes" && kv.value == b"null" {
            continue;
        }
        state.push_str(&format!(
            ",\"{name}\":{}",
            String::from_utf8_lossy(&kv.value)
        ));
    }
    state.push('}');
    let ids: Vec<String> = head["notes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|run| match run {
            serde_json::Value::Array(range) => (range[0].as_u64().unwrap()
                ..=range[1].as_u64().unwrap())
                .map(|n| format!("note-{n}"))
                .collect::<Vec<_>>(),
            id => vec![id.as_str().unwrap().to_owned()],
        })
        .collect();
    let old_head = format!(
        r#"{{"order":{},"notes":{},"state":{state}}}"#,
        head["order"],
        serde_json::to_string(&ids).unwrap()
    );
    let mut changes = vec![Change::Put {
        key: b"team/project/head".to_vec(),
        value: old_head.into_bytes(),
        lease: 0,
    }];
    changes.extend(sections.into_iter().map(|kv| Change::Delete(kv.key)));
    client.txn(&[], &changes).unwrap();
}

#[test]
fn a_blackboard_laid_out_by_an_older_liza_is_upgraded_by_the_first_read_and_loses_nothing() {
    let Some(board) = board() else { return };
    board.add_task("t-1", "The report's JSON output", true);
    for text in ["first", "second", "third"] {
        assert_success(&board.repo.liza(&["note", "all", text]));
    }
    let revision = board.repo.revision();
    // What `status --json` shows, but the tasks' ages (seconds go by between the reads).
    let shown = |repo: &Repo| {
        let mut shown = json(&repo.liza(&["--json", "status"]))["result"].clone();
        for task in shown["tasks"].as_array_mut().unwrap() {
            task.as_object_mut().unwrap().remove("age_s");
        }
        shown
    };
    let before = shown(&board.repo);
    lay_out_as_layout_1(&board);
    // A checkout that never ran this liza: no kept state to start from.
    let other = second_checkout(&board);
    let (_, address) = board.etcd.as_ref().unwrap();
    let joined = other.liza(&["join", address]);
    assert_success(&joined);
    // The person is told: an older liza can no longer use the blackboard.
    let told = String::from_utf8_lossy(&joined.stderr);
    assert!(
        told.contains("upgraded the blackboard in etcd to layout 2"),
        "{told}"
    );
    // Read as it was, upgraded by that read: the same state at the same revision, the
    // head of layout 2 and every section a key again.
    assert_eq!(shown(&other), before);
    assert_eq!(other.revision(), revision);
    let (head, sections) = head_and_sections(&board);
    assert_eq!(head["layout"], 2, "{head}");
    assert_eq!(head["notes"], serde_json::json!([[1, 3]]), "{head}");
    assert_eq!(sections.len(), 13);
    // Both checkouts write on it, and nothing of before is lost.
    assert_success(&board.repo.liza(&["note", "all", "fourth"]));
    assert_success(&other.liza(&["note", "all", "fifth"]));
    assert_eq!(board.repo.revision(), revision + 2);
    let text = other.state_text();
    for note in ["first", "second", "third", "fourth", "fifth"] {
        assert!(text.contains(note), "{note} lost:\n{text}");
    }
    assert!(text.contains("The report's JSON output"), "{text}");
}

/// An older liza that lays the head out as layout 1 again right after an upgrade would
/// have a read upgrade and read again without end: the read upgrades once, then says
/// what is going on — and writes nothing more.
#[test]
fn a_head_laid_out_as_layout_1_again_at_once_is_refused_not_upgraded_without_end() {
    let Some(board) = board() else { return };
    assert_success(&board.repo.liza(&["note", "all", "first"]));
    lay_out_as_layout_1(&board);
    let client = board.client().unwrap();
    let old_head = client.get(b"team/project/head").unwrap().unwrap().value;
    let other = second_checkout(&board);
    let (_, address) = board.etcd.as_ref().unwrap();
    let gate = other.path().join("upgrade-gate");
    let reader = other
        .command()
        .env(
            "LIZA_FAILPOINT",
            format!("etcd-upgraded:until={}", gate.display()),
        )
        .args(["join", address])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waiting = other.path().join("upgrade-gate.waiting");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !waiting.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the read never upgraded"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Upgraded: an older liza writes its head again, as it last read it.
    let upgraded = client.get(b"team/project/head").unwrap().unwrap().value;
    assert!(
        upgraded.starts_with(br#"{"layout":2"#),
        "{}",
        String::from_utf8_lossy(&upgraded)
    );
    client.put(b"team/project/head", &old_head, 0).unwrap();
    let before = client
        .range(b"team/project/", b"team/project0", 0)
        .unwrap()
        .0;
    std::fs::write(&gate, b"").unwrap();
    let out = reader.wait_with_output().unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("laid out by an older liza again") && said.contains("upgrade every liza"),
        "{said}"
    );
    // Nothing was written after the one upgrade.
    let after = client
        .range(b"team/project/", b"team/project0", 0)
        .unwrap()
        .0;
    assert_eq!(after, before);
}

/// A head put back in layout 1 by hand under a checkout that kept a state of layout 2:
/// the checkout's next commit is refused (the head changed), and what came back with
/// the refusal is no base for a commit that writes only what changed — the commit reads,
/// upgrades, and then writes: no section is lost.
#[test]
fn a_head_put_back_in_layout_1_under_a_kept_state_is_upgraded_before_the_next_commit() {
    let Some(board) = board() else { return };
    for text in ["first", "second"] {
        assert_success(&board.repo.liza(&["note", "all", text]));
    }
    let revision = board.repo.revision();
    lay_out_as_layout_1(&board);
    // This checkout starts from what it kept (layout 2, before the rollback).
    assert_success(&board.repo.liza(&["note", "all", "after the rollback"]));
    let (head, sections) = head_and_sections(&board);
    assert_eq!(head["layout"], 2, "{head}");
    assert_eq!(sections.len(), 13, "every section a key again");
    // Another checkout, from nothing kept, reads it whole.
    let other = second_checkout(&board);
    let (_, address) = board.etcd.as_ref().unwrap();
    assert_success(&other.liza(&["join", address]));
    assert_eq!(other.revision(), revision + 1);
    let text = other.state_text();
    for note in ["first", "second", "after the rollback"] {
        assert!(text.contains(note), "{note} lost:\n{text}");
    }
}
