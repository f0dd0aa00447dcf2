//! The usage limits of a blackboard on files: `.liza/quota.json`, one hit per backend and
//! account (specs/ledger.md *Quota*), replaced whole (a synced file renamed over it)
//! under an exclusive `flock` on `quota.json.lock`, so two supervisors recording at once
//! both count and a reader never sees half a file; the later reset wins, and hits whose
//! reset has passed are dropped as it is written.

use std::fs::OpenOptions;
use std::path::Path;

use super::atomic;

use liza_model::quota::{self, QuotaHit};
use liza_model::timestamp::Timestamp;

/// Records `hit` (kept unless a later reset is recorded for its key).
pub fn record(path: &Path, hit: &QuotaHit, now: Timestamp) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path.with_extension("json.lock"))?;
    lock.lock()?;
    let result = (|| {
        let mut hits = read(path)?;
        let kept = hits
            .iter()
            .position(|h| h.key() == hit.key())
            .map(|i| hits.remove(i));
        hits.push(quota::later(kept, hit.clone()));
        hits.retain(|h| h.holds_at(now));
        hits.sort_by_key(QuotaHit::key);
        let mut bytes = serde_json::to_vec_pretty(&hits).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        let temp = atomic::write_temp_synced(dir, ".quota.json.", &bytes)?;
        std::fs::rename(&temp, path)?;
        atomic::fsync_dir(dir)
    })();
    let _ = lock.unlock();
    result
}

/// Every hit recorded (none when there is no file, or it does not read).
pub fn read(path: &Path) -> std::io::Result<Vec<QuotaHit>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(parse(&text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

fn parse(text: &str) -> Vec<QuotaHit> {
    serde_json::from_str(text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(account: &str, resets: i64) -> QuotaHit {
        QuotaHit {
            backend: "codex".into(),
            account: account.into(),
            resets_at: Timestamp::from_unix(resets),
            seen_at: Timestamp::from_unix(0),
            seen_by: "coder-1".into(),
            line: "Quota exceeded.".into(),
        }
    }

    #[test]
    fn the_later_reset_of_a_key_is_kept_and_passed_ones_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quota.json");
        record(&path, &hit("a", 500), Timestamp::from_unix(100)).unwrap();
        record(&path, &hit("a", 300), Timestamp::from_unix(100)).unwrap();
        record(&path, &hit("b", 150), Timestamp::from_unix(100)).unwrap();
        let hits = read(&path).unwrap();
        assert_eq!(hits, [hit("a", 500), hit("b", 150)]);
        record(&path, &hit("c", 900), Timestamp::from_unix(200)).unwrap();
        let keys: Vec<String> = read(&path).unwrap().iter().map(QuotaHit::key).collect();
        assert_eq!(keys, ["codex/a", "codex/c"]);
    }
}
