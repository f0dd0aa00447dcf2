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
        signals::usage_limit(
            self.backend.spec,
            &self.last_output,
            self.clock.now().local(),
        )
    }
}

/// `15:00` today, `Nov 26 15:00` another day, in the machine's time zone (for a person:
/// `liza status`).
pub fn local_clock(at: Timestamp) -> String {
    use super::clock::Clock;
    super::clock::SystemClock::new().now().clock_text(at)
}
