//! MG-LRU aging (mm/vmscan.c "the aging"): deciding when to age (`should_run_aging`), the
//! page-table walk (`walk_mm` → `walk_pud_range` → `walk_pmd_range` → `walk_pte_range`) and
//! the creation of a generation (`inc_max_seq`, `inc_min_seq`, `folio_inc_gen`,
//! `try_to_inc_min_seq`).
//!
//! Left out: the walk yields every `MAX_LRU_BATCH` folios and retries on lock contention
//! (timing only), per-walk `nr_pages` batches (applied at once), THP PMD leaves,
//! `VM_LOCKED` / `VM_SPECIAL` / hugetlb VMAs (not modelled by the page table).

use super::{lidx, MgLru, ScanMode, ANON, FILE, F_ALL_REFS, MIN_NR_GENS};
use crate::mm::pagecache::FILE_BASE;
use crate::mm::{Mm, Vma, VmaKind, ENTRIES, PTE_ACCESSED, PTE_PRESENT};
use rand::Rng;

/// `suitable_to_scan`: at least one young PTE per cache line on average; with 64-byte lines
/// and 8-byte PTEs, n = clamp(64 / 8, 2, 8) = 8.
#[inline]
pub fn suitable_to_scan(total: u64, young: u64) -> bool {
    young * 8 >= total
}

impl MgLru {
    /// `should_run_aging` (6.8): (whether to age, `nr_to_scan` = pages >> priority); with
    /// only `MIN_NR_GENS` generations it ages and reports nothing to scan.
    pub(crate) fn should_run_aging(&self, can_swap: bool, priority: u8) -> (bool, u64) {
        if self.min_seq[!can_swap as usize] + MIN_NR_GENS > self.max_seq {
            return (true, 0);
        }
        self.should_run_aging_61(can_swap, priority)
    }

    /// 6.1's `should_run_aging`: the same decision as 6.8's, but `nr_to_scan` is always
    /// `total >> priority`, also when only `MIN_NR_GENS` generations are left.
    pub(crate) fn should_run_aging_61(&self, can_swap: bool, priority: u8) -> (bool, u64) {
        let t0 = !can_swap as usize;
        let (mut total, mut young, mut old) = (0u64, 0u64, 0u64);
        for ty in t0..2 {
            for seq in self.min_seq[ty]..=self.max_seq {
                let size = self.nr_pages[lidx(self.gen_of_seq(seq), ty)];
                total += size;
                if seq == self.max_seq {
                    young += size;
                } else if seq + MIN_NR_GENS == self.max_seq {
                    old += size;
                }
            }
        }
        let nr_to_scan = total >> priority;
        // The ideal number of generations is MIN_NR_GENS + 1: never age with more.
        let need = if self.min_seq[t0] + MIN_NR_GENS > self.max_seq {
            true
        } else if self.min_seq[t0] + MIN_NR_GENS < self.max_seq {
            false
        } else {
            young * MIN_NR_GENS > total || old * (MIN_NR_GENS + 2) < total
        };
        (need, nr_to_scan)
    }

    /// `try_to_inc_max_seq`: walk the page tables (unless walks are off) and create a
    /// generation. Single-threaded, it always succeeds.
    pub fn try_to_inc_max_seq(&mut self, mm: &mut Mm, can_swap: bool) -> bool {
        if self.cfg.walks() {
            self.walk_mm(mm, can_swap);
        }
        self.inc_max_seq(can_swap);
        true
    }

    /// `iterate_mm_list` (first step: reset the next Bloom filter; the first iteration over a
    /// new mm is a forced scan) + `walk_mm` over the single address space.
    fn walk_mm(&mut self, mm: &mut Mm, can_swap: bool) {
        self.stats.aging_walks += 1;
        let force_scan = !self.mm_walked;
        self.mm_walked = true;
        let bloom = self.cfg.scan == ScanMode::Bloom;
        if bloom {
            self.bloom.reset(self.max_seq + 1);
        }
        let new_gen = self.gen_of_seq(self.max_seq);
        let nonleaf = self.cfg.nonleaf_young();
        let mut segs = std::mem::take(&mut self.segs);
        // Leaves come in address order, so the VMAs before the current one are never needed
        // again: `vi` only moves forward.
        let vmas: Vec<Vma> = mm.vmas.iter().copied().collect();
        let mut vi = 0;
        for leaf in mm.pt.leaves_in_order() {
            let base = mm.pt.leaf_base(leaf);
            if base >= FILE_BASE {
                // The page cache's entries (above every user address) are no page table of
                // the mm: `walk_mm` never sees page-cache folios, which are unmapped.
                break;
            }
            while vi < vmas.len() && vmas[vi].end <= base {
                vi += 1;
            }
            walkable_ranges(&vmas[vi..], vmas.is_empty(), base, can_swap, &mut segs);
            if !can_swap && !mm.maps.is_empty() {
                // File mappings (`engine::filemap`) are no VMAs of `mm.vmas`: they lie in the
                // anonymous gaps, which are skipped without swap, but a file VMA is walked.
                file_map_ranges(mm, base, &mut segs);
            }
            if segs.is_empty() {
                continue; // should_skip_vma: the walk never reaches this PMD entry
            }
            self.stats.walk_pmds += 1;
            // walk_pmd_range with should_clear_pmd_young(): skip a PMD entry whose accessed
            // bit is clear, else clear it (walk_pmd_range_locked).
            if nonleaf && !mm.pt.test_clear_pmd_young(leaf) {
                continue;
            }
            let pmd = base >> 9;
            let pass = force_scan
                || match self.cfg.scan {
                    ScanMode::Bloom => self.bloom.test(self.max_seq, pmd),
                    ScanMode::All => true,
                    ScanMode::Rand => self.rng.gen::<f64>() < self.cfg.scan_rand_p,
                    ScanMode::None => false,
                };
            if !pass {
                continue;
            }
            self.stats.walk_pmds_scanned += 1;
            let (total, young) = self.walk_pte_range(mm, leaf, base, &segs, new_gen, can_swap);
            if bloom && suitable_to_scan(total, young) {
                self.stats.walk_pmds_added += 1;
                self.bloom.update(self.max_seq + 1, pmd);
            }
        }
        self.segs = segs;
    }

    /// `walk_pte_range`: clear young PTEs in the walkable ranges of one PTE table and move
    /// their folios to generation `new_gen` (`folio_update_gen`). Returns (total, young).
    fn walk_pte_range(
        &mut self,
        mm: &mut Mm,
        leaf: u32,
        base: u64,
        segs: &[(u64, u64)],
        new_gen: usize,
        can_swap: bool,
    ) -> (u64, u64) {
        let table = mm.pt.leaf_mut(leaf);
        let (mut total, mut young) = (0u64, 0u64);
        for &(lo, hi) in segs {
            total += hi - lo;
            for slot in &mut table[(lo - base) as usize..(hi - base) as usize] {
                let pte = *slot;
                if pte & (PTE_PRESENT | PTE_ACCESSED) != PTE_PRESENT | PTE_ACCESSED {
                    continue;
                }
                let f = crate::mm::pte_frame(pte);
                // get_pfn_folio: anon folios are left alone when anon cannot be swapped.
                if !can_swap && self.ty(f) == ANON {
                    continue;
                }
                *slot = pte & !PTE_ACCESSED;
                young += 1;
                if self.update_gen(f, new_gen) {
                    self.stats.promoted_walk += 1;
                }
            }
        }
        self.stats.walk_ptes += total;
        self.stats.walk_young += young;
        (total, young)
    }

    /// `inc_max_seq`: make room when a type already has `max_gens` generations
    /// (`inc_min_seq`), then open a new youngest generation.
    pub(crate) fn inc_max_seq(&mut self, can_swap: bool) {
        for ty in [FILE, ANON] {
            if self.nr_gens(ty) == self.cfg.max_gens as u64 {
                self.inc_min_seq(ty, can_swap);
            }
        }
        self.max_seq += 1;
        self.stats.gens_created += 1;
        let g = self.nr_gens(ANON).max(self.nr_gens(FILE));
        self.stats.max_nr_gens = self.stats.max_nr_gens.max(g);
    }

    /// `inc_min_seq`: move every folio of the oldest generation into the next one, zone by
    /// zone
    /// (`folio_inc_gen`, tail), then advance `min_seq`. Anon that cannot be swapped is not
    /// moved: its oldest list becomes the new youngest generation ("cold/hot inversion").
    /// The kernel does this `MAX_LRU_BATCH` folios at a time with restarts; same result.
    fn inc_min_seq(&mut self, ty: usize, can_swap: bool) {
        if ty != ANON || can_swap {
            let old_gen = self.gen_of_seq(self.min_seq[ty]);
            for zone in 0..self.nz() {
                let from = self.lz(old_gen, ty, zone);
                while let Some(f) = {
                    let t = self.lists[from].tail;
                    (t != crate::policy::list::NIL).then_some(t)
                } {
                    let new_gen = self.folio_inc_gen(f, ty);
                    let to = self.lz(new_gen, ty, zone);
                    self.lists[from].remove(&mut self.links, f);
                    self.lists[to].push_tail(&mut self.links, f);
                    self.fs[f as usize].phys = new_gen as u16;
                    self.stats.forced_inc_gen += 1;
                }
            }
        }
        self.pid.carryover(ty);
        self.min_seq[ty] += 1;
    }

    /// `folio_inc_gen`: a folio still in the oldest generation goes to the next one with its
    /// tier reset; a folio a walk already promoted keeps its generation. Only the flag and
    /// sizes change; the caller moves the list entry. Returns the new generation index.
    pub(crate) fn folio_inc_gen(&mut self, f: crate::mm::FrameId, ty: usize) -> usize {
        let i = f as usize;
        let old_gen = self.gen_of_seq(self.min_seq[ty]);
        let cur = self.fs[i].gen1 as usize - 1;
        if cur != old_gen {
            return cur;
        }
        let new_gen = (old_gen + 1) % self.cfg.max_gens as usize;
        self.fs[i].fl &= !F_ALL_REFS;
        self.fs[i].gen1 = new_gen as u16 + 1;
        self.nr_pages[lidx(old_gen, ty)] -= 1;
        self.nr_pages[lidx(new_gen, ty)] += 1;
        new_gen
    }

    /// `try_to_inc_min_seq`: advance `min_seq` past oldest generations whose lists are empty
    /// in every zone, keeping anon and file
    /// in step when anon can be swapped. Returns whether anything advanced.
    // Loops over types index min_seq by type as the kernel does.
    #[allow(clippy::needless_range_loop)]
    pub(crate) fn try_to_inc_min_seq(&mut self, can_swap: bool) -> bool {
        let mut min_seq = self.min_seq;
        for ty in (!can_swap as usize)..2 {
            while min_seq[ty] + MIN_NR_GENS <= self.max_seq {
                let gen = self.gen_of_seq(min_seq[ty]);
                if !self.gen_empty(gen, ty) {
                    break;
                }
                min_seq[ty] += 1;
            }
        }
        if can_swap {
            min_seq[ANON] = min_seq[ANON].min(min_seq[FILE]);
            min_seq[FILE] = min_seq[ANON].max(self.min_seq[FILE]);
        }
        let mut success = false;
        for ty in (!can_swap as usize)..2 {
            if min_seq[ty] == self.min_seq[ty] {
                continue;
            }
            self.pid.carryover(ty);
            self.min_seq[ty] = min_seq[ty];
            success = true;
        }
        success
    }
}

/// Add to `segs` (sorted, disjoint) the parts of the file mappings in the PTE table at `base`.
fn file_map_ranges(mm: &Mm, base: u64, segs: &mut Vec<(u64, u64)>) {
    let end = base + ENTRIES as u64;
    for m in mm.maps.iter() {
        if m.end > base && m.start < end {
            segs.push((m.start.max(base), m.end.min(end)));
        }
    }
    segs.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(segs.len());
    for &(lo, hi) in segs.iter() {
        match out.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    *segs = out;
}

/// The page ranges of the PTE table at `base` that a walk visits: the parts covered by VMAs
/// that `should_skip_vma` keeps (not VM_SEQ_READ / VM_RAND_READ; anon only when it can be
/// swapped). Pages outside every declared VMA are anonymous. `vmas` are the declared VMAs
/// (sorted) that end after `base`; `none_declared` = the address space has no VMA at all.
fn walkable_ranges(
    vmas: &[Vma],
    none_declared: bool,
    base: u64,
    can_swap: bool,
    out: &mut Vec<(u64, u64)>,
) {
    out.clear();
    let end = base + ENTRIES as u64;
    if none_declared {
        if can_swap {
            out.push((base, end));
        }
        return;
    }
    let mut cur = base;
    let push = |lo: u64, hi: u64, keep: bool, out: &mut Vec<(u64, u64)>| {
        if keep && lo < hi {
            match out.last_mut() {
                Some(last) if last.1 == lo => last.1 = hi,
                _ => out.push((lo, hi)),
            }
        }
    };
    for v in vmas {
        if v.end <= cur {
            continue;
        }
        if v.start >= end {
            break;
        }
        // Anonymous gap before this VMA.
        push(cur, v.start.min(end), can_swap, out);
        let keep = !v.seq_or_rand_hint && (can_swap || !matches!(v.kind, VmaKind::Anon));
        push(v.start.max(cur), v.end.min(end), keep, out);
        cur = v.end.min(end);
        if cur >= end {
            break;
        }
    }
    push(cur, end, can_swap, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vma(start: u64, end: u64, kind: VmaKind, hint: bool) -> Vma {
        Vma {
            start,
            end,
            kind,
            seq_or_rand_hint: hint,
        }
    }

    #[test]
    fn walkable_ranges_by_hand() {
        let mut out = Vec::new();
        walkable_ranges(&[], true, 512, true, &mut out);
        assert_eq!(out, vec![(512, 1024)]);
        walkable_ranges(&[], true, 512, false, &mut out);
        assert!(out.is_empty());
        let file = VmaKind::File { file: 1 };
        // PTE table [512, 1024): gap [512,600) anon, [600,700) hinted (skipped),
        // [700,800) file, gap [800,900), [900,2000) anon.
        let v = [
            vma(600, 700, VmaKind::Anon, true),
            vma(700, 800, file, false),
            vma(900, 2000, VmaKind::Anon, false),
        ];
        walkable_ranges(&v, false, 512, true, &mut out);
        assert_eq!(out, vec![(512, 600), (700, 1024)]);
        // Without swap only the file VMA is walked.
        walkable_ranges(&v, false, 512, false, &mut out);
        assert_eq!(out, vec![(700, 800)]);
    }
}
