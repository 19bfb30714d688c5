//! What the MCP server's resources and prompts answer, decided here so that the adapter
//! only checks the arguments and wraps the answers in the protocol's types. Resources: the
//! schema card ([`SCHEMA_URI`]), the pack as TOML ([`PACK_URI`]) and each module's source
//! ([`MODULE_URI_PREFIX`] and its dotted path), listed ([`App::resources`]) and read
//! ([`App::read_resource`]). Prompts: the texts of `explore`, `depends_on` and `used_by`,
//! written from the database's relations as one snapshot has them ([`App::prompts`]).

use std::sync::Arc;

use strata_eval::{RelationKind, Vocabulary};
use strata_store::Snapshot;
use strata_store::dump::Origin;

use crate::app::App;
use crate::error::CallError;
use crate::pack::Pack;

/// The schema card's URI.
pub const SCHEMA_URI: &str = "strata://schema";
/// The pack's URI.
pub const PACK_URI: &str = "strata://pack";
/// The prefix of a module's URI, followed by its dotted path.
pub const MODULE_URI_PREFIX: &str = "strata://modules/";

/// A resource as a listing names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceInfo {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Its title.
    pub title: String,
    /// What it holds.
    pub description: String,
    /// Its MIME type.
    pub mime_type: &'static str,
}

/// A resource's contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceText {
    /// The text.
    pub text: String,
    /// Its MIME type.
    pub mime_type: &'static str,
}

/// Why a resource was not read.
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    /// The database's snapshot or vocabulary could not be read.
    #[error(transparent)]
    Call(#[from] CallError),
    /// The pack did not write as TOML.
    #[error("the pack: {0}")]
    Pack(String),
    /// No resource has the URI (given at most 200 characters of it).
    #[error("no resource \"{uri}\"; the resources are {}", served.join(", "))]
    NotFound {
        /// The URI asked for, its first 200 characters.
        uri: String,
        /// The URIs served.
        served: Vec<String>,
    },
}

impl App {
    /// Every resource: the schema card, the pack and each module's source.
    pub fn resources(&self) -> Result<Vec<ResourceInfo>, CallError> {
        let (_, vocab) = self.base_snapshot("resources")?;
        let mut out = vec![
            ResourceInfo {
                uri: SCHEMA_URI.to_owned(),
                name: "schema".to_owned(),
                title: "The schema card".to_owned(),
                description: "Every relation (columns, doc, size), every module's public \
                              members and the builtins: what schema answers with no path."
                    .to_owned(),
                mime_type: "text/plain",
            },
            ResourceInfo {
                uri: PACK_URI.to_owned(),
                name: "pack".to_owned(),
                title: "The pack (strata.toml)".to_owned(),
                description: format!(
                    "What {} is about, its worked examples and hint, as TOML.",
                    self.pack().server_name()
                ),
                mime_type: "application/toml",
            },
        ];
        for path in vocab.modules() {
            let file = vocab.module_source(path).map_or("", |(f, _)| f);
            out.push(ResourceInfo {
                uri: format!("{MODULE_URI_PREFIX}{path}"),
                name: format!("module {path}"),
                title: format!("Module {path}"),
                description: format!("The source of module {path} ({file})."),
                mime_type: "text/plain",
            });
        }
        Ok(out)
    }

    /// The contents of the resource at `uri`; a URI not served is
    /// [`ResourceError::NotFound`], naming the ones that are.
    pub fn read_resource(&self, uri: &str) -> Result<ResourceText, ResourceError> {
        let (_, vocab) = self.base_snapshot("resources")?;
        if uri == SCHEMA_URI {
            return Ok(ResourceText {
                text: strata_eval::card(&vocab),
                mime_type: "text/plain",
            });
        }
        if uri == PACK_URI {
            let text =
                toml::to_string(&*self.pack()).map_err(|e| ResourceError::Pack(e.to_string()))?;
            return Ok(ResourceText {
                text,
                mime_type: "application/toml",
            });
        }
        if let Some(path) = uri.strip_prefix(MODULE_URI_PREFIX)
            && let Some((_, text)) = vocab.module_source(path)
        {
            return Ok(ResourceText {
                text: text.to_owned(),
                mime_type: "text/plain",
            });
        }
        let mut served = vec![SCHEMA_URI.to_owned(), PACK_URI.to_owned()];
        served.extend(
            vocab
                .modules()
                .into_iter()
                .map(|m| format!("{MODULE_URI_PREFIX}{m}")),
        );
        Err(ResourceError::NotFound {
            uri: uri.chars().take(200).collect(),
            served,
        })
    }

    /// The base the prompts are written from: one snapshot of the database, its vocabulary
    /// and the pack.
    pub fn prompts(&self) -> Result<Prompts, CallError> {
        let (snap, vocab) = self.base_snapshot("prompts")?;
        Ok(Prompts {
            snap,
            vocab,
            pack: self.pack(),
        })
    }
}

/// The prompts' texts, written from one snapshot ([`App::prompts`]).
pub struct Prompts {
    snap: Snapshot,
    vocab: Arc<Vocabulary>,
    pack: Arc<Pack>,
}

impl Prompts {
    /// The `explore` prompt: how to explore the database, its relations and the pack's
    /// worked examples.
    pub fn explore(&self) -> String {
        let pack = &self.pack;
        let mut out = format!(
            "Explore the {} database: {}.\n\n\
             1. Call schema with no path: every relation (its columns, doc and size), every \
             module's public members and the builtins.\n\
             2. Call look on a relation or module that looks relevant: its schema and, for a \
             stored relation, a few sample facts.\n\
             3. Call values with relation.column to see what one argument holds, and find with \
             a name to see which stored values it may stand for, before writing a value into a \
             program.\n\
             4. Write a program and call query; pass the user's values in bind. If the answer \
             is empty, call query again with sample: 5 to see which literal matched nothing, \
             or explain to see where the work went.",
            pack.server_name(),
            pack.about_or_default()
        );
        let relations: Vec<String> = self
            .vocab
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

    /// The `depends_on` (or, `used_by`, the `used_by`) prompt for `target`: a program over
    /// a `depends_on` (or `used_by`) relation when the database has one, else over its edge
    /// relations.
    pub fn closure(&self, target: &str, used_by: bool) -> String {
        let vocab = &self.vocab;
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
        let (program, note) = if let Some(rel) = used_by.then(|| named(vocab, "used_by")).flatten()
        {
            (format!("{rel}(?target, ?u) => ?u"), String::new())
        } else if let Some(rel) = named(vocab, "depends_on") {
            let program = if used_by {
                format!("{rel}(?u, ?target) => ?u")
            } else {
                format!("{rel}(?target, ?d) => ?d")
            };
            (program, String::new())
        } else {
            let edges: Vec<String> = self
                .snap
                .catalog()
                .relations
                .values()
                .filter(|m| m.origin == Origin::Edges && m.columns.len() == 2)
                .map(|m| m.name.clone())
                .collect();
            if edges.is_empty() {
                return format!(
                    "{question}\n\n{ground}\n\nThis database defines no depends_on relation \
                     and stores no edges: call schema with no path, pick the relation that \
                     links a thing to what it depends on, and write a recursive program over \
                     it; pass the value in bind ({bind}), never spliced into the program."
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
                    "\n\nThis database defines no depends_on relation, so the program follows \
                     its edge relations ({}); keep only the step rules whose edges mean a \
                     dependency (call schema for their docs).",
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
             (never spliced into the program's text):\n\nprogram:\n{indented}\nbind: \
             {bind}{note}\n\n\
             Every row carries the facts it was derived from: use them to say how each answer \
             is reached. An answer longer than a page ends with a page_token to pass back; an \
             empty answer: call query again with sample: 5 to see which literal matched \
             nothing."
        )
    }
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
