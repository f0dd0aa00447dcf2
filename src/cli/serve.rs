//! `liza serve [--listen ADDR] [--token-file F] [--read-only]`: the web dashboard
//! (specs/web.md), until Ctrl-C.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::ops::Project;
use crate::web::auth::Token;

#[derive(clap::Args)]
pub(super) struct ServeArgs {
    /// The address to serve on: loopback unless you say otherwise (port 0: any free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7780")]
    listen: SocketAddr,
    /// Keep the token in this file (made, mode 0600, with a new token when absent) instead
    /// of a new one each start.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Show the pages without any action (no pause, note, unblock…).
    #[arg(long)]
    read_only: bool,
}

pub(super) fn cmd_serve(args: ServeArgs, out: &Output) -> Result<i32, CliError> {
    let project = Project::discover(&current_dir()?)?;
    let token = match &args.token_file {
        Some(file) => Token::from_file(file).map_err(|why| {
            CliError::refused(why).with_hint(
                "every request needs the token: a non-loopback listen is never served without one",
            )
        })?,
        None => Token::random()
            .map_err(|e| CliError::refused(format!("no random token could be made: {e}")))?,
    };
    let listener = TcpListener::bind(args.listen).map_err(|e| {
        CliError::refused(format!("cannot listen on {}: {e}", args.listen))
            .with_hint("choose a free address, e.g. --listen 127.0.0.1:7781")
    })?;
    let bound = listener
        .local_addr()
        .map_err(|e| CliError::refused(format!("cannot read the bound address: {e}")))?;
    let site = crate::web::Site::new(project, token.clone(), args.read_only, bound)
        .map_err(|e| CliError::refused(format!("cannot follow the blackboard: {e}")))?;
    // On 127.0.0.1, a host name of the dashboard's own (`Token::host_label`): its cookie
    // then reaches no other server on this machine. Elsewhere, the name others reach it
    // by.
    let host = if crate::web::Site::named(bound) {
        format!("{}:{}", token.host_label(), bound.port())
    } else if bound.ip().is_unspecified() {
        nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .map(|h| format!("{h}:{}", bound.port()))
            .unwrap_or_else(|| bound.to_string())
    } else {
        bound.to_string()
    };
    let url = match &args.token_file {
        Some(file) => format!("http://{host}/?token=<the token in {}>", file.display()),
        None => format!("http://{host}/?token={}", token.as_str()),
    };
    out.ok(
        serde_json::json!({
            "listen": bound.to_string(),
            "url": if args.token_file.is_some() { format!("http://{host}/") } else { url.clone() },
            "read_only": args.read_only,
        }),
        || {
            let mut text = format!("liza serve: {url}\n");
            if bound.ip().is_unspecified()
                && let Some(ip) = routed_address()
            {
                // A phone on the same network reaches it by address more often than by name.
                text.push_str(&format!(
                    "liza serve: or http://{ip}:{}/?token={}\n",
                    bound.port(),
                    if args.token_file.is_some() { "<the token in the file>" } else { token.as_str() }
                ));
            }
            if !bound.ip().is_loopback() {
                text.push_str("liza serve: listening beyond this machine over plain HTTP: the token crosses the network in clear; prefer an SSH tunnel or a TLS proxy\n");
            }
            if args.read_only {
                text.push_str("liza serve: read-only: the pages take no action\n");
            }
            text.push_str("liza serve: Ctrl-C stops\n");
            text
        },
    );
    crate::web::run(site, listener)
        .map_err(|e| CliError::refused(format!("the dashboard stopped: {e}")))?;
    Ok(EXIT_OK)
}

/// This machine's address on the network it routes to by default: a UDP socket
/// "connected" to a documentation address (RFC 5737) says which source it would use; no
/// packet is sent. None without a route.
fn routed_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_unspecified() && !ip.is_loopback()).then_some(ip)
}
