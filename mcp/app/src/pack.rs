//! The pack: what a database is about, read from `strata.toml` in its directory. The
//! instructions an agent reads and the tools' descriptions are written from it.
//!
//! ```
//! use strata_app::Pack;
//!
//! let pack = Pack::parse(r#"
//! name = "deps"
//! about = "the packages of a Go service and what each imports"
//!
//! [[examples]]
//! question = "what does api import?"
//! program = 'imports("api", ?d) => ?d'
//! "#).unwrap();
//! assert_eq!(pack.name, "deps");
//! assert_eq!(pack.examples[0].program, r#"imports("api", ?d) => ?d"#);
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The name of the pack's file in a database directory.
pub const PACK_FILE: &str = "strata.toml";

/// One worked example: a question and the program that answers it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// The question, as a user would ask it.
    pub question: String,
    /// The program that answers it.
    pub program: String,
}

/// One worked Cypher example: a question and the read query that answers it, shown to a model
/// that `ask` has write Cypher (`[[cypher_examples]]`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CypherExample {
    /// The question, as a user would ask it.
    pub question: String,
    /// The Cypher query that answers it; the server refuses one that doesn't compile.
    pub query: String,
}

/// A database's pack: its name, what its facts are about, worked examples and a hint.
#[derive(Clone, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Pack {
    /// The server's name, as a client lists it (`strata` when empty).
    #[serde(default)]
    pub name: String,
    /// What the facts are about, as a phrase: "the packages of a Go service and what each
    /// imports".
    #[serde(default)]
    pub about: String,
    /// Worked examples; the instructions show the first two.
    #[serde(default)]
    pub examples: Vec<Example>,
    /// A hint added to every empty answer, with the literal that matched nothing.
    #[serde(default)]
    pub hint: String,
    /// The Cypher graph's labels and relationship types beyond what the dumps give.
    #[serde(default)]
    pub cypher: CypherPack,
    /// The language `ask` has the model write when a call doesn't say: `datalog` (the
    /// default) or `cypher`.
    #[serde(default)]
    pub ask_language: crate::ask::Language,
    /// Worked Cypher examples, shown in place of `examples` to a model writing Cypher.
    #[serde(default)]
    pub cypher_examples: Vec<CypherExample>,
}

/// `[cypher]`: labels over any relation and relationship types over any two-column relation,
/// added to the graph the dumps give (nodes dumps are labels, edges dumps relationship types,
/// attrs dumps properties of every node).
///
/// ```toml
/// [[cypher.labels]]
/// label = "Package"
/// relation = "pkg"
/// id = "name"
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CypherPack {
    /// Node labels, each over a relation whose `id` column is the node's identity and whose
    /// other columns are its properties.
    #[serde(default)]
    pub labels: Vec<CypherLabel>,
    /// Relationship types, each over a relation `(src, dst)`.
    #[serde(default)]
    pub types: Vec<CypherType>,
}

/// A label over a relation.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CypherLabel {
    /// The label as queries write it (`Package`).
    pub label: String,
    /// The relation holding the nodes (`pkg`).
    pub relation: String,
    /// The column holding each node's identity (the first column when left out).
    #[serde(default)]
    pub id: Option<String>,
}

/// A relationship type over a relation `(src, dst)`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CypherType {
    /// The type as queries write it (`DEPENDS_ON`).
    #[serde(rename = "type")]
    pub name: String,
    /// The relation (`deps.depends_on`).
    pub relation: String,
}

impl CypherPack {
    /// The mapping the graph is derived with.
    pub fn mapping(&self) -> strata_eval::cypher::Mapping {
        strata_eval::cypher::Mapping {
            labels: self
                .labels
                .iter()
                .map(|l| (l.label.clone(), l.relation.clone(), l.id.clone()))
                .collect(),
            types: self
                .types
                .iter()
                .map(|t| (t.name.clone(), t.relation.clone()))
                .collect(),
        }
    }
}

/// Why a pack could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The file is a link that leads outside the database directory.
    #[error(transparent)]
    Link(#[from] crate::links::LinkError),
    /// The file is not a valid pack.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong, from the TOML parser.
        message: String,
    },
}

impl Pack {
    /// Parses a pack from TOML text.
    pub fn parse(text: &str) -> Result<Pack, PackError> {
        toml::from_str(text).map_err(|e| PackError::Invalid {
            path: PACK_FILE.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        })
    }

    /// Reads `strata.toml` from the database directory `dir`; a directory without one has
    /// the empty pack.
    pub fn load(dir: &Path) -> Result<Pack, PackError> {
        let path = dir.join(PACK_FILE);
        crate::links::check_inside(dir, &path)?;
        let text = match crate::regular::read_text(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Pack::default()),
            Err(source) => {
                return Err(PackError::Io {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        toml::from_str(&text).map_err(|e| PackError::Invalid {
            path: path.display().to_string(),
            message: e.to_string().trim_end().to_owned(),
        })
    }

    /// The name a client sees: the pack's, or `strata`.
    pub fn server_name(&self) -> &str {
        if self.name.trim().is_empty() {
            "strata"
        } else {
            self.name.trim()
        }
    }

    /// What the facts are about, or a neutral phrase when the pack does not say.
    pub fn about_or_default(&self) -> &str {
        if self.about.trim().is_empty() {
            "the facts of this database"
        } else {
            self.about.trim()
        }
    }

    /// The pack as `schema data` shows it: name, about, each example (Datalog, then Cypher),
    /// `ask`'s language when it isn't Datalog, and the hint.
    pub fn card(&self) -> String {
        let mut out = format!("pack {}", self.server_name());
        if !self.about.trim().is_empty() {
            out.push_str(&format!("\nabout: {}", self.about.trim()));
        }
        let mut examples = |title: &str, each: Vec<(&str, &str)>| {
            if !each.is_empty() {
                out.push_str(&format!("\n{title}:"));
                for (question, text) in each {
                    out.push_str(&format!("\n  # {}\n  {}", question.trim(), text.trim()));
                }
            }
        };
        examples(
            "examples",
            self.examples
                .iter()
                .map(|e| (e.question.as_str(), e.program.as_str()))
                .collect(),
        );
        examples(
            "cypher examples",
            self.cypher_examples
                .iter()
                .map(|e| (e.question.as_str(), e.query.as_str()))
                .collect(),
        );
        if self.ask_language != crate::ask::Language::Datalog {
            out.push_str(&format!("\nask language: {}", self.ask_language.name()));
        }
        if !self.hint.trim().is_empty() {
            out.push_str(&format!("\nhint: {}", self.hint.trim()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_bundled_pack_parses() {
        let pack = Pack::parse(strata_fixtures::example::PACK).unwrap();
        assert_eq!(pack.name, "deps");
        assert_eq!(
            pack.about,
            "the packages of a Go service and what each imports"
        );
        assert_eq!(pack.examples.len(), 1);
        assert_eq!(pack.examples[0].question, "what does api import?");
        assert_eq!(pack.cypher_examples.len(), 1);
        assert_eq!(pack.ask_language, crate::ask::Language::Datalog);
    }

    #[test]
    fn an_unknown_key_is_refused_with_its_name() {
        let err = Pack::parse("nmae = \"x\"").unwrap_err().to_string();
        assert!(err.contains("nmae"), "{err}");
    }

    #[test]
    fn a_missing_file_is_the_empty_pack() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Pack::load(dir.path()).unwrap(), Pack::default());
        assert_eq!(Pack::default().server_name(), "strata");
    }

    #[test]
    fn the_card_shows_everything() {
        let pack = Pack::parse(strata_fixtures::example::PACK).unwrap();
        assert_eq!(
            pack.card(),
            "pack deps\nabout: the packages of a Go service and what each imports\n\
             examples:\n  # what does api import?\n  imports(\"api\", ?d) => ?d\n\
             cypher examples:\n  # which packages import log?\n  MATCH (p:Package)-[:IMPORTS]->\
             (:Package {name: \"log\"}) RETURN p.name AS importer"
        );
    }

    #[test]
    fn ask_language_and_cypher_examples_parse() {
        let pack = Pack::parse(
            "ask_language = \"cypher\"\n[[cypher_examples]]\nquestion = \"q?\"\n\
             query = 'MATCH (n) RETURN n'\n",
        )
        .unwrap();
        assert_eq!(pack.ask_language, crate::ask::Language::Cypher);
        assert_eq!(pack.cypher_examples[0].query, "MATCH (n) RETURN n");
        assert!(
            pack.card().ends_with("\nask language: cypher"),
            "{}",
            pack.card()
        );
        assert_eq!(Pack::default().ask_language, crate::ask::Language::Datalog);
        let err = Pack::parse("ask_language = \"sql\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown variant `sql`"), "{err}");
        let err = Pack::parse("[[cypher_examples]]\nquestion = \"q\"\nprogram = \"p\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("program"), "{err}");
    }
}
