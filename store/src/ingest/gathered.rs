//! A relation's facts as a batch gathers them ([`Gathered`]), kept compact: the terms of a
//! relation of at most two columns packed in one `u64` a fact, and the units as runs (a dump
//! without units, or one unit's facts, is one run). At a flush they are sorted ([`Sorted`],
//! on a thread of its own: [`Sorter`]) and added to the relation's writer ([`add_sorted`]),
//! each distinct tuple once.

use super::BatchSummary;
use super::earlier::Earlier;
use crate::error::Result;
use crate::relwriter::RelWriter;
use crate::shrinking::Shrinking;
use strata_eval::internals::radix::RadixKey;

/// A relation's gathered facts: their terms and the unit of each, in the order read.
pub(super) struct Gathered {
    arity: usize,
    /// Relations of at most two columns: each fact's terms, the first in the high half.
    narrow: Vec<u64>,
    /// Wider relations: the terms one after another, `arity` a fact.
    flat: Vec<u32>,
    /// The unit of each fact as runs, in order: (unit, facts).
    units: Vec<(u32, u64)>,
}

impl Gathered {
    /// No facts of a relation of `arity` columns.
    pub(super) fn new(arity: usize) -> Gathered {
        Gathered {
            arity,
            narrow: Vec::new(),
            flat: Vec::new(),
            units: Vec::new(),
        }
    }

    /// How many facts it holds.
    pub(super) fn len(&self) -> usize {
        match self.arity {
            0..=2 => self.narrow.len(),
            arity => self.flat.len() / arity,
        }
    }

    /// Adds `n` facts stated by `unit`: `terms` holds their terms one after another, `arity`
    /// a fact (none for a relation of no column).
    pub(super) fn push(&mut self, terms: &[u32], n: usize, unit: u32) {
        match self.arity {
            0 => self.narrow.extend(std::iter::repeat_n(0, n)),
            1 => self
                .narrow
                .extend(terms.iter().map(|&t| u64::from(t) << 32)),
            2 => self.narrow.extend(
                terms
                    .chunks_exact(2)
                    .map(|t| u64::from(t[0]) << 32 | u64::from(t[1])),
            ),
            _ => self.flat.extend_from_slice(terms),
        }
        match self.units.last_mut() {
            Some((u, count)) if *u == unit => *count += n as u64,
            _ => self.units.push((unit, n as u64)),
        }
    }

    /// Takes the facts out, leaving none.
    pub(super) fn take(&mut self) -> Gathered {
        std::mem::replace(self, Gathered::new(self.arity))
    }

    /// The unit of each fact, one after another.
    fn each_unit(units: &[(u32, u64)]) -> impl Iterator<Item = u32> + '_ {
        units
            .iter()
            .flat_map(|&(u, n)| std::iter::repeat_n(u, n as usize))
    }
}

/// A relation's gathered facts in order of tuple then unit, as [`add_sorted`] adds them.
pub(super) enum Sorted {
    /// Relations of at most two columns whose facts one unit states (or none): the packed
    /// tuples ([`Gathered`]'s), sorted.
    Narrow {
        arity: usize,
        keys: Vec<u64>,
        unit: u32,
    },
    /// Relations of at most 3 columns: each statement packed as one `u128` (columns from
    /// the top, then the unit), sorted.
    Packed { arity: usize, keys: Vec<u128> },
    /// Wider relations: the statements and their order.
    Wide {
        arity: usize,
        tuples: Vec<u32>,
        units: Vec<u32>,
        order: Vec<u32>,
    },
}

impl Sorted {
    /// Sorts `facts`.
    pub(super) fn of(facts: Gathered) -> Sorted {
        let len = facts.len();
        let Gathered {
            arity,
            mut narrow,
            flat,
            units,
        } = facts;
        if arity <= 2 {
            if units.len() <= 1 {
                sort_keys(&mut narrow, RADIX_NARROW_MAX);
                let unit = units.first().map_or(0, |&(u, _)| u);
                return Sorted::Narrow {
                    arity,
                    keys: narrow,
                    unit,
                };
            }
            let mut keys: Vec<u128> = narrow
                .iter()
                .zip(Gathered::each_unit(&units))
                .map(|(&k, u)| u128::from(k) << 64 | u128::from(u))
                .collect();
            drop(narrow);
            sort_keys(&mut keys, RADIX_STATEMENTS_MAX);
            return Sorted::Packed { arity, keys };
        }
        if arity == 3 {
            let mut keys: Vec<u128> = flat
                .chunks_exact(3)
                .zip(Gathered::each_unit(&units))
                .map(|(t, u)| {
                    u128::from(t[0]) << 96
                        | u128::from(t[1]) << 64
                        | u128::from(t[2]) << 32
                        | u128::from(u)
                })
                .collect();
            drop(flat);
            sort_keys(&mut keys, RADIX_STATEMENTS_MAX);
            return Sorted::Packed { arity, keys };
        }
        let units: Vec<u32> = Gathered::each_unit(&units).collect();
        let tuple = |i: usize| &flat[i * arity..(i + 1) * arity];
        let mut order: Vec<u32> = (0..len as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            tuple(a as usize)
                .cmp(tuple(b as usize))
                .then(units[a as usize].cmp(&units[b as usize]))
        });
        Sorted::Wide {
            arity,
            tuples: flat,
            units,
            order,
        }
    }
}

/// Above this many statements, a comparison sort in place: the radix sort's second buffer
/// (16 bytes a statement) would add 64 MiB or more to the peak of a large flush.
const RADIX_STATEMENTS_MAX: usize = 1 << 22;

/// Above this many packed tuples, a comparison sort in place: the radix sort's second buffer
/// would add 128 MiB or more. Below, it is no more than the tuples themselves, held while
/// nothing else of the relation is (its rows are not added yet): 10M tuples sort in 80 MB
/// more, well under the peak of adding and encoding them.
const RADIX_NARROW_MAX: usize = 1 << 24;

/// Sorts packed statements ([`RADIX_STATEMENTS_MAX`]) or tuples ([`RADIX_NARROW_MAX`])
/// ascending: by bytes (`strata_eval`'s radix sort, a pass per byte that differs among the
/// keys) unless there are more than `radix_max`, too many for its second buffer.
fn sort_keys<K: RadixKey + Default>(keys: &mut Vec<K>, radix_max: usize) {
    if keys.len() > radix_max {
        keys.sort_unstable();
    } else {
        strata_eval::internals::radix::sort_by_key(keys, |&k| k);
    }
}

/// Sorts relations' facts ([`Sorted::of`]) in the order given, on a thread of its own when
/// given a scope to run one in (then the sorting of the next relations overlaps the adding
/// of this one), else when asked.
pub(super) struct Sorter {
    thread: Option<std::sync::mpsc::Receiver<Sorted>>,
    jobs: std::vec::IntoIter<Gathered>,
}

impl Sorter {
    /// A sorter of `jobs`, with a thread in `scope`, or without one.
    pub(super) fn new<'scope>(
        scope: Option<&'scope std::thread::Scope<'scope, '_>>,
        jobs: Vec<Gathered>,
    ) -> Sorter {
        match scope {
            Some(s) => {
                // One relation sorted ahead (handed over when the one before is taken): memory
                // holds at most two sorted at a time.
                let (tx, rx) = std::sync::mpsc::sync_channel(0);
                s.spawn(move || {
                    for job in jobs {
                        if tx.send(Sorted::of(job)).is_err() {
                            return;
                        }
                    }
                });
                Sorter {
                    thread: Some(rx),
                    jobs: Vec::new().into_iter(),
                }
            }
            None => Sorter {
                thread: None,
                jobs: jobs.into_iter(),
            },
        }
    }

    /// The next relation's facts, sorted.
    pub(super) fn next(&mut self) -> Result<Sorted> {
        let next = match &self.thread {
            Some(rx) => rx.recv().ok(),
            None => self.jobs.next().map(Sorted::of),
        };
        next.ok_or_else(|| crate::error::damaged("the sorting of a batch's facts stopped"))
    }
}

/// Adds a relation's gathered facts, sorted: each distinct tuple once, with its distinct
/// units. `earlier`, for a relation empty when the batch began, walks the rows its earlier
/// flushes appended: a tuple none of them holds is appended without a lookup.
pub(super) fn add_sorted(
    w: &mut RelWriter<'_>,
    sorted: Sorted,
    summary: &mut BatchSummary,
    mut earlier: Option<Earlier>,
) -> Result<()> {
    let mut us = Vec::new();
    let (arity, tuples, units, order) = match sorted {
        Sorted::Narrow { arity, keys, unit } => {
            w.reserve(keys.len());
            if arity > 0 && (w.was_empty() || earlier.is_some()) {
                return append_new(w, arity, keys, unit, summary, earlier);
            }
            let us = [unit];
            return each_group(
                keys,
                |a, b| a == b,
                |same| {
                    let k = same[0];
                    let tuple = [(k >> 32) as u32, k as u32];
                    record(
                        add_one(w, earlier.as_mut(), &tuple[..arity], &us)?,
                        same.len() as u64,
                        summary,
                    );
                    Ok(())
                },
            );
        }
        Sorted::Packed { arity, keys } => {
            w.reserve(keys.len());
            let mut tuple = [0u32; 3];
            return each_group(
                keys,
                |a, b| a >> 32 == b >> 32,
                |same| {
                    let key = same[0] >> 32;
                    for (c, x) in tuple.iter_mut().enumerate() {
                        *x = (key >> (64 - 32 * c)) as u32;
                    }
                    us.clear();
                    for &k in same {
                        let u = k as u32;
                        if us.last() != Some(&u) {
                            us.push(u);
                        }
                    }
                    record(
                        add_one(w, earlier.as_mut(), &tuple[..arity], &us)?,
                        same.len() as u64,
                        summary,
                    );
                    Ok(())
                },
            );
        }
        Sorted::Wide {
            arity,
            tuples,
            units,
            order,
        } => (arity, tuples, units, order),
    };
    w.reserve(order.len());
    let tuple = |i: u32| &tuples[i as usize * arity..(i as usize + 1) * arity];
    for same in order.chunk_by(|&a, &b| tuple(a) == tuple(b)) {
        us.clear();
        for &i in same {
            let u = units[i as usize];
            if us.last() != Some(&u) {
                us.push(u);
            }
        }
        record(
            add_one(w, earlier.as_mut(), tuple(same[0]), &us)?,
            same.len() as u64,
            summary,
        );
    }
    Ok(())
}

/// [`add_sorted`] of tuples packed one or two columns a key, stated by `unit`, into a
/// relation that held no row when the flush began, or none but the rows `earlier` walks:
/// each distinct key those rows do not hold is a new row, so they are appended a slice at a
/// time ([`RelWriter::append_new`]), not looked up one by one (10M integer pairs: the adding
/// took 0.45 s; [`each_group`]'s memory rule holds). A key they may hold is added alone, in
/// its place, after the slice before it.
fn append_new(
    w: &mut RelWriter<'_>,
    arity: usize,
    keys: Vec<u64>,
    unit: u32,
    summary: &mut BatchSummary,
    mut earlier: Option<Earlier>,
) -> Result<()> {
    w.stream_postings(keys.len());
    let mut keys = Shrinking::in_order(keys);
    let (mut high, mut low) = (Vec::with_capacity(APPEND_SLICE), Vec::new());
    if arity == 2 {
        low.reserve(APPEND_SLICE);
    }
    let mut last: Option<u64> = None;
    loop {
        high.clear();
        low.clear();
        while high.len() < APPEND_SLICE
            && let Some(k) = keys.pop()
        {
            if last == Some(k) {
                summary.duplicates += 1;
                continue;
            }
            last = Some(k);
            let tuple = [(k >> 32) as u32, k as u32];
            if let Some(e) = earlier.as_mut()
                && e.may_hold(w, &tuple[..arity])?
            {
                append_slice(w, arity, &high, &low, unit)?;
                high.clear();
                low.clear();
                record(w.add(&tuple[..arity], &[unit])?, 1, summary);
                continue;
            }
            summary.new += 1;
            high.push(tuple[0]);
            if arity == 2 {
                low.push(tuple[1]);
            }
        }
        if high.is_empty() {
            return Ok(());
        }
        append_slice(w, arity, &high, &low, unit)?;
    }
}

/// Appends new rows: `high` holds their first column, `low` their second (of two).
fn append_slice(
    w: &mut RelWriter<'_>,
    arity: usize,
    high: &[u32],
    low: &[u32],
    unit: u32,
) -> Result<()> {
    if arity == 2 {
        w.append_new(&[high, low], unit)
    } else {
        w.append_new(&[high], unit)
    }
}

/// How many new rows [`append_new`] appends at a time.
const APPEND_SLICE: usize = 1 << 16;

/// Hands `keys` (ascending) to `each` group by group (the runs of keys that `same` puts
/// together), letting go of them as it goes ([`Shrinking`]), so that the keys and the rows
/// they become are never both held whole (10M two-column facts: 80 MB of keys beside the
/// writer's 80 MB of terms).
fn each_group<T: Copy>(
    keys: Vec<T>,
    same: impl Fn(&T, &T) -> bool,
    mut each: impl FnMut(&[T]) -> Result<()>,
) -> Result<()> {
    let mut keys = Shrinking::in_order(keys);
    let mut group: Vec<T> = Vec::new();
    while let Some(k) = keys.pop() {
        if group.first().is_some_and(|g| !same(g, &k)) {
            each(&group)?;
            group.clear();
        }
        group.push(k);
    }
    if !group.is_empty() {
        each(&group)?;
    }
    Ok(())
}

/// Adds one distinct tuple stated by `units`: looked up unless `earlier` says no earlier
/// flush of the batch wrote it (in a relation empty when the batch began).
fn add_one(
    w: &mut RelWriter<'_>,
    earlier: Option<&mut Earlier>,
    tuple: &[u32],
    units: &[u32],
) -> Result<bool> {
    match earlier {
        Some(e) => {
            let absent = !e.may_hold(w, tuple)?;
            w.add_known(tuple, units, absent)
        }
        None => w.add(tuple, units),
    }
}

/// Counts a distinct tuple that `occurrences` statements of the batch gave.
fn record(new: bool, occurrences: u64, summary: &mut BatchSummary) {
    if new {
        summary.new += 1;
        summary.duplicates += occurrences - 1;
    } else {
        summary.duplicates += occurrences;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statements of `sorted`, in its order: (tuple, unit).
    fn statements(sorted: Sorted) -> Vec<(Vec<u32>, u32)> {
        match sorted {
            Sorted::Narrow { arity, keys, unit } => keys
                .iter()
                .map(|&k| ([(k >> 32) as u32, k as u32][..arity].to_vec(), unit))
                .collect(),
            Sorted::Packed { arity, keys } => keys
                .iter()
                .map(|&k| {
                    let t: Vec<u32> = (0..arity).map(|c| (k >> (96 - 32 * c)) as u32).collect();
                    (t, k as u32)
                })
                .collect(),
            Sorted::Wide {
                arity,
                tuples,
                units,
                order,
            } => order
                .iter()
                .map(|&i| {
                    let i = i as usize;
                    (tuples[i * arity..(i + 1) * arity].to_vec(), units[i])
                })
                .collect(),
        }
    }

    #[test]
    fn gathered_facts_sort_by_tuple_then_unit_in_every_form() {
        for arity in 0..=4usize {
            for units in [&[0u32][..], &[7], &[3, 1, 3, 2]] {
                let mut g = Gathered::new(arity);
                let mut want = Vec::new();
                for (i, &u) in units.iter().cycle().take(40).enumerate() {
                    // Two facts a push, some repeated.
                    let terms: Vec<u32> = (0..2 * arity)
                        .map(|j| u32::MAX - 9 + ((i * 7 + j * 13) % 5) as u32)
                        .collect();
                    let n = if arity == 0 { 1 } else { 2 };
                    g.push(&terms, n, u);
                    if arity == 0 {
                        want.push((Vec::new(), u));
                    } else {
                        for t in terms.chunks_exact(arity) {
                            want.push((t.to_vec(), u));
                        }
                    }
                }
                assert_eq!(g.len(), want.len());
                want.sort();
                let taken = g.take();
                assert_eq!(g.len(), 0);
                let got = statements(Sorted::of(taken));
                assert_eq!(got, want, "arity {arity}, units {units:?}");
            }
        }
    }
}
