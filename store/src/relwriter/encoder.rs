//! Encoding a relation's changes: what a [`RelWriter`] gathered ([`Encode`]) turned into
//! the bytes to write ([`Encoded`]), on a thread of its own ([`Encoder`]) while the batch
//! gathers the next relation.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, Sender};

use redb::{ReadableTable, Table, WriteTransaction};
use rustc_hash::FxHashMap;

use super::appended::{AddedChunks, ColumnPostings, NewOwners, Streamed, column_postings};
use super::{Block, Cached, Change, ChunkCache, Key3, RunKey, Runs};
use crate::ascending::insert_ascending;
use crate::blocks::Sealed;
use crate::catalog::RelationMeta;
use crate::error::{Result, damaged};
use crate::layout;
use crate::seal::Seal;
use crate::{column, index};

/// A relation's changes in a batch: gathered by its [`RelWriter`], then encoded (on the
/// encoder's thread) by [`Encode::run`].
pub(crate) struct Encode {
    /// The relation, its counts kept true as rows are added and removed.
    pub(crate) meta: RelationMeta,
    pub(super) arity: usize,
    /// Blocks read or written this batch, by (column, block), with a dirty flag.
    pub(super) block_cache: FxHashMap<(u16, u32), Block>,
    /// Per column, the block rows are appended to (out of `block_cache` while rows are
    /// added; put back by [`RelWriter::prepare`]).
    pub(super) tails: Vec<Option<(u32, Block)>>,
    /// Blocks of the second and later columns that appended rows filled, written in key
    /// order by [`RelWriter::prepare`]: sealed already (a block that held rows before the
    /// batch), or `None`, to encode then from [`Encode::appended`]. The first column's go
    /// in as they fill, at the end of the relation's keys; a column's blocks inserted among
    /// another's would each split a leaf and keep a page of their own.
    pub(super) filled: Vec<(Key3, Option<Sealed>)>,
    /// Postings chunks read or changed this batch, by (column, chunk).
    pub(super) chunks: FxHashMap<(u16, u32), ChunkCache>,
    pub(super) owner_cache: FxHashMap<u32, Cached>,
    /// The owners of rows appended to a relation that held none before this batch.
    pub(super) new_owners: NewOwners,
    pub(super) dead: Option<Cached>,
    /// The first row appended this batch (the relation's `next_row` as it began).
    pub(super) first_appended: u32,
    /// Rows appended this batch, per column: the term of each, in row order.
    pub(super) appended: Vec<Vec<u32>>,
    /// The columns whose appended terms the writer still holds, to encode their blocks
    /// ([`RelWriter::hand_over`]), and where they come from when it is done with them;
    /// such a column's list in `appended` is empty.
    ///
    /// [`RelWriter::hand_over`]: super::RelWriter::hand_over
    pub(super) coming: Vec<(u16, Receiver<Vec<u32>>)>,
    /// The first column's postings, encoded as its rows are appended, when they are.
    pub(super) streamed: Option<Streamed>,
    /// Whether the relation had any row (live or dead) before this batch.
    pub(super) had_rows: bool,
    /// Whether the file's values carry checksums.
    pub(super) seal: Seal,
    /// The batch's runs.
    pub(super) runs: Runs,
}

/// A relation's changes encoded, to write into its transaction: values to insert (`None`:
/// to remove) by key.
pub(crate) struct Encoded {
    meta: RelationMeta,
    blocks: Vec<Sealed>,
    /// Whole chunks, merged with what is stored and the runs (their runs are dropped).
    postings: Vec<Change<Key3>>,
    /// The new rows of chunks not read: each chunk's sealed bytes and how many postings it
    /// holds, ascending by key, to merge with what is stored and the runs, or to write as a
    /// run.
    added: Vec<AddedChunks>,
    had_rows: bool,
    seal: Seal,
    runs: Runs,
    owners: Vec<Change<(u32, u32)>>,
    dead: Option<Vec<u8>>,
    units: Vec<(u32, bool)>,
}

/// What [`Encode::run`] gathers, before the catalog entry is final.
#[derive(Default)]
struct Parts {
    blocks: Vec<Sealed>,
    postings: Vec<Change<Key3>>,
    added: Vec<AddedChunks>,
    owners: Vec<Change<(u32, u32)>>,
    dead: Option<Vec<u8>>,
    units: Vec<(u32, bool)>,
}

impl Encode {
    /// Encodes a changed postings chunk (or removes it when empty), keeping `distinct` true.
    fn write_chunk(
        &mut self,
        out: &mut Parts,
        col: u16,
        chunk: u32,
        mut c: ChunkCache,
    ) -> Result<()> {
        let rel = self.meta.id;
        c.postings.retain(|_, b| !b.is_empty());
        recount(&mut self.meta, col, c.postings.len(), c.before)?;
        if c.postings.is_empty() {
            // (An empty chunk read with runs drops them.)
            if c.before > 0 || self.runs.earlier > 0 {
                out.postings.push(((rel, col, chunk), None));
            }
        } else {
            let bytes =
                index::encode_chunk(self.seal.codec, c.postings.iter_mut().map(|(l, b)| (*l, b)));
            let bytes = index::seal_chunk(self.seal, (rel, col, chunk), bytes);
            out.postings.push(((rel, col, chunk), Some(bytes)));
        }
        Ok(())
    }

    /// Encodes the owners of appended rows gathered as runs ([`NewOwners`]): each unit's rows
    /// at once, into its cached bitmap when it has one.
    fn new_owners(&mut self, out: &mut Parts) -> Result<()> {
        let rel = self.meta.id;
        let (seal, cache) = (self.seal, &mut self.owner_cache);
        std::mem::take(&mut self.new_owners).each_unit(|unit, runs| {
            if let Some(c) = cache.get_mut(&unit) {
                for &(first, n) in runs {
                    c.bitmap.insert_range(first..first + n);
                }
                c.dirty = true;
                return Ok(());
            }
            let bytes = index::seal_owners(
                seal,
                (rel, unit),
                index::encode_sorted_runs(seal.codec, runs),
            );
            out.owners.push(((rel, unit), Some(bytes)));
            out.units.push((unit, true));
            Ok(())
        })
    }

    /// The postings of the appended rows, column by column ([`column_postings`]), or for a
    /// column without postings how many distinct terms they hold: on threads of their own
    /// for a flush that appended enough rows to pay for them.
    fn appended_postings(&mut self) -> Result<Vec<Appended>> {
        let (seal, rel, first) = (self.seal, self.meta.id, self.first_appended);
        let mut coming = std::mem::take(&mut self.coming);
        // The first column's postings, when they were encoded as its rows came.
        let streamed = match self.streamed.take() {
            Some(s) => s.finish(self.appended.first().map_or(0, Vec::len)),
            None => None,
        }
        .transpose()?;
        let columns: Vec<(u16, Terms)> = std::mem::take(&mut self.appended)
            .into_iter()
            .enumerate()
            .filter(|(c, _)| *c > 0 || streamed.is_none())
            .map(|(c, terms)| {
                let c = c as u16;
                match coming.iter().position(|(k, _)| *k == c) {
                    Some(i) => (c, Terms::Coming(coming.swap_remove(i).1)),
                    None => (c, Terms::Here(terms)),
                }
            })
            .collect();
        let rows = (self.meta.next_row - first) as usize;
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let threads = cores.min(columns.len());
        let chunks = &self.chunks;
        let meta = &self.meta;
        // A column without postings counts its appended rows' distinct terms instead.
        let encode = |work: Vec<(u16, Terms)>| -> Result<Vec<(u16, Appended)>> {
            work.into_iter()
                .map(|(col, terms)| {
                    let terms = terms.take()?;
                    if !meta.indexed(usize::from(col)) {
                        return Ok((col, Appended::Distinct(distinct_terms(&terms))));
                    }
                    let parts = if terms.len() < SPLIT_PAIRS { 1 } else { cores };
                    let postings = column_postings(seal, (rel, col), terms, first, chunks, parts)?;
                    Ok((col, Appended::Postings(postings)))
                })
                .collect()
        };
        let mut done = if threads <= 1 || rows < PARALLEL_APPENDED {
            encode(columns)?
        } else {
            // Column `c` to thread `c % threads`.
            let mut work: Vec<Vec<(u16, Terms)>> = (0..threads).map(|_| Vec::new()).collect();
            for (c, job) in columns.into_iter().enumerate() {
                work[c % threads].push(job);
            }
            let per_thread = super::on_threads(work, encode);
            let mut done = Vec::new();
            for d in per_thread {
                done.extend(d?);
            }
            done
        };
        if let Some(p) = streamed {
            done.push((0, Appended::Postings(p)));
        }
        // Back in column order.
        done.sort_unstable_by_key(|(col, _)| *col);
        Ok(done.into_iter().map(|(_, p)| p).collect())
    }

    /// Encodes everything this batch changed, with the updated catalog entry and each unit
    /// whose rows changed and whether it still owns any row of the relation.
    pub(crate) fn run(mut self) -> Result<Encoded> {
        let rel = self.meta.id;
        let mut out = Parts::default();
        for ((col, block), (terms, dirty)) in std::mem::take(&mut self.block_cache) {
            if dirty {
                let key = (rel, col, block);
                let payload = column::encode(self.seal.codec, &terms)?;
                out.blocks.push(Sealed::new(self.seal, key, payload));
            }
        }
        // In key order: redb fills each leaf before the next.
        out.blocks.sort_unstable_by_key(Sealed::key);
        // Owners: each unit's set written from its runs of appended rows.
        self.new_owners(&mut out)?;
        // Appended rows: each chunk's new rows, alone or merged into its cached postings.
        for (col, appended) in self.appended_postings()?.into_iter().enumerate() {
            let c16 = col as u16;
            let postings = match appended {
                Appended::Postings(p) => p,
                Appended::Distinct(n) => {
                    // An upper bound: the new rows' terms may be stored already.
                    let d = &mut self.meta.distinct[col];
                    *d = (*d + n).min(self.meta.rows);
                    continue;
                }
            };
            out.added.extend(postings.added);
            for (chunk, new) in postings.merge {
                // Merge, encode and let go of the chunk at once.
                let mut c = self.chunks.remove(&(c16, chunk)).unwrap_or_default();
                c.dirty = true;
                for (low, rows) in new {
                    c.postings.entry(low).or_default().extend(rows);
                }
                self.write_chunk(&mut out, c16, chunk, c)?;
            }
        }
        for ((col, chunk), c) in std::mem::take(&mut self.chunks) {
            if c.dirty {
                self.write_chunk(&mut out, col, chunk, c)?;
            }
        }
        for (unit, mut c) in std::mem::take(&mut self.owner_cache) {
            if !c.dirty {
                continue;
            }
            out.units.push((unit, !c.bitmap.is_empty()));
            if c.bitmap.is_empty() {
                if c.stored {
                    out.owners.push(((rel, unit), None));
                }
            } else {
                let bytes = index::seal_owners(
                    self.seal,
                    (rel, unit),
                    index::encode(self.seal.codec, &mut c.bitmap),
                );
                out.owners.push(((rel, unit), Some(bytes)));
            }
        }
        if let Some(mut d) = self.dead.take()
            && d.dirty
        {
            out.dead = Some(index::seal_dead(
                self.seal,
                rel,
                index::encode(self.seal.codec, &mut d.bitmap),
            ));
        }
        out.units.sort_unstable();
        // In key order, redb's inserts walk its tree once.
        out.owners.sort_unstable_by_key(|(key, _)| *key);
        Ok(Encoded {
            meta: self.meta,
            blocks: out.blocks,
            postings: out.postings,
            added: out.added,
            had_rows: self.had_rows,
            seal: self.seal,
            runs: self.runs,
            owners: out.owners,
            dead: out.dead,
            units: out.units,
        })
    }
}

impl Encoded {
    /// Writes the encoded changes into `txn`; answers the updated catalog entry and each unit
    /// whose rows changed and whether it still owns any row of the relation.
    pub(crate) fn write(
        mut self,
        txn: &WriteTransaction,
    ) -> Result<(RelationMeta, Vec<(u32, bool)>)> {
        let rel = self.meta.id;
        let mut blocks = txn.open_table(layout::BLOCKS)?;
        for sealed in &self.blocks {
            sealed.write(self.seal, &mut blocks)?;
        }
        let mut postings = txn.open_table(layout::POSTINGS)?;
        let mut runs = if self.runs.earlier > 0 || self.runs.spill {
            Some(txn.open_table(layout::POSTINGS_RUNS)?)
        } else {
            None
        };
        for (key, bytes) in &self.postings {
            match bytes {
                Some(b) => postings.insert(*key, b.as_slice())?,
                None => postings.remove(*key)?,
            };
            // The chunk was read with the runs: they are in it now.
            if let Some(runs) = runs.as_mut() {
                for f in 0..self.runs.earlier {
                    runs.remove((f, key.0, key.1, key.2))?;
                }
            }
        }
        self.write_added(&mut postings, runs.as_mut())?;
        let mut owners = txn.open_table(layout::OWNERS)?;
        for (key, bytes) in &self.owners {
            if bytes.is_none() {
                owners.remove(*key)?;
            }
        }
        let written = self
            .owners
            .iter()
            .filter_map(|(k, b)| Some((*k, b.as_deref()?)));
        insert_ascending(&mut owners, written)?;
        if let Some(bytes) = &self.dead {
            txn.open_table(layout::DEAD)?
                .insert(rel, bytes.as_slice())?;
        }
        Ok((self.meta, self.units))
    }
}

impl Encoded {
    /// Writes the new postings of chunks the flush did not read: as this flush's run when
    /// more flushes follow; else merged with what `postings` holds and the earlier runs (a
    /// chunk nothing else holds is written as it is), each chunk with a run included, keeping
    /// `distinct` true; then drops the relation's runs.
    fn write_added(
        &mut self,
        postings: &mut Table<'_, Key3, &'static [u8]>,
        runs: Option<&mut Table<'_, RunKey, &'static [u8]>>,
    ) -> Result<()> {
        let added = std::mem::take(&mut self.added);
        // Ascending by key: the columns' chunks, column by column.
        let each_added = || added.iter().flat_map(AddedChunks::iter);
        if self.runs.spill {
            let runs = runs.ok_or_else(|| damaged("a batch's runs table vanished"))?;
            let f = self.runs.earlier;
            for (key, bytes, _) in each_added() {
                runs.insert((f, key.0, key.1, key.2), bytes)?;
            }
            return Ok(());
        }
        let rel = self.meta.id;
        let earlier = self.runs.earlier;
        // Every chunk the runs or this flush add to, ascending.
        let mut keys: Vec<(u16, u32)> = each_added().map(|(k, _, _)| (k.1, k.2)).collect();
        if let Some(runs) = runs.as_deref() {
            for f in 0..earlier {
                for entry in runs.range((f, rel, 0, 0)..=(f, rel, u16::MAX, u32::MAX))? {
                    let k = entry?.0.value();
                    keys.push((k.2, k.3));
                }
            }
        }
        keys.sort_unstable();
        keys.dedup();
        let mut new_chunks = each_added().peekable();
        // The chunks to write, ascending: written at once when every chunk is read (a new
        // chunk nothing else holds as it was encoded, a merged one anew).
        let mut writes: Vec<(Key3, Cow<'_, [u8]>)> = Vec::with_capacity(keys.len());
        // Reused for each chunk: its postings' rows, and its encoding's scratch.
        let mut rows = ChunkRows::default();
        let mut data = Vec::new();
        for (col, chunk) in keys {
            let key = (rel, col, chunk);
            let new = new_chunks.next_if(|(k, _, _)| *k == key);
            rows.clear();
            if self.had_rows
                && let Some(v) = postings.get(key)?
            {
                rows.add_chunk(self.seal, key, v.value(), &self.meta.name)?;
            }
            let before = rows.terms();
            let mut merged = before > 0;
            if let Some(runs) = runs.as_deref() {
                for f in 0..earlier {
                    if let Some(v) = runs.get((f, rel, col, chunk))? {
                        rows.add_chunk(self.seal, key, v.value(), &self.meta.name)?;
                        merged = true;
                    }
                }
            }
            match new {
                Some((_, bytes, n)) if !merged => {
                    self.meta.distinct[col as usize] += n as u64;
                    writes.push((key, Cow::Borrowed(bytes)));
                }
                new => {
                    if let Some((_, bytes, _)) = new {
                        rows.add_chunk(self.seal, key, bytes, &self.meta.name)?;
                    }
                    recount(&mut self.meta, col, rows.terms(), before)?;
                    let bytes =
                        index::encode_sorted_chunk(self.seal.codec, rows.postings(), &mut data);
                    writes.push((key, Cow::Owned(index::seal_chunk(self.seal, key, bytes))));
                }
            }
        }
        insert_ascending(postings, writes.iter().map(|(k, b)| (*k, b.as_ref())))?;
        if let Some(runs) = runs {
            for f in 0..earlier {
                runs.retain_in((f, rel, 0, 0)..=(f, rel, u16::MAX, u32::MAX), |_, _| false)?;
            }
        }
        Ok(())
    }
}

/// Encodes relations' changes ([`Encode::run`]), on a thread of its own when given a scope
/// to run one in (then the caller gathers the next relation meanwhile), else at once.
pub(crate) struct Encoder {
    thread: Option<(Sender<Encode>, Receiver<Result<Encoded>>)>,
    in_flight: usize,
    ready: VecDeque<Result<Encoded>>,
}

impl Encoder {
    /// An encoder with a thread in `scope`, or without one.
    pub(crate) fn new<'scope>(scope: Option<&'scope std::thread::Scope<'scope, '_>>) -> Encoder {
        let thread = scope.map(|s| {
            let (jobs, jobs_rx) = std::sync::mpsc::channel::<Encode>();
            let (done_tx, done) = std::sync::mpsc::channel();
            s.spawn(move || {
                for job in jobs_rx {
                    if done_tx.send(job.run()).is_err() {
                        return;
                    }
                }
            });
            (jobs, done)
        });
        Encoder {
            thread,
            in_flight: 0,
            ready: VecDeque::new(),
        }
    }

    /// Hands over a relation's changes to the encoding thread; answers them when there is
    /// none (or it stopped), for the caller to encode with [`Encoder::run_here`] once it has
    /// sent the terms they wait for ([`Encode::coming`]).
    pub(crate) fn send(&mut self, job: Encode) -> Option<Encode> {
        let Some((jobs, _)) = self.thread.as_ref() else {
            return Some(job);
        };
        match jobs.send(job) {
            Ok(()) => {
                self.in_flight += 1;
                None
            }
            // Only a panic stops the thread; the scope passes it on.
            Err(e) => Some(e.0),
        }
    }

    /// Encodes a relation's changes on the caller's thread.
    pub(crate) fn run_here(&mut self, job: Encode) {
        self.ready.push_back(job.run());
    }

    /// An encoding done, if one is (without waiting).
    pub(crate) fn ready(&mut self) -> Option<Result<Encoded>> {
        if let Some(r) = self.ready.pop_front() {
            return Some(r);
        }
        let (_, done) = self.thread.as_ref()?;
        let r = done.try_recv().ok()?;
        self.in_flight -= 1;
        Some(r)
    }

    /// The next encoding, waiting for it; `None` when all are answered.
    pub(crate) fn next(&mut self) -> Option<Result<Encoded>> {
        if let Some(r) = self.ready.pop_front() {
            return Some(r);
        }
        if self.in_flight == 0 {
            return None;
        }
        let (_, done) = self.thread.as_ref()?;
        self.in_flight -= 1;
        Some(
            done.recv()
                .unwrap_or_else(|_| Err(damaged("the encoding thread stopped"))),
        )
    }
}

/// Below this many appended rows, a flush's columns are encoded one after another on the
/// encoding thread.
const PARALLEL_APPENDED: usize = 1 << 16;

/// A column out of order with at least this many appended rows is sorted and encoded in as
/// many parts as there are cores, a thread each ([`column_postings`]): the 10M pairs of a
/// random column took 0.25 s to sort and 0.5 s to encode on one thread, long after the sorted
/// column's thread was done (the whole ingest of 10M integer pairs: 2.52 s to 2.40 s,
/// median of 6). 1.42M string edges gained nothing from it.
const SPLIT_PAIRS: usize = 1 << 22;

/// What a flush's appended rows give a column: its postings, or (a column without postings)
/// how many distinct terms they hold.
enum Appended {
    Postings(ColumnPostings),
    Distinct(u64),
}

/// A column's appended terms: at hand, or still with the writer, which sends them when it
/// has written the column's blocks.
enum Terms {
    Here(Vec<u32>),
    Coming(Receiver<Vec<u32>>),
}

impl Terms {
    /// The terms, waiting for them if they are still with the writer.
    fn take(self) -> Result<Vec<u32>> {
        match self {
            Terms::Here(terms) => Ok(terms),
            Terms::Coming(rx) => rx
                .recv()
                .map_err(|_| damaged("a column's appended terms never came")),
        }
    }
}

/// How many distinct terms `terms` holds: a bitmap of 2^16 bits for each high half met.
fn distinct_terms(terms: &[u32]) -> u64 {
    let mut pages: Vec<Option<Box<[u64; 1024]>>> = vec![None; 1 << 16];
    let mut count = 0u64;
    for &t in terms {
        let page = pages[(t >> 16) as usize].get_or_insert_with(|| Box::new([0u64; 1024]));
        let low = (t & 0xffff) as usize;
        let (word, bit) = (low >> 6, 1u64 << (low & 63));
        count += u64::from(page[word] & bit == 0);
        page[word] |= bit;
    }
    count
}

/// Keeps `meta.distinct[col]` true as a chunk is written: it holds `now` postings, where
/// `postings` held `before`.
fn recount(meta: &mut RelationMeta, col: u16, now: usize, before: usize) -> Result<()> {
    let d = &mut meta.distinct[col as usize];
    *d = (*d + now as u64)
        .checked_sub(before as u64)
        .ok_or_else(|| damaged(format!("relation {}: distinct count underflow", meta.name)))?;
    Ok(())
}

/// A postings chunk as lists of rows by low byte, for a merge in which each part's rows come
/// after the parts' before it (the stored chunk, then each earlier flush's run, then this
/// flush's new rows: rows are appended in that order), so that each posting is decoded onto
/// the end of its list, with no bitmap.
struct ChunkRows {
    /// Each low byte's rows (`CHUNK_TERMS` lists).
    rows: Vec<Vec<u32>>,
    /// Which lows hold rows.
    held: u64,
}

impl Default for ChunkRows {
    fn default() -> ChunkRows {
        ChunkRows {
            rows: vec![Vec::new(); index::CHUNK_TERMS as usize],
            held: 0,
        }
    }
}

impl ChunkRows {
    fn clear(&mut self) {
        for low in 0..index::CHUNK_TERMS as usize {
            if self.held >> low & 1 == 1 {
                self.rows[low].clear();
            }
        }
        self.held = 0;
    }

    /// How many terms hold rows.
    fn terms(&self) -> usize {
        self.held.count_ones() as usize
    }

    /// Adds the postings of the stored chunk `bytes` (at `postings` key `key`).
    fn add_chunk(&mut self, seal: Seal, key: Key3, bytes: &[u8], name: &str) -> Result<()> {
        let view = index::ChunkView::parse(index::open_chunk(seal, key, bytes, name)?)?;
        for (low, p) in view.iter() {
            let rows = self.rows.get_mut(low as usize).ok_or_else(|| {
                damaged(format!("relation {name}: a posting's low byte is {low}"))
            })?;
            index::decode_posting_onto(p, rows)?;
            self.held |= 1 << low;
        }
        Ok(())
    }

    /// Each term's rows, ascending by low byte.
    fn postings(&self) -> impl Iterator<Item = (u8, &[u32])> {
        (0..index::CHUNK_TERMS as u8)
            .filter(|&low| self.held >> low & 1 == 1)
            .map(|low| (low, self.rows[low as usize].as_slice()))
    }
}
