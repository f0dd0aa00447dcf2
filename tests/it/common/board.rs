//! A project on either store, for the tests that must pass on both (specs/shared-store.md):
//! the files of `.liza/`, or a real etcd (started per test) that the checkout joined with
//! `liza init --store`.

use std::collections::BTreeMap;

use super::etcd::{self, Etcd};
use super::{Repo, assert_success};

/// Which store holds the blackboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Files,
    Etcd,
}

pub struct Board {
    pub repo: Repo,
    pub kind: Kind,
    /// The running member, and the project's address in it.
    pub etcd: Option<(Etcd, String)>,
}

impl Board {
    /// `liza add-task` of `id` on the project's spec, finalized at once when `finalize`.
    pub fn add_task(&self, id: &str, description: &str, finalize: bool) {
        add_task_in(&self.repo, id, description, finalize);
    }

    /// An initialised project on `kind`; `None` (the test skips, saying why) when etcd is
    /// not installed outside CI.
    pub fn initialized(kind: Kind) -> Option<Board> {
        let repo = Repo::new();
        let etcd = match kind {
            Kind::Files => None,
            Kind::Etcd => {
                if !etcd::available() {
                    return None;
                }
                let member = Etcd::start();
                let address = format!("etcd://{}/team/project", member.endpoint());
                Some((member, address))
            }
        };
        let mut args = vec!["init", "Add a --json flag to the report CLI"];
        if let Some((_, address)) = &etcd {
            args.extend(["--store", address.as_str()]);
        }
        assert_success(&repo.liza(&args));
        Some(Board { repo, kind, etcd })
    }

    /// A client of the etcd, when the board is there.
    pub fn client(&self) -> Option<liza::blackboard::etcd::Client> {
        self.etcd.as_ref().map(|(member, _)| {
            liza::blackboard::etcd::Client::new(
                &[member.endpoint()],
                std::time::Duration::from_secs(5),
            )
            .unwrap()
        })
    }

    /// Everything a refused command must leave as it was: the checkout's files (see
    /// [`Repo::files`]) and, in etcd, every key with its value and mod revision, and
    /// etcd's revision itself (nothing at all was written).
    pub fn everything(&self) -> BTreeMap<String, Vec<u8>> {
        let mut out = self.repo.files();
        if let Some(client) = self.client() {
            let (kvs, revision) = client.range(&[0], &[0], 0).unwrap();
            out.insert("etcd revision".into(), revision.to_string().into_bytes());
            for kv in kvs {
                let mut value = kv.value.clone();
                value.extend_from_slice(format!(" @{}", kv.mod_revision).as_bytes());
                out.insert(format!("etcd {}", String::from_utf8_lossy(&kv.key)), value);
            }
        }
        out
    }
}

/// `liza add-task` of `id` on the project's spec in the checkout `repo`, finalized at
/// once when `finalize`.
pub fn add_task_in(repo: &Repo, id: &str, description: &str, finalize: bool) {
    let mut args = vec![
        "add-task",
        "--id",
        id,
        "--desc",
        description,
        "--spec",
        "specs/vision.md",
        "--done",
        "report --json prints JSON",
        "--scope",
        "src/report.rs",
    ];
    if finalize {
        args.push("--finalize");
    }
    super::assert_success(&repo.liza(&args));
}
