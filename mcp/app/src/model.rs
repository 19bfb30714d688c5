//! The models `ask` writes programs with, reached over HTTP and never bundled: a local model
//! through the OpenAI-compatible chat completions API (what llama.cpp's server, Ollama and
//! vLLM expose) and a frontier fallback through the Anthropic Messages API or a second
//! OpenAI-compatible endpoint.
//!
//! A [`Model`] is one endpoint: its API ([`Api`]), base URL, model name, optional key and
//! per-request timeout. [`Model::complete`] sends a system prompt and a conversation and
//! answers the reply's text. Requests run on one small runtime of the process's own
//! ([`block_on`]), so a model can be asked from any thread, async or not, and a call can be
//! abandoned through a [`Cancel`].

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};
use strata_eval::Cancel;

/// How long a model may take to answer one request when the configuration does not say.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The most tokens a reply may take (the Anthropic API requires a cap).
pub const MAX_TOKENS: u32 = 1024;

/// The Anthropic Messages API's base URL.
pub const ANTHROPIC_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header sent with every Messages request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The most bytes of an error reply's body quoted in a [`ModelError::Status`].
const BODY_QUOTED: usize = 300;

/// Why a model gave no reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The configuration is unusable (a bad URL, an empty name, a key variable not set).
    #[error("{0}")]
    Config(String),
    /// The model did not answer within the per-request timeout.
    #[error("{model} did not answer within {timeout:?} (the per-request timeout)")]
    Timeout {
        /// The model, as [`Model::label`] writes it.
        model: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The endpoint could not be reached, or the connection failed mid-request.
    #[error("{model}: the request to {url} failed: {message}")]
    Http {
        /// The model, as [`Model::label`] writes it.
        model: String,
        /// The URL asked.
        url: String,
        /// What failed, from the HTTP client.
        message: String,
    },
    /// The endpoint answered with an HTTP error status.
    #[error("{model}: {url} answered HTTP {status}: {body}")]
    Status {
        /// The model, as [`Model::label`] writes it.
        model: String,
        /// The URL asked.
        url: String,
        /// The status code.
        status: u16,
        /// The start of the reply's body.
        body: String,
    },
    /// The reply is not the API's JSON, or holds no text.
    #[error("{model}: the reply is not a {api} answer with text: {message}")]
    Malformed {
        /// The model, as [`Model::label`] writes it.
        model: String,
        /// The API expected.
        api: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The call was cancelled (it ran past the server's time limit) while the model was
    /// being asked.
    #[error("the call was cancelled while {model} was being asked")]
    Cancelled {
        /// The model, as [`Model::label`] writes it.
        model: String,
    },
}

/// The API a model endpoint speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// OpenAI-compatible chat completions: `POST {url}/chat/completions`.
    OpenAi,
    /// Anthropic Messages: `POST {url}/v1/messages`.
    Anthropic,
}

impl Api {
    /// The API's name as flags and answers write it: `openai` or `anthropic`.
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Anthropic => "anthropic",
        }
    }

    /// Reads `openai` or `anthropic`.
    pub fn parse(s: &str) -> Result<Api, ModelError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(Api::OpenAi),
            "anthropic" => Ok(Api::Anthropic),
            other => Err(ModelError::Config(format!(
                "\"{other}\" is not a model API; use openai or anthropic"
            ))),
        }
    }
}

/// Who wrote a message of the conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The question, or the engine's error fed back.
    User,
    /// A reply of the model.
    Assistant,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One message of the conversation a model is shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its text.
    pub content: String,
}

/// One model endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct Model {
    /// The API it speaks.
    pub api: Api,
    /// The base URL (`http://127.0.0.1:8080/v1`, `https://api.anthropic.com`), or the full
    /// endpoint (`.../chat/completions`, `.../v1/messages`).
    pub url: String,
    /// The model's name, as the endpoint knows it.
    pub name: String,
    /// The key sent with every request (a bearer token for OpenAI-compatible endpoints,
    /// `x-api-key` for Anthropic's), if any.
    pub key: Option<String>,
    /// The longest one request may take.
    pub timeout: Duration,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("api", &self.api)
            .field("url", &self.url)
            .field("name", &self.name)
            .field("key", &self.key.as_ref().map(|_| "<set>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Model {
    /// A model at `url` speaking `api`, named `name`, with no key and the default timeout.
    /// Refuses a URL that is not `http://` or `https://`, and an empty name.
    pub fn new(api: Api, url: &str, name: &str) -> Result<Model, ModelError> {
        let url = url.trim().trim_end_matches('/').to_owned();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ModelError::Config(format!(
                "\"{url}\" is not a model URL; give http://HOST:PORT/... or https://..."
            )));
        }
        let name = name.trim().to_owned();
        if name.is_empty() {
            return Err(ModelError::Config(
                "the model's name is empty; give the name its endpoint knows it by".to_owned(),
            ));
        }
        Ok(Model {
            api,
            url,
            name,
            key: None,
            timeout: DEFAULT_REQUEST_TIMEOUT,
        })
    }

    /// The same model with the key read from the environment variable `var`; an unset or
    /// empty variable is refused, naming `flag` (the flag that named the variable).
    pub fn key_from_env(mut self, flag: &str, var: &str) -> Result<Model, ModelError> {
        match std::env::var(var) {
            Ok(k) if !k.trim().is_empty() => {
                self.key = Some(k.trim().to_owned());
                Ok(self)
            }
            _ => Err(ModelError::Config(format!(
                "{flag} {var}: the environment variable {var} is not set (or is empty); set it \
                 to the model's key, or leave the flag out for an endpoint that needs none"
            ))),
        }
    }

    /// The same model with `timeout` per request.
    pub fn timeout(mut self, timeout: Duration) -> Model {
        self.timeout = timeout;
        self
    }

    /// How answers and errors name it: `qwen2.5-coder (openai at http://127.0.0.1:8080/v1)`.
    pub fn label(&self) -> String {
        format!("{} ({} at {})", self.name, self.api.name(), self.url)
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> String {
        match self.api {
            Api::OpenAi if self.url.ends_with("/chat/completions") => self.url.clone(),
            Api::OpenAi => format!("{}/chat/completions", self.url),
            Api::Anthropic if self.url.ends_with("/messages") => self.url.clone(),
            Api::Anthropic if self.url.ends_with("/v1") => format!("{}/messages", self.url),
            Api::Anthropic => format!("{}/v1/messages", self.url),
        }
    }

    /// The JSON body of a request with `system` and `messages`.
    pub fn body(&self, system: &str, messages: &[Message]) -> Value {
        let turns = |out: &mut Vec<Value>| {
            for m in messages {
                out.push(json!({ "role": m.role.name(), "content": m.content }));
            }
        };
        match self.api {
            Api::OpenAi => {
                let mut all = vec![json!({ "role": "system", "content": system })];
                turns(&mut all);
                json!({
                    "model": self.name,
                    "messages": all,
                    "temperature": 0,
                    "max_tokens": MAX_TOKENS,
                    "stream": false,
                })
            }
            Api::Anthropic => {
                let mut all = Vec::new();
                turns(&mut all);
                json!({
                    "model": self.name,
                    "system": system,
                    "messages": all,
                    "temperature": 0,
                    "max_tokens": MAX_TOKENS,
                })
            }
        }
    }

    /// The reply's text from the API's JSON answer.
    pub fn reply_text(&self, body: &str) -> Result<String, ModelError> {
        let malformed = |message: String| ModelError::Malformed {
            model: self.label(),
            api: self.api.name(),
            message,
        };
        let v: Value =
            serde_json::from_str(body).map_err(|e| malformed(format!("{e}: {}", quote(body))))?;
        let text = match self.api {
            Api::OpenAi => v
                .pointer("/choices/0/message/content")
                .and_then(Value::as_str)
                .map(str::to_owned),
            Api::Anthropic => v.get("content").and_then(Value::as_array).map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("")
            }),
        };
        match text {
            Some(t) if !t.trim().is_empty() => Ok(t),
            _ => Err(malformed(format!("no text in {}", quote(body)))),
        }
    }

    /// Asks the model: `system` and `messages` in, the reply's text out. Waits at most the
    /// model's timeout, and gives up early when `cancel` is set.
    pub fn complete(
        &self,
        system: &str,
        messages: &[Message],
        cancel: &Cancel,
    ) -> Result<String, ModelError> {
        let url = self.endpoint();
        let body = self.body(system, messages).to_string();
        let mut request = client()
            .post(&url)
            .timeout(self.timeout)
            .header("content-type", "application/json")
            .body(body);
        match (&self.key, self.api) {
            (Some(k), Api::OpenAi) => request = request.bearer_auth(k),
            (Some(k), Api::Anthropic) => request = request.header("x-api-key", k),
            (None, _) => {}
        }
        if self.api == Api::Anthropic {
            request = request.header("anthropic-version", ANTHROPIC_VERSION);
        }
        let label = self.label();
        let http = |e: reqwest::Error| {
            if e.is_timeout() {
                ModelError::Timeout {
                    model: label.clone(),
                    timeout: self.timeout,
                }
            } else {
                ModelError::Http {
                    model: label.clone(),
                    url: url.clone(),
                    message: crate::read::error_text(&e),
                }
            }
        };
        let reply = block_on(
            async move {
                let response = request.send().await?;
                let status = response.status();
                let text = response.text().await?;
                Ok::<_, reqwest::Error>((status, text))
            },
            cancel,
        );
        let (status, text) = match reply {
            None => return Err(ModelError::Cancelled { model: label }),
            Some(r) => r.map_err(http)?,
        };
        if !status.is_success() {
            return Err(ModelError::Status {
                model: label,
                url,
                status: status.as_u16(),
                body: quote(&text),
            });
        }
        self.reply_text(&text)
    }
}

/// The start of a reply's body, on one line.
fn quote(body: &str) -> String {
    let one_line = body.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(BODY_QUOTED) {
        Some((i, _)) => format!("{}...", &one_line[..i]),
        None => one_line,
    }
}

/// The runtime model requests run on: one worker thread, made on first use and kept for the
/// life of the process (so it is never dropped inside another runtime).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("strata-model")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the model runtime: {e}"))
    })
}

/// The HTTP client every model request goes through (its connections live on
/// [`runtime`]).
fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let _guard = runtime().enter();
        reqwest::Client::builder()
            .user_agent(concat!("strata/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    })
}

/// Runs `future` on the model runtime and waits for it from this thread, whatever runtime
/// (if any) it belongs to. `None` when `cancel` was set first (the future is dropped).
pub fn block_on<T: Send + 'static>(
    future: impl std::future::Future<Output = T> + Send + 'static,
    cancel: &Cancel,
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    let task = runtime().spawn(async move {
        let _ = tx.send(future.await);
    });
    loop {
        match rx.recv_timeout(Duration::from_millis(25)) {
            Ok(v) => return Some(v),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if cancel.is_cancelled() => {
                task.abort();
                return None;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                // The task panicked or was aborted.
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn endpoints_take_a_base_or_a_full_url() {
        let m = Model::new(Api::OpenAi, "http://127.0.0.1:8080/v1/", "m").unwrap();
        assert_eq!(m.endpoint(), "http://127.0.0.1:8080/v1/chat/completions");
        let m = Model::new(Api::OpenAi, "http://h/v1/chat/completions", "m").unwrap();
        assert_eq!(m.endpoint(), "http://h/v1/chat/completions");
        let m = Model::new(Api::Anthropic, ANTHROPIC_URL, "claude").unwrap();
        assert_eq!(m.endpoint(), "https://api.anthropic.com/v1/messages");
        let m = Model::new(Api::Anthropic, "http://h/v1", "claude").unwrap();
        assert_eq!(m.endpoint(), "http://h/v1/messages");
        assert!(Model::new(Api::OpenAi, "localhost:8080", "m").is_err());
        assert!(Model::new(Api::OpenAi, "http://h", " ").is_err());
        assert_eq!(Api::parse("Anthropic").unwrap(), Api::Anthropic);
        assert!(Api::parse("gemini").is_err());
    }

    #[test]
    fn bodies_and_replies_follow_each_api() {
        let msgs = [Message {
            role: Role::User,
            content: "q".into(),
        }];
        let o = Model::new(Api::OpenAi, "http://h/v1", "m").unwrap();
        let b = o.body("sys", &msgs);
        assert_eq!(b["messages"][0]["role"], "system");
        assert_eq!(b["messages"][1]["content"], "q");
        assert_eq!(
            o.reply_text(r#"{"choices":[{"message":{"role":"assistant","content":"p(?x)"}}]}"#)
                .unwrap(),
            "p(?x)"
        );
        assert!(matches!(
            o.reply_text("<html>").unwrap_err(),
            ModelError::Malformed { .. }
        ));
        let a = Model::new(Api::Anthropic, "http://h", "c").unwrap();
        let b = a.body("sys", &msgs);
        assert_eq!(b["system"], "sys");
        assert_eq!(b["max_tokens"], MAX_TOKENS);
        assert_eq!(
            a.reply_text(r#"{"content":[{"type":"text","text":"p(?x)"}]}"#)
                .unwrap(),
            "p(?x)"
        );
        assert!(a.reply_text(r#"{"content":[]}"#).is_err());
    }

    #[test]
    fn a_missing_key_variable_names_the_flag() {
        let m = Model::new(Api::OpenAi, "http://h", "m").unwrap();
        let e = m
            .key_from_env("--model-key-env", "STRATA_TEST_SURELY_UNSET_VAR")
            .unwrap_err();
        assert!(e.to_string().contains("--model-key-env"), "{e}");
        assert!(
            !format!(
                "{:?}",
                Model {
                    key: Some("sekrit".into()),
                    ..Model::new(Api::OpenAi, "http://h", "m").unwrap()
                }
            )
            .contains("sekrit")
        );
    }

    #[test]
    fn an_unreachable_model_is_an_http_error() {
        // A port nothing listens on (bound, then closed).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let m = Model::new(Api::OpenAi, &format!("http://127.0.0.1:{port}/v1"), "m").unwrap();
        let e = m.complete("s", &[], &Cancel::new()).unwrap_err();
        assert!(matches!(e, ModelError::Http { .. }), "{e}");
    }
}
