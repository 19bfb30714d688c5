//! `schema` and `look`: the schema card, a module's members, a relation's schema, the
//! Cypher graph or the pack ([`SchemaResponse`]), and for a stored relation its size and a
//! few sample facts ([`LookResponse`]); with the "did you mean" a name that is nearly right
//! earns.

use serde::Serialize;
use strata_eval::Node;
use strata_eval::{FactSource, RelationKind};

use crate::app::App;
use crate::base::{Base, Call};
use crate::error::CallError;
use crate::render::Render;
use crate::suggest::did_you_mean;

/// How many sample facts `look` shows of a stored relation.
pub const LOOK_SAMPLE: usize = 5;

/// What `schema` describes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchemaRequest {
    /// A module (`deps`) or relation (`deps.depends_on`), `data` for the pack, `cypher`
    /// for the graph; empty for the card of every relation and module.
    pub path: String,
}

/// What `schema` answers: the card, or the description of what the path names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SchemaResponse {
    /// The path described (empty for the card).
    pub path: String,
    /// The description.
    pub text: String,
}

impl Render for SchemaResponse {
    fn text(&self) -> String {
        self.text.clone()
    }
}

/// What `look` describes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LookRequest {
    /// A relation (`pkg`, `deps.depends_on`) or module (`deps`).
    pub target: String,
}

/// What `look` answers: the schema, and for a stored relation a few of its facts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LookResponse {
    /// The relation or module.
    pub target: String,
    /// Its schema, as `schema` describes it.
    pub schema: String,
    /// For a stored relation, up to [`LOOK_SAMPLE`] of its facts, written as a program
    /// writes them; `None` for a module or a derived relation.
    pub sample: Option<Vec<String>>,
}

impl Render for LookResponse {
    fn text(&self) -> String {
        let mut text = self.schema.clone();
        match &self.sample {
            None => {}
            Some(facts) if facts.is_empty() => text.push_str("\nno facts"),
            Some(facts) => {
                text.push_str("\nsample facts:");
                for f in facts {
                    text.push_str("\n  ");
                    text.push_str(f);
                }
            }
        }
        text
    }
}

impl App {
    /// `schema`: the card, one module's members, one relation's schema, the pack (`data`)
    /// or the Cypher graph (`cypher`).
    pub fn schema(&self, call: &Call, r: &SchemaRequest) -> Result<SchemaResponse, CallError> {
        let vocab = self.vocabulary(call, "schema")?;
        let path = r.path.trim();
        let answer = |text: String| SchemaResponse {
            path: path.to_owned(),
            text,
        };
        if path.is_empty() {
            return Ok(answer(strata_eval::card(&vocab)));
        }
        if let Some(text) = strata_eval::describe(&vocab, path) {
            return Ok(answer(text));
        }
        if path == "data" {
            return Ok(answer(self.pack().card()));
        }
        if path == "cypher" {
            return Ok(answer(self.graph(&vocab)?.describe()));
        }
        Err(CallError::Unknown {
            tool: "schema",
            name: path.to_owned(),
            suggestion: did_you_mean(&vocab, path),
        })
    }

    /// `look`: a relation's or module's schema, and for a stored relation a few sample
    /// facts, read at the same batch as the schema.
    pub fn look(&self, call: &Call, r: &LookRequest) -> Result<LookResponse, CallError> {
        let (snap, vocab) = if self.hosted(call) {
            (None, self.vocabulary(call, "look")?)
        } else {
            let (s, v) = self.base_snapshot("look")?;
            (Some(s), v)
        };
        let target = r.target.trim();
        let Some(schema) = strata_eval::describe(&vocab, target) else {
            return Err(CallError::Unknown {
                tool: "look",
                name: target.to_owned(),
                suggestion: did_you_mean(&vocab, target),
            });
        };
        let is_base = vocab.module_schema(target).is_none()
            && vocab
                .relation(target)
                .is_some_and(|r| r.kind == RelationKind::Base);
        let mut response = LookResponse {
            target: target.to_owned(),
            schema,
            sample: None,
        };
        if !is_base {
            return Ok(response);
        }
        let relations = [target.to_owned()];
        let base = match snap {
            Some(snap) => {
                let tiers = self.tiers_for("look", &relations)?;
                // Read the sample at the same batch as the schema: reopen with the tier if
                // it is not the default one.
                if tiers.len() == 1 {
                    Base::Store(Box::new(snap))
                } else {
                    Base::Store(Box::new(self.snapshot_with("look", &tiers)?))
                }
            }
            None => self.base(call, "look", &relations)?.0,
        };
        response.sample = Some(sample_facts(base.source(), target, LOOK_SAMPLE).map_err(
            |source| CallError::Source {
                tool: "look",
                source,
            },
        )?);
        Ok(response)
    }
}

/// Up to `n` facts of `relation`, written as a program would write them.
fn sample_facts(
    snap: &dyn FactSource,
    relation: &str,
    n: usize,
) -> Result<Vec<String>, strata_eval::SourceError> {
    let mut rows = Vec::new();
    snap.scan(relation, &mut |row| {
        rows.push(row.to_vec());
        if rows.len() >= n {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    })?;
    rows.into_iter()
        .map(|row| {
            let values = row
                .into_iter()
                .map(|t| snap.value(t))
                .collect::<Result<Vec<_>, _>>()?;
            let node = Node {
                relation: relation.to_owned(),
                values,
                children: Vec::new(),
                flat: None,
            };
            let mut out = String::new();
            node.write_fact(&mut out);
            Ok(out)
        })
        .collect()
}
