//! Execution: the planned rules run to a fixpoint, stratum by stratum.
//!
//! Takes an [`crate::ir::Ir`] and a [`crate::FactSource`]; gives an [`engine::Evaluation`]:
//! every relation's tuples in memory ([`relation`], with [`index`]es, [`sorted`] runs or
//! [`keyset`] rows, and growing [`buffer`]s), the derivations recorded for witnesses ([`witness`]), and the
//! work, rounds and profile spent. The [`engine`] runs semi-naive rounds; each round's work
//! is cut into tasks that [`worker`]s run on the [`pool`]'s threads, each writing its own
//! [`delta`]; the [`pair`] join is the fast path of the commonest recursive plan. Work,
//! budgets and cancellation are counted in [`budget`].
//!
//! # The design, in full
//!
//! Per stratum, exit rules once, then semi-naive rounds (the delta literal reads recent tuples,
//! literals written before it every visible tuple, literals after it stable ones) until nothing
//! is new. A round's work is cut into tasks (plan x chunk of the first step's part) run by
//! worker threads; each task emits its candidates (narrow tuples as packed `u64` keys, each
//! with its index among the task's derivations only when witnesses are on), radix-sorts them,
//! and drops on the worker thread the keys its head holds already (unless, without witnesses,
//! nearly all of the head's candidates were new in the last round, three quarters or more of at
//! least 2^16: then the round's merge drops them, for all the tasks' keys at once in key order,
//! on each thread's key range, so neighbouring keys share the reads of the runs' blocks); a
//! worker interprets a plan step by step (`Worker::run`), except a plan of two steps over
//! in-memory relations of two columns, the first scanned whole and the second probed on one
//! column with a variable the first bound (`tc(?x, ?y), e(?y, ?z)`, and each of points-to's
//! rules once split), which runs as one loop (`pair`): the probed index is found once per task
//! (a settled index's one grouping read directly), a key is looked up once for a stretch of
//! scanned tuples sharing it, and a narrow head's key (with witnesses, with the two tuple ids
//! as its inline premise words) is packed from precomputed sources; the candidates, work ticks,
//! profile counts and premises are the step interpreter's, in the same order. The round then
//! merges the tasks' runs in task order into the relations, so ids, witnesses and work do not
//! depend on the thread count. A narrow relation's round of 2^16 candidates or more is merged
//! on every thread, cut into two key ranges a thread at quantiles of a sample drawn from every
//! task's run in proportion to its length (each task's keys cover only what its chunk of the
//! delta reaches, so one run's quantiles are not the round's); the ranges' results stay
//! separate pieces, in key order, where one vector is not needed (with witnesses, the
//! derivations are recorded from the pieces). A relation of arity <= 2 keeps its keys for
//! membership in sorted runs of geometrically shrinking sizes, merged in place (from the back,
//! without a branch on which run a key comes from) and read through a fence of every 16th key
//! (`run`), until its keys are dense: at two keys a 64-bit word or more, summed over each
//! run's spans at sizes that double, it keeps them as rows instead (`keyset`), one per first
//! term found through a hash table, each the words from its least second term to its
//! greatest, so a check is a row found and a bit read rather than a probe of every run (the
//! chain's closure, all of whose candidates are new, spent 55% of its time in those probes);
//! an append that would thin the words below a key each sends the keys back to runs. A wider
//! relation keeps a hash set of ids. Without witnesses, a binary relation with an index
//! on one column whose terms average at most two entries (summed over its layers) answers
//! membership from that index instead, each probe scanning one term's entries for the other
//! column in each layer, and keeps no runs (`Relation::update_membership`, checked when an
//! index is added and after each append); past four entries a term it rebuilds its runs from
//! its tuples and keeps them. Points-to's `pt` (a variable gains one or two objects a round)
//! saves its runs' 8 bytes a tuple. With witnesses the runs stay: a task then filters its own
//! candidates, probing once per task, and the runs are cheaper to probe. A base relation read
//! into memory takes no new tuples, so one of arity <= 2 keeps no runs: its facts are sorted by
//! key and made distinct once (`Relation::load`), or taken as they are, without a copy, when
//! they arrive sorted and distinct. Indexes (`index`) map bound columns to entries ascending by
//! id: for a relation of two columns keyed on one, an entry is the id and the other column's
//! term (8 bytes), so a join binds from the index and never reads the tuple; otherwise the id
//! alone in the first word. A one-column index holds its entries grouped by term in term order
//! (`grouped`): found through a bitmap of the terms present with a rank every 64 terms (16
//! bytes per 64 terms of the span, when the span is at most 32 times the entries), else by
//! binary search in the sorted list of the terms present. A settled relation's index is one
//! such grouping (radix-sorted by term; a hash map when its terms are too sparse to rank); a
//! growing relation's is a list of layers, each the entries of a contiguous range of ids: a
//! round's new tuples become a layer, and a layer at least half the size of the one before it
//! is merged into it (term by term, the older entries first, so each term's ids stay ascending;
//! two ranked layers merge a bitmap word at a time, the union of their presence bits with each
//! layer's groups read in rank order; a merge of 2^18 entries or more is cut at a word boundary
//! in the middle of the span and its halves merged on two threads), so there are `log n` layers
//! and a lookup reads each layer whose ids meet its range (a delta lookup reads only the
//! newest). An index on several columns is a hash map from the packed key, with two entries
//! inline. A round's missing indexes are built, the base relations it reads into memory are
//! read, and a relation's indexes take the round's new tuples, each on a worker thread of its
//! own, while its runs take them on another (a large round's tuples are written into the tuple
//! array on two threads, each writing half, whatever the relation keeps; a relation with no
//! index then has its runs merge the round in on two threads: `Run::merge_halves` cuts the
//! output at the merge path, grows the run's buffer, moves the run's keys above the cut up by
//! the round's length, and merges the low half from the back while the high half merges from
//! the front, both in place; a run whose buffer would move by copying to grow, out of room and
//! in the allocator's heap, is merged instead into a new buffer, both halves from the front);
//! with witnesses, the new tuples' derivations are recorded on a helper thread while the
//! relation takes the tuples on the calling thread (its buffers are the larger; a helper thread
//! allocates from an allocator arena of its own). The buffers that grow round after round (the
//! tuples of a relation of two columns or fewer, a run's keys, a relation's derivations and
//! premise words) grow by doubling, but on 64-bit targets one whose doubled capacity reaches 1
//! MB reserves at least 32 MiB (`buffer::make_room`; where the system refuses the reservation,
//! it doubles as before): glibc normally maps an allocation that large on its own and grows it
//! by remapping its pages, so past its first move out of the heap it grows without a copy and
//! leaves no hole in the heap, and the addresses reserved past what it holds are not resident
//! until written. Grown on two threads, a buffer's new pages are first written on both
//! (`buffer::grow`), each thread taking half the page faults. Base relations are read through
//! `FactSource::lookup` (bitmap intersections in the store) or read into memory whole: when
//! small, when probed (or about to be probed this round, counting one probe per tuple of the
//! step before) more than a 32nd of their size, or when scanned whole as the first step of a
//! join (the in-memory copy is then cut into tasks). Work (candidate tuples examined) is
//! counted per worker and charged in batches of 1024 against the budget, the deadline and the
//! cancellation token.

pub(crate) mod budget;
pub(crate) mod buffer;
pub(crate) mod delta;
pub(crate) mod engine;
pub(crate) mod grouped;
pub(crate) mod index;
pub(crate) mod keyset;
pub(crate) mod pair;
pub(crate) mod pool;
pub(crate) mod relation;
pub(crate) mod sorted;
pub(crate) mod witness;
pub(crate) mod worker;
