//! The evaluator's unit tests.

use super::*;

/// Regression: the split points were the quantiles of the largest task's run; each
/// task's keys lie in a narrow range of their own, so one range of four got 83% of
/// same generation's first round (380,000 of 458,000 keys) and two threads merged
/// no faster than one.
#[test]
fn split_points_balance_tasks_that_cover_ranges_of_their_own() {
    // Sixteen tasks, each over keys of its own; the largest over the lowest.
    let runs: Vec<Vec<u64>> = (0..16u64)
        .map(|t| {
            let n = if t == 0 { 4_000 } else { 1_000 };
            (0..n).map(|i| t << 32 | i).collect()
        })
        .collect();
    let refs: Vec<(usize, &[u64])> = runs.iter().map(|r| &r[..]).enumerate().collect();
    let total: usize = runs.iter().map(Vec::len).sum();
    let bounds = split_points(&refs, &|&k: &u64| (k, ()), total, 4);
    assert_eq!(bounds.len(), 3);
    let mut lo = 0;
    for hi in bounds.iter().copied().chain([u64::MAX]) {
        let n = runs
            .iter()
            .flatten()
            .filter(|&&k| k >= lo && k < hi)
            .count();
        assert!(
            n * 8 >= total && n * 2 <= total,
            "{n} of {total} keys in {lo}..{hi}"
        );
        lo = hi;
    }
}

/// Issue 28: a round's merge of more than [`PIECE_KEYS`] keys is cut into pieces however
/// many threads there are, each checking the cancellation token first, so a cancelled call
/// waits for the pieces under way, not for the whole merge (up to 183 ms before). The
/// pieces hold what one merge would: every key once, in order.
#[test]
fn issue_28_a_large_merge_is_cut_into_pieces_a_cancel_stops_between() {
    // Four tasks' sorted runs over overlapping keys: 3 * PIECE_KEYS keys, a third repeated.
    let runs: Vec<Vec<u64>> = (0..4u64)
        .map(|t| {
            (0..(3 * PIECE_KEYS as u64 / 4))
                .map(|i| (i * 4 + t) / 3 * 5)
                .collect::<Vec<u64>>()
        })
        .map(|mut r| {
            r.dedup();
            r
        })
        .collect();
    let refs: Vec<(usize, &[u64])> = runs.iter().map(|r| &r[..]).enumerate().collect();
    let mut expected: Vec<u64> = runs.iter().flatten().copied().collect();
    expected.sort_unstable();
    expected.dedup();
    let budget =
        |cancel: &Cancel| Budget::new(None, None, None, cancel.clone(), None, Progress::new());
    for threads in [1, 2] {
        let live = Cancel::new();
        let pieces = new_keys(
            &refs,
            |&k| (k, 0),
            threads,
            None,
            &budget(&live),
            |k, _| k,
            |&k| k,
        );
        assert!(
            pieces.len() >= 3,
            "{} pieces at {threads} threads",
            pieces.len()
        );
        assert_eq!(concat(pieces), expected, "{threads} threads");
        // Cancelled before it starts: no piece is merged.
        let cancelled = Cancel::new();
        cancelled.cancel();
        let pieces = new_keys(
            &refs,
            |&k| (k, 0),
            threads,
            None,
            &budget(&cancelled),
            |k, _| k,
            |&k| k,
        );
        assert!(pieces.iter().all(Vec::is_empty), "{threads} threads");
    }
}
