//! The supervisor's end of the channel (specs/sandbox.md *The blackboard through the
//! supervisor*): while a sandboxed run lasts, every `liza` command its agent types
//! arrives on a Unix socket only that sandbox can reach, and runs here as `liza` with
//! this agent's identity and generation — taken from the channel, never from anything
//! the agent sent — in channel mode (only the commands the role may run, file arguments
//! read from what the sandbox sent). Its output and exit code go back as they come.
//! Connections run on the supervisor's runtime; the git sync before each command on
//! the blocking pool.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::off_runtime::off_runtime;
use crate::sandbox::channel::{self, Kind, MAX_FILES, Request};

/// Commands of one agent that may run at once (more wait).
const CONCURRENT: usize = 8;
/// Connections one agent may hold open at once, waiting ones included (more are closed
/// at once: a run cannot exhaust its supervisor's file descriptors).
const CONNECTIONS: usize = 32;
/// How long a client may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What the supervisor needs to run an agent's commands.
pub(super) struct ChannelContext {
    /// The `liza` executable.
    pub exe: PathBuf,
    /// The command's whole environment: the agent's identity, the channel mode, the
    /// store; no secrets.
    pub env: Vec<(String, String)>,
    /// Where commands run unless the agent typed them deeper inside it.
    pub workdir: PathBuf,
    /// Brings the run's git work in before a command reads it (blocking).
    pub before: Arc<dyn Fn() + Send + Sync>,
}

/// A running channel: stopped (and its commands killed) when dropped.
pub(super) struct ChannelServer {
    accept: tokio::task::JoinHandle<()>,
}

impl ChannelServer {
    /// Serves `listener` until stopped.
    pub(super) fn start(listener: UnixListener, context: Arc<ChannelContext>) -> ChannelServer {
        let accept = tokio::spawn(async move {
            let permits = Arc::new(Semaphore::new(CONCURRENT));
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else {
                            // Out of descriptors, say: wait rather than spin.
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        };
                        if connections.len() >= CONNECTIONS {
                            drop(stream);
                            continue;
                        }
                        let (context, permits) = (context.clone(), permits.clone());
                        connections.spawn(async move {
                            let Ok(_permit) = permits.acquire().await else { return };
                            if let Err(e) = serve(stream, &context).await {
                                tracing::debug!(error = %e, "a channel connection ended badly");
                            }
                        });
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        ChannelServer { accept }
    }
}

impl Drop for ChannelServer {
    fn drop(&mut self) {
        // Aborting the loop drops its connections, whose commands are killed on drop.
        self.accept.abort();
    }
}

/// The files a request carries, each written to a private directory the command is
/// told of (by name, in its environment): the directory, kept while the command runs.
fn hold_files(
    names: &[String],
    files: &[Vec<u8>],
) -> std::io::Result<(
    tempfile::TempDir,
    serde_json::Map<String, serde_json::Value>,
)> {
    let held = tempfile::Builder::new().prefix("liza-channel-").tempdir()?;
    let mut map = serde_json::Map::new();
    for (i, (name, bytes)) in names.iter().zip(files).enumerate() {
        let path = held.path().join(format!("file-{i}"));
        std::fs::write(&path, bytes)?;
        map.insert(
            name.clone(),
            serde_json::Value::String(path.display().to_string()),
        );
    }
    Ok((held, map))
}

/// One connection: a request, the command run, its output and exit code sent back.
async fn serve(mut stream: UnixStream, context: &ChannelContext) -> std::io::Result<()> {
    let received = tokio::time::timeout(REQUEST_TIMEOUT, receive(&mut stream)).await;
    let (request, files) = match received {
        Ok(Ok(got)) => got,
        Ok(Err(e)) => return refuse(&mut stream, &format!("a malformed request: {e}")).await,
        Err(_) => return refuse(&mut stream, "the request did not arrive in time").await,
    };
    let names = request.files.clone();
    // Kept until the command has run (dropping it removes the files).
    let (_held, map) = off_runtime(move || hold_files(&names, &files)).await?;
    // The command runs where the run works, never where the agent says it typed it: a
    // project root is found from there, and the agent could put a `.git` of its own
    // anywhere in its worktree.
    let cwd = &context.workdir;
    let before = context.before.clone();
    off_runtime(move || before()).await;
    let mut child = tokio::process::Command::new(&context.exe)
        .args(&request.argv)
        .env_clear()
        .envs(context.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env(
            crate::ops::CHANNEL_FILES_VAR,
            serde_json::Value::Object(map).to_string(),
        )
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()?;
    // What the command starts (git, a hook) goes with it when the client goes away or
    // the run ends.
    let _group = child.id().map(GroupKill);
    let (Some(mut out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
        return refuse(&mut stream, "the command's output could not be read").await;
    };
    let (mut from_client, mut to_client) = stream.split();
    let (mut out_open, mut err_open) = (true, true);
    let mut out_buf = vec![0u8; 16 * 1024];
    let mut err_buf = vec![0u8; 16 * 1024];
    while out_open || err_open {
        tokio::select! {
            n = out.read(&mut out_buf), if out_open => match n {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => send(&mut to_client, Kind::Stdout, &out_buf[..n]).await?,
            },
            n = err.read(&mut err_buf), if err_open => match n {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => send(&mut to_client, Kind::Stderr, &err_buf[..n]).await?,
            },
            // The client went away (the agent killed its `liza`): the command goes too.
            _ = gone(&mut from_client) => return Ok(()),
        }
    }
    let status = child.wait().await?;
    let code = status.code().unwrap_or(1);
    send(&mut to_client, Kind::Exit, &code.to_be_bytes()).await
}

/// The request and the files it names.
async fn receive(stream: &mut UnixStream) -> std::io::Result<(Request, Vec<Vec<u8>>)> {
    let (kind, payload) = read(stream)
        .await?
        .ok_or_else(|| channel::bad("no request".into()))?;
    if kind != Kind::Request {
        return Err(channel::bad(format!("expected a request, got {kind:?}")));
    }
    if payload.len() > channel::MAX_REQUEST {
        return Err(channel::bad(format!(
            "a request of {} bytes is over the {}-byte limit",
            payload.len(),
            channel::MAX_REQUEST
        )));
    }
    let request: Request =
        serde_json::from_slice(&payload).map_err(|e| channel::bad(e.to_string()))?;
    if request.files.len() > MAX_FILES {
        return Err(channel::bad(format!(
            "{} files named; at most {MAX_FILES}",
            request.files.len()
        )));
    }
    let mut files = Vec::new();
    for _ in &request.files {
        match read(stream).await? {
            Some((Kind::File, bytes)) => files.push(bytes),
            _ => {
                return Err(channel::bad(
                    "a file named in the request did not follow".into(),
                ));
            }
        }
    }
    Ok((request, files))
}

async fn read(stream: &mut (impl AsyncRead + Unpin)) -> std::io::Result<Option<(Kind, Vec<u8>)>> {
    let mut head = [0u8; 5];
    match stream.read_exact(&mut head).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let (kind, len) = channel::parse_header(head)?;
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).await?;
    Ok(Some((kind, payload)))
}

async fn send(
    stream: &mut (impl AsyncWrite + Unpin),
    kind: Kind,
    payload: &[u8],
) -> std::io::Result<()> {
    stream
        .write_all(&channel::header(kind, payload.len()))
        .await?;
    stream.write_all(payload).await
}

/// Resolves when the client closes its end (it sends nothing after its request).
async fn gone(stream: &mut (impl AsyncRead + Unpin)) {
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Refuses a request with a message and exit code 64 (a usage error).
async fn refuse(stream: &mut UnixStream, why: &str) -> std::io::Result<()> {
    send(
        stream,
        Kind::Stderr,
        format!("error: liza's channel: {why}\n").as_bytes(),
    )
    .await?;
    send(stream, Kind::Exit, &64i32.to_be_bytes()).await
}

/// Kills a command's process group when dropped (after it ended, its strays).
struct GroupKill(u32);

impl Drop for GroupKill {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0)
            && pid > 1
        {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}
