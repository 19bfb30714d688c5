//! Resources and prompts. Resources: the schema card (`strata://schema`), the pack
//! (`strata://pack`, TOML) and each module's source (`strata://modules/<dotted path>`).
//! Prompts: canned how-tos (`explore`, `depends_on`, `used_by`) written from the database's
//! relations, their arguments checked before use: a missing, unknown or malformed argument
//! is an invalid-params error naming it, never a prompt written around it.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents,
    Role,
};
use strata_eval::{RelationKind, Vocabulary};
use strata_store::Snapshot;
use strata_store::dump::Origin;

use crate::server::Server;

/// The schema card's URI.
pub const SCHEMA_URI: &str = "strata://schema";
/// The pack's URI.
pub const PACK_URI: &str = "strata://pack";
/// The prefix of a module's URI, followed by its dotted path.
pub const MODULE_URI_PREFIX: &str = "strata://modules/";

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

impl Server {
    /// Every resource, as `resources/list` answers them: the schema card, the pack and each
    /// module's source.
    pub fn resources(&self) -> Result<Vec<Resource>, McpError> {
        let (_, vocab) = self
            .app()
            .base_snapshot("resources")
            .map_err(|e| McpError::internal_error(e.to_string(), Some(e.json())))?;
        let mut out = vec![
            Resource::new(SCHEMA_URI, "schema")
                .with_title("The schema card")
                .with_description(
                    "Every relation (columns, doc, size), every module's public members and \
                     the builtins: what schema answers with no path.",
                )
                .with_mime_type("text/plain"),
            Resource::new(PACK_URI, "pack")
                .with_title("The pack (strata.toml)")
                .with_description(format!(
                    "What {} is about, its worked examples and hint, as TOML.",
                    self.pack().server_name()
                ))
                .with_mime_type("application/toml"),
        ];
        for path in vocab.modules() {
            let file = vocab.module_source(path).map_or("", |(f, _)| f);
            out.push(
                Resource::new(
                    format!("{MODULE_URI_PREFIX}{path}"),
                    format!("module {path}"),
                )
                .with_title(format!("Module {path}"))
                .with_description(format!("The source of module {path} ({file})."))
                .with_mime_type("text/plain"),
            );
        }
        Ok(out)
    }

    /// The contents of the resource at `uri`; a URI the server does not serve is a
    /// resource-not-found error naming the ones it does.
    pub fn read_resource(&self, uri: &str) -> Result<ResourceContents, McpError> {
        let (_, vocab) = self
            .app()
            .base_snapshot("resources")
            .map_err(|e| McpError::internal_error(e.to_string(), Some(e.json())))?;
        if uri == SCHEMA_URI {
            return Ok(
                ResourceContents::text(strata_eval::card(&vocab), uri).with_mime_type("text/plain")
            );
        }
        if uri == PACK_URI {
            let text = toml::to_string(&*self.pack())
                .map_err(|e| McpError::internal_error(format!("the pack: {e}"), None))?;
            return Ok(ResourceContents::text(text, uri).with_mime_type("application/toml"));
        }
        if let Some(path) = uri.strip_prefix(MODULE_URI_PREFIX)
            && let Some((_, text)) = vocab.module_source(path)
        {
            return Ok(ResourceContents::text(text, uri).with_mime_type("text/plain"));
        }
        let mut served = vec![SCHEMA_URI.to_owned(), PACK_URI.to_owned()];
        served.extend(
            vocab
                .modules()
                .into_iter()
                .map(|m| format!("{MODULE_URI_PREFIX}{m}")),
        );
        Err(McpError::resource_not_found(
            format!(
                "no resource \"{}\"; the resources are {}",
                uri.chars().take(200).collect::<String>(),
                served.join(", ")
            ),
            None,
        ))
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
        let (snap, vocab) = self
            .app()
            .base_snapshot("prompts")
            .map_err(|e| McpError::internal_error(e.to_string(), Some(e.json())))?;
        let text = match name {
            "explore" => explore(self, &vocab),
            _ => {
                let target = target(name, arguments)?;
                closure_prompt(&snap, &vocab, &target, name == "used_by")
            }
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

/// The `explore` prompt's text.
fn explore(server: &Server, vocab: &Vocabulary) -> String {
    let pack = server.pack();
    let mut out = format!(
        "Explore the {} database: {}.\n\n\
         1. Call schema with no path: every relation (its columns, doc and size), every \
         module's public members and the builtins.\n\
         2. Call look on a relation or module that looks relevant: its schema and, for a \
         stored relation, a few sample facts.\n\
         3. Call values with relation.column to see what one argument holds, and find with a \
         name to see which stored values it may stand for, before writing a value into a \
         program.\n\
         4. Write a program and call query; pass the user's values in bind. If the answer is \
         empty, call query again with sample: 5 to see which literal matched nothing, or \
         explain to see where the work went.",
        pack.server_name(),
        pack.about_or_default()
    );
    let relations: Vec<String> = vocab
        .relations()
        .into_iter()
        .filter(|r| r.kind != RelationKind::Builtin)
        .map(|r| r.signature())
        .collect();
    if !relations.is_empty() {
        out.push_str("\n\nThe relations: ");
        out.push_str(&relations.join(", "));
        out.push('.');
    }
    if !pack.examples.is_empty() {
        out.push_str("\n\nWorked examples:");
        for e in &pack.examples {
            out.push_str(&format!(
                "\n  # {}\n  {}",
                e.question.trim(),
                e.program.trim()
            ));
        }
    }
    out
}

/// A public two-column relation whose name, or its last part, is `name`.
fn named(vocab: &Vocabulary, name: &str) -> Option<String> {
    let suffix = format!(".{name}");
    vocab
        .relations()
        .into_iter()
        .filter(|r| r.kind != RelationKind::Builtin && r.columns.len() == 2)
        .map(|r| r.name)
        .find(|n| n == name || n.ends_with(&suffix))
}

/// The `depends_on` and `used_by` prompts' text: a program over a `depends_on` (or
/// `used_by`) relation when the database has one, else over its edge relations.
fn closure_prompt(snap: &Snapshot, vocab: &Vocabulary, target: &str, used_by: bool) -> String {
    let quoted = serde_json::Value::String(target.to_owned()).to_string();
    let question = if used_by {
        format!("What uses {quoted} (depends on it), directly or through others?")
    } else {
        format!("What does {quoted} depend on, directly or through others?")
    };
    let ground = format!(
        "First ground the name: call find with {{\"name\": {quoted}}} and take the stored \
         value it stands for (call find again with its words if nothing matches)."
    );
    let bind = format!("{{\"target\": {quoted}}}");
    let (program, note) = if let Some(rel) = used_by.then(|| named(vocab, "used_by")).flatten() {
        (format!("{rel}(?target, ?u) => ?u"), String::new())
    } else if let Some(rel) = named(vocab, "depends_on") {
        let program = if used_by {
            format!("{rel}(?u, ?target) => ?u")
        } else {
            format!("{rel}(?target, ?d) => ?d")
        };
        (program, String::new())
    } else {
        let edges: Vec<String> = snap
            .catalog()
            .relations
            .values()
            .filter(|m| m.origin == Origin::Edges && m.columns.len() == 2)
            .map(|m| m.name.clone())
            .collect();
        if edges.is_empty() {
            return format!(
                "{question}\n\n{ground}\n\nThis database defines no depends_on relation and \
                 stores no edges: call schema with no path, pick the relation that links a \
                 thing to what it depends on, and write a recursive program over it; pass the \
                 value in bind ({bind}), never spliced into the program."
            );
        }
        let mut program = String::new();
        for e in &edges {
            program.push_str(&format!("step(?a, ?b) :- {e}(?a, ?b);\n"));
        }
        program.push_str("reaches(?a, ?b) :- step(?a, ?b);\n");
        program.push_str("reaches(?a, ?c) :- reaches(?a, ?b), step(?b, ?c);\n");
        program.push_str(if used_by {
            "reaches(?u, ?target) => ?u"
        } else {
            "reaches(?target, ?d) => ?d"
        });
        (
            program,
            format!(
                "\n\nThis database defines no depends_on relation, so the program follows its \
                 edge relations ({}); keep only the step rules whose edges mean a dependency \
                 (call schema for their docs).",
                edges.join(", ")
            ),
        )
    };
    let indented = program
        .lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n");
    format!(
        "{question}\n\n{ground}\n\nThen call query with this program, the value in bind \
         (never spliced into the program's text):\n\nprogram:\n{indented}\nbind: {bind}{note}\n\n\
         Every row carries the facts it was derived from: use them to say how each answer \
         is reached. An answer longer than a page ends with a page_token to pass back; an \
         empty answer: call query again with sample: 5 to see which literal matched nothing."
    )
}
