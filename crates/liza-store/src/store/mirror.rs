//! The read-only mirror of a blackboard kept in etcd (specs/shared-store.md *Hand
//! edits*): `.liza/state.yaml` in each checkout, rewritten whenever a command or a
//! supervisor there sees a newer revision, for people to read and `liza validate` to
//! check. A write to it changes nothing in etcd: it is noticed (its bytes are no longer
//! what liza wrote), kept under `rejected/` with a note, and reported with the hint to
//! use `liza edit`.

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::hash::ContentHash;
use liza_model::model::State;
use liza_model::paths::LizaPaths;
use liza_model::timestamp::Timestamp;

/// What this process last wrote to the mirror.
#[derive(Default)]
pub(super) struct Mirror {
    written: Mutex<Option<(u64, ContentHash)>>,
}

/// The sidecar naming the revision and hash of what liza last wrote to the mirror.
const WRITTEN: &str = "state.yaml.mirrored";
/// Taken while the mirror and its sidecar are compared and rewritten.
const LOCK: &str = "state.yaml.mirror.lock";

impl Mirror {
    /// Brings the mirror of `paths` up to `state` when it shows an older revision;
    /// `render` gives the state's text. Returns where a person's write to the mirror was
    /// kept, if one was found. Failures only cost the mirror, never the transaction.
    pub(super) fn refresh(
        &self,
        paths: &LizaPaths,
        address: &str,
        state: &State,
        render: impl FnOnce(&State) -> Vec<u8>,
    ) -> Option<String> {
        let revision = state.revision();
        let mut written = self.written.lock().ok()?;
        if written.is_some_and(|(r, _)| r >= revision) {
            return None;
        }
        if !paths.dir.is_dir() {
            // A checkout without `.liza/` (LIZA_STORE given): nothing to mirror into.
            return None;
        }
        // Commands and supervisors of this checkout refresh it side by side: one at a
        // time, so the sidecar always names the bytes in the mirror (the lock is held
        // for these few file operations only).
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(paths.dir.join(LOCK))
            .ok()?;
        lock.lock().ok()?;
        let target = paths.state();
        let sidecar = paths.dir.join(WRITTEN);
        let last = fs::read_to_string(&sidecar).ok().and_then(|t| parse(&t));
        let on_disk = fs::read(&target).ok().map(|b| (ContentHash::of(&b), b));
        let edited = match (&on_disk, &last) {
            (Some((hash, _)), Some(last)) => !last.names(*hash),
            // A mirror liza has no record of writing (a sidecar lost): judged by its header.
            (Some((_, bytes)), None) => !bytes.starts_with(HEADER_START.as_bytes()),
            (None, _) => false,
        };
        if let Some(last) = &last
            && !edited
            && on_disk.is_some()
            && last.revision >= revision
        {
            *written = Some((last.revision, last.hash));
            return None;
        }
        let kept = edited.then(|| keep_edited(paths, &target)).flatten();
        let mut text = header(address, revision).into_bytes();
        text.extend_from_slice(&render(state));
        let hash = ContentHash::of(&text);
        // The sidecar names the new bytes before they are written, and the old ones too:
        // a crash between the two writes leaves a mirror it still names.
        let next = Sidecar {
            revision,
            hash,
            previous: on_disk.filter(|_| !edited).map(|(h, _)| h),
        };
        if let Err(err) = fs::write(&sidecar, next.line())
            .and_then(|()| write_read_only(&paths.dir, &target, &text))
        {
            tracing::warn!(%err, "could not refresh the mirror .liza/state.yaml");
            return kept;
        }
        *written = Some((revision, hash));
        kept
    }
}

/// The sidecar: the revision in the mirror, the hash of the mirror's bytes, and the hash
/// of the bytes it replaced (what the mirror holds if the rewrite was cut short).
struct Sidecar {
    revision: u64,
    hash: ContentHash,
    previous: Option<ContentHash>,
}

impl Sidecar {
    fn names(&self, hash: ContentHash) -> bool {
        self.hash == hash || self.previous == Some(hash)
    }

    fn line(&self) -> String {
        let previous = self.previous.map(ContentHash::to_hex).unwrap_or_default();
        format!("{} {} {previous}\n", self.revision, self.hash.to_hex())
    }
}

const HEADER_START: &str = "# Read-only mirror of the blackboard in etcd";

fn header(address: &str, revision: u64) -> String {
    format!(
        "{HEADER_START} ({address}), revision {revision}.\n\
         # Writing here changes nothing: change the blackboard with `liza edit`.\n"
    )
}

fn parse(text: &str) -> Option<Sidecar> {
    let mut fields = text.split_whitespace();
    Some(Sidecar {
        revision: fields.next()?.parse().ok()?,
        hash: ContentHash::from_hex(fields.next()?)?,
        previous: fields.next().and_then(ContentHash::from_hex),
    })
}

/// The new text replaces the mirror by rename, read-only (a person's editor says so
/// before they type).
fn write_read_only(dir: &Path, target: &Path, text: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut temp = tempfile::Builder::new()
        .prefix(".state.yaml.mirror.")
        .tempfile_in(dir)?;
    temp.write_all(text)?;
    temp.as_file()
        .set_permissions(fs::Permissions::from_mode(0o444))?;
    temp.persist(target).map_err(|e| e.error)?;
    Ok(())
}

/// Moves a person's write to the mirror under `rejected/`, with a note saying what to do.
fn keep_edited(paths: &LizaPaths, target: &Path) -> Option<String> {
    let dir = paths.rejected();
    fs::create_dir_all(&dir).ok()?;
    let stamp = Timestamp::now().to_string().replace(':', "");
    let kept = dir.join(format!("{stamp}-mirror-edit.yaml"));
    fs::rename(target, &kept).ok()?;
    let note = "This file was .liza/state.yaml, a read-only mirror of the blackboard in etcd, \
                written to directly: that changes nothing. Make the change with `liza edit`.\n";
    let _ = fs::write(kept.with_extension("note.txt"), note);
    tracing::warn!(
        kept = %kept.display(),
        "someone wrote to the mirror .liza/state.yaml; that changes nothing — use `liza edit` (their text is kept)"
    );
    Some(paths.display(&kept))
}

/// How often a busy process rewrites the mirror at most.
const MIRROR_EVERY: Duration = Duration::from_millis(25);

/// Writes the mirror on a thread of its own, so a commit does not wait for the render of
/// the whole blackboard: the newest state sent is written, at most once per
/// [`MIRROR_EVERY`] (a busy process renders the mirror for people to read, not once per
/// transition), older ones skipped. Dropping it writes what is queued at once (a
/// command's process ends with its checkout's mirror up to date).
///
/// A write is left out while `a_writer_waits` says a writer of the checkout waits for
/// the turn: that writer starts from a state at least as new (what the checkout's writers
/// keep in `.liza/etcd.known`), and brings the mirror up to its own as it ends, having
/// committed or not — unless its own is a state only sent and not yet known applied,
/// which is never shown (then the mirror lags until the checkout's next command ends;
/// specs/shared-store.md *Hand edits*). Sixteen commands in a row then
/// render the mirror once, not sixteen times. A state the next writer may not start from
/// (a commit made without the turn) is sent with [`Self::send_unleavable`].
///
/// A state can be sent ahead to be rendered while its commit is on the wire
/// ([`Self::prepare`]): the write that follows the commit then only copies it out.
pub(super) struct MirrorWriter {
    queue: Option<Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

enum Job {
    /// Render this state, to be written if it is the next one sent.
    Prepare(Arc<State>),
    /// Write this state; `true`: unless a writer waits for the turn.
    Write(Arc<State>, bool),
}

impl MirrorWriter {
    pub(super) fn start(
        mirror: Arc<Mirror>,
        paths: LizaPaths,
        address: String,
        render: fn(&State) -> Vec<u8>,
        a_writer_waits: fn(&Path) -> bool,
    ) -> Option<MirrorWriter> {
        let (queue, jobs) = std::sync::mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("liza-mirror".into())
            .spawn(move || {
                let mut last_write: Option<Instant> = None;
                let mut prepared: Option<(Arc<State>, Vec<u8>)> = None;
                while let Ok(job) = jobs.recv() {
                    let (mut state, mut leavable) = match job {
                        Job::Prepare(state) => {
                            prepared = (!a_writer_waits(&paths.dir)).then(|| {
                                let text = render(&state);
                                (state, text)
                            });
                            continue;
                        }
                        Job::Write(state, leavable) => (state, leavable),
                    };
                    let due = last_write.map(|at| at + MIRROR_EVERY);
                    loop {
                        let left = due.map_or(Duration::ZERO, |due| {
                            due.saturating_duration_since(Instant::now())
                        });
                        match jobs.recv_timeout(left) {
                            // The same state sent again may be left only if both may.
                            Ok(Job::Write(newer, may)) if newer.revision() >= state.revision() => {
                                leavable = may && (leavable || newer.revision() > state.revision());
                                state = newer;
                            }
                            // Older, or rendered ahead while writes are due anyway.
                            Ok(_) => {}
                            // Due, or the writer is being dropped: write now.
                            Err(_) => break,
                        }
                    }
                    let ready = prepared
                        .take()
                        .filter(|(rendered, _)| Arc::ptr_eq(rendered, &state))
                        .map(|(_, text)| text);
                    if leavable && a_writer_waits(&paths.dir) {
                        continue;
                    }
                    mirror.refresh(&paths, &address, &state, |state| {
                        ready.unwrap_or_else(|| render(state))
                    });
                    last_write = Some(Instant::now());
                }
            })
            .ok()?;
        Some(MirrorWriter {
            queue: Some(queue),
            thread: Some(thread),
        })
    }

    /// Writes `state` (when it is the newest sent by the time a write is due), unless a
    /// writer waits for the turn.
    pub(super) fn send(&self, state: &Arc<State>) {
        self.queue(Job::Write(Arc::clone(state), true));
    }

    /// Writes `state` even when a writer waits for the turn: that writer may not start
    /// from it (a commit made without the turn is not in `.liza/etcd.known`).
    pub(super) fn send_unleavable(&self, state: &Arc<State>) {
        self.queue(Job::Write(Arc::clone(state), false));
    }

    /// Renders `state` now, for a write of that very state to follow.
    pub(super) fn prepare(&self, state: &Arc<State>) {
        self.queue(Job::Prepare(Arc::clone(state)));
    }

    fn queue(&self, job: Job) {
        if let Some(queue) = &self.queue {
            let _ = queue.send(job);
        }
    }
}

impl Drop for MirrorWriter {
    fn drop(&mut self) {
        drop(self.queue.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
