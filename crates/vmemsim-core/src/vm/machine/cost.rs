//! Where time goes: the counters an op's cost is computed from (`Work`) and the charge of
//! [`Costs`] to the vCPU's clock, the timed swap devices fed with the managers' logged I/O
//! (the timing engine's `do_io`: reads the fault waits for, asynchronous writes as
//! `swap_writepage`'s; [`Classes`] says how pages compress), the zram pool's charge against
//! the guest's frames (`zs_malloc`), the kswapds' passes (`balance_pgdat`, woken by
//! `wakeup_kswapd`), and the clock moves the engine makes (idle, steal, barriers, I/O waits).

use super::*;
use crate::device::IoKind;

/// The counters an op's cost is computed from ([`Vm::charge`] takes two snapshots' difference).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Work {
    /// Translation cycles.
    tcycles: u64,
    guest_minor: u64,
    guest_major: u64,
    host_minor: u64,
    host_major: u64,
    exits: u64,
    shootdown_pages: u64,
    cr3_loads: u64,
    reclaim_flushes: u64,
    guest_first_touch: u64,
    host_first_touch: u64,
    /// The guest's pages scanned and stolen, and its victims that did the work of
    /// `reclaim_page_ns` (kswapd's and direct reclaim's: `Stats::reclaim_work_*`).
    guest_scanned: u64,
    guest_stolen: u64,
    guest_work: u64,
    /// The host's direct reclaim (on the faulting vCPU); its kswapd's is charged elsewhere.
    host_scanned_direct: u64,
    host_work_direct: u64,
    /// The guest policy's page-table scanning (MG-LRU aging).
    guest_scan: crate::policy::ScanWork,
    /// Direct reclaim's throttled sleeps, guest's and host's (`Stats::reclaim_throttle_ns`).
    guest_throttle_ns: u64,
    host_throttle_ns: u64,
}

/// How a page's content compresses, by (pid, vpn): [`Workload::content_class`].
pub type Classes<'a> = &'a dyn Fn(u32, u64) -> ContentClass;

/// A timed swap device fed with a memory manager's logged swap I/O (as the timing engine's
/// `do_io`): each request is submitted at the simulated time of the op that caused it.
pub(super) struct SwapDev {
    dev: Dev,
    /// 4 KiB pages per swap slot (a large page is swapped whole).
    per_slot: u32,
    /// The device's largest request, pages ([`crate::device::SwapDevice::max_request_pages`]).
    max_pages: u32,
    /// Whether the device's time depends on the pages' content (zram).
    reads_content: bool,
    io: Vec<crate::mm::SwapIo>,
    classes: Vec<crate::device::ContentClass>,
    /// CPU time of writes the memory manager's passes submitted ([`SwapDev::flush_writes`])
    /// not yet handed to the caller of [`SwapDev::run`].
    flushed_cpu: u64,
}

/// A timed swap device shared by the layer that times ops and the memory manager whose
/// reclaim passes submit their writes as they end ([`crate::engine::WriteSink`]).
pub(super) type SharedSwapDev = std::rc::Rc<std::cell::RefCell<SwapDev>>;

/// The memory manager's side of a [`SharedSwapDev`].
#[derive(Debug)]
pub(super) struct DevSink(pub(super) SharedSwapDev);

impl std::fmt::Debug for SwapDev {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwapDev")
            .field("per_slot", &self.per_slot)
            .finish()
    }
}

impl crate::engine::WriteSink for DevSink {
    fn flush(&mut self, mm: &mut crate::mm::Mm) {
        self.0.borrow_mut().flush_writes(mm);
    }
}

/// A swap device's hardware: its own, or a block device shared with other swap devices (the
/// guests' virtual disks on one host disk, with the host's swap when it is the same kind of
/// device), whose requests queue together.
enum Dev {
    Own(Box<dyn crate::device::SwapDevice>),
    Shared {
        disk: SharedDisk,
        /// This swap device's own part of the disk's counters.
        own: crate::device::DeviceStats,
    },
}

/// A block device shared by several swap devices ([`SwapDev::on_disk`]).
pub(super) type SharedDisk = std::rc::Rc<std::cell::RefCell<Box<dyn crate::device::SwapDevice>>>;

impl SwapDev {
    pub(super) fn new(spec: &crate::device::DeviceSpec, shift: u32) -> Result<SwapDev> {
        Ok(SwapDev::with(Dev::Own(crate::device::build(spec)?), shift))
    }

    /// A swap device whose requests go to `disk`, shared with other swap devices.
    pub(super) fn on_disk(disk: &SharedDisk, shift: u32) -> SwapDev {
        SwapDev::with(
            Dev::Shared {
                disk: disk.clone(),
                own: Default::default(),
            },
            shift,
        )
    }

    fn with(dev: Dev, shift: u32) -> SwapDev {
        let (max_pages, reads_content) = match &dev {
            Dev::Own(d) => (d.max_request_pages(), d.reads_content()),
            Dev::Shared { disk, .. } => {
                let d = disk.borrow();
                (d.max_request_pages(), d.reads_content())
            }
        };
        SwapDev {
            dev,
            per_slot: 1 << shift,
            max_pages,
            reads_content,
            io: Vec::new(),
            classes: Vec::new(),
            flushed_cpu: 0,
        }
    }

    /// Whether the device answers writes later than it takes them (not zram, which is
    /// `SWP_SYNCHRONOUS_IO`): a memory manager on it holds written pages until their writes
    /// complete ([`crate::engine::Machine::set_write_sink`]).
    pub(super) fn asynchronous(&self) -> bool {
        !self.reads_content
    }

    /// Submit the writes (and discards) `mm` logged, at `mm.now`, and tell `mm` when each
    /// completes; the reads stay in the log for [`SwapDev::run`]. Their CPU time is handed
    /// on by the next `run`.
    pub(super) fn flush_writes(&mut self, mm: &mut crate::mm::Mm) {
        let mut io = std::mem::take(&mut self.io);
        mm.swap.device.take_writes(&mut io);
        let cpu = self.submit_all(&io, mm, mm.now, &|_, _| ContentClass::Random);
        self.flushed_cpu += cpu.0;
        self.io = io;
    }

    /// This device's counters (on a shared disk: its own requests' part of the disk's).
    pub(super) fn stats(&self) -> crate::device::DeviceStats {
        match &self.dev {
            Dev::Own(d) => d.stats(),
            Dev::Shared { own, .. } => own.clone(),
        }
    }

    /// Host RAM the device occupies (zram's pool; a shared disk is a block device: none).
    pub(super) fn ram_bytes(&self) -> u64 {
        match &self.dev {
            Dev::Own(d) => d.ram_bytes(),
            Dev::Shared { .. } => 0,
        }
    }

    fn submit(&mut self, now: u64, kind: IoKind, slot: u64) -> crate::device::IoCompletion {
        match &mut self.dev {
            Dev::Own(d) => d.submit(now, kind, slot, &self.classes),
            Dev::Shared { disk, own } => {
                let mut d = disk.borrow_mut();
                let before = d.stats();
                let c = d.submit(now, kind, slot, &self.classes);
                own.add_delta(&before, &d.stats());
                c
            }
        }
    }

    fn discard(&mut self, slot: u64, pages: u32) {
        match &mut self.dev {
            Dev::Own(d) => d.discard(slot, pages),
            Dev::Shared { disk, own } => {
                let mut d = disk.borrow_mut();
                let before = d.stats();
                d.discard(slot, pages);
                own.add_delta(&before, &d.stats());
            }
        }
    }

    /// Submit what `m` logged at `now`: the submitting CPU's time (zram's compression and
    /// decompression, a block device's submission path) and when the last read completes
    /// (0: no read). A page's content is `class(key, i)` for the `i`th 4 KiB of `m`'s page
    /// `key` (a slot no page owns any more: `Random`).
    ///
    /// Swap writes to consecutive slots, one after the other in the log (a reclaim pass's
    /// `pageout` of folios whose slots a cluster handed out in order), are one request: each
    /// page is a bio (`swap_writepage_bdev_async`), and reclaim holds a plug
    /// (`blk_start_plug` in `shrink_lruvec` and `lru_gen_shrink_lruvec`) into whose last
    /// request `blk_attempt_plug_merge` merges a bio that continues it, up to the device's
    /// [`SwapDevice::max_request_pages`]. A readahead read longer than that is split. zram
    /// takes one page a request (no plug for a bio-based driver).
    pub(super) fn run(
        &mut self,
        m: &mut Machine<BoxedPolicy>,
        now: u64,
        class: &dyn Fn(u64, u32) -> ContentClass,
    ) -> (u64, u64) {
        let flushed = std::mem::take(&mut self.flushed_cpu);
        if !m.mm.swap.device.has_log() {
            return (flushed, 0);
        }
        let mut io = std::mem::take(&mut self.io);
        m.mm.swap.device.take_log(&mut io);
        let (cpu, done) = self.submit_all(&io, &mut m.mm, now + flushed, class);
        self.io = io;
        (flushed + cpu, done)
    }

    /// Submit `io` from `now` on (see [`SwapDev::run`]): the CPU time and when the last read
    /// completes (0: no read).
    fn submit_all(
        &mut self,
        io: &[crate::mm::SwapIo],
        mm: &mut crate::mm::Mm,
        now: u64,
        class: &dyn Fn(u64, u32) -> ContentClass,
    ) -> (u64, u64) {
        use crate::mm::SwapIo;
        // Slots per request (a large page's slot is several pages).
        let max_slots = (self.max_pages / self.per_slot).max(1);
        let mut cpu = 0u64;
        let mut done = 0u64;
        let mut i = 0;
        // (a read split at the device's largest request: the part still to submit)
        let mut rest: Option<(u32, u32)> = None;
        while i < io.len() {
            let t = now + cpu;
            let (kind, slot, n) = match (rest, io[i]) {
                (Some((slot, all)), _) => (IoKind::Read, slot, all.min(max_slots)),
                (None, SwapIo::Read { slot, n }) => (IoKind::Read, slot, n.min(max_slots)),
                (None, SwapIo::Write { slot }) => {
                    // `blk_attempt_plug_merge` (block/blk-merge.c, 6.1 and 6.8): a write joins
                    // the request added last when it continues it (`blk_try_merge`'s back
                    // merge) or ends where it begins (front merge), so slots written in
                    // either order make one request, up to the device's largest.
                    let (mut lo, mut hi, mut n) = (slot, slot, 1);
                    while n < max_slots {
                        match io.get(i + n as usize) {
                            Some(&SwapIo::Write { slot: s }) if s == hi + 1 => hi = s,
                            Some(&SwapIo::Write { slot: s }) if s + 1 == lo => lo = s,
                            _ => break,
                        }
                        n += 1;
                    }
                    (IoKind::Write, lo, n)
                }
                (None, SwapIo::Discard { slot }) => {
                    self.discard(slot as u64 * self.per_slot as u64, self.per_slot);
                    i += 1;
                    continue;
                }
            };
            match (rest, io[i]) {
                // The rest of a split read stays to be submitted next.
                (Some((_, all)), _) | (None, SwapIo::Read { n: all, .. }) if all > n => {
                    rest = Some((slot + n, all - n));
                }
                (Some(_), _) | (None, SwapIo::Read { .. }) => {
                    rest = None;
                    i += 1;
                }
                _ => i += n as usize,
            }
            self.classes.clear();
            if !self.reads_content {
                // (a block device only counts the pages)
                let pages = n as usize * self.per_slot as usize;
                self.classes.resize(pages, ContentClass::Random);
            } else {
                for s in slot..slot + n {
                    match mm.swap.owner(s) {
                        Some(pte) => {
                            let key = mm.pt.vpn_of(pte);
                            self.classes
                                .extend((0..self.per_slot).map(|i| class(key, i)));
                        }
                        None => self
                            .classes
                            .extend((0..self.per_slot).map(|_| ContentClass::Random)),
                    }
                }
            }
            let c = self.submit(t, kind, slot as u64 * self.per_slot as u64);
            cpu += c.cpu_ns;
            if kind == IoKind::Read {
                done = done.max(c.done_at);
                // The pages stay locked (unreclaimable) until the read completes.
                mm.lock_for_read(slot, n, c.done_at);
            } else {
                // Under writeback until the write completes (timed runs that hold them).
                mm.set_write_done(slot, n, c.done_at);
            }
        }
        (cpu, done)
    }
}

impl Vm {
    #[cold]
    #[inline(never)]
    pub(super) fn take_last_work(&mut self) {
        self.last_work = self.work_snapshot();
        self.last_valid = true;
    }

    /// Snapshot the counters an op's cost is computed from, once per access, before its
    /// slow path changes any of them (translation cycles as at the op's start).
    pub(super) fn mark(&mut self) {
        if self.snap.is_none() {
            let mut s = self.work_snapshot();
            s.tcycles = self.op_c0;
            self.snap = Some(s);
        }
    }

    pub(super) fn work_snapshot(&self) -> Work {
        let shared = self.host.as_ref().map(|h| h.shared.borrow());
        let h = shared.as_ref().map(|s| &s.m.stats);
        let g = &self.guest.stats;
        Work {
            tcycles: self.tcycles,
            guest_minor: g.minor_faults,
            guest_major: g.major_faults,
            host_minor: h.map_or(0, |s| s.minor_faults),
            host_major: h.map_or(0, |s| s.major_faults),
            exits: self.r.exits,
            shootdown_pages: self.r.shootdown_pages,
            cr3_loads: self.r.cr3_loads,
            reclaim_flushes: self.r.reclaim_flushes,
            guest_first_touch: g.first_touch,
            host_first_touch: h.map_or(0, |s| s.first_touch),
            guest_scanned: g.pgscan_direct + g.pgscan_kswapd,
            guest_stolen: g.pgsteal_direct + g.pgsteal_kswapd,
            guest_work: g.reclaim_work_direct + g.reclaim_work_kswapd,
            host_scanned_direct: h.map_or(0, |s| s.pgscan_direct),
            host_work_direct: h.map_or(0, |s| s.reclaim_work_direct),
            guest_scan: self.guest.policy.scan_work(),
            guest_throttle_ns: g.reclaim_throttle_ns,
            host_throttle_ns: h.map_or(0, |s| s.reclaim_throttle_ns),
        }
    }

    /// Advance vCPU `v`'s clock by what the op cost.
    pub(super) fn charge(&mut self, v: usize, a: &Work, b: &Work, access: bool, cls: Classes<'_>) {
        let c = &self.costs;
        // (no translation cycles, as without a TLB model, cost nothing: the division and
        // `round`, a libm call, are skipped; 0 / ghz rounds to 0 for every `cpu_ghz`)
        let tcycles = b.tcycles - a.tcycles;
        let translation = if tcycles == 0 {
            0
        } else {
            (tcycles as f64 / c.cpu_ghz).round() as u64
        } + if access { c.access_ns } else { 0 };
        // A large page's fault clears (first touch) or reads (swap-in) all of it.
        let gx = (1u64 << self.gshift) - 1;
        let hx = self.host.as_ref().map_or(0, |h| (1u64 << h.shift) - 1);
        // With a timed swap device a major fault costs its CPU work (`major_fault_ns`) here;
        // the device's time is added by `device_io`.
        let (gmaj, gswap) = if self.guest_dev.is_some() {
            (c.major_fault_ns, 0)
        } else {
            (c.guest_major_fault_ns, c.swap_page_ns)
        };
        let (hmaj, hswap) = if self.host_dev {
            (c.major_fault_ns, 0)
        } else {
            (c.host_major_fault_ns, c.swap_page_ns)
        };
        let (g_minor, g_major) = (b.guest_minor - a.guest_minor, b.guest_major - a.guest_major);
        let (h_minor, h_major) = (b.host_minor - a.host_minor, b.host_major - a.host_major);
        let guest = g_minor * c.minor_fault_ns
            + g_major * gmaj
            + gx * ((b.guest_first_touch - a.guest_first_touch) * c.clear_page_ns
                + g_major * gswap);
        let host = h_minor * c.host_minor_fault_ns
            + h_major * hmaj
            + hx * ((b.host_first_touch - a.host_first_touch) * c.clear_page_ns + h_major * hswap);
        // The guest's reclaim, kswapd's included, runs on the guest's vCPUs (it has no other
        // CPUs; charged to the vCPU whose allocation needed it); the host's direct reclaim on
        // the faulting vCPU; the host's kswapd is the engine's thread (`kswapd_pass`), not
        // charged here. The guest's MG-LRU aging (page-table
        // walks, look-around) is the guest's reclaim work too, at the timing engine's costs.
        let scanned =
            (b.guest_scanned - a.guest_scanned) + (b.host_scanned_direct - a.host_scanned_direct);
        // (`reclaim_page_ns` for each victim that did its work: `Stats::reclaim_work_*`)
        let work = (b.guest_work - a.guest_work) + (b.host_work_direct - a.host_work_direct);
        let aging = b.guest_scan.since(&a.guest_scan).cost_ns(
            c.walk_pte_ns,
            c.walk_pmd_ns,
            c.lookaround_pte_ns,
        );
        let rmap = scanned * c.scan_page_ns;
        let reclaim = rmap + work * c.reclaim_page_ns + aging;
        self.cpu.direct_reclaim_ns += reclaim;
        self.cpu.aging_ns += aging;
        self.cpu.rmap_scan_ns += rmap;
        self.vcpus[v].major_faults += g_major + h_major;
        let n_exits = b.exits - a.exits;
        let exits = n_exits * c.exit_ns;
        let flush = (b.shootdown_pages - a.shootdown_pages) * c.invlpg_ns
            + (b.cr3_loads - a.cr3_loads + b.reclaim_flushes - a.reclaim_flushes) * c.cr3_ns;
        let mut kvm = 0;
        if let Some(k) = &self.kvm {
            if n_exits > 0 || h_major > 0 || h_minor > 0 {
                // KVM's shrinker counts the VM's shadow pages (they change only in exits
                // and host faults).
                if let Some(h) = &self.host {
                    h.shared.borrow_mut().n_used[h.vm] = k.n_used();
                }
                let p = k.profile();
                let total: f64 = crate::kvm::Work::ALL
                    .iter()
                    .map(|&w| p.total(w) as f64 * self.costs.kvm_work_ns[w as usize])
                    .sum();
                kvm = (total - self.kvm_charged).max(0.0).round() as u64;
                self.kvm_charged = total;
            }
        }
        let t = &mut self.r.time;
        t.translation_ns += translation;
        t.guest_fault_ns += guest;
        t.host_fault_ns += host;
        t.exit_ns += exits;
        t.kvm_ns += kvm;
        t.tlb_flush_ns += flush;
        t.reclaim_ns += reclaim;
        self.vcpus[v].clock += translation + guest + host + exits + kvm + flush + reclaim;
        // Direct reclaim slept in `reclaim_throttle` (waiting for swap writes): fault time
        // the vCPU spends off its CPU, as a swap read's wait.
        let (gthr, hthr) = (
            b.guest_throttle_ns - a.guest_throttle_ns,
            b.host_throttle_ns - a.host_throttle_ns,
        );
        if gthr + hthr > 0 {
            t.guest_fault_ns += gthr;
            t.host_fault_ns += hthr;
            let vc = &mut self.vcpus[v];
            vc.clock += gthr + hthr;
            vc.io_wait += gthr + hthr;
        }
        if self.host_dev || self.guest_dev.is_some() {
            self.device_io(v, cls);
        }
    }

    /// Hand the swap I/O the op caused to the timed devices at the vCPU's clock: their CPU
    /// time (zram) and the wait for the last read to complete (the faulting access waits;
    /// writes are asynchronous, as `swap_writepage`'s) go to the vCPU, as guest or host fault
    /// time.
    fn device_io(&mut self, v: usize, cls: Classes<'_>) {
        let now = self.vcpus[v].clock;
        let (gcpu, gdone, hcpu, hdone) = self.submit_io(now, cls);
        let t = now + gcpu + hcpu;
        let gwait = gdone.saturating_sub(t);
        let hwait = hdone.saturating_sub(t.max(gdone));
        let tm = &mut self.r.time;
        tm.guest_fault_ns += gcpu + gwait;
        tm.host_fault_ns += hcpu + hwait;
        let vc = &mut self.vcpus[v];
        vc.clock = t + gwait + hwait;
        vc.io_wait += gwait + hwait;
    }

    /// Submit the swap I/O the guest's and the host's managers logged, from `now`: the
    /// guest device's CPU time and last read's completion (0: none), then the host's.
    fn submit_io(&mut self, now: u64, cls: Classes<'_>) -> (u64, u64, u64, u64) {
        let (gcpu, gdone) = match self.guest_dev.as_ref() {
            Some(d) => {
                let mut d = d.borrow_mut();
                let (back, gshift) = (&self.region_back, self.gshift);
                let page_class = |key: u64, i: u32| {
                    let (pid, vpn) = unkey_in(back, gshift, key);
                    cls(pid, vpn + i as u64)
                };
                let out = d.run(&mut self.guest, now, &page_class);
                let pages = d.ram_bytes().div_ceil(4096);
                self.device_frames_peak = self.device_frames_peak.max(pages);
                out
            }
            None => (0, 0),
        };
        let (hcpu, hdone) = match self.host.as_ref() {
            Some(h) => {
                let mut sh = h.shared.borrow_mut();
                let sh = &mut *sh;
                // The Swap Mapper's image reads of the op's host faults (module `mapper`)
                // are waited for with its swap reads.
                let named = std::mem::take(&mut sh.named_read_done);
                match sh.dev.as_ref() {
                    Some(d) => {
                        let (cpu, done) = d
                            .borrow_mut()
                            .run(&mut sh.m, now + gcpu, &|_, _| ContentClass::Numeric);
                        (cpu, done.max(named))
                    }
                    None => (0, 0),
                }
            }
            None => (0, 0),
        };
        self.cpu.device_ns += gcpu + hcpu;
        if self.pool_charged {
            self.set_reservation();
        }
        (gcpu, gdone, hcpu, hdone)
    }

    /// Frames held back from the guest's (native: the machine's) free list: its swap
    /// device's pool when charged (it is memory), and what kswapd's running pass has not yet
    /// finished freeing.
    fn set_reservation(&mut self) {
        let pool = match (&self.guest_dev, self.pool_charged) {
            (Some(d), true) => d.borrow().ram_bytes().div_ceil(4096).min(u32::MAX as u64) as u32,
            _ => 0,
        };
        let n = pool.saturating_add(self.kswapd_hold);
        if n > 0 || self.guest.mm.frames.reserved() > 0 {
            // The pool's growth is zs_malloc's allocation, which wakes kswapd below the low
            // watermark (GFP_NOIO includes __GFP_KSWAPD_RECLAIM); kswapd's own reclaimed
            // frames, freed over its pass, are no allocation and wake nobody.
            if pool > self.pool_seen {
                self.guest.set_kernel_pages(n);
            } else {
                self.guest.hold_kernel_pages(n);
            }
            self.pool_seen = pool;
        }
    }

    /// Tell the guest's manager what its zram pool may still take during the next step: its
    /// allocations (`zs_malloc`, made from reclaim, which runs with PF_MEMALLOC) may take
    /// every free frame, and a stored page takes, by estimate, the pool's present bytes per
    /// stored page (a whole page before anything is stored). The pool's real size is charged
    /// after the I/O ([`Machine::set_kernel_pages`]); a swap-out that would not fit fails
    /// (see `Machine`'s failed swap-out). Only with a charged pool.
    pub fn set_write_room(&mut self) {
        let Some(d) = self.guest_dev.as_ref().filter(|_| self.pool_charged) else {
            return;
        };
        let st = d.borrow().stats();
        let per_page = st
            .ram_bytes
            .checked_div(st.pages_stored)
            .map_or(4096, |b| b.clamp(1, 4096));
        self.guest.mm.swap.pool = Some(crate::mm::PoolCharge {
            per_page,
            pending: 0,
        });
    }

    /// Native paging: one `balance_pgdat` pass of the machine's kswapd, a thread of its own
    /// on the CPUs, from `now`: its reclaim (pages scanned and reclaimed, MG-LRU's aging),
    /// its TLB shootdowns and its swap writes' submission (zram's compression) are its CPU
    /// time. Returns whether it has more to do, the pass's CPU time and the pages it
    /// reclaimed (the caller frees them over that time: [`Vm::hold_kswapd_frames`]).
    pub fn native_kswapd_step(
        &mut self,
        now: u64,
        cls: Classes<'_>,
    ) -> Result<(bool, u64, u64, Option<u64>)> {
        self.last_valid = false;
        let a = self.work_snapshot();
        self.guest.mm.now = now;
        let more = self.guest.kswapd_step();
        self.sync_guest_unmaps(None)?;
        let b = self.work_snapshot();
        let c = &self.costs;
        let rmap = (b.guest_scanned - a.guest_scanned) * c.scan_page_ns;
        let aging = b.guest_scan.since(&a.guest_scan).cost_ns(
            c.walk_pte_ns,
            c.walk_pmd_ns,
            c.lookaround_pte_ns,
        );
        let stolen = b.guest_stolen - a.guest_stolen;
        let flush = (b.shootdown_pages - a.shootdown_pages) * c.invlpg_ns
            + (b.reclaim_flushes - a.reclaim_flushes) * c.cr3_ns;
        let work = rmap + aging + (b.guest_work - a.guest_work) * c.reclaim_page_ns + flush;
        self.cpu.aging_ns += aging;
        self.cpu.rmap_scan_ns += rmap;
        let mut clock = now + work.max(1);
        let (gcpu, ..) = self.submit_io(clock, cls);
        clock += gcpu;
        let throttle = self.guest.take_kswapd_throttle();
        Ok((
            more || self.guest.kswapd_awake(),
            clock - now,
            stolen,
            throttle,
        ))
    }

    /// Hold back `n` more (or, negative, give back) frames that kswapd has reclaimed but not
    /// yet freed.
    pub fn hold_kswapd_frames(&mut self, n: i64) {
        self.kswapd_hold = (self.kswapd_hold as i64 + n).clamp(0, u32::MAX as i64) as u32;
        self.set_reservation();
    }

    /// The time vCPU `v` has waited for swap reads since the last call (part of its clock's
    /// advance): the engine lets its host CPU go meanwhile.
    pub fn take_io_wait(&mut self, v: usize) -> u64 {
        std::mem::take(&mut self.vcpus[v].io_wait)
    }

    /// vCPU `v` leaves a barrier at `now`, when the last of its VM's vCPUs reached it (the
    /// engine's barrier; [`Vm::op`]'s `Barrier` does the same from the vCPUs' clocks).
    pub fn barrier_release(&mut self, v: usize, now: u64) {
        let vc = &mut self.vcpus[v];
        if now > vc.clock {
            self.r.time.idle_ns += now - vc.clock;
            vc.clock = now;
        }
        vc.epoch = vc.clock;
    }

    /// vCPU `v`'s clock (simulated ns).
    pub fn clock(&self, v: usize) -> u64 {
        self.vcpus[v].clock
    }

    /// When an open-loop arrival `at_ns` of vCPU `v`'s stream arrives (counted from its last
    /// barrier, as [`Op::Arrive`]).
    pub fn arrival_at(&self, v: usize, at_ns: u64) -> u64 {
        self.vcpus[v].epoch.saturating_add(at_ns)
    }

    /// Run the guest's kswapd as a thread on the vCPUs (the engine does: see `VmExec` in `vm/machine/threads.rs`),
    /// not inline in the allocation that wakes it.
    pub fn defer_guest_kswapd(&mut self) {
        self.guest.set_defer_kswapd(true);
    }

    /// Whether the guest's kswapd is awake (deferred mode).
    pub fn guest_kswapd_awake(&self) -> bool {
        self.guest.kswapd_awake()
    }

    /// One `balance_pgdat` pass of the guest's kswapd on vCPU `v`: its reclaim work (pages
    /// scanned and reclaimed, MG-LRU's aging) advances the vCPU's clock as reclaim time, its
    /// unmaps shoot down TLB entries (and reach KVM's shadow MMU), its swap writes go to the
    /// guest's device. Returns whether kswapd has more to do.
    pub fn guest_kswapd_step(&mut self, v: usize, cls: Classes<'_>) -> Result<bool> {
        self.last_valid = false;
        let before = self.work_snapshot();
        self.guest.mm.now = self.vcpus[v].clock;
        let more = self.guest.kswapd_step();
        self.sync_guest_unmaps(Some(v))?;
        let after = self.work_snapshot();
        self.charge(v, &before, &after, false, cls);
        Ok(more)
    }

    /// vCPU `v` will idle until its next request arrives at `at` (absolute): recorded for
    /// the request's latency; the clock moves when it resumes ([`Vm::idle_until`]).
    pub fn arrive_later(&mut self, v: usize, at: u64) {
        self.vcpus[v].arrival = Some(at);
    }

    /// vCPU `v` was idle (halted) until `t`.
    pub fn idle_until(&mut self, v: usize, t: u64) {
        let vc = &mut self.vcpus[v];
        if t > vc.clock {
            self.r.time.idle_ns += t - vc.clock;
            vc.clock = t;
        }
    }

    /// vCPU `v` waited (halted) for a swap read until `t`, time its fault already counted.
    pub(super) fn waited_until(&mut self, v: usize, t: u64) {
        let vc = &mut self.vcpus[v];
        vc.clock = vc.clock.max(t);
    }

    /// vCPU `v`, runnable since its clock, gets a host CPU at `t`: the wait is steal time.
    pub fn steal_until(&mut self, v: usize, t: u64) {
        let vc = &mut self.vcpus[v];
        if t > vc.clock {
            self.r.time.steal_ns += t - vc.clock;
            vc.clock = t;
        }
    }

    /// vCPU `v` (native: a thread), in its op's allocation, wakes the sleeping kswapd
    /// (`wakeup_kswapd`): it pays `wakeup_ns` (overlapping its op's wait for a swap read, if
    /// any). Returns when kswapd wakes: a wake-up later, from the end of that work.
    pub fn pay_wakeup(&mut self, v: usize) -> u64 {
        let w = self.costs.wakeup_ns;
        let vc = &mut self.vcpus[v];
        let done = vc.clock - vc.io_wait + w;
        let used = vc.io_wait.min(w);
        vc.io_wait -= used;
        vc.clock += w - used;
        self.r.time.guest_fault_ns += w - used;
        done + w
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceSpec;

    #[test]
    fn swap_devices_on_one_disk_queue_behind_each_other() {
        // One channel (qd 1), a read of 4 KiB taking 100 µs plus 1 ns of transfer, no
        // submission time. Two swap devices each read a page at t = 0: on one shared disk
        // the second waits for the first, done at 200,002 ns after a queue delay of
        // 100,001 ns that is counted as its own; on disks of their own both are done at
        // 100,001 ns.
        let spec =
            DeviceSpec::parse("ssd:read_latency_us=100,qd=1,read_bw_mbps=4096000,submit_us=0")
                .unwrap();
        let disk: SharedDisk = std::rc::Rc::new(std::cell::RefCell::new(
            crate::device::build(&spec).unwrap(),
        ));
        let (mut a, mut b) = (SwapDev::on_disk(&disk, 0), SwapDev::on_disk(&disk, 0));
        let (mut c, mut d) = (
            SwapDev::new(&spec, 0).unwrap(),
            SwapDev::new(&spec, 0).unwrap(),
        );
        for x in [&mut a, &mut b, &mut c, &mut d] {
            x.classes = vec![ContentClass::Random];
        }
        assert_eq!(a.submit(0, IoKind::Read, 0).done_at, 100_001);
        assert_eq!(b.submit(0, IoKind::Read, 7).done_at, 200_002);
        assert_eq!(a.stats().queue_delay_total_ns, 0);
        assert_eq!(b.stats().queue_delay_max_ns, 100_001);
        assert_eq!((a.stats().read_requests, b.stats().read_requests), (1, 1));
        let mut sum = a.stats();
        sum.add(&b.stats());
        assert_eq!(sum, disk.borrow().stats());
        assert_eq!(c.submit(0, IoKind::Read, 0).done_at, 100_001);
        assert_eq!(d.submit(0, IoKind::Read, 7).done_at, 100_001);
        assert_eq!(d.stats().queue_delay_max_ns, 0);
    }

    /// What one op logged, through a one-channel SSD of 100 µs a request plus 1 µs a page
    /// (4096 B at 4096 MB/s), no submission time, requests of at most `max_pages`: the
    /// returned read completion and the device's (write requests, read requests).
    fn through_plug(max_pages: u32) -> (u64, (u64, u64)) {
        through_plug_of(
            max_pages,
            &[
                SwapIo::Write { slot: 5 },
                SwapIo::Write { slot: 6 },
                SwapIo::Write { slot: 7 },
                SwapIo::Write { slot: 9 },
                SwapIo::Write { slot: 10 },
                SwapIo::Read { slot: 20, n: 4 },
                SwapIo::Write { slot: 11 },
            ],
        )
    }

    use crate::mm::SwapIo;

    fn through_plug_of(max_pages: u32, ios: &[SwapIo]) -> (u64, (u64, u64)) {
        use crate::mm::swap::SwapDevice as _;
        let spec = DeviceSpec::parse(&format!(
            "ssd:latency_us=100,qd=1,bw_mbps=4096,submit_us=0,max_pages={max_pages}"
        ))
        .unwrap();
        let mut dev = SwapDev::new(&spec, 0).unwrap();
        let cfg = crate::engine::MachineConfig::new(64);
        let policy = crate::policy::PolicyKind::from_name("fifo")
            .unwrap()
            .build(64, &crate::policy::PolicyOptions::new(0), Boxer)
            .unwrap();
        let mut m = Machine::new(&cfg, policy).unwrap();
        m.mm.swap.device.log_on = true;
        for &io in ios {
            m.mm.swap.device.submit(io);
        }
        let (cpu, done) = dev.run(&mut m, 0, &|_, _| ContentClass::Random);
        assert_eq!(cpu, 0);
        let st = dev.stats();
        let pages = |read: bool| {
            ios.iter()
                .map(|io| match (io, read) {
                    (SwapIo::Write { .. }, false) => 1,
                    (SwapIo::Read { n, .. }, true) => *n as u64,
                    _ => 0,
                })
                .sum::<u64>()
        };
        assert_eq!(
            (st.pages_written, st.pages_read),
            (pages(false), pages(true))
        );
        (done, (st.write_requests, st.read_requests))
    }

    #[test]
    fn contiguous_swap_writes_of_one_op_are_one_request() {
        // The plug merges each write that continues the last request: [5, 6, 7], [9, 10],
        // then the read of 20..24 in one request, then [11] (the read came between). On one
        // channel from t = 0: 103 µs, 205 µs, then the read done at 309 µs.
        assert_eq!(through_plug(168), (309_000, (3, 1)));
        // At most 2 pages a request: [5, 6], [7], [9, 10], the read as [20, 21] and
        // [22, 23]: 102, 203, 305, 407 and 509 µs.
        assert_eq!(through_plug(2), (509_000, (4, 2)));
        // One page a request (zram's rule): nine requests of 101 µs before the last write,
        // the read's last page done at 909 µs.
        assert_eq!(through_plug(1), (909_000, (6, 4)));
    }

    /// One write to each of `slots`, in order, then a read of slot 40.
    fn writes_then_a_read(slots: &[u32]) -> Vec<SwapIo> {
        let mut io: Vec<SwapIo> = slots.iter().map(|&slot| SwapIo::Write { slot }).collect();
        io.push(SwapIo::Read { slot: 40, n: 1 });
        io
    }

    #[test]
    fn swap_writes_in_falling_slot_order_merge_at_the_front() {
        // 12, 11, 10: each ends where the last request begins (a front merge): one request
        // of 3 pages, 103 µs. With at most 3 pages a request, 9 starts a new one and 8
        // joins it at the front: 102 µs, to 205 µs. 30 neither continues nor precedes
        // [8, 9]: its own request, to 306 µs; the read of 40 is done at 407 µs.
        let falling = writes_then_a_read(&[12, 11, 10, 9, 8, 30]);
        assert_eq!(
            through_plug_of(3, &falling),
            (103_000 + 102_000 + 101_000 + 101_000, (3, 1))
        );
        // Growing at both ends: 20, 21, 19, 22, 18 make one request [18, 22].
        let both = writes_then_a_read(&[20, 21, 19, 22, 18]);
        assert_eq!(through_plug_of(168, &both), (105_000 + 101_000, (1, 1)));
    }
}
