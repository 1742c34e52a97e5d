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
/// Software bit: non-present entry of an anonymous page reclaim dropped because it was a
/// named copy of a file block ([`crate::engine::Machine::named`]: a private file mapping
/// not yet written), its workingset shadow from bit 12.
pub const PTE_NAMED_GONE: u64 = 1 << 11;
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
/// Index of one PTE among all PTEs of a [`PageTable`] (`leaf * 512 + vpn % 512`): the reverse
/// map keeps it per frame so rmap checks reach the PTE without a walk.
pub type PteIndex = u32;

/// Entries of the direct-mapped cache from PMD number (`vpn >> 9`) to leaf: the simulator's
/// stand-in for the hardware page-walk cache, so the common walk costs one probe, not three
/// upper-level loads. It changes speed only, never results.
const PWC_ENTRIES: usize = 4096;

/// A 4-level radix page table of one address space.
///
/// Tables are kept in two flat arenas (upper levels and PTE tables) of 512-entry tables.
#[derive(Clone, Debug)]
pub struct PageTable {
    /// PGD, PUD and PMD tables, 512 entries each; entries index tables of the next level
    /// (`upper` for PGD/PUD, `leaves` for PMD); table 0 is the PGD.
    upper: Vec<u32>,
    /// PTE tables, 512 entries each.
    leaves: Vec<u64>,
    /// First virtual page number covered by each leaf.
    leaf_base: Vec<u64>,
    /// The PMD entry's accessed bit, set by the hardware walker on every walk through it
    /// (used by MG-LRU's 0x4 "non-leaf PMD A-bit" mode).
    pmd_young: Vec<bool>,
    /// Direct-mapped walk cache: (PMD number + 1, leaf); 0 = empty.
    pwc: Box<[(u64, u32)]>,
}

impl Default for PageTable {
    fn default() -> Self {
        Self::new()
    }
}

impl PageTable {
    pub fn new() -> Self {
        PageTable {
            upper: vec![NONE; ENTRIES],
            leaves: Vec::new(),
            leaf_base: Vec::new(),
            pmd_young: Vec::new(),
            pwc: vec![(0u64, 0u32); PWC_ENTRIES].into_boxed_slice(),
        }
    }

    #[inline]
    fn child(&mut self, table: u32, idx: usize) -> u32 {
        let at = table as usize * ENTRIES + idx;
        let c = self.upper[at];
        if c != NONE {
            return c;
        }
        let n = (self.upper.len() / ENTRIES) as u32;
        self.upper.resize(self.upper.len() + ENTRIES, NONE);
        self.upper[at] = n;
        n
    }

    /// The leaf (PTE table) covering `vpn`, allocating the path if needed.
    #[inline]
    pub fn leaf_for(&mut self, vpn: u64) -> LeafId {
        debug_assert!(vpn < VPN_LIMIT);
        let key = vpn >> LEVEL_BITS;
        let slot = (key as usize) & (PWC_ENTRIES - 1);
        let (k, leaf) = self.pwc[slot];
        if k == key + 1 {
            return leaf;
        }
        let leaf = self.leaf_slow(vpn);
        self.pwc[slot] = (key + 1, leaf);
        leaf
    }

    #[cold]
    #[inline(never)]
    fn leaf_slow(&mut self, vpn: u64) -> LeafId {
        let i4 = ((vpn >> 27) & 511) as usize;
        let i3 = ((vpn >> 18) & 511) as usize;
        let i2 = ((vpn >> 9) & 511) as usize;
        let pud = self.child(0, i4);
        let pmd = self.child(pud, i3);
        let at = pmd as usize * ENTRIES + i2;
        let mut leaf = self.upper[at];
        if leaf == NONE {
            leaf = self.leaf_base.len() as u32;
            crate::hint::huge_extend(&mut self.leaves, ENTRIES, 0);
            self.leaf_base.push((vpn >> LEVEL_BITS) << LEVEL_BITS);
            self.pmd_young.push(false);
            self.upper[at] = leaf;
        }
        leaf
    }

    /// The leaf covering `vpn` if its tables exist (no allocation).
    pub fn find_leaf(&self, vpn: u64) -> Option<LeafId> {
        if vpn >= VPN_LIMIT {
            return None;
        }
        let mut t = 0u32;
        for shift in [27u32, 18, 9] {
            t = self.upper[t as usize * ENTRIES + ((vpn >> shift) & 511) as usize];
            if t == NONE {
                return None;
            }
        }
        Some(t)
    }

    /// The global index of `vpn`'s PTE if its tables exist (no allocation, no state change).
    pub fn find_index(&self, vpn: u64) -> Option<PteIndex> {
        self.find_leaf(vpn)
            .map(|leaf| leaf * ENTRIES as u32 + (vpn & 511) as u32)
    }

    /// The global index of `vpn`'s PTE if the walk cache knows its leaf (no allocation, no
    /// state change): used to prefetch PTEs of accesses further down the trace.
    #[inline]
    pub fn peek_index(&self, vpn: u64) -> Option<PteIndex> {
        let key = vpn >> LEVEL_BITS;
        let (k, leaf) = self.pwc[(key as usize) & (PWC_ENTRIES - 1)];
        (k == key + 1).then(|| leaf * ENTRIES as u32 + (vpn & 511) as u32)
    }

    /// Ask the CPU to bring the PTE at `idx` into cache (simulator speed only).
    #[inline]
    pub fn prefetch(&self, idx: PteIndex) {
        crate::hint::prefetch(self.leaves.as_ptr().wrapping_add(idx as usize));
    }

    /// The global index of `vpn`'s PTE, allocating tables if needed (no accessed bits set).
    #[inline]
    pub fn pte_index(&mut self, vpn: u64) -> PteIndex {
        self.leaf_for(vpn) * ENTRIES as u32 + (vpn & 511) as u32
    }

    /// A hardware walk to `vpn`'s PTE: sets the PMD's accessed bit on the way. Returns the
    /// PTE's global index, for [`PageTable::at`].
    #[inline]
    pub fn walk_index(&mut self, vpn: u64) -> PteIndex {
        let leaf = self.leaf_for(vpn);
        self.pmd_young[leaf as usize] = true;
        leaf * ENTRIES as u32 + (vpn & 511) as u32
    }

    /// A hardware walk to `vpn`'s PTE (see [`PageTable::walk_index`]).
    #[inline]
    pub fn walk(&mut self, vpn: u64) -> &mut u64 {
        let i = self.walk_index(vpn);
        &mut self.leaves[i as usize]
    }

    /// The PTE at a global index.
    #[inline]
    pub fn at(&mut self, idx: PteIndex) -> &mut u64 {
        &mut self.leaves[idx as usize]
    }

    /// The PTE at a global index, read only.
    #[inline]
    pub fn get(&self, idx: PteIndex) -> u64 {
        self.leaves[idx as usize]
    }

    /// The PTE of `vpn` without touching accessed bits (a software lookup).
    #[inline]
    pub fn pte_mut(&mut self, vpn: u64) -> &mut u64 {
        let i = self.pte_index(vpn);
        &mut self.leaves[i as usize]
    }

    pub fn pte(&self, vpn: u64) -> u64 {
        match self.find_leaf(vpn) {
            Some(l) => self.leaves[l as usize * ENTRIES + (vpn & 511) as usize],
            None => 0,
        }
    }

    pub fn n_leaves(&self) -> usize {
        self.leaf_base.len()
    }
    pub fn leaf(&self, id: LeafId) -> &[u64; ENTRIES] {
        let s = id as usize * ENTRIES;
        (&self.leaves[s..s + ENTRIES])
            .try_into()
            .expect("leaf is 512 entries")
    }
    pub fn leaf_mut(&mut self, id: LeafId) -> &mut [u64; ENTRIES] {
        let s = id as usize * ENTRIES;
        (&mut self.leaves[s..s + ENTRIES])
            .try_into()
            .expect("leaf is 512 entries")
    }
    /// First virtual page number of a leaf; the leaf's PMD entry is `leaf_base >> 9`.
    pub fn leaf_base(&self, id: LeafId) -> u64 {
        self.leaf_base[id as usize]
    }
    /// Virtual page number of the PTE at a global index.
    #[inline]
    pub fn vpn_of(&self, idx: PteIndex) -> u64 {
        self.leaf_base[idx as usize / ENTRIES] + (idx as u64 & 511)
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
        let mut out = Vec::with_capacity(self.leaf_base.len());
        let table = |t: u32| &self.upper[t as usize * ENTRIES..(t as usize + 1) * ENTRIES];
        for &pud in table(0) {
            if pud == NONE {
                continue;
            }
            for &pmd in table(pud) {
                if pmd == NONE {
                    continue;
                }
                out.extend(table(pmd).iter().copied().filter(|&l| l != NONE));
            }
        }
        out
    }

    /// Bytes held by the tables (each table is a 4 KiB page, as in the kernel).
    pub fn table_bytes(&self) -> usize {
        (self.upper.len() / ENTRIES + self.leaf_base.len()) * 4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_sets_bits_and_levels() {
        let mut pt = PageTable::new();
        let i = pt.walk_index(0x1234_5678);
        *pt.at(i) = make_present(7) | PTE_ACCESSED;
        assert_eq!(pt.vpn_of(i), 0x1234_5678);
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
