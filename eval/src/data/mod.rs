//! The data vocabulary every stage and every crate speaks: the [`value::Term`] a fact's
//! field is stored as, the [`value::Value`] it stands for, the [`source::FactSource`] trait
//! through which facts are read, the evaluation's dictionary ([`dict`]), an in-memory source
//! ([`memory`]) and the radix sort of packed keys ([`radix`]).

pub(crate) mod dict;
pub(crate) mod memory;
pub mod radix;
pub(crate) mod source;
pub(crate) mod value;
