//! MG-LRU's pair of Bloom filters over PMD entries (mm/vmscan.c "Bloom filters":
//! `get_item_key`, `test_bloom_filter`, `update_bloom_filter`, `reset_bloom_filter`).
//!
//! Two filters of m = 2^15 bits, k = 2, double-buffered by `seq % 2`. The page-table walk of
//! generation `max_seq` tests `filter[max_seq]` and inserts into `filter[max_seq + 1]`, so a
//! PMD entry that stops having enough young PTEs drops out after one generation.
//! A filter that was never allocated passes every test and ignores insertions, as in the
//! kernel (the first walk runs before any filter exists).
//!
//! Departure: the kernel hashes the kernel virtual address of the PMD entry
//! (`hash_ptr(pmd + i, 30)`); here the key is the PMD number (`leaf_base >> 9`), hashed with
//! the same multiplicative `hash_64` (GOLDEN_RATIO_64, top 30 bits), split into two 15-bit
//! indices. False-positive rates are the same; which PMDs collide differs.

/// `BLOOM_FILTER_SHIFT`.
pub const BLOOM_FILTER_SHIFT: u32 = 15;
/// `NR_BLOOM_FILTERS`.
pub const NR_BLOOM_FILTERS: usize = 2;
const WORDS: usize = (1 << BLOOM_FILTER_SHIFT) / 64;
/// `GOLDEN_RATIO_64` from include/linux/hash.h.
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

#[derive(Clone, Debug)]
pub struct BloomFilters {
    bits: [Vec<u64>; NR_BLOOM_FILTERS],
    allocated: [bool; NR_BLOOM_FILTERS],
}

impl Default for BloomFilters {
    fn default() -> Self {
        BloomFilters {
            bits: [Vec::new(), Vec::new()],
            allocated: [false; NR_BLOOM_FILTERS],
        }
    }
}

/// `get_item_key`: one 30-bit hash split into two 15-bit bit indices.
#[inline]
pub fn item_key(pmd: u64) -> [usize; 2] {
    let hash = (pmd.wrapping_mul(GOLDEN_RATIO_64) >> (64 - 2 * BLOOM_FILTER_SHIFT)) as usize;
    let mask = (1usize << BLOOM_FILTER_SHIFT) - 1;
    [hash & mask, hash >> BLOOM_FILTER_SHIFT]
}

#[inline]
fn filter_gen_from_seq(seq: u64) -> usize {
    (seq % NR_BLOOM_FILTERS as u64) as usize
}

impl BloomFilters {
    /// `test_bloom_filter`: true when both bits are set, or when the filter does not exist.
    #[inline]
    pub fn test(&self, seq: u64, pmd: u64) -> bool {
        let g = filter_gen_from_seq(seq);
        if !self.allocated[g] {
            return true;
        }
        let f = &self.bits[g];
        item_key(pmd)
            .iter()
            .all(|&k| f[k / 64] & (1u64 << (k % 64)) != 0)
    }

    /// `update_bloom_filter`: a no-op on a filter that does not exist.
    #[inline]
    pub fn update(&mut self, seq: u64, pmd: u64) {
        let g = filter_gen_from_seq(seq);
        if !self.allocated[g] {
            return;
        }
        let f = &mut self.bits[g];
        for k in item_key(pmd) {
            f[k / 64] |= 1u64 << (k % 64);
        }
    }

    /// `reset_bloom_filter`: clear the filter of `seq`, allocating it on first use.
    pub fn reset(&mut self, seq: u64) {
        let g = filter_gen_from_seq(seq);
        if self.allocated[g] {
            self.bits[g].iter_mut().for_each(|w| *w = 0);
        } else {
            self.bits[g] = vec![0; WORDS];
            self.allocated[g] = true;
        }
    }

    pub fn is_allocated(&self, seq: u64) -> bool {
        self.allocated[filter_gen_from_seq(seq)]
    }

    /// Bits set in the filter of `seq` (for tests and counters).
    pub fn popcount(&self, seq: u64) -> u32 {
        self.bits[filter_gen_from_seq(seq)]
            .iter()
            .map(|w| w.count_ones())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unallocated_passes_everything_and_ignores_updates() {
        let mut b = BloomFilters::default();
        assert!(b.test(3, 12345));
        b.update(3, 12345);
        assert!(!b.is_allocated(3));
        b.reset(4); // allocates filter 0
        assert!(b.is_allocated(4) && b.is_allocated(6) && !b.is_allocated(5));
        assert!(!b.test(4, 12345));
        b.update(4, 12345);
        assert!(b.test(6, 12345), "same filter for seq 4 and 6");
        assert!(b.test(5, 999), "filter 1 still unallocated");
        assert_eq!(
            b.popcount(4),
            2 - (item_key(12345)[0] == item_key(12345)[1]) as u32
        );
        b.reset(4);
        assert_eq!(b.popcount(4), 0);
    }

    #[test]
    fn key_is_hash64_top_30_bits() {
        // hash_64(1, 30) = GOLDEN_RATIO_64 >> 34 = 0x18722191 (hand-computed);
        // low 15 bits 0x2191, high 15 bits 0x30e4.
        assert_eq!(GOLDEN_RATIO_64 >> 34, 0x1872_2191);
        assert_eq!(item_key(1), [0x2191, 0x30e4]);
    }
}
