//! A minimal HTTP/1.1 server for `/metrics`: one thread accepting on the address given to
//! `liza watch --metrics-addr`, each request answered on its own short-lived thread, every
//! response computed fresh (`Connection: close`). Only `GET /metrics` (and `HEAD`) is
//! served; anything else gets 404 or 405. Requests are read with a timeout and a size
//! cap, so a stuck or hostile client cannot hold the watcher.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// Produces the body of `/metrics`.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

const MAX_HEAD: usize = 16 * 1024;

/// Binds `addr` and serves on a background thread; returns the bound address (port 0
/// picks a free port).
pub fn serve(addr: SocketAddr, render: Render) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new()
        .name("liza-metrics".into())
        .spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let render = render.clone();
                std::thread::spawn(move || {
                    if let Err(e) = answer(stream, &render) {
                        tracing::debug!(error = %e, "metrics request failed");
                    }
                });
            }
        })?;
    Ok(bound)
}

fn answer(stream: TcpStream, render: &Render) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // Drain the headers (bounded), so the client sees a clean close.
    let mut seen = request_line.len();
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line)?;
        seen += n;
        if n == 0 || line == "\r\n" || line == "\n" || seen > MAX_HEAD {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", render()),
        ("GET" | "HEAD", _) => ("404 Not Found", "only /metrics is served here\n".to_owned()),
        _ => ("405 Method Not Allowed", "use GET /metrics\n".to_owned()),
    };
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if method != "HEAD" {
        out.write_all(body.as_bytes())?;
    }
    out.flush()
}
