//! Unary gRPC calls to an etcd member over HTTP/2 (hyper's client): the request one
//! length-prefixed protobuf message, the answer one message and a `grpc-status`, in the
//! trailers or — when the call failed before any answer — in the headers. One connection
//! per member, made on first use (or ahead of it: [`Grpc::warm`]) and kept while the
//! member keeps it open; calls share it as HTTP/2 streams.

use std::sync::Mutex;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http2::{Builder, SendRequest};
use hyper::header::{CONTENT_TYPE, HeaderMap, TE};
use hyper_util::rt::{TokioExecutor, TokioIo};

/// How much a member may send before the client acknowledges it, per call and per
/// connection: a whole blackboard read comes back in one window, without round trips for
/// flow control.
const WINDOW: u32 = 16 * 1024 * 1024;

/// How a call ended without an answer.
#[derive(Debug)]
pub(crate) enum CallError {
    /// Nothing reached the member: no connection could be made.
    NotSent(String),
    /// The request may have reached it, but no answer came back (a timeout, a connection
    /// lost): a change may or may not have been applied.
    NoAnswer(String),
    /// The member answered with a gRPC status other than OK.
    Status { code: i64, message: String },
    /// An answer that is not one gRPC message.
    BadAnswer(String),
}

/// The connections to the members of one cluster, by the member's index.
pub(crate) struct Grpc {
    connections: Mutex<Vec<Option<SendRequest<Full<Bytes>>>>>,
    /// Held while a connection to the member is being made: a call waits for the one
    /// under way rather than make a second.
    connecting: Vec<tokio::sync::Mutex<()>>,
    /// When and why the last attempt at a connection to the member failed: a call that
    /// waited for that attempt tries the next member at once rather than wait as long
    /// again on this one (a call that came after it tries again).
    failed: Mutex<Vec<Option<(std::time::Instant, String)>>>,
}

impl Grpc {
    /// No connection yet to any of `members`.
    pub(crate) fn new(members: usize) -> Self {
        Grpc {
            connections: Mutex::new(vec![None; members]),
            connecting: (0..members).map(|_| tokio::sync::Mutex::new(())).collect(),
            failed: Mutex::new(vec![None; members]),
        }
    }

    /// Makes the connection to member `member` now, before any call needs it: a process
    /// that will call etcd connects while it does its other work (a new `liza` process
    /// reads its checkout's files meanwhile), so its first call does not wait for TCP's
    /// and HTTP/2's handshakes.
    pub(crate) async fn warm(&self, member: usize, endpoint: &str, timeout: Duration) {
        let _ = self.sender(member, endpoint, timeout).await;
    }

    /// The kept connection to member `member`, else a new one — or the one a call is
    /// making, once made.
    async fn sender(
        &self,
        member: usize,
        endpoint: &str,
        timeout: Duration,
    ) -> Result<SendRequest<Full<Bytes>>, CallError> {
        if let Some(sender) = self.kept(member) {
            return Ok(sender);
        }
        let waiting_since = std::time::Instant::now();
        let _connecting = self.connecting[member].lock().await;
        if let Some(sender) = self.kept(member) {
            return Ok(sender);
        }
        let failed = |at| {
            self.failed.lock().unwrap_or_else(|p| p.into_inner())[member]
                .clone()
                .filter(|(when, _)| *when >= at)
        };
        // The attempt this call waited for failed: so would this one, as slowly.
        if let Some((_, detail)) = failed(waiting_since) {
            return Err(CallError::NotSent(detail));
        }
        let attempt = self.connect(member, endpoint, timeout).await;
        if let Err(CallError::NotSent(detail)) = &attempt {
            self.failed.lock().unwrap_or_else(|p| p.into_inner())[member] =
                Some((std::time::Instant::now(), detail.clone()));
        }
        attempt
    }

    fn kept(&self, member: usize) -> Option<SendRequest<Full<Bytes>>> {
        let connections = self.connections.lock().unwrap_or_else(|p| p.into_inner());
        connections[member].clone().filter(|c| !c.is_closed())
    }

    fn keep(&self, member: usize, connection: Option<SendRequest<Full<Bytes>>>) {
        let mut connections = self.connections.lock().unwrap_or_else(|p| p.into_inner());
        connections[member] = connection;
    }

    async fn connect(
        &self,
        member: usize,
        endpoint: &str,
        timeout: Duration,
    ) -> Result<SendRequest<Full<Bytes>>, CallError> {
        let tcp =
            match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(endpoint)).await {
                Err(_) => return Err(CallError::NotSent("timed out connecting".into())),
                Ok(Err(e)) => {
                    return Err(CallError::NotSent(format!(
                        "connection refused or unreachable ({e})"
                    )));
                }
                Ok(Ok(tcp)) => tcp,
            };
        // Requests are small frames written as they come: not held back for more.
        let _ = tcp.set_nodelay(true);
        // The handshake only writes HTTP/2's preface: it waits for nothing.
        let (sender, connection) = Builder::new(TokioExecutor::new())
            .initial_stream_window_size(WINDOW)
            .initial_connection_window_size(WINDOW)
            .handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| CallError::NotSent(e.to_string()))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        self.keep(member, Some(sender.clone()));
        Ok(sender)
    }

    /// Calls `method` (`/etcdserverpb.KV/Txn`) of the member at `endpoint` (`host:port`,
    /// number `member`) with `message`, waiting at most `timeout` for the connection and
    /// as long again for the answer; the answer's message.
    pub(crate) async fn unary(
        &self,
        member: usize,
        endpoint: &str,
        method: &str,
        message: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, CallError> {
        let mut sender = self.sender(member, endpoint, timeout).await?;
        if sender.ready().await.is_err() {
            // Closed by the member since it was last used: nothing was sent on it.
            self.keep(member, None);
            sender = self.sender(member, endpoint, timeout).await?;
            sender
                .ready()
                .await
                .map_err(|e| CallError::NotSent(e.to_string()))?;
        }
        let length = u32::try_from(message.len())
            .map_err(|_| CallError::NotSent("a message over 4 GiB".into()))?;
        let mut frame = Vec::with_capacity(5 + message.len());
        frame.push(0); // not compressed
        frame.extend_from_slice(&length.to_be_bytes());
        frame.extend_from_slice(message);
        let request = hyper::Request::post(format!("http://{endpoint}{method}"))
            .header(CONTENT_TYPE, "application/grpc")
            .header(TE, "trailers")
            .body(Full::new(Bytes::from(frame)))
            .map_err(|e| CallError::NotSent(e.to_string()))?;
        let answered = tokio::time::timeout(timeout, async {
            let response = sender.send_request(request).await?;
            let (head, body) = response.into_parts();
            let body = body.collect().await?;
            Ok::<_, hyper::Error>((head, body))
        })
        .await;
        let (head, body) = match answered {
            Err(_) => {
                // A member that stopped answering may hold the connection open for
                // minutes: the next call makes a new one rather than wait on it.
                self.keep(member, None);
                return Err(CallError::NoAnswer("timed out".into()));
            }
            Ok(Err(e)) => {
                // The connection may be what failed: the next call makes a new one.
                self.keep(member, None);
                if refused_before_processing(&e) {
                    return Err(CallError::NotSent(
                        "the member refused the call before processing it (REFUSED_STREAM)".into(),
                    ));
                }
                return Err(CallError::NoAnswer(e.to_string()));
            }
            Ok(Ok(answer)) => answer,
        };
        if head.status != hyper::StatusCode::OK {
            // gRPC's mapping of HTTP statuses: a gateway or proxy that could not reach
            // the member is "unavailable", anything else "unknown".
            let code = match head.status.as_u16() {
                502..=504 => 14,
                _ => 2,
            };
            return Err(CallError::Status {
                code,
                message: format!("HTTP {}", head.status),
            });
        }
        let trailers = body.trailers().cloned().unwrap_or_default();
        // A call that failed before any answer sends its status in the headers alone.
        let (code, text) = status(&head.headers)
            .or_else(|| status(&trailers))
            .ok_or_else(|| CallError::BadAnswer("an answer without a grpc-status".into()))?;
        if code != 0 {
            return Err(CallError::Status {
                code,
                message: text,
            });
        }
        let bytes = body.to_bytes();
        match bytes.split_first_chunk::<5>() {
            Some(([0, length @ ..], rest))
                if u32::from_be_bytes(*length) as usize == rest.len() =>
            {
                Ok(rest.to_vec())
            }
            Some(([flag, ..], _)) if *flag != 0 => Err(CallError::BadAnswer(
                "a compressed message (none was asked for)".into(),
            )),
            _ => Err(CallError::BadAnswer(format!(
                "{} bytes that are not one gRPC message",
                bytes.len()
            ))),
        }
    }
}

/// The gRPC status code and message in `headers`, if they hold one.
fn status(headers: &HeaderMap) -> Option<(i64, String)> {
    let code = headers.get("grpc-status")?.to_str().ok()?.parse().ok()?;
    let message = headers
        .get("grpc-message")
        .map(|m| percent_decoded(m.as_bytes()))
        .unwrap_or_default();
    Some((code, message))
}

/// gRPC's `grpc-message`: UTF-8, with `%XX` for bytes outside printable ASCII.
fn percent_decoded(text: &[u8]) -> String {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (
            text[i],
            text.get(i + 1).copied().and_then(hex),
            text.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (b, ..) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether the member reset the call's stream with REFUSED_STREAM: closed before any
/// processing (RFC 9113 §8.7), so nothing of it was applied and it may go to another
/// member. (A GOAWAY is not taken as such: whether it came before or after the call's
/// stream was processed is not told apart here.)
fn refused_before_processing(e: &hyper::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(error) = source {
        if let Some(h2) = error.downcast_ref::<h2::Error>() {
            return h2.is_reset()
                && h2.is_remote()
                && h2.reason() == Some(h2::Reason::REFUSED_STREAM);
        }
        source = error.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grpc_message_is_percent_decoded_and_a_stray_percent_kept() {
        assert_eq!(
            percent_decoded(b"etcdserver: request is too large"),
            "etcdserver: request is too large"
        );
        assert_eq!(percent_decoded(b"caf%C3%A9 100%"), "café 100%");
        assert_eq!(percent_decoded(b"%zz%4"), "%zz%4");
    }
}
