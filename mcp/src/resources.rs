//! Resources and prompts, in the protocol's types. Resources: the schema card
//! (`strata://schema`), the pack (`strata://pack`, TOML) and each module's source
//! (`strata://modules/<dotted path>`). Prompts: canned how-tos (`explore`, `depends_on`,
//! `used_by`) written from the database's relations, their arguments checked before use: a
//! missing, unknown or malformed argument is an invalid-params error naming it, never a
//! prompt written around it. What each answers is the core's ([`strata_app::Prompts`],
//! [`strata_app::App::read_resource`]); this module lists them, checks the arguments and
//! wraps the answers.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents,
    Role,
};
use strata_app::{CallError, ResourceError};

use crate::server::Server;

pub use strata_app::{MODULE_URI_PREFIX, PACK_URI, SCHEMA_URI};

/// The longest `target` a prompt takes, in characters.
pub const TARGET_MAX_CHARS: usize = 500;

/// One prompt: its name, description and arguments (each required).
struct PromptSpec {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    arguments: &'static [(&'static str, &'static str)],
}

const PROMPTS: &[PromptSpec] = &[
    PromptSpec {
        name: "explore",
        title: "Explore this database",
        description: "How to explore this database: its relations, modules and values, then a \
                      first program.",
        arguments: &[],
    },
    PromptSpec {
        name: "depends_on",
        title: "What X depends on",
        description: "A program answering what target depends on, directly or through others, \
                      with the facts each answer was derived from.",
        arguments: &[(
            "target",
            "The name of the thing whose dependencies to list (find grounds a partial one).",
        )],
    },
    PromptSpec {
        name: "used_by",
        title: "Who uses X",
        description: "A program answering what uses target (depends on it), directly or \
                      through others, with the facts each answer was derived from.",
        arguments: &[(
            "target",
            "The name of the thing whose users to list (find grounds a partial one).",
        )],
    },
];

/// A failed read of the database, as the protocol's internal error carrying it as data.
fn internal(e: &CallError) -> McpError {
    McpError::internal_error(e.to_string(), Some(e.json()))
}

impl Server {
    /// Every resource, as `resources/list` answers them: the schema card, the pack and each
    /// module's source.
    pub fn resources(&self) -> Result<Vec<Resource>, McpError> {
        let listed = self.app().resources().map_err(|e| internal(&e))?;
        Ok(listed
            .into_iter()
            .map(|r| {
                Resource::new(r.uri, r.name)
                    .with_title(r.title)
                    .with_description(r.description)
                    .with_mime_type(r.mime_type)
            })
            .collect())
    }

    /// The contents of the resource at `uri`; a URI the server does not serve is a
    /// resource-not-found error naming the ones it does.
    pub fn read_resource(&self, uri: &str) -> Result<ResourceContents, McpError> {
        match self.app().read_resource(uri) {
            Ok(r) => Ok(ResourceContents::text(r.text, uri).with_mime_type(r.mime_type)),
            Err(ResourceError::Call(e)) => Err(internal(&e)),
            Err(e @ ResourceError::Pack(_)) => Err(McpError::internal_error(e.to_string(), None)),
            Err(e @ ResourceError::NotFound { .. }) => {
                Err(McpError::resource_not_found(e.to_string(), None))
            }
        }
    }

    /// Every prompt, as `prompts/list` answers them.
    pub fn prompts(&self) -> Vec<Prompt> {
        PROMPTS
            .iter()
            .map(|p| {
                let args = p
                    .arguments
                    .iter()
                    .map(|(name, doc)| {
                        PromptArgument::new(*name)
                            .with_description(*doc)
                            .with_required(true)
                    })
                    .collect::<Vec<_>>();
                Prompt::new(
                    p.name,
                    Some(p.description),
                    (!args.is_empty()).then_some(args),
                )
                .with_title(p.title)
            })
            .collect()
    }

    /// Whether prompt `name` takes an argument `argument`.
    pub fn prompt_takes(&self, name: &str, argument: &str) -> bool {
        PROMPTS
            .iter()
            .any(|p| p.name == name && p.arguments.iter().any(|(a, _)| *a == argument))
    }

    /// The prompt `name` with `arguments`. An unknown prompt, a missing, unknown or
    /// malformed argument is an invalid-params error naming it.
    pub fn prompt(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
    ) -> Result<GetPromptResult, McpError> {
        let invalid = |m: String| McpError::invalid_params(m, None);
        let Some(spec) = PROMPTS.iter().find(|p| p.name == name) else {
            return Err(invalid(format!(
                "unknown prompt \"{}\"; the prompts are {}",
                name.chars().take(200).collect::<String>(),
                PROMPTS
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let empty = JsonObject::new();
        let arguments = arguments.unwrap_or(&empty);
        for key in arguments.keys() {
            if !spec.arguments.iter().any(|(a, _)| a == key) {
                return Err(invalid(format!(
                    "prompt {name}: unknown argument \"{}\"; {}",
                    key.chars().take(200).collect::<String>(),
                    if spec.arguments.is_empty() {
                        "it takes none".to_owned()
                    } else {
                        format!(
                            "it takes {}",
                            spec.arguments
                                .iter()
                                .map(|(a, _)| *a)
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }
                )));
            }
        }
        let prompts = self.app().prompts().map_err(|e| internal(&e))?;
        let text = match name {
            "explore" => prompts.explore(),
            _ => prompts.closure(&target(name, arguments)?, name == "used_by"),
        };
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(spec.description),
        )
    }
}

/// The checked `target` argument: a string, not empty, without control characters, of at
/// most [`TARGET_MAX_CHARS`] characters.
fn target(prompt: &str, arguments: &JsonObject) -> Result<String, McpError> {
    let invalid = |m: String| McpError::invalid_params(m, None);
    let value = arguments.get("target").ok_or_else(|| {
        invalid(format!(
            "prompt {prompt}: the argument \"target\" is missing: the name of the thing to ask \
             about"
        ))
    })?;
    let serde_json::Value::String(s) = value else {
        return Err(invalid(format!(
            "prompt {prompt}: the argument \"target\" must be a string"
        )));
    };
    let s = s.trim();
    if s.is_empty() {
        return Err(invalid(format!(
            "prompt {prompt}: the argument \"target\" is empty"
        )));
    }
    if s.chars().count() > TARGET_MAX_CHARS {
        return Err(invalid(format!(
            "prompt {prompt}: the argument \"target\" is longer than {TARGET_MAX_CHARS} \
             characters"
        )));
    }
    if s.chars().any(char::is_control) {
        return Err(invalid(format!(
            "prompt {prompt}: the argument \"target\" holds a control character"
        )));
    }
    Ok(s.to_owned())
}
