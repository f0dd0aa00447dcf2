//! `liza watch [--metrics-addr ADDR]`: the alarm rules on every change and every 10 s,
//! continuous circuit-breaker analysis, the deadline checkpoint, and `/metrics`.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::json;

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::monitor::Monitor;

#[derive(clap::Args)]
pub(super) struct WatchArgs {
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
    /// Seconds between evaluations when nothing changes.
    #[arg(long, default_value_t = crate::monitor::INTERVAL.as_secs_f64(), value_name = "SECONDS")]
    interval: f64,
    /// Stop after this many evaluations (scripts and tests).
    #[arg(long, hide = true)]
    cycles: Option<u64>,
}

pub(super) fn cmd_watch(args: WatchArgs, out: &Output) -> Result<i32, CliError> {
    let cwd = current_dir()?;
    if !(args.interval.is_finite() && args.interval > 0.0) {
        return Err(CliError::usage(format!(
            "--interval {} is not a positive number of seconds",
            args.interval
        )));
    }
    let interval = Duration::from_secs_f64(args.interval);
    let monitor = Monitor::open(
        &cwd,
        Box::new(|line| eprintln!("{}", crate::terminal_text::visible(line))),
    )?;
    if let Some(addr) = args.metrics_addr {
        let bound = monitor.serve_metrics(addr).map_err(|e| {
            CliError::refused(format!("cannot serve metrics on {addr}: {e}"))
                .with_hint("choose a free address, e.g. --metrics-addr 127.0.0.1:9464")
        })?;
        // The bound address matters when the port was 0 (any free port).
        eprintln!("liza watch: metrics at http://{bound}/metrics");
    }
    if args.cycles.is_none() && !out.json {
        eprintln!(
            "liza watch: evaluating the alarm rules on every change and every {} s; Ctrl-C stops",
            args.interval
        );
    }
    // Ctrl-C or SIGTERM ends the watcher after its cycle, so the webhook's queue is
    // delivered (a few seconds at most) rather than dropped.
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    stop_on_signal(stop.clone());
    let (cycles, fired) = monitor.run(interval, args.cycles, &stop);
    out.ok(json!({ "cycles": cycles, "fired": fired }), String::new);
    Ok(EXIT_OK)
}

/// Sets `stop` on SIGINT or SIGTERM, and exits at once on a second one (a thread of its
/// own).
fn stop_on_signal(stop: std::sync::Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(async {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut int), Ok(mut term)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) else {
                return;
            };
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            // A second signal while the last cycle or the webhook's queue runs (an etcd
            // that does not answer): the person means now.
            let code = tokio::select! {
                _ = int.recv() => 130,
                _ = term.recv() => 143,
            };
            eprintln!("liza watch: stopped at once; undelivered alarms stay in .liza/alerts.log");
            std::process::exit(code);
        });
    });
}
