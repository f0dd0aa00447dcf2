//! `liza up`: a tmux session with one pane per agent — planner-1, coder-1..N,
//! code-reviewer-1..M, each running the `liza-agent` beside this `liza` with its id —
//! and a pane with `liza status --watch`; pane titles show the agent ids. Ids are the
//! lowest not held by a live agent. `liza up --down` stops the agents with SIGINT (they
//! finish their step, save work and unregister), waits for them, and removes the session.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::blackboard::{Role, State};
use crate::ops::Project;
use crate::tmux::Tmux;

/// The variables of this terminal each agent pane gets — and does not get from the tmux
/// server when this terminal has them unset: the built-in agent's dry run and endpoint,
/// the scripted agent's scenario (specs/operations.md *tmux*).
const PASSED_TO_AGENTS: &[&str] = &[
    "DRY_RUN",
    "LIZA_LLM_BASE_URL",
    "LIZA_LLM_MODEL",
    "LIZA_LLM_TIMEOUT",
    "FAKE_AGENT_DIR",
];

#[derive(clap::Args)]
pub(super) struct UpArgs {
    /// Coder panes.
    #[arg(long, default_value_t = 2)]
    coders: u32,
    /// Code-reviewer panes.
    #[arg(long, default_value_t = 1)]
    reviewers: u32,
    /// The agents' backend (default: config.default_cli).
    #[arg(long)]
    cli: Option<String>,
    /// The tmux session (default: liza-<repository directory>).
    #[arg(long)]
    session: Option<String>,
    /// Attach (or switch the current client) to the session.
    #[arg(long)]
    attach: bool,
    /// Stop the session's agents gracefully and remove the session.
    #[arg(long)]
    down: bool,
}

/// The pane option naming the agent a pane runs.
const AGENT_OPTION: &str = "@liza-agent";

/// How long `--down` waits for the agents to stop before it sends SIGTERM.
const GRACE: Duration = Duration::from_secs(30);

pub(super) fn cmd_up(args: UpArgs, out: &Output) -> Result<i32, CliError> {
    let project = Project::discover(&current_dir()?)?;
    let tmux = Tmux::find()?;
    let session = match &args.session {
        Some(s) => checked_session(s)?,
        None => default_session(&project.root),
    };
    if args.down {
        return down(&tmux, &session, out);
    }
    if tmux.has_session(&session) {
        return existing_session(&project, &tmux, &session, &args, out);
    }
    let state = project.store.snapshot()?.state;
    ready_to_start(&project, &state, &args)?;
    let live = live_agents(&project, &state);
    let mut agents = vec![(Role::Planner, free_ids(&live, Role::Planner, 1))];
    agents.push((Role::Coder, free_ids(&live, Role::Coder, args.coders)));
    agents.push((
        Role::CodeReviewer,
        free_ids(&live, Role::CodeReviewer, args.reviewers),
    ));
    let (liza, agent) = binaries()?;
    let store = store_address(&project);
    // The status pane first, so the window's options (a pane whose agent exited keeps its
    // output; titles on the borders) hold before any agent starts; agents go before it.
    let status = tmux.new_session(
        &session,
        "liza",
        &project.root,
        &[("LIZA_STORE", store.as_str())],
        &[
            liza.display().to_string(),
            "status".into(),
            "--watch".into(),
        ],
    )?;
    tmux.run(&["select-pane", "-t", &status, "-T", "status"])?;
    for option in [
        ["remain-on-exit", "on"],
        ["pane-border-status", "top"],
        ["pane-border-format", " #{pane_title} "],
    ] {
        tmux.run(&["set-option", "-w", "-t", &status, option[0], option[1]])?;
    }
    // What this terminal chose for the agents reaches them, whatever environment an
    // already running tmux server holds (secrets are not passed: they would show in
    // tmux's arguments).
    let mut created = Vec::new();
    let mut pane_ids: Vec<(String, String)> = Vec::new();
    for (role, ids) in &agents {
        for id in ids {
            let argv = agent_argv(&agent, *role, args.cli.as_ref());
            let env = agent_env(id, &store);
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let pane = tmux.split_before(&status, &project.root, &env, &argv)?;
            tmux.run(&["select-pane", "-t", &pane, "-T", id])?;
            // The agent of the pane, kept where the programs in it cannot change it (they
            // may retitle the pane): `liza up` on the running session reads it.
            tmux.run(&["set-option", "-p", "-t", &pane, AGENT_OPTION, id])?;
            created.push(id.clone());
            pane_ids.push((pane, id.clone()));
        }
    }
    // A pane whose supervisor died at start (a login, a configuration error) is said,
    // with its last lines, and the command fails: success means agents are running.
    let sprint_runs = || sprint_runs(&project);
    let died = panes_that_died(&tmux, &session, &pane_ids, &sprint_runs);
    if !died.is_empty() {
        return Err(CliError::refused(format!(
            "tmux session {session} started, but {} of its {} agents stopped at once:\n{}",
            died.len(),
            created.len(),
            died.join("\n")
        ))
        .with_hint(format!(
            "fix what the pane says (`liza doctor` checks the backends), then `liza up --down --session {session}` and `liza up` again"
        )));
    }
    out.ok(
        json!({"session": session, "created": true, "agents": created}),
        || {
            format!(
                "tmux session {session}: {} and the status pane\nattach: tmux attach -t {session} · stop: liza up --down --session {session}",
                created.join(", ")
            )
        },
    );
    attach(&tmux, &session, args.attach)
}

/// Refuses to start agents that would exit at once: on a sprint that does not run (with
/// what continues it), or on a backend that cannot run (as `liza doctor` checks it).
fn ready_to_start(project: &Project, state: &State, args: &UpArgs) -> Result<(), CliError> {
    // Agents started on a sprint that does not run would exit at once: said first, with
    // what continues it.
    let holding: Vec<_> = crate::status::attention(
        state.goal.status,
        state.sprint.status,
        &project.store.control_flags().unwrap_or_default(),
    )
    .into_iter()
    .filter(|a| a.state != "PAUSED" && a.state != "CHECKPOINT")
    .collect();
    if let Some(first) = holding.first() {
        return Err(CliError::refused(format!(
            "the sprint does not run ({}): agents started now would exit at once",
            first.state
        ))
        .with_hint(first.next.clone()));
    }
    // Every pane would die at once on a backend that cannot run: said before any starts.
    let backend = args
        .cli
        .clone()
        .unwrap_or_else(|| state.config.default_cli().to_owned());
    crate::backend::Backend::resolve(&backend, &state.config, None, &|var| {
        std::env::var(var).ok()
    })
    .and_then(|b| b.check_usable().map(drop))
    .map_err(|e| CliError::refused(e.to_string()).with_hint(e.hint()))?;
    // The built-in agent's model must answer, as `liza doctor` asks it: every run would
    // fail to reach it otherwise.
    if crate::backend::BackendKind::of(&backend) == crate::backend::BackendKind::Builtin
        && let Some((why, hint)) = crate::doctor::model_endpoint_fails(project, state)
    {
        return Err(CliError::refused(format!(
            "the built-in agent's model endpoint does not answer: {why}"
        ))
        .with_hint(format!("{hint}; or DRY_RUN=1 to try liza with no model")));
    }
    Ok(())
}

/// The argv of an agent pane: the `liza-agent` beside this `liza`, the role, the backend —
/// behind `env -u` for each variable of [`PASSED_TO_AGENTS`] this terminal does not set, so
/// a tmux server started with one (a `DRY_RUN=1` of another day) does not hand it on.
fn agent_argv(agent: &[String], role: Role, cli: Option<&String>) -> Vec<String> {
    let mut argv: Vec<String> = Vec::new();
    let unset: Vec<&str> = PASSED_TO_AGENTS
        .iter()
        .copied()
        .filter(|name| std::env::var_os(name).is_none())
        .collect();
    if !unset.is_empty() {
        argv.push("env".into());
        for name in unset {
            argv.extend(["-u".into(), name.to_owned()]);
        }
    }
    argv.extend(agent.iter().cloned());
    argv.push(role_arg(role).into());
    if let Some(cli) = cli {
        argv.extend(["--cli".into(), cli.clone()]);
    }
    argv
}

/// The store this command found (`--store`, `LIZA_STORE` or `.liza/store`): every
/// pane's, whatever the tmux server's environment holds.
fn store_address(project: &Project) -> String {
    project
        .store
        .address()
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// The environment an agent pane is started with: its id, the store, and the variables
/// of [`PASSED_TO_AGENTS`] this terminal sets.
fn agent_env(id: &str, store: &str) -> Vec<(String, String)> {
    let mut env = vec![
        ("LIZA_AGENT_ID".to_owned(), id.to_owned()),
        ("LIZA_STORE".to_owned(), store.to_owned()),
    ];
    env.extend(
        PASSED_TO_AGENTS
            .iter()
            .filter_map(|name| std::env::var(name).ok().map(|v| ((*name).to_owned(), v))),
    );
    env
}

/// `liza up` on a session that runs already: the agent panes whose supervisor exited (a
/// sprint that ended, a crash) are started again in place, as `liza up` starts them;
/// with none, it says the session runs.
fn existing_session(
    project: &Project,
    tmux: &Tmux,
    session: &str,
    args: &UpArgs,
    out: &Output,
) -> Result<i32, CliError> {
    let listed = tmux.run(&[
        "list-panes",
        "-s",
        "-t",
        &format!("={session}"),
        "-F",
        &format!("#{{pane_id}}|#{{pane_dead}}|#{{{AGENT_OPTION}}}"),
    ])?;
    let dead: Vec<(String, crate::blackboard::AgentId)> = listed
        .lines()
        .filter_map(|line| {
            let mut f = line.splitn(3, '|');
            let (pane, dead, agent) = (f.next()?, f.next()?, f.next()?);
            let agent = crate::blackboard::AgentId::parse(agent).ok()?;
            (dead == "1").then(|| (pane.to_owned(), agent))
        })
        .collect();
    if dead.is_empty() {
        out.ok(json!({"session": session, "created": false, "respawned": []}), || {
            format!("tmux session {session} is already running; `liza up --down --session {session}` stops it")
        });
        return attach(tmux, session, args.attach);
    }
    let state = project.store.snapshot()?.state;
    ready_to_start(project, &state, args)?;
    let (_, agent) = binaries()?;
    let store = store_address(project);
    let mut respawned = Vec::new();
    for (pane, id) in &dead {
        let argv = agent_argv(&agent, id.role(), args.cli.as_ref());
        let mut command: Vec<String> = ["respawn-pane", "-k", "-t", pane.as_str(), "-c"]
            .map(str::to_owned)
            .to_vec();
        command.push(project.root.display().to_string());
        for (k, v) in agent_env(id.as_str(), &store) {
            command.push("-e".into());
            command.push(format!("{k}={v}"));
        }
        command.push("--".into());
        command.extend(argv);
        let refs: Vec<&str> = command.iter().map(String::as_str).collect();
        tmux.run(&refs)?;
        respawned.push(id.to_string());
    }
    let sprint_runs = || sprint_runs(project);
    let died = panes_that_died(
        tmux,
        session,
        &dead
            .iter()
            .map(|(p, id)| (p.clone(), id.to_string()))
            .collect::<Vec<_>>(),
        &sprint_runs,
    );
    if !died.is_empty() {
        return Err(CliError::refused(format!(
            "{} of the {} agents started again in {session} stopped at once:\n{}",
            died.len(),
            respawned.len(),
            died.join("\n")
        ))
        .with_hint(
            "fix what the pane says (`liza doctor` checks the backends), then `liza up` again",
        ));
    }
    out.ok(
        json!({"session": session, "created": false, "respawned": respawned}),
        || {
            format!(
                "tmux session {session}: started again {} (their supervisors had exited)\nattach: tmux attach -t {session} · stop: liza up --down --session {session}",
                respawned.join(", ")
            )
        },
    );
    attach(tmux, session, args.attach)
}

/// Whether the sprint runs, so a supervisor that exits leaves it only when it failed.
fn sprint_runs(project: &Project) -> bool {
    project.store.snapshot().is_ok_and(|s| {
        let state = &s.state;
        matches!(
            state.sprint.status,
            crate::blackboard::model::SprintStatus::InProgress
                | crate::blackboard::model::SprintStatus::Checkpoint
        ) && state
            .goal
            .status
            .is_none_or(|g| g == crate::blackboard::model::GoalStatus::InProgress)
    })
}

/// How long the agents' panes are watched after their start: a supervisor that cannot
/// start (no login, a bad configuration) exits within it.
const START_WATCH: Duration = Duration::from_secs(3);

/// The agents of `ids` whose pane died within [`START_WATCH`] by a failure (a non-zero
/// status or a signal: a supervisor that finished its sprint exits 0), each with its
/// last lines.
fn panes_that_died(
    tmux: &Tmux,
    session: &str,
    started_panes: &[(String, String)],
    sprint_runs: &dyn Fn() -> bool,
) -> Vec<String> {
    // Whether a dead pane's process failed; `None` until tmux has reaped it (it marks a
    // pane dead at its terminal's end, and learns the status a moment later).
    let failed = |pane: &crate::tmux::Pane| -> Option<bool> {
        let how = tmux
            .run(&[
                "display-message",
                "-p",
                "-t",
                &pane.id,
                "#{pane_dead_status}|#{pane_dead_signal}",
            ])
            .ok()?;
        let (status, signal) = how.trim().split_once('|')?;
        match (status.parse::<i32>().ok(), signal) {
            (_, signal) if !signal.is_empty() && signal != "0" => Some(true),
            (Some(status), _) => Some(status != 0),
            (None, _) => None,
        }
    };
    let started = Instant::now();
    let mut dead = Vec::new();
    while started.elapsed() < START_WATCH {
        std::thread::sleep(Duration::from_millis(250));
        // By the ids tmux gave the panes (an agent may retitle its pane); a pane gone
        // from the list is as dead as one marked so.
        let Ok(panes) = tmux.panes(session) else {
            continue;
        };
        let ours: Vec<crate::tmux::Pane> = started_panes
            .iter()
            .map(|(id, agent)| {
                panes
                    .iter()
                    .find(|p| &p.id == id)
                    .cloned()
                    .unwrap_or(crate::tmux::Pane {
                        id: id.clone(),
                        pid: 0,
                        dead: true,
                        title: agent.clone(),
                    })
            })
            .map(|mut p| {
                if let Some((_, agent)) = started_panes.iter().find(|(id, _)| *id == p.id) {
                    p.title = agent.clone();
                }
                p
            })
            .collect();
        let judged: Vec<(crate::tmux::Pane, Option<bool>)> = ours
            .iter()
            .filter(|p| p.dead)
            .map(|p| ((*p).clone(), failed(p)))
            .collect();
        let settled = judged.len() == ours.len() && judged.iter().all(|(_, f)| f.is_some());
        // A status tmux never learned (it happens) is judged by the sprint: a supervisor
        // leaves a running sprint only when it failed.
        dead = judged
            .into_iter()
            .filter(|(_, f)| f.unwrap_or_else(sprint_runs))
            .map(|(p, _)| p)
            .collect();
        if settled {
            break;
        }
    }
    dead.into_iter()
        .map(|pane| {
            let shown = tmux
                .run(&["capture-pane", "-p", "-t", &pane.id])
                .unwrap_or_default();
            let last: Vec<&str> = shown
                .lines()
                .filter(|l| !l.trim().is_empty())
                .rev()
                .take(3)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            format!("  {}: {}", pane.title, last.join(" / "))
        })
        .collect()
}

fn role_arg(role: Role) -> &'static str {
    match role {
        Role::Planner => "planner",
        Role::Coder => "coder",
        Role::CodeReviewer => "code-reviewer",
    }
}

/// `liza` itself and the argv prefix of the supervisor: the `liza-agent` beside it,
/// else `liza agent`.
fn binaries() -> Result<(PathBuf, Vec<String>), CliError> {
    let liza = std::env::current_exe()
        .map_err(|e| CliError::refused(format!("cannot find the running liza: {e}")))?;
    let beside = liza.with_file_name("liza-agent");
    let agent = if beside.is_file() {
        vec![beside.display().to_string()]
    } else {
        vec![liza.display().to_string(), "agent".into()]
    };
    Ok((liza, agent))
}

/// The ids a pane may not take at once: every registered agent but those whose
/// supervisor is known dead on this host. (Whether another's lease lapsed is for a
/// registration to watch, never for this clock to decide: specs/blackboard.md *Leases
/// are observed*; a pane given such an id would wait for it.)
fn live_agents(project: &Project, state: &State) -> HashSet<String> {
    let live = project.store.live_records().unwrap_or_default();
    let dead: HashSet<String> = crate::ops::dead_holders(state, &live)
        .into_iter()
        .map(|(id, _)| id.to_string())
        .collect();
    state
        .agents
        .iter()
        .map(|(id, _)| id.to_string())
        .filter(|id| !dead.contains(id))
        .collect()
}

/// The lowest `count` ids `<role>-N` no live agent holds.
pub(super) fn free_ids(live: &HashSet<String>, role: Role, count: u32) -> Vec<String> {
    (1..)
        .map(|n| format!("{}-{n}", role.id_prefix()))
        .filter(|id| !live.contains(id))
        .take(count as usize)
        .collect()
}

fn default_session(root: &Path) -> String {
    let name: String = root
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("project")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("liza-{name}")
}

/// tmux session names may not hold `.` or `:` (they address windows and panes).
fn checked_session(name: &str) -> Result<String, CliError> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        return Ok(name.to_owned());
    }
    Err(CliError::usage(format!(
        "--session {name:?}: use letters, digits, `-` and `_`"
    )))
}

fn attach(tmux: &Tmux, session: &str, wanted: bool) -> Result<i32, CliError> {
    if !wanted {
        return Ok(EXIT_OK);
    }
    let verb = if std::env::var_os("TMUX").is_some() {
        "switch-client"
    } else {
        "attach-session"
    };
    let status = std::process::Command::new(
        crate::backend::find_executable("tmux").unwrap_or_else(|| "tmux".into()),
    )
    .args([verb, "-t", &format!("={session}")])
    .status()
    .map_err(|e| CliError::refused(format!("cannot run tmux {verb}: {e}")))?;
    let _ = tmux;
    Ok(if status.success() { EXIT_OK } else { 1 })
}

/// SIGINT to every live pane's process, a grace period, SIGTERM to the rest, then the
/// session is removed.
fn down(tmux: &Tmux, session: &str, out: &Output) -> Result<i32, CliError> {
    if !tmux.has_session(session) {
        return Err(
            CliError::refused(format!("there is no tmux session {session}"))
                .with_hint("`tmux ls` lists the sessions; name one with --session"),
        );
    }
    // A session always has a pane; an empty listing (seen under heavy load) is asked again.
    let mut panes = tmux.panes(session)?;
    for _ in 0..20 {
        if !panes.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        panes = tmux.panes(session)?;
    }
    let running: Vec<i32> = panes.iter().filter(|p| !p.dead).map(|p| p.pid).collect();
    signal_all(&running, nix::sys::signal::Signal::SIGINT);
    let deadline = Instant::now() + GRACE;
    while running.iter().any(|pid| alive(*pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let stubborn: Vec<i32> = running.iter().copied().filter(|p| alive(*p)).collect();
    signal_all(&stubborn, nix::sys::signal::Signal::SIGTERM);
    tmux.run(&["kill-session", "-t", &format!("={session}")])?;
    // Nothing of the session outlives the command.
    let deadline = Instant::now() + Duration::from_secs(5);
    while running.iter().any(|pid| alive(*pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let listed: Vec<serde_json::Value> = panes
        .iter()
        .map(|p| json!({"title": p.title, "pid": p.pid, "dead": p.dead}))
        .collect();
    out.ok(
        json!({"session": session, "stopped": running.len(), "forced": stubborn.len(), "panes": listed}),
        || {
            format!(
                "stopped {} pane(s) of {session}{} and removed the session",
                running.len(),
                if stubborn.is_empty() {
                    String::new()
                } else {
                    format!(" ({} needed SIGTERM)", stubborn.len())
                }
            )
        },
    );
    Ok(EXIT_OK)
}

fn signal_all(pids: &[i32], signal: nix::sys::signal::Signal) {
    for pid in pids {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), signal);
    }
}

/// Whether `pid` runs (a zombie is gone for this purpose).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_skip_the_live_ones() {
        let live: HashSet<String> = ["coder-1", "coder-3", "planner-1"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        assert_eq!(
            free_ids(&live, Role::Coder, 3),
            ["coder-2", "coder-4", "coder-5"]
        );
        assert_eq!(free_ids(&live, Role::Planner, 1), ["planner-2"]);
        assert_eq!(free_ids(&live, Role::CodeReviewer, 1), ["code-reviewer-1"]);
    }

    #[test]
    fn session_names_are_checked() {
        assert!(checked_session("liza-demo_1").is_ok());
        assert!(checked_session("a:b").is_err());
        assert!(checked_session("a.b").is_err());
        assert_eq!(
            default_session(Path::new("/work/my project")),
            "liza-my-project"
        );
    }
}
