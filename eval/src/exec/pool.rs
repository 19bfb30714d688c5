//! Running a round's items on worker threads: the calling thread and `threads - 1` scoped
//! threads (named `strata-worker`) take items by index from a shared counter until none
//! are left. A thread the system refuses to start is not an error: the others take its
//! share.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

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
    if helpers == 0 {
        run();
        return;
    }
    std::thread::scope(|s| {
        for _ in 0..helpers {
            // If the thread cannot start, the ones that did take its items.
            let _ = std::thread::Builder::new()
                .name("strata-worker".to_owned())
                .spawn_scoped(s, run);
        }
        run();
    });
}

/// Runs `a` and `b` at once: `a` on the calling thread, `b` on a scoped thread (named
/// `strata-worker`). When the system refuses the thread, the calling thread runs `b` after
/// `a`. Each closure hands its result back through what it captures.
pub(crate) fn join(a: impl FnOnce() + Send, b: impl FnOnce() + Send) {
    let b = Mutex::new(Some(b));
    let run_b = || {
        let job = b.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(job) = job {
            job();
        }
    };
    std::thread::scope(|s| {
        let _ = std::thread::Builder::new()
            .name("strata-worker".to_owned())
            .spawn_scoped(s, run_b);
        a();
        // Nothing left when the helper took it.
        run_b();
    });
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
}
