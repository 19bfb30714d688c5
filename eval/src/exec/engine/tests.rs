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
