//! Usage limits shared (specs/ledger.md *Quota*): a limit an agent run hit, recorded per
//! backend and account with the time the provider said it resets, so every supervisor
//! of that backend — on every host of a shared store — waits for the same reset instead
//! of discovering the limit by failing. Pure: the store keeps them.

use serde::{Deserialize, Serialize};

use crate::timestamp::Timestamp;

/// One usage limit hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaHit {
    /// The backend whose provider refused (`claude`, `codex`, …).
    pub backend: String,
    /// Which credentials: a short fingerprint of the key the backend runs with
    /// (`login-…` when it runs on a login), so runs on another key are not held back.
    pub account: String,
    /// When the provider said the limit resets (or liza's default wait when it did not).
    #[serde(
        serialize_with = "crate::timestamp::rfc3339::serialize",
        deserialize_with = "crate::timestamp::rfc3339::deserialize"
    )]
    pub resets_at: Timestamp,
    /// When it was hit.
    #[serde(
        serialize_with = "crate::timestamp::rfc3339::serialize",
        deserialize_with = "crate::timestamp::rfc3339::deserialize"
    )]
    pub seen_at: Timestamp,
    /// The agent whose run hit it.
    pub seen_by: String,
    /// The CLI's line that reported it (scrubbed, at most 300 characters).
    pub line: String,
}

impl QuotaHit {
    /// Its key: `<backend>/<account>`.
    pub fn key(&self) -> String {
        key(&self.backend, &self.account)
    }

    /// Whether it still holds at `now`.
    pub fn holds_at(&self, now: Timestamp) -> bool {
        self.resets_at > now
    }

    /// Whether the names can be part of a key or a file name.
    pub fn check(&self) -> Result<(), BadQuotaName> {
        for (what, value) in [("backend", &self.backend), ("account", &self.account)] {
            let ok = !value.is_empty()
                && value.len() <= 64
                && !value.starts_with('.')
                && value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !ok {
                return Err(BadQuotaName {
                    what,
                    value: value.clone(),
                });
            }
        }
        Ok(())
    }
}

/// A backend or account name that cannot be part of a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a quota's {what} must be 1-64 characters of A-Z a-z 0-9 . _ -, not {value:?}")]
pub struct BadQuotaName {
    /// `backend` or `account`.
    pub what: &'static str,
    /// The name given.
    pub value: String,
}

/// The key of a backend's account.
pub fn key(backend: &str, account: &str) -> String {
    format!("{backend}/{account}")
}

/// Of two hits of one key, the one to keep: the later reset (a shorter one seen after
/// it does not shorten the wait; the provider's longest word stands).
pub fn later(kept: Option<QuotaHit>, new: QuotaHit) -> QuotaHit {
    match kept {
        Some(kept) if kept.resets_at >= new.resets_at => kept,
        _ => new,
    }
}

/// The hit that holds `backend` on `account` at `now`, if any.
pub fn holding<'a>(
    hits: &'a [QuotaHit],
    backend: &str,
    account: &str,
    now: Timestamp,
) -> Option<&'a QuotaHit> {
    hits.iter()
        .filter(|h| h.backend == backend && h.account == account && h.holds_at(now))
        .max_by_key(|h| h.resets_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(resets: &str) -> QuotaHit {
        QuotaHit {
            backend: "claude".into(),
            account: "a1b2".into(),
            resets_at: Timestamp::parse(resets).unwrap(),
            seen_at: Timestamp::parse("2026-11-29T10:00:00Z").unwrap(),
            seen_by: "coder-1".into(),
            line: "usage limit reached".into(),
        }
    }

    #[test]
    fn the_later_reset_is_kept() {
        let long = hit("2026-11-29T15:00:00Z");
        let short = hit("2026-11-29T11:00:00Z");
        assert_eq!(later(Some(long.clone()), short.clone()), long);
        assert_eq!(later(Some(short), long.clone()), long);
    }

    #[test]
    fn a_hit_holds_its_backend_and_account_until_the_reset() {
        let hits = [hit("2026-11-29T11:00:00Z")];
        let before = Timestamp::parse("2026-11-29T10:30:00Z").unwrap();
        let after = Timestamp::parse("2026-11-29T11:00:00Z").unwrap();
        assert!(holding(&hits, "claude", "a1b2", before).is_some());
        assert!(holding(&hits, "claude", "a1b2", after).is_none());
        assert!(holding(&hits, "claude", "other", before).is_none());
        assert!(holding(&hits, "codex", "a1b2", before).is_none());
    }

    #[test]
    fn names_that_could_leave_a_key_are_refused() {
        let mut bad = hit("2026-11-29T11:00:00Z");
        bad.account = "../x".into();
        assert!(bad.check().is_err());
        assert!(hit("2026-11-29T11:00:00Z").check().is_ok());
    }
}
