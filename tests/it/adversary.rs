//! The attacks of an adversarial review (issue 21), each written as the attack itself:
//! hostile hand edits, hostile agents and odd arguments, asserting the safe outcome.

use crate::common::*;

fn note(repo: &Repo, text: &str) {
    assert_success(&repo.liza(&["note", "all", text]));
}

/// A 2–3 KB hand edit whose nested aliases reach long strings: accepted before, it grew
/// state.yaml to megabytes and then every write failed. Now it is set aside like any
/// invalid edit, the last good revision stays and goes on, and doctor names it.
#[test]
fn an_alias_bomb_hand_edit_is_set_aside_and_the_blackboard_goes_on() {
    let repo = Repo::initialized();
    note(&repo, "one");
    let good = repo.state_text();
    let mut bomb = good.clone();
    bomb.push_str(&format!("x-bomb:\n  s0: &s0 {}\n", "x".repeat(1000)));
    for i in 1..6 {
        let p = i - 1;
        let refs = vec![format!("*s{p}"); 10].join(", ");
        bomb.push_str(&format!("  s{i}: &s{i} [{refs}]\n"));
    }
    assert!(bomb.len() - good.len() < 3000);
    std::fs::write(repo.state_path(), &bomb).unwrap();

    let doctor = repo.liza(&["doctor"]);
    let said = format!("{}{}", stdout(&doctor), stderr(&doctor));
    assert!(!doctor.status.success(), "{said}");
    assert!(said.contains("alias bomb"), "{said}");

    assert_success(&repo.liza(&["note", "all", "two"]));
    let kept = repo.rejected();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].0, bomb);
    assert!(kept[0].1.contains("alias bomb"), "{}", kept[0].1);
    let now = repo.state_text();
    assert!(
        now.len() < good.len() + 1000,
        "state.yaml grew to {}",
        now.len()
    );
    assert!(now.contains("message: two"));
    assert!(!now.contains("x-bomb"));
    // Every journal entry is a small, valid revision.
    for entry in std::fs::read_dir(repo.liza_dir().join("journal")).unwrap() {
        let len = entry.unwrap().metadata().unwrap().len();
        assert!(len < 64 * 1024, "a journal entry of {len} bytes");
    }
    assert_success(&repo.liza(&["validate"]));
}

/// A change that would write a state.yaml liza cannot read back (over 64 MB, or one text
/// over the parser's 8 MiB) is refused before it replaces the last good revision.
#[test]
fn a_change_liza_could_not_read_back_is_refused_and_nothing_moves() {
    let repo = Repo::initialized();
    let before = repo.files();
    let store = liza::ops::open_store(repo.path()).unwrap();
    for size in [9 << 20, 65 << 20] {
        let result = store.transact(&liza::blackboard::Actor::Human, |tx| {
            tx.state.goal.description = "x".repeat(size);
            tx.log_named("test_huge");
            Ok::<_, ()>(())
        });
        let Err(err) = result else {
            panic!("a {size}-byte goal was committed");
        };
        let text = match err {
            liza::blackboard::TxError::Store(e) => e.to_string(),
            liza::blackboard::TxError::Refused(()) => panic!("refused by the change"),
        };
        assert!(text.starts_with("refused"), "{text}");
        assert_eq!(repo.files(), before, "{size}");
    }
    assert_success(&repo.liza(&["validate"]));
}

/// A hostile hand edit: a fragment of YAML (or bytes) that attacks the parser.
#[derive(Debug, Clone)]
enum Hostile {
    /// `levels` of anchors, each a list of `fan` aliases of the one before, over a string.
    Aliases {
        levels: usize,
        fan: usize,
        leaf: usize,
    },
    /// `depth` nested flow collections, closed or not.
    Nesting {
        depth: usize,
        maps: bool,
        closed: bool,
    },
    /// One long text.
    Scalar { bytes: usize },
    /// A key the document already has.
    DuplicateKey,
    /// A tag liza does not know (or a core one on the wrong value).
    Tag(&'static str),
    /// Bytes that are not UTF-8, at an offset.
    NotUtf8 { at: usize },
    /// Binary junk, at an offset.
    Junk { at: usize, bytes: Vec<u8> },
}

impl Hostile {
    fn apply(&self, good: &[u8]) -> Vec<u8> {
        let mut text = good.to_vec();
        let append = |text: &mut Vec<u8>, s: String| text.extend_from_slice(s.as_bytes());
        match self {
            Hostile::Aliases { levels, fan, leaf } => {
                append(
                    &mut text,
                    format!("x-a:\n  l0: &l0 {}\n", "s".repeat(*leaf + 1)),
                );
                for i in 1..=*levels {
                    let refs = vec![format!("*l{}", i - 1); *fan].join(", ");
                    append(&mut text, format!("  l{i}: &l{i} [{refs}]\n"));
                }
            }
            Hostile::Nesting {
                depth,
                maps,
                closed,
            } => {
                let (open, close) = if *maps { ("{a: ", "}") } else { ("[", "]") };
                let mut s = format!("x-n: {}", open.repeat(*depth));
                if *closed {
                    s.push('1');
                    s.push_str(&close.repeat(*depth));
                }
                s.push('\n');
                append(&mut text, s);
            }
            Hostile::Scalar { bytes } => {
                append(&mut text, format!("x-s: {}\n", "z".repeat(*bytes)))
            }
            Hostile::DuplicateKey => append(&mut text, "version: 1\n".into()),
            Hostile::Tag(tag) => append(&mut text, format!("x-t: {tag}\n")),
            Hostile::NotUtf8 { at } => {
                let at = at % text.len();
                text.splice(at..at, [0xff, 0xfe, 0xc3]);
            }
            Hostile::Junk { at, bytes } => {
                let at = at % text.len();
                text.splice(at..at, bytes.iter().copied());
            }
        }
        text
    }
}

fn hostile() -> impl proptest::strategy::Strategy<Value = Hostile> {
    use proptest::prelude::*;
    prop_oneof![
        (1usize..9, 1usize..13, 0usize..2000).prop_map(|(levels, fan, leaf)| Hostile::Aliases {
            levels,
            fan,
            leaf
        }),
        (1usize..400, any::<bool>(), any::<bool>()).prop_map(|(depth, maps, closed)| {
            Hostile::Nesting {
                depth,
                maps,
                closed,
            }
        }),
        prop_oneof![Just(100usize), Just(100_000), Just(9 << 20)]
            .prop_map(|bytes| Hostile::Scalar { bytes }),
        Just(Hostile::DuplicateKey),
        prop_oneof![
            Just("!!binary aGVsbG8="),
            Just("!custom x"),
            Just("!!python/object/apply:os.system [ls]"),
            Just("!!int nope"),
            Just("!<tag:yaml.org,2002:str> 5"),
        ]
        .prop_map(Hostile::Tag),
        any::<usize>().prop_map(|at| Hostile::NotUtf8 { at }),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..4096)
        )
            .prop_map(|(at, bytes)| Hostile::Junk { at, bytes }),
    ]
}

/// Generated hostile hand edits through the real hand-edit path (`liza note` finds the
/// save and reconciles it): never a panic, the next command works, and an edit that is
/// not applied is kept byte for byte under `rejected/` while the last good state stays.
/// Memory stays bounded: the largest liza process of the run is measured at the end.
#[test]
fn hostile_hand_edits_never_panic_nor_lose_the_last_good_state() {
    use proptest::test_runner::{Config, TestRunner};
    let repo = Repo::initialized();
    let mut runner = TestRunner::new(Config {
        cases: 40,
        failure_persistence: None,
        ..Config::default()
    });
    let case = std::cell::Cell::new(0);
    runner
        .run(&hostile(), |attack| {
            case.set(case.get() + 1);
            let case = case.get();
            let good = std::fs::read(repo.state_path()).unwrap();
            let revision = repo.revision();
            let bytes = attack.apply(&good);
            std::fs::write(repo.state_path(), &bytes).unwrap();
            let out = repo.liza(&["note", "all", &format!("case {case}")]);
            let said = stderr(&out);
            assert!(!said.contains("panicked"), "{attack:?}: {said}");
            assert_success(&out);
            let now = repo.state_text();
            assert!(now.contains(&format!("case {case}")));
            if repo.revision() == revision + 1 {
                // Not applied: the person's bytes are kept, the last good state went on.
                let kept = std::fs::read_dir(repo.liza_dir().join("rejected"))
                    .unwrap()
                    .filter(|e| {
                        let p = e.as_ref().unwrap().path();
                        !p.to_string_lossy().ends_with(".note.txt")
                            && std::fs::read(&p).unwrap() == bytes
                    })
                    .count();
                assert_eq!(kept, 1, "{attack:?}: the edit is not kept");
            } else {
                // Applied (a harmless edit): revision, edit, note.
                assert_eq!(repo.revision(), revision + 2, "{attack:?}");
            }
            assert_success(&repo.liza(&["validate"]));
            Ok(())
        })
        .unwrap();
    let children =
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    // ru_maxrss is in KiB on Linux: the largest child (a liza command) of the whole run.
    let peak_mib = children.max_rss() / 1024;
    eprintln!("peak liza RSS: {peak_mib} MiB");
    assert!(peak_mib < 400, "a liza command reached {peak_mib} MiB");
}

/// A hand edit that writes `revision: 999999` does not move the store's numbering: the
/// edit is the next revision, and the log says the number was ignored.
#[test]
fn a_hand_edited_revision_is_ignored_and_logged() {
    let repo = Repo::initialized();
    note(&repo, "one");
    let revision = repo.revision();
    let text = repo.state_text();
    let edited = text
        .replacen(&format!("revision: {revision}\n"), "revision: 999999\n", 1)
        .replace("message: one", "message: one, edited");
    assert_ne!(edited, text);
    std::fs::write(repo.state_path(), &edited).unwrap();
    note(&repo, "two");
    assert_eq!(repo.revision(), revision + 2);
    let now = repo.state_text();
    assert!(now.contains("message: one, edited"), "{now}");
    assert!(
        now.contains(&format!("revision: {}\n", revision + 2)),
        "{now}"
    );
    let log = repo.log();
    let edit = log.iter().find(|e| e["action"] == "human_edit").unwrap();
    assert_eq!(edit["revision"], revision + 1);
    assert!(
        edit["detail"]
            .as_str()
            .unwrap()
            .contains("said revision 999999; ignored"),
        "{edit}"
    );
}

/// `--integration-branch` names that collide with task branches, with the branch checked
/// out in the main worktree, or that are refs rather than branch names are refused at
/// init, and nothing is created. A hand edit to one is refused by validation.
#[test]
fn integration_branches_that_collide_or_are_not_plain_names_are_refused() {
    let repo = Repo::new();
    let refs = repo.git(&["for-each-ref"]);
    for (name, says) in [
        ("task/t1", "collides with the task branches"),
        ("task", "collides with the task branches"),
        ("main", "main is checked out in"),
        ("refs/heads/x", "write \"x\""),
        ("HEAD", "not a valid branch name"),
    ] {
        let out = repo.liza(&["init", "Goal", "--integration-branch", name]);
        assert_exit(&out, 1);
        assert!(stderr(&out).contains(says), "{name}: {}", stderr(&out));
        assert!(stderr(&out).contains("hint:"), "{name}: {}", stderr(&out));
        assert!(!repo.liza_dir().exists(), "{name}");
        assert_eq!(repo.git(&["for-each-ref"]), refs, "{name}");
    }
    assert_success(&repo.liza(&["init", "Goal", "--integration-branch", "liza/integration"]));
    let text = repo.state_text();
    let edited = text.replace(
        "integration_branch: liza/integration",
        "integration_branch: task/t1",
    );
    assert_ne!(edited, text);
    std::fs::write(repo.state_path(), &edited).unwrap();
    note(&repo, "after");
    assert!(
        repo.state_text()
            .contains("integration_branch: liza/integration")
    );
    assert_eq!(repo.rejected().len(), 1);
}

/// Escape sequences in blackboard text (a note that clears the screen and retitles the
/// terminal, a description with a `\r` and a bidi override) reach the terminal only as
/// visible pictures in `log`, `status`, `show` and errors; `--json` keeps the text exact.
#[test]
fn escape_sequences_in_blackboard_text_are_shown_not_sent() {
    let repo = Repo::initialized();
    let attack = "hi\u{1b}]0;owned\u{7}\u{1b}[2J\rgone\u{202E}";
    note(&repo, attack);
    assert_success(&repo.liza(&[
        "add-task",
        "--id",
        "t-1",
        "--desc",
        attack,
        "--spec",
        "specs/vision.md",
        "--done",
        "it works",
        "--scope",
        "all",
    ]));
    assert_success(&repo.liza(&["note", "t-1", attack]));
    for args in [&["log"][..], &["status"], &["show", "t-1"]] {
        let out = repo.liza(args);
        assert_success(&out);
        let text = stdout(&out);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\r') && !text.contains('\u{7}'),
            "{args:?}: {text:?}"
        );
        assert!(!text.contains('\u{202E}'), "{args:?}");
        match args[0] {
            "status" => continue,
            // YAML escapes most controls itself; what it leaves is shown.
            "show" => assert!(
                text.contains(r#"hi\x1B]0;owned\x07\x1B[2J\rgone<U+202E>"#),
                "{text}"
            ),
            _ => assert!(
                text.contains("hi␛]0;owned␇␛[2J␍gone<U+202E>"),
                "{args:?}: {text}"
            ),
        }
        let mut json_args = vec!["--json"];
        json_args.extend_from_slice(args);
        let json = stdout(&repo.liza(&json_args));
        assert!(
            json.contains("\\u001b[2J\\rgone\u{202E}"),
            "{args:?}: {json}"
        );
    }
    // An error message quoting hostile input shows it the same way.
    let out = repo.liza(&["show", "t-\u{1b}[2J"]);
    assert!(!stderr(&out).contains('\u{1b}'), "{:?}", stderr(&out));
}

/// An agent's `liza log add` text with control characters is refused (not stored), and
/// `liza log --task ../x` is refused like any bad task id.
#[test]
fn log_add_control_characters_and_log_task_paths_are_refused() {
    let repo = Repo::initialized();
    let before = repo.files();
    let out = repo.liza(&[
        "log",
        "add",
        "--action",
        "test_run",
        "--detail",
        "ok\u{1b}[31m red",
    ]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("control character U+001B"),
        "{}",
        stderr(&out)
    );
    assert_eq!(repo.files(), before);
    let out = repo.liza(&["log", "--task", "../x"]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("hint: task ids are"),
        "{}",
        stderr(&out)
    );
}

/// A spec_ref given as an absolute path, with `..`, or through a symbolic link that leaves
/// the repository is refused by add-task and amend-task with nothing written; a hand edit
/// that sneaks one in is never read: finalize finds no such spec and copies nothing.
#[test]
fn spec_refs_outside_the_repository_are_refused_and_never_read() {
    let repo = Repo::initialized();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.md");
    std::fs::write(&secret, "CANARY-7c1e secret text\n").unwrap();
    std::os::unix::fs::symlink(&secret, repo.path().join("specs/evil.md")).unwrap();
    // From the repository root up to `/`, then down to the secret.
    let up = format!(
        "{}{}",
        "../".repeat(repo.path().components().count() - 1),
        secret.to_str().unwrap().trim_start_matches('/')
    );
    let add = |spec: &str, finalize: bool| {
        let mut args = vec![
            "add-task", "--id", "t-1", "--desc", "x", "--spec", spec, "--done", "y", "--scope", "z",
        ];
        if finalize {
            args.push("--finalize");
        }
        repo.liza(&args)
    };
    let before = repo.files();
    for (spec, says) in [
        (secret.to_str().unwrap(), "is absolute"),
        (up.as_str(), "goes up with `..`"),
        ("specs/evil.md", "leads outside the repository"),
    ] {
        for finalize in [false, true] {
            let out = add(spec, finalize);
            assert_exit(&out, 1);
            assert!(stderr(&out).contains(says), "{spec}: {}", stderr(&out));
            assert!(stderr(&out).contains("hint:"), "{spec}");
            assert_eq!(repo.files(), before, "{spec}");
        }
    }
    assert!(
        !repo.liza_dir().join("specs").exists()
            || std::fs::read_dir(repo.liza_dir().join("specs"))
                .unwrap()
                .count()
                == 0
    );
    // A DRAFT amended to point outside is refused the same way.
    assert_success(&add("specs/vision.md", false));
    let before = repo.files();
    for spec in [
        secret.to_str().unwrap(),
        "specs/evil.md",
        "specs/../../x.md",
    ] {
        let out = repo.liza(&["amend-task", "t-1", "--spec", spec]);
        assert_exit(&out, 1);
        assert_eq!(repo.files(), before, "{spec}");
    }
    // A hand edit is not refused by validation, but the file is never read or copied.
    let text = repo.state_text();
    let at = text.rfind("spec_ref: specs/vision.md").unwrap();
    let edited = format!("{}spec_ref: specs/evil.md{}", &text[..at], &text[at + 25..]);
    assert_ne!(edited, text, "{text}");
    std::fs::write(repo.state_path(), edited).unwrap();
    let out = repo.liza(&["finalize-task", "t-1"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
    for entry in walk(&repo.liza_dir()) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("CANARY-7c1e"),
            "{} holds the secret",
            entry.display()
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// An agent runs the commands for people: with its identity, without it, after `setsid`
/// (a new session and process group), and with the supervisor's mark cleared too. Every
/// attempt is refused and nothing changes; the same commands work for a person.
#[test]
fn commands_for_people_refuse_agents_even_after_setsid() {
    use crate::common::supervision::*;
    let project = AgentProject::new();
    crate::common::team::add(&project.repo, "t-1", "");
    // The refusals of an unsandboxed agent (`config.sandbox.mode: off`); a sandboxed one
    // reaches nothing but its supervisor's channel (tests/it/sandbox.rs).
    sandbox_off(&project.repo);
    project.step(
        "coder",
        "default",
        r#"log="$FAKE_AGENT_DIR/attempts"
# The supervisor's record of itself is written right after the agent starts.
until grep -qs supervisor_pid "$LIZA_PROJECT_ROOT"/.liza/live/coder-1.*.yaml; do sleep 0.05; done
for cmd in "edit" "gc --apply" "clear-stale" "analyze" "pause" "note all hi" "abort"; do
  EDITOR=true liza $cmd </dev/null >/dev/null 2>>"$log.err"
  echo "identity $cmd $?" >> "$log"
  env -u LIZA_AGENT_ID -u LIZA_AGENT_GENERATION EDITOR=true setsid -w liza $cmd </dev/null >/dev/null 2>>"$log.err"
  echo "setsid $cmd $?" >> "$log"
  env -u LIZA_AGENT_ID -u LIZA_AGENT_GENERATION -u LIZA_SUPERVISOR_PID EDITOR=true setsid -w liza $cmd </dev/null >/dev/null 2>>"$log.err"
  echo "unmarked $cmd $?" >> "$log"
done
# A double fork: once its parent is gone, nothing links the command to the supervisor
# but the mark in its environment.
env -u LIZA_AGENT_ID -u LIZA_AGENT_GENERATION setsid -f sh -c '
  i=0
  while [ "$(cut -d" " -f4 /proc/$$/stat)" != 1 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
  liza note all orphaned </dev/null >/dev/null 2>>"$1.err"; echo "orphan note $?" >> "$1"
  echo done >> "$1"' sh "$log"
hang 3600
"#,
    );
    let before = project.repo.state_text();
    let child = project.supervisor("coder", "coder-1");
    let log = project.scenario.path().join("attempts");
    project.wait_until("the attempts", GUARD_ADVERSARY, || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("done"))
    });
    let attempts = std::fs::read_to_string(&log).unwrap();
    let errors = std::fs::read_to_string(project.scenario.path().join("attempts.err")).unwrap();
    let tried: Vec<&str> = attempts.lines().filter(|l| *l != "done").collect();
    assert_eq!(tried.len(), 22, "{attempts}");
    for line in &tried {
        assert!(line.ends_with(" 1"), "not refused: {line}\n{errors}");
    }
    assert_eq!(
        errors.matches("is a command for people").count(),
        22,
        "{errors}"
    );
    assert!(errors.contains("under coder-1's supervisor"), "{errors}");
    assert!(errors.contains("LIZA_SUPERVISOR_PID="), "{errors}");
    let now = project.repo.state_text();
    assert!(!now.contains("message: hi"), "a note was left");
    assert!(
        now.contains("status: IN_PROGRESS"),
        "the sprint was paused or aborted"
    );
    let _ = stop(child, nix::sys::signal::Signal::SIGTERM);
    assert_ne!(
        before,
        project.repo.state_text(),
        "the supervisor did claim t-1"
    );
    // A person may.
    assert_success(&project.repo.liza(&["note", "all", "from a person"]));
    assert_success(&project.repo.liza(&["analyze"]));
}

const GUARD_ADVERSARY: std::time::Duration = std::time::Duration::from_secs(60);

/// An agent that commits on a detached HEAD, resets the task branch back, and leaves
/// modified and untracked files: `abandon` and `release-claim --force` keep all of it
/// reachable from `liza/attic/<task>-<n>`, which `liza show` names.
#[test]
fn detached_reset_and_uncommitted_work_survive_abandon_and_release() {
    let repo = Repo::initialized();
    for (task, retire) in [
        ("t-1", &["abandon", "t-1", "--reason", "not needed"][..]),
        (
            "t-2",
            &[
                "release-claim",
                "t-2",
                "--role",
                "coder",
                "--force",
                "--reason",
                "stuck",
            ],
        ),
    ] {
        crate::common::team::add(&repo, task, "");
        crate::common::team::register(&repo, &format!("coder-{}", &task[2..]));
        assert_success(&repo.liza(&["claim-task", task, &format!("coder-{}", &task[2..])]));
        let wt = repo.path().join(".worktrees").join(task);
        let commit =
            |file: &str, text: &str| crate::common::team::commit_in(&repo, &wt, file, text);
        let on_branch = commit("a.txt", "on the branch");
        let reset_away = commit("b.txt", "reset away");
        repo.git_in(&wt, &["reset", "-q", "--hard", "HEAD~1"]);
        repo.git_in(&wt, &["checkout", "-q", "--detach"]);
        let detached = commit("c.txt", "detached");
        std::fs::write(wt.join("a.txt"), "modified, not committed").unwrap();
        std::fs::write(wt.join("new.txt"), "untracked").unwrap();

        assert_success(&repo.liza(retire));
        assert!(!wt.exists(), "{task}: the worktree is removed");
        let refs = repo.git(&[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/liza/attic/",
        ]);
        let attic: Vec<&str> = refs
            .lines()
            .filter(|r| r.contains(&format!("/{task}-")))
            .collect();
        assert_eq!(attic.len(), 1, "{task}: {refs}");
        let kept = repo.git(&["rev-list", attic[0]]);
        for (what, sha) in [
            ("branch", &on_branch),
            ("reset", &reset_away),
            ("detached", &detached),
        ] {
            assert!(
                kept.contains(sha.as_str()),
                "{task}: the {what} commit is lost\n{kept}"
            );
        }
        // The uncommitted files are in the WIP commit on top of the detached HEAD.
        let wip = repo.git(&["log", "--format=%H", "--grep=WIP: saved by liza", attic[0]]);
        let wip = wip
            .lines()
            .next()
            .unwrap_or_else(|| panic!("{task}: no WIP commit"));
        assert_eq!(
            repo.git(&["show", &format!("{wip}:a.txt")]),
            "modified, not committed"
        );
        assert_eq!(repo.git(&["show", &format!("{wip}:new.txt")]), "untracked");
        let show = stdout(&repo.liza(&["show", task]));
        assert!(
            show.contains(&format!("# saved work: {}", attic[0])),
            "{show}"
        );
        let json = repo.liza(&["--json", "show", task]);
        assert_eq!(
            json_of(&json)["result"]["saved_work"][0]["ref"],
            attic[0],
            "{task}"
        );
    }
}

fn json_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The lock is held by a process that did not record itself while the owner note names
/// a pid that is gone: the timeout says the note is stale and how to find the holder, and
/// doctor says the same.
#[test]
fn a_lock_timeout_with_a_dead_owner_says_the_note_is_stale() {
    let repo = Repo::initialized();
    let gone = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = gone.id();
    let mut gone = gone;
    gone.wait().unwrap();
    let lock = repo.liza_dir().join("state.yaml.lock");
    std::fs::write(
        repo.liza_dir().join("state.yaml.lock.owner"),
        format!("pid {dead_pid} since 2026-01-01T00:00:00Z command liza note all x\n"),
    )
    .unwrap();
    let mut holder = std::process::Command::new("flock")
        .arg(&lock)
        .args(["sleep", "30"])
        .spawn()
        .unwrap();
    // Wait until the holder has the lock (doctor says who holds it).
    let start = std::time::Instant::now();
    while !stdout(&repo.liza(&["doctor"])).contains("no longer running") {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "flock never took the lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let before = repo.files();
    let out = repo.liza_env(&[("LIZA_LOCK_TIMEOUT", "0.2")], &["note", "all", "x"]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_exit(&out, 2);
    let said = stderr(&out);
    assert!(
        said.contains(&format!("names pid {dead_pid}, which is no longer running")),
        "{said}"
    );
    assert!(said.contains("fuser -v .liza/state.yaml.lock"), "{said}");
    assert_eq!(repo.files(), before);
}

/// A merge killed after recording its intent: doctor reports the interrupted merge and
/// how it is recovered, instead of saying nothing.
#[test]
fn doctor_reports_a_merge_intent_left_by_a_killed_merge() {
    let repo = Repo::initialized();
    crate::common::team::add(&repo, "t-1", "");
    crate::common::team::edit_state(&repo, "test_intent", |state, now| {
        let id = liza::blackboard::TaskId::parse("t-1").unwrap();
        let sha = liza::blackboard::model::CommitId::parse(&"a".repeat(40)).unwrap();
        state.task_mut(&id).unwrap().merge_intent = Some(liza::blackboard::model::MergeIntent {
            candidate: sha.clone(),
            integration_tip: sha,
            at: Some(now),
            merger: None,
            extra: Default::default(),
        });
    });
    let out = repo.liza(&["doctor"]);
    let said = stdout(&out);
    assert!(
        said.contains("merges") && said.contains("interrupted"),
        "{said}"
    );
    assert!(said.contains("t-1 (candidate aaaaaaaaaaaa"), "{said}");
    assert!(said.contains("liza merge <task>"), "{said}");
}

/// `liza-agent code-reviewer --once` that approves also merges, as the next step of a
/// running supervisor would.
#[test]
fn a_reviewer_run_once_merges_what_it_approved() {
    use crate::common::supervision::*;
    let project = AgentProject::new();
    let repo = &project.repo;
    crate::common::team::add(repo, "t-1", "");
    let generation = crate::common::team::register(repo, "coder-1");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    let wt = repo.path().join(".worktrees/t-1");
    crate::common::team::commit_in(repo, &wt, "t-1.txt", "the text of t-1");
    assert_success(&repo.liza_env(
        &crate::common::team::as_agent("coder-1", &generation),
        &["submit-for-review", "t-1"],
    ));
    project.step("code-reviewer", "default", "approve\n");
    let out = project.agent_command(
        &[("LIZA_AGENT_ID", "code-reviewer-1")],
        &["code-reviewer", "--once"],
    );
    assert_success(&out);
    assert_eq!(crate::common::team::status(repo, "t-1"), "MERGED");
    assert_eq!(
        repo.git(&["show", "integration:t-1.txt"]),
        "the text of t-1"
    );
}
