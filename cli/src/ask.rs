//! `strata ask`: a question answered by the application's `ask`, once (a [`strata_app::read`]
//! read: directly, or by the server holding the database); with the model flags
//! (`--model-url`, `--fallback-name`, ...) that `strata serve` takes too, and the limits
//! from the flags.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use strata_app::{AskOptions, Language, Mode, ModelFlags, Options};

use super::duration;
use super::query::LimitFlags;

/// The models `ask` translates questions with (`strata ask`, and the `ask` tool of
/// `strata serve`).
#[derive(Args)]
pub(crate) struct ModelArgs {
    /// The local model: an OpenAI-compatible chat completions endpoint (llama.cpp's server,
    /// Ollama, vLLM), by its base URL, e.g. http://127.0.0.1:8080/v1.
    #[arg(long, value_name = "URL", help_heading = "Models (ask)")]
    pub(crate) model_url: Option<String>,
    /// The local model's name, as its endpoint knows it.
    #[arg(long, value_name = "NAME", help_heading = "Models (ask)")]
    pub(crate) model_name: Option<String>,
    /// The environment variable holding the local model's key (sent as a bearer token).
    #[arg(long, value_name = "VAR", help_heading = "Models (ask)")]
    pub(crate) model_key_env: Option<String>,
    /// The frontier fallback's model name; setting it sets the fallback up.
    #[arg(long, value_name = "NAME", help_heading = "Models (ask)")]
    pub(crate) fallback_name: Option<String>,
    /// The fallback's API: anthropic (the Messages API, the default) or openai.
    #[arg(long, value_name = "KIND", value_parser = ["anthropic", "openai"], help_heading = "Models (ask)")]
    pub(crate) fallback_kind: Option<String>,
    /// The fallback's base URL (default for anthropic: https://api.anthropic.com).
    #[arg(long, value_name = "URL", help_heading = "Models (ask)")]
    pub(crate) fallback_url: Option<String>,
    /// The environment variable holding the fallback's key.
    #[arg(long, value_name = "VAR", help_heading = "Models (ask)")]
    pub(crate) fallback_key_env: Option<String>,
    /// The longest one model request may take: 500ms, 30s, 2m.
    #[arg(long, default_value = "60s", help_heading = "Models (ask)")]
    pub(crate) model_timeout: String,
    /// How many programs each model may write for one question.
    #[arg(long, default_value_t = strata_app::ask::DEFAULT_TRIES, help_heading = "Models (ask)")]
    pub(crate) tries: u32,
}

impl ModelArgs {
    fn options(&self) -> Result<AskOptions> {
        Ok(AskOptions::from_flags(&ModelFlags {
            model_url: self.model_url.clone(),
            model_name: self.model_name.clone(),
            model_key_env: self.model_key_env.clone(),
            fallback_url: self.fallback_url.clone(),
            fallback_name: self.fallback_name.clone(),
            fallback_kind: self.fallback_kind.clone(),
            fallback_key_env: self.fallback_key_env.clone(),
            timeout: Some(duration(&self.model_timeout).context("--model-timeout")?),
            tries: self.tries,
        })?)
    }
}

#[derive(Args)]
pub(crate) struct AskArgs {
    /// The database directory.
    pub(crate) db: PathBuf,
    /// The question, e.g. "what does app depend on?".
    pub(crate) question: String,
    /// Which models to ask: local, frontier, or both (local first, the fallback when it fails).
    #[arg(long, default_value = "both", value_parser = ["local", "frontier", "both"])]
    pub(crate) mode: String,
    /// The language the model writes: datalog, or cypher for a database with a Cypher graph
    /// (default: the pack's ask_language, else datalog).
    #[arg(long, value_parser = ["datalog", "cypher"])]
    pub(crate) language: Option<String>,
    #[command(flatten)]
    pub(crate) limits: LimitFlags,
    /// Answer as JSON: the program, columns, rows, witnesses, total and every try.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) models: ModelArgs,
}

/// The limits and models from the flags.
pub(crate) fn app_options(limits: &LimitFlags, models: &ModelArgs) -> Result<Options> {
    Ok(Options {
        limit: limits.limit.max(1),
        max_work: limits.max_work,
        timeout: duration(&limits.timeout)?,
        threads: None,
        max_bytes: strata_eval::ANSWER_BYTES,
        ask: models.options()?,
        max_memory: Some(strata_app::default_max_memory(1)),
        ..Options::default()
    })
}

/// `strata ask`: the question answered once, as the `ask` tool answers it; while a server
/// holds the database, by that server (with these flags' models and limits).
pub(crate) fn ask(args: &AskArgs) -> Result<()> {
    use strata_app::read::{AskModels, Read, What};
    let request = Read {
        what: What::Ask {
            question: args.question.clone(),
            mode: match args.mode.as_str() {
                "local" => Mode::Local,
                "frontier" => Mode::Frontier,
                _ => Mode::Both,
            },
            language: match args.language.as_deref() {
                Some("cypher") => Some(Language::Cypher),
                Some(_) => Some(Language::Datalog),
                None => None,
            },
            models: AskModels(args.models.options()?),
        },
        json: args.json,
        limits: args.limits.limits()?,
    };
    super::read(&args.db, &request)
}
