//! `liza retro` (specs/builtin-agent.md *Retrospective coding*): identity-based coder
//! agents reading the sprint's interactions and assigning codes grounded in verbatim
//! quotes. The interactions are collected from the blackboard (and the sprint's archive),
//! every message is chunked, one coder agent per identity codes every chunk — all calls in
//! parallel up to a bound — and the identities' results are merged into
//! `.liza/retro/<sprint>.yaml` and `.md`.

pub(crate) mod coding;
pub(crate) mod interactions;
pub(crate) mod merge;
pub(crate) mod report;

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use self::coding::{ChunkCoded, CoderResult, Reading, Unit};
use self::interactions::Interaction;
use self::report::Report;
use crate::blackboard::document::decode_record;
use crate::blackboard::model::{Archive, Task};
use crate::blackboard::store::Document;
use crate::builtin::artifacts::Artifacts;
use crate::builtin::identities::{self, Identity, IdentityError};
use crate::error::{Diagnostic, ErrorClass};
use crate::llm::client::{ChatClient, RetryPolicy};
use crate::llm::endpoint::{Endpoint, ProcessEnv};
use crate::ops::{OpsError, Project};

/// What `liza retro` was asked.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// The sprint (default: the current one).
    pub sprint: Option<String>,
    /// The identities file (default: `identities.yaml` at the project root).
    pub identities: Option<PathBuf>,
    pub include_transcripts: bool,
    /// Model calls in flight at once.
    pub jobs: usize,
    /// The largest chunk, in estimated tokens.
    pub chunk_tokens: usize,
}

pub(crate) const DEFAULT_JOBS: usize = 4;
pub(crate) const DEFAULT_CHUNK_TOKENS: usize = 600;
/// How much of each saved transcript is read (its end: where runs conclude).
const TRANSCRIPT_BYTES: u64 = 32 * 1024;

/// A retrospective written.
pub(crate) struct Retro {
    pub report: Report,
    pub yaml: PathBuf,
    pub markdown: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum RetroError {
    #[error(transparent)]
    Identities(#[from] IdentityError),
    #[error(transparent)]
    Ops(#[from] OpsError),
    #[error("{message}")]
    Refused { message: String, hint: String },
    #[error(transparent)]
    Endpoint(#[from] crate::llm::endpoint::EndpointError),
    #[error(
        "the model endpoint answered none of the {0} calls, so no report was written (each failure is in .liza/agent-outputs/retro-*)"
    )]
    Unanswered(usize),
    #[error("could not write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

impl Diagnostic for RetroError {
    fn class(&self) -> ErrorClass {
        match self {
            RetroError::Ops(e) => e.class(),
            RetroError::Endpoint(_) | RetroError::Unanswered(_) => ErrorClass::MissingProgram,
            _ => ErrorClass::Refused,
        }
    }

    fn hints(&self) -> Vec<String> {
        match self {
            RetroError::Identities(_) => vec![
                "each identity needs `id`, `name` and `prompt_prefix` (`description` is optional); give another file with --identities".into(),
            ],
            RetroError::Ops(e) => e.hints(),
            RetroError::Refused { hint, .. } => vec![hint.clone()],
            RetroError::Endpoint(_) | RetroError::Unanswered(_) => vec![
                "check LIZA_LLM_BASE_URL and LIZA_LLM_API_KEY (`liza doctor` tries the endpoint), or run with DRY_RUN=1".into(),
            ],
            RetroError::Write { .. } => vec!["check the permissions of .liza/retro/".into()],
        }
    }
}

fn refused(message: String, hint: &str) -> RetroError {
    RetroError::Refused {
        message,
        hint: hint.to_owned(),
    }
}

/// Runs the retrospective and writes its files.
pub(crate) fn run(project: &Project, options: &Options) -> Result<Retro, RetroError> {
    // Identities first: a bad file fails before anything else is read or asked.
    let identities = match &options.identities {
        Some(file) => identities::load_file(file)?,
        None => identities::load(&project.root)?,
    };
    let state = project.store.snapshot().map_err(OpsError::from)?.state;
    let sprint = options
        .sprint
        .clone()
        .unwrap_or_else(|| state.sprint.id.clone());
    crate::ops::check_sprint_stem(&sprint)?;
    let current = sprint == state.sprint.id;
    let archived = read_archive(project, &sprint, current)?;
    let mut interactions = interactions::gather(&state, &archived, current);
    if options.include_transcripts {
        let dir = project.store.paths().dir.join("agent-logs");
        interactions::add_transcripts(&mut interactions, &dir, TRANSCRIPT_BYTES);
    }
    if interactions.is_empty() {
        return Err(refused(
            format!(
                "sprint {sprint} has no interaction to code yet: no task has a message (a reason, a note, a handoff, an anomaly)"
            ),
            "run it when the sprint has some history, or add --include-transcripts",
        ));
    }
    let config = state.config.builtin.clone().unwrap_or_default();
    let endpoint =
        Endpoint::resolve_roleless(&ProcessEnv, &config).map_err(RetroError::Endpoint)?;
    let dry_run = std::env::var("DRY_RUN").is_ok_and(|v| v.trim() == "1");
    let model = endpoint.model.clone();
    let client = ChatClient::new(endpoint, RetryPolicy::from_env(), dry_run)
        .map_err(RetroError::Endpoint)?;
    // What is sent and what is kept is the same text: secrets never reach either.
    for i in &mut interactions {
        for m in &mut i.messages {
            m.text = client.scrubber().scrub(&m.text);
        }
    }
    let units = coding::units(&interactions, options.chunk_tokens.max(16));
    let liza_dir = project.store.paths().dir.clone();
    let results = code_everything(
        Arc::new(client),
        &identities,
        Arc::new(interactions.clone()),
        Arc::new(units.clone()),
        options.jobs.max(1),
        &liza_dir,
        &sprint,
    );
    let calls: usize = results.iter().map(|r| r.tally.chunks).sum();
    let unanswered: usize = results.iter().map(|r| r.tally.calls_failed).sum();
    if calls > 0 && unanswered == calls {
        return Err(RetroError::Unanswered(calls));
    }
    let codes = merge::merge(&results);
    let runs = identities
        .iter()
        .zip(results)
        .map(|(i, r)| (i.name.clone(), r))
        .collect();
    let mut report = Report::new(
        &sprint,
        &model,
        dry_run,
        &interactions,
        units.len(),
        runs,
        codes,
    );
    report.runs_usage =
        report::SprintCost::of(&sprint, &project.store.ledger().unwrap_or_default());
    let dir = liza_dir.join("retro");
    let (yaml, markdown) = report.write(&dir).map_err(|source| RetroError::Write {
        path: project.store.paths().display(&dir),
        source,
    })?;
    Ok(Retro {
        report,
        yaml,
        markdown,
    })
}

/// The sprint's archived tasks; a past sprint must have its archive.
fn read_archive(
    project: &Project,
    sprint: &str,
    current: bool,
) -> Result<Vec<Arc<Task>>, RetroError> {
    let document = Document::Archive { sprint };
    let shown = project.store.document_place(&document);
    match project.store.document(&document) {
        Ok(Some(bytes)) => decode_record::<Archive>(&bytes)
            .map(|a| a.tasks.iter().cloned().collect())
            .map_err(|findings| {
                let first = findings
                    .first()
                    .map(|f| format!("{shown}:{}:{}: {}", f.line, f.column, f.message))
                    .unwrap_or_else(|| shown.clone());
                refused(
                    format!("the archive of sprint {sprint} cannot be read: {first}"),
                    "restore the file from a backup, or run without --sprint for the current sprint",
                )
            }),
        Ok(None) if current => Ok(Vec::new()),
        Ok(None) => Err(refused(
            format!("there is no sprint {sprint}: it is not the current sprint and {shown} does not exist"),
            "see `liza status` for the current sprint and .liza/archive/ for past ones",
        )),
        Err(e) => Err(refused(
            format!("cannot read {shown}: {e}"),
            "check the file's permissions, or that the store answers (`liza doctor`)",
        )),
    }
}

/// Every identity over every unit: all calls in flight up to `jobs` at once. Returns one
/// CoderResult per identity, in the identities' order, codes in reading order.
fn code_everything(
    client: Arc<ChatClient>,
    identities: &[Identity],
    interactions: Arc<Vec<Interaction>>,
    units: Arc<Vec<Unit>>,
    jobs: usize,
    liza_dir: &std::path::Path,
    sprint: &str,
) -> Vec<CoderResult> {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            tracing::warn!(%err, "could not start the async runtime; no chunk was coded");
            return identities.iter().map(|i| CoderResult::new(&i.id)).collect();
        }
    };
    runtime.block_on(async {
        let permits = Arc::new(Semaphore::new(jobs));
        let mut set: JoinSet<(usize, usize, ChunkCoded)> = JoinSet::new();
        for (who, identity) in identities.iter().enumerate() {
            let identity = Arc::new(identity.clone());
            let artifacts = Arc::new(Artifacts::new(
                liza_dir,
                &format!("retro-{}", identity.id),
                sprint,
                client.scrubber().clone(),
            ));
            for u in 0..units.len() {
                let (client, identity, interactions, units, artifacts, permits) = (
                    client.clone(),
                    identity.clone(),
                    interactions.clone(),
                    units.clone(),
                    artifacts.clone(),
                    permits.clone(),
                );
                set.spawn(async move {
                    let _permit = permits.acquire().await;
                    let unit = &units[u];
                    let reading = Reading {
                        interaction: &interactions[unit.interaction],
                        unit,
                    };
                    let coded = coding::code_chunk(&client, &identity, &reading, &artifacts).await;
                    (who, u, coded)
                });
            }
        }
        let mut done: Vec<(usize, usize, ChunkCoded)> = Vec::new();
        while let Some(joined) = set.join_next().await {
            match joined {
                Ok(one) => done.push(one),
                Err(err) => tracing::warn!(%err, "a coding task failed; its chunk has no codes"),
            }
        }
        done.sort_by_key(|(who, u, _)| (*who, *u));
        let mut results: Vec<CoderResult> =
            identities.iter().map(|i| CoderResult::new(&i.id)).collect();
        for (who, _, coded) in done {
            results[who].add(coded);
        }
        results
    })
}
