//! The HTTP side of `liza serve`: hyper (HTTP/1.1) on one thread, bounded as `/metrics`
//! is — at most [`MAX_CONNECTIONS`] connections (more are closed unread), of which at
//! most [`MAX_STREAMS`] live streams, request heads capped at [`MAX_HEAD`] and read
//! within [`HEAD_TIMEOUT`], a page's connection ended after [`CONNECTION_LIFETIME`], forms
//! capped at [`MAX_FORM`] — and every answer with the same strict headers. Reading the
//! blackboard and git run on the blocking pool, at most [`MAX_RENDERS`] pages at once so
//! an action always finds a thread.

use std::convert::Infallible;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::Semaphore;

use super::Site;
use super::events::STREAM_LIFETIME;

/// Connections served at once: pages, assets and live streams together.
pub const MAX_CONNECTIONS: usize = 96;
/// Live streams (`/events`) at once: one per open page.
pub const MAX_STREAMS: usize = 64;
/// The largest request head read, and how long a client may take to send it: as for
/// `/metrics`.
pub use crate::monitor::http::{HEAD_TIMEOUT, MAX_HEAD};
/// The largest form an action may post.
pub const MAX_FORM: usize = 64 * 1024;
/// How long a connection other than a live stream may last, whatever it does.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(30);
/// Pages rendered at once: the blocking pool keeps room for actions beside them.
pub const MAX_RENDERS: usize = 4;

/// What every page may load: its own script and style, nothing inline, nothing from
/// elsewhere, no frame around it.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
    connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

type Body = BoxBody<Bytes, Infallible>;

/// What every connection shares.
struct Shared {
    site: Arc<Site>,
    streams: Arc<Semaphore>,
    renders: Arc<Semaphore>,
}

/// Serves `site` on `listener` until `stop` resolves.
pub(crate) async fn serve(
    listener: TcpListener,
    site: Arc<Site>,
    stop: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let shared = Arc::new(Shared {
        site,
        streams: Arc::new(Semaphore::new(MAX_STREAMS)),
        renders: Arc::new(Semaphore::new(MAX_RENDERS)),
    });
    tokio::pin!(stop);
    loop {
        let (stream, permit) = tokio::select! {
            next = crate::monitor::http::next_connection(&listener, &connections) => next,
            () = &mut stop => return Ok(()),
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            // Set when the connection turns out to be a live stream.
            let live = Arc::new(AtomicBool::new(false));
            let flag = live.clone();
            let connection = crate::monitor::http::bounded_connection().serve_connection(
                TokioIo::new(stream),
                hyper::service::service_fn(move |request| {
                    answer(request, shared.clone(), flag.clone())
                }),
            );
            tokio::pin!(connection);
            // A page lasts CONNECTION_LIFETIME at most; a live stream ends itself at its
            // own lifetime.
            if tokio::time::timeout(CONNECTION_LIFETIME, &mut connection)
                .await
                .is_err()
                && live.load(Ordering::Relaxed)
            {
                let _ = tokio::time::timeout(STREAM_LIFETIME, connection).await;
            }
            drop(permit);
        });
    }
}

async fn answer(
    request: Request<Incoming>,
    shared: Arc<Shared>,
    live: Arc<AtomicBool>,
) -> Result<Response<Body>, Infallible> {
    let mut response = route(request, &shared, &live).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

async fn route(request: Request<Incoming>, shared: &Shared, live: &AtomicBool) -> Response<Body> {
    let site = &shared.site;
    let path = request.uri().path().to_owned();
    let query: Vec<(String, String)> = request
        .uri()
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();

    // The first visit trades `?token=` for the cookie, and the token leaves the address.
    if let Some((_, presented)) = query.iter().find(|(k, _)| k == "token") {
        if !site.token.matches(presented) {
            return unauthorized();
        }
        // One leading slash: `//host/` (or `/\\host/`) would send the browser elsewhere.
        let path = format!("/{}", path.trim_start_matches(['/', '\\']));
        // On 127.0.0.1 the cookie is set only under the dashboard's own host name; a
        // visit by another name is sent there, token and all.
        if let Some(named) = &site.named {
            let host = request
                .headers()
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
            if name != named {
                let mut response = plain(
                    StatusCode::SEE_OTHER,
                    "open the dashboard by its own name\n",
                );
                let to = format!(
                    "http://{named}:{}{path}?{}",
                    site.port,
                    request.uri().query().unwrap_or("")
                );
                if let Ok(to) = HeaderValue::from_str(&to) {
                    response.headers_mut().insert(header::LOCATION, to);
                }
                return response;
            }
        }
        let rest: Vec<&(String, String)> = query.iter().filter(|(k, _)| k != "token").collect();
        let mut location = path.clone();
        if !rest.is_empty() {
            location.push('?');
            location.push_str(
                &form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(rest.iter().map(|(k, v)| (k, v)))
                    .finish(),
            );
        }
        let mut response = plain(StatusCode::SEE_OTHER, "signed in\n");
        if let (Ok(to), Ok(cookie)) = (
            HeaderValue::from_str(&location),
            HeaderValue::from_str(&super::auth::set_cookie(site.port, &site.token)),
        ) {
            response.headers_mut().insert(header::LOCATION, to);
            response.headers_mut().insert(header::SET_COOKIE, cookie);
        }
        return response;
    }
    let cookies = request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok());
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if !super::auth::admitted(cookies, authorization, site.port, &site.token) {
        return unauthorized();
    }

    match (request.method(), path.as_str()) {
        (&Method::GET, "/assets/app.js") => asset("text/javascript; charset=utf-8", super::APP_JS),
        (&Method::GET, "/assets/app.css") => asset("text/css; charset=utf-8", super::APP_CSS),
        (&Method::GET, "/events") => {
            let Ok(permit) = shared.streams.clone().try_acquire_owned() else {
                return plain(StatusCode::SERVICE_UNAVAILABLE, "too many open pages\n");
            };
            live.store(true, Ordering::Relaxed);
            let mut response = Response::new(site.feed.stream(permit).boxed());
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            );
            response
        }
        (&Method::GET, _) => {
            // Held by the rendering itself: a page whose connection ended still holds its
            // slot until its rendering does.
            let Ok(rendering) = shared.renders.clone().acquire_owned().await else {
                return plain(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n");
            };
            let site = site.clone();
            let rendered = tokio::task::spawn_blocking(move || {
                let page = site.get(&path, &query);
                drop(rendering);
                page
            });
            match rendered.await {
                Ok(page) => html(page.status, page.html),
                Err(_) => plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the page could not be rendered\n",
                ),
            }
        }
        (&Method::POST, _) => action(request, site, &path).await,
        _ => plain(StatusCode::METHOD_NOT_ALLOWED, "GET pages, POST actions\n"),
    }
}

/// `POST /action/<name>`: from this site's pages only (its `Origin`, its CSRF value),
/// never in read-only mode.
async fn action(request: Request<Incoming>, site: &Arc<Site>, path: &str) -> Response<Body> {
    let Some(name) = path
        .strip_prefix("/action/")
        .filter(|n| super::actions::NAMES.contains(n))
    else {
        return plain(StatusCode::NOT_FOUND, "no such action\n");
    };
    if site.read_only {
        return plain(
            StatusCode::NOT_FOUND,
            "read-only: this dashboard takes no action\n",
        );
    }
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // This page's own origin; `https://` too, behind the TLS proxy the docs suggest.
    if let Some(origin) = request.headers().get(header::ORIGIN)
        && !origin
            .to_str()
            .is_ok_and(|o| o == format!("http://{host}") || o == format!("https://{host}"))
    {
        return plain(
            StatusCode::FORBIDDEN,
            "refused: the action came from another site\n",
        );
    }
    let Ok(body) = Limited::new(request.into_body(), MAX_FORM).collect().await else {
        return plain(StatusCode::PAYLOAD_TOO_LARGE, "the form is too large\n");
    };
    let fields: Vec<(String, String)> = form_urlencoded::parse(&body.to_bytes())
        .into_owned()
        .collect();
    let csrf = fields
        .iter()
        .find(|(k, _)| k == "csrf")
        .map(|(_, v)| v.as_str());
    if !csrf.is_some_and(|c| super::auth::same(c.as_bytes(), site.csrf.as_bytes())) {
        return plain(
            StatusCode::FORBIDDEN,
            "refused: the form lacks this dashboard's CSRF value; reload the page and try again\n",
        );
    }
    let site = site.clone();
    let name = name.to_owned();
    match tokio::task::spawn_blocking(move || site.act(&name, &fields)).await {
        Ok(page) => html(page.status, page.html),
        Err(_) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the action failed unexpectedly\n",
        ),
    }
}

fn unauthorized() -> Response<Body> {
    plain(
        StatusCode::UNAUTHORIZED,
        "401: open the address `liza serve` printed with ?token=<its token> (with --token-file: the token in that file), or send `Authorization: Bearer <token>`\n",
    )
}

fn asset(content_type: &'static str, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn html(status: StatusCode, body: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
