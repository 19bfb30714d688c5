//! The front end: program text to a syntax tree, or a diagnostic.
//!
//! Takes the text of a query program or a module; gives the [`ast`] (rules, a goal, its
//! columns) or the first [`Diagnostic`] (a message, a span, a fix) that [`diagnostic`]
//! renders against the text with its line and caret. Nothing here knows a relation: names
//! are resolved by [`crate::link`]. [`suggest`] ranks the "did you mean" candidates that
//! later stages (and the application's tools) offer, measuring names with [`distance`].

pub mod ast;
pub(crate) mod diagnostic;
pub(crate) mod distance;
pub(crate) mod parse;
pub(crate) mod suggest;
