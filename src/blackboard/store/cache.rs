//! The parse cache `state.cache.json`: the last committed state as JSON, keyed by the
//! content hash of the state.yaml bytes it belongs to.
//!
//! YAML liza wrote itself is never parsed again: a transaction or a snapshot read hashes
//! state.yaml and, when the hash matches, loads this JSON (several times faster than the
//! YAML parse; quality.md P1/P2/P10). A missing, stale or damaged cache only means a full
//! parse. The first line is a small header, readable without parsing the JSON, that also
//! carries the lock timeout so a transaction knows it before taking the lock.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::hash::ContentHash;
use crate::blackboard::model::State;

/// Changes whenever the model's JSON form may change, so an old cache is ignored.
const FORMAT: &str = concat!("liza-state-cache/1/", env!("CARGO_PKG_VERSION"));

pub struct ParseCache {
    path: PathBuf,
}

impl ParseCache {
    pub fn new(path: PathBuf) -> ParseCache {
        ParseCache { path }
    }

    /// The state for `hash`, if the cache holds exactly that.
    pub fn load(&self, hash: ContentHash) -> Option<State> {
        let bytes = fs::read(&self.path).ok()?;
        let newline = bytes.iter().position(|b| *b == b'\n')?;
        let header = std::str::from_utf8(&bytes[..newline]).ok()?;
        let (cached_hash, _) = parse_header(header)?;
        if cached_hash != hash {
            return None;
        }
        serde_json::from_slice(&bytes[newline + 1..]).ok()
    }

    /// The lock timeout recorded by the last commit, read from the header only.
    pub fn lock_timeout(&self) -> Option<u64> {
        let mut head = [0u8; 256];
        let n = fs::File::open(&self.path).ok()?.read(&mut head).ok()?;
        let text = std::str::from_utf8(&head[..n]).ok()?;
        parse_header(text.lines().next()?).map(|(_, timeout)| timeout)
    }

    /// Replaces the cache (temp file + rename; no fsync: a lost cache costs one parse).
    pub fn store(&self, hash: ContentHash, state: &State, lock_timeout: u64) -> io::Result<()> {
        let mut bytes =
            format!("{FORMAT} {} lock_timeout={lock_timeout}\n", hash.to_hex()).into_bytes();
        serde_json::to_writer(&mut bytes, state).map_err(io::Error::other)?;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let mut temp = tempfile::Builder::new()
            .prefix("state.cache.")
            .suffix(".tmp")
            .tempfile_in(dir)?;
        temp.write_all(&bytes)?;
        temp.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

fn parse_header(line: &str) -> Option<(ContentHash, u64)> {
    let mut parts = line.split(' ');
    if parts.next()? != FORMAT {
        return None;
    }
    let hash = ContentHash::from_hex(parts.next()?)?;
    let timeout = parts.next()?.strip_prefix("lock_timeout=")?.parse().ok()?;
    Some((hash, timeout))
}
