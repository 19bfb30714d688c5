//! Admission of heavy calls: at most [`crate::Options::heavy_calls`] calls of `query`,
//! `cypher`, `explain` and `ask` evaluate at once; a call past that waits for a slot, at
//! most [`crate::Options::admission_wait`] and never past its own deadline, and is then
//! refused with [`crate::CallError::Busy`], which names the limit. Cheap lookups (`schema`,
//! `look`, `values`, `find`) never pass through the gate, so they keep answering while the
//! heavy calls run. The gate blocks the calling thread while it waits: an adapter runs
//! calls off its async threads (the MCP server on tokio's blocking pool).
//!
//! # The light lane
//!
//! A `query` or `cypher` call first runs without a slot, under [`LIGHT_WORK`] units of work
//! and [`LIGHT_MEMORY`] bytes (its own lower limits still apply). Most calls are lookups
//! that finish well within that, so they never wait behind the heavy calls holding the
//! slots. A call that reaches either light limit is heavy: it waits for a slot and runs
//! again from the start under its full limits, having spent at most the light lane's work
//! (a few milliseconds) on the first try. `explain` and `ask` always take a slot.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use strata_eval::Cancel;

/// The tools that pass through the gate.
pub const HEAVY_TOOLS: [&str; 4] = ["query", "cypher", "explain", "ask"];

/// The work a call may do in the light lane, without a slot.
pub const LIGHT_WORK: u64 = 200_000;

/// The memory a call may hold in the light lane, without a slot.
pub const LIGHT_MEMORY: u64 = 64 << 20;

/// Lowers `run`'s work and memory limits to the light lane's.
pub(crate) fn lighten(run: &mut strata_eval::RunOptions) {
    let e = &mut run.engine;
    e.max_work = Some(e.max_work.map_or(LIGHT_WORK, |w| w.min(LIGHT_WORK)));
    e.max_memory = Some(e.max_memory.map_or(LIGHT_MEMORY, |m| m.min(LIGHT_MEMORY)));
}

/// Whether `e` is the light lane's work or memory limit stopping a run (so the call is
/// heavy and runs again with a slot), rather than the call's own.
pub(crate) fn light_limit(e: &crate::CallError) -> bool {
    use strata_eval::{CypherError, EvalError, QueryError};
    let eval = match e {
        crate::CallError::Query(QueryError::Eval(e)) => e,
        crate::CallError::Cypher(CypherError::Failed { error, .. }) => match error.as_ref() {
            QueryError::Eval(e) => e,
            QueryError::Program(_) => return false,
        },
        _ => return false,
    };
    match eval {
        EvalError::WorkLimit { max, .. } => *max == LIGHT_WORK,
        EvalError::MemoryLimit { max, .. } => *max == LIGHT_MEMORY,
        _ => false,
    }
}

/// How long a heavy call waits for a slot by default.
pub const WAIT: Duration = Duration::from_secs(5);

/// How often a waiting call checks its cancellation token.
const CHECK: Duration = Duration::from_millis(50);

/// The heavy calls a server runs at once by default: one fewer than the machine's cores
/// (one core left for cheap lookups and the server), and at least 2.
pub fn default_heavy_calls() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    cores.saturating_sub(1).max(2)
}

/// The gate: how many heavy calls run, of at most `limit`.
#[derive(Debug)]
pub struct Admission {
    limit: usize,
    wait: Duration,
    running: Mutex<usize>,
    freed: Condvar,
    waiting: AtomicUsize,
}

/// A slot held by a running heavy call, given back when dropped.
#[derive(Debug)]
pub struct Permit<'a> {
    gate: &'a Admission,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut running = self
            .gate
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *running = running.saturating_sub(1);
        self.gate.freed.notify_one();
    }
}

/// A heavy call that found no slot in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The gate's limit.
    pub limit: usize,
    /// How long the call waited.
    pub waited: Duration,
}

impl Admission {
    /// A gate letting `limit` heavy calls (at least 1) run at once, each waiting at most
    /// `wait` for a slot.
    pub fn new(limit: usize, wait: Duration) -> Admission {
        Admission {
            limit: limit.max(1),
            wait,
            running: Mutex::new(0),
            freed: Condvar::new(),
            waiting: AtomicUsize::new(0),
        }
    }

    /// The most heavy calls at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// How many heavy calls hold a slot now.
    pub fn running(&self) -> usize {
        *self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many heavy calls wait for a slot now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Takes a slot, waiting for one until the gate's wait or `deadline` (whichever comes
    /// first) has passed or `cancel` is cancelled; then refuses.
    pub fn admit(&self, deadline: Option<Instant>, cancel: &Cancel) -> Result<Permit<'_>, Refused> {
        let start = Instant::now();
        let until = deadline.map_or(start + self.wait, |d| d.min(start + self.wait));
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let admitted = loop {
            if *running < self.limit {
                *running += 1;
                break true;
            }
            let now = Instant::now();
            if now >= until || cancel.is_cancelled() {
                break false;
            }
            running = self
                .freed
                .wait_timeout(running, (until - now).min(CHECK))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        };
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        if admitted {
            Ok(Permit { gate: self })
        } else {
            Err(Refused {
                limit: self.limit,
                waited: start.elapsed(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_gate_refuses_until_a_slot_is_given_back() {
        let gate = Admission::new(1, Duration::ZERO);
        let cancel = Cancel::new();
        let first = gate.admit(None, &cancel).unwrap();
        assert_eq!(gate.running(), 1);
        let refused = gate.admit(None, &cancel).unwrap_err();
        assert_eq!(refused.limit, 1);
        drop(first);
        assert_eq!(gate.running(), 0);
        let _again = gate.admit(None, &cancel).unwrap();
        assert_eq!(gate.waiting(), 0);
    }

    #[test]
    fn a_waiting_call_takes_the_slot_given_back() {
        let gate = Admission::new(1, Duration::from_secs(600));
        let cancel = Cancel::new();
        let first = gate.admit(None, &cancel).unwrap();
        std::thread::scope(|s| {
            let second = s.spawn(|| gate.admit(None, &cancel).map(|_| ()));
            while gate.waiting() == 0 {
                std::thread::yield_now();
            }
            drop(first);
            assert_eq!(second.join().unwrap(), Ok(()));
        });
        // A cancelled wait ends at once.
        let _held = gate.admit(None, &cancel).unwrap();
        cancel.cancel();
        assert!(gate.admit(None, &cancel).is_err());
    }
}
