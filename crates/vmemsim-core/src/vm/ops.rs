//! What a guest workload asks of a VM: the per-vCPU op streams of guest programs, with the
//! process and address-space events that matter to address translation (CR3 switches,
//! mapping and unmapping, process creation and exit) besides the plain accesses and CPU work
//! of [`crate::workload::Op`].
//!
//! Addresses are guest-virtual 4 KiB page numbers of the process the vCPU runs at that
//! moment (set by [`GuestOp::Switch`]; every vCPU starts in process 0).

use crate::device::ContentClass;
use crate::error::Result;
use crate::workload::Op;

/// One step of a vCPU's stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GuestOp {
    /// A plain op (access, compute, request boundary, barrier) in the current process.
    Op(Op),
    /// Create process `pid` (`fork`): a new address space, empty (copy-on-write sharing with
    /// the parent is left out; a forked child that touches memory faults it in anew).
    Spawn { pid: u32 },
    /// Run process `pid` on this vCPU from here on: a context switch with a CR3 load
    /// (`switch_mm_irqs_off`; with PCID the TLB entries of `pid` survive).
    Switch { pid: u32 },
    /// Process `pid` exits (`exit_mmap`): its pages and page tables are freed, its PCID's TLB
    /// entries die.
    Exit { pid: u32 },
    /// `munmap` of `pages` pages from `start` in the current process: the pages are freed and
    /// the TLB entries shot down (`flush_tlb_mm_range`: INVLPG per page up to
    /// `tlb_single_page_flush_ceiling` = 33 pages, a full flush beyond), empty page-table pages
    /// freed (`free_pgtables`).
    Unmap { start: u64, pages: u64 },
    /// Open-loop arrival: the next request of this vCPU's stream arrives at simulated time
    /// `at_ns`, counted from the vCPU's last `Barrier` (or the start of the run), so that a
    /// load phase before the barrier does not delay the arrivals. A vCPU that reaches this op
    /// earlier idles until
    /// then; one that reaches it later has a backlog, and the request's latency, measured
    /// from `at_ns` to its `RequestEnd`, includes the wait.
    Arrive { at_ns: u64 },
}

/// A seeded generator of guest programs' op streams, one stream per vCPU (the guest
/// scheduler's placement is part of the model: a stream switches processes with
/// [`GuestOp::Switch`]).
pub trait GuestWorkload: Send {
    /// Canonical spec including the seed, to re-run.
    fn name(&self) -> String;
    /// vCPUs the workload drives (streams 0..vcpus).
    fn vcpus(&self) -> usize;
    /// Distinct guest-virtual pages it touches over all processes (exact or a tight bound):
    /// sizes guest memory for `--guest-memory 50%`-style settings.
    fn footprint_pages(&self) -> u64;
    /// Append vCPU `v`'s next ops to `buf` (the caller clears it); nothing appended means the
    /// vCPU is done.
    fn next_ops(&mut self, v: usize, buf: &mut Vec<GuestOp>) -> Result<()>;
    /// How well page `vpn` of process `pid` compresses (zram's compressed sizes). Default:
    /// numeric data, for models without a content model.
    fn content_class(&self, _pid: u32, _vpn: u64) -> ContentClass {
        ContentClass::Numeric
    }
}
