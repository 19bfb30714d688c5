//! The property graph a Cypher query reads, derived from the store's relations.
//!
//! - A **node label** is a nodes-dump relation `label(id)` (spelled as the dump spelled it,
//!   `Package`), or a relation a [`Mapping`] names: its id column is the node's identity and
//!   each of its other columns a property (`Package` over `pkg(name, license)`).
//! - A **relationship type** is an edges-dump relation `kind(src, dst)` (`IMPORTS`), or one a
//!   mapping names.
//! - A **property** of any node is an attrs-dump relation `key(node, value)`; a mapped label's
//!   columns are properties of its nodes. `name` (when no relation gives it) and `id(n)` are
//!   the node's identity.

use std::collections::BTreeSet;

use crate::data::source::Origin;
use crate::link::vocab::Vocabulary;

/// A node label and the relation holding its nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeLabel {
    /// The label as queries write it (`Package`).
    pub name: String,
    /// The relation (`pkg`, `package`).
    pub relation: String,
    /// The relation's column names.
    pub columns: Vec<String>,
    /// The column holding the node's identity.
    pub id: usize,
}

/// A relationship type and its relation `kind(src, dst)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelType {
    /// The type as queries write it (`IMPORTS`).
    pub name: String,
    /// The relation (`imports`).
    pub relation: String,
}

/// A property every node may have: an attribute relation `key(node, value)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attr {
    /// The property as queries write it (`lang`).
    pub key: String,
    /// The relation (`lang`).
    pub relation: String,
}

/// What a pack declares on top of what the dumps give: labels over any relation and types
/// over any two-column relation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mapping {
    /// `(label, relation, id column)`: the id column's name, or the first column when `None`.
    pub labels: Vec<(String, String, Option<String>)>,
    /// `(type, relation)`.
    pub types: Vec<(String, String)>,
}

/// Why a pack's Cypher mapping does not fit the vocabulary ([`Graph::derive`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MappingError {
    /// A label or relationship type maps to a relation the vocabulary lacks.
    #[error(
        "cypher: {what} {name} maps to relation \"{relation}\", which the database doesn't have"
    )]
    UnknownRelation {
        /// `label` or `relationship type`.
        what: &'static str,
        /// The label's or type's name.
        name: String,
        /// The relation it names.
        relation: String,
    },
    /// A label maps to a relation of no columns.
    #[error("cypher: label {label} maps to relation \"{relation}\", which has no columns")]
    NoColumns {
        /// The label.
        label: String,
        /// The relation it names.
        relation: String,
    },
    /// A label's id column is not a column of its relation.
    #[error(
        "cypher: label {label}'s id column \"{column}\" is not a column of {relation}({columns})"
    )]
    UnknownIdColumn {
        /// The label.
        label: String,
        /// The id column it names.
        column: String,
        /// The relation it maps to.
        relation: String,
        /// That relation's columns, joined by `, `.
        columns: String,
    },
    /// A relationship type maps to a relation of other than two columns.
    #[error(
        "cypher: relationship type {name} maps to \"{relation}\", which has {columns} columns, not 2"
    )]
    NotTwoColumns {
        /// The type's name.
        name: String,
        /// The relation it names.
        relation: String,
        /// How many columns that relation has.
        columns: usize,
    },
}

/// The graph: labels, relationship types and attribute properties.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Graph {
    /// Node labels, by name.
    pub labels: Vec<NodeLabel>,
    /// Relationship types, by name.
    pub types: Vec<RelType>,
    /// Properties every node may have, by key.
    pub attrs: Vec<Attr>,
}

impl Graph {
    /// The graph of `vocab`'s base relations, with `mapping`'s labels and types added (a
    /// mapped label or type replaces a derived one of the same name). A mapping naming a
    /// relation the vocabulary lacks, or a column its relation lacks, is an error saying so.
    pub fn derive(vocab: &Vocabulary, mapping: &Mapping) -> Result<Graph, MappingError> {
        let mut g = Graph::default();
        for r in vocab.base_relations() {
            match (r.origin, r.arity()) {
                (Origin::Nodes, 1) => g.labels.push(NodeLabel {
                    name: r.spelling().to_owned(),
                    relation: r.name.clone(),
                    columns: r.columns.clone(),
                    id: 0,
                }),
                (Origin::Edges, 2) => g.types.push(RelType {
                    name: r.spelling().to_owned(),
                    relation: r.name.clone(),
                }),
                (Origin::Attrs, 2) => g.attrs.push(Attr {
                    key: r.spelling().to_owned(),
                    relation: r.name.clone(),
                }),
                _ => {}
            }
        }
        for (label, relation, id) in &mapping.labels {
            let Some(schema) = vocab.relation(relation) else {
                return Err(MappingError::UnknownRelation {
                    what: "label",
                    name: label.clone(),
                    relation: relation.clone(),
                });
            };
            if schema.columns.is_empty() {
                return Err(MappingError::NoColumns {
                    label: label.clone(),
                    relation: relation.clone(),
                });
            }
            let id = match id {
                None => 0,
                Some(c) => schema.columns.iter().position(|x| x == c).ok_or_else(|| {
                    MappingError::UnknownIdColumn {
                        label: label.clone(),
                        column: c.clone(),
                        relation: relation.clone(),
                        columns: schema.columns.join(", "),
                    }
                })?,
            };
            g.labels.retain(|l| l.name != *label);
            g.labels.push(NodeLabel {
                name: label.clone(),
                relation: relation.clone(),
                columns: schema.columns.clone(),
                id,
            });
        }
        for (name, relation) in &mapping.types {
            match vocab.relation(relation) {
                Some(s) if s.columns.len() == 2 => {}
                Some(s) => {
                    return Err(MappingError::NotTwoColumns {
                        name: name.clone(),
                        relation: relation.clone(),
                        columns: s.columns.len(),
                    });
                }
                None => {
                    return Err(MappingError::UnknownRelation {
                        what: "relationship type",
                        name: name.clone(),
                        relation: relation.clone(),
                    });
                }
            }
            g.types.retain(|t| t.name != *name);
            g.types.push(RelType {
                name: name.clone(),
                relation: relation.clone(),
            });
        }
        g.labels.sort_by(|a, b| a.name.cmp(&b.name));
        g.types.sort_by(|a, b| a.name.cmp(&b.name));
        g.attrs.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(g)
    }

    /// The label named `name`.
    pub fn label(&self, name: &str) -> Option<&NodeLabel> {
        self.labels.iter().find(|l| l.name == name)
    }

    /// The relationship type named `name`.
    pub fn rel_type(&self, name: &str) -> Option<&RelType> {
        self.types.iter().find(|t| t.name == name)
    }

    /// The attribute property named `key`.
    pub fn attr(&self, key: &str) -> Option<&Attr> {
        self.attrs.iter().find(|a| a.key == key)
    }

    /// The properties of a node of `label`: its relation's columns (for a one-column label,
    /// `name`: the node's identity), and every attribute.
    pub fn properties(&self, label: &NodeLabel) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = label.columns.iter().cloned().collect();
        if label.columns.len() == 1 {
            out.clear();
            out.insert("name".to_owned());
        }
        out.extend(self.attrs.iter().map(|a| a.key.clone()));
        out
    }

    /// Whether the graph has anything to ask about.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.types.is_empty()
    }

    /// One sentence naming the labels (with their properties) and types, as the instructions
    /// and the tool's description show it: `Node labels: Package {license, name}.
    /// Relationship types: IMPORTS.`
    pub fn summary(&self) -> String {
        let labels: Vec<String> = self
            .labels
            .iter()
            .map(|l| {
                let props: Vec<String> = self.properties(l).into_iter().collect();
                format!("{} {{{}}}", l.name, props.join(", "))
            })
            .collect();
        let types: Vec<&str> = self.types.iter().map(|t| t.name.as_str()).collect();
        let none = |v: &[String]| {
            if v.is_empty() {
                "none".to_owned()
            } else {
                v.join(", ")
            }
        };
        format!(
            "Node labels: {}. Relationship types: {}.",
            none(&labels),
            none(&types.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
        )
    }

    /// The graph as the schema tool shows it at path `cypher`: each label with the relation
    /// it reads and its properties, each type with its relation, each attribute property.
    pub fn describe(&self) -> String {
        let mut out = String::from("cypher graph\nnode labels:");
        if self.labels.is_empty() {
            out.push_str(" none");
        }
        for l in &self.labels {
            let props: Vec<String> = self.properties(l).into_iter().collect();
            out.push_str(&format!(
                "\n  {} {{{}}} from {}({}), identity {}",
                l.name,
                props.join(", "),
                l.relation,
                l.columns.join(", "),
                l.columns.get(l.id).map_or("id", String::as_str)
            ));
        }
        out.push_str("\nrelationship types:");
        if self.types.is_empty() {
            out.push_str(" none");
        }
        for t in &self.types {
            out.push_str(&format!("\n  {} from {}(src, dst)", t.name, t.relation));
        }
        if !self.attrs.is_empty() {
            out.push_str("\nproperties of every node:");
            for a in &self.attrs {
                out.push_str(&format!("\n  {} from {}(node, value)", a.key, a.relation));
            }
        }
        out
    }
}
