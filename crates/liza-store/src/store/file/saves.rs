//! The file store's side of hand edits (specs/blackboard.md *Hand edits*): a save of
//! state.yaml found under the lock is judged ([`super::super::hand_edit::judge`]) and
//! committed, merged, or set aside under `rejected/` with the last good revision restored.

use std::fs;
use std::path::Path;

use super::super::commented::Commented;
use super::super::hand_edit::{self, HandEditOutcome, Head, Rejection, hand_edit_detail};
use super::super::hash::ContentHash;
use super::super::journal::JournalEntry;
use super::super::lock::StateLock;
use super::super::{StoreError, atomic};
use super::{Current, FileStore, Replaced, io_err};
use crate::log::{self as activity, LogEntry};
use liza_model::EventKind;
use liza_model::document;
use liza_model::finding::Finding;
use liza_model::model::State;
use liza_model::timestamp::Timestamp;
use liza_model::validate::validate;
use liza_yaml::merge3::Choices;

/// A hand edit about to be committed: the state it leads to, its log line, the older
/// revision it was merged from, and the person's text when it holds comments.
struct Applied {
    state: State,
    detail: String,
    merged_from: Option<u64>,
    commented: Option<Commented>,
}

impl FileStore {
    /// A hand edit found under the lock (module docs): applied, merged, or rejected with
    /// the latest revision restored. Returns the state the caller's change runs on.
    pub(super) fn reconcile_hand_edit(
        &self,
        lock: &StateLock,
        bytes: &[u8],
        hash: ContentHash,
        journal: Vec<JournalEntry>,
    ) -> Result<Current, StoreError> {
        let Some(head) = journal.last().cloned() else {
            return self.adopt(lock, bytes, hash, journal);
        };
        let head_bytes = self
            .journal
            .read(&head)
            .map_err(io_err("read", &head.path))?;
        let head_decoded =
            document::decode(&head_bytes).map_err(|f| self.undecodable_head(&head, f))?;
        let head_state = head_decoded.state.clone();
        match self.judge(bytes, &head, &head_decoded, &journal, &Choices::new()) {
            Ok((state, merged_from)) => {
                let detail = hand_edit_detail(&head_state, &state, merged_from, head.revision);
                let edit = Applied {
                    state,
                    detail,
                    merged_from,
                    commented: Commented::of(bytes),
                };
                Ok(self.apply_hand_edit(lock, hash, journal, edit)?.0)
            }
            Err(why) => self.reject_hand_edit(lock, &head, head_bytes, journal, bytes, why),
        }
    }

    /// A person's save found at `saved` instead of in state.yaml: a commit swapped it out
    /// because it landed while that commit ran. It is judged like any hand edit against
    /// the latest revision without being put back in state.yaml, where the person's next
    /// save could replace it before it is read: applied or merged as the next revision,
    /// or kept under `rejected/`. Nothing is set aside unjudged.
    pub(super) fn reconcile_swapped_out(
        &self,
        lock: &StateLock,
        saved: &Path,
    ) -> Result<Current, StoreError> {
        let bytes = fs::read(saved).map_err(io_err("read", saved))?;
        let journal = self
            .journal
            .entries()
            .map_err(io_err("read", self.journal.dir()))?;
        let Some(head) = journal.last().cloned() else {
            // Cannot happen after a commit; keep the save rather than guess.
            let note = "This copy of state.yaml was saved while liza was committing; \
                        compare it with .liza/state.yaml and redo your change.";
            self.keep_rejected(saved, "concurrent-save", note);
            return self.read_current(lock);
        };
        let head_bytes = self
            .journal
            .read(&head)
            .map_err(io_err("read", &head.path))?;
        let head_decoded =
            document::decode(&head_bytes).map_err(|f| self.undecodable_head(&head, f))?;
        match self.judge(&bytes, &head, &head_decoded, &journal, &Choices::new()) {
            Ok((state, merged_from)) => {
                let detail =
                    hand_edit_detail(&head_decoded.state, &state, merged_from, head.revision);
                let edit = Applied {
                    state,
                    detail,
                    merged_from,
                    commented: Commented::of(&bytes),
                };
                // state.yaml holds the head (or a newer save, which the commit swaps out
                // and settles in turn).
                let (current, _) = self.apply_hand_edit(lock, head.hash, journal, edit)?;
                let _ = fs::remove_file(saved);
                Ok(current)
            }
            Err(why) => {
                self.set_aside(saved, head.revision, why)?;
                // state.yaml still holds the head, or a save made meanwhile.
                self.read_current(lock)
            }
        }
    }

    /// What the next command will make of state.yaml, if it holds a hand edit (its bytes
    /// are not the journal head): `Ok` it will be applied, `Err` it will be set aside and
    /// why. Read-only, without the lock: `liza doctor` tells a person before it happens.
    pub(crate) fn pending_hand_edit(&self) -> Result<Option<Result<(), Rejection>>, StoreError> {
        let target = self.paths.state();
        let bytes = document::read_limited(&target).map_err(io_err("read", &target))?;
        let journal = self
            .journal
            .entries()
            .map_err(io_err("read", self.journal.dir()))?;
        let Some(head) = journal.last().cloned() else {
            return Ok(None);
        };
        if head.hash == ContentHash::of(&bytes) {
            return Ok(None);
        }
        let head_bytes = self
            .journal
            .read(&head)
            .map_err(io_err("read", &head.path))?;
        let head_decoded =
            document::decode(&head_bytes).map_err(|f| self.undecodable_head(&head, f))?;
        let verdict = self.judge(&bytes, &head, &head_decoded, &journal, &Choices::new());
        Ok(Some(verdict.map(|_| ())))
    }

    /// [`hand_edit::judge`] against the journal head, older revisions read from `journal`.
    fn judge(
        &self,
        bytes: &[u8],
        head: &JournalEntry,
        head_decoded: &document::Decoded,
        journal: &[JournalEntry],
        choices: &Choices,
    ) -> Result<(State, Option<u64>), Rejection> {
        let text_of = |revision: u64| {
            let entry = journal.iter().find(|e| e.revision == revision)?;
            self.journal.read(entry).ok()
        };
        let head = Head {
            revision: head.revision,
            decoded: head_decoded,
            text_of: &text_of,
        };
        hand_edit::judge(bytes, &head, &self.paths.root, &*self.policy, choices)
    }

    /// `liza edit`: commits `bytes` (a copy of state.yaml edited from the revision it
    /// names) as a `human_edit`, merged onto the latest revision when the blackboard moved
    /// meanwhile, with `choices` settling conflicts. Nothing is written when it is refused;
    /// returns the revision committed.
    pub(crate) fn submit_edit(
        &self,
        bytes: &[u8],
        choices: &Choices,
    ) -> Result<Result<u64, Rejection>, StoreError> {
        let lock = self.lock()?;
        self.clean_leftovers()?;
        let current = self.read_current(&lock)?;
        let Some(head) = current.journal.last().cloned() else {
            return Ok(Err(Rejection::BaseGone { edited: 0 }));
        };
        let head_bytes = self
            .journal
            .read(&head)
            .map_err(io_err("read", &head.path))?;
        let head_decoded =
            document::decode(&head_bytes).map_err(|f| self.undecodable_head(&head, f))?;
        match self.judge(bytes, &head, &head_decoded, &current.journal, choices) {
            Ok((state, merged_from)) => {
                let detail = format!(
                    "liza edit: {}",
                    hand_edit_detail(&current.state, &state, merged_from, head.revision)
                );
                let edit = Applied {
                    state,
                    detail,
                    merged_from,
                    commented: Commented::of(bytes),
                };
                let (done, revision) =
                    self.apply_hand_edit(&lock, current.hash, current.journal, edit)?;
                self.remember(done.into());
                Ok(Ok(revision))
            }
            Err(why) => Ok(Err(why)),
        }
    }

    /// Commits an accepted hand edit as the next revision (`human_edit`); `hash` is what
    /// state.yaml is expected to hold. Returns the state after it (and after any save
    /// that landed during the commit) and the edit's revision.
    fn apply_hand_edit(
        &self,
        lock: &StateLock,
        hash: ContentHash,
        journal: Vec<JournalEntry>,
        edit: Applied,
    ) -> Result<(Current, u64), StoreError> {
        let Applied {
            mut state,
            detail,
            merged_from,
            commented,
        } = edit;
        // The store owns the revision: the edit becomes head + 1 whatever number the
        // person wrote (a blackboard adopted without a journal keeps its own).
        let head = journal.last().map_or(0, |h| h.revision);
        let written = state.revision();
        let mut detail = detail;
        if head > 0 && written > head {
            detail.push_str(&format!(
                " (the file said revision {written}; ignored, liza numbers revisions)"
            ));
        }
        state.revision = Some(if head > 0 { head } else { written } as i64);
        let mut entry = LogEntry::new(Timestamp::now(), "human", EventKind::HumanEdit);
        entry.detail = Some(detail.clone());
        let head_hash = journal.last().map(|h| h.hash);
        let replaced = Replaced {
            hash,
            texts: None,
            commented: commented.as_ref(),
            // The text reads as the person's save, which a merge may have changed.
            before: None,
        };
        let committed = self.commit(lock, &mut state, journal, replaced, vec![entry])?;
        if let Some(replaced) = head_hash {
            // The cache of the revision the edit was made on.
            self.cache.remove(replaced);
        }
        let journal = committed.durable.complete()?;
        self.policy.reconciled(&HandEditOutcome::Applied {
            revision: committed.revision,
            summary: detail,
            merged_from,
            state: Box::new(state.clone()),
        });
        if let Some(saved) = &committed.concurrent_save {
            return Ok((self.reconcile_swapped_out(lock, saved)?, committed.revision));
        }
        let current = Current {
            state,
            hash: committed.hash,
            journal,
            texts: committed.texts,
            commented: committed.commented,
        };
        Ok((current, committed.revision))
    }

    /// Puts the latest revision back in place, keeps the human's file (`bytes`, as read)
    /// under `rejected/` with a note and logs `hand_edit_rejected`. A save that replaced
    /// it meanwhile is swapped out by the restore and settled in turn.
    fn reject_hand_edit(
        &self,
        lock: &StateLock,
        head: &JournalEntry,
        head_bytes: Vec<u8>,
        journal: Vec<JournalEntry>,
        bytes: &[u8],
        why: Rejection,
    ) -> Result<Current, StoreError> {
        let dir = &self.paths.dir;
        let target = self.paths.state();
        let temp = atomic::write_temp_synced(dir, super::TEMP_PREFIX, &head_bytes)
            .map_err(io_err("write a temporary file in", dir))?;
        atomic::exchange(dir, &temp, &target).map_err(io_err("restore", &target))?;
        let newer = fs::read(&temp).map_or(true, |b| b != bytes);
        if !newer {
            self.set_aside(&temp, head.revision, why)?;
            return self.load_committed(head.hash, head_bytes, journal, None);
        }
        // The person saved again after liza read the rejected copy: that copy is kept
        // from what was read, the newer save judged next.
        let copy = atomic::write_temp_synced(dir, super::TEMP_PREFIX, bytes)
            .map_err(io_err("write a temporary file in", dir))?;
        self.set_aside(&copy, head.revision, why)?;
        self.reconcile_swapped_out(lock, &temp)
    }

    /// Keeps `file`, a hand edit that was not applied, under `rejected/` with a note
    /// saying why; logs `hand_edit_rejected` and tells the policy. `revision` is the
    /// latest, which state.yaml holds.
    fn set_aside(&self, file: &Path, revision: u64, why: Rejection) -> Result<(), StoreError> {
        let dir = &self.paths.dir;
        let shown = self.paths.display(&self.paths.state());
        let lines = why.lines(&shown);
        let note = format!(
            "This copy of {shown} was not applied: {}.\n\
             The blackboard was put back to revision {revision}.\n\n{}\n\n\
             To redo the change, edit the current {shown} (or use `liza edit`).",
            why.summary(),
            lines.join("\n")
        );
        let kept_as = self.keep_rejected(file, why.label(), &note);
        atomic::fsync_dir(dir).map_err(io_err("sync", dir))?;
        // No revision of its own: nothing was committed.
        let mut entry = LogEntry::new(Timestamp::now(), "human", EventKind::HandEditRejected);
        entry.detail = Some(format!(
            "{}; kept as {}; revision {revision} restored",
            why.summary(),
            kept_as.as_deref().unwrap_or("(could not be kept)"),
        ));
        if let Err(err) = activity::append(&self.paths.log(), &[entry]) {
            tracing::warn!(%err, "could not log the rejected hand edit");
        }
        self.policy.reconciled(&HandEditOutcome::Rejected {
            revision,
            why,
            kept_as,
        });
        Ok(())
    }

    /// A blackboard with no journal (written by another tool, or an old copy put back):
    /// adopted as revision 1 of this journal when valid.
    fn adopt(
        &self,
        lock: &StateLock,
        bytes: &[u8],
        hash: ContentHash,
        journal: Vec<JournalEntry>,
    ) -> Result<Current, StoreError> {
        let decoded = document::decode(bytes).map_err(|f| self.invalid(f))?;
        let env = self.validation_env(Timestamp::now());
        let errors: Vec<Finding> = validate(&decoded.state, &env)
            .into_iter()
            .filter(Finding::is_error)
            .map(|f| {
                let pos = f.path.locate(&decoded.root);
                f.at(pos)
            })
            .collect();
        if !errors.is_empty() {
            return Err(self.invalid(errors));
        }
        let edit = Applied {
            commented: Commented::decoded(bytes, decoded.has_comments),
            state: decoded.state,
            detail:
                "adopted a blackboard written without liza's journal (by another tool or by hand)"
                    .into(),
            merged_from: None,
        };
        Ok(self.apply_hand_edit(lock, hash, journal, edit)?.0)
    }
}
