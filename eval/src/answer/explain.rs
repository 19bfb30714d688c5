//! `explain`: where an evaluation's work went. Per relation, how it was computed (read from
//! the store through lookups or whole, computed whole, or by demand for bound arguments);
//! per rule and literal, how often it ran and how many candidates it reached and passed; and,
//! for an empty answer, the first literal of the goal that matched nothing.

use std::fmt::Write as _;
use std::time::Duration;

use crate::exec::engine::{Evaluation, LiteralProfile};
use crate::ir::{Ir, Lit, RelKind};
use crate::rewrite::linear::{Form, Walk};
use crate::rewrite::magic::is_internal;

/// How a relation was computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum How {
    /// A stored relation read through lookups (bitmap intersections), `probes` of them.
    Lookups {
        /// Lookups made.
        probes: u64,
    },
    /// A stored relation read whole into memory (it was small, or probed often).
    Loaded,
    /// Computed whole by its rules.
    Full,
    /// A linear recursion whose moved arguments the goal binds, computed by a walk from the
    /// bound values ([`crate::rewrite::linear`]).
    Linear {
        /// The argument positions bound (0-based): those the recursion moves.
        bound: Vec<usize>,
        /// How the recursion's rules are written.
        form: Form,
        /// Values the walk reached (the bound ones included).
        reached: u64,
    },
    /// A closure computed whole by a search from each of its sources, not in rounds
    /// (evaluated without witnesses).
    Searched {
        /// The sources searched from.
        sources: u64,
    },
    /// Computed by demand: only for the values of its bound arguments that were asked for.
    Demand {
        /// The argument positions bound (0-based).
        bound: Vec<usize>,
        /// How many distinct bindings were asked for.
        asked: u64,
        /// When it is a closure finished by a search from the values asked for (evaluated
        /// without witnesses, once the search paid): the sources searched from.
        searched: Option<u64>,
    },
}

/// One relation's line of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct RelationReport {
    /// Its name.
    pub name: String,
    /// How it was computed.
    pub how: How,
    /// Tuples computed (derived relations; facts read for loaded ones).
    pub tuples: u64,
}

/// One literal's line.
#[derive(Clone, Debug, PartialEq)]
pub struct LiteralReport {
    /// The literal as written.
    pub text: String,
    /// What it did.
    pub profile: LiteralProfile,
}

/// One rule's lines.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleReport {
    /// The rule as written (the goal's head shows as `goal`).
    pub text: String,
    /// Plans run for it (a rule runs once per round and per recursive literal).
    pub runs: u64,
    /// Solutions its body found (before duplicates were removed).
    pub solutions: u64,
    /// Its literals, as written.
    pub literals: Vec<LiteralReport>,
}

/// Where the work went.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The program.
    pub program: String,
    /// Rows the answer has.
    pub rows: u64,
    /// Work units spent.
    pub work: u64,
    /// Semi-naive rounds.
    pub rounds: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Relations, base ones first.
    pub relations: Vec<RelationReport>,
    /// Rules, the goal's last.
    pub rules: Vec<RuleReport>,
    /// For an empty answer: the first literal of the goal that matched nothing.
    pub empty_at: Option<String>,
    /// The tiers whose files the host opened for the call.
    pub tiers: Vec<String>,
}

impl Report {
    /// Builds the report of an evaluation of `ir` (run with profiling).
    pub fn build(
        program: &str,
        ir: &Ir,
        ev: &Evaluation<'_>,
        rows: u64,
        elapsed: Duration,
    ) -> Report {
        let profile = |rule: usize, pos: usize| {
            ev.profile
                .binary_search_by_key(&(rule, pos), |(k, _)| *k)
                .map(|i| ev.profile[i].1)
                .unwrap_or_default()
        };
        let mut relations = Vec::new();
        for (id, decl) in ir.relations.iter().enumerate() {
            let defined = ir.rules.iter().any(|r| r.head == id);
            if is_internal(&decl.name)
                || id == ir.goal
                || (decl.kind == RelKind::Derived && !defined)
            {
                continue;
            }
            let how = match decl.kind {
                RelKind::Base if ev.loaded.get(id).copied().unwrap_or(false) => How::Loaded,
                RelKind::Base => How::Lookups {
                    probes: ev.probes.get(id).copied().unwrap_or(0),
                },
                RelKind::Derived => {
                    let searched = ev.searched.get(id).copied().flatten();
                    match (linear_of(ir, ev, id), demand_of(ir, ev, id), searched) {
                        (Some(linear), _, _) => linear,
                        (None, Some(How::Demand { bound, asked, .. }), _) => How::Demand {
                            bound,
                            asked,
                            searched,
                        },
                        (None, _, Some(sources)) => How::Searched { sources },
                        _ => How::Full,
                    }
                }
            };
            relations.push(RelationReport {
                name: decl.name.clone(),
                how,
                tuples: u64::from(ev.relations[id].len()),
            });
        }
        relations.sort_by_key(|r| !matches!(r.how, How::Lookups { .. } | How::Loaded));
        let mut rules = Vec::new();
        for (ri, rule) in ir.rules.iter().enumerate() {
            if is_internal(&ir.relations[rule.head].name) {
                continue;
            }
            let own = profile(ri, usize::MAX);
            // A join intermediate's literals, with its rule's figures, in its place.
            let mut literals = Vec::new();
            let mut stack: Vec<(usize, usize)> =
                (0..rule.body.len()).rev().map(|p| (ri, p)).collect();
            while let Some((r, pos)) = stack.pop() {
                let l = &ir.rules[r].body[pos];
                match l {
                    Lit::Pos { rel, .. } if ir.is_join(*rel) => {
                        if let Some((inner, x)) = ir.rules_of(*rel).next() {
                            stack.extend((0..x.body.len()).rev().map(|p| (inner, p)));
                        }
                    }
                    Lit::Pos { rel, .. } if is_internal(&ir.relations[*rel].name) => {}
                    _ => literals.push(LiteralReport {
                        text: ir.literal_text(&ir.rules[r], l),
                        profile: profile(r, pos),
                    }),
                }
            }
            rules.push(RuleReport {
                text: ir.rule_text(&ir.written(rule)),
                runs: own.runs,
                solutions: own.passed,
                literals,
            });
        }
        let empty_at = if rows == 0 {
            ir.rules
                .iter()
                .enumerate()
                .filter(|(_, r)| r.head == ir.goal)
                .find_map(|(ri, r)| {
                    r.body.iter().enumerate().find_map(|(pos, l)| {
                        let p = profile(ri, pos);
                        (p.runs > 0 && p.passed == 0).then(|| ir.literal_text(r, l))
                    })
                })
        } else {
            None
        };
        Report {
            program: program.to_owned(),
            rows,
            work: ev.work,
            rounds: ev.rounds,
            elapsed,
            relations,
            rules,
            empty_at,
            tiers: Vec::new(),
        }
    }

    /// The report as text.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "explain: {}", self.program);
        let _ = writeln!(
            out,
            "answer: {} row{}; work {} units in {} round{}, {:.1} ms",
            self.rows,
            if self.rows == 1 { "" } else { "s" },
            self.work,
            self.rounds,
            if self.rounds == 1 { "" } else { "s" },
            self.elapsed.as_secs_f64() * 1000.0
        );
        if let Some(lit) = &self.empty_at {
            let _ = writeln!(out, "empty: {lit} matched nothing");
        }
        if !self.tiers.is_empty() {
            let _ = writeln!(out, "tiers opened: {}", self.tiers.join(", "));
        }
        out.push_str("relations:\n");
        for r in &self.relations {
            let how = match &r.how {
                How::Lookups { probes } => format!("stored, read through {probes} lookups"),
                How::Loaded => format!("stored, read whole ({} facts)", r.tuples),
                How::Full => format!("computed whole, {} tuples", r.tuples),
                How::Linear {
                    bound,
                    form,
                    reached,
                } => format!(
                    "linear recursion bound on argument{} {}, a walk from the bound value{} \
                     ({}), {reached} value{} reached, {} tuples",
                    if bound.len() == 1 { "" } else { "s" },
                    positions(bound),
                    if bound.len() == 1 { "" } else { "s" },
                    match form {
                        Form::Left => "left-linear rules, reverse direction",
                        Form::Right => "right-linear rules, forward direction",
                        Form::Other => "linear rules",
                    },
                    if *reached == 1 { "" } else { "s" },
                    r.tuples
                ),
                How::Searched { sources } => format!(
                    "a closure, searched from each of its {sources} source{}, {} tuples",
                    if *sources == 1 { "" } else { "s" },
                    r.tuples
                ),
                How::Demand {
                    bound,
                    asked,
                    searched,
                } => format!(
                    "computed by demand for argument{} {} ({asked} binding{} asked for){}, {} tuples",
                    if bound.len() == 1 { "" } else { "s" },
                    positions(bound),
                    if *asked == 1 { "" } else { "s" },
                    match searched {
                        Some(1) => ", a closure searched from its 1 source".to_owned(),
                        Some(n) => format!(", a closure searched from each of its {n} sources"),
                        None => String::new(),
                    },
                    r.tuples
                ),
            };
            let _ = writeln!(out, "  {}: {how}", r.name);
        }
        out.push_str("rules (runs, candidates reached, passed):");
        for r in &self.rules {
            let _ = write!(
                out,
                "\n  {}\n    {} run{}, {} solution{}",
                r.text,
                r.runs,
                if r.runs == 1 { "" } else { "s" },
                r.solutions,
                if r.solutions == 1 { "" } else { "s" }
            );
            for l in &r.literals {
                let _ = write!(
                    out,
                    "\n    {}: {} run{}, {} reached, {} passed",
                    l.text,
                    l.profile.runs,
                    if l.profile.runs == 1 { "" } else { "s" },
                    l.profile.reached,
                    l.profile.passed
                );
            }
        }
        out
    }

    /// The report as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "program": self.program,
            "rows": self.rows,
            "work": self.work,
            "rounds": self.rounds,
            "elapsed_ms": self.elapsed.as_secs_f64() * 1000.0,
            "empty_at": self.empty_at,
            "tiers": self.tiers,
            "relations": self.relations.iter().map(|r| {
                let (how, extra) = match &r.how {
                    How::Lookups { probes } => ("lookups", serde_json::json!({ "probes": probes })),
                    How::Loaded => ("loaded", serde_json::json!({})),
                    How::Full => ("full", serde_json::json!({})),
                    How::Linear { bound, form, reached } => ("linear", serde_json::json!({
                        "bound": bound,
                        "form": match form { Form::Left => "left", Form::Right => "right", Form::Other => "other" },
                        "reached": reached,
                    })),
                    How::Searched { sources } => ("searched", serde_json::json!({ "sources": sources })),
                    How::Demand { bound, asked, searched } => ("demand", serde_json::json!({ "bound": bound, "asked": asked, "searched": searched })),
                };
                serde_json::json!({ "name": r.name, "how": how, "tuples": r.tuples, "detail": extra })
            }).collect::<Vec<_>>(),
            "rules": self.rules.iter().map(|r| serde_json::json!({
                "rule": r.text,
                "runs": r.runs,
                "solutions": r.solutions,
                "literals": r.literals.iter().map(|l| serde_json::json!({
                    "literal": l.text,
                    "runs": l.profile.runs,
                    "reached": l.profile.reached,
                    "passed": l.profile.passed,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }
}

/// For a relation computed by demand (its rules are guarded by a magic relation): the bound
/// positions and how many bindings were asked for.
fn demand_of(ir: &Ir, ev: &Evaluation<'_>, id: usize) -> Option<How> {
    ir.rules
        .iter()
        .filter(|r| r.head == id)
        .find_map(|r| match r.body.first() {
            Some(Lit::Pos { rel, .. })
                if is_internal(&ir.relations[*rel].name) && !ir.is_join(*rel) =>
            {
                let name = &ir.relations[*rel].name;
                let pattern = name.rsplit('.').next().unwrap_or("");
                let bound = pattern
                    .chars()
                    .enumerate()
                    .filter(|(_, c)| *c == 'b')
                    .map(|(i, _)| i)
                    .collect();
                Some(How::Demand {
                    bound,
                    asked: u64::from(ev.relations[*rel].len()),
                    searched: None,
                })
            }
            _ => None,
        })
}

/// Argument positions as a user counts them: `2` or `1, 2`.
fn positions(bound: &[usize]) -> String {
    bound
        .iter()
        .map(|b| (b + 1).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// For a relation answered by a linear walk ([`crate::rewrite::linear`]): the bound
/// positions, the rules' form and how many values the walk reached.
fn linear_of(ir: &Ir, ev: &Evaluation<'_>, id: usize) -> Option<How> {
    ir.rules
        .iter()
        .filter(|r| r.head == id)
        .flat_map(|r| r.body.iter())
        .find_map(|l| match l {
            Lit::Pos { rel, .. } => {
                let walk = Walk::of_name(&ir.relations[*rel].name)?;
                if walk.relation != ir.relations[id].name {
                    return None;
                }
                let mut reached = u64::from(ev.relations[*rel].len());
                // A fused walk holds what is reached by one step or more: its seeds are
                // reached too, those not reached again counted beside it. The seeds are
                // the first relation of their name after the walk's (the demand rewrite
                // adds its copies of both, in the same order, after the originals).
                let seed_name = walk.seed_name();
                if walk.plus
                    && let Some(seeds) =
                        (rel + 1..ir.relations.len()).find(|&s| ir.relations[s].name == seed_name)
                {
                    let walked = &ev.relations[*rel];
                    reached += ev.relations[seeds]
                        .iter()
                        .filter(|(_, t)| !walked.contains(t))
                        .count() as u64;
                }
                Some(How::Linear {
                    bound: walk.moved,
                    form: walk.form,
                    reached,
                })
            }
            _ => None,
        })
}
