//! Work, memory, budgets, deadlines and cancellation.
//!
//! Work is a deterministic count: one unit per candidate tuple a join examines. Workers add
//! their counts in batches to a shared counter and check the limits every batch, so a runaway
//! evaluation stops inside a join loop, not only between rounds.
//!
//! Memory is counted in bytes held by the evaluation's structures, against an optional cap
//! (a [`SharedByteBudget`]): at the same batch points a worker charges what its output grew
//! by since its last batch (a few loads, once per [`BATCH`] units: no count per tuple), and
//! after every round, once the outputs are merged and dropped, the evaluator counts afresh
//! what its relations, their indexes and the witnesses hold ([`Budget::hold`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::budget::SharedByteBudget;
use crate::exec::engine::{EvalError, MemoryUse};

/// A token that stops an evaluation from another thread.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A token not yet cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks the evaluations holding this token to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counters an evaluation keeps up to date while it runs, for another thread to read (an
/// adapter's progress notifications): the work spent, the rounds run and the facts derived.
/// Clones share the counts. Each count only grows, over every evaluation given the same
/// counters (a call that runs again under other limits goes on counting). Cheap: work is
/// added once per batch of 1,024 units, rounds and facts once per round.
#[derive(Clone, Debug, Default)]
pub struct Progress(Arc<Counters>);

#[derive(Debug, Default)]
struct Counters {
    work: AtomicU64,
    rounds: AtomicU64,
    facts: AtomicU64,
}

/// What [`Progress`] counted, read at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProgressCounts {
    /// Work units spent.
    pub work: u64,
    /// Semi-naive rounds run.
    pub rounds: u64,
    /// Derived facts added.
    pub facts: u64,
}

impl Progress {
    /// Counters at zero.
    pub fn new() -> Progress {
        Progress::default()
    }

    /// The counts now.
    pub fn read(&self) -> ProgressCounts {
        ProgressCounts {
            work: self.0.work.load(Ordering::Relaxed),
            rounds: self.0.rounds.load(Ordering::Relaxed),
            facts: self.0.facts.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn work(&self, units: u64) {
        self.0.work.fetch_add(units, Ordering::Relaxed);
    }

    pub(crate) fn round(&self) {
        self.0.rounds.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn facts(&self, new: u64) {
        self.0.facts.fetch_add(new, Ordering::Relaxed);
    }
}

/// The limits of one evaluation, and the work spent so far.
#[derive(Debug)]
pub struct Budget {
    max_work: Option<u64>,
    deadline: Option<(Instant, Duration)>,
    cancel: Cancel,
    progress: Progress,
    spent: AtomicU64,
    /// The memory cap and the bytes held, when there is a cap.
    memory: Option<SharedByteBudget>,
}

/// How many units a worker counts before it adds them up and checks the limits.
pub const BATCH: u64 = 1024;

impl Budget {
    /// A budget of at most `max_work` units, finishing within `timeout` of `started` (of
    /// now when `None`), stoppable by `cancel`, holding at most `max_memory` bytes, adding
    /// the work it spends to `progress`.
    pub fn new(
        max_work: Option<u64>,
        timeout: Option<Duration>,
        started: Option<Instant>,
        cancel: Cancel,
        max_memory: Option<u64>,
        progress: Progress,
    ) -> Budget {
        let from = started.unwrap_or_else(Instant::now);
        Budget {
            max_work,
            deadline: timeout.map(|t| (from + t, t)),
            cancel,
            progress,
            spent: AtomicU64::new(0),
            memory: max_memory.map(SharedByteBudget::new),
        }
    }

    /// Whether memory is capped (else nothing need be measured).
    pub fn caps_memory(&self) -> bool {
        self.memory.is_some()
    }

    /// Adds `bytes` that a worker's output (or an aggregate's groups) grew by, and checks
    /// the memory cap.
    pub fn grow(&self, bytes: u64) -> Result<(), EvalError> {
        match &self.memory {
            Some(m) if !m.charge(bytes) => Err(memory_limit(m, bytes)),
            _ => Ok(()),
        }
    }

    /// Sets the bytes held to `bytes`, counted afresh between rounds, and checks the cap.
    pub fn hold(&self, bytes: u64) -> Result<(), EvalError> {
        match &self.memory {
            Some(m) if !m.set(bytes) => Err(memory_limit(m, 0)),
            _ => Ok(()),
        }
    }

    /// Work spent so far (exact once the evaluation is over).
    pub fn spent(&self) -> u64 {
        self.spent.load(Ordering::Relaxed)
    }

    /// Adds `units` of work and checks every limit.
    pub fn charge(&self, units: u64) -> Result<(), EvalError> {
        let spent = self.spent.fetch_add(units, Ordering::Relaxed) + units;
        self.progress.work(units);
        if let Some(max) = self.max_work
            && spent > max
        {
            return Err(EvalError::WorkLimit {
                max,
                spent: Vec::new(),
            });
        }
        self.check_time()
    }

    /// The counters the evaluation reports to.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// Checks the deadline and the cancellation token.
    pub fn check_time(&self) -> Result<(), EvalError> {
        if self.cancel.is_cancelled() {
            return Err(EvalError::Cancelled);
        }
        if let Some((at, limit)) = self.deadline
            && Instant::now() > at
        {
            return Err(EvalError::Deadline {
                limit,
                spent: Vec::new(),
            });
        }
        Ok(())
    }
}

/// The memory error, before the engine says where the memory went: `asked` is the growth
/// refused (0 when what is held was counted afresh), not held.
fn memory_limit(m: &SharedByteBudget, asked: u64) -> EvalError {
    EvalError::MemoryLimit {
        max: m.limit(),
        used: MemoryUse {
            total: m.used().saturating_sub(asked),
            asked,
            ..MemoryUse::default()
        },
    }
}
