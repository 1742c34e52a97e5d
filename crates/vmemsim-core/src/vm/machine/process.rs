//! Guest processes and the op dispatch: a context switch (a CR3 load that flushes the PCID
//! when the mm's `tlb_gen` moved, as `switch_mm_irqs_off`), fork's new page table, munmap
//! (`flush_tlb_mm_range` up to `tlb_single_page_flush_ceiling`), exit (`exit_mmap`:
//! `zap_pte_range`, `free_pgtables`), and [`Vm::op`] / [`Vm::op_with`], which run one op of
//! a vCPU.

use super::*;

/// Every page as numeric data (what a VM used directly, without its workload, assumes).
fn numeric(_pid: u32, _vpn: u64) -> ContentClass {
    ContentClass::Numeric
}

impl Vm {
    fn switch(&mut self, v: usize, pid: u32) -> Result<()> {
        self.proc_table(pid)?;
        let g = self.tlb_gen[pid as usize];
        let vc = &mut self.vcpus[v];
        let noflush = vc.seen_gen[pid as usize] == g;
        if let Some(m) = vc.mmu.as_mut() {
            m.load_cr3(pcid(pid), noflush);
        }
        vc.seen_gen[pid as usize] = g;
        vc.pid = pid;
        self.r.cr3_loads += 1;
        if !noflush {
            self.r.cr3_flushes += 1;
            self.r.deferred_flushes += 1;
        }
        self.kvm_cr3(v, pid, noflush, true)
    }

    fn spawn(&mut self, pid: u32) -> Result<()> {
        if pid >= MAX_PIDS {
            return Err(Error::config(
                "workload",
                format!("process id {pid} beyond the VM's {MAX_PIDS}"),
            ));
        }
        let i = pid as usize;
        if i >= self.procs.len() {
            self.procs.resize_with(i + 1, || None);
            self.touched.resize_with(i + 1, Vec::new);
            self.tlb_gen.resize(i + 1, 0);
            for v in &mut self.vcpus {
                v.seen_gen.resize(i + 1, 0);
            }
        }
        if self.procs[i].is_some() {
            return Err(Error::config(
                "workload",
                format!("process {pid} created twice"),
            ));
        }
        self.grow_native_pt();
        let root = self.pt_free.pop().ok_or_else(|| {
            Error::config(
                "vm.pt_pages",
                "the guest's page-table pages ran out at a fork",
            )
        })?;
        self.pt_owner[(root - self.pt_base) as usize] = pid;
        let mut t = RadixTable::new(self.levels, root)?;
        if self.kvm.is_some() {
            t.log = Some(Vec::new());
        }
        self.procs[i] = Some(t);
        // A fresh address space: TLBs must not keep a previous owner's entries of this PCID.
        self.tlb_gen[i] += 1;
        self.r.processes_created += 1;
        self.note_pt_peak();
        Ok(())
    }

    /// munmap of `pages` pages from `start`. With large guest pages every large page the
    /// range touches goes whole (Linux would split a THP and free the range's part; a
    /// hugetlbfs range must be aligned).
    /// Unmap page `vpn` of process `pid` from the guest's manager and from the process's page
    /// table, freeing the table pages it empties (`zap_pte_range`, `free_pgtables`). Returns
    /// whether the table had a mapping for it.
    fn unmap_one(&mut self, pid: u32, vpn: u64) -> bool {
        if let Some(key) = self.key_if_any(pid, vpn) {
            self.guest.unmap_page(key);
        }
        let free = &mut self.pt_free;
        let owner = &mut self.pt_owner;
        let base = self.pt_base;
        let Some(Some(t)) = self.procs.get_mut(pid as usize) else {
            return false;
        };
        t.unmap(vpn << 12, &mut |f| {
            free.push(f);
            owner[(f - base) as usize] = FREE_PT;
        })
        .is_some()
    }

    fn unmap_range(&mut self, v: usize, pid: u32, start: u64, pages: u64) -> Result<()> {
        let unit = 1u64 << self.gshift;
        let end = start.saturating_add(pages).min(VA_PAGES);
        let start = start & !(unit - 1);
        let n = (end.saturating_sub(start)).div_ceil(unit);
        for vpn in (start..end).step_by(unit as usize) {
            if self.unmap_one(pid, vpn) {
                self.r.pages_unmapped += 1;
            }
        }
        self.report_pt_writes(v, pid)?;
        // `flush_tlb_mm_range`: one INVLPG per page (of the mapping's size, `stride_shift`)
        // up to the ceiling, else the whole address space.
        if n <= TLB_SINGLE_PAGE_FLUSH_CEILING {
            for vpn in (start..end).step_by(unit as usize) {
                self.shootdown(pid, vpn << 12)?;
            }
        } else {
            self.tlb_gen[pid as usize] += 1;
            let g = self.tlb_gen[pid as usize];
            for c in 0..self.vcpus.len() {
                if self.vcpus[c].pid == pid {
                    if let Some(m) = self.vcpus[c].mmu.as_mut() {
                        m.load_cr3(pcid(pid), false);
                    }
                    self.vcpus[c].seen_gen[pid as usize] = g;
                    self.r.cr3_flushes += 1;
                    if self.kvm.is_some() {
                        // A full flush: KVM syncs the roots (`kvm_vcpu_flush_tlb_guest`).
                        self.with_kvm(|k, gv| k.flush_tlb_guest(gv, c))?;
                        self.r.exits += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// `exit_mmap`: the process's pages are freed and its page-table entries cleared
    /// (`zap_pte_range`), each clear a store into a page-table page that KVM sees under
    /// shadow paging (direct, unsync, emulated; repeated stores flood and zap the shadow
    /// page, as they do in KVM), then its page-table pages are freed (`free_pgtables`).
    fn exit(&mut self, v: usize, pid: u32) -> Result<()> {
        self.proc_table(pid)?;
        let pages = std::mem::take(&mut self.touched[pid as usize]);
        for &vpn in &pages {
            self.unmap_one(pid, vpn);
        }
        self.report_pt_writes(v, pid)?;
        let t = self.procs[pid as usize].take().expect("checked");
        for f in t.table_frames() {
            let gfn = f;
            self.pt_free.push(gfn);
            self.pt_owner[(gfn - self.pt_base) as usize] = FREE_PT;
        }
        self.tlb_gen[pid as usize] += 1;
        self.r.processes_exited += 1;
        Ok(())
    }

    /// Run one op of vCPU `v`, advancing its clock by what the op cost (see the module docs'
    /// "Time").
    pub fn op(&mut self, v: usize, op: Op) -> Result<()> {
        self.op_with(v, op, &numeric)
    }

    /// Ops that touch no memory and no other vCPU (compute, arrival, request boundaries):
    /// applied to vCPU `v`'s clock and counters; false for any other op.
    #[inline(always)]
    pub(super) fn plain_op(&mut self, v: usize, op: Op) -> bool {
        let vc = &mut self.vcpus[v];
        match op {
            Op::Compute { ns } => {
                vc.clock += ns as u64;
                self.r.time.compute_ns += ns as u64;
            }
            Op::Arrive { at_ns } => {
                let at_ns = vc.epoch.saturating_add(at_ns);
                if vc.clock < at_ns {
                    self.r.time.idle_ns += at_ns - vc.clock;
                    vc.clock = at_ns;
                }
                vc.arrival = Some(at_ns);
            }
            Op::RequestBegin { kind } => {
                vc.req_start = Some(vc.arrival.take().unwrap_or(vc.clock));
                vc.req_kind = kind;
            }
            Op::RequestEnd => {
                if let Some(t0) = vc.req_start.take() {
                    let k = vc.req_kind as usize;
                    if self.hists.len() <= k {
                        self.hists.resize_with(k + 1, Default::default);
                    }
                    self.hists[k].record(vc.clock - t0);
                }
            }
            _ => return false,
        }
        true
    }

    /// An access op of vCPU `v` ([`Vm::op_with`] of `Op::Access`, without its dispatch).
    #[inline]
    pub(super) fn access_op(
        &mut self,
        v: usize,
        page: u64,
        write: bool,
        cls: Classes<'_>,
    ) -> Result<()> {
        if self.shares_host {
            self.sync_host_unmaps();
        }
        if self.tlb {
            self.access_translated(v, page, write, cls)
        } else {
            self.access_untranslated(v, page, write, cls)
        }
    }

    /// The leading run of `Op::Access`es of `ops` through the TLB model, as
    /// [`Vm::access_op`] one by one: stops after the access that brings vCPU `v`'s clock to
    /// `end`, leaves it waiting for I/O, or (with `watch_kswapd`) finds the guest's kswapd
    /// awake, so the caller's checks after an op see the same state. Returns the ops taken.
    pub(super) fn run_translated(
        &mut self,
        v: usize,
        ops: &[Op],
        end: u64,
        watch_kswapd: bool,
        cls: Classes<'_>,
    ) -> Result<usize> {
        debug_assert!(self.tlb);
        let mut n = 0;
        for &op in ops {
            let Op::Access { page, write } = op else {
                break;
            };
            n += 1;
            if self.shares_host {
                self.sync_host_unmaps();
            }
            self.access_translated(v, page, write, cls)?;
            let vc = &self.vcpus[v];
            if vc.clock >= end || vc.io_wait > 0 || watch_kswapd && self.guest_kswapd_awake() {
                break;
            }
        }
        Ok(n)
    }

    /// An access through the TLB model. Most accesses hit the TLB and change nothing but the
    /// translation cycles: the other counters are snapshotted only once the access takes the
    /// slow path (`mark`), where they have not changed yet.
    #[inline]
    fn access_translated(
        &mut self,
        v: usize,
        page: u64,
        write: bool,
        cls: Classes<'_>,
    ) -> Result<()> {
        self.op_c0 = self.tcycles;
        self.snap = None;
        let vc = &mut self.vcpus[v];
        vc.accesses += 1;
        vc.writes += write as u64;
        let out = self.access(v, page, write);
        if self.snap.is_none() {
            let c = &self.costs;
            // Rounded to the nearest ns (half up; the cycles are never negative). Converted
            // through i64, which x86-64 does in one instruction each way (u64 takes a
            // branch and a fix-up); one access's cycles are far below 2^53.
            let ns = (((self.tcycles - self.op_c0) as i64) as f64 / c.cpu_ghz + 0.5) as i64 as u64
                + c.access_ns;
            self.r.time.translation_ns += ns;
            self.vcpus[v].clock += ns;
        } else if let Some(before) = self.snap.take() {
            let after = self.work_snapshot();
            self.charge(v, &before, &after, true, cls);
        }
        out
    }

    /// [`Vm::op`], with the content of each page (how it compresses in zram) given by
    /// `cls(pid, vpn)` ([`Workload::content_class`]).
    pub fn op_with(&mut self, v: usize, op: Op, cls: Classes<'_>) -> Result<()> {
        // Host reclaim while another VM ran may have taken this VM's pages (alone on its
        // host, a VM applies its unmaps right after each host touch).
        if self.shares_host {
            self.sync_host_unmaps();
        }
        if self.plain_op(v, op) {
            return Ok(());
        }
        if op == Op::Barrier {
            let latest = self.vcpus.iter().map(|c| c.clock).max().unwrap_or(0);
            let vc = &mut self.vcpus[v];
            self.r.time.idle_ns += latest - vc.clock;
            vc.clock = latest;
            vc.epoch = latest;
            return Ok(());
        }
        if let Op::Access { page, write } = op {
            if !self.tlb {
                return self.access_untranslated(v, page, write, cls);
            }
            return self.access_translated(v, page, write, cls);
        }
        self.last_valid = false;
        let before = self.work_snapshot();
        let out = match op {
            Op::Spawn { pid } => self.spawn(pid),
            Op::Switch { pid } => self.switch(v, pid),
            Op::Exit { pid } => self.exit(v, pid),
            Op::Unmap { start, pages } => {
                let pid = self.vcpus[v].pid;
                self.unmap_range(v, pid, start, pages as u64)
            }
            // The record is the workload's: the engine calls `file_op` with it.
            Op::File { slot } => Err(Error::config(
                "workload",
                format!("a file op (slot {slot}) given without its record: use Vm::file_op"),
            )),
            _ => Ok(()),
        };
        let after = self.work_snapshot();
        self.charge(v, &before, &after, matches!(op, Op::Access { .. }), cls);
        out
    }
}
