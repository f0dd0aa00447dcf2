//! Our small OpenAI-compatible chat-completions client (specs/builtin-agent.md *Calling the
//! model*): one POST per attempt; timeouts, connection errors, 5xx and 429 (honouring
//! `Retry-After`) retried up to three times with jittered exponential backoff; other 4xx
//! not retried; bodies bounded; token usage read from the response. It never logs content
//! and scrubs secrets from what it sends. `DRY_RUN=1` makes no HTTP call at all.

use std::time::Duration;

use serde_json::{Value, json};

use super::endpoint::Endpoint;
use super::scrub::Scrubber;

/// The largest response body read; a bigger one is a failed call, not a crash.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Usage a dry run reports for each call (specs/builtin-agent.md *DRY_RUN*).
pub const DRY_RUN_USAGE: Usage = Usage {
    prompt_tokens: 100,
    completion_tokens: 50,
};

/// The tokens a call used, as the endpoint reported them; added up per run and per task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    /// Tokens of the messages sent.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
}

impl Usage {
    /// Adds `other` to these counts.
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
    }

    /// Prompt and completion tokens together.
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// How calls are retried.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// Retries after the first attempt (3: four attempts at most).
    pub retries: u32,
    /// The first backoff; doubled each retry (1 s, 2 s, 4 s), ±25 % jitter.
    pub base: Duration,
    /// The longest `Retry-After` honoured; a longer one is cut to this.
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            retries: 3,
            base: Duration::from_secs(1),
            max_wait: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// `LIZA_LLM_BACKOFF_MS` sets the first backoff (tests and the demo use a short one).
    pub fn from_env() -> RetryPolicy {
        let mut policy = RetryPolicy::default();
        if let Some(ms) = std::env::var("LIZA_LLM_BACKOFF_MS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            policy.base = Duration::from_millis(ms);
        }
        policy
    }
}

/// Why an attempt was retried (the `reason` label of the retry metric is `transport`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transient {
    /// The request or the reading of the answer timed out.
    Timeout,
    /// No connection could be made.
    Connect,
    /// An HTTP 5xx, with its status.
    Server(u16),
    /// HTTP 429.
    RateLimited {
        /// The wait the endpoint's `Retry-After` asked for, when it gave one.
        retry_after: Option<Duration>,
    },
    /// The connection broke while the body was read.
    Interrupted,
}

impl std::fmt::Display for Transient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Transient::Timeout => f.write_str("timed out"),
            Transient::Connect => f.write_str("could not connect"),
            Transient::Server(code) => write!(f, "HTTP {code}"),
            Transient::RateLimited { .. } => f.write_str("HTTP 429 (rate limited)"),
            Transient::Interrupted => f.write_str("the connection broke while reading the answer"),
        }
    }
}

/// Why a call gave no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Still failing after every retry.
    Exhausted {
        /// Why the last attempt failed.
        last: Transient,
    },
    /// A 4xx other than 429: asking again would not help. `detail` is the error message
    /// the endpoint gave, scrubbed and bounded.
    Rejected {
        /// The HTTP status.
        status: u16,
        /// The endpoint's error message.
        detail: String,
    },
    /// The body is larger than [`MAX_BODY_BYTES`].
    TooLarge,
    /// HTTP 200 but not a chat-completions body.
    BadEnvelope(String),
    /// The request could not even be built (a bad URL).
    Request(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Exhausted { last } => write!(f, "the model endpoint kept failing ({last})"),
            Failure::Rejected { status, detail } => {
                write!(
                    f,
                    "the model endpoint refused the request (HTTP {status}): {detail}"
                )?;
                if *status == 401 || *status == 403 {
                    f.write_str(" — check LIZA_LLM_API_KEY")?;
                }
                if *status == 404 {
                    f.write_str(" — check LIZA_LLM_BASE_URL and LIZA_LLM_MODEL")?;
                }
                Ok(())
            }
            Failure::TooLarge => write!(
                f,
                "the model's answer is larger than {MAX_BODY_BYTES} bytes"
            ),
            Failure::BadEnvelope(why) => write!(
                f,
                "the model endpoint's answer is not a chat completion: {why}"
            ),
            Failure::Request(why) => write!(f, "could not send the request: {why}"),
        }
    }
}

/// One model call: the messages, and what a dry run answers instead.
pub struct Call<'a> {
    /// The system message: the identity's prefix, then the role's rules.
    pub system: &'a str,
    /// The user message: the role's prompt and the answer's expected shape.
    pub user: &'a str,
    /// A deterministic answer of the right shape for `DRY_RUN=1`.
    pub dry_run_answer: &'a str,
}

/// The result of a call, with the retries it took.
#[derive(Debug)]
pub struct Outcome {
    /// The answer, or why there is none.
    pub result: Result<Answer, Failure>,
    /// Why each retried attempt failed, in order.
    pub retries: Vec<Transient>,
}

/// What the model answered.
#[derive(Debug)]
pub struct Answer {
    /// The message content (raw: for the debug artifacts and the parser, never the log).
    pub content: String,
    /// `None` when the endpoint gave no usage (logged as a warning).
    pub usage: Option<Usage>,
}

/// The client of one endpoint, with its retry policy and the scrubber for its key.
pub struct ChatClient {
    http: reqwest::Client,
    endpoint: Endpoint,
    retry: RetryPolicy,
    scrubber: Scrubber,
    dry_run: bool,
    /// What the endpoint reported serving, every call of this client added up (the run's
    /// ledger entry, specs/ledger.md).
    served: std::sync::Mutex<Vec<liza_model::ledger::ModelUsage>>,
}

impl ChatClient {
    /// A client of `endpoint`; `dry_run` (`DRY_RUN=1`) answers every call with its
    /// [`Call::dry_run_answer`] and makes no HTTP call. `Err` when the HTTP client cannot
    /// be set up.
    pub fn new(
        endpoint: Endpoint,
        retry: RetryPolicy,
        dry_run: bool,
    ) -> Result<ChatClient, super::endpoint::EndpointError> {
        let mut builder = reqwest::Client::builder()
            .timeout(endpoint.timeout)
            .connect_timeout(endpoint.timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("liza/", env!("CARGO_PKG_VERSION")));
        if endpoint.is_loopback() {
            builder = builder.no_proxy();
        }
        let http = builder
            .build()
            .map_err(super::endpoint::EndpointError::Client)?;
        let scrubber = Scrubber::new(endpoint.api_key.clone());
        Ok(ChatClient {
            http,
            endpoint,
            retry,
            scrubber,
            dry_run,
            served: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// What the endpoint reported serving this client's calls, by model (`None`: no call
    /// reported usage; a dry run's made-up usage is none).
    pub fn served(&self) -> Option<liza_model::ledger::RunUsage> {
        let models = self.served.lock().ok()?.clone();
        (!models.is_empty()).then_some(liza_model::ledger::RunUsage {
            models,
            approximate: false,
        })
    }

    /// Adds one call's usage as the endpoint reported it: `prompt_tokens` (the whole
    /// prompt, cached tokens included), `prompt_tokens_details.cached_tokens`,
    /// `completion_tokens`, and the model that answered.
    fn count_served(&self, envelope: &Value) {
        let Some(u) = envelope.get("usage").filter(|u| u.is_object()) else {
            return;
        };
        let cached = u
            .pointer("/prompt_tokens_details/cached_tokens")
            .and_then(Value::as_u64);
        let prompt = u.get("prompt_tokens").and_then(Value::as_u64);
        let call = liza_model::ledger::ModelUsage {
            model: envelope
                .get("model")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .map_or_else(|| self.endpoint.model.clone(), str::to_owned)
                .into(),
            input_tokens: prompt.map(|p| p.saturating_sub(cached.unwrap_or(0))),
            output_tokens: u.get("completion_tokens").and_then(Value::as_u64),
            cache_read_tokens: cached,
            ..Default::default()
        };
        if call.is_empty() {
            return;
        }
        if let Ok(mut served) = self.served.lock() {
            match served.iter_mut().find(|m| m.model == call.model) {
                Some(kept) => kept.add(&call),
                None => served.push(call),
            }
        }
    }

    /// The endpoint it calls, with the model and the validation settings.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The scrubber for what it sends, which knows the configured key.
    pub fn scrubber(&self) -> &Scrubber {
        &self.scrubber
    }

    /// Asks the model; secrets are scrubbed from both messages first.
    pub async fn complete(&self, call: &Call<'_>) -> Outcome {
        if self.dry_run {
            return Outcome {
                result: Ok(Answer {
                    content: call.dry_run_answer.to_owned(),
                    usage: Some(DRY_RUN_USAGE),
                }),
                retries: Vec::new(),
            };
        }
        let body = json!({
            "model": self.endpoint.model,
            "messages": [
                {"role": "system", "content": self.scrubber.scrub(call.system)},
                {"role": "user", "content": self.scrubber.scrub(call.user)},
            ],
        });
        let body = body.to_string();
        let mut retries = Vec::new();
        loop {
            match self.attempt(&body).await {
                Attempt::Done(result) => {
                    match &result {
                        Ok(_) if !retries.is_empty() => tracing::info!(
                            retries = retries.len(),
                            "model call succeeded after retrying"
                        ),
                        Err(failure) => tracing::warn!(%failure, "model call failed; no result"),
                        Ok(_) => {}
                    }
                    if let Ok(answer) = &result
                        && answer.usage.is_none()
                    {
                        tracing::warn!(
                            "the model endpoint reported no token usage; counting none for this call"
                        );
                    }
                    return Outcome { result, retries };
                }
                Attempt::Retry(why) => {
                    if retries.len() as u32 >= self.retry.retries {
                        let failure = Failure::Exhausted { last: why };
                        tracing::warn!(%failure, attempts = retries.len() + 1, "model call failed; no result");
                        return Outcome {
                            result: Err(failure),
                            retries,
                        };
                    }
                    let wait = self.backoff(retries.len() as u32, &why);
                    tracing::debug!(reason = %why, wait_ms = wait.as_millis() as u64, "retrying the model call");
                    retries.push(why);
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    fn backoff(&self, retry: u32, why: &Transient) -> Duration {
        let exponential = self.retry.base.saturating_mul(1 << retry.min(16));
        let jittered = exponential.mul_f64(0.75 + 0.5 * jitter());
        match why {
            Transient::RateLimited {
                retry_after: Some(after),
            } => (*after)
                .min(self.retry.max_wait)
                .max(jittered.min(self.retry.max_wait)),
            _ => jittered.min(self.retry.max_wait),
        }
    }

    async fn attempt(&self, body: &str) -> Attempt {
        let mut request = self
            .http
            .post(self.endpoint.chat_url())
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(key) = &self.endpoint.api_key {
            request = request.bearer_auth(key);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return transport_error(&e),
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let bytes = match read_bounded(response).await {
            Ok(b) => b,
            Err(attempt) => return attempt,
        };
        match status {
            200..=299 => Attempt::Done(self.read_envelope(&bytes)),
            429 => Attempt::Retry(Transient::RateLimited { retry_after }),
            500..=599 => Attempt::Retry(Transient::Server(status)),
            _ => Attempt::Done(Err(Failure::Rejected {
                status,
                detail: self.error_detail(&bytes),
            })),
        }
    }

    fn read_envelope(&self, bytes: &[u8]) -> Result<Answer, Failure> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| Failure::BadEnvelope(format!("not JSON ({e})")))?;
        self.count_served(&value);
        let content = value
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .ok_or_else(|| Failure::BadEnvelope("no choices[0].message.content string".into()))?;
        let usage = value.get("usage").and_then(|u| {
            Some(Usage {
                prompt_tokens: u.get("prompt_tokens")?.as_u64()?,
                completion_tokens: u.get("completion_tokens")?.as_u64()?,
            })
        });
        Ok(Answer {
            content: content.to_owned(),
            usage,
        })
    }

    /// The endpoint's own error message (`error.message`), else the start of the body.
    fn error_detail(&self, bytes: &[u8]) -> String {
        let text = String::from_utf8_lossy(bytes);
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| {
                v.pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| text.trim().to_owned());
        let mut detail = self.scrubber.scrub(&message);
        if detail.len() > 300 {
            let mut cut = 300;
            while !detail.is_char_boundary(cut) {
                cut -= 1;
            }
            detail.truncate(cut);
            detail.push('…');
        }
        if detail.is_empty() {
            detail = "no detail given".into();
        }
        detail
    }
}

enum Attempt {
    Done(Result<Answer, Failure>),
    Retry(Transient),
}

fn transport_error(e: &reqwest::Error) -> Attempt {
    if e.is_timeout() {
        Attempt::Retry(Transient::Timeout)
    } else if e.is_connect() {
        Attempt::Retry(Transient::Connect)
    } else if e.is_builder() {
        Attempt::Done(Err(Failure::Request(e.to_string())))
    } else {
        Attempt::Retry(Transient::Interrupted)
    }
}

/// The body, read chunk by chunk and given up past [`MAX_BODY_BYTES`].
async fn read_bounded(mut response: reqwest::Response) -> Result<Vec<u8>, Attempt> {
    if response
        .content_length()
        .is_some_and(|n| n > MAX_BODY_BYTES as u64)
    {
        return Err(Attempt::Done(Err(Failure::TooLarge)));
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(Attempt::Done(Err(Failure::TooLarge)));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) if e.is_timeout() => return Err(Attempt::Retry(Transient::Timeout)),
            Err(_) => return Err(Attempt::Retry(Transient::Interrupted)),
        }
    }
}

/// `Retry-After`: delta seconds, or an HTTP date.
pub fn parse_retry_after(text: &str) -> Option<Duration> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(text).ok()?;
    let wait = when.timestamp() - chrono::Utc::now().timestamp();
    Some(Duration::from_secs(wait.max(0) as u64))
}

/// A number in [0, 1) that differs between processes and calls (jitter only).
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        assert_eq!(parse_retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }

    #[test]
    fn jitter_stays_in_range() {
        for _ in 0..1000 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j), "{j}");
        }
    }
}
