//! Giving freed memory back to the system while serving. glibc's allocator gives each busy
//! thread an arena of its own (up to 8 per core) and keeps what an arena freed for its next
//! use, so after a burst of calls (a runaway query's intermediate results, a flood of
//! sessions) a server's resident memory stays near its peak although nothing holds it. The
//! server caps the arenas at [`max_arenas`] before its threads start, and every
//! [`TRIM_INTERVAL`] a thread asks glibc to return free pages (`malloc_trim`); a call
//! cancelled gives its memory back at once ([`give_back`]), not at the next interval.
//! Measured by
//! the load test (`cli/tests/load.rs`, debug build): resident memory after the load 134 MiB
//! without either (baseline 35), 99 with trimming alone, 52 to 63 with both. Elsewhere than
//! glibc this does nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often free memory is given back.
pub const TRIM_INTERVAL: Duration = Duration::from_secs(5);

/// How often the thread looks at its stop flag.
const POLL: Duration = Duration::from_millis(100);

/// How many [`Trimmer`]s run in this process: while one does, the process is a server
/// that gives freed memory back.
static TRIMMERS: AtomicUsize = AtomicUsize::new(0);

/// Gives the free pages back to the system now, when this process is a server that does
/// so (a trimmer thread runs). Called on the thread of a cancelled call once its evaluation
/// has dropped what it held: a closure of 36M pairs frees about a gigabyte, and returning
/// it costs 15 to 35 ms of system time, which the periodic trim spent up to
/// `TRIM_INTERVAL` later (the late CPU time `relay-bench` saw after a cancel).
pub fn give_back() {
    if TRIMMERS.load(Ordering::SeqCst) > 0 {
        trim();
    }
}

/// The thread giving memory back; dropping it stops the thread.
pub(super) struct Trimmer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The most allocator arenas: the cores, between 2 and 4.
pub(super) fn max_arenas() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4))
}

impl Trimmer {
    /// Caps the allocator's arenas (call it before the server's threads start) and starts
    /// the thread (none where trimming does nothing, or when it cannot start).
    pub(super) fn start() -> Trimmer {
        cap_arenas(max_arenas());
        TRIMMERS.fetch_add(1, Ordering::SeqCst);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = if cfg!(all(target_os = "linux", target_env = "gnu")) {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("strata-trim".to_owned())
                .spawn(move || {
                    let mut waited = Duration::ZERO;
                    while !stop.load(Ordering::SeqCst) {
                        std::thread::sleep(POLL);
                        waited += POLL;
                        if waited >= TRIM_INTERVAL {
                            waited = Duration::ZERO;
                            trim();
                        }
                    }
                })
                .ok()
        } else {
            None
        };
        Trimmer { stop, thread }
    }
}

impl Drop for Trimmer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        TRIMMERS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Asks glibc to return the free pages of every arena to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn trim() {
    // SAFETY: `malloc_trim` takes no pointer and touches only glibc's own heaps, under their
    // locks; it may be called from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

/// Caps glibc's allocator at `n` arenas.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn cap_arenas(n: usize) {
    let n = libc::c_int::try_from(n).unwrap_or(libc::c_int::MAX);
    // SAFETY: `mallopt` takes no pointer and only sets a parameter of glibc's allocator,
    // under its lock; arenas already made are kept, later threads share the capped ones.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, n);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn cap_arenas(_n: usize) {}
