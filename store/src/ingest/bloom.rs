//! The Bloom filter a batch keeps of the tuples it wrote into relations that were empty when
//! it began, so that later flushes need not look those tuples up in the store.

/// A fixed-size Bloom filter of (relation, tuple): a "no" is certain.
pub(super) struct Bloom {
    bits: Vec<u64>,
}

impl Bloom {
    const BITS: usize = 1 << 27;

    pub(super) fn new() -> Bloom {
        Bloom {
            bits: vec![0; Self::BITS / 64],
        }
    }

    fn hashes(rel: u32, tuple: &[u32]) -> [usize; 2] {
        use std::hash::BuildHasher;
        let h = rustc_hash::FxBuildHasher.hash_one((rel, tuple));
        let h2 = h.rotate_left(32) ^ 0x9e37_79b9_7f4a_7c15;
        [(h as usize) % Self::BITS, (h2 as usize) % Self::BITS]
    }

    pub(super) fn insert(&mut self, rel: u32, tuple: &[u32]) {
        for i in Self::hashes(rel, tuple) {
            self.bits[i / 64] |= 1 << (i % 64);
        }
    }

    pub(super) fn may_contain(&self, rel: u32, tuple: &[u32]) -> bool {
        Self::hashes(rel, tuple)
            .iter()
            .all(|&i| self.bits[i / 64] & (1 << (i % 64)) != 0)
    }
}
