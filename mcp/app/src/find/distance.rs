//! The per-search state of fuzzy matching: the edit distance (the engine's
//! [`EditDistance`], with its buffers reused across one search) and the markers of its
//! per-candidate cache.

use strata_eval::EditDistance;

/// A fuzzy candidate whose distance this search has not computed yet.
pub(super) const FUZZY_UNKNOWN: u8 = u8::MAX;

/// A fuzzy candidate too far from the query.
pub(super) const FUZZY_NONE: u8 = u8::MAX - 1;

/// Buffers reused across one search.
#[derive(Default)]
pub(super) struct Scratch {
    /// The fuzzy candidate of the text being classified.
    pub(super) cand: u32,
    /// Per fuzzy candidate: its edit distance, [`FUZZY_NONE`] or [`FUZZY_UNKNOWN`].
    pub(super) fuzzy: Vec<u8>,
    /// The edit distance and its buffers.
    pub(super) edit: EditDistance,
}
