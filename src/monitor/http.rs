//! The `/metrics` endpoint of `liza watch --metrics-addr`, served by hyper (HTTP/1.1) on
//! one background thread: at most [`MAX_CONNECTIONS`] connections at a time (more are
//! closed at once), request heads capped at [`MAX_HEAD`] bytes, a head that is not read
//! within [`HEAD_TIMEOUT`] (a client sending a byte every few seconds) ends the
//! connection, and no connection lives longer than [`CONNECTION_LIFETIME`]. Every
//! response is computed fresh; only `GET /metrics` (and `HEAD`) is served, anything else
//! gets 404 or 405.

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};

/// Produces the body of `/metrics`.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// Connections served at once; a scraper needs one.
pub const MAX_CONNECTIONS: usize = 16;
/// The largest request head read (hyper's smallest buffer limit).
pub const MAX_HEAD: usize = 8 * 1024;
/// How long a client may take to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one connection may last, whatever it does.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(30);

/// Binds `addr` and serves on a background thread; returns the bound address (port 0
/// picks a free port).
pub fn serve(addr: SocketAddr, render: Render) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(2)
        .build()?;
    std::thread::Builder::new()
        .name("liza-metrics".into())
        .spawn(move || runtime.block_on(accept_loop(listener, render)))?;
    Ok(bound)
}

async fn accept_loop(listener: TcpListener, render: Render) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(error = %e, "the metrics endpoint could not start");
            return;
        }
    };
    let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (stream, permit) = next_connection(&listener, &permits).await;
        let render = render.clone();
        tokio::spawn(async move {
            let connection = bounded_connection().serve_connection(
                TokioIo::new(stream),
                hyper::service::service_fn(move |request| answer(request, render.clone())),
            );
            match tokio::time::timeout(CONNECTION_LIFETIME, connection).await {
                Ok(Err(e)) => tracing::debug!(error = %e, "metrics connection ended"),
                Err(_) => tracing::debug!("metrics connection outlived its time"),
                Ok(Ok(())) => {}
            }
            drop(permit);
        });
    }
}

/// An HTTP/1.1 connection as every server of liza keeps it (`/metrics`, `liza serve`):
/// its head capped at [`MAX_HEAD`] and read within [`HEAD_TIMEOUT`], no keep-alive.
pub(crate) fn bounded_connection() -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD)
        .keep_alive(false);
    builder
}

/// The next connection `listener` accepts within the `permits` left (`liza serve` takes
/// its connections the same way). Over the limit a connection is closed unread: nothing
/// grows with clients. A failed accept (out of file descriptors and the like) is tried
/// again shortly. Cancel-safe: nothing is lost when another branch of a `select!` wins.
pub(crate) async fn next_connection(
    listener: &tokio::net::TcpListener,
    permits: &Arc<tokio::sync::Semaphore>,
) -> (tokio::net::TcpStream, tokio::sync::OwnedSemaphorePermit) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        match permits.clone().try_acquire_owned() {
            Ok(permit) => return (stream, permit),
            Err(_) => drop(stream),
        }
    }
}

async fn answer(
    request: Request<Incoming>,
    render: Render,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let head = request.method() == Method::HEAD;
    let (status, body) = match (request.method(), request.uri().path()) {
        (&Method::GET | &Method::HEAD, "/metrics") => {
            // Reading the blackboard blocks: off the connections' thread. Not through
            // `off_runtime`, which carries a panic on to its caller (here it would drop
            // the connection unanswered): a rendering that panics answers this scrape
            // with a 500, which Prometheus counts as a failed scrape.
            match tokio::task::spawn_blocking(move || render()).await {
                Ok(body) => (StatusCode::OK, body),
                Err(_) => (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "# rendering the metrics failed\n".to_owned(),
                ),
            }
        }
        (&Method::GET | &Method::HEAD, _) => (
            StatusCode::NOT_FOUND,
            "only /metrics is served here\n".to_owned(),
        ),
        _ => (
            StatusCode::METHOD_NOT_ALLOWED,
            "use GET /metrics\n".to_owned(),
        ),
    };
    let length = body.len();
    let body = if head {
        Bytes::new()
    } else {
        Bytes::from(body)
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(addr: SocketAddr) -> String {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: liza\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    }

    /// A rendering that panics fails its scrape with a 500 (Prometheus marks the target
    /// down) and the next scrape is served.
    #[test]
    fn a_rendering_that_panics_answers_500_and_the_server_stays_up() {
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = calls.clone();
        let render: Render = Arc::new(move || {
            if seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                panic!("the blackboard could not be rendered");
            }
            "liza_tasks 1\n".to_owned()
        });
        let addr = serve("127.0.0.1:0".parse().unwrap(), render).unwrap();
        let failed = get(addr);
        assert!(failed.starts_with("HTTP/1.1 500"), "{failed}");
        assert!(
            failed.ends_with("# rendering the metrics failed\n"),
            "{failed}"
        );
        let served = get(addr);
        assert!(served.starts_with("HTTP/1.1 200"), "{served}");
        assert!(served.ends_with("liza_tasks 1\n"), "{served}");
    }
}
