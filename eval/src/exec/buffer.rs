//! Growing buffers: where a relation's tuples (of a relation of two columns or fewer), a
//! run's keys and a relation's derivations find room to grow, and which threads fault
//! their new pages in.
//!
//! Two costs show on the machine of `benches/RESULTS.md`. A fresh page costs its first
//! writer a fault, about 2 us a 4 KiB page: a round's 39 MB of keys is 19 ms of faults on
//! one thread. And a vector that cannot grow where it is moves: the allocator's
//! `realloc` copies it on one thread into a new buffer, faulting every page of it (the
//! closure's tuples moving from 9.7 to 19 MB: 7 ms), unless the buffer is one the
//! allocator mapped on its own (64-bit glibc normally maps an allocation of [`MAPPED`]
//! bytes or more), which grows by remapping its pages, with no copy.

use std::mem::MaybeUninit;

/// Glibc's largest mmap threshold on 64-bit targets: an allocation of at least this many
/// bytes normally gets mapped pages of its own, grows by remapping them (no copy), and
/// its untouched pages are never resident.
const MAPPED: usize = 32 << 20;

/// A buffer whose doubled capacity reaches this many bytes (one holding 512 KiB or more)
/// reserves at least [`MAPPED`] bytes of addresses.
const LARGE: usize = 1 << 20;

/// Whether large buffers reserve [`MAPPED`] bytes: on 64-bit targets, where addresses are
/// plentiful (on 32-bit ones glibc's threshold is far lower, and the addresses are few).
const RESERVE_MAPPED: bool = cfg!(target_pointer_width = "64");

/// Makes room in `v` for `n` more items: as `Vec::reserve` does (at least doubling), except
/// that a buffer whose doubled capacity reaches [`LARGE`] bytes reserves at least
/// [`MAPPED`]. Such a buffer is then normally mapped on its own, so it grows without a
/// copy (its first move out of the heap, at most 1 MB, still copies), the addresses
/// reserved past what it holds cost no memory (pages are resident once written), and the
/// buffer it leaves is not left behind as a hole in the allocator's heap. The closure's
/// tuples and runs moved 6 times a run before, 24 ms of copying and faults; peak resident
/// memory went from 116 to 86 MB on same generation (at one thread and at two), 166 to
/// 138 MB on the chain, 527 to 489 MB on points-to with witnesses at one thread. Where
/// the system refuses the reservation (overcommit disabled, an address-space limit), it
/// falls back to `Vec::reserve`.
///
/// The tuples of a relation of two columns or fewer, the keys of a run, and a relation's
/// derivations and premise words grow this way, at every thread count.
pub(crate) fn make_room<T>(v: &mut Vec<T>, n: usize) {
    let len = v.len();
    if v.capacity() - len >= n {
        return;
    }
    let size = size_of::<T>().max(1);
    let mut want = v.capacity().saturating_mul(2).max(len + n);
    if RESERVE_MAPPED && want.saturating_mul(size) >= LARGE {
        want = want.max(MAPPED / size);
    }
    if v.try_reserve_exact(want - len).is_err() {
        v.reserve(n);
    }
}

/// Whether growing `v` by `n` items would move it by copying: it is out of room, and small
/// enough to be in the allocator's heap rather than a mapping of its own (a mapping grows
/// by remapping its pages). A caller about to rewrite every item anyway can then write
/// them into a new buffer instead ([`crate::exec::sorted::Run::merge`]).
pub(crate) fn would_move<T>(v: &Vec<T>, n: usize) -> bool {
    v.capacity() - v.len() < n && v.capacity().saturating_mul(size_of::<T>()) < MAPPED
}

/// Grows `v` by `n` default items ([`make_room`]), their pages first written on two threads
/// (each thread takes the faults of its half); the `resize` that follows writes the items
/// again, over pages already there.
pub(crate) fn grow<T: Copy + Default + Send>(v: &mut Vec<T>, n: usize) {
    let len = v.len();
    make_room(v, n);
    if let Some(spare) = v.spare_capacity_mut().get_mut(..n) {
        let (x, y) = spare.split_at_mut(n / 2);
        let touch = |part: &mut [MaybeUninit<T>]| {
            for slot in part {
                slot.write(T::default());
            }
        };
        crate::exec::pool::join(|| touch(x), || touch(y));
    }
    v.resize(len + n, T::default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_grows_by_default_items_and_keeps_what_it_held() {
        let mut v: Vec<u64> = (0..1000).collect();
        grow(&mut v, 3000);
        assert_eq!(v.len(), 4000);
        assert!(v[..1000].iter().copied().eq(0..1000));
        assert!(v[1000..].iter().all(|&x| x == 0));
        let mut empty: Vec<u32> = Vec::new();
        grow(&mut empty, 0);
        assert!(empty.is_empty());
        grow(&mut empty, 1);
        assert_eq!(empty, [0]);
    }

    #[test]
    fn a_large_buffer_reserves_a_mapped_buffer_a_small_one_doubles() {
        let full = |items: usize| -> Vec<u64> {
            let mut v = Vec::with_capacity(items);
            v.resize(items, 7);
            v
        };
        let mut small = full(16);
        make_room(&mut small, 1);
        assert_eq!(small.capacity(), 32);
        make_room(&mut small, 1);
        assert_eq!(small.capacity(), 32, "room enough: no change");
        // Just under the threshold: doubled, 1 MiB less 16 bytes.
        let mut under = full(LARGE / 16 - 1);
        make_room(&mut under, 1);
        assert_eq!(under.capacity(), LARGE / 8 - 2);
        // At it (512 KiB held, doubled to 1 MiB): the mapped size, on 64-bit targets.
        let mut at = full(LARGE / 16);
        make_room(&mut at, 1);
        let mapped = if RESERVE_MAPPED {
            MAPPED / 8
        } else {
            LARGE / 8
        };
        assert_eq!(at.capacity(), mapped);
        assert!(at.iter().all(|&x| x == 7));
        let mut huge: Vec<u8> = vec![1; MAPPED];
        make_room(&mut huge, 1);
        assert_eq!(huge.capacity(), 2 * MAPPED, "past MAPPED it doubles");
    }
}
