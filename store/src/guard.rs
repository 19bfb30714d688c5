//! The last line of defence against damaged files: redb panics on some damaged pages.
//!
//! redb verifies its pages' checksums only in `Database::check_integrity` (which `strata
//! check` runs, see [`crate::OpenOptions::verify`]); its ordinary read paths parse a damaged
//! page as it is, and some of them stop at an `unreachable!()`, an index out of bounds or an
//! "Invalid page type" panic (redb issue 1334). redb offers no way to have a read return
//! `StorageError::Corrupted` instead, so as a last resort every call into redb the store makes
//! on behalf of an operation runs under [`guarded`], which catches such a panic and turns it
//! into [`Damage::Panic`] naming the file. The closures it runs call no code of the store's
//! callers (visitors run outside them), so a panic it catches is redb's, never a caller's
//! bug. A panic caught here is not printed: the panic hook is wrapped once to stay silent on
//! a thread inside `guarded`, and to run the previous hook everywhere else.
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

static HOOK: Once = Once::new();

/// Runs `f`, turning a panic inside it into `on_panic(Damage::Panic(..))`.
pub(crate) fn guarded<T, E>(
    f: impl FnOnce() -> Result<T, E>,
    on_panic: impl FnOnce(Damage) -> E,
) -> Result<T, E> {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if DEPTH.with(Cell::get) == 0 {
                previous(info);
            }
        }));
    });
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

/// [`guarded`] for the store's internal [`Fault`](crate::error::Fault).
pub(crate) fn faults<T>(
    f: impl FnOnce() -> Result<T, crate::error::Fault>,
) -> Result<T, crate::error::Fault> {
    guarded(f, crate::error::Fault::Damaged)
}
