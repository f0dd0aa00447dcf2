//! Appending to a file of lines that must hold each key once (the alarm log, the ledger):
//! the file is read and appended to under an exclusive `flock` on it, so two processes
//! deciding at once never both append the same key; what is appended is synced before the
//! lock is let go.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::path::Path;

/// Under the lock: `decide` is given the file's text (a character torn by a crash read as
/// a replacement, never an error) and says what to append and what to answer.
pub(super) fn append<T>(
    path: &Path,
    decide: impl FnOnce(&str) -> (String, T),
) -> std::io::Result<T> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)?;
    file.lock()?;
    let result = (|| {
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let (out, answer) = decide(&String::from_utf8_lossy(&bytes));
        if !out.is_empty() {
            file.write_all(out.as_bytes())?;
            file.sync_data()?;
        }
        Ok(answer)
    })();
    let _ = file.unlock();
    result
}
