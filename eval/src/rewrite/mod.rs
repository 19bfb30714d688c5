//! Rewrites of the lowered program that keep its answer and change its cost.
//!
//! Takes an [`crate::ir::Ir`]; gives another with the same goal tuples, or none when the
//! rewrite does not apply. [`equate`] turns the goal's `?x = constant` into a bound
//! argument, first, so the demand rewrites see it; [`linear`] answers a goal's call of a linear recursion bound on
//! the arguments the recursion moves by a walk from the bound values (before magic sets,
//! which may then rewrite its result); [`magic`] evaluates by demand when the goal binds an
//! argument of a derived relation; [`split`] cuts long recursive bodies into binary join
//! intermediates. Relations a rewrite adds are internal (`@` names) and never shown (a
//! linear walk's facts are rebuilt in the recursion's own rules, `witness::linear::reshape`).
//!
//! # Demand and join intermediates
//!
//! When the goal binds an argument of a derived relation whose whole dependency closure is
//! positive, the magic-sets rewrite (sideways information passing in the planner's greedy
//! order). Relations read under `not` or in an aggregate are kept as written, under their own
//! ids, so the rewrite never breaks stratification. A relation some call reads with every
//! argument free is computed whole once, and its bound calls read that computation rather than
//! demand variants of their own (a first pass finds them); so is a relation on a cycle with
//! such a relation, since everything the cycle asks of it feeds the whole computation
//! (points-to's `heap`, called from `pt` with its object bound). Magic relations are named
//! `@magic...` and witnesses leave them out.
//!
//! a rule of three positive literals or more (no magic guard), whose first two share a
//! variable, with a literal on a cycle with its head both among the first two and among the
//! rest, reads the join of its first two literals as a relation of its own, `@join.<head>.<n>`,
//! holding the variables the rest and the head use and sharing the rule's variable slots
//! (applied again to rules of four or more). Semi-naive evaluation maintains it like any
//! relation, so a new tuple of a later literal probes the intermediate instead of re-joining
//! the first two (points-to's `load(?a, ?b), pt(?b, ?p), heap(?p, ?o)`: a new `heap` tuple no
//! longer walks every `pt(?b, ?p)` to probe `load`). `Ir::written` restores a rule as written:
//! witnesses show an intermediate's premises in its place, `explain` and budget errors report
//! the rule as written with the intermediate's literals and figures.

pub mod equate;
pub mod linear;
pub mod magic;
pub mod split;
