//! A scripted OpenAI-compatible model server on loopback: it answers
//! `POST …/chat/completions` from a script, so the tests and `liza demo` drive the
//! built-in agent over real HTTP with no model. Each step answers requests whose messages
//! contain its `when` text (and `and_when`; any request when absent), `times` times (0: forever), in
//! script order. Steps can also misbehave on purpose — an HTTP status, a delay, a
//! byte-by-byte trickle, a huge body, a dropped connection — for the R7 tests.
//!
//! Script (JSON):
//! ```json
//! {"steps": [
//!   {"when": "task t-1", "content": "{\"edits\": []}", "usage": {"prompt_tokens": 12, "completion_tokens": 3}},
//!   {"status": 429, "headers": {"retry-after": "1"}, "body": "{\"error\": {\"message\": \"slow down\"}}"},
//!   {"delay_ms": 3000, "content": "late"},
//!   {"trickle_ms": 50, "content": "slow"},
//!   {"body_bytes": 52428800},
//!   {"close": true}
//! ]}
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::client::Usage;

/// What the server answers, read from the JSON above.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The steps; a request gets the first one that matches it and has answers left.
    pub steps: Vec<Step>,
}

/// One scripted answer, and which requests it answers.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Text the request's messages must contain.
    #[serde(default)]
    pub when: Option<String>,
    /// More text the messages must contain too (`liza retro`'s tests match an identity
    /// and a chunk).
    #[serde(default)]
    pub and_when: Option<String>,
    /// How many requests this step answers; 0 = all of them. Default 1.
    #[serde(default)]
    pub times: Option<u32>,
    /// The assistant message of a 200 chat completion.
    #[serde(default)]
    pub content: Option<String>,
    /// Reported usage (default 10 + 5); `no_usage` leaves it out.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Leave the usage out of the answer.
    #[serde(default)]
    pub no_usage: bool,
    /// Another status, with `body` as the raw body.
    #[serde(default)]
    pub status: Option<u16>,
    /// The raw body, sent instead of a chat completion built from `content`.
    #[serde(default)]
    pub body: Option<String>,
    /// Headers added to the answer (`retry-after`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Wait this long before answering, or before dropping the connection.
    #[serde(default)]
    pub delay_ms: u64,
    /// Send the body one byte at a time, this far apart.
    #[serde(default)]
    pub trickle_ms: u64,
    /// A 200 whose body is this many bytes of padding.
    #[serde(default)]
    pub body_bytes: Option<usize>,
    /// Drop the connection without answering.
    #[serde(default)]
    pub close: bool,
}

impl Step {
    /// A plain answer to any request.
    pub fn answer(content: impl Into<String>) -> Step {
        Step {
            content: Some(content.into()),
            ..Step::default()
        }
    }

    /// A plain answer to requests whose messages contain `when`.
    pub fn answer_when(when: impl Into<String>, content: impl Into<String>) -> Step {
        Step {
            when: Some(when.into()),
            ..Step::answer(content)
        }
    }
}

/// One request the server received.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The request's path (`/v1/chat/completions`).
    pub path: String,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    /// The request's body (lossy UTF-8).
    pub body: String,
    /// When it was read.
    pub received: std::time::Instant,
}

impl Recorded {
    /// The request's messages, concatenated (what `when` is matched against).
    pub fn messages_text(&self) -> String {
        messages_text(&self.body)
    }
}

struct Shared {
    steps: Vec<(Step, u32)>,
    requests: Vec<Recorded>,
}

/// A running server; stopped when dropped.
pub struct ScriptedServer {
    addr: std::net::SocketAddr,
    shared: Arc<Mutex<Shared>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ScriptedServer {
    /// Binds 127.0.0.1 on a free port and serves `script` on a thread of its own.
    pub fn start(script: Script) -> std::io::Result<ScriptedServer> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Mutex::new(Shared {
            steps: script.steps.into_iter().map(|s| (s, 0)).collect(),
            requests: Vec::new(),
        }));
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name("scripted-model-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime for the scripted server");
                runtime.block_on(serve(listener, state, stopped));
            })?;
        Ok(ScriptedServer {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `LIZA_LLM_BASE_URL` for this server.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .lock()
            .map(|s| s.requests.clone())
            .unwrap_or_default()
    }

    /// Steps with answers left (a `times: 0` step never runs out).
    pub fn unused_steps(&self) -> usize {
        self.shared.lock().map_or(0, |s| {
            s.steps
                .iter()
                .filter(|(step, used)| {
                    step.times.unwrap_or(1) != 0 && *used < step.times.unwrap_or(1)
                })
                .count()
        })
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Mutex<Shared>>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(listener) = TcpListener::from_std(listener) else {
        return;
    };
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    tokio::spawn(handle(stream, shared.clone()));
                }
            }
        }
    }
}

async fn handle(mut stream: TcpStream, shared: Arc<Mutex<Shared>>) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let step = {
        let Ok(mut s) = shared.lock() else { return };
        let text = request.messages_text();
        s.requests.push(request);
        let found = s.steps.iter_mut().find(|(step, used)| {
            let times = step.times.unwrap_or(1);
            (times == 0 || *used < times)
                && step.when.as_ref().is_none_or(|w| text.contains(w.as_str()))
                && step
                    .and_when
                    .as_ref()
                    .is_none_or(|w| text.contains(w.as_str()))
        });
        found.map(|(step, used)| {
            *used += 1;
            step.clone()
        })
    };
    let Some(step) = step else {
        let body =
            json!({"error": {"message": "the scripted server has no step left for this request"}});
        let _ = write_response(
            &mut stream,
            500,
            &BTreeMap::new(),
            body.to_string().as_bytes(),
            0,
        )
        .await;
        return;
    };
    if step.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(step.delay_ms)).await;
    }
    if step.close {
        return; // dropped without a word
    }
    if let Some(n) = step.body_bytes {
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {n}\r\nconnection: close\r\n\r\n"
        );
        if stream.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let chunk = vec![b' '; 64 * 1024];
        let mut left = n;
        while left > 0 {
            let take = left.min(chunk.len());
            if stream.write_all(&chunk[..take]).await.is_err() {
                return; // the client gave up, as it should
            }
            left -= take;
        }
        return;
    }
    let status = step.status.unwrap_or(200);
    let body = match (&step.body, &step.content) {
        (Some(body), _) => body.clone(),
        (None, Some(content)) => completion(content, &step),
        (None, None) => String::new(),
    };
    let _ = write_response(
        &mut stream,
        status,
        &step.headers,
        body.as_bytes(),
        step.trickle_ms,
    )
    .await;
}

fn completion(content: &str, step: &Step) -> String {
    let mut body = json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    });
    if !step.no_usage {
        let usage = step.usage.unwrap_or(Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
        });
        body["usage"] = json!({
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total(),
        });
    }
    body.to_string()
}

async fn write_response(
    stream: &mut TcpStream,
    status: u16,
    headers: &BTreeMap<String, String>,
    body: &[u8],
    trickle_ms: u64,
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        reason(status),
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    if trickle_ms == 0 {
        stream.write_all(body).await?;
    } else {
        for byte in body {
            stream.write_all(std::slice::from_ref(byte)).await?;
            stream.flush().await?;
            tokio::time::sleep(Duration::from_millis(trickle_ms)).await;
        }
    }
    stream.flush().await?;
    stream.shutdown().await
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Reads one HTTP/1.1 request (headers up to 64 KB, a Content-Length body up to 16 MB).
async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_owned();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if length > 16 * 1024 * 1024 {
        return None;
    }
    let mut body = buf[header_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Some(Recorded {
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        received: std::time::Instant::now(),
    })
}

fn messages_text(body: &str) -> String {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return body.to_owned();
    };
    value
        .get("messages")
        .and_then(Value::as_array)
        .map(|messages| {
            messages
                .iter()
                .filter_map(|m| m.get("content").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}
