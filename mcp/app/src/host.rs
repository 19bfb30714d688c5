//! The host API, for a program that embeds the server: where each call's facts come from
//! (a [`BaseFn`] asked per call, or a [`BaseForFn`] asked with the base relations a program
//! reads, so a host opens an expensive tier only when a program touches it), a vocabulary
//! resolved on first use ([`VocabularyFn`]), and the host's own arguments, added to every
//! tool's schema, with a [`PrepareFn`] asked on each call for a [`Run`] that overrides the
//! server's choices for that call.
//!
//! Every hook is optional; a server built with [`HostOptions::default`] reads the store as
//! [`crate::App::new`] does. See [`crate::App::with_host`].

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use strata_eval::{FactSource, Vocabulary};

/// A JSON object: host arguments and their schemas.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// A base a call reads: any fact source, shared.
pub type Source = Arc<dyn FactSource + Send + Sync>;

/// What a host hook answers when it refuses a call: any error of the host's (a `String`
/// or `&str` converts with `.into()`), shown to the caller as the call's tool error with its
/// source chain.
pub type HostError = Box<dyn std::error::Error + Send + Sync>;

/// Asked once per call for the base it reads.
pub type BaseFn = Arc<dyn Fn(&CallContext) -> Result<Source, HostError> + Send + Sync>;

/// Asked with the base relations a program reads (sorted, each once) for the base it runs
/// on, in place of a [`BaseFn`].
pub type BaseForFn =
    Arc<dyn Fn(&CallContext, &[String]) -> Result<Source, HostError> + Send + Sync>;

/// Resolves the server's vocabulary: asked on the first call that needs it, and again on
/// the next call after one that failed.
pub type VocabularyFn = Arc<dyn Fn() -> Result<Vocabulary, HostError> + Send + Sync>;

/// Asked on each call with the tool's name and the host arguments the call gave; answers
/// what the call reads, or an error that is the call's tool error.
pub type PrepareFn = Arc<dyn Fn(&CallContext) -> Result<Run, HostError> + Send + Sync>;

/// What a host hook knows of the call it is asked for.
#[derive(Clone, Debug, Default)]
pub struct CallContext {
    /// The tool's name (`query`, `schema`, ...); for resources and prompts, `resources`
    /// or `prompts`.
    pub tool: String,
    /// The host arguments the call gave, by name (only those it gave).
    pub host_args: JsonObject,
}

/// What [`HostArguments::prepare`] answers for one call. A field left empty is the
/// server's.
#[derive(Clone, Default)]
pub struct Run {
    /// The base the call reads.
    pub base: Option<Source>,
    /// Asked with the base relations a program reads, in place of `base` and of the
    /// server's hooks.
    pub base_for: Option<BaseForFn>,
    /// The vocabulary the call's programs are checked against and its `schema`, `look` and
    /// `values` read. It is not checked against the pack as the server's is.
    pub vocabulary: Option<Arc<Vocabulary>>,
    /// A shorter time limit for this call's evaluations (never a longer one than the
    /// server's).
    pub timeout: Option<Duration>,
}

impl fmt::Debug for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Run")
            .field("base", &self.base.is_some())
            .field("base_for", &self.base_for.is_some())
            .field("vocabulary", &self.vocabulary.is_some())
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// The host's own arguments: JSON-schema properties merged into every tool's input
/// schema beside the tool's own, and the hook asked with their values on each call.
#[derive(Clone)]
pub struct HostArguments {
    /// The properties, by name, each a JSON schema (`{"type": "string", "description":
    /// ...}`). A name may not be one of any tool's own arguments.
    pub properties: JsonObject,
    /// The names of the properties every call must give.
    pub required: Vec<String>,
    /// Asked on each call, after the arguments are checked.
    pub prepare: PrepareFn,
}

impl HostArguments {
    /// Host arguments with `properties` (a JSON object of JSON schemas), none required,
    /// asked of `prepare` on each call.
    pub fn new(
        properties: JsonObject,
        prepare: impl Fn(&CallContext) -> Result<Run, HostError> + Send + Sync + 'static,
    ) -> HostArguments {
        HostArguments {
            properties,
            required: Vec::new(),
            prepare: Arc::new(prepare),
        }
    }

    /// The same, with `names` required on every call.
    pub fn require<I, S>(mut self, names: I) -> HostArguments
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required.extend(names.into_iter().map(Into::into));
        self
    }

    /// Checks the properties and the required names, and that no name is one of `own`,
    /// the arguments of `tool`.
    pub fn check(&self, tool: &str, own: &BTreeSet<String>) -> Result<(), HostArgumentError> {
        for (name, schema) in &self.properties {
            if name.is_empty() {
                return Err(HostArgumentError::EmptyName);
            }
            if own.contains(name) {
                return Err(HostArgumentError::Clash {
                    name: name.clone(),
                    tool: tool.to_owned(),
                });
            }
            if !schema.is_object() {
                return Err(HostArgumentError::NotASchema { name: name.clone() });
            }
        }
        for name in &self.required {
            if !self.properties.contains_key(name) {
                return Err(HostArgumentError::NoProperty { name: name.clone() });
            }
        }
        Ok(())
    }

    /// Takes the host arguments out of a call's `arguments`, checks them (required ones
    /// given; a value of the schema's `type` when it names one) and answers them.
    pub fn take(
        &self,
        tool: &str,
        arguments: &mut JsonObject,
    ) -> Result<JsonObject, HostArgumentError> {
        let mut out = JsonObject::new();
        for (name, schema) in &self.properties {
            let Some(value) = arguments.remove(name) else {
                continue;
            };
            if let Some(want) = schema.get("type").and_then(|t| t.as_str())
                && !fits(want, &value)
            {
                return Err(HostArgumentError::WrongType {
                    tool: tool.to_owned(),
                    name: name.clone(),
                    want: article(want),
                    got: kind(&value),
                });
            }
            out.insert(name.clone(), value);
        }
        for name in &self.required {
            if !out.contains_key(name) {
                return Err(HostArgumentError::Missing {
                    tool: tool.to_owned(),
                    name: name.clone(),
                });
            }
        }
        Ok(out)
    }
}

/// What is wrong with the host's arguments: as declared, or as a call gave them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostArgumentError {
    /// A property with an empty name.
    #[error("a host argument has an empty name")]
    EmptyName,
    /// A property named as one of a tool's own arguments.
    #[error(
        "the host argument \"{name}\" clashes with the {tool} tool's own argument of that \
         name; rename it"
    )]
    Clash {
        /// The property.
        name: String,
        /// The tool.
        tool: String,
    },
    /// A property whose schema is not a JSON object.
    #[error("the host argument \"{name}\": its schema must be a JSON object")]
    NotASchema {
        /// The property.
        name: String,
    },
    /// A required name with no property.
    #[error("the host argument \"{name}\" is required but has no property")]
    NoProperty {
        /// The name.
        name: String,
    },
    /// A call gave a value not of the property's type.
    #[error("{tool}: the host argument \"{name}\" must be {want}, not {got}")]
    WrongType {
        /// The tool called.
        tool: String,
        /// The property.
        name: String,
        /// The type wanted, with its article.
        want: String,
        /// What was given.
        got: &'static str,
    },
    /// A call left out a required argument.
    #[error("{tool}: the argument \"{name}\" is required")]
    Missing {
        /// The tool called.
        tool: String,
        /// The argument.
        name: String,
    },
}

impl fmt::Debug for HostArguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostArguments")
            .field("properties", &self.properties)
            .field("required", &self.required)
            .finish_non_exhaustive()
    }
}

/// The host's hooks. Every field is optional; the default is a server reading its store.
#[derive(Clone, Default)]
pub struct HostOptions {
    /// Asked once per call for the base it reads (default: a snapshot of the store).
    pub base: Option<BaseFn>,
    /// Asked with the base relations each program reads, in place of `base` (default: a
    /// snapshot of the store with the tiers holding them open).
    pub base_for: Option<BaseForFn>,
    /// The server's vocabulary, resolved on first use instead of at construction
    /// (default: the store's relations and the modules under its `modules/`). The pack's
    /// examples are checked against it when it resolves; a failure is that call's tool
    /// error, and the next call tries again.
    pub vocabulary: Option<VocabularyFn>,
    /// The host's own arguments on every tool.
    pub arguments: Option<HostArguments>,
}

impl fmt::Debug for HostOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostOptions")
            .field("base", &self.base.is_some())
            .field("base_for", &self.base_for.is_some())
            .field("vocabulary", &self.vocabulary.is_some())
            .field("arguments", &self.arguments)
            .finish()
    }
}

fn fits(want: &str, v: &serde_json::Value) -> bool {
    match want {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}

fn article(t: &str) -> String {
    match t {
        "integer" | "array" | "object" => format!("an {t}"),
        _ => format!("a {t}"),
    }
}

/// What kind of JSON value `v` is, with its article: `null`, `a boolean`, `an array`, ...
pub(crate) fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
