//! The journal: the last committed revisions of state.yaml, one file each, named
//! `<revision>-<size>-<hash>.yaml` so the head and the byte total are known from one
//! directory listing. Bounded by count and bytes.
//!
//! Each commit writes its entry (fsynced, with the directory) before swapping state.yaml,
//! so the file on disk always equals some entry and a crash is never mistaken for a
//! hand edit.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::atomic::{create_unsynced, fsync_dir};
use super::hash::ContentHash;

/// One kept revision, as its file name describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalEntry {
    /// The revision.
    pub revision: u64,
    /// Its text's size in bytes, as the name says (the file's, when it is whole).
    pub size: u64,
    /// Its text's content hash.
    pub hash: ContentHash,
    /// The file.
    pub path: PathBuf,
}

/// The journal directory of a file store.
pub struct Journal {
    dir: PathBuf,
}

/// The name an entry is written under before it is renamed into place.
pub const WRITING_PREFIX: &str = ".writing-";

impl Journal {
    /// The journal kept in `dir`.
    pub fn new(dir: PathBuf) -> Journal {
        Journal { dir }
    }

    /// Where its entries are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// All entries, oldest first. A missing directory is an empty journal.
    pub fn entries(&self) -> io::Result<Vec<JournalEntry>> {
        let read = match fs::read_dir(&self.dir) {
            Ok(read) => read,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut entries = Vec::new();
        for item in read {
            let item = item?;
            let name = item.file_name();
            if let Some(entry) = name.to_str().and_then(|n| self.parse_name(n)) {
                entries.push(entry);
            }
        }
        entries.sort_by_key(|e| e.revision);
        Ok(entries)
    }

    fn parse_name(&self, name: &str) -> Option<JournalEntry> {
        let stem = name.strip_suffix(".yaml")?;
        let mut parts = stem.splitn(3, '-');
        let revision = parts.next()?.parse().ok()?;
        let size = parts.next()?.parse().ok()?;
        let hash = ContentHash::from_hex(parts.next()?)?;
        Some(JournalEntry {
            revision,
            size,
            hash,
            path: self.dir.join(name),
        })
    }

    /// Writes the entry for `revision` durably (its data fsynced; see below for the
    /// directory). Entries at or above `revision` among `known` (the journal as the
    /// caller listed it: left by a transaction that crashed before its swap) are replaced.
    ///
    /// The journal directory itself is not fsynced: on journaling filesystems a file
    /// creation is committed no later than a rename done after it, so once state.yaml's
    /// swap is durable this entry's name is too. Where that ordering does not hold, a
    /// power cut could at worst make the next transaction record the new state.yaml as a
    /// `human_edit` of the previous revision — nothing is lost — and the fsync saved is a
    /// fifth of a commit's disk time.
    pub fn write(
        &self,
        revision: u64,
        hash: ContentHash,
        bytes: &[u8],
        known: &[JournalEntry],
    ) -> io::Result<JournalEntry> {
        for stale in known.iter().filter(|e| e.revision >= revision) {
            fs::remove_file(&stale.path)?;
        }
        let name = format!("{revision:012}-{}-{}.yaml", bytes.len(), hash.to_hex());
        let path = self.dir.join(name);
        // Written whole under a name no reader takes for an entry, then renamed: a write
        // that fails (a full disk) leaves no empty or partial entry behind.
        let temp = self
            .dir
            .join(format!("{WRITING_PREFIX}{revision:012}.yaml"));
        let _ = fs::remove_file(&temp);
        let written = match create_unsynced(&temp, bytes) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // A new journal directory: make its own entry in `.liza/` durable.
                fs::create_dir_all(&self.dir)?;
                if let Some(parent) = self.dir.parent() {
                    fsync_dir(parent)?;
                }
                create_unsynced(&temp, bytes)
            }
            other => other,
        };
        let done = written
            .and_then(|file| file.sync_all())
            .and_then(|()| fs::rename(&temp, &path));
        if let Err(e) = done {
            let _ = fs::remove_file(&temp);
            return Err(e);
        }
        Ok(JournalEntry {
            revision,
            size: bytes.len() as u64,
            hash,
            path,
        })
    }

    /// The entry's text, checked against its name: an entry whose size or hash differs
    /// (written by a liza that could leave a failed write behind, or damaged since) is
    /// an error that says so, never taken for a revision's text.
    pub fn read(&self, entry: &JournalEntry) -> io::Result<Vec<u8>> {
        let bytes = fs::read(&entry.path)?;
        if bytes.len() as u64 != entry.size || ContentHash::of(&bytes) != entry.hash {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "journal entry {} is damaged: it holds {} bytes, its name says {} (a write that failed, e.g. on a full disk)",
                    entry.path.display(),
                    bytes.len(),
                    entry.size
                ),
            ));
        }
        Ok(bytes)
    }

    /// Whether the entry's file has the size its name says (one `stat`, no read).
    pub fn looks_whole(&self, entry: &JournalEntry) -> bool {
        fs::metadata(&entry.path).is_ok_and(|m| m.len() == entry.size)
    }

    /// Removes an entry that was never committed (state.yaml never held it).
    pub fn discard(&self, entry: &JournalEntry) -> io::Result<()> {
        fs::remove_file(&entry.path)
    }

    /// Keeps the newest entries within `max_revisions` and `max_bytes` (at least two, so
    /// the head and its predecessor are always there).
    pub fn prune(
        &self,
        entries: Vec<JournalEntry>,
        max_revisions: u64,
        max_bytes: u64,
    ) -> Vec<JournalEntry> {
        let mut kept = Vec::with_capacity(entries.len());
        let mut bytes = 0u64;
        for entry in entries.into_iter().rev() {
            bytes += entry.size;
            let count = kept.len() as u64 + 1;
            // A removal that fails leaves the entry listed: it is retried next time.
            if count > 2
                && (count > max_revisions || bytes > max_bytes)
                && fs::remove_file(&entry.path).is_ok()
            {
                continue;
            }
            kept.push(entry);
        }
        kept.reverse();
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn revisions(j: &Journal) -> Vec<u64> {
        j.entries().unwrap().iter().map(|e| e.revision).collect()
    }

    #[test]
    fn entries_come_back_in_revision_order_and_prune_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("journal"));
        assert!(j.entries().unwrap().is_empty());
        for rev in 1..=6u64 {
            let bytes = vec![b'x'; 100];
            j.write(rev, ContentHash::of(&rev.to_le_bytes()), &bytes, &[])
                .unwrap();
        }
        assert_eq!(revisions(&j), [1, 2, 3, 4, 5, 6]);
        j.prune(j.entries().unwrap(), 4, u64::MAX);
        assert_eq!(revisions(&j), [3, 4, 5, 6]);
        let kept = j.prune(j.entries().unwrap(), 100, 250);
        assert_eq!(kept.iter().map(|e| e.revision).collect::<Vec<_>>(), [5, 6]);
        assert_eq!(revisions(&j), [5, 6]);
    }

    #[test]
    fn writing_a_revision_replaces_uncommitted_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("journal"));
        j.write(1, ContentHash::of(b"1"), b"1", &[]).unwrap();
        j.write(2, ContentHash::of(b"2a"), b"2a", &[]).unwrap();
        let known = j.entries().unwrap();
        j.write(2, ContentHash::of(b"2b"), b"2b", &known).unwrap();
        let all = j.entries().unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(j.read(&all[1]).unwrap(), b"2b");
    }
}
