//! Witnesses: for each derived tuple, the first derivation found (a rule and its premises),
//! recorded compactly during evaluation; trees are built only for the rows answered.

use crate::ir::Ir;
use crate::value::{Term, Value};

/// A premise of a derivation: the fact a positive body literal matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Premise {
    /// Nothing recorded (a placeholder).
    None,
    /// Tuple `id` of derived relation `rel`.
    Derived {
        /// The relation.
        rel: u32,
        /// The tuple's id.
        id: u32,
    },
    /// A base fact of `rel`, whose terms start at `start` in the base-terms arena.
    Base {
        /// The relation.
        rel: u32,
        /// Where its terms start.
        start: u32,
    },
}

/// A derivation: the rule, and its premises (a range of the premises arena).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deriv {
    /// The rule's index in [`Ir::rules`].
    pub rule: u32,
    /// The first premise.
    pub start: u32,
    /// How many premises.
    pub len: u32,
}

/// Every derivation of one evaluation.
#[derive(Debug, Default)]
pub struct Witnesses {
    derivs: Vec<Vec<Option<Deriv>>>,
    premises: Vec<Premise>,
    base_terms: Vec<Term>,
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

impl Witnesses {
    /// Room for `relations` relations.
    pub fn new(relations: usize) -> Witnesses {
        Witnesses {
            derivs: vec![Vec::new(); relations],
            ..Witnesses::default()
        }
    }

    /// Records the derivation of tuple `id` of `rel`; base premises' terms are copied from
    /// `base_terms` (the deriving task's arena).
    pub fn record(
        &mut self,
        rel: usize,
        id: u32,
        rule: u32,
        premises: &[Premise],
        base_terms: &[Term],
        ir: &Ir,
    ) {
        let start = self.premises.len() as u32;
        for p in premises {
            match *p {
                Premise::Base { rel, start } => {
                    let arity = ir.relations[rel as usize].arity;
                    let at = self.base_terms.len() as u32;
                    let s = start as usize;
                    self.base_terms.extend_from_slice(&base_terms[s..s + arity]);
                    self.premises.push(Premise::Base { rel, start: at });
                }
                other => self.premises.push(other),
            }
        }
        let d = &mut self.derivs[rel];
        if d.len() <= id as usize {
            d.resize(id as usize + 1, None);
        }
        d[id as usize] = Some(Deriv {
            rule,
            start,
            len: premises.len() as u32,
        });
    }

    /// The derivation of tuple `id` of `rel`, if one was recorded.
    pub fn derivation(&self, rel: usize, id: u32) -> Option<(u32, &[Premise])> {
        let d = (*self.derivs.get(rel)?.get(id as usize)?)?;
        Some((
            d.rule,
            &self.premises[d.start as usize..(d.start + d.len) as usize],
        ))
    }

    /// The terms of a base premise.
    pub fn base_terms(&self, start: u32, arity: usize) -> &[Term] {
        &self.base_terms[start as usize..start as usize + arity]
    }

    /// Bytes held, roughly.
    pub fn bytes(&self) -> usize {
        self.derivs.iter().map(|d| d.len() * 16).sum::<usize>()
            + self.premises.len() * std::mem::size_of::<Premise>()
            + self.base_terms.len() * 4
    }
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
