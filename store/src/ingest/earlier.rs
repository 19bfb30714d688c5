//! What a batch knows of the tuples its earlier flushes wrote into a relation that was empty
//! when the batch began, so that a later flush looks up only the tuples they may hold.
//!
//! A flush adds a relation's tuples sorted, each distinct tuple once, and appends the new ones
//! in that order: in a relation that held no row when the batch began, each flush's rows
//! `first .. end` (a run) ascend. A later flush's tuples come sorted too, so one forward walk
//! over each run, reading its rows a block at a time, tells whether the run holds a tuple: a
//! tuple no run holds is certainly not stored, and is appended without a lookup.
//!
//! This replaced a Bloom filter of the batch's tuples (2^27 bits, two hashes): its random
//! probes, and the lookups its "maybe" cost (28% of the tuples past 48M), took a quarter of a
//! 50M-pair ingest in four flushes. The walk reads each earlier row once per later flush, in
//! order: that ingest went from 35.3 s to 25.4 s, its reading from 16.1 s to 9.6 s (figures
//! in `benches/RESULTS.md`).

use std::ops::Range;

use crate::error::Result;
use crate::relwriter::{LastBlock, RelWriter};

/// The runs of rows a relation's earlier flushes in the batch appended, each walked forward
/// as the flush's tuples ascend. Only runs whose flush saw its appended rows ascend
/// ([`RelWriter::appended_ascend`]) are walked: a relation with any other run is looked up
/// tuple by tuple.
pub(super) struct Earlier {
    runs: Vec<Walk>,
    /// The tuple last asked about: tuples must be asked about in ascending order.
    last: Vec<u32>,
    /// Set when the tuples asked about stopped ascending: every answer is then "maybe".
    unordered: bool,
}

/// One run being walked: the next row to read, where it ends, each column's block last
/// read, and the row at `next`.
struct Walk {
    next: u32,
    end: u32,
    blocks: Vec<LastBlock>,
    current: Vec<u32>,
}

impl Earlier {
    /// A walk over `runs` of a relation of `arity` columns; `None` when they hold no row
    /// (then nothing needs walking).
    pub(super) fn new(runs: &[Range<u32>], arity: usize) -> Option<Earlier> {
        if runs.iter().all(Range::is_empty) {
            return None;
        }
        Some(Earlier {
            runs: runs
                .iter()
                .filter(|r| !r.is_empty())
                .map(|r| Walk {
                    next: r.start,
                    end: r.end,
                    blocks: (0..arity).map(|_| LastBlock::default()).collect(),
                    current: Vec::with_capacity(arity),
                })
                .collect(),
            last: Vec::with_capacity(arity),
            unordered: false,
        })
    }

    /// Whether an earlier flush may have written `tuple` into the relation `w` writes: `false`
    /// is certain. Asked about tuples in ascending order (else every answer is `true`).
    pub(super) fn may_hold(&mut self, w: &RelWriter<'_>, tuple: &[u32]) -> Result<bool> {
        if self.unordered || (!self.last.is_empty() && tuple <= &self.last[..]) {
            self.unordered = true;
            return Ok(true);
        }
        self.last.clear();
        self.last.extend_from_slice(tuple);
        for run in &mut self.runs {
            if run.holds(w, tuple)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl Walk {
    /// Walks forward past the rows below `tuple`; whether the run may hold it.
    fn holds(&mut self, w: &RelWriter<'_>, tuple: &[u32]) -> Result<bool> {
        while self.next < self.end {
            let row = self.next;
            self.current.clear();
            for (c, last) in self.blocks.iter_mut().enumerate() {
                let term = w.earlier_term(last, c as u16, row)?.ok_or_else(|| {
                    crate::error::damaged(format!(
                        "relation {}: row {row}, written by an earlier flush of the batch, \
                         is past the end of its block",
                        w.meta().name
                    ))
                })?;
                self.current.push(term);
            }
            match self.current[..].cmp(tuple) {
                std::cmp::Ordering::Less => self.next += 1,
                std::cmp::Ordering::Equal => return Ok(true),
                std::cmp::Ordering::Greater => return Ok(false),
            }
        }
        Ok(false)
    }
}
