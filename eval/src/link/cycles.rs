//! Stratification: no derived relation may depend on itself through `not` or an aggregate.
//!
//! A rule's head depends on every derived relation its body reads; the dependency is strict
//! when it is read under `not`, inside an aggregate literal's `{ }`, or by a rule with an
//! aggregate in its head. A strict dependency on a relation that depends back on the head
//! (through any path) is refused, at the literal that reads it, naming the relations on the
//! cycle in order.

use std::collections::{HashMap, VecDeque};

use crate::front::ast::Span;
use crate::front::diagnostic::Diagnostic;
use crate::link::linked::{LHead, LLit, LRule};
use crate::link::resolve::Target;

/// A dependency: the head reads `on` at `span`.
struct Edge {
    rule: usize,
    head: Target,
    on: Target,
    strict: bool,
    negation: bool,
    span: Span,
}

fn derived(t: Target) -> bool {
    matches!(t, Target::Member(_) | Target::Local(_))
}

fn edges(rule: usize, head: Target, body: &[LLit], strict: bool, out: &mut Vec<Edge>) {
    for lit in body {
        match lit {
            LLit::Pos { rel, span, .. } if derived(*rel) => out.push(Edge {
                rule,
                head,
                on: *rel,
                strict,
                negation: false,
                span: *span,
            }),
            LLit::Neg { rel, span, .. } if derived(*rel) => out.push(Edge {
                rule,
                head,
                on: *rel,
                strict: true,
                negation: true,
                span: *span,
            }),
            LLit::Agg { body, .. } => edges(rule, head, body, true, out),
            _ => {}
        }
    }
}

/// Checks that `rules` (each with a tag saying where it is written) can be stratified. On a
/// cycle, returns the tag of the rule holding the offending literal, and the error. `name`
/// gives a relation's name.
pub(crate) fn check_cycles<T: Copy>(
    rules: &[(&LRule, T)],
    name: &dyn Fn(Target) -> String,
) -> Result<(), (T, Diagnostic)> {
    let mut all = Vec::new();
    for (i, (r, _)) in rules.iter().enumerate() {
        let strict = r.args.iter().any(|a| matches!(a, LHead::Agg { .. }));
        edges(i, r.head, &r.body, strict, &mut all);
    }
    let mut succ: HashMap<Target, Vec<Target>> = HashMap::new();
    for e in &all {
        let next = succ.entry(e.head).or_default();
        if !next.contains(&e.on) {
            next.push(e.on);
        }
    }
    for e in all.iter().filter(|e| e.strict) {
        let Some(path) = path(&succ, e.on, e.head) else {
            continue;
        };
        let mut cycle = vec![name(e.head)];
        cycle.extend(path.into_iter().map(name));
        let (h, b) = (name(e.head), name(e.on));
        let (message, fix) = if e.negation {
            (
                format!(
                    "a cycle through \"not\" can't be computed: {}",
                    cycle.join(" -> ")
                ),
                if e.head == e.on {
                    format!(
                        "a relation can't depend on its own negation: define \"{h}\" without \
                         \"not {h}(...)\""
                    )
                } else {
                    format!(
                        "\"not\" reads a relation computed before this one: define \"{b}\" \
                         without reading \"{h}\""
                    )
                },
            )
        } else {
            (
                format!(
                    "a cycle through an aggregate can't be computed: {}",
                    cycle.join(" -> ")
                ),
                if e.head == e.on {
                    "a relation can't aggregate over itself: aggregate over another relation"
                        .to_owned()
                } else {
                    format!(
                        "an aggregate reads a relation computed before this one: define \"{b}\" \
                         without reading \"{h}\""
                    )
                },
            )
        };
        let tag = rules[e.rule].1;
        return Err((tag, Diagnostic::new(message, e.span).with_fix(fix)));
    }
    Ok(())
}

/// The shortest path `from` ... `to` (both included), if `to` is reachable.
fn path(succ: &HashMap<Target, Vec<Target>>, from: Target, to: Target) -> Option<Vec<Target>> {
    let mut prev: HashMap<Target, Target> = HashMap::new();
    let mut queue = VecDeque::from([from]);
    prev.insert(from, from);
    while let Some(x) = queue.pop_front() {
        if x == to {
            let mut out = vec![to];
            let mut at = to;
            while at != from {
                at = *prev.get(&at)?;
                out.push(at);
            }
            out.reverse();
            return Some(out);
        }
        for &y in succ.get(&x).into_iter().flatten() {
            if let std::collections::hash_map::Entry::Vacant(e) = prev.entry(y) {
                e.insert(x);
                queue.push_back(y);
            }
        }
    }
    None
}
