//! Rewrites of the lowered program that keep its answer and change its cost.
//!
//! Takes an [`crate::ir::Ir`]; gives another with the same goal tuples, or none when the
//! rewrite does not apply. [`magic`] evaluates by demand when the goal binds an argument of
//! a derived relation; [`split`] cuts long recursive bodies into binary join intermediates.
//! Relations a rewrite adds are internal (`@` names) and never shown.

pub mod magic;
pub mod split;
