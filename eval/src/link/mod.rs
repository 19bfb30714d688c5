//! Linking: a syntax tree, checked against a [`vocab::Vocabulary`], lowered to the
//! [`crate::ir::Ir`] the later stages run.
//!
//! Takes a parsed program (or the modules of a vocabulary) and gives a [`compile::Compiled`]
//! query: its IR, the base relations it reads and the [`crate::ir::Shape`] of its answer.
//! In order: names are resolved ([`resolve`]) into linked rules ([`linked`]), each body is
//! checked safe ([`safety`]), the rules are stratified ([`strata`]), and those the goal
//! reaches are lowered ([`lower`]). Every user error is one
//! [`crate::front::Diagnostic`] at the place it refers to.

pub(crate) mod compile;
pub(crate) mod linked;
pub(crate) mod lower;
pub(crate) mod resolve;
pub(crate) mod safety;
pub(crate) mod schema;
pub(crate) mod strata;
pub(crate) mod vocab;
