//! VSwapper's False Reads Preventer (Amit, Tsafrir and Schuster, ASPLOS 2014, §4.2), with
//! `VmConfig::vswapper = preventer` (or `vswapper`, with the Swap Mapper of module `mapper`):
//! KVM traps the guest's write instructions directed at a page the host swapped out and
//! emulates them into a page-sized, page-aligned buffer instead of faulting the old content
//! in first; a buffer that fills up becomes the guest's page, and the read — a false read
//! (§3, module `pathologies`) — is never issued.
//!
//! In the VM layer a guest access is a whole-page event, and the host serves a gfn
//! (`HostSide::touch`) for one of the reasons of [`HostTouch`]. The Preventer acts when the
//! host page is not in memory and serving it would read it — a swap entry whose page is not
//! in the swap cache (`do_swap_page`'s read), or, with the Mapper, an image block reclaim
//! dropped (`filemap_fault`'s read of the image) — and the guest is writing it:
//!
//! - **The guest overwrites the frame whole** ([`HostTouch::GuestFill`]: `clear_page` of a
//!   first touch, the guest's own swap-in, a file page its fault read, which the model has
//!   the guest write, not QEMU, and the guest page cache's copy of a `write` that covers
//!   the page, `Vm::page_cache_copies`): the paper's short-circuit of REP-prefixed stores (`rep
//!   stos`/`rep movs` over the page, recognised "outright" as rewriting the entire page).
//!   The buffer is the page: the old content is dropped (its swap slot freed, or the Mapper's
//!   association with its block ended; not a copy-on-write) and the host maps a new page
//!   (a host minor fault, `do_anonymous_page`'s cost) — no swap or image read, so no false
//!   read: counted as `preventer_emulated` and `preventer_reads_avoided`.
//! - **A guest store that does not fill it** ([`HostTouch::GuestWrite`]): emulated into the
//!   buffer, then the emulation ends and the old content is read (the swap read, or the
//!   Mapper's image read) and merged with the buffer when the read completes: the fault the
//!   host would take anyway, the vCPU waiting for the read. Counted as `preventer_emulated`
//!   and `preventer_merges`.
//!
//! # The paper's limits, and what the model makes of them
//!
//! The paper stops emulating a page 1 ms after its first emulated write, or at once when the
//! write pattern is not sequential, and emulates at most 32 pages at a time (a newly written
//! page past that is faulted in normally); in each case the old content is read
//! asynchronously and the guest goes on until it reads data not yet there. The VM layer has
//! no byte offsets within a page: a store that is not a whole-page fill cannot be followed
//! by the rest of the page's bytes, so its emulation ends at that access (our choice, where
//! the paper's "predetermined interval" and sequentiality test have nothing to look at), and
//! a whole fill completes within its access. So each emulation begins and ends within one
//! host fault: one page at a time, for no simulated time — inside both of the paper's
//! limits, which therefore never bind here.
//!
//! Left out: the guest running on while the read of a partially written page is in flight
//! (the vCPU waits for it at once, as if its next access were a read of the page); the
//! emulation's own instruction cost beyond the exit the EPT violation already charges;
//! reads emulated from the buffer; QEMU's accesses to a page under emulation (§4.2's `h`
//! handler: a stale read by QEMU's DMA of a guest disk read is the Mapper's to avoid, not the
//! Preventer's); writes of the guest's page-table walks (the MMU's accessed and dirty bits:
//! no instruction to emulate) and KVM's writes; and hosts with large pages (a 4 KiB guest fill
//! cannot overwrite a 2 MiB host page whole: `host_page` must be 4 KiB). With large guest
//! pages, the guest's fill of one (`clear_huge_page`) reaches the host as the one 4 KiB page
//! its fault touches (as for `false_swap_reads`): that one is a whole fill, the others are
//! stores when the guest next touches them (merges, read as without the Preventer).

use super::*;

use crate::mm::{pte_payload, NO_FRAME, PTE_NAMED_GONE, PTE_SWAP};

impl HostShared {
    fn preventer_on(&self, vm: usize) -> bool {
        self.mapper
            .as_ref()
            .is_some_and(|s| s.prevent.get(vm).copied().unwrap_or(false))
    }

    /// Before the host serves VM `vm`'s host page `key` for `why`: with the Preventer on,
    /// a guest write to a page whose content the fault would read (from swap, or from the
    /// image after the Mapper dropped it) is emulated. A whole-page fill drops the old
    /// content (the serve that follows maps a new page, reading nothing); a partial write
    /// lets the fault read it (the merge).
    pub(super) fn prevent(&mut self, vm: usize, key: u64, why: HostTouch) {
        if !matches!(why, HostTouch::GuestFill | HostTouch::GuestWrite) || !self.preventer_on(vm) {
            return;
        }
        let pte = self.m.mm.pt.pte(key);
        if pte & PTE_PRESENT != 0 {
            return;
        }
        // (a page in the swap cache, read ahead or under writeback, maps without a read)
        let swapped =
            pte & PTE_SWAP != 0 && self.m.mm.swap.cached_frame(pte_payload(pte) as u32) == NO_FRAME;
        let dropped = pte & PTE_NAMED_GONE != 0;
        if !swapped && !dropped {
            return;
        }
        let p = &mut self.pathologies[vm];
        p.preventer_emulated += 1;
        if why == HostTouch::GuestWrite {
            p.preventer_merges += 1;
            return;
        }
        p.preventer_reads_avoided += 1;
        // The buffer replaces the old page: its slot is freed (or its block forgotten).
        self.m.unmap_page(key);
        if dropped {
            self.mapper_forget(vm, key);
        }
    }
}
