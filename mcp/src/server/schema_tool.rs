//! The `schema` and `look` tools: the schema card, a module's members, a relation's schema
//! or the pack, and for a stored relation its size and a few sample facts; with the
//! "did you mean" a name that is nearly right earns.

use strata_eval::witness::Node;
use strata_eval::{FactSource, RelationKind, Vocabulary};
use strata_store::Snapshot;
use strata_store::layout::DEFAULT_TIER;

use super::{Base, Call, Server, ToolOutput};
use crate::args::{LookArgs, SchemaArgs};

/// How many sample facts `look` shows of a stored relation.
pub const LOOK_SAMPLE: usize = 5;

impl Server {
    /// `schema`: the card, one module's members, one relation's schema, or the pack.
    pub fn schema(&self, a: &SchemaArgs) -> ToolOutput {
        self.schema_in(&Call::plain("schema"), a)
    }

    pub(super) fn schema_in(&self, call: &Call, a: &SchemaArgs) -> ToolOutput {
        let vocab = match self.call_vocabulary(call, "schema") {
            Ok(v) => v,
            Err(e) => return ToolOutput::error(e),
        };
        let path = a.path.trim();
        if path.is_empty() {
            return ToolOutput::text(strata_eval::schema::card(&vocab));
        }
        if let Some(text) = strata_eval::schema::describe(&vocab, path) {
            return ToolOutput::text(text);
        }
        if path == "data" {
            return ToolOutput::text(self.inner.pack.card());
        }
        if path == "cypher" {
            return self.graph_schema(&vocab);
        }
        ToolOutput::error(format!(
            "schema: nothing is named \"{path}\"{}; call schema with no path for every \
             relation and module",
            did_you_mean(&vocab, path)
        ))
    }

    /// `look`: a relation's or module's schema, and for a stored relation its size and a
    /// few sample facts.
    pub fn look(&self, a: &LookArgs) -> ToolOutput {
        self.look_in(&Call::plain("look"), a)
    }

    pub(super) fn look_in(&self, call: &Call, a: &LookArgs) -> ToolOutput {
        let hosted = self.hosted(call);
        let (snap, vocab) = if hosted {
            match self.call_vocabulary(call, "look") {
                Ok(v) => (None, v),
                Err(e) => return ToolOutput::error(e),
            }
        } else {
            match self.base_snapshot("look") {
                Ok((s, v)) => (Some(s), v),
                Err(e) => return ToolOutput::error(e),
            }
        };
        let target = a.target.trim();
        let Some(mut text) = strata_eval::schema::describe(&vocab, target) else {
            return ToolOutput::error(format!(
                "look: nothing is named \"{target}\"{}; call schema with no path for every \
                 relation and module",
                did_you_mean(&vocab, target)
            ));
        };
        let is_base = vocab.module_schema(target).is_none()
            && vocab
                .relation(target)
                .is_some_and(|r| r.kind == RelationKind::Base);
        if !is_base {
            return ToolOutput::text(text);
        }
        let base = match snap {
            Some(snap) => match self.look_snapshot(snap, target) {
                Ok(s) => Base::Store(Box::new(s)),
                Err(e) => return ToolOutput::error(e),
            },
            None => match self.call_base(call, "look", &[target.to_owned()]) {
                Ok((b, _)) => b,
                Err(e) => return ToolOutput::error(e),
            },
        };
        match sample_facts(base.source(), target, LOOK_SAMPLE) {
            Ok(facts) if facts.is_empty() => text.push_str("\nno facts"),
            Ok(facts) => {
                text.push_str("\nsample facts:");
                for f in facts {
                    text.push_str("\n  ");
                    text.push_str(&f);
                }
            }
            Err(e) => return ToolOutput::error(format!("look: {e}")),
        }
        ToolOutput::text(text)
    }

    /// `snap`, reopened with the tier holding `target` if it is not the default one.
    fn look_snapshot(&self, snap: Snapshot, target: &str) -> Result<Snapshot, String> {
        let tiers = self
            .inner
            .store
            .tiers_for(&[target.to_owned()])
            .map_err(|e| format!("look: {e}"))?;
        // Read the sample at the same batch as the schema: reopen with the tier if needed.
        if tiers.iter().all(|t| t == DEFAULT_TIER) {
            Ok(snap)
        } else {
            let names: Vec<&str> = tiers.iter().map(String::as_str).collect();
            self.inner
                .store
                .snapshot_with_tiers(&names)
                .map_err(|e| format!("look: {e}"))
        }
    }
}

/// `; did you mean "deps.depends_on"?` for a name whose last part, or whose case, matches
/// one relation or module; empty otherwise.
pub(super) fn did_you_mean(vocab: &Vocabulary, name: &str) -> String {
    let lower = name.to_lowercase();
    let suffix = format!(".{lower}");
    let mut names: Vec<String> = vocab.relations().into_iter().map(|r| r.name).collect();
    names.extend(vocab.modules().into_iter().map(str::to_owned));
    let found: Vec<&String> = names
        .iter()
        .filter(|n| {
            let n = n.to_lowercase();
            n == lower || n.ends_with(&suffix)
        })
        .collect();
    match found.as_slice() {
        [one] => format!("; did you mean \"{one}\"?"),
        _ => String::new(),
    }
}

/// Up to `n` facts of `relation`, written as a program would write them.
fn sample_facts(snap: &dyn FactSource, relation: &str, n: usize) -> Result<Vec<String>, String> {
    let mut rows = Vec::new();
    snap.scan(relation, &mut |row| {
        rows.push(row.to_vec());
        if rows.len() >= n {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    })
    .map_err(|e| e.to_string())?;
    rows.into_iter()
        .map(|row| {
            let values = row
                .into_iter()
                .map(|t| snap.value(t))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            let node = Node {
                relation: relation.to_owned(),
                values,
                children: Vec::new(),
            };
            let mut out = String::new();
            node.write_fact(&mut out);
            Ok(out)
        })
        .collect()
}
