//! Witness trees: the facts an answer row was derived from, built from the derivations the
//! evaluation recorded (`crate::exec::witness`) for the rows answered only.

pub use crate::data::value::write_value;
pub use crate::exec::witness::Premise;

use crate::data::value::{Term, Value, value_json};
use crate::exec::engine::{EvalError, Evaluation};
use crate::exec::witness::Witnesses;
use crate::ir::Ir;

/// One node of a witness tree: a fact, and the facts it was derived from.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Node {
    /// The relation's name.
    pub relation: String,
    /// The fact's values.
    pub values: Vec<Value>,
    /// The premises, in the order the rule writes them (empty for a base fact).
    pub children: Vec<Node>,
}

impl Node {
    /// Renders the tree one node a line, each indented three spaces per level past `indent`.
    pub fn render(&self, indent: usize, out: &mut String) {
        // Iterative: a derivation through a long chain is deep.
        let mut stack: Vec<(&Node, usize)> = vec![(self, indent)];
        while let Some((n, depth)) = stack.pop() {
            out.push_str(&" ".repeat(depth));
            n.write_fact(out);
            out.push('\n');
            for c in n.children.iter().rev() {
                stack.push((c, depth + 3));
            }
        }
    }

    /// Writes `relation("a", 1, absent)`.
    pub fn write_fact(&self, out: &mut String) {
        out.push_str(&self.relation);
        out.push('(');
        for (i, v) in self.values.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            write_value(v, out);
        }
        out.push(')');
    }
}

impl Node {
    /// The tree as JSON: `{"fact": "rel(\"a\", 1)", "relation", "values", "children"}`.
    pub fn json(&self) -> serde_json::Value {
        let mut fact = String::new();
        self.write_fact(&mut fact);
        serde_json::json!({
            "fact": fact,
            "relation": self.relation,
            "values": self.values.iter().map(value_json).collect::<Vec<_>>(),
            "children": self.children.iter().map(Node::json).collect::<Vec<_>>(),
        })
    }
}

/// A premise as a tree shows it: one recorded during evaluation, or a base fact rebuilt
/// from the rest of its derivation ([`crate::exec::witness::recorded`]), with its terms.
#[derive(Clone, Debug)]
pub(crate) enum Fact {
    /// A recorded premise.
    Recorded(Premise),
    /// A fact of `rel` holding `terms`.
    Terms { rel: u32, terms: Vec<Term> },
}

/// The premises of tuple `id` of `rel`, in the order its rule writes them (none when no
/// derivation was recorded).
fn facts_of(ir: &Ir, ev: &Evaluation<'_>, w: &Witnesses, rel: usize, id: u32) -> Vec<Fact> {
    let Some(d) = w.derivation(rel, id, &ev.relations, &ev.constants) else {
        return Vec::new();
    };
    d.premises
        .iter()
        .map(|&p| match p {
            Premise::Implied { rel, start } => {
                let arity = ir.relations.get(rel as usize).map_or(0, |r| r.arity);
                Fact::Terms {
                    rel,
                    terms: d.implied_terms(start, arity).to_vec(),
                }
            }
            p => Fact::Recorded(p),
        })
        .collect()
}

/// The trees of the premises of tuple `id` of `rel`.
pub(crate) fn premises_of(
    ir: &Ir,
    ev: &Evaluation<'_>,
    w: &Witnesses,
    rel: usize,
    id: u32,
) -> Result<Vec<Node>, EvalError> {
    let facts = facts_of(ir, ev, w, rel, id);
    visible(ir, ev, w, facts)
        .into_iter()
        .map(|p| node(ir, ev, w, p).map(crate::rewrite::linear::reshape))
        .collect()
}

/// The premises a witness shows: all but the demand rewrite's magic facts, and in place of
/// a join intermediate's tuple, the premises it was derived from (so a rule shows the
/// premises of its literals as written). A linear walk's facts are kept: [`premises_of`]
/// rebuilds them in the recursion's own rules ([`crate::rewrite::linear::reshape`]).
fn visible(ir: &Ir, ev: &Evaluation<'_>, w: &Witnesses, premises: Vec<Fact>) -> Vec<Fact> {
    let mut out = Vec::new();
    let mut stack: Vec<Fact> = premises.into_iter().rev().collect();
    while let Some(p) = stack.pop() {
        let rel = match p {
            Fact::Recorded(Premise::Tuple { rel, id }) if ir.is_join(rel as usize) => {
                stack.extend(facts_of(ir, ev, w, rel as usize, id).into_iter().rev());
                continue;
            }
            Fact::Recorded(Premise::Tuple { rel, .. } | Premise::Base { rel, .. })
            | Fact::Terms { rel, .. } => rel,
            Fact::Recorded(Premise::Implied { .. } | Premise::None) => continue,
        };
        let name = &ir.relations[rel as usize].name;
        // A linear walk's facts stay until `reshape` rewrites them in the recursion's rules.
        if !crate::rewrite::magic::is_internal(name)
            || name.starts_with(crate::rewrite::linear::PREFIX)
        {
            out.push(p);
        }
    }
    out
}

/// The tree of one premise. Iterative: a derivation through a long chain is deep.
pub(crate) fn node(
    ir: &Ir,
    ev: &Evaluation<'_>,
    w: &Witnesses,
    root: Fact,
) -> Result<Node, EvalError> {
    let value = |t: Term| ev.dict.value(t).map_err(EvalError::from);
    let name = |rel: u32| ir.relations[rel as usize].name.clone();
    let fact = |p: Fact| -> Result<(String, Vec<Value>, Vec<Fact>), EvalError> {
        Ok(match p {
            Fact::Recorded(Premise::Tuple { rel, id }) => {
                let values = ev.relations[rel as usize]
                    .tuple(id)
                    .iter()
                    .map(|&t| value(t))
                    .collect::<Result<_, _>>()?;
                let children = facts_of(ir, ev, w, rel as usize, id);
                (name(rel), values, visible(ir, ev, w, children))
            }
            Fact::Recorded(Premise::Base { rel, start }) => {
                let values = w
                    .base_terms(start, ir.relations[rel as usize].arity)
                    .iter()
                    .map(|&t| value(t))
                    .collect::<Result<_, _>>()?;
                (name(rel), values, Vec::new())
            }
            Fact::Terms { rel, terms } => {
                let values = terms.iter().map(|&t| value(t)).collect::<Result<_, _>>()?;
                (name(rel), values, Vec::new())
            }
            Fact::Recorded(Premise::Implied { .. } | Premise::None) => {
                (String::new(), Vec::new(), Vec::new())
            }
        })
    };
    // Build bottom-up with an explicit stack of (premise, children still to build).
    let (name, values, children) = fact(root)?;
    let mut stack: Vec<(Node, Vec<Fact>)> = vec![(
        Node {
            relation: name,
            values,
            children: Vec::new(),
        },
        children.into_iter().rev().collect(),
    )];
    while let Some((_, pending)) = stack.last_mut() {
        if let Some(p) = pending.pop() {
            let (name, values, children) = fact(p)?;
            stack.push((
                Node {
                    relation: name,
                    values,
                    children: Vec::new(),
                },
                children.into_iter().rev().collect(),
            ));
        } else {
            let (done, _) = stack.pop().unwrap_or_default();
            match stack.last_mut() {
                Some((parent, _)) => parent.children.push(done),
                None => return Ok(done),
            }
        }
    }
    Ok(Node {
        relation: String::new(),
        values: Vec::new(),
        children: Vec::new(),
    })
}
