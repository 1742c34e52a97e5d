//! MG-LRU eviction (mm/vmscan.c "the eviction"): `lru_gen_shrink_node` → `shrink_one` →
//! `try_to_shrink_lruvec` → `get_nr_to_scan` / `evict_folios` → `isolate_folios` →
//! `scan_folios` → `sort_folio` / `isolate_folio`; then the MG-LRU path through
//! `shrink_folio_list`: `folio_check_references` (rmap, `folio_referenced_one`) with
//! `lru_gen_look_around`, and `lru_gen_eviction` for the folios reclaimed.
//!
//! A folio found young by rmap is rejected and put back active, i.e. into the youngest
//! generation (`evict_folios` sets PG_active on every rejected mapped folio). Look-around
//! clears and promotes up to 64 neighbouring young PTEs in the same PMD and VMA: kswapd
//! promotes them through the flag only (`folio_update_gen`, it owns an `mm_walk`), direct
//! reclaim moves them at once (`folio_activate`). A neighbour isolated in the same batch gets
//! PG_referenced, and `shrink_folio_list` keeps a mapped folio with PG_referenced before it
//! checks references ("folio_update_gen() tried to promote this page?"), so that neighbour
//! is put back into the youngest generation too, without counting as an activation.
//!
//! Departures: victims are whole `evict_folios` batches (up to `MIN_LRU_BATCH` = 64), so a
//! pass can return more than `sc.nr_to_reclaim`, as the kernel reclaims; kswapd's
//! `should_abort_scan` watermark test is replaced by `nr_reclaimed >= nr_to_reclaim` (the
//! engine sets `nr_to_reclaim` from the watermark); writeback and memcg protection are not
//! modelled. Zones: the lists are per zone and `scan_folios` takes them from
//! `sc->reclaim_idx` down, then the zones above it, whose folios are ineligible (kswapd
//! balancing a boosted zone; `sort_folio` moves them to the next generation).

use super::aging::suitable_to_scan;
use super::pid::MIN_LRU_BATCH;
use super::{
    lidx, MgLru, ScanMode, ANON, FILE, F_ALL_REFS, F_NAMED, F_REFERENCED, F_WORKINGSET,
    MAX_LRU_BATCH, MIN_NR_GENS,
};
use crate::engine::DEF_PRIORITY;
use crate::mm::frames::{F_PAGECACHE, F_READAHEAD};
use crate::mm::{pte_frame, FrameId, Mm, PTE_ACCESSED, PTE_PRESENT};
use crate::policy::{KernelVersion, ReclaimReason, ScanControl};

/// `fls_long`: 1-based index of the highest set bit, 0 for 0.
fn fls(x: u64) -> i64 {
    64 - x.leading_zeros() as i64
}

impl MgLru {
    /// `lru_gen_shrink_node` + `shrink_one` + `try_to_shrink_lruvec` for the single lruvec
    /// (Linux 6.8), or, with `sc.kernel` 6.1, `kswapd_age_node` → `lru_gen_age_node` for
    /// kswapd and then `lru_gen_shrink_lruvec` (Linux 6.1: [`MgLru::shrink_lruvec_61`]).
    pub(crate) fn shrink_lruvec(
        &mut self,
        mm: &mut Mm,
        sc: &mut ScanControl,
        victims: &mut Vec<FrameId>,
    ) {
        // get_swappiness: 0 when swapping is not allowed (swap space is unbounded here).
        // 6.1's `lru_gen_shrink_lruvec` scans anon with swappiness 1 when kswapd may not swap
        // for a watermark boost (`!sc->may_swap`, swap space left).
        let swappiness = if sc.may_swap {
            sc.swappiness.min(200)
        } else if self.writepage_off && sc.kernel == KernelVersion::V6_1 && sc.swappiness > 0 {
            1
        } else {
            0
        };
        self.kernel = sc.kernel;
        if sc.kernel == KernelVersion::V6_1 {
            self.shrink_lruvec_61(mm, sc, swappiness, victims);
            return;
        }
        sc.priority = self.initial_priority(sc, swappiness);
        let kswapd = sc.reason == ReclaimReason::Kswapd;
        let mut scanned = 0u64;
        self.nr_reclaimed = 0;
        self.nr_reclaimed_zone = Default::default();
        loop {
            let nr_to_scan = self.get_nr_to_scan(mm, sc.priority, swappiness != 0);
            if nr_to_scan <= 0 {
                break;
            }
            let delta = self.evict_folios(mm, sc, swappiness, kswapd, victims);
            if delta == 0 {
                break;
            }
            scanned += delta;
            if scanned >= nr_to_scan as u64 {
                break;
            }
            // should_abort_scan: sc->nr_reclaimed counts the earlier passes of a direct
            // reclaim call too (`do_try_to_free_pages`); kswapd's starts from 0 each pass.
            if sc.nr_reclaimed + self.nr_reclaimed >= sc.nr_to_reclaim as u64 {
                break;
            }
        }
    }

    /// Linux 6.1's MG-LRU reclaim pass (mm/vmscan.c of 6.1): for kswapd, `kswapd_age_node`
    /// → `lru_gen_age_node` first, which skips aging on the first pass of a `balance_pgdat`
    /// run (`memcgs_need_aging` starts clear) and otherwise ages when `should_run_aging`
    /// says so; then `lru_gen_shrink_lruvec`, starting at the pass's priority (6.1 has no
    /// `set_initial_priority`), with 6.1's `get_nr_to_scan` (kswapd leaves aging to
    /// `lru_gen_age_node`; direct reclaim ages and then evicts in the same call) and
    /// `should_abort_scan` (kswapd goes on until this pass has reclaimed `nr_to_reclaim`,
    /// both go on at priorities 12 and 11, then stop once free memory is above the high
    /// watermark for kswapd, the low one for direct reclaim; direct reclaim also stops after
    /// aging twice, or once it has reclaimed enough with anon in the last batch). The
    /// watermark stop adds `MIN_LRU_BATCH` to `sc->nr_reclaimed` (`ScanControl::nr_reclaimed`),
    /// which ends a direct reclaim call's priority cascade (`do_try_to_free_pages`) and
    /// counts towards `memcgs_need_aging`. Left out: memcg protection, `min_ttl_ms`.
    pub(crate) fn shrink_lruvec_61(
        &mut self,
        mm: &mut Mm,
        sc: &mut ScanControl,
        swappiness: u32,
        victims: &mut Vec<FrameId>,
    ) {
        let kswapd = sc.reason == ReclaimReason::Kswapd;
        let can_swap = swappiness != 0;
        if kswapd {
            // lru_gen_age_node
            if !self.memcgs_need_aging {
                self.memcgs_need_aging = true;
            } else {
                let (need_aging, _) = self.should_run_aging_61(can_swap, sc.priority);
                if need_aging {
                    self.try_to_inc_max_seq(mm, can_swap);
                }
            }
        }
        let max_seq = self.max_seq;
        let mut scanned = 0u64;
        let mut need_aging = false;
        let mut need_swapping = false;
        let reclaimed = sc.nr_reclaimed;
        self.nr_reclaimed = 0;
        self.nr_reclaimed_zone = Default::default();
        loop {
            let nr_to_scan =
                self.get_nr_to_scan_61(mm, sc.priority, can_swap, kswapd, &mut need_aging);
            if nr_to_scan == 0 {
                return; // goto done
            }
            let delta = self.evict_folios(mm, sc, swappiness, kswapd, victims);
            // evict_folios: `if (need_swapping && type == LRU_GEN_ANON) *need_swapping = true`
            if self.type_scanned == ANON {
                need_swapping = true;
            }
            if delta == 0 {
                return; // goto done
            }
            scanned += delta;
            if scanned >= nr_to_scan {
                break;
            }
            if self.should_abort_scan_61(sc, max_seq, kswapd, need_swapping) {
                break;
            }
        }
        // `sc->nr_reclaimed - reclaimed`: this pass's reclaim and any credit.
        if sc.nr_reclaimed - reclaimed + self.nr_reclaimed >= MIN_LRU_BATCH && !need_aging {
            self.memcgs_need_aging = false;
        }
    }

    /// 6.1's `get_nr_to_scan`.
    pub(crate) fn get_nr_to_scan_61(
        &mut self,
        mm: &mut Mm,
        priority: u8,
        can_swap: bool,
        kswapd: bool,
        need_aging: &mut bool,
    ) -> u64 {
        let (need, nr_to_scan) = self.should_run_aging_61(can_swap, priority);
        *need_aging = need;
        if !need {
            return nr_to_scan;
        }
        if priority != DEF_PRIORITY {
            // leave the work to lru_gen_age_node()
            if kswapd {
                return 0;
            }
            if self.try_to_inc_max_seq(mm, can_swap) {
                return nr_to_scan;
            }
        }
        if self.min_seq[!can_swap as usize] + MIN_NR_GENS <= self.max_seq {
            nr_to_scan
        } else {
            0
        }
    }

    /// 6.1's `should_abort_scan`. The zone test reads the free memory the engine will have
    /// once this pass's reclaimed victims are freed (it frees them after the pass); when it
    /// passes, `sc->nr_reclaimed += MIN_LRU_BATCH` (`sc.nr_reclaimed`).
    pub(crate) fn should_abort_scan_61(
        &self,
        sc: &mut ScanControl,
        seq: u64,
        kswapd: bool,
        need_swapping: bool,
    ) -> bool {
        if !kswapd {
            if self.max_seq - seq > 1 {
                return true;
            }
            // sc->nr_reclaimed: the earlier passes of this `do_try_to_free_pages` call too.
            if sc.nr_reclaimed + self.nr_reclaimed >= sc.nr_to_reclaim as u64 && need_swapping {
                return true;
            }
        } else if self.nr_reclaimed < sc.nr_to_reclaim as u64 {
            return false;
        }
        if sc.priority > DEF_PRIORITY - 2 {
            return false;
        }
        // Victims kept under writeback are not freed: count only those reclaimed. Each zone
        // up to `sc->reclaim_idx` (every zone here) must be at its watermark, by its own free
        // pages (`zone_page_state(zone, NR_FREE_PAGES)`).
        if let Some(zones) = &sc.zones {
            for (z, zm) in zones.zones().iter().enumerate() {
                let wmark = if kswapd { zm.high } else { zm.low } as u64;
                if wmark > zm.free + self.nr_reclaimed_zone[z] {
                    return false;
                }
            }
        } else {
            let free = sc.nr_free + self.nr_reclaimed;
            let wmark = if kswapd { sc.high_wmark } else { sc.low_wmark } as u64;
            if wmark > free {
                return false;
            }
        }
        sc.nr_reclaimed += MIN_LRU_BATCH;
        true
    }

    /// `set_initial_priority`: at `DEF_PRIORITY` with at least `MIN_LRU_BATCH` to reclaim,
    /// start at the priority where (inactive >> priority) ≈ nr_to_reclaim.
    fn initial_priority(&self, sc: &ScanControl, swappiness: u32) -> u8 {
        if sc.priority != DEF_PRIORITY || (sc.nr_to_reclaim as u64) < MIN_LRU_BATCH {
            return sc.priority;
        }
        // Inactive = every generation but the two youngest (lru_gen_is_active).
        let mut reclaimable = 0u64;
        for ty in [FILE, ANON] {
            if ty == ANON && swappiness == 0 {
                continue;
            }
            let mut seq = self.min_seq[ty];
            while seq + 1 < self.max_seq {
                reclaimable += self.nr_pages[lidx(self.gen_of_seq(seq), ty)];
                seq += 1;
            }
        }
        let p = fls(reclaimable) - 1 - fls(sc.nr_to_reclaim as u64 - 1);
        p.clamp(0, DEF_PRIORITY as i64) as u8
    }

    /// `get_nr_to_scan`: pages to scan, or ≤ 0 to stop (aging ran, or nothing to do).
    pub(crate) fn get_nr_to_scan(&mut self, mm: &mut Mm, priority: u8, can_swap: bool) -> i64 {
        let (need_aging, nr_to_scan) = self.should_run_aging(can_swap, priority);
        if !need_aging {
            return nr_to_scan as i64;
        }
        // Skip the aging path at the default priority.
        if priority == DEF_PRIORITY {
            return nr_to_scan as i64;
        }
        if self.try_to_inc_max_seq(mm, can_swap) {
            -1
        } else {
            0
        }
    }

    /// `evict_folios`: isolate one batch from the oldest generation, check each folio's
    /// references, reclaim the rest. Returns the pages scanned (0 = no progress possible).
    pub(crate) fn evict_folios(
        &mut self,
        mm: &mut Mm,
        sc: &mut ScanControl,
        swappiness: u32,
        kswapd: bool,
        victims: &mut Vec<FrameId>,
    ) -> u64 {
        let can_swap = swappiness != 0;
        let mut iso = std::mem::take(&mut self.isolated);
        iso.clear();
        let victims_before = victims.len();
        let mut scanned = self.isolate_folios(mm, swappiness, &mut iso);
        for f in self.marked_reclaim.drain(..) {
            mm.frames.set_flags(f, crate::mm::frames::F_READAHEAD);
        }
        if self.try_to_inc_min_seq(can_swap) {
            scanned += 1;
        }
        if self.nr_gens((swappiness == 0) as usize) == MIN_NR_GENS {
            scanned = 0;
        }
        // shrink_folio_list, in isolation order.
        sc.nr_scanned += iso.len() as u64;
        mm.prefetch_rmap(&iso);
        for &f in &iso {
            self.check_references(mm, f, kswapd, sc, victims);
        }
        // The writes of this batch that a flush dispatched complete after its putback loop
        // (`SwapWrites`): put back to `max_seq - 1` with `PG_reclaim`, then rotated.
        // (timed runs: the batch took its time, and the writes that completed meanwhile are
        // rotated)
        mm.reclaim_time(iso.len() as u64, &victims[victims_before..]);
        let mut rotate = std::mem::take(&mut self.rotate);
        self.writes.end_batch(mm, &mut rotate);
        for f in rotate.drain(..) {
            self.rotate_written(f);
        }
        self.rotate = rotate;
        crate::policy::end_writebacks_in_pass(self, mm);
        self.isolated = iso;
        scanned
    }

    /// A written folio freed in the pass that wrote it, after its rotation: `__remove_mapping`
    /// → `lru_gen_eviction`, with the reference flags it was isolated with.
    fn reclaim_written(&mut self, f: FrameId) {
        self.fs[f as usize].shadow = self.eviction(f);
        self.stats.pgsteal[self.ty(f)] += 1;
        self.nr_reclaimed += 1;
        if self.multi_zone {
            self.nr_reclaimed_zone[self.zone(f)] += 1;
        }
        self.writes.freed(f);
    }

    /// `pageout` of an anonymous folio under the plug ([`SwapWrites::write`]); the writes
    /// that complete now are rotated.
    fn plug_write(&mut self, mm: &mut Mm, f: FrameId, max_pages: u32) {
        let mut rotate = std::mem::take(&mut self.rotate);
        self.writes.write(mm, f, max_pages, &mut rotate);
        for g in rotate.drain(..) {
            self.rotate_written(g);
        }
        self.rotate = rotate;
    }

    /// `folio_end_writeback` → `folio_rotate_reclaimable` → `lru_move_tail_fn`: a written
    /// folio back on its list goes, `PG_reclaim` cleared, to the tail of the oldest
    /// generation (`lru_gen_add_folio(.., reclaiming = true)`) with the reference flags it
    /// was isolated with, as [`Insert::Rotate`] does after the pass.
    fn rotate_written(&mut self, f: FrameId) {
        let i = f as usize;
        let kept = std::mem::replace(&mut self.fs[i].shadow, 0) as u8;
        self.fs[i].fl = kept;
        let gen = self.gen_of_seq(self.min_seq[self.ty(f)]);
        self.add_folio(f, gen, true);
        self.writes.rotated(f);
    }

    /// `isolate_folios`: choose the type (swappiness extremes first, then the PI controller)
    /// and scan it, falling back to the other type.
    fn isolate_folios(&mut self, mm: &Mm, swappiness: u32, iso: &mut Vec<FrameId>) -> u64 {
        let mut tier: Option<usize> = None;
        let mut ty = if swappiness == 0 {
            FILE
        } else if self.min_seq[ANON] < self.min_seq[FILE] {
            ANON
        } else if swappiness == 1 {
            FILE
        } else if swappiness == 200 {
            ANON
        } else {
            let (t, idx) = self.pid.type_to_scan(swappiness);
            tier = Some(idx);
            t
        };
        let mut scanned = 0;
        for _ in (swappiness == 0) as usize..2 {
            let t = tier.unwrap_or_else(|| self.pid.tier_idx(ty));
            // A pass below the highest zone or one that may not write (kswapd balancing a
            // boosted zone) takes the slower walk; every other pass, the plain one.
            scanned = if self.reclaim_idx.is_some() || self.writepage_off {
                self.scan_folios::<true>(mm, ty, t, iso)
            } else {
                self.scan_folios::<false>(mm, ty, t, iso)
            };
            if scanned != 0 {
                break;
            }
            ty = 1 - ty;
            tier = None;
        }
        self.type_scanned = ty; // `*type_scanned = type`, after any fallback flip
        scanned
    }

    /// `scan_folios`: walk the oldest generation's lists of `ty` from the tail, highest zone
    /// first, sorting or isolating, until `MAX_LRU_BATCH` scanned or `MIN_LRU_BATCH` isolated
    /// (a zone's list is left for the next only when it runs empty first). Nothing when only `MIN_NR_GENS`
    /// generations exist.
    fn scan_folios<const LIMITED: bool>(
        &mut self,
        mm: &Mm,
        ty: usize,
        tier_idx: usize,
        iso: &mut Vec<FrameId>,
    ) -> u64 {
        if self.nr_gens(ty) == MIN_NR_GENS {
            return 0;
        }
        let gen = self.gen_of_seq(self.min_seq[ty]);
        let mut remaining = MAX_LRU_BATCH;
        let (mut scanned, mut isolated) = (0u64, 0u64);
        // Zone by zone from `sc->reclaim_idx` down, then from the highest down to the one
        // above it (`(sc->reclaim_idx + i) % MAX_NR_ZONES`, i = MAX_NR_ZONES..1).
        let nz = self.nz();
        let top = self.reclaim_idx.unwrap_or(nz - 1).min(nz - 1);
        // Read once: the calls below take `&mut self`.
        let refuse = LIMITED && self.writepage_off;
        let above = self.reclaim_idx.unwrap_or(usize::MAX);
        for k in 0..nz {
            let zone = (top + nz - k) % nz;
            let li = self.lz(gen, ty, zone);
            let mut skipped = 0u64;
            loop {
                let f = self.lists[li].tail;
                if f == crate::policy::list::NIL {
                    break;
                }
                scanned += 1;
                // The next folio to look at: fetch its state while this one is sorted (speed
                // only).
                let p = self.links.prev(f);
                if p != crate::policy::list::NIL {
                    crate::hint::prefetch(self.fs.as_ptr().wrapping_add(p as usize));
                    self.links.prefetch(p);
                }
                if self.sort_folio::<LIMITED>(mm, f, ty, tier_idx, above) {
                } else if refuse && self.refuse_folio(mm, li, f) {
                    skipped += 1;
                } else {
                    self.isolate_folio(f);
                    iso.push(f);
                    isolated += 1;
                }
                remaining -= 1;
                if remaining == 0
                    || isolated >= MIN_LRU_BATCH
                    || (LIMITED && skipped >= MIN_LRU_BATCH)
                {
                    break;
                }
            }
            if LIMITED && skipped > 0 {
                // `list_splice(&moved, head)`: `moved` holds them newest-first
                // (`list_move` to its head), so the first refused ends nearest the tail.
                for i in 0..self.moved.len() {
                    let f = self.moved[i];
                    self.lists[li].push_head(&mut self.links, f);
                }
                self.moved.clear();
                self.skipped[zone] += skipped;
            }
            if remaining == 0 || isolated >= MIN_LRU_BATCH {
                break;
            }
        }
        self.stats.pgscan[ty] += isolated;
        if isolated > 0 || remaining == 0 {
            scanned
        } else {
            0
        }
    }

    /// 6.1 `isolate_folio`, "swapping inhibited" (`!sc->may_writepage`): a dirty folio, or an
    /// anonymous one without a swap copy, is left on its list (`list_move(.., &moved)`, spliced
    /// back at the head when the zone's walk ends). Whether it was.
    #[cold]
    #[inline(never)]
    fn refuse_folio(&mut self, mm: &Mm, li: usize, f: FrameId) -> bool {
        let refused = mm.is_dirty(f)
            || (self.ty(f) == ANON && mm.frames.flags(f) & crate::mm::frames::F_SWAPCACHE == 0);
        if refused {
            self.lists[li].remove(&mut self.links, f);
            self.moved.push(f);
        }
        refused
    }

    /// `sort_folio`: true if the folio was moved instead of being a candidate. Left out: the
    /// unevictable and dirty-lazyfree cases (no such folios here).
    /// `above`: `sc->reclaim_idx` (`usize::MAX`: every zone is eligible).
    fn sort_folio<const LIMITED: bool>(
        &mut self,
        mm: &Mm,
        f: FrameId,
        ty: usize,
        tier_idx: usize,
        above: usize,
    ) -> bool {
        let i = f as usize;
        let gen = self.fs[i].gen1 as usize - 1;
        let refs = self.refs(f);
        let tier = super::pid::tier_from_refs(refs);
        // promoted (by a walk or look-around under kswapd)
        let zone = self.zone(f);
        if gen != self.gen_of_seq(self.min_seq[ty]) {
            let (from, to) = (
                self.lz(self.fs[i].phys as usize, ty, zone),
                self.lz(gen, ty, zone),
            );
            self.lists[from].remove(&mut self.links, f);
            self.lists[to].push_head(&mut self.links, f);
            self.fs[i].phys = gen as u16;
            self.stats.sorted_promoted += 1;
            return true;
        }
        // protected
        if tier > tier_idx || refs == 1 << super::pid::LRU_REFS_WIDTH {
            let new_gen = self.folio_inc_gen(f, ty);
            let (from, to) = (self.lz(gen, ty, zone), self.lz(new_gen, ty, zone));
            self.lists[from].remove(&mut self.links, f);
            self.lists[to].push_tail(&mut self.links, f);
            self.fs[i].phys = new_gen as u16;
            self.pid.protected[ty][tier - 1] += 1;
            self.stats.protected_tier[tier] += 1;
            // 6.1 counts the protection as an activation (`WORKINGSET_ACTIVATE_BASE + type`);
            // 6.8 counts recent refaults there instead (docs/kernel-6.1-vs-6.8.md, A1).
            if self.kernel == KernelVersion::V6_1 {
                self.stats.workingset_activate[ty] += 1;
            }
            return true;
        }
        // ineligible: above the pass's zone (`sc->reclaim_idx`), to the next generation's
        // tail (`folio_inc_gen(.., false)`, `list_move_tail`). 6.1 and 6.8.
        if LIMITED && zone > above {
            let new_gen = self.folio_inc_gen(f, ty);
            let (from, to) = (self.lz(gen, ty, zone), self.lz(new_gen, ty, zone));
            self.lists[from].remove(&mut self.links, f);
            self.lists[to].push_tail(&mut self.links, f);
            self.fs[i].phys = new_gen as u16;
            self.stats.sorted_ineligible += 1;
            return true;
        }
        // waiting for writeback: a folio whose swap read is in flight is locked, one whose
        // swap write is in flight is under writeback (timed runs), and a dirty page-cache
        // folio waits for the flusher; `folio_inc_gen(.., reclaiming = true)` (refs and
        // flags cleared, `PG_reclaim` set: kept for a page-cache folio, whose write by the
        // flusher then rotates it; not modelled for a swap write, every completed one of
        // which is rotated), at the head of the next generation (`list_move`). Linux 6.1
        // and 6.8.
        let writeback = mm.under_writeback(f);
        let dirty = ty == FILE && mm.page_cache_dirty(f);
        if writeback || dirty || mm.io_locked(f) {
            let new_gen = self.folio_inc_gen(f, ty);
            let (from, to) = (self.lz(gen, ty, zone), self.lz(new_gen, ty, zone));
            self.lists[from].remove(&mut self.links, f);
            self.lists[to].push_head(&mut self.links, f);
            self.fs[i].phys = new_gen as u16;
            if writeback {
                self.stats.sorted_writeback += 1;
            } else if dirty {
                self.stats.sorted_writeback += 1;
                self.stats.sorted_dirty += 1;
                self.marked_reclaim.push(f);
            } else {
                self.stats.sorted_locked += 1;
            }
            return true;
        }
        false
    }

    /// `isolate_folio`: take it off its list; its tier is kept only if PG_referenced.
    fn isolate_folio(&mut self, f: FrameId) {
        let i = f as usize;
        if self.fs[i].fl & F_REFERENCED == 0 {
            self.fs[i].fl &= !F_ALL_REFS;
        }
        self.fs[i].fl &= !F_REFERENCED;
        self.del_folio(f);
    }

    /// The MG-LRU part of `shrink_folio_list` for one isolated folio: rmap reference check
    /// (with look-around), then either back to the youngest generation or reclaimed.
    fn check_references(
        &mut self,
        mm: &mut Mm,
        f: FrameId,
        kswapd: bool,
        sc: &ScanControl,
        victims: &mut Vec<FrameId>,
    ) {
        // shrink_folio_list: a folio whose read started after `sort_folio` looked at it is
        // locked; `folio_trylock` fails first and it is kept; `evict_folios` does not add
        // rejected folios to the oldest generation: PG_active, refs and flags cleared, so the
        // youngest (6.1 and 6.8). (Not reached today: nothing starts a read between the two.)
        if mm.io_locked(f) {
            self.fs[f as usize].fl &= !F_ALL_REFS;
            let gen = self.gen_of_seq(self.max_seq);
            self.add_folio(f, gen, false);
            self.stats.kept_locked += 1;
            return;
        }
        // A folio written earlier in this pass whose write completed and which was rotated
        // to the oldest generation's tail (`plug_write`): clean and unmapped in the kernel
        // (`try_to_unmap` ran before `pageout`), so `folio_check_references` finds no
        // reference and `__remove_mapping` frees it. (The engine unmaps it after the pass.)
        if self.writes.is_rotated(f) {
            self.reclaim_written(f);
            return;
        }
        let vpn = mm.owner(f);
        // shrink_folio_list, before folio_check_references: "folio_update_gen() tried to
        // promote this page?" A mapped folio that got PG_referenced while isolated (an
        // earlier folio's look-around, or a walk, found its PTE young: `folio_update_gen` /
        // `lru_gen_look_around` set the flag when `folio_lru_gen` < 0) goes to keep_locked;
        // evict_folios then puts it back active (refs and flags cleared) into the youngest
        // generation. Not reclaimed, and not an activation (PGACTIVATE counts activate_locked
        // only). Linux 6.1 and 6.8 alike.
        if self.fs[f as usize].fl & F_REFERENCED != 0 && mm.frames.is_mapped(f) {
            self.fs[f as usize].fl &= !F_ALL_REFS;
            let gen = self.gen_of_seq(self.max_seq);
            self.add_folio(f, gen, false);
            self.stats.kept_referenced += 1;
            return;
        }
        // folio_referenced skips mappings without recency (invalid_folio_referenced_vma).
        let young = mm.frames.is_mapped(f) && Self::has_recency(mm, vpn) && mm.is_young(f);
        if young {
            if self.cfg.lookaround {
                self.look_around(mm, f, kswapd);
            }
            mm.test_and_clear_young(f);
            // FOLIOREF_ACTIVATE / KEEP → evict_folios: PG_active, refs cleared → youngest.
            self.fs[f as usize].fl &= !F_ALL_REFS;
            let gen = self.gen_of_seq(self.max_seq);
            self.add_folio(f, gen, false);
            self.stats.promoted_rmap += 1;
        } else if self.fs[f as usize].fl & F_NAMED == 0
            && sc.writeback_async
            && mm.swap_out_writes(f)
        {
            // (a named page is an unwritten copy of its block: dropped below, not written)
            // `pageout` leaves it under writeback: `shrink_folio_list` keeps it and
            // `evict_folios` puts it back; no `lru_gen_eviction`. The engine writes it and
            // puts it back (`Insert::Rotate`); its flags wait in `shadow` meanwhile. Under
            // the plug (`ScanControl::swap_plug`) its write may complete within the pass.
            self.fs[f as usize].shadow = self.fs[f as usize].fl as u32;
            victims.push(f);
            self.stats.writeback_keep += 1;
            if sc.swap_plug {
                self.plug_write(mm, f, sc.swap_max_pages);
            }
        } else if mm.frames.flags(f) & F_PAGECACHE != 0
            && mm.is_dirty(f)
            && !(kswapd && mm.frames.flags(f) & F_READAHEAD != 0 && mm.vmscan_dirty.pgdat_dirty)
        {
            // A page-cache folio found dirty here (`sort_folio` moves on those whose
            // `PG_dirty` is set; this one's dirt was in a file mapping's PTE, which the
            // kernel's `try_to_unmap` moves to the folio as it unmaps it: the engine unmaps
            // it after the pass, `VmscanDirty::unmap`):
            // `shrink_folio_list` marks it `PG_reclaim` (`NR_VMSCAN_IMMEDIATE`) and
            // activates it; `evict_folios` keeps a `PG_reclaim` dirty folio's flags
            // (`PG_referenced` again if `PG_workingset`), and `lru_gen_add_folio` puts the
            // active folio in the youngest generation. (`PGDAT_DIRTY`, which would let
            // kswapd write it, is classic LRU's: `lru_gen_shrink_node` returns before
            // `shrink_node` sets it.) Linux 6.1 and 6.8.
            mm.frames.set_flags(f, F_READAHEAD);
            if mm.frames.is_mapped(f) {
                mm.vmscan_dirty.unmap.push(f);
            }
            if self.fs[f as usize].fl & F_WORKINGSET != 0 {
                self.fs[f as usize].fl |= F_REFERENCED;
            }
            let gen = self.gen_of_seq(self.max_seq);
            self.add_folio(f, gen, false);
            self.stats.nr_vmscan_immediate_reclaim += 1;
        } else {
            // A clean page-cache folio is freed without I/O; a dirty one (only kswapd's,
            // under `PGDAT_DIRTY`) is written by this reclaim (`pageout`) and freed.
            self.fs[f as usize].shadow = self.eviction(f);
            self.stats.pgsteal[self.ty(f)] += 1;
            // (freed: a named page's frame comes back as whatever the engine maps next)
            self.fs[f as usize].fl &= !F_NAMED;
            victims.push(f);
            self.nr_reclaimed += 1;
            if self.multi_zone {
                self.nr_reclaimed_zone[self.zone(f)] += 1;
            }
        }
    }

    /// `lru_gen_look_around`: scan up to `MIN_LRU_BATCH` PTEs around the young PTE of `f`
    /// within its PMD and VMA, clear and promote young neighbours, and feed the PMD to the
    /// current Bloom filter when at least one PTE per cache line was young.
    pub(crate) fn look_around(&mut self, mm: &mut Mm, f: FrameId, kswapd: bool) {
        let addr = mm.owner(f);
        let Some(leaf) = mm.pt.find_leaf(addr) else {
            return;
        };
        let (vs, ve, _) = Self::vma_span(mm, addr);
        let mut start = (addr & !511).max(vs);
        let mut end = (addr | 511).min(ve - 1) + 1;
        let batch = MIN_LRU_BATCH;
        if end - start > batch {
            if addr - start < batch / 2 {
                end = start + batch;
            } else if end - addr < batch / 2 {
                start = end - batch;
            } else {
                start = addr - batch / 2;
                end = addr + batch / 2;
            }
        }
        // can_swap = the rmap'd folio is anon: a file folio's look-around skips anon neighbours.
        let can_swap = self.ty(f) == ANON;
        let new_gen = self.gen_of_seq(self.max_seq);
        let base = mm.pt.leaf_base(leaf);
        let table = mm.pt.leaf_mut(leaf);
        // Fetch the state of every young neighbour before deciding on any (speed only).
        for vpn in start..end {
            let pte = table[(vpn - base) as usize];
            if pte & (PTE_PRESENT | PTE_ACCESSED) == PTE_PRESENT | PTE_ACCESSED {
                crate::hint::prefetch(self.fs.as_ptr().wrapping_add(pte_frame(pte) as usize));
            }
        }
        let mut young = 0u64;
        for vpn in start..end {
            let i = (vpn - base) as usize;
            let pte = table[i];
            if pte & (PTE_PRESENT | PTE_ACCESSED) != PTE_PRESENT | PTE_ACCESSED {
                continue;
            }
            let g = pte_frame(pte);
            if !can_swap && self.ty(g) == ANON {
                continue;
            }
            table[i] = pte & !PTE_ACCESSED;
            young += 1;
            let promoted = if kswapd {
                self.update_gen(g, new_gen)
            } else if self.fs[g as usize].gen1 == 0 {
                self.fs[g as usize].fl |= F_REFERENCED;
                false
            } else if self.fs[g as usize].gen1 as usize - 1 != new_gen {
                // folio_activate → lru_gen_add_folio(active): head of the youngest list.
                self.move_folio(g, new_gen, false);
                true
            } else {
                false
            };
            if promoted {
                self.stats.promoted_lookaround += 1;
            }
        }
        let n = end - start;
        self.stats.lookarounds += 1;
        self.stats.lookaround_ptes += n;
        self.stats.lookaround_young += young;
        if self.cfg.scan == ScanMode::Bloom && suitable_to_scan(n, young) {
            self.bloom.update(self.max_seq, base >> 9);
        }
    }
}
