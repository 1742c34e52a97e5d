//! x86-64 style 4-level radix page tables (PGD → PUD → PMD → PTE, 512 entries a level).
//!
//! Models the structure the hardware walker and the kernel's `walk_page_range` see: a leaf
//! PTE table covers 2 MiB (one PMD entry), so MG-LRU's per-PMD Bloom filter and
//! look-around windows act on the same groups of pages as in Linux. Virtual page numbers
//! must be below 2^36 (48-bit virtual addresses with 4 KiB pages).
//!
//! Left out: huge PMD/PUD leaves (THP) and 5-level tables; they come with the translation layer.
//!
//! PTE bits follow x86 where x86 defines them (present bit 0, accessed bit 5, dirty bit 6,
//! frame number from bit 12). A non-present PTE is a software entry as in Linux: a swap entry
//! (`PTE_SWAP`, slot number from bit 12) or a file page that was dropped (`PTE_FILE_GONE`,
//! its workingset shadow from bit 12). An all-zero PTE was never touched.

pub const LEVEL_BITS: u32 = 9;
pub const ENTRIES: usize = 1 << LEVEL_BITS;
/// Largest virtual page number + 1 (48-bit virtual addresses, 4 KiB pages).
pub const VPN_LIMIT: u64 = 1 << (4 * LEVEL_BITS);

pub const PTE_PRESENT: u64 = 1 << 0;
pub const PTE_ACCESSED: u64 = 1 << 5;
pub const PTE_DIRTY: u64 = 1 << 6;
/// Software bit: non-present entry holding a swap slot.
pub const PTE_SWAP: u64 = 1 << 9;
/// Software bit: non-present entry of a file page evicted from memory (shadow in the payload).
pub const PTE_FILE_GONE: u64 = 1 << 10;
pub const PTE_PAYLOAD_SHIFT: u32 = 12;

#[inline]
pub const fn pte_frame(pte: u64) -> u32 {
    (pte >> PTE_PAYLOAD_SHIFT) as u32
}
#[inline]
pub const fn pte_payload(pte: u64) -> u64 {
    pte >> PTE_PAYLOAD_SHIFT
}
#[inline]
pub const fn make_present(frame: u32) -> u64 {
    ((frame as u64) << PTE_PAYLOAD_SHIFT) | PTE_PRESENT
}

const NONE: u32 = u32::MAX;

/// Index of a PTE table (one PMD entry's worth of pages) inside a [`PageTable`].
pub type LeafId = u32;

/// A 4-level radix page table of one address space.
#[derive(Clone, Debug)]
pub struct PageTable {
    /// PGD, PUD and PMD tables; entries index `upper` (PGD/PUD) or `leaves` (PMD).
    upper: Vec<Box<[u32; ENTRIES]>>,
    /// PTE tables.
    leaves: Vec<Box<[u64; ENTRIES]>>,
    /// First virtual page number covered by each leaf.
    leaf_base: Vec<u64>,
    /// The PMD entry's accessed bit, set by the hardware walker on every walk through it
    /// (used by MG-LRU's 0x4 "non-leaf PMD A-bit" mode).
    pmd_young: Vec<bool>,
    /// One-entry walk cache of the last leaf (like a page-walk cache hit on the PMD level).
    last_key: u64,
    last_leaf: u32,
}

impl Default for PageTable {
    fn default() -> Self {
        Self::new()
    }
}

impl PageTable {
    pub fn new() -> Self {
        PageTable {
            upper: vec![Box::new([NONE; ENTRIES])],
            leaves: Vec::new(),
            leaf_base: Vec::new(),
            pmd_young: Vec::new(),
            last_key: u64::MAX,
            last_leaf: 0,
        }
    }

    #[inline]
    fn child(&mut self, table: u32, idx: usize) -> u32 {
        let c = self.upper[table as usize][idx];
        if c != NONE {
            return c;
        }
        let n = self.upper.len() as u32;
        self.upper.push(Box::new([NONE; ENTRIES]));
        self.upper[table as usize][idx] = n;
        n
    }

    /// The leaf (PTE table) covering `vpn`, allocating the path if needed.
    #[inline]
    pub fn leaf_for(&mut self, vpn: u64) -> LeafId {
        debug_assert!(vpn < VPN_LIMIT);
        let key = vpn >> LEVEL_BITS;
        if key == self.last_key {
            return self.last_leaf;
        }
        let i4 = ((vpn >> 27) & 511) as usize;
        let i3 = ((vpn >> 18) & 511) as usize;
        let i2 = ((vpn >> 9) & 511) as usize;
        let pud = self.child(0, i4);
        let pmd = self.child(pud, i3);
        let mut leaf = self.upper[pmd as usize][i2];
        if leaf == NONE {
            leaf = self.leaves.len() as u32;
            self.leaves.push(Box::new([0; ENTRIES]));
            self.leaf_base.push(key << LEVEL_BITS);
            self.pmd_young.push(false);
            self.upper[pmd as usize][i2] = leaf;
        }
        self.last_key = key;
        self.last_leaf = leaf;
        leaf
    }

    /// The leaf covering `vpn` if its tables exist (no allocation).
    pub fn find_leaf(&self, vpn: u64) -> Option<LeafId> {
        if vpn >= VPN_LIMIT {
            return None;
        }
        let mut t = 0u32;
        for shift in [27u32, 18] {
            t = self.upper[t as usize][((vpn >> shift) & 511) as usize];
            if t == NONE {
                return None;
            }
        }
        let leaf = self.upper[t as usize][((vpn >> 9) & 511) as usize];
        (leaf != NONE).then_some(leaf)
    }

    /// A hardware walk to `vpn`'s PTE: sets the PMD's accessed bit on the way.
    #[inline]
    pub fn walk(&mut self, vpn: u64) -> &mut u64 {
        let leaf = self.leaf_for(vpn) as usize;
        // SAFETY-free: indices come from leaf_for.
        self.pmd_young[leaf] = true;
        &mut self.leaves[leaf][(vpn & 511) as usize]
    }

    /// The PTE of `vpn` without touching accessed bits (a software lookup, e.g. rmap).
    #[inline]
    pub fn pte_mut(&mut self, vpn: u64) -> &mut u64 {
        let leaf = self.leaf_for(vpn) as usize;
        &mut self.leaves[leaf][(vpn & 511) as usize]
    }

    pub fn pte(&self, vpn: u64) -> u64 {
        match self.find_leaf(vpn) {
            Some(l) => self.leaves[l as usize][(vpn & 511) as usize],
            None => 0,
        }
    }

    pub fn n_leaves(&self) -> usize {
        self.leaves.len()
    }
    pub fn leaf(&self, id: LeafId) -> &[u64; ENTRIES] {
        &self.leaves[id as usize]
    }
    pub fn leaf_mut(&mut self, id: LeafId) -> &mut [u64; ENTRIES] {
        &mut self.leaves[id as usize]
    }
    /// First virtual page number of a leaf; the leaf's PMD entry is `leaf_base >> 9`.
    pub fn leaf_base(&self, id: LeafId) -> u64 {
        self.leaf_base[id as usize]
    }
    /// Test and clear the non-leaf PMD accessed bit of a leaf.
    pub fn test_clear_pmd_young(&mut self, id: LeafId) -> bool {
        std::mem::replace(&mut self.pmd_young[id as usize], false)
    }
    pub fn pmd_young(&self, id: LeafId) -> bool {
        self.pmd_young[id as usize]
    }

    /// Leaves in ascending virtual-address order, as `walk_page_range` visits them.
    pub fn leaves_in_order(&self) -> Vec<LeafId> {
        let mut out = Vec::with_capacity(self.leaves.len());
        let pgd = &self.upper[0];
        for &pud in pgd.iter() {
            if pud == NONE {
                continue;
            }
            for &pmd in self.upper[pud as usize].iter() {
                if pmd == NONE {
                    continue;
                }
                for &leaf in self.upper[pmd as usize].iter() {
                    if leaf != NONE {
                        out.push(leaf);
                    }
                }
            }
        }
        out
    }

    /// Bytes held by the tables (each table is a 4 KiB page, as in the kernel).
    pub fn table_bytes(&self) -> usize {
        (self.upper.len() + self.leaves.len()) * 4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_sets_bits_and_levels() {
        let mut pt = PageTable::new();
        *pt.walk(0x1234_5678) = make_present(7) | PTE_ACCESSED;
        assert_eq!(pte_frame(pt.pte(0x1234_5678)), 7);
        assert_eq!(pt.pte(0x1234_5679), 0);
        // One path: PGD + PUD + PMD tables, one leaf.
        assert_eq!(pt.table_bytes(), 4 * 4096);
        let l = pt.find_leaf(0x1234_5678).unwrap();
        assert_eq!(pt.leaf_base(l), 0x1234_5600);
        assert!(pt.test_clear_pmd_young(l));
        assert!(!pt.pmd_young(l));
        // Same PMD, no new tables; a page 512 further needs a new leaf only.
        pt.walk(0x1234_5600);
        assert_eq!(pt.table_bytes(), 4 * 4096);
        pt.walk(0x1234_5800);
        assert_eq!(pt.table_bytes(), 5 * 4096);
        assert_eq!(pt.find_leaf(VPN_LIMIT), None);
    }

    #[test]
    fn leaves_in_address_order() {
        let mut pt = PageTable::new();
        for vpn in [5u64 << 27, 3, 1 << 18, 700] {
            pt.walk(vpn);
        }
        let bases: Vec<u64> = pt
            .leaves_in_order()
            .iter()
            .map(|&l| pt.leaf_base(l))
            .collect();
        assert_eq!(bases, vec![0, 512, 1 << 18, 5 << 27]);
    }
}
