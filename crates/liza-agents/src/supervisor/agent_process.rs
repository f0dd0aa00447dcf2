//! One agent process (specs/supervisor.md *Running the agent*): spawned from an argv vector in
//! its own process group, the prompt on stdin when the backend takes it so, output
//! streamed to the terminal and saved (secrets scrubbed, size-capped), progress noted on
//! every output chunk; stopped with SIGTERM to the group, a grace period, then SIGKILL —
//! and the group is killed after the agent exits so no grandchild outlives it. A CLI run in
//! a JSON mode has its stdout read line by line into the text a person reads and the usage
//! it reports (`backend::usage`), before anything is scrubbed, shown or saved.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use super::Console;
use crate::backend::usage::{Rendered, Transcript};
use crate::backend::{Invocation, is_secret};
use crate::llm::scrub::{Scrubber, Stream};
use liza_model::ledger::RunUsage;

/// How much of an agent's output is kept in its log file.
const LOG_CAP: u64 = 8 * 1024 * 1024;
/// How much of the output tail is kept in memory (usage-limit messages, diagnostics).
const TAIL: usize = 16 * 1024;

/// Shared between the output readers and the supervisor.
#[derive(Default)]
pub(super) struct Activity {
    pub last: Option<Instant>,
    pub tail: String,
}

pub(super) struct AgentProcess {
    child: Child,
    /// The process group of what runs: the agent's own, or in a sandbox the group of
    /// everything inside it (bubblewrap's first process leads it).
    pub pgid: i32,
    /// The group of the spawned process itself (bubblewrap, for a sandboxed run).
    spawned_group: i32,
    pub activity: Arc<Mutex<Activity>>,
    /// The output readers: awaited after the exit, so the output tail the supervisor
    /// classifies the run by (a usage-limit message on the last line) is complete.
    pumps: Vec<tokio::task::JoinHandle<()>>,
    /// What stdout reported of usage, read as it came (`None`: the backend reports none).
    transcript: Option<Arc<Mutex<Transcript>>>,
    /// The secrets scrubbed from the output, scrubbed from the usage's model names too.
    scrubber: Scrubber,
}

/// How long the output readers may take to drain after the agent's group is gone (a
/// descendant that left the group may hold the pipes open; it is not waited for longer).
/// Generous: the last lines decide how a run ended (a login or a usage limit), and on an
/// overloaded machine reading them can take seconds.
const DRAIN: Duration = Duration::from_secs(10);

impl AgentProcess {
    /// Starts `invocation` (in a sandbox when its argv is bubblewrap's and `info` is the
    /// pipe bubblewrap reports its first process on).
    pub(super) fn spawn(
        invocation: &Invocation,
        cwd: &Path,
        env: &[(String, String)],
        log: Option<File>,
        console: Arc<dyn Console>,
        info: Option<crate::sandbox::info_pipe::InfoPipe>,
        transcript: Option<Transcript>,
    ) -> std::io::Result<AgentProcess> {
        let (program, args) = invocation
            .argv
            .split_first()
            .ok_or_else(|| std::io::Error::other("empty agent command"))?;
        let mut command = Command::new(program);
        command.args(args).current_dir(cwd).process_group(0);
        // Every secret's value is scrubbed from the output, passed through or not.
        let mut secrets = invocation.scrub.clone();
        for (key, value) in std::env::vars() {
            if is_secret(&key) {
                if !invocation.keep_env.contains(&key) && !env.iter().any(|(k, _)| *k == key) {
                    command.env_remove(&key);
                }
                secrets.push(value);
            }
        }
        secrets.extend(
            env.iter()
                .filter(|(k, _)| is_secret(k))
                .map(|(_, v)| v.clone()),
        );
        command.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        command
            .stdin(if invocation.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(false);
        let mut child = command.spawn()?;
        let spawned_group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .unwrap_or(0);
        // bubblewrap says where the sandbox's first process is within milliseconds of
        // starting; without it the sandbox is stopped through bubblewrap itself.
        let pgid = info
            .and_then(|i| i.child_pid(Duration::from_secs(5)))
            .unwrap_or(spawned_group);
        if let (Some(text), Some(mut stdin)) = (invocation.stdin.clone(), child.stdin.take()) {
            tokio::spawn(async move {
                let _ = stdin.write_all(text.as_bytes()).await;
                let _ = stdin.shutdown().await;
            });
        }
        let activity = Arc::new(Mutex::new(Activity {
            last: Some(Instant::now()),
            tail: String::new(),
        }));
        let log = Arc::new(Mutex::new((log, 0u64)));
        let scrubber = Scrubber::new(secrets);
        let transcript = transcript.map(|t| Arc::new(Mutex::new(t)));
        let mut pumps = Vec::new();
        if let Some(out) = child.stdout.take() {
            pumps.push(pump(
                out,
                console.clone(),
                activity.clone(),
                log.clone(),
                Reader::new(&scrubber, transcript.clone()),
            ));
        }
        if let Some(err) = child.stderr.take() {
            pumps.push(pump(
                err,
                console,
                activity.clone(),
                log,
                Reader::new(&scrubber, None),
            ));
        }
        Ok(AgentProcess {
            child,
            pgid,
            spawned_group,
            activity,
            pumps,
            transcript,
            scrubber,
        })
    }

    /// Waits for the agent to exit, then kills what is left of its group.
    pub(super) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait().await;
        self.kill_group(Signal::SIGKILL);
        self.drain().await;
        status
    }

    /// SIGTERM to the group, `grace`, then SIGKILL.
    pub(super) async fn stop(&mut self, grace: Duration) -> std::io::Result<ExitStatus> {
        self.kill_group(Signal::SIGTERM);
        let status = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                self.kill_group(Signal::SIGKILL);
                self.child.wait().await
            }
        };
        self.kill_group(Signal::SIGKILL);
        self.drain().await;
        status
    }

    /// Reads what the agent wrote before it exited, to the end (bounded by [`DRAIN`]).
    /// Cancel-safe: a caller's `select!` may drop it half-way (a tick firing while the
    /// output drains), and the next call waits for the pumps still running — taking
    /// them out first let the next `wait` return before the agent's last lines were
    /// read, and its verdict or usage-limit message went unseen.
    async fn drain(&mut self) {
        let _ = tokio::time::timeout(DRAIN, async {
            while let Some(pump) = self.pumps.last_mut() {
                let _ = pump.await;
                self.pumps.pop();
            }
        })
        .await;
    }

    /// Signals what runs; SIGKILL also goes to the spawned process's own group (a
    /// sandbox's bubblewrap, whose death takes the sandbox down).
    fn kill_group(&self, signal: Signal) {
        if self.pgid > 1 {
            let _ = killpg(Pid::from_raw(self.pgid), signal);
        }
        if signal == Signal::SIGKILL && self.spawned_group > 1 && self.spawned_group != self.pgid {
            let _ = killpg(Pid::from_raw(self.spawned_group), signal);
        }
    }

    /// When the agent last wrote output.
    pub(super) fn last_output(&self) -> Option<Instant> {
        self.activity.lock().ok().and_then(|a| a.last)
    }

    pub(super) fn output_tail(&self) -> String {
        self.activity
            .lock()
            .map(|a| a.tail.clone())
            .unwrap_or_default()
    }

    /// What the run reported of usage, once its output is read (`report`: the file in
    /// the run's directory a backend leaves it in); model names scrubbed. Taken under
    /// the lock: an output reader still draining (a descendant holding the pipe) keeps
    /// its handle, not what was read.
    pub(super) fn usage(&mut self, report: Option<&[u8]>) -> Option<RunUsage> {
        let transcript = self.transcript.take()?;
        let read = transcript.lock().ok()?.take();
        let mut usage = read.usage(report)?;
        for m in &mut usage.models {
            if let Some(name) = &m.model {
                m.model = Some(self.scrubber.scrub(name));
            }
        }
        Some(usage)
    }
}

/// The longest line of a JSON CLI's stdout read as one event; a longer one is not shown
/// (it is no event liza reads, and raw JSON would hide a secret from the scrubber).
const MAX_EVENT_LINE: usize = 4 * 1024 * 1024;

/// What a chunk of output gives: what a person reads (the console, the saved log), and
/// what is judged for logins and limits (the output's end).
struct Chunk {
    shown: String,
    judged: String,
}

/// One output stream as it is read: scrubbed, and for stdout, read for usage — a JSON
/// CLI's line by line, rendered to text first (what a person reads and what text mode
/// printed, apart, each scrubbed); a text CLI's lines as they were shown.
struct Reader {
    scrub: Stream,
    /// The judged text's own scrubbing (a JSON CLI's; a text CLI's is what is shown).
    scrub_judged: Stream,
    transcript: Option<Arc<Mutex<Transcript>>>,
    json: bool,
    /// Raw bytes of a line not ended yet: a JSON CLI's, or a text CLI's read for usage
    /// before scrubbing (aider's `Tokens: 1.2k sent` reads to the scrubber as a
    /// `token: value` secret, and is shown so).
    pending: Vec<u8>,
    /// The rest of a line over [`MAX_EVENT_LINE`] is dropped up to its end.
    skip_rest: bool,
}

impl Reader {
    fn new(scrubber: &Scrubber, transcript: Option<Arc<Mutex<Transcript>>>) -> Reader {
        let json = transcript
            .as_ref()
            .and_then(|t| t.lock().ok().map(|t| t.is_json()))
            .unwrap_or(false);
        Reader {
            scrub: Stream::new(scrubber.clone()),
            scrub_judged: Stream::new(scrubber.clone()),
            transcript,
            json,
            pending: Vec::new(),
            skip_rest: false,
        }
    }

    fn text(text: String) -> Chunk {
        Chunk {
            judged: text.clone(),
            shown: text,
        }
    }

    /// What `bytes` read give.
    fn push(&mut self, bytes: &[u8]) -> Chunk {
        if !self.json {
            self.read_raw(bytes, false);
            return Self::text(self.scrub.push(bytes));
        }
        self.pending.extend_from_slice(bytes);
        let mut rendered = Rendered::default();
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            self.render(&line[..line.len() - 1], &mut rendered);
        }
        if self.pending.len() > MAX_EVENT_LINE {
            self.pending.clear();
            self.skip_rest = true;
            let note = "[liza: an output line over 4 MiB is not shown]\n";
            rendered.shown.push_str(note);
            rendered.judged.push_str(note);
        }
        self.scrubbed(&rendered)
    }

    /// What a quiet spell releases: a JSON CLI's unended line waits for its end.
    fn flush(&mut self) -> Chunk {
        if !self.json {
            return Self::text(self.scrub.flush());
        }
        Chunk {
            shown: self.scrub.flush(),
            judged: self.scrub_judged.flush(),
        }
    }

    /// What is left when the stream ends.
    fn finish(&mut self) -> Chunk {
        if !self.json {
            self.read_raw(&[], true);
            return Self::text(self.scrub.finish());
        }
        let mut rendered = Rendered::default();
        let line = std::mem::take(&mut self.pending);
        if !line.is_empty() {
            self.render(&line, &mut rendered);
        }
        if let Some(t) = &self.transcript
            && let Ok(mut t) = t.lock()
        {
            let end = t.end();
            rendered.shown.push_str(&end.shown);
            rendered.judged.push_str(&end.judged);
        }
        let mut chunk = self.scrubbed(&rendered);
        chunk.shown.push_str(&self.scrub.finish());
        chunk.judged.push_str(&self.scrub_judged.finish());
        chunk
    }

    fn scrubbed(&mut self, rendered: &Rendered) -> Chunk {
        Chunk {
            shown: self.scrub.push(rendered.shown.as_bytes()),
            judged: self.scrub_judged.push(rendered.judged.as_bytes()),
        }
    }

    fn render(&mut self, line: &[u8], into: &mut Rendered) {
        if std::mem::take(&mut self.skip_rest) {
            // The end of a line too long to read.
            return;
        }
        let line = String::from_utf8_lossy(line);
        if let Some(t) = &self.transcript
            && let Ok(mut t) = t.lock()
        {
            let r = t.line(line.trim_end_matches('\r'));
            into.shown.push_str(&r.shown);
            into.judged.push_str(&r.judged);
        }
    }

    /// Gives a text CLI's complete lines to the transcript, as the CLI wrote them.
    fn read_raw(&mut self, bytes: &[u8], ended: bool) {
        let Some(t) = &self.transcript else { return };
        self.pending.extend_from_slice(bytes);
        let Ok(mut t) = t.lock() else { return };
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            t.text_line(String::from_utf8_lossy(&line).trim_end());
        }
        if ended && !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            t.text_line(String::from_utf8_lossy(&line).trim_end());
        }
        // A text CLI's line is short; an unended flood is not kept.
        if self.pending.len() > MAX_EVENT_LINE {
            self.pending.clear();
        }
    }
}

/// How long output may be quiet before a line still open (a question waiting for an
/// answer, a progress bar) is released.
const QUIET: Duration = Duration::from_millis(300);

type SharedLog = Arc<Mutex<(Option<File>, u64)>>;

fn pump(
    mut reader: impl AsyncRead + Unpin + Send + 'static,
    console: Arc<dyn Console>,
    activity: Arc<Mutex<Activity>>,
    log: SharedLog,
    mut stream: Reader,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        let mut ended = false;
        while !ended {
            let chunk = match tokio::time::timeout(QUIET, reader.read(&mut buf)).await {
                Err(_) => stream.flush(),
                Ok(Ok(0) | Err(_)) => {
                    ended = true;
                    stream.finish()
                }
                Ok(Ok(n)) => {
                    if let Ok(mut a) = activity.lock() {
                        a.last = Some(Instant::now());
                    }
                    stream.push(&buf[..n])
                }
            };
            if !chunk.shown.is_empty() {
                console.agent_output(chunk.shown.as_bytes());
                keep(&log, &chunk.shown);
            }
            if !chunk.judged.is_empty()
                && let Ok(mut a) = activity.lock()
            {
                a.tail.push_str(&chunk.judged);
                if a.tail.len() > TAIL {
                    let mut cut = a.tail.len() - TAIL;
                    while !a.tail.is_char_boundary(cut) {
                        cut += 1;
                    }
                    a.tail.drain(..cut);
                }
            }
        }
    })
}

/// Appends `text` to the saved log, up to its cap.
fn keep(log: &SharedLog, text: &str) {
    if let Ok(mut guard) = log.lock() {
        let (file, written) = &mut *guard;
        if let Some(f) = file.as_mut()
            && *written < LOG_CAP
        {
            let _ = f.write_all(text.as_bytes());
            *written += text.len() as u64;
            if *written >= LOG_CAP {
                let _ = f.write_all(b"\n[liza: output truncated at 8 MiB]\n");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::usage::UsageFormat;

    struct Quiet;

    fn on_a_runtime(work: impl std::future::Future<Output = ()>) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(work);
    }

    /// `sh -c script` as an agent, in a directory of its own (kept alive by the caller).
    fn spawn_sh(script: &str) -> (tempfile::TempDir, AgentProcess) {
        spawn_reading(script, None)
    }

    /// `sh -c script` as an agent whose stdout is read for usage with `transcript`.
    fn spawn_reading(
        script: &str,
        transcript: Option<Transcript>,
    ) -> (tempfile::TempDir, AgentProcess) {
        let invocation = Invocation {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            stdin: None,
            keep_env: Vec::new(),
            scrub: Vec::new(),
        };
        let dir = tempfile::tempdir().unwrap();
        let process = AgentProcess::spawn(
            &invocation,
            dir.path(),
            &[],
            None,
            Arc::new(Quiet),
            None,
            transcript,
        )
        .unwrap();
        (dir, process)
    }

    impl Console for Quiet {
        fn info(&self, _: &str) {}
        fn agent_output(&self, _: &[u8]) {}
    }

    /// A `wait` dropped while the output drains (a `select!` whose tick fired first)
    /// leaves the next `wait` to finish reading it: the agent's last line is in the tail.
    /// The line comes from a descendant outside the agent's group, 300 ms after the agent
    /// exited, so the first `wait` is still draining when it is dropped.
    #[test]
    fn a_wait_dropped_while_the_output_drains_loses_no_output() {
        on_a_runtime(async {
            // The agent exits once its descendant has left the group (so the group's
            // SIGKILL cannot take it, however loaded the machine).
            let (_dir, mut process) = spawn_sh(
                "echo first; setsid sh -c 'touch left; sleep 0.3; echo LAST' & \
                 while [ ! -e left ]; do sleep 0.01; done; exit 0",
            );
            let _ = tokio::time::timeout(Duration::from_millis(50), process.wait()).await;
            let status = process.wait().await.unwrap();
            assert!(status.success());
            let tail = process.output_tail();
            assert!(tail.contains("LAST"), "{tail:?}");
        });
    }

    /// A real process that pauses 400 ms — longer than the quiet flush — in the middle of
    /// a secret: what is shown and kept has it redacted whole.
    #[test]
    fn a_secret_split_by_a_pause_longer_than_the_quiet_flush_is_redacted() {
        on_a_runtime(async {
            let (_dir, mut process) = spawn_sh(
                "printf 'the key sk-h11can'; sleep 0.4; printf 'ary-6212abcdefghijkl done\\n'",
            );
            assert!(process.wait().await.unwrap().success());
            let tail = process.output_tail();
            assert!(tail.contains("the key [REDACTED] done"), "{tail:?}");
            assert!(!tail.contains("h11can"), "{tail:?}");
        });
    }

    /// aider's usage line reads to the scrubber as a `token: value` secret: it is shown
    /// redacted, and read for usage as aider wrote it.
    #[test]
    fn a_text_clis_usage_line_is_read_before_it_is_scrubbed() {
        on_a_runtime(async {
            let (_dir, mut process) = spawn_reading(
                "printf 'Main model: openai/gpt-4.1 with diff edit format\\nTokens: 1.2k sent, 56 received.\\n'",
                Some(Transcript::new(UsageFormat::AiderText, None)),
            );
            assert!(process.wait().await.unwrap().success());
            let usage = process.usage(None).unwrap();
            assert_eq!(usage.models[0].input_tokens, Some(1150));
            assert_eq!(usage.models[0].output_tokens, Some(56));
            assert_eq!(usage.models[0].model.as_deref(), Some("openai/gpt-4.1"));
        });
    }

    /// A JSON CLI's events are shown rendered, its usage read, and a line that is not
    /// an event shown as it is.
    #[test]
    fn a_json_clis_events_are_rendered_and_read() {
        on_a_runtime(async {
            let script = r#"printf '%s\n' '{"type":"thread.started"}' 'a warning' '{"type":"item.completed","item":{"type":"agent_message","text":"Done."}}' '{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":7}}'"#;
            let (_dir, mut process) =
                spawn_reading(script, Some(Transcript::new(UsageFormat::CodexJson, None)));
            assert!(process.wait().await.unwrap().success());
            assert_eq!(process.output_tail(), "a warning\nDone.\n");
            let usage = process.usage(None).unwrap();
            assert_eq!(usage.models[0].input_tokens, Some(60));
            assert_eq!(usage.models[0].cache_read_tokens, Some(40));
        });
    }
}
