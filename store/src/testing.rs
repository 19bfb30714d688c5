//! (Hidden: not an API.) The byte formats' few entry points the integration tests use to
//! write damage into a database's tables: a block and a postings chunk as a new database
//! stores them, and the chunk a term's posting sits in. The formats themselves
//! (`column`, `index`, `intern`) are private to the crate.

/// Column blocks as stored.
pub mod column {
    pub use crate::column::{from_stored, stored};
}

/// Postings chunks as stored.
pub mod index {
    pub use crate::index::{chunk_of, stored_chunk};
}
