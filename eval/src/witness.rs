//! Witnesses: for each derived tuple, the first derivation found (a rule and its premises),
//! recorded compactly during evaluation; trees are built only for the rows answered.

use crate::ir::Ir;
use crate::value::{Term, Value};

/// A premise of a derivation: the fact a positive body literal matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Premise {
    /// Nothing recorded (a placeholder).
    None,
    /// Tuple `id` of in-memory relation `rel`: a derived relation, or a base relation the
    /// evaluation read whole into memory (whose tuples then have ids too).
    Tuple {
        /// The relation.
        rel: u32,
        /// The tuple's id.
        id: u32,
    },
    /// A base fact of `rel` read through the source (not held in memory), whose terms are
    /// copied into the base-terms arena at `start`.
    Base {
        /// The relation.
        rel: u32,
        /// Where its terms start.
        start: u32,
    },
}

/// Every derivation of one evaluation, packed: per derived tuple 8 bytes (its rule and
/// where its premises start) and 4 bytes a premise. A premise's relation is the one its
/// rule's positive literal names, so only the tuple's id is kept; a base fact read through
/// the source (not held in memory) keeps its terms in an arena, and its premise word holds
/// the offset with the top bit set.
#[derive(Debug, Default)]
pub struct Witnesses {
    /// Per relation, per tuple id: `rule << 32 | start`, or [`NONE`] when none was recorded.
    derivs: Vec<Vec<u64>>,
    /// Per rule, the relation of each positive body literal (its premises' relations).
    rules: Vec<Vec<u32>>,
    premises: Vec<u32>,
    base_terms: Vec<Term>,
}

/// No derivation recorded (a derivation word) or no premise (a premise word).
const NONE: u64 = u64::MAX;
/// A premise word's flag: the premise is a base fact whose terms are in the arena.
const ARENA: u32 = 1 << 31;
/// A premise word for a missing premise.
const MISSING: u32 = u32::MAX;

impl Witnesses {
    /// Room for the relations and rules of `ir`.
    pub fn new(ir: &Ir) -> Witnesses {
        Witnesses {
            derivs: vec![Vec::new(); ir.relations.len()],
            rules: ir
                .rules
                .iter()
                .map(|r| {
                    r.body
                        .iter()
                        .filter_map(|l| match l {
                            crate::ir::Lit::Pos { rel, .. } => Some(*rel as u32),
                            _ => None,
                        })
                        .collect()
                })
                .collect(),
            ..Witnesses::default()
        }
    }

    /// Records the derivation of tuple `id` of `rel` by `rule` (its premises in the order
    /// of the rule's positive literals); base premises' terms are copied from `base_terms`
    /// (the deriving task's arena).
    pub fn record(
        &mut self,
        rel: usize,
        id: u32,
        rule: u32,
        premises: &[Premise],
        base_terms: &[Term],
        ir: &Ir,
    ) {
        let start = self.premises.len() as u64;
        for p in premises {
            let word = match *p {
                Premise::Tuple { id, .. } if id < ARENA => id,
                Premise::Base { rel, start } => {
                    let arity = ir.relations[rel as usize].arity;
                    let at = self.base_terms.len();
                    let s = start as usize;
                    match base_terms.get(s..s + arity) {
                        Some(terms) if at < (ARENA - 1) as usize => {
                            self.base_terms.extend_from_slice(terms);
                            ARENA | at as u32
                        }
                        _ => MISSING,
                    }
                }
                _ => MISSING,
            };
            self.premises.push(word);
        }
        let d = &mut self.derivs[rel];
        if d.len() <= id as usize {
            d.resize(id as usize + 1, NONE);
        }
        d[id as usize] = u64::from(rule) << 32 | start;
    }

    /// The derivation of tuple `id` of `rel`, if one was recorded: its rule, and its
    /// premises in the order of the rule's positive literals.
    pub fn derivation(&self, rel: usize, id: u32) -> Option<(u32, Vec<Premise>)> {
        let word = *self.derivs.get(rel)?.get(id as usize)?;
        if word == NONE {
            return None;
        }
        let (rule, start) = ((word >> 32) as u32, word as u32 as usize);
        let rels = self.rules.get(rule as usize)?;
        let words = self.premises.get(start..start + rels.len())?;
        let premises = rels
            .iter()
            .zip(words)
            .map(|(&rel, &w)| match w {
                MISSING => Premise::None,
                w if w & ARENA != 0 => Premise::Base {
                    rel,
                    start: w & !ARENA,
                },
                id => Premise::Tuple { rel, id },
            })
            .collect();
        Some((rule, premises))
    }

    /// The terms of a base premise.
    pub fn base_terms(&self, start: u32, arity: usize) -> &[Term] {
        self.base_terms
            .get(start as usize..start as usize + arity)
            .unwrap_or(&[])
    }

    /// Bytes held, roughly.
    pub fn bytes(&self) -> usize {
        self.derivs.iter().map(|d| d.len() * 8).sum::<usize>()
            + self.premises.len() * 4
            + self.base_terms.len() * 4
    }
}

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

/// Writes a value as a program would: text quoted (with `\"` and `\\`), numbers bare,
/// `absent`.
pub fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::Text(s) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        other => out.push_str(&other.to_string()),
    }
}
