//! `liza doctor`: what is wrong with this machine or this blackboard, each finding with
//! what to do about it — git, the blackboard itself, the agent CLIs of every backend in
//! use, the model endpoint of the built-in agent, worktrees against the state, the state
//! lock, and liveness records or agents left behind by supervisors that are gone.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::backend::{Backend, find_executable, probe};
use crate::blackboard::model::TaskStatus;
use crate::blackboard::validate::{ValidationEnv, validate};
use crate::blackboard::{State, Timestamp};
use crate::llm::endpoint::{Endpoint, Env};
use crate::ops::Project;

/// The oldest git whose worktree and `-C` behaviour liza relies on.
pub(crate) const MIN_GIT: (u32, u32) = (2, 25);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Check {
    pub name: String,
    pub status: Status,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Check {
    fn ok(name: &str, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            status: Status::Ok,
            detail: detail.into(),
            hint: None,
        }
    }

    fn problem(
        status: Status,
        name: &str,
        detail: impl Into<String>,
        hint: impl Into<String>,
    ) -> Check {
        Check {
            name: name.into(),
            status,
            detail: detail.into(),
            hint: Some(hint.into()),
        }
    }
}

/// The sandbox (specs/sandbox.md): as `config.sandbox.mode` asks on this machine, and
/// tried for real — a sandboxed command writes its directory, and its write outside
/// never reaches the host.
fn sandbox(project: &Project, state: &State) -> Check {
    use crate::sandbox::{Confinement, Jail, Unconfined};
    let config = state.config.sandbox();
    let confinement = match Confinement::for_process(&config) {
        Ok(c) => c,
        Err(e) => {
            return Check::problem(
                Status::Fail,
                "sandbox",
                format!("{e}: no agent or check can run"),
                e.fix,
            );
        }
    };
    match &confinement {
        Confinement::Unconfined {
            state: Unconfined::Off,
            why,
            ..
        } => {
            return Check::problem(
                Status::Warn,
                "sandbox",
                format!(
                    "off ({why}): agents and checks run with your user's full access to this machine"
                ),
                "set config.sandbox.mode to auto with `liza edit`",
            );
        }
        Confinement::Unconfined { why, fix, .. } => {
            return Check::problem(
                Status::Warn,
                "sandbox",
                format!(
                    "unavailable: {why}; agents and checks run UNSANDBOXED, with your user's full access"
                ),
                fix.clone().unwrap_or_default(),
            );
        }
        Confinement::Sandboxed(_) => {}
    }
    let trial = (|| -> Result<String, String> {
        let inside = tempfile::Builder::new()
            .prefix("liza-doctor-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let outside = tempfile::Builder::new()
            .prefix("liza-doctor-outside-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let jail = Jail::for_dir(
            &project.root,
            inside.path(),
            &config,
            config.checks_network(),
        );
        let target = outside.path().join("written-from-the-sandbox");
        let script = format!(
            "echo in > '{}/inside' && mkdir -p '{}' && echo out > '{}'; exit 0",
            inside.path().display(),
            outside.path().display(),
            target.display()
        );
        let argv = jail
            .argv(&["sh".into(), "-c".into(), script])
            .map_err(|e| e.to_string())?;
        let (program, args) = argv.split_first().ok_or("no command")?;
        let out = std::process::Command::new(program)
            .args(args)
            .current_dir(inside.path())
            .output()
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        if target.exists() {
            return Err("a sandboxed command wrote outside its directory".into());
        }
        if !inside.path().join("inside").exists() {
            return Err(format!(
                "a sandboxed command could not write its own directory: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(confinement.note())
    })();
    match trial {
        Ok(version) => Check::ok(
            "sandbox",
            format!(
                "{version}: a sandboxed command wrote its directory and nothing outside it; agents' network {}, checks' {}",
                config.network(),
                config.checks_network()
            ),
        ),
        Err(why) => Check::problem(
            Status::Fail,
            "sandbox",
            format!("the sandbox did not hold: {why}"),
            "run `bwrap --ro-bind / / --unshare-user --unshare-pid true` to see what bubblewrap says; report it if it works",
        ),
    }
}

/// Every check, in the order a person would fix them.
pub(crate) fn run(cwd: &Path, env: &dyn Env) -> Vec<Check> {
    let mut checks = vec![git()];
    let project = match Project::discover(cwd) {
        Ok(p) => p,
        Err(e) => {
            checks.push(Check::problem(
                Status::Fail,
                "blackboard",
                e.to_string(),
                "run liza inside the project's repository, after `liza init \"<goal>\"`",
            ));
            return checks;
        }
    };
    let state = match project.store.snapshot() {
        Ok(s) => s.state,
        Err(e) => {
            checks.push(Check::problem(
                Status::Fail,
                "blackboard",
                e.to_string(),
                "`liza validate` lists every problem with its line and column",
            ));
            return checks;
        }
    };
    checks.push(blackboard(&project, &state));
    checks.extend(shared_store(&project));
    checks.push(clock(&project));
    checks.extend(specs_committed(&project, &state));
    if let Some(check) = integration_kept(&project, &state) {
        checks.push(check);
    }
    if let Some(check) = journal(&project) {
        checks.push(check);
    }
    if let Some(check) = git_remote(&project, &state) {
        checks.push(check);
    }
    if let Some(check) = hand_edit(&project) {
        checks.push(check);
    }
    checks.push(project_checks(&state));
    checks.extend(backends(&state));
    checks.push(sandbox(&project, &state));
    if let Some(check) = endpoint(&project, &state, env) {
        checks.push(check);
    }
    checks.extend(worktrees(&project, &state));
    checks.push(lock(&project, &state));
    if let Some(check) = interrupted_merges(&project, &state) {
        checks.push(check);
    }
    checks.extend(leftovers(&project, &state));
    checks
}

fn git() -> Check {
    let Some(path) = find_executable("git") else {
        return Check::problem(
            Status::Fail,
            "git",
            "git is not on PATH",
            "install git (apt install git, brew install git)",
        );
    };
    let text = crate::git::cli::version(&path).unwrap_or_default();
    let version = text
        .split_whitespace()
        .nth(2)
        .map(|v| {
            let mut parts = v.split('.').map(|n| n.parse::<u32>().unwrap_or(0));
            (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
        })
        .unwrap_or((0, 0));
    if version < MIN_GIT {
        return Check::problem(
            Status::Fail,
            "git",
            format!(
                "{} ({}) is older than {}.{}",
                text,
                path.display(),
                MIN_GIT.0,
                MIN_GIT.1
            ),
            "install a newer git",
        );
    }
    Check::ok("git", format!("{text} ({})", path.display()))
}

fn blackboard(project: &Project, state: &State) -> Check {
    let env = ValidationEnv::new(Some(&project.root), Timestamp::now());
    let findings = validate(state, &env);
    let errors = findings.iter().filter(|f| f.is_error()).count();
    if errors > 0 {
        return Check::problem(
            Status::Fail,
            "blackboard",
            format!(
                "revision {} has {errors} validation error(s)",
                state.revision()
            ),
            "`liza validate` lists them; `liza edit` fixes them by hand",
        );
    }
    Check::ok(
        "blackboard",
        format!(
            "revision {}, {} task(s), {} agent(s), valid",
            state.revision(),
            state.tasks.len(),
            state.agents.len()
        ),
    )
}

/// A hand edit of state.yaml not yet reconciled: said now what the next command will do
/// with it, so a person fixes a bad one before it is set aside.
fn hand_edit(project: &Project) -> Option<Check> {
    let shown = ".liza/state.yaml";
    match project.store.pending_hand_edit() {
        Ok(None) => None,
        Ok(Some(Ok(()))) => Some(Check::ok(
            "hand edit",
            format!("{shown} holds a hand edit the next liza command applies"),
        )),
        Ok(Some(Err(why))) => Some(Check::problem(
            Status::Fail,
            "hand edit",
            format!(
                "{shown} holds a hand edit the next liza command sets aside under \
                 .liza/rejected/ (the last good revision stays): {}",
                why.lines(shown).join("; ")
            ),
            "fix the file now, or redo the change with `liza edit`",
        )),
        Err(e) => Some(Check::problem(
            Status::Fail,
            "hand edit",
            e.to_string(),
            "`liza validate` lists every problem with its line and column",
        )),
    }
}

/// The default backend must run; the others registered agents use should.
fn backends(state: &State) -> Vec<Check> {
    let default = state.config.default_cli().to_owned();
    let mut names = vec![default.clone()];
    for (_, agent) in state.agents.iter() {
        if let Some(cli) = &agent.cli
            && !names.contains(cli)
        {
            names.push(cli.clone());
        }
    }
    for (name, _) in state.config.agent_tools.iter().flat_map(|t| t.iter()) {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
        .into_iter()
        .flat_map(|name| {
            let label = format!("backend {name}");
            let severity = if name == default {
                Status::Fail
            } else {
                Status::Warn
            };
            let backend =
                Backend::resolve(&name, &state.config, None, &|var| std::env::var(var).ok());
            match backend.and_then(|b| b.check_usable().map(|path| (b, path))) {
                Ok((backend, path)) => {
                    let mut checks = vec![Check::ok(&label, format!("runs {}", path.display()))];
                    checks.extend(installed_cli(&backend, &path, severity));
                    checks
                }
                Err(e) => vec![Check::problem(severity, &label, e.to_string(), e.hint())],
            }
        })
        .collect()
}

/// The project's own checks (`config.checks`): none means reviews and merges run no
/// test of the project — said, as a new user expects liza to run their tests.
fn project_checks(state: &State) -> Check {
    let checks = state.config.checks.as_deref().unwrap_or(&[]);
    if checks.is_empty() {
        return Check::problem(
            Status::Warn,
            "checks",
            "config.checks is empty: no test of the project runs before a review or a merge",
            "add the project's tests with `liza edit`, e.g. config.checks: [{name: tests, run: \"pytest -q\", on_review: true, on_merge: true}]",
        );
    }
    let gates = checks
        .iter()
        .filter(|c| c.on_review == Some(true) || c.on_merge == Some(true))
        .count();
    Check::ok(
        "checks",
        format!(
            "{} check(s), {gates} gating reviews or merges",
            checks.len()
        ),
    )
}

/// A built-in CLI as installed: its version against the release range liza's arguments
/// were verified with, and every flag liza passes against its `--help`.
fn installed_cli(backend: &Backend, path: &Path, severity: Status) -> Vec<Check> {
    let Some(spec) = backend.spec else {
        return Vec::new();
    };
    let name = &backend.name;
    let mut checks = Vec::new();
    let label = format!("backend {name} version");
    match probe::run_briefly(path, &["--version"], probe::PROBE_TIMEOUT) {
        Err(why) => {
            // A CLI that does not answer --version will not answer --help either.
            checks.push(Check::problem(
                Status::Warn,
                &label,
                format!("`{} --version` {why}", spec.executable),
                "run it by hand to see what it waits for (a login, an update prompt)",
            ));
            return checks;
        }
        Ok(text) => match probe::parse_version(&text) {
            None => checks.push(Check::problem(
                Status::Warn,
                &label,
                format!("`{} --version` printed no version: {}", spec.executable, text.trim()),
                "check that the program on PATH is the agent CLI",
            )),
            Some(v) if !probe::in_range(v, spec.tested) => checks.push(Check::problem(
                Status::Warn,
                &label,
                format!(
                    "{}.{}.{} is outside the releases liza was verified with ({} to {})",
                    v.0, v.1, v.2, spec.tested.0, spec.tested.1
                ),
                format!(
                    "install a tested release (README, Agent CLIs), or check `liza doctor`'s flag check and override the arguments in config.agent_tools.{name}.args"
                ),
            )),
            Some(v) => checks.push(Check::ok(
                &label,
                format!("{}.{}.{} (verified: {} to {})", v.0, v.1, v.2, spec.tested.0, spec.tested.1),
            )),
        },
    }
    let (main, interactive) = probe::passed_args(backend);
    for (what, args) in [("", main), (" interactive", interactive)] {
        if args.is_empty() {
            continue;
        }
        let mut help_args: Vec<&str> = probe::subcommand(&args).into_iter().collect();
        help_args.push("--help");
        let label = format!("backend {name}{what} flags");
        match probe::run_briefly(path, &help_args, probe::PROBE_TIMEOUT) {
            Err(why) => checks.push(Check::problem(
                Status::Warn,
                &label,
                format!("`{} {}` {why}", spec.executable, help_args.join(" ")),
                "run it by hand to see what it waits for",
            )),
            Ok(help) => {
                let unknown = probe::unknown_flags(&probe::flags(&args), &help);
                if unknown.is_empty() {
                    checks.push(Check::ok(&label, "every flag liza passes is known"));
                } else {
                    checks.push(Check::problem(
                        severity,
                        &label,
                        format!(
                            "the installed {} does not know {} (liza runs: {} {})",
                            spec.executable,
                            unknown.join(", "),
                            spec.executable,
                            args.join(" ")
                        ),
                        format!(
                            "install a tested release ({} to {}), or set config.agent_tools.{name}.args to arguments this version takes",
                            spec.tested.0, spec.tested.1
                        ),
                    ));
                }
            }
        }
    }
    checks
}

/// The built-in agent's endpoint answers, when the built-in agent is in use or an
/// endpoint is configured.
fn endpoint(project: &Project, state: &State, env: &dyn Env) -> Option<Check> {
    let in_use = crate::backend::BackendKind::of(state.config.default_cli())
        == crate::backend::BackendKind::Builtin
        || state
            .agents
            .iter()
            .any(|(_, a)| a.cli.as_deref() == Some("builtin"))
        || env.var("LIZA_LLM_BASE_URL").is_some();
    if !in_use {
        return None;
    }
    endpoint_check(project, state, env)
}

/// Why agents of the built-in backend could not ask their model now — `liza doctor`'s
/// `model endpoint` check, failing — with the fix; `liza up` asks before it starts them.
pub(crate) fn model_endpoint_fails(project: &Project, state: &State) -> Option<(String, String)> {
    endpoint_check(project, state, &crate::llm::endpoint::ProcessEnv)
        .filter(|c| c.status == Status::Fail)
        .map(|c| (c.detail, c.hint.unwrap_or_default()))
}

/// The `model endpoint` check, whether or not the built-in agent is in use.
fn endpoint_check(project: &Project, state: &State, env: &dyn Env) -> Option<Check> {
    if env.var("DRY_RUN").is_some_and(|v| v.trim() == "1") {
        return Some(Check::ok(
            "model endpoint",
            "DRY_RUN=1: the built-in agent asks no model",
        ));
    }
    // `liza demo`'s project ran against a scripted server on loopback, gone with the demo:
    // said, rather than probing a hosted endpoint nobody configured.
    if env.var("LIZA_LLM_BASE_URL").is_none()
        && crate::blackboard::LizaPaths::new(&project.root)
            .dir
            .join("demo")
            .is_dir()
    {
        return Some(Check::problem(
            Status::Warn,
            "model endpoint",
            "this is `liza demo`'s project: its model was a scripted server on loopback, gone with the demo",
            "`liza demo` runs it again; to run agents here, set LIZA_LLM_BASE_URL (and LIZA_LLM_API_KEY), or DRY_RUN=1 for no model",
        ));
    }
    let config = state.config.builtin.clone().unwrap_or_default();
    let endpoint = match Endpoint::resolve(env, &config, crate::blackboard::Role::Coder) {
        Ok(e) => e,
        Err(e) => {
            return Some(Check::problem(
                Status::Fail,
                "model endpoint",
                e.to_string(),
                "set LIZA_LLM_BASE_URL to the OpenAI-compatible API's base URL",
            ));
        }
    };
    let url = format!("{}/models", endpoint.base_url);
    let answer = reach(&url, endpoint.api_key.as_deref());
    Some(match answer {
        Ok(status) if (200..300).contains(&status) => Check::ok(
            "model endpoint",
            format!(
                "{} answers (HTTP {status}); model {}",
                endpoint.base_url, endpoint.model
            ),
        ),
        Ok(status @ (401 | 403)) => Check::problem(
            Status::Fail,
            "model endpoint",
            format!("{} refuses the key (HTTP {status})", endpoint.base_url),
            "set LIZA_LLM_API_KEY (or OPENAI_API_KEY) to a valid key",
        ),
        Ok(status) => Check::problem(
            Status::Warn,
            "model endpoint",
            format!("{url} answers HTTP {status}"),
            "the server is up; check that LIZA_LLM_BASE_URL ends in the API's version path (…/v1)",
        ),
        Err(e) => Check::problem(
            Status::Fail,
            "model endpoint",
            format!("{} cannot be reached: {e}", endpoint.base_url),
            "start the model server or correct LIZA_LLM_BASE_URL",
        ),
    })
}

/// An HTTP GET with a short timeout; the status code or why there was none.
fn reach(url: &str, key: Option<&str>) -> Result<u16, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| e.to_string())?;
        let mut request = client.get(url);
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            text
        })?;
        Ok(response.status().as_u16())
    })
}

/// Task worktrees the state names must exist; directories no task names are orphans.
fn worktrees(project: &Project, state: &State) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut missing = Vec::new();
    for task in state.tasks.iter() {
        if task.status.is_terminal() || task.status == TaskStatus::Draft {
            continue;
        }
        if let Some(wt) = &task.worktree
            && !project.root.join(wt).is_dir()
        {
            missing.push(format!("{} ({wt})", task.id));
        }
    }
    if missing.is_empty() {
        checks.push(Check::ok(
            "worktrees",
            "every worktree the state names exists",
        ));
    } else {
        checks.push(Check::problem(
            Status::Fail,
            "worktrees",
            format!("missing: {}", missing.join(", ")),
            "`liza reassign <task> --reason …` gives the task back (its branch keeps the commits)",
        ));
    }
    let named: Vec<String> = state
        .tasks
        .iter()
        .filter_map(|t| t.worktree.clone())
        .collect();
    let mut orphans: Vec<String> = std::fs::read_dir(project.root.join(".worktrees"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|name| name != "_integration")
        .filter(|name| {
            !named.iter().any(|w| {
                w.trim_end_matches('/')
                    .ends_with(&format!(".worktrees/{name}"))
            })
        })
        .collect();
    orphans.sort();
    if !orphans.is_empty() {
        checks.push(Check::problem(
            Status::Warn,
            "orphaned worktrees",
            format!("no task names .worktrees/{}", orphans.join(", .worktrees/")),
            "`liza gc` lists them; `liza gc --apply` saves their work to the attic and removes them",
        ));
    }
    checks
}

/// A blackboard in etcd: every member answers, nothing foreign under the prefix, each
/// liveness record under a lease, the hosts' clocks agree (leases are wall-clock times
/// written by one host and read by the others).
fn shared_store(project: &Project) -> Vec<Check> {
    let Some(found) = project.store.inspect_shared() else {
        return Vec::new();
    };
    let address = project
        .store
        .address()
        .map(ToString::to_string)
        .unwrap_or_default();
    let mut checks = Vec::new();
    let down: Vec<String> = found
        .members
        .iter()
        .filter_map(|(member, answer)| answer.as_ref().err().map(|e| format!("{member} ({e})")))
        .collect();
    checks.push(if down.is_empty() {
        Check::ok(
            "etcd",
            format!("{address}: {} member(s) answer", found.members.len()),
        )
    } else {
        Check::problem(
            Status::Warn,
            "etcd",
            format!("{address}: no answer from {}", down.join(", ")),
            "the others serve meanwhile; start the member again, or drop it from the address in .liza/store",
        )
    });
    checks.push(if found.strays.is_empty() {
        Check::ok("etcd prefix", "only liza's keys")
    } else {
        Check::problem(
            Status::Warn,
            "etcd prefix",
            format!("keys liza does not use: {}", found.strays.join(", ")),
            "another program writes under this project's prefix: give it a prefix of its own",
        )
    });
    let unleased: Vec<&str> = found
        .leases
        .iter()
        .filter(|l| !l.has_lease)
        .map(|l| l.key.as_str())
        .collect();
    checks.push(if unleased.is_empty() {
        Check::ok(
            "etcd leases",
            format!(
                "{} liveness record(s), each under a lease",
                found.leases.len()
            ),
        )
    } else {
        Check::problem(
            Status::Warn,
            "etcd leases",
            format!(
                "liveness records with no lease, which never expire: {}",
                unleased.join(", ")
            ),
            "they were written by hand or by another tool: delete them (etcdctl del KEY)",
        )
    });
    // Measured to ±1 s through etcd's lease clock: warn only when surely above 1 s.
    let skewed: Vec<String> = found
        .leases
        .iter()
        .filter_map(|l| {
            let skew = l.skew(found.read_at)?;
            (skew.abs() >= 2).then(|| {
                format!(
                    "{} is {} s {} this host",
                    l.host.as_deref().unwrap_or("a host"),
                    skew.abs(),
                    if skew > 0 { "ahead of" } else { "behind" }
                )
            })
        })
        .collect();
    checks.push(if skewed.is_empty() {
        Check::ok("clocks", "the hosts with live agents agree with this one (±1 s)")
    } else {
        Check::problem(
            Status::Warn,
            "clocks",
            skewed.join("; "),
            "leases are times one host writes and the others read: run NTP (chrony, systemd-timesyncd) on every host",
        )
    });
    checks
}

/// This host's clock against the blackboard's recent entries (specs/blackboard.md
/// *Timestamps*): an entry stamped ahead of this clock, or writers recorded as behind
/// the log's.
fn clock(project: &Project) -> Check {
    const RECENT: usize = 500;
    let now = Timestamp::now();
    let tail = project.store.log_tail(RECENT);
    let mut problems = Vec::new();
    let ahead = |t: Timestamp| t.seconds_since(now) >= crate::blackboard::log::CLOCK_BEHIND_NOTED_S;
    // On the shared store entries keep each host's time (nothing is lifted).
    let lifted = project.store.address().is_none();
    if let Some(last) = tail.iter().rev().find_map(|e| e.timestamp.map(|t| (t, e)))
        && ahead(last.0)
    {
        // Entries after a clock ahead are lifted to its time: the writer to fix is the
        // one whose entry set it (ahead, and not lifted itself).
        let set_by = tail
            .iter()
            .filter(|_| lifted)
            .find(|e| e.timestamp.is_some_and(ahead) && e.extra.get("clock_behind_s").is_none())
            .map(|e| {
                format!(
                    "; the log's time was set ahead by {}'s clock ({} at {}), and later entries are stamped no earlier until this clock passes it",
                    e.agent.as_deref().unwrap_or("?"),
                    e.action,
                    e.timestamp.map(|t| t.to_string()).unwrap_or_default()
                )
            })
            .unwrap_or_default();
        problems.push(format!(
            "the log's last entry ({} by {}, {}) is {} s ahead of this host's clock{set_by}",
            last.1.action,
            last.1.agent.as_deref().unwrap_or("?"),
            last.0,
            last.0.seconds_since(now)
        ));
    }
    let mut behind: Vec<String> = tail
        .iter()
        .filter_map(|e| {
            let s = match &e.extra.get("clock_behind_s")?.value {
                crate::blackboard::node::Value::Int(s) => *s,
                _ => return None,
            };
            Some(format!("{} ({} s)", e.agent.as_deref().unwrap_or("?"), s))
        })
        .collect();
    behind.sort();
    behind.dedup();
    if !behind.is_empty() {
        problems.push(format!(
            "recent entries were written by clocks behind the log's: {}",
            behind.join(", ")
        ));
    }
    if problems.is_empty() {
        Check::ok(
            "clock",
            "this host's clock agrees with the blackboard's recent entries",
        )
    } else {
        Check::problem(
            Status::Warn,
            "clock",
            problems.join("; "),
            "run NTP (chrony, systemd-timesyncd) on every machine that runs liza: leases are watched, not compared, but the log's times are what people read",
        )
    }
}

/// The goal's spec and each open task's are on the integration branch, as this checkout
/// has them (specs/lifecycle.md *Plan approval and spec currency*): worktrees start there.
fn specs_committed(project: &Project, state: &State) -> Vec<Check> {
    use crate::ops::spec_committed::{SpecAt, spec_at};
    let branch = state.config.integration_branch();
    let Ok(repo) = crate::git::Repo::open(&project.root) else {
        return Vec::new();
    };
    let Ok(Some(tip)) = crate::ops::spec_committed::start_tip(&project.root, &state.config) else {
        return Vec::new();
    };
    let start = state.config.git_remote.as_deref().map_or(
        crate::ops::spec_committed::Start::Local,
        crate::ops::spec_committed::Start::Remote,
    );
    let bring = crate::ops::spec_committed::bring_it(branch, start);
    let mut refs: Vec<&str> = state.goal.spec_ref.as_deref().into_iter().collect();
    for task in state.tasks.iter().filter(|t| !t.status.is_terminal()) {
        if let Some(spec_ref) = task.spec_ref.as_deref() {
            refs.push(spec_ref);
        }
    }
    let mut files: Vec<&str> = refs.into_iter().map(crate::lifecycle::spec_file).collect();
    files.sort_unstable();
    files.dedup();
    let (mut absent, mut differs) = (Vec::new(), Vec::new());
    for file in files {
        match spec_at(&repo, &project.root, &tip, file) {
            SpecAt::Same => {}
            SpecAt::Differs => differs.push(file),
            SpecAt::Absent => absent.push(file),
        }
    }
    let mut checks = Vec::new();
    if !absent.is_empty() {
        checks.push(Check::problem(
            Status::Fail,
            "spec",
            format!(
                "{} not committed on {branch}, where every task's worktree starts",
                absent.join(", ")
            ),
            format!(
                "commit it (git add {} && git commit), then {bring}",
                absent.join(" ")
            ),
        ));
    }
    if !differs.is_empty() {
        checks.push(Check::problem(
            Status::Warn,
            "spec",
            format!(
                "{} in this checkout differs from {branch}'s; agents read {branch}'s",
                differs.join(", ")
            ),
            format!("commit the change, then {bring}"),
        ));
    }
    if checks.is_empty() {
        checks.push(Check::ok(
            "spec",
            format!("the goal's and open tasks' specs are on {branch} as here"),
        ));
    }
    checks
}

/// Each MERGED task's work is on the integration branch (specs/git.md *Integration keeps
/// what was merged*).
fn integration_kept(project: &Project, state: &State) -> Option<Check> {
    // With a shared remote, this checkout's integration may just be behind: the merger
    // checks after it synced.
    if state.config.git_remote.is_some() {
        return None;
    }
    let repo = crate::git::Repo::open(&project.root).ok()?;
    let left = crate::ops::integration_check::work_that_left(&repo, state).ok()?;
    let integration = state.config.integration_branch();
    Some(if left.is_empty() {
        Check::ok(
            "integration",
            format!("every MERGED task's work is on {integration}"),
        )
    } else {
        Check::problem(
            Status::Fail,
            "integration",
            crate::ops::integration_check::describe(&left, integration),
            crate::ops::integration_check::fix(&left, integration),
        )
    })
}

/// Every kept revision of the journal is whole (specs/blackboard.md *The store*): `liza
/// history` and `doctor` agree on every revision.
fn journal(project: &Project) -> Option<Check> {
    let damaged = project.store.damaged_revisions().ok()?;
    let kept = project.store.revisions().ok()?;
    Some(if damaged.is_empty() {
        Check::ok(
            "journal",
            format!("{} revision(s) kept, each whole", kept.len()),
        )
    } else {
        let listed: Vec<String> = damaged.iter().map(|r| format!("r{r}")).collect();
        Check::problem(
            Status::Warn,
            "journal",
            format!(
                "revision(s) {} of .liza/journal/ are not whole (a write that failed, e.g. on a full disk, by an older liza)",
                listed.join(", ")
            ),
            "their text is lost, nothing else: move those files out of .liza/journal/ (the newest whole revision stays the head)",
        )
    })
}

/// The shared git remote answers.
fn git_remote(project: &Project, state: &State) -> Option<Check> {
    let url = state.config.git_remote.as_deref()?;
    Some(
        match crate::git::Remote::new(&project.root, url).reachable() {
            Ok(()) => Check::ok("git remote", format!("{url} answers")),
            Err(e) => Check::problem(
                Status::Fail,
                "git remote",
                e.to_string(),
                format!(
                    "task branches and the integration branch move there: make {url} reachable from this host"
                ),
            ),
        },
    )
}

fn lock(project: &Project, state: &State) -> Check {
    match project.store.lock_holder() {
        Ok(None) => Check::ok("state lock", "free"),
        Ok(Some(holder)) => {
            if let Some(pid) = crate::blackboard::store::lock::dead_owner(&holder) {
                return Check::problem(
                    Status::Fail,
                    "state lock",
                    format!(
                        "held, but the owner note names pid {pid}, which is no longer running ({holder})"
                    ),
                    "a process that did not record itself holds it (it inherited it, or is another tool): `fuser -v .liza/state.yaml.lock` names it; stop it",
                );
            }
            // The owner line: `pid N since <ts> command …`.
            let since = holder
                .split_whitespace()
                .skip_while(|w| *w != "since")
                .nth(1)
                .and_then(|t| Timestamp::parse(t).ok());
            let held = since.map(|s| Timestamp::now().seconds_since(s));
            let limit = state.config.lock_timeout().max(1);
            match held {
                Some(secs) if secs > limit => Check::problem(
                    Status::Fail,
                    "state lock",
                    format!("held for {secs} s (longer than lock_timeout, {limit} s) by {holder}"),
                    "if that process is stuck, stop it: the lock is released when it exits",
                ),
                _ => Check::ok("state lock", format!("held right now by {holder}")),
            }
        }
        Err(e) => Check::problem(
            Status::Fail,
            "state lock",
            e.to_string(),
            "check the permissions of .liza/",
        ),
    }
}

/// A `merge_intent` with no merge running: a merge was killed between recording its
/// intent and finishing. Nothing is lost (the next merge recovers it), but the task waits.
fn interrupted_merges(project: &Project, state: &State) -> Option<Check> {
    let pending: Vec<String> = state
        .tasks
        .iter()
        .filter_map(|t| {
            let intent = t.merge_intent.as_ref()?;
            let at = intent.at.map(|a| format!(" at {a}")).unwrap_or_default();
            Some(format!(
                "{} (candidate {}{at})",
                t.id,
                intent.candidate.as_str().get(..12).unwrap_or_default()
            ))
        })
        .collect();
    if pending.is_empty() {
        return None;
    }
    if crate::ops::merge_running(&project.store) {
        return Some(Check::ok(
            "merges",
            format!("in progress: {}", pending.join(", ")),
        ));
    }
    Some(Check::problem(
        Status::Warn,
        "merges",
        format!(
            "interrupted (a merge process died mid-merge): {}",
            pending.join(", ")
        ),
        "the next merge recovers it (MERGED if the candidate reached integration, else retried): run `liza merge <task>` or start a reviewer's supervisor",
    ))
}

/// Liveness records of agents or generations no longer registered, and registered agents
/// whose supervisor process is gone.
fn leftovers(project: &Project, state: &State) -> Vec<Check> {
    let mut checks = Vec::new();
    let records = project.store.live_records().unwrap_or_default();
    let stale: Vec<String> = records
        .0
        .iter()
        .filter(|(id, record)| {
            !state.agents.iter().any(|(agent, a)| {
                agent == id && a.generation.as_deref() == Some(record.generation.as_str())
            })
        })
        .map(|(id, record)| match project.store.address() {
            Some(address) => format!("{}/live/{id}.{}", address.prefix, record.generation),
            None => format!(".liza/live/{id}.{}.yaml", record.generation),
        })
        .collect();
    if !stale.is_empty() {
        let tidy = if project.store.address().is_some() {
            "readers ignore them, and they expire with their etcd lease"
        } else {
            "readers ignore them; delete them (`rm` the files) to tidy up"
        };
        checks.push(Check::problem(
            Status::Warn,
            "liveness records",
            format!("of agents no longer registered: {}", stale.join(", ")),
            tidy,
        ));
    }
    // An agent whose effective lease (state or heartbeat, the later) has lapsed has no
    // supervisor renewing it.
    let now = Timestamp::now();
    let mut gone = Vec::new();
    for (id, agent) in state.agents.iter() {
        let heartbeat = records.current(state, id).map(|r| r.lease_expires);
        let lease = agent.lease_expires.max(heartbeat);
        if let Some(lease) = lease
            && lease < now
        {
            gone.push(format!(
                "{id} (lease expired {} ago)",
                crate::blackboard::timestamp::human_duration(now.seconds_since(lease))
            ));
        }
    }
    if gone.is_empty() {
        checks.push(Check::ok(
            "agents",
            format!("{} registered, none left behind", state.agents.len()),
        ));
    } else {
        checks.push(Check::problem(
            Status::Warn,
            "agents",
            format!(
                "registered, but no supervisor renews them: {}",
                gone.join(", ")
            ),
            "`liza unregister <agent>` removes an entry; `liza clear-stale` frees expired claims",
        ));
    }
    checks
}
