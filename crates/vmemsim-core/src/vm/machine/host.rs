//! The host side of guest memory: the host's memory manager shared by the VMs on it
//! ([`HostShared`], built by [`host_for`]), one VM's range of it with its EPT (`HostSide`),
//! and the VM methods that serve a gfn from the host (an EPT violation under TDP, a host
//! fault under shadow paging) and apply host reclaim's unmaps: the MMU notifier →
//! `kvm_unmap_gfn_range` → `kvm_flush_remote_tlbs` (INVEPT on every vCPU under TDP), and the
//! batches of KVM's shrinker (`mmu_shrink_scan`) under shadow paging.

use super::pathologies::qemu_text;
use super::*;

/// The host's memory manager, shared by the VMs on it: each VM's guest memory is a range of
/// host pages (QEMU's anonymous mapping of that VM), VM `i`'s from `bases[i]` on. Reclaim
/// while one VM runs may take another's pages; those wait in `pending` until that VM runs
/// again (it applies them to its EPT or shadow MMU before its next access: no VM runs while
/// another one's op is simulated). KVM's shrinker counts the shadow pages of every VM and
/// zaps in one VM per call, rotating (`mmu_shrink_scan` moves the VM it shrank to the tail
/// of `vm_list`).
pub struct HostShared {
    pub(super) m: Machine<BoxedPolicy>,
    /// The host's timed swap device, if any.
    pub(super) dev: Option<super::cost::SharedSwapDev>,
    /// With `VmConfig::shared_disk`: the one block device of the guests' swap (and of the
    /// host's when it is the same device).
    pub(super) disk: Option<SharedDisk>,
    pub(super) bases: Vec<u64>,
    /// Per VM: its host pages (relative to its base) reclaimed and not yet applied.
    pub(super) pending: Vec<Vec<u64>>,
    /// Per VM: batches KVM's shrinker is to zap in it, not yet applied.
    pending_zap: Vec<Vec<u64>>,
    /// Per VM: its shadow pages in use, as of its last op (`count_objects` sums them).
    pub(super) n_used: Vec<u64>,
    shrink_deferred: u64,
    next_shrink: usize,
    scratch: Vec<u64>,
    passes: Vec<u8>,
    /// log2 of 4 KiB pages per host page.
    pub(super) shift: u32,
    /// Per VM with a virtual disk: its guest frames' image blocks (module `pathologies`).
    pub(super) images:
        Vec<Option<std::rc::Rc<std::cell::RefCell<super::pathologies::ImageBlocks>>>>,
    /// Per VM: its pathologies of uncooperative swapping so far.
    pub(super) pathologies: Vec<SwapPathologies>,
    /// Why the page being served now is touched (for the swap read it may take).
    pub(super) touch: HostTouch,
    /// QEMU's code (`VmConfig::qemu_text_pages`): its first host page and its pages.
    pub(super) text: Option<(u64, u32)>,
    /// VSwapper's Swap Mapper and False Reads Preventer (modules `mapper`, `preventer`),
    /// when some VM has either on.
    pub(super) mapper: Option<super::mapper::MapperState>,
    /// When the Swap Mapper's image reads for the host faults of the access being served
    /// complete (`filemap_fault` of a dropped named page; 0: none): the vCPU waits for them
    /// with the host's swap reads (`Vm::submit_io`).
    pub(super) named_read_done: u64,
}

impl HostShared {
    /// Route the host's reclaim unmaps to the VMs owning the pages, count the swap traffic's
    /// pathologies by VM (module `pathologies`), and run KVM's shrinker for each reclaim
    /// pass.
    pub(super) fn distribute(&mut self) {
        self.count_pathologies();
        let mut log = std::mem::take(&mut self.scratch);
        log.clear();
        if let Some(l) = self.m.unmap_log.as_mut() {
            log.append(l);
        }
        for &key in &log {
            if self.text.is_some_and(|(base, _)| key >= base) {
                // QEMU's code: no guest memory, nothing to unmap in a VM.
                continue;
            }
            let owner = self.bases.partition_point(|&b| b <= key) - 1;
            self.pending[owner].push(key - self.bases[owner]);
        }
        self.scratch = log;
        let mut passes = std::mem::take(&mut self.passes);
        passes.clear();
        if let Some(l) = self.m.shrink_log.as_mut() {
            passes.append(l);
        }
        let mut plan = Vec::new();
        for &priority in &passes {
            let freeable: u64 = self.n_used.iter().sum();
            self.shrink_deferred = shrink_slab_plan(
                freeable,
                self.shrink_deferred,
                priority as u32,
                MMU_SHRINKER_SEEKS,
                SHRINK_BATCH,
                &mut plan,
            );
            for &n in &plan {
                let k = self.n_used.len();
                let Some(vm) = (0..k)
                    .map(|d| (self.next_shrink + d) % k)
                    .find(|&v| self.n_used[v] > 0)
                else {
                    break;
                };
                self.pending_zap[vm].push(n);
                self.n_used[vm] = self.n_used[vm].saturating_sub(n);
                self.next_shrink = (vm + 1) % k;
            }
        }
        self.passes = passes;
    }

    /// The host's memory manager serves its page `key` (a VM's guest memory); errors when
    /// the host is out of memory.
    pub(super) fn serve(&mut self, key: u64, write: bool) -> Result<()> {
        self.m.access(
            Access {
                page: key,
                write,
                gup: false,
            },
            u64::MAX,
        );
        match self.m.out_of_memory() {
            Some(t) => Err(Error::config(
                "vm.host_frames",
                format!("host out of memory at its access {t}: give the host more frames"),
            )),
            None => Ok(()),
        }
    }

    /// The host's memory manager (its counters, its invariants).
    pub fn machine(&self) -> &Machine<BoxedPolicy> {
        &self.m
    }

    /// Run the host's kswapd as a thread of the engine (`kswapd_pass`), not inline in the
    /// allocation that wakes it.
    pub(super) fn defer_kswapd(&mut self) {
        self.m.set_defer_kswapd(true);
    }

    /// Whether the host's kswapd is awake (deferred mode).
    pub(super) fn kswapd_awake(&self) -> bool {
        self.m.kswapd_awake()
    }

    /// One `balance_pgdat` pass of the host's kswapd, a thread of its own on the host CPUs,
    /// from `now` (Linux 6.8 `kswapd` → `balance_pgdat` → `kswapd_shrink_node`, one
    /// `Machine::kswapd_step`): its CPU time is the pass's reclaim (`scan_page_ns` per page
    /// scanned, `reclaim_page_ns` per victim unmapped, written or freed:
    /// `Stats::reclaim_work_kswapd`; MG-LRU's aging walks and look-around)
    /// and, after it, the submission of the swap writes it started (zram's compression).
    /// Its unmaps wait in each VM's queue (the MMU notifier's `kvm_unmap_gfn_range`), which
    /// the engine applies right after the pass. Returns whether kswapd has more to do and
    /// the pass's CPU time. Left out: the frames it reclaims are free at once (the native
    /// machine's kswapd frees them over its pass), the wake-up's cost to the waker.
    pub(super) fn kswapd_pass(&mut self, now: u64, c: &Costs) -> (bool, u64) {
        let st = &self.m.stats;
        let (scanned, worked) = (st.pgscan_kswapd, st.reclaim_work_kswapd);
        let scan = self.m.policy.scan_work();
        self.m.mm.now = now;
        // Passes at a priority too low to scan anything (a small list shifted right by it:
        // `get_scan_count`) take no time: `balance_pgdat` goes on to the next priority.
        let mut more;
        let mut work;
        loop {
            more = self.m.kswapd_step();
            let st = &self.m.stats;
            let aging = self.m.policy.scan_work().since(&scan).cost_ns(
                c.walk_pte_ns,
                c.walk_pmd_ns,
                c.lookaround_pte_ns,
            );
            work = (st.pgscan_kswapd - scanned) * c.scan_page_ns
                + (st.reclaim_work_kswapd - worked) * c.reclaim_page_ns
                + aging;
            let did = st.pgscan_kswapd > scanned || aging > 0;
            if !more || did {
                break;
            }
        }
        // A pass that cost nothing and leaves kswapd working (zero costs) still takes the
        // CPU for a moment, so that time moves; one that finds the node balanced takes none.
        let more = more || self.m.kswapd_awake();
        let mut clock = now + if more { work.max(1) } else { work };
        if let Some(d) = self.dev.as_ref() {
            let (cpu, _) = d
                .borrow_mut()
                .run(&mut self.m, clock, &|_, _| ContentClass::Numeric);
            clock += cpu;
        }
        self.distribute();
        (more, clock - now)
    }
}

/// One VM's side of the host: its range of the shared host memory and, under TDP, its EPT.
pub(super) struct HostSide {
    pub(super) shared: std::rc::Rc<std::cell::RefCell<HostShared>>,
    pub(super) vm: usize,
    /// The host page backing the VM's gfn 0.
    pub(super) base: u64,
    pub(super) ept: Option<RadixTable>,
    /// Next EPT table frame (host kernel memory beyond host RAM).
    pub(super) ept_next_frame: u64,
    /// log2 of 4 KiB pages per host page: host page `base + (gfn >> shift)` backs guest
    /// frame `gfn`.
    pub(super) shift: u32,
}

/// Error when a memory manager reclaimed a 1 GiB page: those are hugetlbfs pages, which
/// Linux never reclaims (`key` is `vm.guest_page` or `vm.host_page`).
pub(super) fn hugetlb_reclaimed(key: &str, side: &str) -> Error {
    Error::config(
        key,
        format!(
            "1 GiB pages are hugetlbfs pages, which Linux never reclaims, but the {side} ran \
             out of them: give the {side} memory for the whole footprint, or use 2m pages"
        ),
    )
}

impl HostSide {
    /// The host serves guest page `gfn` (and the EPT maps it). Returns whether the host had
    /// no mapping for it (an EPT violation under TDP; a host fault under shadow paging).
    pub(super) fn touch(&mut self, gfn: u64, write: bool, why: HostTouch) -> Result<bool> {
        let rel = gfn >> self.shift;
        let key = self.base + rel;
        let mut sh = self.shared.borrow_mut();
        sh.touch = why;
        let absent = match &self.ept {
            Some(ept) => ept.lookup(gfn << 12).is_none(),
            None => sh.m.mm.pt.pte(key) & PTE_PRESENT == 0,
        };
        let evictions = sh.m.stats.evictions;
        // VSwapper's False Reads Preventer emulates a guest write to a page the host would
        // read in (module `preventer`): a whole-page fill reads nothing.
        sh.prevent(self.vm, key, why);
        // A page the Swap Mapper's host dropped comes back from the image (module `mapper`).
        let done = sh.mapper_refault_read(self.vm, key)?;
        sh.named_read_done = sh.named_read_done.max(done);
        sh.serve(key, write)?;
        // (the guest's fill of the frame writes it, even on a read access)
        if write || why == HostTouch::GuestFill {
            sh.mapper_write(self.vm, key);
        }
        if self.shift == 18 && sh.m.stats.evictions != evictions {
            return Err(hugetlb_reclaimed("vm.host_page", "host"));
        }
        let pte = sh.m.mm.pt.pte(key);
        if pte & PTE_PRESENT == 0 {
            return Err(Error::config(
                "vm.host_frames",
                format!("gfn {gfn} not present on the host after its fault"),
            ));
        }
        sh.distribute();
        sh.touch = HostTouch::Other;
        drop(sh);
        if let Some(ept) = self.ept.as_mut() {
            let base = (rel << self.shift) << 12;
            let hpa = ((crate::mm::pte_frame(pte) as u64) << self.shift) << 12;
            let size = PageSize::ALL[(self.shift / 9) as usize];
            let next = &mut self.ept_next_frame;
            let mut alloc = || {
                let f = *next;
                *next += 1;
                Some(f)
            };
            let mapped = ept.lookup(base).map(|(pa, _, _)| pa);
            if mapped != Some(hpa) {
                if mapped.is_some() {
                    ept.unmap(base, &mut |_| {});
                }
                ept.map(base, hpa, size, PTE_W, &mut alloc)?;
            }
        }
        Ok(absent)
    }

    /// The VM's host pages (`gfn >> shift`) host reclaim unmapped since the last call (the
    /// EPT entries are dropped here), and the shrinker's batches to zap.
    fn take_unmaps(&mut self, out: &mut Vec<u64>, zaps: &mut Vec<u64>) {
        out.clear();
        zaps.clear();
        {
            let mut sh = self.shared.borrow_mut();
            out.append(&mut sh.pending[self.vm]);
            zaps.append(&mut sh.pending_zap[self.vm]);
        }
        if let Some(ept) = self.ept.as_mut() {
            for &rel in out.iter() {
                ept.unmap((rel << self.shift) << 12, &mut |_| {});
            }
        }
    }

    pub(super) fn present(&self, gfn: u64) -> bool {
        self.shared
            .borrow()
            .m
            .mm
            .pt
            .pte(self.base + (gfn >> self.shift))
            & PTE_PRESENT
            != 0
    }
}

/// The host of `cfgs` (one per VM; the host's memory, policy and page size are the first
/// one's): its memory manager, with each VM's guest memory and page tables as a range of
/// host pages.
pub fn host_for(cfgs: &[&VmConfig]) -> Result<std::rc::Rc<std::cell::RefCell<HostShared>>> {
    let cfg = cfgs
        .first()
        .ok_or_else(|| Error::config("vm", "no VM to host"))?;
    let hshift = cfg.host_page.shift() - 12;
    for c in cfgs {
        if c.host_page != cfg.host_page {
            return Err(Error::config(
                "vm.host_page",
                "the VMs on one host must use the same host page size",
            ));
        }
    }
    let mut host_cfg = cfg.host.clone();
    host_cfg.frames = units("vm.host_frames", cfg.host.frames, hshift, "host memory")?;
    host_cfg.watermarks = unit_marks(&cfg.host, hshift);
    // zram is SWP_SYNCHRONOUS_IO: swap-ins skip the swap cache and readahead (`do_swap_page`).
    host_cfg.swap_sync_io |= cfg.host_swap.as_ref().is_some_and(|d| d.kind() == "zram");
    // The plug merges reclaim's swap writes up to the device's largest request.
    if let Some(d) = cfg.host_swap.as_ref() {
        host_cfg.swap_max_pages.get_or_insert(d.max_request_pages());
    }
    if let Some(n) = cfg.host_swap.as_ref().and_then(|d| d.rotational_slots()) {
        host_cfg.swap_rotational.get_or_insert((n >> hshift).max(1));
    }
    let p = cfg
        .host_policy
        .build(host_cfg.frames, &cfg.host_options, Boxer)?;
    let mut m = Machine::new(&host_cfg, p)?;
    m.unmap_log = Some(Vec::new());
    m.swap_log = Some(Vec::new());
    if cfgs.iter().any(|c| c.paging == Paging::Shadow) {
        m.shrink_log = Some(Vec::new());
    }
    let mut bases = Vec::with_capacity(cfgs.len());
    let mut next = 0u64;
    for c in cfgs {
        bases.push(next);
        next += (c.guest.frames as u64 + pt_pages_of(c)).div_ceil(1 << hshift);
    }
    let n = cfgs.len();
    let text = qemu_text(&mut m, cfg, next, hshift)?;
    let disk = shared_disk(cfgs)?;
    let mapper = super::mapper::MapperState::for_vms(cfgs)?;
    if mapper.is_some() {
        m.named = Some(Default::default());
    }
    let dev = match &cfg.host_swap {
        Some(spec) => {
            m.mm.swap.device.log_on = true;
            let d = std::rc::Rc::new(std::cell::RefCell::new(match &disk {
                Some(d) if cfg.guest_swap.as_ref() == Some(spec) => SwapDev::on_disk(d, hshift),
                _ => SwapDev::new(spec, hshift)?,
            }));
            // Swap writes hold their pages until the device completes them.
            if d.borrow().asynchronous() {
                m.set_write_sink(
                    Box::new(super::cost::DevSink(d.clone())),
                    cfg.costs.scan_page_ns,
                    cfg.costs.reclaim_page_ns,
                );
            }
            Some(d)
        }
        None => None,
    };
    Ok(std::rc::Rc::new(std::cell::RefCell::new(HostShared {
        dev,
        disk,
        m,
        bases,
        pending: vec![Vec::new(); n],
        pending_zap: vec![Vec::new(); n],
        n_used: vec![0; n],
        shrink_deferred: 0,
        next_shrink: 0,
        scratch: Vec::new(),
        passes: Vec::new(),
        shift: hshift,
        images: vec![None; n],
        pathologies: vec![SwapPathologies::default(); n],
        touch: HostTouch::Other,
        text,
        mapper,
        named_read_done: 0,
    })))
}

/// The one block device of the guests' swap devices when `cfgs` share a disk
/// (`VmConfig::shared_disk`), built from their `guest_swap`.
fn shared_disk(cfgs: &[&VmConfig]) -> Result<Option<SharedDisk>> {
    let cfg = cfgs[0];
    if cfgs.iter().any(|c| c.shared_disk != cfg.shared_disk) {
        return Err(Error::config(
            "vm.shared_disk",
            "the VMs on one host either share a disk or do not",
        ));
    }
    if !cfg.shared_disk {
        return Ok(None);
    }
    let Some(spec) = cfg.guest_swap else {
        return Err(Error::config(
            "vm.shared_disk",
            "needs a guest swap device (vm.guest_swap) to share",
        ));
    };
    if spec.kind() == "zram" {
        return Err(Error::config(
            "vm.shared_disk",
            "zram is memory of each guest, not a disk of the host: share ssd, nvme or remote",
        ));
    }
    if cfgs.iter().any(|c| c.guest_swap != Some(spec)) {
        return Err(Error::config(
            "vm.shared_disk",
            "the VMs sharing a disk must give the same guest swap device",
        ));
    }
    Ok(Some(std::rc::Rc::new(std::cell::RefCell::new(
        crate::device::build(&spec)?,
    ))))
}

impl Vm {
    /// Apply the host's reclaim unmaps: EPT entries (INVEPT on every vCPU) or, under shadow
    /// paging, the MMU notifier into KVM.
    pub(super) fn sync_host_unmaps(&mut self) {
        let Some(host) = self.host.as_mut() else {
            return;
        };
        {
            let sh = host.shared.borrow();
            if sh.pending[host.vm].is_empty() && sh.pending_zap[host.vm].is_empty() {
                return;
            }
        }
        let mut gfns = std::mem::take(&mut self.host_unmaps);
        let mut zaps = std::mem::take(&mut self.shrink_plan);
        host.take_unmaps(&mut gfns, &mut zaps);
        if !gfns.is_empty() {
            match self.paging {
                Paging::Tdp => {
                    for v in &mut self.vcpus {
                        if let Some(m) = v.mmu.as_mut() {
                            m.flush_nested(VPID);
                        }
                    }
                    self.r.nested_flushes += 1;
                }
                Paging::Shadow => {
                    if let Some(k) = self.kvm.as_mut() {
                        for &rel in &gfns {
                            k.unmap_gfn_range(rel << host.shift, 1 << host.shift);
                        }
                    }
                }
                Paging::Native => {}
            }
        }
        if let Some(k) = self.kvm.as_mut() {
            // KVM's shrinker, run by host reclaim passes (`HostShared::distribute`).
            for &n in &zaps {
                self.r.mmu_shrink_scans += 1;
                self.r.mmu_shrink_zapped += k.shrink(n);
            }
            if k.take_remote_flush() {
                for v in &mut self.vcpus {
                    if let Some(m) = v.mmu.as_mut() {
                        m.flush_vpid(VPID);
                    }
                }
            }
        }
        gfns.clear();
        self.host_unmaps = gfns;
        self.shrink_plan = zaps;
    }

    /// The host serves `gfn` (counting an EPT violation when the EPT had no entry).
    pub(super) fn host_touch(&mut self, gfn: u64, write: bool) -> Result<bool> {
        self.host_touch_as(gfn, write, HostTouch::Other)
    }

    /// [`Vm::host_touch`], saying why the page is touched (`why`: the guest's fault filled
    /// the frame, for the false swap reads of module `pathologies`).
    pub(super) fn host_touch_as(&mut self, gfn: u64, write: bool, why: HostTouch) -> Result<bool> {
        let Some(host) = self.host.as_mut() else {
            return Ok(false);
        };
        // The op's time, as `serve` set it for the guest (every host touch follows it).
        host.shared.borrow_mut().m.mm.now = self.guest.mm.now;
        let absent = host.touch(gfn, write, why)?;
        self.sync_host_unmaps();
        if absent && self.paging == Paging::Tdp {
            self.r.ept_violations += 1;
            self.r.exits += 1;
        }
        Ok(absent)
    }
}
