//! `ask`'s configuration: the models it may use and how often each may try
//! ([`AskOptions`]), built from the command line's model flags ([`ModelFlags`]).

use std::time::Duration;

use super::DEFAULT_TRIES;
use crate::model::{Api, Model, ModelError};

/// The models `ask` may use and how often each may try: part of the server's
/// [`crate::Options`]. The tool is offered when at least one model is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AskOptions {
    /// The local model, asked first.
    pub local: Option<Model>,
    /// The frontier fallback, asked when the local model fails (or alone).
    pub fallback: Option<Model>,
    /// How many programs each model may write for one question (at least 1).
    pub tries: u32,
}

impl Default for AskOptions {
    fn default() -> Self {
        AskOptions {
            local: None,
            fallback: None,
            tries: DEFAULT_TRIES,
        }
    }
}

impl AskOptions {
    /// Whether any model is configured (the tool is listed).
    pub fn offered(&self) -> bool {
        self.local.is_some() || self.fallback.is_some()
    }

    /// Builds the options from the command line's flags, reading keys from the environment
    /// variables the flags name.
    pub fn from_flags(f: &ModelFlags) -> Result<AskOptions, ModelError> {
        let timeout = f.timeout.unwrap_or(crate::model::DEFAULT_REQUEST_TIMEOUT);
        if timeout.is_zero() {
            return Err(ModelError::Config(
                "--model-timeout must be longer than zero".to_owned(),
            ));
        }
        if f.tries == 0 {
            return Err(ModelError::Config("--tries must be at least 1".to_owned()));
        }
        let local = match (&f.model_url, &f.model_name) {
            (Some(url), Some(name)) => {
                let mut m = Model::new(Api::OpenAi, url, name)
                    .map_err(|e| flag_error("--model-url/--model-name", e))?
                    .timeout(timeout);
                if let Some(var) = &f.model_key_env {
                    m = m.key_from_env("--model-key-env", var)?;
                }
                Some(m)
            }
            (Some(_), None) => return Err(needs("--model-url", "--model-name NAME")),
            (None, Some(_)) => return Err(needs("--model-name", "--model-url URL")),
            (None, None) if f.model_key_env.is_some() => {
                return Err(needs(
                    "--model-key-env",
                    "--model-url URL --model-name NAME",
                ));
            }
            (None, None) => None,
        };
        let api = match &f.fallback_kind {
            Some(k) => Api::parse(k).map_err(|e| flag_error("--fallback-kind", e))?,
            None => Api::Anthropic,
        };
        let fallback = match &f.fallback_name {
            Some(name) => {
                let url = match (&f.fallback_url, api) {
                    (Some(u), _) => u.clone(),
                    (None, Api::Anthropic) => crate::model::ANTHROPIC_URL.to_owned(),
                    (None, Api::OpenAi) => {
                        return Err(needs("--fallback-kind openai", "--fallback-url URL"));
                    }
                };
                let mut m = Model::new(api, &url, name)
                    .map_err(|e| flag_error("--fallback-url/--fallback-name", e))?
                    .timeout(timeout);
                if let Some(var) = &f.fallback_key_env {
                    m = m.key_from_env("--fallback-key-env", var)?;
                }
                Some(m)
            }
            None => {
                for (flag, set) in [
                    ("--fallback-url", f.fallback_url.is_some()),
                    ("--fallback-kind", f.fallback_kind.is_some()),
                    ("--fallback-key-env", f.fallback_key_env.is_some()),
                ] {
                    if set {
                        return Err(needs(flag, "--fallback-name NAME"));
                    }
                }
                None
            }
        };
        Ok(AskOptions {
            local,
            fallback,
            tries: f.tries,
        })
    }

    /// The longest an `ask` call may take: every try of every model, each a request and a
    /// run, plus one more run's time for grounding; `run` is the server's time limit for
    /// one evaluation.
    pub fn time_limit(&self, run: Duration) -> Duration {
        let per_try: Duration = [&self.local, &self.fallback]
            .into_iter()
            .flatten()
            .map(|m| m.timeout + run)
            .sum();
        per_try * self.tries.max(1) + run
    }
}

fn needs(flag: &str, other: &str) -> ModelError {
    ModelError::Config(format!("{flag} needs {other} as well"))
}

fn flag_error(flags: &str, e: ModelError) -> ModelError {
    ModelError::Config(format!("{flags}: {e}"))
}

/// The model flags of `strata serve` and `strata ask`, as given (keys by the name of the
/// environment variable holding them).
#[derive(Clone, Debug, Default)]
pub struct ModelFlags {
    /// `--model-url`: the local model's OpenAI-compatible base URL.
    pub model_url: Option<String>,
    /// `--model-name`: the local model's name.
    pub model_name: Option<String>,
    /// `--model-key-env`: the variable holding the local model's key.
    pub model_key_env: Option<String>,
    /// `--fallback-url`: the fallback's base URL (default: Anthropic's).
    pub fallback_url: Option<String>,
    /// `--fallback-name`: the fallback's model name; sets the fallback up.
    pub fallback_name: Option<String>,
    /// `--fallback-kind`: `anthropic` (the default) or `openai`.
    pub fallback_kind: Option<String>,
    /// `--fallback-key-env`: the variable holding the fallback's key.
    pub fallback_key_env: Option<String>,
    /// `--model-timeout`: the longest one model request may take.
    pub timeout: Option<Duration>,
    /// `--tries`: programs per model per question.
    pub tries: u32,
}
