//! One VM on one host, untimed: guest programs' accesses go through the guest OS's memory
//! manager (a [`Machine`] over guest frames, with its own reclaim policy and guest swap), the
//! translation hardware of each vCPU ([`Mmu`]: TLBs, walk caches, the page-table line cache)
//! walking the guest's page tables and, under nested paging, the host's EPT/NPT, and the
//! host's memory manager (a second [`Machine`], over host frames) that backs guest memory as
//! QEMU's anonymous mapping: guest-physical page `gfn` is host-virtual page `gfn` of the
//! QEMU process.
//!
//! # Layout
//!
//! - Guest-physical memory: gfns `0..guest_frames` are the frames the guest's memory manager
//!   hands to processes (frame id = gfn); gfns `guest_frames..guest_frames + pt_pages` hold
//!   the guest's page-table pages (kernel memory: never reclaimed by the guest, but host
//!   memory like any other gfn, so the host may swap them out and a walk then takes an EPT
//!   violation).
//! - Guest processes: pid `p`'s virtual page `v` is page `(p << 27) | v` of the guest
//!   manager's single page table (so 512 processes of 2^27 pages, 512 GiB, each); its
//!   hardware-walked table is a [`RadixTable`] per process (gVA → gPA) kept in step with the
//!   manager: mapped when the manager maps a page, unmapped when reclaim unmaps one
//!   ([`Machine::unmap_log`]), with the TLB shootdown Linux does (`flush_tlb_page` on the
//!   vCPUs running that process; others flush that PCID when they next switch to it, as
//!   `switch_mm_irqs_off` does when the mm's `tlb_gen` moved).
//! - Host: EPT/NPT as a [`RadixTable`] (gPA → hPA), mapped when the host maps a gfn and
//!   unmapped when host reclaim takes the page (the MMU notifier → `kvm_unmap_gfn_range` →
//!   `kvm_flush_remote_tlbs`: an INVEPT of the VM on every vCPU). The EPT's own table pages
//!   are host kernel memory outside the host's frames.
//!
//! # What an access does
//!
//! The guest manager serves the access first (a guest page fault if the page was not
//! mapped: minor, or major from guest swap), then the host serves the gfn (an EPT violation
//! when the EPT had no entry: the host page was never touched or was reclaimed), then the
//! vCPU's MMU translates the address: a TLB hit, or a walk whose references and cycles are
//! counted; a walk that reaches a guest page-table page the host has reclaimed stops with a
//! nested fault, which the host serves (one more EPT violation) before the walk is retried.
//! Serving faults before the walk, not after a failed one, counts the same faults and walks;
//! it leaves out the partial walk a real fault costs.
//!
//! # Left out (for now)
//!
//! Shadow paging (the `kvm` module's [`crate::kvm::ShadowMmu`] is to be wired here), time
//! (this driver counts; it does not schedule vCPUs or charge costs), large pages (guest and
//! host tables map 4 KiB pages), copy-on-write between processes, guest page cache and file
//! I/O, and ballooning or free page reporting (pages the guest frees stay backed on the
//! host).

use serde::{Deserialize, Serialize};

use crate::access::Access;
use crate::engine::{Machine, MachineConfig, Stats};
use crate::error::{Error, Result};
use crate::mm::PTE_PRESENT;
use crate::policy::{BoxedPolicy, Boxer, PolicyKind, PolicyOptions};
use crate::translate::radix::PTE_W;
use crate::translate::{
    AccessKind, FaultKind, Mmu, PageSize, RadixTable, Tables, TranslateConfig, TranslateStats,
};
use crate::workload::Op;

use super::ops::{GuestOp, GuestWorkload};

/// Bits of a guest-virtual page number per process in the guest manager's page table.
pub const PID_SHIFT: u32 = 27;
/// Most processes a VM may have at once.
pub const MAX_PIDS: u32 = 1 << (36 - PID_SHIFT);
/// `tlb_single_page_flush_ceiling`: munmaps of more pages flush the whole address space.
pub const TLB_SINGLE_PAGE_FLUSH_CEILING: u64 = 33;

/// How guest addresses are translated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Paging {
    /// No VM: the programs run on the host directly (the guest manager is the host's).
    Native,
    /// Nested paging (EPT/NPT): 2D walks of the guest's and the host's tables.
    Tdp,
}

impl Paging {
    pub fn parse(s: &str) -> Result<Paging> {
        match s {
            "native" => Ok(Paging::Native),
            "tdp" | "ept" | "npt" => Ok(Paging::Tdp),
            "shadow" => Err(Error::config(
                "vm.paging",
                "shadow paging is not wired into the VM layer yet (native, tdp)",
            )),
            _ => Err(Error::config(
                "vm.paging",
                format!("unknown paging {s:?} (native, tdp)"),
            )),
        }
    }
}

/// Everything a VM run needs besides the workload.
#[derive(Clone, Debug)]
pub struct VmConfig {
    pub paging: Paging,
    /// The guest OS's memory manager: `frames` = guest memory for processes, in pages.
    pub guest: MachineConfig,
    pub guest_policy: PolicyKind,
    pub guest_options: PolicyOptions,
    /// The host's (tdp only): `frames` = host memory available to the VM, in pages.
    pub host: MachineConfig,
    pub host_policy: PolicyKind,
    pub host_options: PolicyOptions,
    pub translate: TranslateConfig,
    /// Guest (and native) page-table levels, 4 or 5.
    pub guest_levels: u8,
    /// EPT/NPT levels, 4 or 5.
    pub host_levels: u8,
    /// Guest page-table pages available (kernel memory beyond the guest's frames); 0 = one per
    /// 256 guest frames plus 64.
    pub pt_pages: u32,
}

/// What a VM run counted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VmResult {
    pub paging: Option<Paging>,
    pub workload: String,
    pub guest_policy: String,
    pub host_policy: String,
    pub guest_frames: u32,
    pub host_frames: u32,
    /// Guest memory manager's counters (its faults are guest page faults).
    pub guest: Stats,
    /// Host memory manager's counters (tdp; its faults on guest memory are EPT violations).
    pub host: Stats,
    /// The vCPUs' translation hardware, summed.
    pub translate: TranslateStats,
    /// EPT violations / NPFs: the host had no entry for a gfn (data or guest page table).
    pub ept_violations: u64,
    /// Of those, for a guest page-table page met by a walk.
    pub ept_violations_pt: u64,
    /// VM exits (tdp: one per EPT violation; the model has no other exit reasons yet).
    pub exits: u64,
    /// Guest CR3 loads (process switches) and how many flushed the TLB.
    pub cr3_loads: u64,
    pub cr3_flushes: u64,
    /// TLB shootdowns: pages invalidated with INVLPG on running vCPUs, and deferred flushes.
    pub shootdown_pages: u64,
    pub deferred_flushes: u64,
    /// INVEPT-like flushes after host reclaim unmapped guest memory.
    pub nested_flushes: u64,
    pub processes_created: u64,
    pub processes_exited: u64,
    pub pages_unmapped: u64,
    /// Most guest page-table pages in use.
    pub pt_pages_peak: u64,
}

impl VmResult {
    /// Memory references per TLB miss (walk references / walks).
    pub fn refs_per_walk(&self) -> f64 {
        if self.translate.walks == 0 {
            0.0
        } else {
            self.translate.walk_refs as f64 / self.translate.walks as f64
        }
    }
}

struct Vcpu {
    mmu: Mmu,
    pid: u32,
    /// The `tlb_gen` of each process this vCPU's TLB has seen (flush on switch if behind).
    seen_gen: Vec<u64>,
}

/// A VM and its host, driven op by op.
pub struct Vm {
    cfg_paging: Paging,
    guest: Machine<BoxedPolicy>,
    host: Option<Machine<BoxedPolicy>>,
    procs: Vec<Option<RadixTable>>,
    /// Per process: guest-virtual pages first touched (to free at exit), and its `tlb_gen`.
    touched: Vec<Vec<u64>>,
    tlb_gen: Vec<u64>,
    ept: Option<RadixTable>,
    /// Next EPT table frame (host kernel memory beyond host RAM).
    ept_next_frame: u64,
    pt_free: Vec<u64>,
    pt_total: u64,
    vcpus: Vec<Vcpu>,
    r: VmResult,
    guest_frames: u32,
}

fn pcid(pid: u32) -> u16 {
    // PCID 0 is the host's/kernel's; processes take 1.. (4095 at most: wraps, as Linux
    // recycles its 6 dynamic ASIDs; a model detail that only matters beyond 4095 pids).
    (pid % 4095 + 1) as u16
}

const VPID: u16 = 1;
const HOST_PCID: u16 = 0;

impl Vm {
    pub fn new(cfg: &VmConfig, vcpus: usize) -> Result<Vm> {
        if vcpus == 0 {
            return Err(Error::config("vm.vcpus", "must be at least 1"));
        }
        let guest_policy = cfg
            .guest_policy
            .build(cfg.guest.frames, &cfg.guest_options, Boxer)?;
        let mut guest = Machine::new(&cfg.guest, guest_policy)?;
        guest.unmap_log = Some(Vec::new());
        let guest_frames = cfg.guest.frames;
        let pt_pages = if cfg.pt_pages == 0 {
            guest_frames / 256 + 64
        } else {
            cfg.pt_pages
        } as u64;
        let pt_base = guest_frames as u64;
        let mut pt_free: Vec<u64> = (pt_base..pt_base + pt_pages).rev().collect();
        let (host, ept, ept_next_frame) = match cfg.paging {
            Paging::Native => (None, None, 0),
            Paging::Tdp => {
                let p = cfg
                    .host_policy
                    .build(cfg.host.frames, &cfg.host_options, Boxer)?;
                let mut h = Machine::new(&cfg.host, p)?;
                h.unmap_log = Some(Vec::new());
                // EPT tables live beyond host RAM: frames from host_frames + 1 on.
                let root = cfg.host.frames as u64;
                let ept = RadixTable::new(cfg.host_levels, root << 12)?;
                (Some(h), Some(ept), root + 1)
            }
        };
        let mut procs = Vec::new();
        let root = pt_free
            .pop()
            .ok_or_else(|| Error::config("vm.pt_pages", "no page for process 0's table"))?;
        procs.push(Some(RadixTable::new(cfg.guest_levels, root << 12)?));
        let mut v = Vec::with_capacity(vcpus);
        for _ in 0..vcpus {
            let mut mmu = Mmu::new(&cfg.translate)?;
            if cfg.paging == Paging::Tdp {
                mmu.vm_entry(VPID, pcid(0))?;
            } else {
                mmu.load_cr3(pcid(0), true);
            }
            v.push(Vcpu {
                mmu,
                pid: 0,
                seen_gen: vec![0],
            });
        }
        let r = VmResult {
            paging: Some(cfg.paging),
            guest_policy: cfg.guest_policy.name().to_string(),
            host_policy: match cfg.paging {
                Paging::Tdp => cfg.host_policy.name().to_string(),
                Paging::Native => String::new(),
            },
            guest_frames,
            host_frames: if cfg.paging == Paging::Tdp {
                cfg.host.frames
            } else {
                0
            },
            processes_created: 1,
            ..VmResult::default()
        };
        Ok(Vm {
            cfg_paging: cfg.paging,
            guest,
            host,
            procs,
            touched: vec![Vec::new()],
            tlb_gen: vec![0],
            ept,
            ept_next_frame,
            pt_total: pt_pages,
            pt_free,
            vcpus: v,
            r,
            guest_frames,
        })
    }

    fn proc_table(&mut self, pid: u32) -> Result<&mut RadixTable> {
        self.procs
            .get_mut(pid as usize)
            .and_then(|p| p.as_mut())
            .ok_or_else(|| Error::config("workload", format!("process {pid} does not exist")))
    }

    fn note_pt_peak(&mut self) {
        let used = self.pt_total - self.pt_free.len() as u64;
        self.r.pt_pages_peak = self.r.pt_pages_peak.max(used);
    }

    /// Apply the guest manager's reclaim unmaps: the process tables and the TLBs.
    fn sync_guest_unmaps(&mut self) {
        let Some(mut log) = self.guest.unmap_log.take() else {
            return;
        };
        for &key in &log {
            let pid = (key >> PID_SHIFT) as u32;
            let va = (key & ((1 << PID_SHIFT) - 1)) << 12;
            let free = &mut self.pt_free;
            if let Some(Some(t)) = self.procs.get_mut(pid as usize) {
                t.unmap(va, &mut |f| free.push(f >> 12));
            }
            self.shootdown(pid, va);
        }
        log.clear();
        self.guest.unmap_log = Some(log);
    }

    /// `flush_tlb_page`: INVLPG on vCPUs running `pid`; the others flush that PCID when they
    /// next switch to it.
    fn shootdown(&mut self, pid: u32, va: u64) {
        self.tlb_gen[pid as usize] += 1;
        let g = self.tlb_gen[pid as usize];
        for v in &mut self.vcpus {
            if v.pid == pid {
                v.mmu.invlpg(va);
                v.seen_gen[pid as usize] = g;
                self.r.shootdown_pages += 1;
            }
        }
    }

    /// Apply the host's reclaim unmaps: the EPT and an INVEPT of the VM on every vCPU.
    fn sync_host_unmaps(&mut self) {
        let Some(host) = self.host.as_mut() else {
            return;
        };
        let Some(mut log) = host.unmap_log.take() else {
            return;
        };
        if !log.is_empty() {
            if let Some(ept) = self.ept.as_mut() {
                for &gfn in &log {
                    // EPT table pages are not host RAM: nothing to give back.
                    ept.unmap(gfn << 12, &mut |_| {});
                }
            }
            for v in &mut self.vcpus {
                v.mmu.flush_nested(VPID);
            }
            self.r.nested_flushes += 1;
        }
        log.clear();
        if let Some(h) = self.host.as_mut() {
            h.unmap_log = Some(log);
        }
    }

    /// The host serves guest-physical page `gfn` (QEMU's page `gfn`) and the EPT maps it.
    /// Returns whether the EPT had no entry (an EPT violation).
    fn host_touch(&mut self, gfn: u64, write: bool) -> Result<bool> {
        let (Some(host), Some(ept)) = (self.host.as_mut(), self.ept.as_mut()) else {
            return Ok(false);
        };
        let absent = ept.lookup(gfn << 12).is_none();
        host.access(Access { page: gfn, write }, u64::MAX);
        if let Some(t) = host.out_of_memory() {
            return Err(Error::config(
                "vm.host_frames",
                format!("host out of memory at its access {t}: give the host more frames"),
            ));
        }
        let pte = host.mm.pt.pte(gfn);
        if pte & PTE_PRESENT == 0 {
            return Err(Error::config(
                "vm.host_frames",
                format!("gfn {gfn} not present on the host after its fault"),
            ));
        }
        let hfn = crate::mm::pte_frame(pte) as u64;
        let next = &mut self.ept_next_frame;
        let mut alloc = || {
            let f = *next;
            *next += 1;
            Some(f << 12)
        };
        let mapped = ept.lookup(gfn << 12).map(|(pa, _, _)| pa);
        if mapped != Some(hfn << 12) {
            if mapped.is_some() {
                ept.unmap(gfn << 12, &mut |_| {});
            }
            ept.map(gfn << 12, hfn << 12, PageSize::K4, PTE_W, &mut alloc)?;
        }
        self.sync_host_unmaps();
        if absent {
            self.r.ept_violations += 1;
            self.r.exits += 1;
        }
        Ok(absent)
    }

    /// One access of vCPU `v` to page `vpn` of its current process.
    pub fn access(&mut self, v: usize, vpn: u64, write: bool) -> Result<()> {
        if vpn >= 1 << PID_SHIFT {
            return Err(Error::config(
                "workload",
                format!(
                    "guest page {vpn} beyond the {} pages of a process",
                    1u64 << PID_SHIFT
                ),
            ));
        }
        let pid = self.vcpus[v].pid;
        let key = ((pid as u64) << PID_SHIFT) | vpn;
        let first = self.guest.stats.first_touch;
        self.guest.access(Access { page: key, write }, u64::MAX);
        if let Some(t) = self.guest.out_of_memory() {
            return Err(Error::config(
                "vm.guest_frames",
                format!("guest out of memory at its access {t}: give the guest more frames"),
            ));
        }
        if self.guest.stats.first_touch != first {
            self.touched[pid as usize].push(vpn);
        }
        self.sync_guest_unmaps();
        let pte = self.guest.mm.pt.pte(key);
        let gfn = crate::mm::pte_frame(pte) as u64;
        let va = vpn << 12;
        // Keep the process's hardware table in step with the manager.
        let mapped = self.proc_table(pid)?.lookup(va).map(|(pa, _, _)| pa);
        if mapped != Some(gfn << 12) {
            let t = self.procs[pid as usize].as_mut().expect("checked above");
            if mapped.is_some() {
                t.unmap(va, &mut |_| {});
            }
            let free = &mut self.pt_free;
            t.map(va, gfn << 12, PageSize::K4, PTE_W, &mut || {
                free.pop().map(|f| f << 12)
            })
            .map_err(|_| {
                Error::config(
                    "vm.pt_pages",
                    "the guest's page-table pages ran out; give more (pt_pages)",
                )
            })?;
            self.note_pt_peak();
        }
        if self.cfg_paging == Paging::Tdp {
            self.host_touch(gfn, write)?;
        }
        let kind = if write {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        for _retry in 0..16 {
            let vc = &mut self.vcpus[v];
            let t = self.procs[pid as usize].as_mut().expect("process exists");
            let out = match self.ept.as_mut() {
                Some(ept) => vc.mmu.translate(
                    Tables::Tdp {
                        guest: t,
                        host: ept,
                    },
                    va,
                    kind,
                ),
                None => vc.mmu.translate(Tables::Native(t), va, kind),
            };
            match out {
                Ok(_) => return Ok(()),
                Err(f) => match f.kind {
                    FaultKind::Nested { gpa, .. } => {
                        // A guest page-table page the host does not map now.
                        self.host_touch(gpa >> 12, true)?;
                        self.r.ept_violations_pt += 1;
                        let vc = &mut self.vcpus[v];
                        vc.mmu.vm_exit(HOST_PCID);
                        vc.mmu.vm_entry(VPID, pcid(pid))?;
                    }
                    other => {
                        return Err(Error::config(
                            "vm",
                            format!(
                                "translation of page {vpn} of process {pid} failed after its fault was served: {other:?}"
                            ),
                        ))
                    }
                },
            }
        }
        Err(Error::config(
            "vm",
            format!("translation of page {vpn} of process {pid} kept faulting"),
        ))
    }

    fn switch(&mut self, v: usize, pid: u32) -> Result<()> {
        self.proc_table(pid)?;
        let g = self.tlb_gen[pid as usize];
        let vc = &mut self.vcpus[v];
        let noflush = vc.seen_gen[pid as usize] == g;
        vc.mmu.load_cr3(pcid(pid), noflush);
        vc.seen_gen[pid as usize] = g;
        vc.pid = pid;
        self.r.cr3_loads += 1;
        if !noflush {
            self.r.cr3_flushes += 1;
            self.r.deferred_flushes += 1;
        }
        Ok(())
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
        let root = self.pt_free.pop().ok_or_else(|| {
            Error::config(
                "vm.pt_pages",
                "the guest's page-table pages ran out at a fork",
            )
        })?;
        self.procs[i] = Some(RadixTable::new(
            self.procs[0].as_ref().map(|t| t.levels()).unwrap_or(4),
            root << 12,
        )?);
        // A fresh address space: TLBs must not keep a previous owner's entries of this PCID.
        self.tlb_gen[i] += 1;
        self.r.processes_created += 1;
        self.note_pt_peak();
        Ok(())
    }

    fn unmap_range(&mut self, pid: u32, start: u64, pages: u64) -> Result<()> {
        for vpn in start..start.saturating_add(pages) {
            if vpn >= 1 << PID_SHIFT {
                break;
            }
            let key = ((pid as u64) << PID_SHIFT) | vpn;
            self.guest.unmap_page(key);
            let free = &mut self.pt_free;
            if let Some(Some(t)) = self.procs.get_mut(pid as usize) {
                if t.unmap(vpn << 12, &mut |f| free.push(f >> 12)).is_some() {
                    self.r.pages_unmapped += 1;
                }
            }
        }
        // `flush_tlb_mm_range`: per page up to the ceiling, else the whole address space.
        if pages <= TLB_SINGLE_PAGE_FLUSH_CEILING {
            for vpn in start..start + pages {
                self.shootdown(pid, vpn << 12);
            }
        } else {
            self.tlb_gen[pid as usize] += 1;
            let g = self.tlb_gen[pid as usize];
            for v in &mut self.vcpus {
                if v.pid == pid {
                    v.mmu.load_cr3(pcid(pid), false);
                    v.seen_gen[pid as usize] = g;
                    self.r.cr3_flushes += 1;
                }
            }
        }
        Ok(())
    }

    fn exit(&mut self, pid: u32) -> Result<()> {
        self.proc_table(pid)?;
        let pages = std::mem::take(&mut self.touched[pid as usize]);
        for &vpn in &pages {
            let key = ((pid as u64) << PID_SHIFT) | vpn;
            self.guest.unmap_page(key);
        }
        let t = self.procs[pid as usize].take().expect("checked");
        self.pt_free.extend(t.table_frames().map(|f| f >> 12));
        self.tlb_gen[pid as usize] += 1;
        self.r.processes_exited += 1;
        Ok(())
    }

    /// Run one op of vCPU `v`. Timing ops (compute, requests, barriers, arrivals) are
    /// accepted and ignored by this untimed driver.
    pub fn op(&mut self, v: usize, op: GuestOp) -> Result<()> {
        match op {
            GuestOp::Op(Op::Access { page, write }) => self.access(v, page, write),
            GuestOp::Op(_) | GuestOp::Arrive { .. } => Ok(()),
            GuestOp::Spawn { pid } => self.spawn(pid),
            GuestOp::Switch { pid } => self.switch(v, pid),
            GuestOp::Exit { pid } => self.exit(pid),
            GuestOp::Unmap { start, pages } => {
                let pid = self.vcpus[v].pid;
                self.unmap_range(pid, start, pages)
            }
        }
    }

    /// The counters so far.
    pub fn result(&self) -> VmResult {
        let mut r = self.r.clone();
        r.guest = self.guest.stats.clone();
        if let Some(h) = &self.host {
            r.host = h.stats.clone();
        }
        let mut t = TranslateStats::default();
        for v in &self.vcpus {
            t.add(v.mmu.stats());
        }
        r.translate = t;
        r
    }

    /// Guest frames holding pages now (mapped or in the guest's swap cache).
    pub fn guest_resident(&self) -> u32 {
        self.guest.mm.frames.len() - self.guest.mm.frames.n_unused()
    }

    /// Guest page-table pages in use.
    pub fn pt_pages_in_use(&self) -> u64 {
        self.pt_total - self.pt_free.len() as u64
    }

    /// Every process table maps exactly what the guest manager has mapped (for tests: it
    /// visits every page each process has touched).
    pub fn check_mirror(&self) -> std::result::Result<(), String> {
        for (pid, t) in self.procs.iter().enumerate() {
            let Some(t) = t else { continue };
            for &vpn in &self.touched[pid] {
                let key = ((pid as u64) << PID_SHIFT) | vpn;
                let pte = self.guest.mm.pt.pte(key);
                let want =
                    (pte & PTE_PRESENT != 0).then(|| (crate::mm::pte_frame(pte) as u64) << 12);
                let got = t.lookup(vpn << 12).map(|(pa, _, _)| pa);
                if want != got {
                    return Err(format!(
                        "process {pid} page {vpn}: the guest maps {want:?}, its table {got:?}"
                    ));
                }
            }
        }
        if let (Some(h), Some(ept)) = (&self.host, &self.ept) {
            for gfn in 0..self.guest_frames as u64 + self.pt_total {
                let Some((pa, _, _)) = ept.lookup(gfn << 12) else {
                    continue;
                };
                let pte = h.mm.pt.pte(gfn);
                if pte & PTE_PRESENT == 0 || (crate::mm::pte_frame(pte) as u64) << 12 != pa {
                    return Err(format!("EPT maps gfn {gfn} to {pa:#x}, the host does not"));
                }
            }
        }
        Ok(())
    }

    /// Every invariant of both memory managers.
    pub fn validate(&self) -> std::result::Result<(), String> {
        self.guest.validate()?;
        if let Some(h) = &self.host {
            h.validate()?;
        }
        Ok(())
    }
}

/// Run a guest workload to its end on a new VM: the vCPUs' streams interleaved chunk by
/// chunk (untimed: the order of accesses between vCPUs is round-robin by chunk).
pub fn run(cfg: &VmConfig, wl: &mut dyn GuestWorkload) -> Result<VmResult> {
    let n = wl.vcpus();
    let mut vm = Vm::new(cfg, n)?;
    let mut live: Vec<bool> = vec![true; n];
    let mut buf = Vec::new();
    while live.iter().any(|&l| l) {
        for (v, alive) in live.iter_mut().enumerate() {
            if !*alive {
                continue;
            }
            buf.clear();
            wl.next_ops(v, &mut buf)?;
            if buf.is_empty() {
                *alive = false;
                continue;
            }
            for &op in &buf {
                vm.op(v, op)?;
            }
        }
    }
    let mut r = vm.result();
    r.workload = wl.name();
    Ok(r)
}
