//! Witness trees: the facts an answer row was derived from, built from the derivations the
//! evaluation recorded (`crate::exec::witness`) for the rows answered only.

pub use crate::data::value::write_value;
pub use crate::exec::witness::Premise;

use crate::data::value::{Term, Value};
use crate::exec::engine::{EvalError, Evaluation};
use crate::exec::witness::Witnesses;
use crate::ir::Ir;

mod linear;

/// One node of a witness tree: a fact, and the facts it was derived from.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Node {
    /// The relation's name.
    pub relation: String,
    /// The fact's values.
    pub values: Vec<Value>,
    /// The premises, in the order the rule writes them (empty for a base fact); for a tree
    /// written flat, every fact it rests on ([`Node::flatten`]).
    pub children: Vec<Node>,
    /// For a tree written flat, the levels it had.
    pub flat: Option<u64>,
}

impl Node {
    /// Renders the tree one node a line, each indented three spaces per level past `indent`.
    pub fn render(&self, indent: usize, out: &mut String) {
        // Iterative: a derivation through a long chain is deep.
        let mut stack: Vec<(&Node, usize)> = vec![(self, indent)];
        while let Some((n, depth)) = stack.pop() {
            n.write_line(depth, out);
            for c in n.children.iter().rev() {
                stack.push((c, depth + 3));
            }
        }
    }

    /// Writes this node's own line, indented `depth` spaces (and, for a tree written flat,
    /// the note beneath it), not its premises'.
    pub fn write_line(&self, depth: usize, out: &mut String) {
        out.push_str(&" ".repeat(depth));
        self.write_fact(out);
        out.push('\n');
        if let Some(levels) = self.flat {
            out.push_str(&" ".repeat(depth + 3));
            out.push_str(&flat_note(levels));
            out.push('\n');
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

/// The line under the fact of a tree written flat, saying so: its premises are not a
/// rule's body but every fact it rests on.
pub fn flat_note(levels: u64) -> String {
    format!(
        "(written flat, {levels} levels deep: each fact below follows those it was derived from)"
    )
}

/// A witness deeper than this many levels is written flat: see [`Node::flatten`].
pub const FLAT_DEPTH: usize = 4;

/// The most facts a row's witness shows unless the row is asked for whole (`witness_row`).
pub const WITNESS_FACTS: u64 = 64;

impl Node {
    /// The tree's levels: 1 for a fact with no premises. Iterative: a chain is deep.
    pub fn depth(&self) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(self, 1)];
        while let Some((n, d)) = stack.pop() {
            deepest = deepest.max(d);
            stack.extend(n.children.iter().map(|c| (c, d + 1)));
        }
        deepest
    }

    /// The facts in the tree, this one included.
    pub fn facts(&self) -> u64 {
        let mut count = 0;
        let mut stack = vec![self];
        while let Some(n) = stack.pop() {
            count += 1;
            stack.extend(n.children.iter());
        }
        count
    }

    /// The tree written flat: this fact, and below it, one level down, every fact it rests
    /// on in derivation order (each after the facts it was derived from), so a chain of n
    /// recursive steps is n lines with no growing indent. Iterative, taking the tree apart
    /// as it goes (dropping a deep tree whole would recurse).
    pub fn flatten(mut self) -> Node {
        let levels = self.depth() as u64;
        let mut flat = Vec::new();
        let mut stack: Vec<(Node, bool)> = std::mem::take(&mut self.children)
            .into_iter()
            .rev()
            .map(|c| (c, false))
            .collect();
        while let Some((mut n, expanded)) = stack.pop() {
            if expanded || n.children.is_empty() {
                flat.push(n);
                continue;
            }
            let children = std::mem::take(&mut n.children);
            stack.push((n, true));
            stack.extend(children.into_iter().rev().map(|c| (c, false)));
        }
        self.children = flat;
        self.flat = Some(levels);
        self
    }

    /// Keeps what `room` allows of this fact's premises, this fact already kept: a rule's
    /// premises all or none (a body cut short would read as another rule's), a flat list's
    /// as many as fit; taking each kept one off `room`. Answers the facts left out.
    /// Recursive: called on trees at most [`FLAT_DEPTH`] levels deep.
    fn keep(&mut self, room: &mut u64) -> u64 {
        let mut left_out = 0;
        if self.flat.is_some() {
            let kept = self
                .children
                .len()
                .min(usize::try_from(*room).unwrap_or(usize::MAX));
            left_out += self.children[kept..].iter().map(Node::facts).sum::<u64>();
            self.children.truncate(kept);
            *room -= kept as u64;
            return left_out;
        }
        let body = self.children.len() as u64;
        if body > *room {
            left_out += self.children.iter().map(Node::facts).sum::<u64>();
            self.children.clear();
            return left_out;
        }
        *room -= body;
        for c in &mut self.children {
            left_out += c.keep(room);
        }
        left_out
    }
}

/// A row's witness as answers show it: each tree deeper than [`FLAT_DEPTH`] levels
/// [flattened](Node::flatten), then the first `cap` facts of all the trees (`None`: every
/// fact); with the number of facts left out.
pub fn bound(trees: Vec<Node>, cap: Option<u64>) -> (Vec<Node>, u64) {
    let trees = trees.into_iter().map(|t| {
        if t.depth() > FLAT_DEPTH {
            t.flatten()
        } else {
            t
        }
    });
    let Some(mut room) = cap else {
        return (trees.collect(), 0);
    };
    let mut kept = Vec::new();
    let mut left_out = 0;
    for mut t in trees {
        if room == 0 {
            left_out += t.facts();
            continue;
        }
        room -= 1;
        left_out += t.keep(&mut room);
        kept.push(t);
    }
    (kept, left_out)
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

/// The most facts of witnesses built for one page: past it a fact's premises are not built
/// (and counted as unbuilt), so a derivation whose tree is huge (a shared sub-derivation
/// repeated at every level doubles it) cannot eat the machine.
pub const WITNESS_BUILD: u64 = 200_000;

/// What is left of a page's [`WITNESS_BUILD`], and the premises left unbuilt.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Room {
    /// Facts that may still be built.
    pub(crate) left: u64,
    /// Premises not built for want of room (each one fact or more).
    pub(crate) unbuilt: u64,
}

impl Room {
    /// Room for `facts` facts.
    pub(crate) fn new(facts: u64) -> Room {
        Room {
            left: facts,
            unbuilt: 0,
        }
    }

    /// A fact's premises to build: all of them if there is room, else none (counted as
    /// unbuilt), so a fact shows its rule's whole body or nothing.
    fn take(&mut self, premises: Vec<Fact>) -> Vec<Fact> {
        let n = premises.len() as u64;
        if n <= self.left {
            self.left -= n;
            premises
        } else {
            self.unbuilt += n;
            Vec::new()
        }
    }
}

/// The trees of the premises of tuple `id` of `rel`.
pub(crate) fn premises_of(
    ir: &Ir,
    ev: &Evaluation<'_>,
    w: &Witnesses,
    rel: usize,
    id: u32,
    room: &mut Room,
) -> Result<Vec<Node>, EvalError> {
    let facts = facts_of(ir, ev, w, rel, id);
    visible(ir, ev, w, facts)
        .into_iter()
        .map(|p| node(ir, ev, w, p, room).map(linear::reshape))
        .collect()
}

/// The premises a witness shows: all but the demand rewrite's magic facts, and in place of
/// a join intermediate's tuple, the premises it was derived from (so a rule shows the
/// premises of its literals as written). A linear walk's facts are kept: [`premises_of`]
/// rebuilds them in the recursion's own rules ([`linear::reshape`]).
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

/// The tree of one premise, as far as `room` goes: the premise itself always, its own
/// premises while room is left (those past it counted in `room.unbuilt`). Iterative: a
/// derivation through a long chain is deep.
pub(crate) fn node(
    ir: &Ir,
    ev: &Evaluation<'_>,
    w: &Witnesses,
    root: Fact,
    room: &mut Room,
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
    let children = room.take(children);
    let mut stack: Vec<(Node, Vec<Fact>)> = vec![(
        Node {
            relation: name,
            values,
            children: Vec::new(),
            flat: None,
        },
        children.into_iter().rev().collect(),
    )];
    while let Some((_, pending)) = stack.last_mut() {
        if let Some(p) = pending.pop() {
            let (name, values, children) = fact(p)?;
            let children = room.take(children);
            stack.push((
                Node {
                    relation: name,
                    values,
                    children: Vec::new(),
                    flat: None,
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
    Ok(Node::default())
}
