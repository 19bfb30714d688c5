//! Reading a relation whole, in parts: each part a range of its blocks, read column by
//! column in key order and unpacked a block at a time, so that a reader can split a large
//! relation's read across threads and no row goes through a visitor.

use strata_eval::Term;

use super::{Snapshot, TierRead};
use crate::blocks::{Scan, stored_keys_of};
use crate::catalog::RelationMeta;
use crate::column;
use crate::error::{ReadError, Result, damaged};
use crate::guard::faults;
use crate::layout::BLOCK_ROWS;

impl Snapshot {
    /// The live facts of part `part` of `parts` of a relation, row-major: the blocks
    /// `blocks * part / parts .. blocks * (part + 1) / parts`. The parts in order are its
    /// scan.
    pub(crate) fn read_part_rel(
        &self,
        meta: &RelationMeta,
        part: usize,
        parts: usize,
    ) -> Result<Vec<Term>, ReadError> {
        let tier = self.tier(&meta.tier)?;
        let dead = self.dead(&tier, meta.id)?;
        let blocks = u64::from(meta.next_row.div_ceil(BLOCK_ROWS));
        let parts = parts.max(1) as u64;
        let part = (part as u64).min(parts);
        // At most `blocks`, so each fits the u32 a block number is.
        let lo = u32::try_from(blocks * part / parts).unwrap_or(u32::MAX);
        let hi = u32::try_from(blocks * (part + 1) / parts).unwrap_or(u32::MAX);
        if lo >= hi {
            return Ok(Vec::new());
        }
        let arity = meta.columns.len();
        let first = lo * BLOCK_ROWS;
        // Past the last row, the last block's end may not fit a u32.
        let last = hi.saturating_mul(BLOCK_ROWS).min(meta.next_row);
        let gone = dead.range(first..last).count();
        let mut out = Vec::with_capacity((last - first) as usize * arity - gone * arity);
        faults(|| read_blocks(&tier, meta, lo..hi, &dead, &mut out)).map_err(|f| tier.err(f))?;
        Ok(out)
    }
}

/// Appends the live rows of `blocks` to `out`, row-major.
fn read_blocks(
    tier: &TierRead,
    meta: &RelationMeta,
    blocks: std::ops::Range<u32>,
    dead: &roaring::RoaringBitmap,
    out: &mut Vec<Term>,
) -> Result<(), crate::error::Fault> {
    let arity = meta.columns.len();
    if arity == 0 {
        return Ok(());
    }
    let mut ranges = (0..arity)
        .map(|c| {
            let keys = stored_keys_of(tier.seal, (meta.id, c as u16), blocks.clone());
            Ok(Scan::new(tier.blocks.range(keys)?, tier.seal))
        })
        .collect::<Result<Vec<_>, crate::error::Fault>>()?;
    let mut columns: Vec<Vec<u32>> = vec![Vec::with_capacity(BLOCK_ROWS as usize); arity];
    for b in blocks {
        let rows = (meta.next_row - b * BLOCK_ROWS).min(BLOCK_ROWS) as usize;
        for (c, (range, values)) in ranges.iter_mut().zip(&mut columns).enumerate() {
            let missing = || {
                damaged(format!(
                    "relation {}: block {b} of column {c} is missing",
                    meta.name
                ))
            };
            let (key, fetched) = range.next_block(&meta.name)?.ok_or_else(missing)?;
            if key != (meta.id, c as u16, b) {
                return Err(missing());
            }
            values.clear();
            fetched
                .payload(tier.seal, &meta.name)
                .and_then(column::view)
                .and_then(|block| block.append_to(values))?;
            if values.len() != rows {
                return Err(damaged(format!(
                    "relation {}: block {b} of column {c} holds {} rows, not {rows}",
                    meta.name,
                    values.len()
                )));
            }
        }
        let start = b * BLOCK_ROWS;
        let live = |i: usize| !dead.contains(start + i as u32);
        match &columns[..] {
            [a, b] if dead.is_empty() => {
                out.extend(a.iter().zip(b).flat_map(|(&x, &y)| [Term(x), Term(y)]));
            }
            [a] if dead.is_empty() => out.extend(a.iter().map(|&x| Term(x))),
            _ => {
                for i in (0..rows).filter(|&i| live(i)) {
                    out.extend(columns.iter().map(|col| Term(col[i])));
                }
            }
        }
    }
    Ok(())
}
