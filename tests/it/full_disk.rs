//! A full disk (specs/blackboard.md *The store*): `.liza/` on a small real tmpfs, filled
//! to the last page, then `note`, `add-task`, `claim-task` and `merge`. Each fails with a
//! clear error and changes nothing — no empty or partial journal entry, state.yaml, the
//! log and the refs byte-identical — and `history`, `validate` and `doctor` agree on every
//! revision; with space again, each works. Mounting needs root (CI runs as root): where it
//! is not allowed the test says so and is skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::supervision::task_of;
use crate::common::team::*;
use crate::common::*;

/// A tmpfs mounted on a directory for the test's life.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` on `dir` (which it empties first, keeping its files).
    fn over(dir: &Path, size: &str) -> Option<Tmpfs> {
        let keep = tempfile::tempdir().unwrap();
        copy_dir(dir, keep.path());
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .ok()?;
        if !mounted.status.success() {
            eprintln!(
                "skipped: cannot mount a tmpfs here ({}); CI runs as root",
                String::from_utf8_lossy(&mounted.stderr).trim()
            );
            return None;
        }
        copy_dir(keep.path(), dir);
        Some(Tmpfs {
            dir: dir.to_path_buf(),
        })
    }

    /// Fills it to the last byte: a file grown until the disk refuses.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.dir.join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 4096];
        while file.write_all(&chunk).is_ok() {}
        while file.write_all(&[0]).is_ok() {}
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", from.display()))
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Each file of the blackboard, the journal, the worktrees and the refs: its size and a
/// hash of its bytes (a difference is named without printing the files).
fn fingerprint(repo: &Repo) -> std::collections::BTreeMap<String, (usize, u64)> {
    use std::hash::{Hash, Hasher};
    repo.files()
        .into_iter()
        .map(|(name, bytes)| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            bytes.hash(&mut h);
            (name, (bytes.len(), h.finish()))
        })
        .collect()
}

/// Every kept revision: `history` lists it, `history --rev` prints it, nothing damaged.
fn revisions_agree(repo: &Repo) {
    let history = json(&repo.liza(&["--json", "history"]));
    let revisions = history["result"].as_array().unwrap().clone();
    assert!(!revisions.is_empty());
    for r in &revisions {
        assert!(r.get("damaged").is_none(), "{r}");
        let n = r["revision"].as_u64().unwrap().to_string();
        let out = repo.liza(&["history", "--rev", &n]);
        assert_success(&out);
        assert!(!out.stdout.is_empty(), "revision {n} prints nothing");
    }
    let journal = repo.liza_dir().join("journal");
    for entry in std::fs::read_dir(&journal).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        assert!(!name.starts_with('.'), "a leftover in the journal: {name}");
        let size: u64 = name.split('-').nth(1).unwrap().parse().unwrap();
        assert_eq!(entry.metadata().unwrap().len(), size, "{name} is not whole");
    }
    assert_success(&repo.liza(&["validate"]));
    let check = doctor_check(repo, "journal");
    assert_eq!(check["status"], "ok", "{check}");
}

#[test]
fn a_full_disk_fails_each_write_cleanly_and_loses_nothing() {
    let repo = Repo::initialized();
    approve(&repo, "t-1", "t-1.txt");
    register(&repo, "coder-2");
    add(&repo, "t-2", "");
    let Some(tmpfs) = Tmpfs::over(&repo.liza_dir(), "2m") else {
        return;
    };
    let filler = tmpfs.fill();
    let before = fingerprint(&repo);
    let attempts: [&[&str]; 4] = [
        &["note", "all", "the disk is full"],
        &[
            "add-task",
            "--id",
            "t-3",
            "--desc",
            "More of the flag",
            "--spec",
            SPEC,
            "--done",
            "it prints",
            "--scope",
            "the report",
        ],
        &["claim-task", "t-2", "coder-2"],
        &["merge", "t-1"],
    ];
    for args in attempts {
        let out = repo.liza(args);
        assert!(!out.status.success(), "{args:?} succeeded on a full disk");
        let said = stderr(&out);
        assert!(said.contains("No space left on device"), "{args:?}: {said}");
        assert!(!said.contains("panicked"), "{args:?}: {said}");
        assert_eq!(
            before,
            fingerprint(&repo),
            "{args:?} changed files on a full disk"
        );
    }
    std::fs::remove_file(&filler).unwrap();
    revisions_agree(&repo);
    assert_success(&repo.liza(&["note", "all", "space again"]));
    assert_success(&repo.liza(&["claim-task", "t-2", "coder-2"]));
    assert_success(&repo.liza(&["merge", "t-1"]));
    assert_eq!(task_of(&repo, "t-1")["status"], "MERGED");
    revisions_agree(&repo);
}

/// An empty journal entry a liza before this one left on a full disk: `history` marks it,
/// `history --rev` says it is damaged with a non-zero exit, and `doctor` names it — all
/// three agree.
#[test]
fn a_damaged_journal_entry_is_said_alike_by_history_and_doctor() {
    let repo = Repo::initialized();
    assert_success(&repo.liza(&["note", "all", "one"]));
    let journal = repo.liza_dir().join("journal");
    let names = journal_names(&journal);
    let first = &names[0];
    let revision: u64 = first.split('-').next().unwrap().parse().unwrap();
    std::fs::write(journal.join(first), "").unwrap();
    let history = json(&repo.liza(&["--json", "history"]));
    let listed = history["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["revision"] == revision)
        .cloned()
        .unwrap();
    assert_eq!(listed["damaged"], true, "{listed}");
    let out = repo.liza(&["history", "--rev", &revision.to_string()]);
    assert!(!out.status.success(), "printed {:?}", stdout(&out));
    assert!(stderr(&out).contains("damaged"), "{}", stderr(&out));
    let check = doctor_check(&repo, "journal");
    assert_eq!(check["status"], "warn", "{check}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("r{revision}")),
        "{check}"
    );
}

/// The journal's last entry does not decode (a disk error) while state.yaml holds a
/// person's edit: the command is refused naming that entry, with a hint that moves it
/// aside — never one to copy the damaged entry over state.yaml — and every file is left
/// as it was.
#[test]
fn an_undecodable_last_journal_entry_is_named_and_never_offered_as_the_restore() {
    let repo = Repo::initialized();
    assert_success(&repo.liza(&["note", "all", "one"]));
    let journal = repo.liza_dir().join("journal");
    let names = journal_names(&journal);
    // Named as liza names what it wrote (revision, length, hash): a whole entry, whose
    // text does not decode.
    let damaged = "tasks: [unclosed\n";
    let revision = names.last().unwrap().split('-').next().unwrap().to_owned();
    std::fs::remove_file(journal.join(names.last().unwrap())).unwrap();
    let last = format!(
        "{revision}-{}-{}.yaml",
        damaged.len(),
        blake3::hash(damaged.as_bytes()).to_hex()
    );
    std::fs::write(journal.join(&last), damaged).unwrap();
    let state = repo.liza_dir().join("state.yaml");
    let mut text = std::fs::read_to_string(&state).unwrap();
    text.push_str("# a person's line\n");
    std::fs::write(&state, text).unwrap();
    let before = repo.files();

    let out = repo.liza(&["note", "all", "two"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    let said = stderr(&out);
    assert!(said.contains(&last), "{said}");
    assert!(said.contains("move it aside"), "{said}");
    assert!(
        !said.contains(&format!("cp .liza/journal/{last}")),
        "{said}"
    );
    assert_eq!(repo.files(), before);
}

/// The journal's entries, oldest first.
fn journal_names(journal: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(journal)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}
