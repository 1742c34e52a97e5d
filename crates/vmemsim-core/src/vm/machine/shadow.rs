//! KVM's shadow-paging glue: the guest as KVM reads it through guest memory (`GuestView`, a
//! [`GuestMemory`]), the shadow tables as the hardware walks them (`ShadowWalker`), the exits
//! the guest's page-table stores (write tracking, `kvm_mmu_track_write`: direct, unsync or
//! emulated) and CR3 loads cause, KVM's remote TLB flush (`kvm_flush_remote_tlbs`), and the
//! plan of KVM's shrinker as `do_shrink_slab` runs `mmu_shrinker` ([`shrink_slab_plan`]).

use super::*;

/// `do_shrink_slab` for one shrinker at one reclaim priority: `freeable` objects
/// (`count_objects`), `deferred` work carried from earlier calls (`nr_deferred`), `seeks`
/// (the cost of recreating an object; KVM's `mmu_shrinker` has `DEFAULT_SEEKS * 10` = 20),
/// `batch` (`SHRINK_BATCH` = 128). Returns the `nr_to_scan` of each `scan_objects` call to
/// make and the new deferred count. As Linux 6.8 (`mm/shrinker.c`): delta = (freeable >>
/// priority) · 4 / seeks; the total is (deferred >> priority) + delta, at most twice
/// `freeable`; scan in batches while the total is at least a batch or all of `freeable`;
/// defer deferred + delta − scanned, at most twice `freeable`.
pub fn shrink_slab_plan(
    freeable: u64,
    deferred: u64,
    priority: u32,
    seeks: u64,
    batch: u64,
    out: &mut Vec<u64>,
) -> u64 {
    out.clear();
    if freeable == 0 {
        return deferred;
    }
    let delta = (freeable >> priority) * 4 / seeks;
    let mut total = ((deferred >> priority) + delta).min(2 * freeable);
    let mut scanned = 0;
    while total >= batch || total >= freeable {
        let n = total.min(batch);
        out.push(n);
        scanned += n;
        total -= n;
    }
    (deferred + delta).saturating_sub(scanned).min(2 * freeable)
}

/// KVM's `mmu_shrinker.seeks` and the shrinkers' `SHRINK_BATCH`.
pub const MMU_SHRINKER_SEEKS: u64 = 20;
pub const SHRINK_BATCH: u64 = 128;

/// The guest as KVM sees it: its page tables through guest memory, and the host backing.
pub(super) struct GuestView<'a> {
    procs: &'a mut [Option<RadixTable>],
    pt_owner: &'a [u32],
    pt_base: u64,
    host: &'a mut HostSide,
    err: Option<Error>,
}

impl GuestView<'_> {
    fn table(&self, gfn: u64) -> Option<&RadixTable> {
        let pid = *self.pt_owner.get(gfn.checked_sub(self.pt_base)? as usize)?;
        self.procs.get(pid as usize)?.as_ref()
    }
}

impl GuestMemory for GuestView<'_> {
    fn read_gpte(&self, table_gfn: u64, index: usize) -> GuestPte {
        GuestPte(
            self.table(table_gfn)
                .and_then(|t| t.entry_arch(table_gfn, index))
                .unwrap_or(0),
        )
    }
    fn write_gpte(&mut self, table_gfn: u64, index: usize, pte: GuestPte) {
        // KVM writes only the accessed and dirty bits; the guest's own stores were applied
        // by the guest before the VM layer reported them.
        let Some(off) = table_gfn.checked_sub(self.pt_base) else {
            return;
        };
        let Some(&pid) = self.pt_owner.get(off as usize) else {
            return;
        };
        if let Some(Some(t)) = self.procs.get_mut(pid as usize) {
            t.set_ad(table_gfn, index, pte.0 & (PTE_A | PTE_D));
        }
    }
    fn faultin_pfn(&mut self, gfn: u64, write: bool) -> u8 {
        if let Err(e) = self.host.touch(gfn, write, HostTouch::Other) {
            self.err.get_or_insert(e);
        }
        // `host_pfn_mapping_level`: the level the host maps the page at.
        1 + (self.host.shift / 9) as u8
    }
    fn host_present(&self, gfn: u64) -> bool {
        self.host.present(gfn)
    }
}

/// The shadow tables as the hardware walker sees them.
pub(super) struct ShadowWalker<'a> {
    pub(super) kvm: &'a mut ShadowMmu,
    pub(super) vcpu: usize,
    pub(super) levels: u8,
    /// The walk found no root: the VM layer reloads it (`kvm_mmu_reload`).
    pub(super) no_root: bool,
}

/// Where the shadow tables' entries are placed in the page-table line cache: each shadow
/// table of a level gets its own 4 KiB page, keyed by the address bits above it.
const SHADOW_PT_BASE: u64 = 1 << 50;

impl Walkable for ShadowWalker<'_> {
    fn levels(&self) -> u8 {
        self.levels
    }
    fn walk(&mut self, va: u64, write: bool, path: &mut WalkPath) -> WalkEnd {
        let out = self.kvm.translate(self.vcpu, va, write, true);
        let refs = match out {
            ShadowWalk::Hit { refs, .. } | ShadowWalk::Fault { refs } => refs,
            ShadowWalk::NoRoot => 0,
        };
        path.len = refs.min(5);
        for i in 0..path.len as usize {
            let level = (self.levels - i as u8) as u32;
            let table = va >> (12 + 9 * level);
            let idx = (va >> (12 + 9 * (level - 1))) & 511;
            path.entry_pa[i] = SHADOW_PT_BASE + (((level as u64) << 40) | (table << 12)) + idx * 8;
        }
        match out {
            ShadowWalk::Hit {
                gfn,
                level,
                writable,
                ..
            } => WalkEnd::Leaf {
                base: (gfn << 12)
                    & !(PageSize::from_level(level).unwrap_or(PageSize::K4).bytes() - 1),
                size: PageSize::from_level(level).unwrap_or(PageSize::K4),
                writable,
                global: false,
            },
            ShadowWalk::Fault { refs } => WalkEnd::NotPresent {
                level: self.levels + 1 - refs.max(1),
            },
            ShadowWalk::NoRoot => {
                self.no_root = true;
                WalkEnd::NotPresent { level: self.levels }
            }
        }
    }
}

impl Vm {
    /// Run `f` with KVM and its view of the guest; then apply KVM's remote TLB flush.
    pub(super) fn with_kvm<T>(
        &mut self,
        f: impl FnOnce(&mut ShadowMmu, &mut GuestView<'_>) -> T,
    ) -> Result<Option<T>> {
        let (Some(kvm), Some(host)) = (self.kvm.as_mut(), self.host.as_mut()) else {
            return Ok(None);
        };
        let mut view = GuestView {
            procs: &mut self.procs,
            pt_owner: &self.pt_owner,
            pt_base: self.pt_base,
            host,
            err: None,
        };
        let out = f(kvm, &mut view);
        if let Some(e) = view.err.take() {
            return Err(e);
        }
        if kvm.take_remote_flush() {
            for v in &mut self.vcpus {
                if let Some(m) = v.mmu.as_mut() {
                    m.flush_vpid(VPID);
                }
            }
        }
        self.sync_host_unmaps();
        Ok(Some(out))
    }

    /// Shadow paging: the guest's stores into its page-table pages since the last call, as
    /// KVM sees them (direct, unsync or emulated).
    pub(super) fn report_pt_writes(&mut self, v: usize, pid: u32) -> Result<()> {
        if self.kvm.is_none() {
            return Ok(());
        }
        let mut buf = std::mem::take(&mut self.log_buf);
        buf.clear();
        if let Some(Some(t)) = self.procs.get_mut(pid as usize) {
            if let Some(log) = t.log.as_mut() {
                buf.append(log);
            }
        }
        let mut stored = u64::MAX;
        for &(gfn, idx) in &buf {
            // The guest's store goes to host memory: the host backs the table page (under
            // TDP the walks that read it do the same).
            if gfn != stored {
                stored = gfn;
                self.host_touch(gfn, true)?;
            }
            let pte = self.procs[pid as usize]
                .as_ref()
                .and_then(|t| t.entry_arch(gfn, idx as usize))
                .unwrap_or(0);
            let w = self
                .with_kvm(|k, g| k.guest_pt_write(g, v, gfn, idx as usize, GuestPte(pte), true))?;
            match w {
                Some(PtWrite::Direct) | None => {}
                Some(PtWrite::Unsynced) | Some(PtWrite::Emulated) => {
                    self.r.exits += 1;
                    self.r.exits_pt_write += 1;
                }
                Some(PtWrite::Unprotected) => {
                    self.r.exits += 2;
                    self.r.exits_pt_write += 2;
                }
            }
        }
        self.log_buf = buf;
        Ok(())
    }

    /// Shadow paging: a guest CR3 load exits to KVM.
    pub(super) fn kvm_cr3(&mut self, v: usize, pid: u32, noflush: bool, count: bool) -> Result<()> {
        if self.kvm.is_none() {
            return Ok(());
        }
        let root = self.procs[pid as usize]
            .as_ref()
            .map(|t| t.root_frame())
            .ok_or_else(|| Error::config("workload", format!("process {pid} does not exist")))?;
        let p = pcid(pid);
        self.with_kvm(|k, g| k.set_cr3(g, v, root, p, noflush))?;
        if count {
            self.r.exits += 1;
            self.r.exits_cr3 += 1;
        }
        Ok(())
    }
}
