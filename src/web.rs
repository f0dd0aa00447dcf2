//! `liza serve`: the web dashboard (specs/web.md). Pages rendered on the server from one
//! read of the blackboard each, kept live over server-sent events fed by the watch the
//! TUI dashboard uses, and the few actions a person takes — each the CLI command it
//! mirrors, as the person. Everything is behind the dashboard's token; every string from
//! the blackboard is escaped; the pages load only the script and style embedded here.

pub(crate) mod actions;
pub mod auth;
pub(crate) mod events;
pub(crate) mod html;
pub(crate) mod pages;
pub mod server;

use std::net::TcpListener;
use std::sync::Arc;

use hyper::StatusCode;

use crate::blackboard::log::LogEntry;
use crate::blackboard::{TaskId, Timestamp};
use crate::ops::Project;
use auth::Token;
use html::{E, Frame};
use pages::Board;

/// The page script: live updates, actions without leaving the page, keyboard shortcuts.
pub(crate) const APP_JS: &str = include_str!("web/assets/app.js");
/// The page style: readable on a phone.
pub(crate) const APP_CSS: &str = include_str!("web/assets/app.css");

/// One dashboard: the project it shows and who may use it.
pub struct Site {
    project: Arc<Project>,
    token: Token,
    csrf: String,
    read_only: bool,
    /// The port served, which names the cookie.
    port: u16,
    /// On 127.0.0.1, the host name the dashboard is opened by (`Token::host_label`): the
    /// cookie is set only there.
    named: Option<String>,
    feed: events::Feed,
    /// The log as last parsed, by the hash of its text.
    log: std::sync::Mutex<Option<(blake3::Hash, Arc<Vec<LogEntry>>)>>,
}

/// A rendered answer.
pub struct Page {
    pub status: StatusCode,
    pub html: String,
}

impl Site {
    /// The dashboard of `project` for the holder of `token`; starts following the
    /// blackboard.
    pub fn new(
        project: Project,
        token: Token,
        read_only: bool,
        listen: std::net::SocketAddr,
    ) -> std::io::Result<Site> {
        let project = Arc::new(project);
        let feed = events::follow(project.clone())?;
        Ok(Site {
            project,
            csrf: token.csrf(),
            named: Site::named(listen).then(|| token.host_label()),
            token,
            read_only,
            port: listen.port(),
            feed,
            log: std::sync::Mutex::new(None),
        })
    }

    /// Whether a dashboard on `listen` is opened by a host name of its own: on 127.0.0.1,
    /// where every `*.localhost` name leads.
    pub fn named(listen: std::net::SocketAddr) -> bool {
        listen.ip() == std::net::Ipv4Addr::LOCALHOST
    }

    /// The page at `path` with `query`, read from the blackboard now.
    pub fn get(&self, path: &str, query: &[(String, String)]) -> Page {
        // Read before the blackboard: a change after it shows as one more on the stream.
        let seen = self.feed.seen();
        let now = Timestamp::now();
        let board = match Board::read(&self.project, now) {
            Ok(board) => board,
            Err(e) => {
                return Page {
                    status: StatusCode::INTERNAL_SERVER_ERROR,
                    html: unreadable(&e.to_string()),
                };
            }
        };
        let csrf = (!self.read_only).then_some(self.csrf.as_str());
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let found = match segments.as_slice() {
            [""] => {
                let log = self.project.store.log_tail(16);
                Some((
                    "Sprint".to_owned(),
                    "sprint",
                    pages::sprint::render(&board, &log, csrf),
                ))
            }
            ["inbox"] => Some(("Inbox".into(), "inbox", pages::inbox::render(&board, csrf))),
            ["log"] => Some((
                "Log".into(),
                "log",
                match self.whole_log() {
                    Ok(log) => {
                        pages::log::render(&log, &pages::log::Filter::from_query(query), now)
                    }
                    Err(why) => format!(
                        "<h1>Log</h1><p class=\"warn\">log.yaml cannot be read: {}</p>",
                        E(&why)
                    ),
                },
            )),
            ["task", id] => TaskId::parse(id).ok().and_then(|id| {
                let task = board.snapshot.state.task(&id)?;
                Some((
                    format!("{id}"),
                    "",
                    pages::task::render(
                        &self.project,
                        &board,
                        task,
                        &self.whole_log().unwrap_or_default(),
                        csrf,
                    ),
                ))
            }),
            ["task", id, "log", file] => TaskId::parse(id).ok().and_then(|id| {
                pages::task::render_log(&self.project, &id, file)
                    .map(|html| (format!("{id} {file}"), "", html))
            }),
            ["commit", id] => pages::commit::render(&self.project, &board, id)
                .map(|html| (format!("commit {id}"), "", html)),
            _ => None,
        };
        let (status, title, here, main) = match found {
            Some((title, here, main)) => (StatusCode::OK, title, here, main),
            None => (
                StatusCode::NOT_FOUND,
                "Not found".to_owned(),
                "",
                format!(
                    "<h1>Not found</h1><p>There is nothing at <code>{}</code> (a task archived or never made?). <a href=\"/\">The sprint</a></p>",
                    E(path)
                ),
            ),
        };
        Page {
            status,
            html: html::page(&self.frame(&board, &title, here, seen), &main),
        }
    }

    /// Runs action `name` with the form's `fields` (already checked to come from a page
    /// of this dashboard), and says what happened.
    pub(crate) fn act(&self, name: &str, fields: &[(String, String)]) -> Page {
        let Some(outcome) = actions::run(&self.project, name, fields) else {
            return Page {
                status: StatusCode::NOT_FOUND,
                html: "no such action".into(),
            };
        };
        let main = format!(
            "<p id=\"outcome\" class=\"{}\">{}</p><p class=\"meta\">as <code>{}</code></p><p><a href=\"/\">Back to the sprint</a></p>",
            match outcome.class {
                actions::Class::Done => "done",
                actions::Class::Refused | actions::Class::Failed => "refused",
            },
            E(&outcome.said),
            E(&outcome.command)
        );
        let status = match outcome.class {
            actions::Class::Done => StatusCode::OK,
            actions::Class::Refused => StatusCode::CONFLICT,
            actions::Class::Failed => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let seen = self.feed.seen();
        let html = match Board::read(&self.project, Timestamp::now()) {
            Ok(board) => html::page(&self.frame(&board, name, "", seen), &main),
            Err(_) => main,
        };
        Page { status, html }
    }

    fn frame<'a>(&'a self, board: &Board, title: &'a str, here: &'a str, seen: u64) -> Frame<'a> {
        Frame {
            seen,
            title,
            here,
            inbox: board.inbox_count(),
            csrf: (!self.read_only).then_some(self.csrf.as_str()),
            revision: board.report.revision,
        }
    }

    /// The whole log, parsed once for each content it has (pages of a live dashboard
    /// read it at every change); an unreadable log is said on the page.
    fn whole_log(&self) -> Result<Arc<Vec<LogEntry>>, String> {
        let bytes = self.project.store.log_text().map_err(|e| e.to_string())?;
        let hash = blake3::hash(&bytes);
        let mut cache = self
            .log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((cached, entries)) = cache.as_ref()
            && *cached == hash
        {
            return Ok(entries.clone());
        }
        let entries = Arc::new(crate::blackboard::log::parse_items(&bytes, 1).entries);
        *cache = Some((hash, entries.clone()));
        Ok(entries)
    }
}

/// The page shown when the blackboard cannot be read (a hand edit that does not parse).
fn unreadable(why: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>liza</title>\
         <link rel=\"stylesheet\" href=\"/assets/app.css\"><script src=\"/assets/app.js\" defer></script></head>\
         <body><main id=\"main\"><h1>The blackboard cannot be read</h1><pre>{}</pre>\
         <p><code>liza validate</code> lists every problem; <code>liza edit</code> repairs it.</p></main></body></html>",
        E(why)
    )
}

/// Serves `site` on `listener` on this thread until Ctrl-C or SIGTERM.
pub fn run(site: Site, listener: TcpListener) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(server::MAX_RENDERS + 4)
        .build()?;
    runtime.block_on(async {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let stop = async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        };
        server::serve(listener, Arc::new(site), stop).await
    })
}
