//! Address translation and what keeps it right: the guest manager's page numbers for the
//! processes' pages (1 GiB regions given dense slots), the processes' hardware tables kept in
//! step with the manager (natively, page-table pages taken as `__pte_alloc` takes them), one
//! access through the vCPU's TLB and walk with the faults it takes (guest page fault, EPT
//! violation, KVM's shadow page fault, `kvm_mmu_page_fault`), the untranslated access of a
//! native run without the TLB model, and the TLB flushes reclaim's unmaps need
//! (`flush_tlb_page`, `try_to_unmap_flush` → `arch_tlbbatch_flush`).

use super::*;

/// (pid, first vpn) of a guest manager page number, given the regions' keys by slot.
pub(super) fn unkey_in(region_back: &[u64], gshift: u32, key: u64) -> (u32, u64) {
    let per = REGION_SHIFT - gshift;
    let rk = region_back[(key >> per) as usize];
    let pid = (rk >> REGION_SHIFT) as u32;
    let vpn = ((rk & REGION_MASK) << REGION_SHIFT) | ((key & ((1 << per) - 1)) << gshift);
    (pid, vpn)
}

impl Vm {
    /// The guest manager's page number for page `vpn` of `pid`, giving its region a slot if
    /// it has none (`v` is the vCPU whose cache to use).
    #[inline]
    fn key(&mut self, v: usize, pid: u32, vpn: u64) -> Result<u64> {
        let rk = ((pid as u64) << REGION_SHIFT) | (vpn >> REGION_SHIFT);
        let (ck, cs) = self.region_cache[v];
        let slot = if ck == rk {
            cs
        } else {
            self.region_slot(v, rk)?
        };
        Ok(((slot as u64) << (REGION_SHIFT - self.gshift)) | ((vpn & REGION_MASK) >> self.gshift))
    }

    /// The slot of region `rk`, given one if it has none, cached for vCPU `v`.
    #[cold]
    #[inline(never)]
    fn region_slot(&mut self, v: usize, rk: u64) -> Result<u32> {
        let slot = match self.regions.get(&rk) {
            Some(&s) => s,
            None => {
                if self.region_back.len() >= MAX_REGIONS {
                    return Err(Error::config(
                        "workload",
                        format!(
                            "more than {MAX_REGIONS} GiB-regions of guest address space in use"
                        ),
                    ));
                }
                let s = self.region_back.len() as u32;
                self.region_back.push(rk);
                self.regions.insert(rk, s);
                // Each process is an address space of its own (its VMAs' readahead state).
                self.guest.set_address_space(
                    (s as u64) << (REGION_SHIFT - self.gshift),
                    (rk >> REGION_SHIFT) as u32,
                );
                s
            }
        };
        self.region_cache[v] = (rk, slot);
        Ok(slot)
    }

    /// The guest manager's page number for `vpn` of `pid` if its region has a slot.
    pub(super) fn key_if_any(&self, pid: u32, vpn: u64) -> Option<u64> {
        let rk = ((pid as u64) << REGION_SHIFT) | (vpn >> REGION_SHIFT);
        let slot = *self.regions.get(&rk)?;
        Some(((slot as u64) << (REGION_SHIFT - self.gshift)) | ((vpn & REGION_MASK) >> self.gshift))
    }

    /// (pid, first vpn) of a guest manager page number.
    fn unkey(&self, key: u64) -> (u32, u64) {
        unkey_in(&self.region_back, self.gshift, key)
    }

    pub(super) fn proc_table(&mut self, pid: u32) -> Result<&mut RadixTable> {
        self.procs
            .get_mut(pid as usize)
            .and_then(|p| p.as_mut())
            .ok_or_else(|| Error::config("workload", format!("process {pid} does not exist")))
    }

    /// Natively, page-table pages come from the machine's memory as a mapping needs them
    /// (`__pte_alloc` and the levels above): there is no guest budget of them, so the pool
    /// grows, 64 pages at a time, whenever fewer than a mapping may need (one per level)
    /// are free. Like a guest's, they are not charged to the frames.
    pub(super) fn grow_native_pt(&mut self) {
        if self.paging != Paging::Native || self.pt_free.len() > self.levels as usize {
            return;
        }
        let end = self.pt_base + self.pt_total;
        self.pt_free.extend((end..end + 64).rev());
        self.pt_owner.extend(std::iter::repeat_n(FREE_PT, 64));
        self.pt_total += 64;
    }

    pub(super) fn note_pt_peak(&mut self) {
        let used = self.pt_total - self.pt_free.len() as u64;
        self.r.pt_pages_peak = self.r.pt_pages_peak.max(used);
    }

    /// Apply the guest manager's (natively: the machine's) reclaim unmaps: the process
    /// tables and the TLBs. `reclaimer` is the vCPU (natively: the thread's) whose reclaim
    /// unmapped them, `None` for the native kswapd (a CPU that runs no process).
    ///
    /// `shrink_folio_list` unmaps with `TTU_BATCH_FLUSH` (Linux 6.8 mm/vmscan.c): when the
    /// process runs on a CPU other than the reclaimer's (`arch_tlbbatch_should_defer`), the
    /// flush is deferred and `try_to_unmap_flush` ends the batch with one full flush of the
    /// process's entries on every CPU it runs on (`arch_tlbbatch_flush`: TLB_FLUSH_ALL, a
    /// CR3 reload of its PCID; under shadow paging a CR3 exit). Otherwise each page is
    /// flushed where it is (`ptep_clear_flush`: INVLPG). Either way a CPU that does not run
    /// the process now flushes when it switches to it (`inc_mm_tlb_gen`). Left out: one
    /// flush per batch of 32 pages (one per reclaim pass or fault here: the TLBs end in the
    /// same state, fewer flushes are charged) and the IPIs' cost to the remote CPUs.
    pub(super) fn sync_guest_unmaps(&mut self, reclaimer: Option<usize>) -> Result<()> {
        let Some(mut log) = self.guest.unmap_log.take() else {
            return Ok(());
        };
        let v = reclaimer.unwrap_or(0);
        let mut out = Ok(());
        let mut pages = std::mem::take(&mut self.unmapped);
        pages.clear();
        for &key in &log {
            let (pid, vpn) = self.unkey(key);
            let va = vpn << 12;
            let free = &mut self.pt_free;
            let owner = &mut self.pt_owner;
            let base = self.pt_base;
            if let Some(Some(t)) = self.procs.get_mut(pid as usize) {
                t.unmap(va, &mut |f| {
                    free.push(f);
                    owner[(f - base) as usize] = FREE_PT;
                });
            }
            if out.is_ok() {
                out = self.report_pt_writes(v, pid);
            }
            pages.push((pid, va));
        }
        log.clear();
        self.guest.unmap_log = Some(log);
        pages.sort_unstable_by_key(|&(pid, _)| pid);
        let mut i = 0;
        while i < pages.len() && out.is_ok() {
            let pid = pages[i].0;
            let n = pages[i..].iter().take_while(|p| p.0 == pid).count();
            let defer = self
                .vcpus
                .iter()
                .enumerate()
                .any(|(c, vc)| vc.pid == pid && Some(c) != reclaimer);
            if defer {
                out = self.batch_flush(pid);
            } else {
                for &(_, va) in &pages[i..i + n] {
                    if out.is_ok() {
                        out = self.shootdown(pid, va);
                    }
                }
            }
            i += n;
        }
        self.unmapped = pages;
        out
    }

    /// `arch_tlbbatch_flush`: every vCPU running `pid` flushes its entries (a CR3 reload of
    /// the current PCID, which exits to KVM under shadow paging); the others flush when they
    /// next switch to it.
    fn batch_flush(&mut self, pid: u32) -> Result<()> {
        self.tlb_gen[pid as usize] += 1;
        let g = self.tlb_gen[pid as usize];
        for c in 0..self.vcpus.len() {
            if self.vcpus[c].pid != pid {
                continue;
            }
            let vc = &mut self.vcpus[c];
            if let Some(m) = vc.mmu.as_mut() {
                m.load_cr3(pcid(pid), false);
            }
            vc.seen_gen[pid as usize] = g;
            self.r.reclaim_flushes += 1;
            self.kvm_cr3(c, pid, false, true)?;
        }
        Ok(())
    }

    /// `flush_tlb_page`: INVLPG on vCPUs running `pid` (each exits to KVM under shadow
    /// paging); the others flush that PCID when they next switch to it.
    pub(super) fn shootdown(&mut self, pid: u32, va: u64) -> Result<()> {
        self.tlb_gen[pid as usize] += 1;
        let g = self.tlb_gen[pid as usize];
        for c in 0..self.vcpus.len() {
            if self.vcpus[c].pid != pid {
                continue;
            }
            if let Some(m) = self.vcpus[c].mmu.as_mut() {
                m.invlpg(va);
            }
            self.vcpus[c].seen_gen[pid as usize] = g;
            self.r.shootdown_pages += 1;
            if self.kvm.is_some() {
                self.with_kvm(|k, gv| k.invlpg(gv, c, va))?;
                self.r.exits += 1;
                self.r.exits_invlpg += 1;
            }
        }
        Ok(())
    }

    /// The vCPU's MMU translates `va` through the tables of the paging mode. `None`: the
    /// shadow walk found no root and KVM reloaded it; translate again.
    fn hw_translate(
        &mut self,
        v: usize,
        pid: u32,
        va: u64,
        kind: AccessKind,
    ) -> Result<Option<std::result::Result<crate::translate::Translation, crate::translate::Fault>>>
    {
        let out = self.hw_translate_raw(v, pid, va, kind)?;
        if let Some(r) = &out {
            self.tcycles += match r {
                Ok(t) => t.cycles as u64,
                Err(f) => f.cycles as u64,
            };
        }
        Ok(out)
    }

    fn hw_translate_raw(
        &mut self,
        v: usize,
        pid: u32,
        va: u64,
        kind: AccessKind,
    ) -> Result<Option<std::result::Result<crate::translate::Translation, crate::translate::Fault>>>
    {
        let vc = &mut self.vcpus[v];
        Ok(Some(match self.paging {
            Paging::Native => {
                let t = self.procs[pid as usize].as_mut().expect("process exists");
                vc.mmu().translate(Tables::Native(t), va, kind)
            }
            Paging::Tdp => {
                let t = self.procs[pid as usize].as_mut().expect("process exists");
                let ept = self
                    .host
                    .as_mut()
                    .and_then(|h| h.ept.as_mut())
                    .expect("tdp has an EPT");
                vc.mmu().translate(
                    Tables::Tdp {
                        guest: t,
                        host: ept,
                    },
                    va,
                    kind,
                )
            }
            Paging::Shadow => {
                let mut w = ShadowWalker {
                    kvm: self.kvm.as_mut().expect("shadow has KVM"),
                    vcpu: v,
                    levels: self.levels,
                    no_root: false,
                };
                let out = vc.mmu().translate(Tables::Shadow(&mut w), va, kind);
                if w.no_root {
                    self.mark();
                    self.with_kvm(|k, g| k.reload(g, v))?;
                    return Ok(None);
                }
                out
            }
        }))
    }

    /// What follows the guest manager's handling of a reference to `vpn` of `pid` (`first`
    /// and `evictions`: its counters before): an out-of-memory end, a reclaimed 1 GiB page
    /// (hugetlb pages are never reclaimed), the page's first touch noted for `Exit`.
    fn after_guest_access(&mut self, pid: u32, vpn: u64, first: u64, evictions: u64) -> Result<()> {
        if let Some(t) = self.guest.out_of_memory() {
            return Err(self.out_of_memory(t));
        }
        if self.gshift == 18 && self.guest.stats.evictions != evictions {
            return Err(hugetlb_reclaimed("vm.guest_page", "guest"));
        }
        if self.guest.stats.first_touch != first {
            let base_vpn = vpn & !((1u64 << self.gshift) - 1);
            self.touched[pid as usize].push(base_vpn);
        }
        Ok(())
    }

    /// The memory managers serve a reference that missed the TLB: the guest's (a guest page
    /// fault if the page is not mapped; else its accessed and dirty bits, which the walk
    /// sets) and, under TDP, the host's for the gfn. The process table and the EPT follow.
    fn serve(&mut self, v: usize, pid: u32, vpn: u64, write: bool) -> Result<()> {
        let key = self.key(v, pid, vpn)?;
        let first = self.guest.stats.first_touch;
        let majors = self.guest.stats.major_faults;
        let evictions = self.guest.stats.evictions;
        self.guest.mm.now = self.vcpus[v].clock;
        self.guest.access(
            Access {
                page: key,
                write,
                gup: false,
            },
            u64::MAX,
        );
        self.after_guest_access(pid, vpn, first, evictions)?;
        if !self.tlb {
            // No hardware table to keep in step, no TLB to flush.
            return Ok(());
        }
        self.sync_guest_unmaps(Some(v))?;
        let unit = 1u64 << self.gshift;
        let base_vpn = vpn & !(unit - 1);
        let pte = self.guest.mm.pt.pte(key);
        let base_gfn = (crate::mm::pte_frame(pte) as u64) << self.gshift;
        let gfn = base_gfn | (vpn & (unit - 1));
        let va = base_vpn << 12;
        let size = PageSize::ALL[(self.gshift / 9) as usize];
        // Keep the process's hardware table in step with the manager.
        let mapped = self.proc_table(pid)?.lookup(va).map(|(pa, _, _)| pa);
        if mapped != Some(base_gfn << 12) {
            self.grow_native_pt();
            let t = self.procs[pid as usize].as_mut().expect("checked above");
            if mapped.is_some() {
                t.unmap(va, &mut |_| {});
            }
            let free = &mut self.pt_free;
            let owner = &mut self.pt_owner;
            let base = self.pt_base;
            t.map(va, base_gfn << 12, size, PTE_W, &mut || {
                let f = free.pop()?;
                owner[(f - base) as usize] = pid;
                Some(f)
            })
            .map_err(|_| {
                Error::config(
                    "vm.pt_pages",
                    "the guest's page-table pages ran out; give more (pt_pages)",
                )
            })?;
            self.note_pt_peak();
            self.report_pt_writes(v, pid)?;
        }
        // The host sees the reference too: its accessed bit is the EPT's (TDP) or the shadow
        // entry's (shadow), set by the same walk.
        if self.paging != Paging::Native {
            // The guest's fault allocated the frame and filled it whole (`clear_page` of a
            // first touch, its swap-in, a file page's read): a host swap read of it now is a
            // false read (module `pathologies`, VSwapper §3). Any other store writes part of
            // it (what VSwapper's Preventer emulates, module `preventer`).
            let st = &self.guest.stats;
            let why = if st.first_touch != first || st.major_faults != majors {
                HostTouch::GuestFill
            } else if write {
                HostTouch::GuestWrite
            } else {
                HostTouch::Other
            };
            self.host_touch_as(gfn, write, why)?;
        }
        Ok(())
    }

    /// Why vCPU `v` cannot access page `vpn` of process `pid`: beyond the address space, or
    /// in a process that has exited (a workload that exits a process a vCPU still runs and
    /// then accesses memory from it; the walk would find no table: an error, not a panic).
    #[cold]
    #[inline(never)]
    fn bad_access(&self, v: usize, pid: u32, vpn: u64) -> Error {
        if vpn >= VA_PAGES {
            Error::config(
                "workload",
                format!("guest page {vpn:#x} beyond the 48-bit address space of a process"),
            )
        } else {
            Error::config(
                "workload",
                format!("vCPU {v} accesses memory of process {pid}, which has exited"),
            )
        }
    }

    /// One access of vCPU `v` to page `vpn` of its current process. The TLB is looked up
    /// first: a hit touches neither memory manager (as on x86, where the accessed bit is set
    /// only when a walk fills the TLB, and Linux clears it without a flush); a walk lets both
    /// managers see the reference; a fault is served by them (and by KVM) and the access
    /// retried.
    pub fn access(&mut self, v: usize, vpn: u64, write: bool) -> Result<()> {
        let pid = self.vcpus[v].pid;
        if vpn >= VA_PAGES || !matches!(self.procs.get(pid as usize), Some(Some(_))) {
            return Err(self.bad_access(v, pid, vpn));
        }
        let va = vpn << 12;
        let kind = if write {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        if let Some(Ok(t)) = self.hw_translate(v, pid, va, kind)? {
            if t.level != crate::translate::TlbLevel::Walk {
                return Ok(());
            }
            self.mark();
            return self.serve(v, pid, vpn, write);
        }
        self.mark();
        let guest_faults = self.guest.stats.faults;
        self.serve(v, pid, vpn, write)?;
        if self.paging == Paging::Shadow && self.guest.stats.faults != guest_faults {
            // Shadow paging intercepts every #PF: the guest's own fault exited first, and KVM
            // injected it (`pf_guest`) before the guest's handler ran.
            self.r.exits += 1;
            self.r.exits_pf += 1;
        }
        for _retry in 0..64 {
            let Some(out) = self.hw_translate(v, pid, va, kind)? else {
                continue;
            };
            let f = match out {
                Ok(_) => return Ok(()),
                Err(f) => f,
            };
            match (self.paging, f.kind) {
                (Paging::Tdp, FaultKind::Nested { gpa, .. }) => {
                    // A guest page-table page the host does not map now.
                    self.host_touch(gpa >> 12, true)?;
                    self.r.ept_violations_pt += 1;
                    let vc = &mut self.vcpus[v];
                    vc.mmu().vm_exit(HOST_PCID);
                    vc.mmu().vm_entry(VPID, pcid(pid))?;
                }
                (Paging::Shadow, FaultKind::NotPresent { .. } | FaultKind::Protection) => {
                    // A shadow page fault: exit to `kvm_mmu_page_fault`.
                    self.r.exits += 1;
                    self.r.exits_pf += 1;
                    let o = self
                        .with_kvm(|k, g| k.page_fault(g, v, va, write, true))?
                        .expect("shadow has KVM");
                    match o {
                        PfOutcome::Fixed | PfOutcome::Spurious => {}
                        PfOutcome::Emulate { gfn } => {
                            self.with_kvm(|k, g| k.emulate_write(g, v, gfn, GuestStore::Data))?;
                        }
                        PfOutcome::NoSpace => {
                            // `make_mmu_pages_available` found nothing to zap (every page
                            // in use is a root): KVM's page fault returns -ENOSPC.
                            let (used, max) = self
                                .kvm
                                .as_ref()
                                .map_or((0, 0), |k| (k.n_used(), k.n_max()));
                            return Err(Error::config(
                                "vm.mmu_pages",
                                format!(
                                    "the shadow-page pool ({max} pages, {used} in use, all \
                                     roots) has no page to recycle for page {vpn} of process \
                                     {pid}: give at least 4 pages per vCPU (its root and the \
                                     cached ones) plus the levels below"
                                ),
                            ));
                        }
                        other => {
                            return Err(Error::config(
                                "vm",
                                format!(
                                    "shadow page fault on page {vpn} of process {pid} ended in {other:?}"
                                ),
                            ))
                        }
                    }
                    let vc = &mut self.vcpus[v];
                    vc.mmu().vm_exit(HOST_PCID);
                    vc.mmu().vm_entry(VPID, pcid(pid))?;
                }
                (_, other) => {
                    return Err(Error::config(
                        "vm",
                        format!(
                            "translation of page {vpn} of process {pid} failed after its fault was served: {other:?}"
                        ),
                    ))
                }
            }
        }
        Err(Error::config(
            "vm",
            format!("translation of page {vpn} of process {pid} kept faulting"),
        ))
    }

    /// An access without address translation ([`VmConfig::tlb`] false): the memory manager
    /// sees it; a hit costs `access_ns`, a fault what [`Vm::charge`] says.
    #[inline(always)]
    pub(super) fn access_untranslated(
        &mut self,
        v: usize,
        vpn: u64,
        write: bool,
        cls: Classes<'_>,
    ) -> Result<()> {
        let vc = &mut self.vcpus[v];
        vc.accesses += 1;
        vc.writes += write as u64;
        let pid = vc.pid;
        if vpn >= VA_PAGES || !matches!(self.procs.get(pid as usize), Some(Some(_))) {
            return Err(self.bad_access(v, pid, vpn));
        }
        if !self.last_valid {
            self.take_last_work();
        }
        // The manager's part of `serve` (no hardware table, no host): a hit changes none of
        // the counters `after_guest_access` and `charge` look at.
        let key = self.key(v, pid, vpn)?;
        let counts = self.fault_counts();
        let Some(before) =
            self.untranslated_manager_access(key, write, self.vcpus[v].clock, counts)
        else {
            let ns = self.costs.access_ns;
            self.r.time.translation_ns += ns;
            self.vcpus[v].clock += ns;
            return Ok(());
        };
        self.untranslated_fault(v, pid, vpn, before, cls)
    }

    /// The guest manager's faults, first touches and evictions: what
    /// [`Vm::untranslated_manager_access`] is given from before its access. Only a fault
    /// changes them (`do_anonymous_page`, `do_swap_page` and the reclaim they enter), so a
    /// run of accesses that ends at its first fault reads them once.
    #[inline(always)]
    fn fault_counts(&self) -> (u64, u64, u64) {
        let st = &self.guest.stats;
        (st.faults, st.first_touch, st.evictions)
    }

    /// The guest's manager serves `key` at `now`, its fault counters being `counts`
    /// ([`Vm::fault_counts`]) before: `None` on a hit (which changes none of the counters
    /// `after_guest_access` and `charge` look at), else the counters `untranslated_fault`
    /// needs from before the fault (first touches, evictions).
    #[inline(always)]
    fn untranslated_manager_access(
        &mut self,
        key: u64,
        write: bool,
        now: u64,
        (faults, first, evictions): (u64, u64, u64),
    ) -> Option<(u64, u64)> {
        let g = &mut self.guest;
        g.mm.now = now;
        g.access(
            Access {
                page: key,
                write,
                gup: false,
            },
            u64::MAX,
        );
        (g.stats.faults != faults).then_some((first, evictions))
    }

    /// A run of ops of vCPU `v` without address translation (no TLB model, no other VM on
    /// the host): accesses, compute and request boundaries from the start of `ops`, the same
    /// as [`Vm::access_untranslated`] and [`Vm::plain_op`] op by op, with the vCPU's clock
    /// and counters kept in registers while accesses hit. It stops before the first op of
    /// another kind, after an access that faults, or after an op that takes the clock to
    /// `end`; returns how many ops it ran. The caller makes sure that these ops need none of
    /// its loop's other checks after each op: the vCPU has no I/O wait and kswapd is not to
    /// be woken (a hit, compute or a request boundary changes neither).
    #[inline(always)]
    pub(super) fn run_untranslated(
        &mut self,
        v: usize,
        ops: &[Op],
        end: u64,
        cls: Classes<'_>,
    ) -> Result<usize> {
        debug_assert!(!self.tlb && !self.shares_host);
        let pid = self.vcpus[v].pid;
        let live = matches!(self.procs.get(pid as usize), Some(Some(_)));
        let access_ns = self.costs.access_ns;
        let per = REGION_SHIFT - self.gshift;
        let gshift = self.gshift;
        let (mut ck, mut cs) = self.region_cache[v];
        let mut clock = self.vcpus[v].clock;
        let (mut accesses, mut writes, mut hit_ns, mut compute_ns) = (0u64, 0u64, 0u64, 0u64);
        let mut n = 0;
        let mut out = Ok(());
        // (hits, compute and request boundaries leave them as they are; the run ends at a
        // fault)
        let counts = self.fault_counts();
        for &op in ops {
            let (vpn, write) = match op {
                Op::Access { page, write } => (page, write),
                Op::Compute { ns } => {
                    n += 1;
                    clock += ns as u64;
                    compute_ns += ns as u64;
                    if clock >= end {
                        break;
                    }
                    continue;
                }
                Op::RequestBegin { .. } | Op::RequestEnd => {
                    n += 1;
                    self.vcpus[v].clock = clock;
                    self.plain_op(v, op);
                    continue;
                }
                _ => break,
            };
            n += 1;
            accesses += 1;
            writes += write as u64;
            if vpn >= VA_PAGES || !live {
                out = Err(self.bad_access(v, pid, vpn));
                break;
            }
            if !self.last_valid {
                self.take_last_work();
            }
            let rk = ((pid as u64) << REGION_SHIFT) | (vpn >> REGION_SHIFT);
            if rk != ck {
                match self.region_slot(v, rk) {
                    Ok(s) => (ck, cs) = (rk, s),
                    Err(e) => {
                        out = Err(e);
                        break;
                    }
                }
            }
            let key = ((cs as u64) << per) | ((vpn & REGION_MASK) >> gshift);
            let Some(before) = self.untranslated_manager_access(key, write, clock, counts) else {
                clock += access_ns;
                hit_ns += access_ns;
                if clock >= end {
                    break;
                }
                continue;
            };
            self.end_untranslated_run(v, clock, [accesses, writes, hit_ns, compute_ns]);
            return self
                .untranslated_fault(v, pid, vpn, before, cls)
                .map(|()| n);
        }
        self.end_untranslated_run(v, clock, [accesses, writes, hit_ns, compute_ns]);
        out.map(|()| n)
    }

    /// The end of a run of `run_untranslated`: the vCPU's clock, and the counts kept in
    /// registers during it (accesses, writes, hit time, compute time) added where they go.
    #[inline(always)]
    fn end_untranslated_run(
        &mut self,
        v: usize,
        clock: u64,
        [accesses, writes, hit_ns, compute_ns]: [u64; 4],
    ) {
        let vc = &mut self.vcpus[v];
        vc.clock = clock;
        vc.accesses += accesses;
        vc.writes += writes;
        self.r.time.translation_ns += hit_ns;
        self.r.time.compute_ns += compute_ns;
    }

    /// The rest of an untranslated access that faulted: its checks and its cost.
    #[inline(never)]
    fn untranslated_fault(
        &mut self,
        v: usize,
        pid: u32,
        vpn: u64,
        (first, evictions): (u64, u64),
        cls: Classes<'_>,
    ) -> Result<()> {
        let out = self.after_guest_access(pid, vpn, first, evictions);
        let before = self.last_work;
        let after = self.work_snapshot();
        self.charge(v, &before, &after, true, cls);
        self.last_work = after;
        out
    }
}
