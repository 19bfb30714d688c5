//! Running a round's items on worker threads. One pool of persistent threads (named
//! `strata-worker`, as many as the machine has cores) serves every call in the process: an
//! MCP server answering several calls at once shares the cores instead of each call starting
//! threads of its own. A parallel step runs on the calling thread and takes at most
//! `threads - 1` of the pool's threads as helpers, only threads no other step holds, so a
//! helper starts at once and a step never waits behind another call's work; with every
//! thread taken, the calling thread runs the step alone. All of them take items by index
//! from a shared counter until none are left. A pool the system refuses to start is not an
//! error: the calling thread does all the work.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// The process's one pool of worker threads, started on first use; `None` when the system
/// refused to start it.
fn pool() -> Option<&'static Pool> {
    static POOL: OnceLock<Option<Pool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let size = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let threads = rayon_core::ThreadPoolBuilder::new()
            .num_threads(size)
            .thread_name(|_| "strata-worker".to_owned())
            .build()
            .ok()?;
        Some(Pool {
            threads,
            size,
            taken: AtomicUsize::new(0),
        })
    })
    .as_ref()
}

/// The worker threads and how many of them steps have taken.
struct Pool {
    threads: rayon_core::ThreadPool,
    /// How many threads the pool has.
    size: usize,
    /// Helpers asked for and not yet done, over every call. A step takes only threads no
    /// other step holds, so a helper it asks for starts at once and a step never waits for
    /// another call's work to finish.
    taken: AtomicUsize,
}

impl Pool {
    /// Takes up to `wanted` of the threads no step holds, and says how many it took.
    fn take(&self, wanted: usize) -> usize {
        let mut taken = self.taken.load(Ordering::Relaxed);
        loop {
            let n = wanted.min(self.size.saturating_sub(taken));
            if n == 0 {
                return 0;
            }
            match self.taken.compare_exchange_weak(
                taken,
                taken + n,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return n,
                Err(now) => taken = now,
            }
        }
    }

    /// Runs `mine` on the calling thread and `theirs` on `helpers` threads this step took,
    /// returning once all are done; each helper gives its thread back as it finishes.
    fn run(&self, helpers: usize, mine: impl FnOnce(), theirs: &(impl Fn() + Sync)) {
        self.threads.in_place_scope(|s| {
            for _ in 0..helpers {
                s.spawn(|_| {
                    // Given back even if `theirs` panics (the scope passes the panic on).
                    let _back = GiveBack(&self.taken);
                    theirs();
                });
            }
            mine();
        });
    }
}

/// Gives a taken thread back to the pool when dropped.
struct GiveBack<'a>(&'a AtomicUsize);

impl Drop for GiveBack<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs `work` on the calling thread and on up to `helpers` of the pool's threads, those no
/// other step holds, and returns once every one of them is done. With none free (or no
/// pool), the calling thread alone runs it: `work` must finish the step whoever runs it.
fn with_helpers(helpers: usize, work: &(impl Fn() + Sync)) {
    match pool() {
        Some(pool) if helpers > 0 => match pool.take(helpers) {
            0 => work(),
            n => pool.run(n, work, work),
        },
        _ => work(),
    }
}

/// Calls `work` once on each of `jobs`, each moved to whichever of up to `threads` threads
/// takes it, and returns the results in the jobs' order.
pub(crate) fn map<T: Send, R: Send>(
    threads: usize,
    jobs: Vec<T>,
    work: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let slots: Vec<Mutex<(Option<T>, Option<R>)>> = jobs
        .into_iter()
        .map(|j| Mutex::new((Some(j), None)))
        .collect();
    let lock = |i: usize| slots[i].lock().unwrap_or_else(PoisonError::into_inner);
    for_each_index(threads, slots.len(), |i| {
        let job = lock(i).0.take();
        if let Some(job) = job {
            let result = work(job);
            lock(i).1 = Some(result);
        }
        true
    });
    slots
        .into_iter()
        .filter_map(|s| s.into_inner().unwrap_or_else(PoisonError::into_inner).1)
        .collect()
}

/// Calls `work(i)` for each `i` in `0..count`, on up to `threads` threads, and returns the
/// results in order; after an error no further item is started, and the first error in
/// order is returned.
pub(crate) fn try_map<R: Send, E: Send>(
    threads: usize,
    count: usize,
    work: impl Fn(usize) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E> {
    if threads.max(1).min(count) <= 1 {
        return (0..count).map(work).collect();
    }
    let slots: Vec<Mutex<Option<Result<R, E>>>> = (0..count).map(|_| Mutex::new(None)).collect();
    for_each_index(threads, count, |i| {
        let r = work(i);
        let ok = r.is_ok();
        *slots[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
        // After an error the others stop at their next item.
        ok
    });
    let mut out = Vec::with_capacity(count);
    for slot in slots {
        match slot.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some(r) => out.push(r?),
            None => break,
        }
    }
    Ok(out)
}

/// Calls `work(i)` once for each `i` in `0..count`, on up to `threads` threads. `work`
/// returns whether to go on; after a `false` no further item is started.
pub(crate) fn for_each_index(threads: usize, count: usize, work: impl Fn(usize) -> bool + Sync) {
    let next = AtomicUsize::new(0);
    let run = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= count {
                break;
            }
            if !work(i) {
                next.store(count, Ordering::Relaxed);
                break;
            }
        }
    };
    let helpers = threads.max(1).min(count).saturating_sub(1);
    with_helpers(helpers, &run);
}

/// Runs `a` and `b` at once: `a` on the calling thread, `b` on one of the pool's threads.
/// When no pool thread is free (or there is no pool), or none has started `b` by the time
/// `a` is done, the calling thread runs `b` after `a`. Each closure hands its result back through what it captures.
pub(crate) fn join(a: impl FnOnce() + Send, b: impl FnOnce() + Send) {
    let b = Mutex::new(Some(b));
    let run_b = || {
        let job = b.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(job) = job {
            job();
        }
    };
    match pool() {
        Some(pool) if pool.take(1) == 1 => pool.run(
            1,
            || {
                a();
                // Nothing left when the pool's thread took it.
                run_b();
            },
            &run_b,
        ),
        _ => {
            a();
            run_b();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn every_index_once_and_stop_on_false() {
        for threads in [1, 2, 5] {
            let seen = Mutex::new(Vec::new());
            for_each_index(threads, 100, |i| {
                seen.lock().unwrap_or_else(|e| e.into_inner()).push(i);
                true
            });
            let mut seen = seen.into_inner().unwrap_or_else(|e| e.into_inner());
            seen.sort_unstable();
            assert_eq!(seen, (0..100).collect::<Vec<_>>());
        }
        let started = AtomicUsize::new(0);
        for_each_index(1, 100, |i| {
            started.fetch_add(1, Ordering::Relaxed);
            i < 9
        });
        assert_eq!(started.load(Ordering::Relaxed), 10);
    }

    #[test]
    fn join_runs_both() {
        let (mut a, mut b) = (0, 0);
        join(|| a = 1, || b = 2);
        assert_eq!((a, b), (1, 2));
    }

    #[test]
    fn helpers_are_the_pools_threads_not_new_ones() {
        let Some(pool) = pool() else { return };
        let me = std::thread::current().id();
        let helpers = Mutex::new(std::collections::HashSet::new());
        for _ in 0..50 {
            for_each_index(4, 64, |_| {
                let t = std::thread::current();
                if t.id() != me {
                    assert_eq!(t.name(), Some("strata-worker"));
                    helpers
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(t.id());
                }
                std::hint::black_box((0..200).sum::<u64>());
                true
            });
        }
        let helpers = helpers.into_inner().unwrap_or_else(|e| e.into_inner());
        assert!(
            helpers.len() <= pool.size,
            "{} helper threads",
            helpers.len()
        );
    }

    #[test]
    fn with_every_thread_taken_a_step_runs_on_the_caller_alone() {
        let Some(pool) = pool() else { return };
        // Hold every thread, as other calls' steps would (other tests may hold some).
        let mut held = 0;
        while held < pool.size {
            held += pool.take(pool.size - held);
            std::thread::yield_now();
        }
        let me = std::thread::current().id();
        let others = AtomicUsize::new(0);
        for_each_index(4, 100, |_| {
            if std::thread::current().id() != me {
                others.fetch_add(1, Ordering::Relaxed);
            }
            true
        });
        let (mut a, mut b) = (None, None);
        join(
            || a = Some(std::thread::current().id()),
            || b = Some(std::thread::current().id()),
        );
        pool.taken.fetch_sub(held, Ordering::AcqRel);
        assert_eq!(others.load(Ordering::Relaxed), 0);
        assert_eq!((a, b), (Some(me), Some(me)));
    }
}
