//! The control flags — `PAUSE`, `ABORT`, `CHECKPOINT` — that a person's command raises
//! after its transition commits and supervisors obey (specs/supervisor.md): files in
//! `.liza/` on the file store, `control/<NAME>` keys in etcd. Presence is what counts;
//! the first line of the text is when it was raised.

use super::timestamp::Timestamp;

/// One control flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Control {
    /// Start no new runs.
    Pause,
    /// Stop the running agents.
    Abort,
    /// A checkpoint waits for a person.
    Checkpoint,
}

impl Control {
    /// Every flag.
    pub const ALL: [Control; 3] = [Control::Pause, Control::Abort, Control::Checkpoint];

    /// The file (and key) name.
    pub fn name(self) -> &'static str {
        match self {
            Control::Pause => "PAUSE",
            Control::Abort => "ABORT",
            Control::Checkpoint => "CHECKPOINT",
        }
    }

    /// The flag named `name` (`PAUSE`, `ABORT`, `CHECKPOINT`), if there is one.
    pub fn from_name(name: &str) -> Option<Control> {
        Control::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// A raised flag: its text, and since when (its first line, as liza writes it; else when
/// the store last saw it written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Raised {
    /// What the flag holds.
    pub text: String,
    /// When it was raised, if known.
    pub since: Option<Timestamp>,
}

impl Raised {
    /// A flag with `text`, dated by its first line or else by `written`.
    pub fn read(text: String, written: Option<Timestamp>) -> Raised {
        let since = text
            .lines()
            .next()
            .and_then(|l| Timestamp::parse(l.trim()).ok())
            .or(written);
        Raised { text, since }
    }
}

/// The flags raised now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControlFlags(pub Vec<(Control, Raised)>);

impl ControlFlags {
    /// How `control` was raised, if it is.
    pub fn get(&self, control: Control) -> Option<&Raised> {
        self.0.iter().find(|(c, _)| *c == control).map(|(_, r)| r)
    }

    /// Whether `control` is raised.
    pub fn is_raised(&self, control: Control) -> bool {
        self.get(control).is_some()
    }

    /// When `control` was raised, if it is and that is known.
    pub fn since(&self, control: Control) -> Option<Timestamp> {
        self.get(control).and_then(|r| r.since)
    }
}
