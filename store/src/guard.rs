//! The last line of defence against damaged files: redb panics on some damaged pages.
//!
//! redb verifies its pages' checksums only in `Database::check_integrity` (which `strata
//! check` runs, see [`crate::OpenOptions::verify`]); its ordinary read paths parse a damaged
//! page as it is, and some of them stop at an `unreachable!()`, an index out of bounds or an
//! "Invalid page type" panic (redb issue 1334). redb offers no way to have a read return
//! `StorageError::Corrupted` instead, so as a last resort every call into redb the store makes
//! on behalf of an operation runs under [`guarded`], which catches such a panic and turns it
//! into [`Damage::Panic`] naming the file; closing a file (its drop, where redb commits its
//! allocator state) runs under it too, and a close that panics leaves the file unstamped, so the
//! next open verifies it. The closures it runs call no code of the store's
//! callers (visitors run outside them), so a panic it catches is redb's, never a caller's
//! bug. The panic's message is kept in the [`Damage::Panic`] error, which is what callers act
//! on. The store installs no panic hook of its own accord: until the process asks for
//! [`quiet_caught_panics`], a panic caught here is also reported by whatever hook the process
//! has (Rust's default prints it to standard error) before it is caught.
//!
//! Damage that makes redb allocate without bound still aborts the process; that is redb's
//! to fix.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use crate::error::Damage;

thread_local! {
    /// How many [`guarded`] calls this thread is inside.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

static QUIET: Once = Once::new();

/// Stops the process's panic hook from reporting the panics the store catches (redb's, on a
/// damaged file, which the store returns as [`Damage::Panic`] errors): wraps the hook
/// installed now so that it is skipped on a thread inside a store call into redb, and runs
/// as before everywhere else. A process-wide choice, so the store never makes it itself: a
/// program (the `strata` binary) calls this once at startup, after installing any hook of its
/// own. Calling it again does nothing.
pub fn quiet_caught_panics() {
    QUIET.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if DEPTH.with(Cell::get) == 0 {
                previous(info);
            }
        }));
    });
}

/// Runs `f`, turning a panic inside it into `on_panic(Damage::Panic(..))`.
pub(crate) fn guarded<T, E>(
    f: impl FnOnce() -> Result<T, E>,
    on_panic: impl FnOnce(Damage) -> E,
) -> Result<T, E> {
    DEPTH.with(|d| d.set(d.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    DEPTH.with(|d| d.set(d.get() - 1));
    match result {
        Ok(r) => r,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_owned());
            Err(on_panic(Damage::Panic(message)))
        }
    }
}

/// Runs `f`, which reads a file of the database directory through a library that panics on
/// some malformed input (redb here; the find index's `fst` map in the application), turning a
/// panic into its message. Such a panic is caught as the store's own are, and
/// [`quiet_caught_panics`] keeps it from being reported too. `f` must call nothing of its
/// caller's that could panic for a bug of its own.
///
/// # Errors
///
/// [`Damage::Panic`](crate::Damage::Panic) with the panic's message when `f` panicked.
pub fn catch_damage<T>(f: impl FnOnce() -> T) -> Result<T, crate::Damage> {
    guarded(|| Ok(f()), |damage| damage)
}

/// [`guarded`] for the store's internal [`Fault`](crate::error::Fault).
pub(crate) fn faults<T>(
    f: impl FnOnce() -> Result<T, crate::error::Fault>,
) -> Result<T, crate::error::Fault> {
    guarded(f, crate::error::Fault::Damaged)
}
