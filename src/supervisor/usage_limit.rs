//! Provider usage limits as the runner sees them: the limit the last run's output reports
//! (`backend::signals` recognises it, on any exit status), and the local time a wait ends,
//! for the console and `liza status`. What a limit does is the policy's
//! (`policy::usage`).

use super::session::Session;
use crate::backend::signals::{self, UsageLimit};
use crate::blackboard::Timestamp;

impl Session {
    /// The usage limit the last run's output reports, if any.
    pub(super) fn usage_limit(&self) -> Option<UsageLimit> {
        signals::usage_limit(self.backend.spec, &self.last_output, chrono::Utc::now())
    }
}

/// `15:00` today, `Nov 26 15:00` another day, in the machine's time zone.
pub fn local_clock(at: Timestamp) -> String {
    local_clock_on(at, Timestamp::now())
}

/// [`local_clock`] as seen at `now` (the policies pass their own time).
pub fn local_clock_on(at: Timestamp, now: Timestamp) -> String {
    use chrono::TimeZone;
    let local = |t: Timestamp| chrono::Local.timestamp_opt(t.unix(), 0).single();
    let (Some(at_local), Some(now_local)) = (local(at), local(now)) else {
        return at.to_string();
    };
    if at_local.date_naive() == now_local.date_naive() {
        at_local.format("%H:%M").to_string()
    } else {
        at_local.format("%b %d %H:%M").to_string()
    }
}
