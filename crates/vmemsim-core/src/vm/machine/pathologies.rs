//! The pathologies of uncooperative host swapping (VSwapper, Amit, Tsafrir and Schuster,
//! ASPLOS 2014, §3), counted per VM where the host does the thing: host reclaim's swap-out
//! (`pageout` → `swap_writepage`) and the host fault's swap read (`do_swap_page` →
//! `swap_read_folio`), both logged by the host's memory manager ([`SwapEvent`]) and
//! attributed here, in `HostShared::distribute`, right after the host call that did them;
//! and QEMU's run through its own code (`HostShared::qemu_code`).
//!
//! # The image-block association
//!
//! [`ImageBlocks`] knows, for each guest frame, the block of the VM's disk image it holds
//! unchanged since the guest read it from, or wrote it to, its virtual disk: a clean page of
//! the guest's page cache. It is what VSwapper's Swap Mapper (§4.1) keeps with a private
//! `mmap` of the image, with one difference: the Mapper's association lives as long as the
//! frame's *content* is unchanged (a write breaks it by copy-on-write), this one as long as
//! the guest's page cache holds the page clean. It is
//!
//! - made when QEMU's `preadv` of a guest read has filled the frame (`Vm::qemu_dma`: the
//!   frames of a page-cache read, applied after the guest's call as the DMA is) and when a
//!   guest write of the page has reached the image (`Vm::note_written`: the page-cache pages
//!   the guest's writeback wrote, clean again);
//! - broken when the guest dirties the page (`folio_mark_dirty`) or the page leaves the
//!   guest's cache (reclaim, truncation, `fadvise`, direct I/O's invalidation): the guest's
//!   page cache says so through [`crate::engine::FileBackend::page_changed`], before the
//!   frame can be reused.
//!
//! # The counters ([`SwapPathologies`])
//!
//! - `silent_swap_writes` (§3 "Silent Swap Writes"): host reclaim writes to swap a page whose
//!   guest frame holds an image block unchanged. Counted at the `SwapEvent::Out` of the page
//!   (`swap_writepage`); a clean page that keeps its swap copy is freed without a write and
//!   is not counted.
//! - `stale_swap_reads` (§3 "Stale Swap Reads"): a host swap read of a page that QEMU's DMA
//!   of a guest disk read is about to overwrite whole (`Vm::qemu_dma`: QEMU's copy into
//!   guest memory faults the page in first).
//! - `false_swap_reads` (§3 "False Swap Reads"): a host swap read of a page the guest is
//!   about to overwrite whole without reading it: the guest's fault that served the access
//!   allocated the frame and filled it — `clear_page` of a first touch
//!   (`do_anonymous_page`), the guest's own swap-in (`swap_read_folio` from the guest's swap
//!   device, which the model does not serve through QEMU, so the guest is what writes the
//!   frame), a file page read by a fault (`filemap_fault`) and the guest page cache's copy
//!   of a write that covers the frame (`copy_page_from_iter_atomic` of a whole page). With VSwapper's False Reads
//!   Preventer (§4.2, module `preventer`) the host reads none of these: 0. Left out: the guest's
//!   zeroing of a new page-table page (`pte_alloc_one` → `__GFP_ZERO`), copy-on-write copies
//!   and compaction's migrations (the guest model has neither).
//! - `silent_swap_writes_in_sequence` (§3 "Decayed Swap Sequentiality"): of the silent swap
//!   writes of image block `b`, those whose slot is the one after block `b - 1`'s copy in the
//!   host's swap area (the previous block's guest frame holds it unchanged and the host has it
//!   in swap, at that slot minus one). Guest-sequential data that stays sequential in swap
//!   keeps this close to `silent_swap_writes`; decay lowers it.
//! - `host_swap_readahead` and `host_swap_readahead_hits`: the VM's pages the host's swap
//!   readahead read (`swap_cluster_readahead` / `swap_vma_readahead`) and of those, the ones
//!   a later fault found in the swap cache (`swap_cache_get_folio`'s `PG_readahead`):
//!   readahead's usefulness on the VM's memory (the host's `swap_ra` and `swap_ra_hit`, by
//!   VM).
//! - `hypervisor_code_faults` (§3 "False Page Anonymity"): with `VmConfig::qemu_text_pages`,
//!   QEMU's code is that many file-backed pages of the host (`qemu_text`), resident from the
//!   start, which QEMU runs through for each virtio-blk request of the guest
//!   (`HostShared::qemu_code`); guest memory being all anonymous to the host, its reclaim
//!   takes these named pages as any file page (a kernel policy prefers them), and each that
//!   faults back in (`filemap_fault`) is counted and delays the request by a host major fault.
//!   The size to give: Debian 12's `qemu-system-x86_64` (QEMU 7.2) has 13,185,650 bytes of
//!   text (`size`), 3,220 pages, the upper bound; one request runs through a small part of it
//!   (virtio-blk, the block layer, `file-posix`'s AIO, the main loop, the memory API), a few
//!   hundred KiB: 64 pages is a reasonable guess. Left out: QEMU's code run for other exits
//!   (timers, other devices) and by its other threads.
//! - With `VmConfig::vswapper` on, what VSwapper did: the Swap Mapper's `mapper_discards`,
//!   `mapper_refaults` and `mapper_cow_breaks` (§4.1, module `mapper`) and the False Reads
//!   Preventer's `preventer_emulated`, `preventer_reads_avoided` and `preventer_merges`
//!   (§4.2, module `preventer`).
//!
//! The totals are in the VM's result; with `sample_every_ns` each sample's `caches` has each
//! VM's so far.
//!
//! The guest's copies to and from its page-cache frames (`copy_page_to_iter` /
//! `copy_page_from_iter_atomic`) touch the host as guest accesses do (`Vm::page_cache_copies`,
//! module `files`): a write copy that overwrites a frame whole is a fill (a host swap read of
//! it is a false read); a read copy's swap-in is no pathology (the guest needs the content),
//! counted only in the host's faults and swap reads.
//!
//! Left out: hosts with large pages (the counters stay 0 unless `host_page` is 4 KiB).

use super::*;

use crate::engine::SwapEvent;
use crate::mm::frames::{F_DIRTY, F_PAGECACHE};
use crate::mm::{pte_frame, pte_payload, PTE_SWAP};

/// Per VM, what the host's swapping did that VSwapper (§3) calls its pathologies (see the
/// module `pathologies`). Counted in host pages, with 4 KiB host pages only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SwapPathologies {
    /// Host swap-outs of a page holding an image block unchanged (`swap_writepage`).
    pub silent_swap_writes: u64,
    /// Of those, the ones written to the slot after the previous image block's copy.
    pub silent_swap_writes_in_sequence: u64,
    /// Host swap reads of a page QEMU's DMA of a guest disk read then overwrote.
    pub stale_swap_reads: u64,
    /// Host swap reads of a page the guest's fault then overwrote whole (`clear_page`, the
    /// guest's swap-in, a file page read by a fault).
    pub false_swap_reads: u64,
    /// The VM's pages the host's swap readahead read, and those a later fault found there.
    pub host_swap_readahead: u64,
    pub host_swap_readahead_hits: u64,
    /// Refaults of QEMU's code (`VmConfig::qemu_text_pages`) as it served the VM's disk
    /// requests: host reclaim had taken the host's named pages of the hypervisor.
    pub hypervisor_code_faults: u64,
    /// With `vswapper = mapper` (VSwapper §4.1, module `mapper`): host reclaims of a page
    /// mapped from the image, dropped without a swap write (`__remove_mapping`); their
    /// refaults, read from the image (`filemap_fault`); writes that made an associated page
    /// anonymous (copy-on-write, `do_wp_page`).
    pub mapper_discards: u64,
    pub mapper_refaults: u64,
    pub mapper_cow_breaks: u64,
    /// Pages the Mapper mapped to the block a guest write request wrote them to (§4.1
    /// "Guest I/O Flow").
    #[serde(default)]
    pub mapper_write_maps: u64,
    /// Host swap reads of a page QEMU read to write it to the image (a guest write request
    /// of a page the host had swapped out since the guest dirtied it).
    #[serde(default)]
    pub qemu_write_swap_reads: u64,
    /// With `vswapper = preventer` (VSwapper §4.2, module `preventer`): guest writes to a
    /// page the host would have read in (from swap, or from the image after the Mapper
    /// dropped it) that were emulated; of those, whole-page fills that needed no read (the
    /// false reads prevented) and partial writes merged with the old content after its read.
    pub preventer_emulated: u64,
    pub preventer_reads_avoided: u64,
    pub preventer_merges: u64,
}

impl SwapPathologies {
    pub fn add(&mut self, o: &SwapPathologies) {
        crate::util::add_fields!(self, o;
            silent_swap_writes, silent_swap_writes_in_sequence, stale_swap_reads,
            false_swap_reads, host_swap_readahead, host_swap_readahead_hits,
            hypervisor_code_faults, mapper_discards, mapper_refaults, mapper_cow_breaks,
            mapper_write_maps, qemu_write_swap_reads,
            preventer_emulated, preventer_reads_avoided, preventer_merges);
    }
}

/// Why the host serves a VM's page now, for the swap read it may do ([`SwapEvent::In`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum HostTouch {
    /// Anything else: a guest read that did not fill the frame, a walk's page-table page,
    /// KVM's writes.
    #[default]
    Other,
    /// A guest store to the frame that does not fill it (what VSwapper's Preventer emulates
    /// and merges, module `preventer`).
    GuestWrite,
    /// QEMU's DMA of a guest disk read into the frame (a stale read if swapped in).
    QemuDma,
    /// QEMU's read of the frame for a guest disk write (`pwritev` from guest memory): a
    /// swap read here is needed, not stale.
    QemuRead,
    /// The guest's fault just filled the frame whole (a false read if swapped in).
    GuestFill,
}

const NO_BLOCK: u64 = u64::MAX;

/// Which guest frames hold which image block unchanged (see the module `pathologies`).
#[derive(Debug)]
pub(super) struct ImageBlocks {
    /// Per guest frame (gfn): the image block, or `NO_BLOCK`.
    block: Vec<u64>,
    /// Image block → the guest frame holding it.
    frame_of: std::collections::HashMap<u64, u32>,
}

impl ImageBlocks {
    pub(super) fn new(frames: u32) -> ImageBlocks {
        ImageBlocks {
            block: vec![NO_BLOCK; frames as usize],
            frame_of: std::collections::HashMap::new(),
        }
    }

    /// Guest frame `f` holds image block `b` unchanged.
    pub(super) fn set(&mut self, f: u32, b: u64) {
        self.clear(f);
        if let Some(g) = self.frame_of.insert(b, f) {
            // (the guest's cache holds a block in one frame: an older one has left it)
            self.block[g as usize] = NO_BLOCK;
        }
        self.block[f as usize] = b;
    }

    /// Guest frame `f` no longer holds its block.
    pub(super) fn clear(&mut self, f: u32) {
        let Some(b) = self.block.get_mut(f as usize) else {
            return;
        };
        if *b != NO_BLOCK {
            self.frame_of.remove(b);
            *b = NO_BLOCK;
        }
    }

    /// The image block guest frame `gfn` holds unchanged.
    pub(super) fn block(&self, gfn: u64) -> Option<u64> {
        self.block
            .get(gfn as usize)
            .copied()
            .filter(|&b| b != NO_BLOCK)
    }

    /// The guest frame holding image block `b` unchanged.
    pub(super) fn frame(&self, b: u64) -> Option<u32> {
        self.frame_of.get(&b).copied()
    }
}

impl HostShared {
    /// Attribute the host's swap traffic since the last call to the VMs owning the pages and
    /// count their pathologies (module `pathologies`). Called right after every host call
    /// that may swap (`HostShared::distribute`), so the association is the one the host
    /// swapped against, and `self.touch` says why the host served the page it swapped in.
    pub(super) fn count_pathologies(&mut self) {
        let Some(mut log) = self.m.swap_log.take() else {
            return;
        };
        for &e in &log {
            let vpn = match e {
                SwapEvent::Out { vpn, .. }
                | SwapEvent::In { vpn, .. }
                | SwapEvent::ReadAhead { vpn }
                | SwapEvent::ReadAheadHit { vpn }
                | SwapEvent::Discard { vpn }
                | SwapEvent::NamedIn { vpn } => vpn,
            };
            let vm = self.bases.partition_point(|&b| b <= vpn) - 1;
            let rel = vpn - self.bases[vm];
            match e {
                SwapEvent::ReadAhead { .. } => self.pathologies[vm].host_swap_readahead += 1,
                SwapEvent::ReadAheadHit { .. } => {
                    self.pathologies[vm].host_swap_readahead_hits += 1
                }
                // VSwapper's Swap Mapper (module `mapper`).
                SwapEvent::Discard { .. } => self.pathologies[vm].mapper_discards += 1,
                SwapEvent::NamedIn { .. } => self.pathologies[vm].mapper_refaults += 1,
                _ if self.shift != 0 => {}
                SwapEvent::Out { slot, .. } => {
                    // §3 "Silent Swap Writes": `swap_writepage` of an unchanged image block.
                    let Some(img) = self.images[vm].as_ref() else {
                        continue;
                    };
                    let img = img.borrow();
                    let Some(b) = img.block(rel) else {
                        continue;
                    };
                    let p = &mut self.pathologies[vm];
                    p.silent_swap_writes += 1;
                    // §3 "Decayed Swap Sequentiality": the previous block's copy is the
                    // slot before.
                    let prev = b
                        .checked_sub(1)
                        .and_then(|pb| img.frame(pb))
                        .and_then(|g| host_slot(&self.m, self.bases[vm] + g as u64));
                    if slot > 0 && prev == Some(slot - 1) {
                        p.silent_swap_writes_in_sequence += 1;
                    }
                }
                SwapEvent::In { .. } => match self.touch {
                    // §3 "Stale Swap Reads": `do_swap_page` under QEMU's DMA of a disk read.
                    HostTouch::QemuDma => self.pathologies[vm].stale_swap_reads += 1,
                    // §3 "False Swap Reads": `do_swap_page` for a page the guest overwrites.
                    HostTouch::GuestFill => self.pathologies[vm].false_swap_reads += 1,
                    HostTouch::QemuRead => self.pathologies[vm].qemu_write_swap_reads += 1,
                    HostTouch::Other | HostTouch::GuestWrite => {}
                },
            }
        }
        log.clear();
        self.m.swap_log = Some(log);
    }
}

/// The first file id past the VMs' images: QEMU's binary in the host's page cache.
const QEMU_TEXT_FILE: u32 = u32::MAX - 1;

/// QEMU's code on host `m` (VSwapper §3, false page anonymity; `VmConfig::qemu_text_pages`
/// of `cfg`): a file-backed mapping of that many pages from host page `at`, past every VM's
/// guest memory, each page faulted in as the process starts (resident before the guests
/// run). Returns its first page and its pages (`None`: not modelled).
pub(super) fn qemu_text(
    m: &mut Machine<BoxedPolicy>,
    cfg: &VmConfig,
    at: u64,
    hshift: u32,
) -> Result<Option<(u64, u32)>> {
    let n = cfg.qemu_text_pages;
    if n == 0 {
        return Ok(None);
    }
    if hshift != 0 {
        return Err(Error::config(
            "vm.qemu_text_pages",
            "QEMU's code is modelled in 4 KiB host pages: needs host_page = 4k",
        ));
    }
    m.mm.vmas
        .add(crate::mm::Vma {
            start: at,
            end: at + n as u64,
            kind: crate::mm::VmaKind::File {
                file: QEMU_TEXT_FILE,
            },
            seq_or_rand_hint: false,
        })
        .map_err(|e| Error::config("vm.qemu_text_pages", e))?;
    for k in 0..n as u64 {
        m.access(
            Access {
                page: at + k,
                write: false,
                gup: false,
            },
            u64::MAX,
        );
    }
    Ok(Some((at, n)))
}

impl HostShared {
    /// QEMU runs through its code for a virtio-blk request of VM `vm` (`virtio_blk_handle_vq`
    /// → the block layer → `raw_co_prw`): every page of it is a read of the host's; those
    /// host reclaim had dropped fault back in (`filemap_fault`), counted as the VM's
    /// hypervisor code faults. Returns them (0 without QEMU's code modelled).
    pub(super) fn qemu_code(&mut self, vm: usize) -> Result<u64> {
        let Some((base, n)) = self.text else {
            return Ok(0);
        };
        let mut faults = 0;
        for key in base..base + n as u64 {
            // (resident from the start: a page not present was reclaimed)
            let gone = self.m.mm.pt.pte(key) & PTE_PRESENT == 0;
            self.serve(key, false)?;
            faults += gone as u64;
        }
        // §3 "False Page Anonymity": the host's only named pages of the VM's QEMU.
        self.pathologies[vm].hypervisor_code_faults += faults;
        self.distribute();
        Ok(faults)
    }
}

/// The swap slot holding host page `key`'s copy: its swap entry, or its swap-cache slot.
fn host_slot(m: &Machine<BoxedPolicy>, key: u64) -> Option<u32> {
    let pte = m.mm.pt.pte(key);
    if pte & PTE_SWAP != 0 {
        return Some(pte_payload(pte) as u32);
    }
    if pte & PTE_PRESENT != 0 {
        let s = m.mm.frames.slot(pte_frame(pte));
        return (s != crate::mm::NO_SLOT).then_some(s);
    }
    None
}

impl Vm {
    /// The image block guest frame `f` holds as a clean page of the guest's page cache.
    fn clean_block(&self, f: u32) -> Option<u64> {
        let frames = &self.guest.mm.frames;
        let fl = frames.flags(f);
        if !frames.in_use(f) || fl & F_PAGECACHE == 0 || fl & F_DIRTY != 0 {
            return None;
        }
        let (i, index) = self.guest.mm.cache.page_of(self.guest.mm.owner(f))?;
        let id = self.guest.mm.cache.file(i).id;
        Some(self.file_layout.as_ref()?.block(id, index))
    }

    /// QEMU's DMA filled guest frames `gfns` with the blocks the guest read: those still
    /// clean in the guest's page cache hold their block.
    pub(super) fn map_dma(&mut self, gfns: &[u64]) {
        let Some(img) = self.image_blocks.clone() else {
            return;
        };
        let mut img = img.borrow_mut();
        for &g in gfns {
            if let Some(b) = self.clean_block(g as u32) {
                img.set(g as u32, b);
            }
        }
    }

    /// The guest's writes that reached the image since the last call: the pages its page
    /// cache still holds clean hold their block. With the Swap Mapper, QEMU maps each such
    /// page to its block once written (VSwapper §4.1, "Guest I/O Flow": "(1) writes P into
    /// B using the write system call, (2) mmaps P to B, and (3) only then notifies the
    /// guest"), so that host reclaim drops it instead of swapping it out. Left out: a page
    /// the host holds swapped out or dropped is left anonymous (QEMU's `write` reads it,
    /// which would bring it back first, and the host does not see QEMU's reads of guest
    /// memory for writes: module `files`).
    ///
    /// QEMU's `write` reads each page from guest memory first ([`Vm::qemu_write_reads`]),
    /// so a page the host had swapped out is back (a swap read) and mapped like the others.
    pub(super) fn note_written(&mut self) {
        let (Some(img), Some(log)) = (self.image_blocks.clone(), self.virtio.as_ref()) else {
            return;
        };
        let written = std::mem::take(&mut log.borrow_mut().written);
        let mut img = img.borrow_mut();
        for &(file, index, pages) in &written {
            for j in index..index + pages {
                if let Some(f) = self.guest.file_page_frame(file, j) {
                    if let Some(b) = self.clean_block(f) {
                        img.set(f, b);
                        if let Some(h) = self.host.as_ref() {
                            let key = h.base + (f as u64 >> h.shift);
                            h.shared.borrow_mut().mapper_map_written(h.vm, key, b);
                        }
                    }
                }
            }
        }
    }

    /// This VM's pathologies so far (zeros natively and without a host).
    pub fn swap_pathologies(&self) -> SwapPathologies {
        self.host
            .as_ref()
            .map(|h| h.shared.borrow().pathologies[h.vm])
            .unwrap_or_default()
    }

    /// The association's invariants: a guest frame holds an image block only as a clean
    /// page of the guest's page cache caching that block, and the reverse map agrees.
    pub(super) fn image_validate(&self) -> std::result::Result<(), String> {
        if let Some(h) = self.host.as_ref() {
            h.shared.borrow().mapper_validate()?;
        }
        let Some(img) = self.image_blocks.as_ref() else {
            return Ok(());
        };
        let img = img.borrow();
        let mut n = 0;
        for (f, &b) in img.block.iter().enumerate() {
            if b == NO_BLOCK {
                continue;
            }
            n += 1;
            let f = f as u32;
            if self.clean_block(f) != Some(b) {
                return Err(format!(
                    "image blocks: frame {f} holds block {b}, but the guest caches {:?} \
                     there (clean page-cache block)",
                    self.clean_block(f)
                ));
            }
            if img.frame(b) != Some(f) {
                return Err(format!(
                    "image blocks: block {b} maps back to {:?}",
                    img.frame(b)
                ));
            }
        }
        if n != img.frame_of.len() {
            return Err(format!(
                "image blocks: {n} frames hold blocks, {} blocks are held",
                img.frame_of.len()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceSpec;
    use crate::mm::FileSpec;
    use crate::trace::recorded::{fadv, FileIo, FileOp};
    use crate::watermarks::Watermarks;
    use crate::workload::Op;

    /// One channel, 100 µs a request plus 1 µs a page.
    const DISK: &str = "ssd:latency_us=100,qd=1,bw_mbps=4096,submit_us=0";
    const NONE: Watermarks = Watermarks {
        min: 0,
        low: 0,
        high: 0,
    };

    /// A TDP VM of `guest` data frames on a host of `host` frames, both reclaiming only
    /// when no frame is free (watermarks 0); the host's policy `fifo` (it evicts the page it
    /// backed first, whatever was touched since) without swap readahead (a demand policy's
    /// `page_cluster` is 0); the guest reads one page a request (`read_ahead_kb` 0) of one
    /// file of `file_pages` pages, under `cache` on the host.
    fn vm(guest: u32, host: u32, file_pages: u64, cache: CacheMode) -> Vm {
        vm_with(guest, host, file_pages, cache, 0)
    }

    /// [`vm`] with `text` pages of QEMU's code on the host.
    fn vm_with(guest: u32, host: u32, file_pages: u64, cache: CacheMode, text: u32) -> Vm {
        vm_full(guest, host, file_pages, cache, text, VSwapper::Off)
    }

    /// 400 guest frames, 200 host frames, a file of 100 pages on the image, `cache=none`,
    /// with or without the Swap Mapper.
    fn vm_400_200(mapper: bool) -> Vm {
        if mapper {
            vm_mapper(400, 200, 100, CacheMode::None)
        } else {
            vm(400, 200, 100, CacheMode::None)
        }
    }

    /// [`vm`] with VSwapper's Swap Mapper (module `mapper`).
    fn vm_mapper(guest: u32, host: u32, file_pages: u64, cache: CacheMode) -> Vm {
        vm_full(guest, host, file_pages, cache, 0, VSwapper::Mapper)
    }

    fn vm_full(
        guest: u32,
        host: u32,
        file_pages: u64,
        cache: CacheMode,
        text: u32,
        vswapper: VSwapper,
    ) -> Vm {
        vm_of(&config(guest, host, cache, text, vswapper), file_pages)
    }

    /// [`vm_full`]'s configuration, before its file is added.
    fn config(guest: u32, host: u32, cache: CacheMode, text: u32, vswapper: VSwapper) -> VmConfig {
        let mut c = VmConfig::new(Paging::Tdp, guest, host);
        c.qemu_text_pages = text;
        c.vswapper = vswapper;
        c.guest.watermarks = Some(NONE);
        c.host.watermarks = Some(NONE);
        c.guest.read_ahead_kb = 0;
        c.host_policy = crate::policy::PolicyKind::from_name("fifo").unwrap();
        c.file_device = Some(DeviceSpec::parse(DISK).unwrap());
        c.cache_mode = cache;
        c.guest.check_invariants = true;
        c.host.check_invariants = true;
        c
    }

    /// A VM of configuration `c` with one file of `file_pages` pages on its disk.
    fn vm_of(c: &VmConfig, file_pages: u64) -> Vm {
        let mut vm = Vm::new(c, 1).unwrap();
        let bytes = file_pages * 4096;
        let f = FileSpec {
            id: 0,
            initial_size: bytes,
            extent: bytes,
        };
        vm.add_files(&[f], c).unwrap();
        vm
    }

    fn io(op: FileOp, index: u64, pages: u64) -> FileIo {
        FileIo {
            op,
            tid: 0,
            stamp: 0,
            file: 0,
            offset: index * 4096,
            len: pages * 4096,
            addr: 0,
        }
    }

    fn file(vm: &mut Vm, op: FileOp, index: u64, pages: u64) {
        vm.file_op(0, &io(op, index, pages), &|_, _| ContentClass::Random)
            .unwrap();
    }

    /// Process `pid` (spawned unless 0) writes its pages `0..n` once.
    fn touch(vm: &mut Vm, pid: u32, n: u64) {
        if pid != 0 {
            vm.op(0, Op::Spawn { pid }).unwrap();
            vm.op(0, Op::Switch { pid }).unwrap();
        }
        for p in 0..n {
            vm.access(0, p, true).unwrap();
        }
    }

    /// 100 guest frames the host has swapped out and the guest has freed: process 0
    /// writes 100 pages (gfns X, backed by the host first), process 1 then writes 300 more
    /// (the guest's 400 frames are full), which the host's 200 frames can only back by
    /// swapping out its oldest pages, all of X (300 > 200 pages backed after them, none of
    /// X touched again); process 0 exits: X is the guest's only free memory.
    fn freed_and_swapped() -> Vm {
        let mut v = vm(400, 200, 100, CacheMode::None);
        touch(&mut v, 0, 100);
        touch(&mut v, 1, 300);
        v.op(0, Op::Exit { pid: 0 }).unwrap();
        assert_eq!(v.guest.mm.frames.n_free(), 100);
        v
    }

    #[test]
    fn first_touches_of_frames_the_host_swapped_are_false_reads() {
        // A new process writes 100 pages: the guest clears each of the 100 free frames
        // (`clear_page`), X, which the host must read back from swap first: 100 false swap
        // reads. No image block was read or swapped: no stale read, no silent write.
        let mut v = freed_and_swapped();
        touch(&mut v, 2, 100);
        let p = v.swap_pathologies();
        assert_eq!(p.false_swap_reads, 100);
        assert_eq!((p.stale_swap_reads, p.silent_swap_writes), (0, 0));
        assert_eq!(p.host_swap_readahead, 0);
        v.validate().unwrap();
        // Processes 0 and 1 only touched frames the host had never backed: no false read.
        let mut v = vm(400, 200, 100, CacheMode::None);
        touch(&mut v, 0, 100);
        touch(&mut v, 1, 300);
        assert_eq!(v.swap_pathologies(), SwapPathologies::default());
    }

    #[test]
    fn guest_disk_reads_into_frames_the_host_swapped_are_stale_reads() {
        // The guest reads 100 file pages one at a time into its page cache, whose frames are
        // X: QEMU's DMA of each faults its page in from the host's swap first: 100 stale
        // swap reads. The host makes room by evicting its oldest pages, process 1's, never
        // the blocks just read (the newest): no silent write. No process touched a new
        // frame: no false read.
        let mut v = freed_and_swapped();
        for i in 0..100 {
            file(&mut v, FileOp::Pread, i, 1);
        }
        let p = v.swap_pathologies();
        assert_eq!(p.stale_swap_reads, 100);
        assert_eq!((p.false_swap_reads, p.silent_swap_writes), (0, 0));
        // The 100 frames hold their blocks, clean.
        assert_eq!(
            v.image_blocks.as_ref().unwrap().borrow().frame_of.len(),
            100
        );
        v.validate().unwrap();
    }

    /// The guest reads blocks 0..100 (one page a request) into its page cache, then process
    /// 0 writes 300 pages: the host's FIFO swaps out its 100 oldest pages, the cached
    /// blocks (as in the silent-write test below). The guest's 400 frames are full; the
    /// blocks stay in its cache.
    fn cached_and_swapped(vs: VSwapper) -> Vm {
        let mut v = vm_full(400, 200, 100, CacheMode::None, 0, vs);
        for i in 0..100 {
            file(&mut v, FileOp::Pread, i, 1);
        }
        touch(&mut v, 0, 300);
        assert_eq!(v.guest.stats.nr_file_pages, 100);
        v
    }

    #[test]
    fn rereading_the_guest_page_cache_faults_in_what_the_host_swapped_out() {
        // The first read: each copy is the guest's first access to a frame QEMU's DMA has
        // just backed, whose EPT entry nobody made yet: 100 EPT violations, no host fault
        // beyond the DMA's first touches. The second read of the 100 blocks is served from the guest's cache (no
        // disk request), but each copy (`copy_page_to_iter`) reads a frame the host swapped
        // out: 100 EPT violations, 100 host swap-ins (major faults; FIFO has no swap
        // readahead), none of them stale or false (a read, not QEMU's DMA nor a fill). Each
        // costs a host major fault's flat 100 µs (no timed host swap device) and its exit.
        let mut v = vm(400, 200, 100, CacheMode::None);
        for i in 0..100 {
            file(&mut v, FileOp::Pread, i, 1);
        }
        assert_eq!(v.r.ept_violations, 100);
        let h = host_stats(&v);
        assert_eq!((h.first_touch, h.major_faults, h.pswpin), (100, 0, 0));
        touch(&mut v, 0, 300);
        let (ept, exits) = (v.r.ept_violations, v.r.exits);
        let h0 = host_stats(&v);
        let (t_host, t_exit) = (v.r.time.host_fault_ns, v.r.time.exit_ns);
        let (reads, disk) = (
            v.guest.stats.file_reads,
            v.guest.file_device_stats().unwrap(),
        );
        let p0 = v.swap_pathologies();
        file(&mut v, FileOp::Pread, 0, 100);
        let h = host_stats(&v);
        assert_eq!(v.guest.stats.file_reads, reads);
        assert_eq!(
            v.guest.file_device_stats().unwrap().read_requests,
            disk.read_requests
        );
        assert_eq!(v.r.ept_violations - ept, 100);
        assert_eq!(v.r.exits - exits, 100);
        assert_eq!(h.pswpin - h0.pswpin, 100);
        assert_eq!(h.major_faults - h0.major_faults, 100);
        assert_eq!(h.swap_ra, 0);
        assert_eq!(v.r.time.host_fault_ns - t_host, 100 * 100_000);
        assert_eq!(v.r.time.exit_ns - t_exit, 100 * 667);
        let p = v.swap_pathologies();
        assert_eq!(
            (p.stale_swap_reads, p.false_swap_reads),
            (p0.stale_swap_reads, p0.false_swap_reads)
        );
        v.validate().unwrap();
        // A third read: the host has them all (the 100 faults evicted 100 of process 0's
        // pages, older in its FIFO): no fault.
        file(&mut v, FileOp::Pread, 0, 100);
        assert_eq!(host_stats(&v).pswpin, h.pswpin);
        assert_eq!(v.r.ept_violations - ept, 100);
    }

    #[test]
    fn writes_through_the_guest_page_cache_touch_the_host() {
        // The guest's free frames are 100 the host swapped out (`freed_and_swapped`); a
        // `pwrite` of the 100 pages of the file, none cached, copies each into a new
        // page-cache frame, X, whole (`copy_page_from_iter_atomic` of 4 KiB): the guest's
        // fill, which the host must read in first: 100 false swap reads; with the
        // Preventer none, 100 reads avoided. (The guest's flusher writes most of them back
        // meanwhile, above its dirty threshold: QEMU reads them after the guest filled
        // them, so they are in memory then: no swap read of QEMU's.)
        for (vs, false_reads, avoided) in [(VSwapper::Off, 100, 0), (VSwapper::Preventer, 0, 100)] {
            let mut v = vm_full(400, 200, 100, CacheMode::None, 0, vs);
            touch(&mut v, 0, 100);
            touch(&mut v, 1, 300);
            v.op(0, Op::Exit { pid: 0 }).unwrap();
            let pswpin = host_stats(&v).pswpin;
            file(&mut v, FileOp::Pwrite, 0, 100);
            let p = v.swap_pathologies();
            assert_eq!(p.false_swap_reads, false_reads, "{vs:?}");
            assert_eq!(p.preventer_reads_avoided, avoided, "{vs:?}");
            assert_eq!((p.stale_swap_reads, p.qemu_write_swap_reads), (0, 0));
            assert_eq!(host_stats(&v).pswpin - pswpin, false_reads, "{vs:?}");
            v.validate().unwrap();
        }
        // A write of half of each of the cached, swapped-out blocks: a store that leaves the
        // rest, so the host reads each in (100 swap-ins, no false read); the Preventer
        // emulates each and merges it with the read: 100 merges, the same 100 reads.
        for (vs, merges) in [(VSwapper::Off, 0), (VSwapper::Preventer, 100)] {
            let mut v = cached_and_swapped(vs);
            let pswpin = host_stats(&v).pswpin;
            for i in 0..100 {
                let w = FileIo {
                    len: 2048,
                    ..io(FileOp::Pwrite, i, 1)
                };
                v.file_op(0, &w, &|_, _| ContentClass::Random).unwrap();
            }
            let p = v.swap_pathologies();
            assert_eq!(host_stats(&v).pswpin - pswpin, 100, "{vs:?}");
            assert_eq!(p.false_swap_reads, 0, "{vs:?}");
            assert_eq!((p.preventer_emulated, p.preventer_merges), (merges, merges));
            v.validate().unwrap();
        }
    }

    #[test]
    fn the_host_swapping_out_clean_cached_blocks_writes_silently_and_in_sequence() {
        // The guest reads blocks 0..100 (one page a request) into frames the host backs in
        // block order (QEMU's DMA is each frame's first host touch: no stale read); then a
        // process writes 300 pages: the host's 200 frames back them by evicting its oldest
        // pages first, the 100 cached blocks in block order, to consecutive swap slots.
        // Every one is clean in the guest's cache: 100 silent swap writes, 99 of them in
        // the slot after the previous block's (all but block 0). The process's pages were
        // never backed before: no false read.
        let mut v = vm(400, 200, 100, CacheMode::None);
        for i in 0..100 {
            file(&mut v, FileOp::Pread, i, 1);
        }
        touch(&mut v, 0, 300);
        let p = v.swap_pathologies();
        assert_eq!(p.silent_swap_writes, 100);
        assert_eq!(p.silent_swap_writes_in_sequence, 99);
        assert_eq!((p.stale_swap_reads, p.false_swap_reads), (0, 0));
        v.validate().unwrap();

        // The same after the guest overwrote blocks 0..10 whole (dirty in its cache: they no
        // longer hold what the image has): the host writes them too, but only blocks
        // 10..100 silently (90), and in sequence 11..100 (89: block 10's predecessor is
        // dirty). Nothing is written back meanwhile (10 dirty pages are below the
        // background threshold, 409 × 400 / 4096 = 39, and the 30 s expiry is far).
        let mut v = vm(400, 200, 100, CacheMode::None);
        for i in 0..100 {
            file(&mut v, FileOp::Pread, i, 1);
        }
        file(&mut v, FileOp::Pwrite, 0, 10);
        assert_eq!(v.guest.stats.nr_dirty, 10);
        touch(&mut v, 0, 300);
        let p = v.swap_pathologies();
        assert_eq!(p.silent_swap_writes, 90);
        assert_eq!(p.silent_swap_writes_in_sequence, 89);
        v.validate().unwrap();

        // Once written back (`fsync`), blocks 0..10 are clean again: as the first case.
        let mut v = vm(400, 200, 100, CacheMode::None);
        for i in 0..100 {
            file(&mut v, FileOp::Pread, i, 1);
        }
        file(&mut v, FileOp::Pwrite, 0, 10);
        file(&mut v, FileOp::Fsync, 0, 0);
        assert_eq!(v.guest.stats.nr_dirty, 0);
        touch(&mut v, 0, 300);
        let p = v.swap_pathologies();
        assert_eq!(
            (p.silent_swap_writes, p.silent_swap_writes_in_sequence),
            (100, 99)
        );
        v.validate().unwrap();
    }

    #[test]
    fn qemu_code_the_host_reclaimed_refaults_at_the_next_disk_request() {
        // 4 pages of QEMU's code, resident before the guest runs: the oldest pages of the
        // host's FIFO. The guest reads block 0 (QEMU runs its code: all resident, no fault),
        // then a process writes 300 pages, which the host's 200 frames back by evicting its
        // oldest pages first: the 4 code pages (dropped: they are named) among them. The
        // read of block 1 runs QEMU's code again: 4 hypervisor code faults, the pages now
        // the newest; the read of block 2 finds them resident (its DMA evicts an older
        // page): 4 in all. Each fault delays the request by a host major fault (100 µs).
        let mut v = vm_with(400, 200, 100, CacheMode::None, 4);
        file(&mut v, FileOp::Pread, 0, 1);
        touch(&mut v, 0, 300);
        assert_eq!(v.swap_pathologies().hypervisor_code_faults, 0);
        let w0 = v.r.time.file_wait_ns;
        file(&mut v, FileOp::Pread, 1, 1);
        assert_eq!(v.swap_pathologies().hypervisor_code_faults, 4);
        // 10 µs of virtio, 4 faults, the disk's 101 µs.
        assert_eq!(v.r.time.file_wait_ns - w0, 10_000 + 4 * 100_000 + 101_000);
        file(&mut v, FileOp::Pread, 2, 1);
        assert_eq!(v.swap_pathologies().hypervisor_code_faults, 4);
        v.validate().unwrap();
        // Without QEMU's code modelled: none.
        let mut v = vm(400, 200, 100, CacheMode::None);
        file(&mut v, FileOp::Pread, 0, 1);
        touch(&mut v, 0, 300);
        file(&mut v, FileOp::Pread, 1, 1);
        assert_eq!(v.swap_pathologies().hypervisor_code_faults, 0);
    }

    #[test]
    fn host_swap_readahead_is_counted_per_vm() {
        // Two VMs on a host with a kernel policy (swap readahead on): each VM's readahead
        // pages and hits are the host's, split by the VM owning the pages.
        let mut c = VmConfig::new(Paging::Tdp, 1024, 0);
        c.host.frames = 2 * (1024 + 68) * 3 / 5;
        let cfgs = vec![c.clone(), c];
        let mut wls: Vec<Box<dyn crate::workload::Workload>> = vec![
            crate::vm::workloads::parse("stress-vm:bytes=3MiB,rounds=3", 0).unwrap(),
            crate::vm::workloads::parse("stress-vm:bytes=3MiB,rounds=3", 1).unwrap(),
        ];
        let r = super::super::run_many(&cfgs, &mut wls).unwrap();
        let (ra, hits): (u64, u64) = r.per_vm.iter().fold((0, 0), |(a, h), v| {
            (
                a + v.swap_pathologies.host_swap_readahead,
                h + v.swap_pathologies.host_swap_readahead_hits,
            )
        });
        assert!(r.host_stats.swap_ra > 0, "{:?}", r.host_stats);
        assert_eq!((ra, hits), (r.host_stats.swap_ra, r.host_stats.swap_ra_hit));
        assert_eq!(r.swap_pathologies.host_swap_readahead, ra);
        assert!(r
            .per_vm
            .iter()
            .all(|v| v.swap_pathologies.host_swap_readahead > 0));
    }

    fn host_stats(v: &Vm) -> crate::engine::Stats {
        v.host.as_ref().unwrap().shared.borrow().m.stats.clone()
    }

    fn host_disk(v: &Vm) -> crate::device::DeviceStats {
        let h = v.host.as_ref().unwrap().shared.borrow();
        h.m.file_device_stats().unwrap_or_default()
    }

    /// The guest frames holding image blocks `0..n`.
    fn frames_of_blocks(v: &Vm, n: u64) -> Vec<u64> {
        let img = v.image_blocks.as_ref().unwrap().borrow();
        (0..n).map(|b| img.frame(b).unwrap() as u64).collect()
    }

    #[test]
    fn the_swap_mapper_drops_the_silent_writes_and_refaults_from_the_image() {
        // The silent-write scenario above (100 blocks read, then 300 pages written): with
        // the Mapper the 100 cached blocks are named pages of the host, which its FIFO
        // reclaims first and drops without a write: 0 silent writes, 100 discards, and the
        // host writes exactly 100 pages less to swap. (Nothing is written to the pages:
        // no copy-on-write.)
        let run = |mapper: bool| {
            let mut v = vm_400_200(mapper);
            for i in 0..100 {
                file(&mut v, FileOp::Pread, i, 1);
            }
            touch(&mut v, 0, 300);
            v.validate().unwrap();
            v
        };
        let off = run(false);
        let mut on = run(true);
        let p = on.swap_pathologies();
        assert_eq!(off.swap_pathologies().silent_swap_writes, 100);
        assert_eq!(
            (p.silent_swap_writes, p.silent_swap_writes_in_sequence),
            (0, 0)
        );
        assert_eq!(
            (p.mapper_discards, p.mapper_refaults, p.mapper_cow_breaks),
            (100, 0, 0)
        );
        assert_eq!(host_stats(&off).pswpout - host_stats(&on).pswpout, 100);
        assert_eq!(off.swap_pathologies().mapper_discards, 0);

        // The guest touches the 100 frames again, in block order (EPT violations): each is a
        // refault from the image, a host major fault with no swap read. The host's disk
        // reads them through `filemap_fault`'s read-around (32 pages from the block - 16,
        // the pages already read skipped): blocks 0..32 at block 0, then 32..48, 48..64,
        // 64..80, 80..96 and 96..100 (the image's end): 6 requests, 100 pages.
        let (pswpin, majors) = (host_stats(&on).pswpin, host_stats(&on).major_faults);
        let disk = host_disk(&on);
        for gfn in frames_of_blocks(&on, 100) {
            assert!(
                on.host_touch(gfn, false).unwrap(),
                "gfn {gfn}: an EPT violation"
            );
        }
        let p = on.swap_pathologies();
        assert_eq!(p.mapper_refaults, 100);
        assert_eq!(host_stats(&on).pswpin, pswpin);
        assert_eq!(host_stats(&on).major_faults - majors, 100);
        let d = host_disk(&on);
        assert_eq!(d.read_requests - disk.read_requests, 6);
        assert_eq!(d.pages_read - disk.pages_read, 100);
        // Still unwritten copies of their blocks: still named.
        let sh = on.host.as_ref().unwrap().shared.borrow();
        assert_eq!(sh.m.named.as_ref().unwrap().len(), 100);
        drop(sh);
        on.validate().unwrap();
    }

    #[test]
    fn the_swap_mapper_maps_what_the_guest_wrote_to_the_image() {
        // VSwapper §4.1 "Guest I/O Flow": QEMU writes a guest page to its block, then maps
        // it there. The guest writes the 100 pages of its file (`pwrite`, whole pages, into
        // new page-cache frames the host backs as it copies) and `fsync`s: every page
        // reaches the image (its flusher writes some during the writes, the fsync the rest)
        // and is clean in the guest's cache. With the Mapper each is mapped to its block
        // once written: 100 write maps. Then 300 pages of anonymous memory: the host's 200
        // frames swap out their oldest (FIFO), the 100 written pages first. Without the
        // Mapper those are 100 silent swap writes (unchanged copies of image blocks); with
        // it, 100 discards and 100 fewer pages written to swap.
        let run = |mapper: bool| {
            let mut v = vm_400_200(mapper);
            file(&mut v, FileOp::Pwrite, 0, 100);
            file(&mut v, FileOp::Fsync, 0, 0);
            touch(&mut v, 0, 300);
            v.validate().unwrap();
            v
        };
        let (off, on) = (run(false), run(true));
        let (po, pn) = (off.swap_pathologies(), on.swap_pathologies());
        assert_eq!((po.mapper_write_maps, pn.mapper_write_maps), (0, 100));
        assert_eq!((po.silent_swap_writes, pn.silent_swap_writes), (100, 0));
        assert_eq!((pn.mapper_discards, pn.mapper_cow_breaks), (100, 0));
        assert_eq!(host_stats(&off).pswpout - host_stats(&on).pswpout, 100);
    }

    #[test]
    fn qemu_reads_what_the_guest_writes_and_the_host_swaps_it_back_in() {
        // The guest's 100 written pages stay dirty in its cache (dirty limits at 100%: no
        // background writeback, and no periodic one in this short run) while 300 pages of
        // anonymous memory make the host's 200 FIFO frames swap out their oldest, the 100
        // page-cache pages first. The `fsync` then writes the 100 pages: QEMU's `pwritev`
        // reads each from guest memory, and the host swaps each back in for it: 100 swap
        // reads, none of them stale or false. With the Mapper, each page back in memory and
        // clean in the guest's cache is then mapped to its block: 100 write maps (none
        // before QEMU's reads were modelled: the pages were swapped out).
        let run = |vs: VSwapper| {
            let mut c = config(400, 200, CacheMode::None, 0, vs);
            c.guest.dirty_ratio = 100;
            c.guest.dirty_background_ratio = 100;
            let mut v = vm_of(&c, 100);
            file(&mut v, FileOp::Pwrite, 0, 100);
            touch(&mut v, 0, 300);
            let before = host_stats(&v).pswpin;
            file(&mut v, FileOp::Fsync, 0, 0);
            v.validate().unwrap();
            (v.swap_pathologies(), host_stats(&v).pswpin - before)
        };
        let (p, swapins) = run(VSwapper::Off);
        assert_eq!((p.qemu_write_swap_reads, swapins), (100, 100));
        assert_eq!((p.stale_swap_reads, p.false_swap_reads), (0, 0));
        let (pm, _) = run(VSwapper::Mapper);
        assert_eq!((pm.qemu_write_swap_reads, pm.mapper_write_maps), (100, 100));
    }

    /// The host's file and anonymous LRU pages (clock-lru's lists).
    fn host_lru(v: &Vm) -> (u64, u64) {
        let sh = v.host.as_ref().unwrap().shared.borrow();
        let c: std::collections::HashMap<_, _> = sh.m.policy.counters().into_iter().collect();
        (
            c["nr_inactive_file"] + c["nr_active_file"],
            c["nr_inactive_anon"] + c["nr_active_anon"],
        )
    }

    /// The host pages named now that are resident.
    fn resident_named(v: &Vm) -> u64 {
        let sh = v.host.as_ref().unwrap().shared.borrow();
        let Some(named) = sh.m.named.as_ref() else {
            return 0;
        };
        named
            .iter()
            .filter(|&&k| sh.m.mm.pt.pte(k) & crate::mm::PTE_PRESENT != 0)
            .count() as u64
    }

    #[test]
    fn the_swap_mappers_pages_sit_on_the_hosts_file_lists() {
        // A kernel host (clock-lru, anonymous and file lists) with room for everything; the
        // guest reads 100 blocks. Under `none` the host caches no page of the image and
        // QEMU's code is not modelled: without the Mapper its file lists are empty; with it
        // they hold exactly the 100 mapped pages, 100 fewer on the anonymous lists. The
        // guest's `pwrite` of blocks 0..10, whole pages, copies on write: 10 pages back to
        // the anonymous lists.
        let run = |vs: VSwapper, host: u32| {
            let mut c = config(400, host, CacheMode::None, 0, vs);
            c.host_policy = crate::policy::PolicyKind::from_name("clock-lru").unwrap();
            let mut v = vm_of(&c, 100);
            for i in 0..100 {
                file(&mut v, FileOp::Pread, i, 1);
            }
            v
        };
        let off = run(VSwapper::Off, 1000);
        let mut on = run(VSwapper::Mapper, 1000);
        let ((f_off, a_off), (f_on, a_on)) = (host_lru(&off), host_lru(&on));
        assert_eq!((f_off, f_on), (0, 100));
        assert_eq!(a_off - a_on, 100);
        file(&mut on, FileOp::Pwrite, 0, 10);
        assert_eq!(on.swap_pathologies().mapper_cow_breaks, 10);
        assert_eq!(host_lru(&on), (90, a_on + 10));
        on.validate().unwrap();

        // Under pressure (the host's 200 frames, a process writing 300 pages): reclaim drops
        // named pages from the file lists and the guest's touches fault some back from the
        // image; the file lists hold the resident named pages, always.
        let mut v = run(VSwapper::Mapper, 200);
        touch(&mut v, 0, 300);
        let p = v.swap_pathologies();
        assert!(p.mapper_discards > 0, "{p:?}");
        assert_eq!(host_lru(&v).0, resident_named(&v));
        for gfn in frames_of_blocks(&v, 100) {
            v.host_touch(gfn, false).unwrap();
        }
        assert!(v.swap_pathologies().mapper_refaults > 0);
        assert_eq!(host_lru(&v).0, resident_named(&v));
        v.validate().unwrap();
    }

    /// The host's file and anonymous LRU pages (MG-LRU's generations, both types).
    fn host_gens(v: &Vm) -> (u64, u64) {
        let sh = v.host.as_ref().unwrap().shared.borrow();
        let c: std::collections::HashMap<_, _> = sh.m.policy.counters().into_iter().collect();
        (c["nr_lru_file"], c["nr_lru_anon"])
    }

    #[test]
    fn the_swap_mappers_pages_are_file_folios_on_an_mglru_host() {
        // The clock-lru test above on an MG-LRU host: `lru_gen_add_folio` takes a folio's
        // type from `folio_is_file_lru`, so the 100 named pages are file-type folios (the
        // file generations hold exactly them: no page cache under `none`, QEMU's code not
        // modelled) and 100 fewer are anonymous; the 10 copies on write go back to the
        // anonymous generations. Under pressure, the file generations hold the resident
        // named pages, always.
        let run = |vs: VSwapper, host: u32| {
            let mut c = config(400, host, CacheMode::None, 0, vs);
            c.host_policy = crate::policy::PolicyKind::from_name("mglru").unwrap();
            let mut v = vm_of(&c, 100);
            for i in 0..100 {
                file(&mut v, FileOp::Pread, i, 1);
            }
            v
        };
        let off = run(VSwapper::Off, 1000);
        let mut on = run(VSwapper::Mapper, 1000);
        let ((f_off, a_off), (f_on, a_on)) = (host_gens(&off), host_gens(&on));
        assert_eq!((f_off, f_on), (0, 100));
        assert_eq!(a_off - a_on, 100);
        file(&mut on, FileOp::Pwrite, 0, 10);
        assert_eq!(on.swap_pathologies().mapper_cow_breaks, 10);
        assert_eq!(host_gens(&on), (90, a_on + 10));
        on.validate().unwrap();

        let mut v = run(VSwapper::Mapper, 200);
        touch(&mut v, 0, 300);
        let p = v.swap_pathologies();
        assert!(p.mapper_discards > 0, "{p:?}");
        assert_eq!(host_gens(&v).0, resident_named(&v));
        for gfn in frames_of_blocks(&v, 100) {
            v.host_touch(gfn, false).unwrap();
        }
        assert!(v.swap_pathologies().mapper_refaults > 0);
        assert_eq!(host_gens(&v).0, resident_named(&v));
        v.validate().unwrap();
    }

    #[test]
    fn the_vcpu_waits_for_a_refault_from_the_image() {
        // The re-read scenario with the Mapper on a host with a timed swap device: the 100
        // cached blocks were dropped (named), not swapped. Re-reading block 0 through the
        // guest's cache: its copy faults the page back from the image, no guest disk
        // request: `filemap_fault`'s read-around of the host's 32 pages (`read_ahead_kb`
        // 128) from block 0 - 16, i.e. blocks 0..32, one request of the idle disk (100 µs +
        // 32 × 1 µs), issued at the op's time. The vCPU waits for it as for a swap read,
        // less the fault's own CPU work that overlaps it (a host major fault's 3 µs with a
        // timed device, the exit's 0.667 µs): 128.333 µs. (A host swap read left over from
        // `touch`'s accesses, which charge nothing, completes within it.) Block 1's refault
        // then finds its block read: no request, no wait.
        let mut c = config(400, 200, CacheMode::None, 0, VSwapper::Mapper);
        c.host_swap =
            Some(DeviceSpec::parse("ssd:latency_us=100,qd=1024,bw_mbps=4096,submit_us=0").unwrap());
        let mut v = vm_of(&c, 100);
        for i in 0..100 {
            file(&mut v, FileOp::Pread, i, 1);
        }
        touch(&mut v, 0, 300);
        let p0 = v.swap_pathologies();
        assert_eq!(p0.mapper_discards, 100);
        let (w0, fw0) = (v.vcpus[0].io_wait, v.r.time.file_wait_ns);
        let disk = host_disk(&v);
        file(&mut v, FileOp::Pread, 0, 1);
        assert_eq!(v.swap_pathologies().mapper_refaults - p0.mapper_refaults, 1);
        let d = host_disk(&v);
        assert_eq!(d.read_requests - disk.read_requests, 1);
        assert_eq!(d.pages_read - disk.pages_read, 32);
        assert_eq!(v.vcpus[0].io_wait - w0, 132_000 - 3_667);
        assert_eq!(v.r.time.file_wait_ns, fw0);
        let w1 = v.vcpus[0].io_wait;
        file(&mut v, FileOp::Pread, 1, 1);
        assert_eq!(v.swap_pathologies().mapper_refaults - p0.mapper_refaults, 2);
        assert_eq!(host_disk(&v).read_requests, d.read_requests);
        assert_eq!(v.vcpus[0].io_wait, w1);
        v.validate().unwrap();
    }

    #[test]
    fn a_write_to_a_mapped_page_makes_it_anonymous_once() {
        // One block read, then 300 pages written, which push it (the host's oldest page)
        // out: with the Mapper it is dropped (1 discard); after the guest's page cache wrote
        // into it (a `pwrite` of the block: copy-on-write, 1 break) it is anonymous and the
        // host swaps it out: one swap write more, no discard.
        let run = |write: bool| {
            let mut v = vm_mapper(400, 200, 100, CacheMode::None);
            file(&mut v, FileOp::Pread, 0, 1);
            if write {
                file(&mut v, FileOp::Pwrite, 0, 1);
                // (the copy is the page cache's: one break, a second write adds none)
                file(&mut v, FileOp::Pwrite, 0, 1);
            }
            touch(&mut v, 0, 300);
            v.validate().unwrap();
            v
        };
        let clean = run(false);
        let written = run(true);
        let (pc, pw) = (clean.swap_pathologies(), written.swap_pathologies());
        assert_eq!((pc.mapper_discards, pc.mapper_cow_breaks), (1, 0));
        assert_eq!((pw.mapper_discards, pw.mapper_cow_breaks), (0, 1));
        assert_eq!(host_stats(&written).pswpout - host_stats(&clean).pswpout, 1);

        // A guest store to the page (a write access: the EPT entry is there) breaks it
        // once; a second store finds it anonymous.
        let mut v = vm_mapper(400, 200, 100, CacheMode::None);
        file(&mut v, FileOp::Pread, 0, 1);
        let gfn = frames_of_blocks(&v, 1)[0];
        v.host_touch(gfn, true).unwrap();
        v.host_touch(gfn, true).unwrap();
        assert_eq!(v.swap_pathologies().mapper_cow_breaks, 1);
        touch(&mut v, 0, 300);
        assert_eq!(v.swap_pathologies().mapper_discards, 0);
        assert_eq!(
            host_stats(&v).pswpout - host_stats(&clean).pswpout,
            1,
            "the written page is swapped"
        );
    }

    #[test]
    fn the_swap_mapper_maps_over_swapped_frames_without_stale_reads() {
        // The stale-read scenario: the guest reads 100 blocks into the frames the host had
        // swapped out (100 stale reads without the Mapper). QEMU maps each block over the
        // old page (zapped: its swap slot freed), so nothing is read from swap.
        let mut m = vm_mapper(400, 200, 100, CacheMode::None);
        touch(&mut m, 0, 100);
        touch(&mut m, 1, 300);
        m.op(0, Op::Exit { pid: 0 }).unwrap();
        let pswpin = host_stats(&m).pswpin;
        for i in 0..100 {
            file(&mut m, FileOp::Pread, i, 1);
        }
        let p = m.swap_pathologies();
        assert_eq!(p.stale_swap_reads, 0);
        assert_eq!(host_stats(&m).pswpin, pswpin);
        m.validate().unwrap();
    }

    #[test]
    fn a_guest_write_of_a_dropped_mapped_block_reads_the_old_content_first() {
        // §4.1 "Data Consistency": block 0 is read (its page mapped), then 300 pages written
        // push the page out (dropped: 1 discard); the guest then writes block 0 with
        // `O_DIRECT` from another buffer. Before QEMU writes, the dropped page is read back
        // from the image (1 refault, through `filemap_fault`'s read-around: blocks 0..32,
        // one request of 100 µs + 32 × 1 µs on the disk, which the write waits for) and stops
        // mapping the block. Without the Mapper the write takes 10 µs of virtio and the
        // disk's 101 µs; with it, 132 µs more.
        let run = |mapper: VSwapper| {
            let mut v = vm_full(400, 200, 100, CacheMode::None, 0, mapper);
            file(&mut v, FileOp::Pread, 0, 1);
            touch(&mut v, 0, 300);
            let w0 = v.r.time.file_wait_ns;
            file(&mut v, FileOp::DirectWrite, 0, 1);
            v.validate().unwrap();
            let wait = v.r.time.file_wait_ns - w0;
            (v, wait)
        };
        let (off, w_off) = run(VSwapper::Off);
        let (on, w_on) = run(VSwapper::Mapper);
        assert_eq!(w_off, 10_000 + 101_000);
        assert_eq!(w_on - w_off, 132_000);
        let p = on.swap_pathologies();
        assert_eq!(
            (p.mapper_discards, p.mapper_refaults, p.mapper_cow_breaks),
            (1, 1, 0)
        );
        let sh = on.host.as_ref().unwrap().shared.borrow();
        assert!(sh.m.named.as_ref().unwrap().is_empty());
        assert_eq!(off.swap_pathologies().mapper_refaults, 0);
    }

    /// [`the_image_association_follows_the_guest_page_cache`]'s random ops with the Mapper:
    /// the host's invariants hold, and it drops, refaults and breaks pages.
    /// With the Preventer too (`vswapper`, every other seed), which emulates fills (reads
    /// avoided) and partial writes (merges), and keeps the invariants.
    #[test]
    fn the_swap_mapper_survives_random_file_io_and_memory_pressure() {
        use rand::{Rng, SeedableRng};
        let mut seen = SwapPathologies::default();
        // (seeds 6.. on a kernel host, whose file lists must hold the resident named pages
        // and the host's page cache, always)
        for seed in 0..12u64 {
            let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
            let mode = [CacheMode::Writeback, CacheMode::None][seed as usize % 2];
            let vs = [VSwapper::Mapper, VSwapper::Both][(seed / 2) as usize % 2];
            let kernel = seed >= 6;
            let mut c = config(160, 60, mode, 0, vs);
            if kernel {
                c.host_policy = crate::policy::PolicyKind::from_name("clock-lru").unwrap();
            }
            let mut v = vm_of(&c, 80);
            let mut pid = 0u32;
            for _ in 0..1500 {
                let index = rng.gen_range(0..80u64);
                let pages = rng.gen_range(1..5u64).min(80 - index);
                match rng.gen_range(0..16) {
                    0..=5 => file(&mut v, FileOp::Pread, index, pages),
                    6..=7 => file(&mut v, FileOp::Pwrite, index, pages),
                    8 => file(&mut v, FileOp::Fsync, 0, 0),
                    9 => file(&mut v, FileOp::DirectWrite, index, pages),
                    10 => file(&mut v, FileOp::DirectRead, index, pages),
                    11 if rng.gen_bool(0.1) => {
                        // A new process replaces the running one: its frames are freed
                        // and refilled (with the Preventer: fills emulated whole).
                        v.op(0, Op::Spawn { pid: pid + 1 }).unwrap();
                        v.op(0, Op::Switch { pid: pid + 1 }).unwrap();
                        v.op(0, Op::Exit { pid }).unwrap();
                        pid += 1;
                    }
                    _ => v
                        .access(0, rng.gen_range(0..120), rng.gen_bool(0.5))
                        .unwrap(),
                }
                v.validate()
                    .unwrap_or_else(|e| panic!("seed {seed} {mode:?} {vs:?}: {e}"));
                if kernel {
                    let cached = host_stats(&v).nr_file_pages;
                    assert_eq!(host_lru(&v).0, resident_named(&v) + cached, "seed {seed}");
                }
            }
            let p = v.swap_pathologies();
            if vs == VSwapper::Mapper {
                assert_eq!(p.preventer_emulated, 0);
            } else {
                assert_eq!(
                    p.preventer_emulated,
                    p.preventer_reads_avoided + p.preventer_merges
                );
            }
            seen.add(&p);
        }
        assert!(
            seen.mapper_discards > 0 && seen.mapper_refaults > 0 && seen.mapper_cow_breaks > 0,
            "{seen:?}"
        );
        assert!(
            seen.preventer_reads_avoided > 0 && seen.preventer_merges > 0,
            "{seen:?}"
        );
    }

    #[test]
    fn the_swap_mapper_needs_4k_host_pages() {
        for (vs, why) in [
            (VSwapper::Mapper, "Swap Mapper"),
            (VSwapper::Preventer, "False Reads Preventer"),
            (VSwapper::Both, "Swap Mapper"),
        ] {
            let mut c = VmConfig::new(Paging::Tdp, 1024, 2048);
            c.vswapper = vs;
            c.host_page = PageSize::M2;
            let e = Vm::new(&c, 1).err().unwrap().to_string();
            assert!(e.starts_with("vm.vswapper"), "{e}");
            assert!(e.contains(why) && e.contains(vs.name()), "{e}");
            assert!(e.contains("host_page = 4k"), "{e}");
        }
    }

    #[test]
    fn vswapper_settings_parse_by_name() {
        for (i, &n) in VSwapper::NAMES.iter().enumerate() {
            let vs = VSwapper::parse(n).unwrap();
            assert_eq!(vs.name(), n);
            assert_eq!(vs as usize, i);
            // (serde's name is the same)
            assert_eq!(serde_json::to_string(&vs).unwrap(), format!("\"{n}\""));
        }
        let flags = |n| {
            let v = VSwapper::parse(n).unwrap();
            (v.mapper(), v.preventer())
        };
        assert_eq!(flags("off"), (false, false));
        assert_eq!(flags("mapper"), (true, false));
        assert_eq!(flags("preventer"), (false, true));
        assert_eq!(flags("vswapper"), (true, true));
        let e = VSwapper::parse("both").unwrap_err().to_string();
        assert!(e.contains("off, mapper, preventer, vswapper"), "{e}");
    }

    #[test]
    fn the_preventer_reads_none_of_the_frames_the_guest_fills() {
        // The false-read scenario (`freed_and_swapped`, then a new process writes 100
        // pages: the guest clears the 100 frames the host swapped out). Off: 100 false
        // swap reads. With the Preventer each `clear_page` is emulated into a buffer that it
        // fills: no read, the old slot freed, a new page mapped (a host minor fault): 0
        // false reads, 100 emulated, 100 reads avoided, no merge, and exactly 100 host swap
        // reads less. The host's fault time is 100 × (100 µs of a major fault − 1 µs of a
        // minor one) less (no timed host swap device: a major fault's flat cost).
        let run = |vs: VSwapper| {
            let mut v = vm_full(400, 200, 100, CacheMode::None, 0, vs);
            touch(&mut v, 0, 100);
            touch(&mut v, 1, 300);
            v.op(0, Op::Exit { pid: 0 }).unwrap();
            let (pswpin, t) = (host_stats(&v).pswpin, v.r.time.host_fault_ns);
            v.op(0, Op::Spawn { pid: 2 }).unwrap();
            v.op(0, Op::Switch { pid: 2 }).unwrap();
            for p in 0..100 {
                v.op(
                    0,
                    Op::Access {
                        page: p,
                        write: true,
                    },
                )
                .unwrap();
            }
            v.validate().unwrap();
            let d = (host_stats(&v).pswpin - pswpin, v.r.time.host_fault_ns - t);
            (v, d)
        };
        let (off, (in_off, t_off)) = run(VSwapper::Off);
        for vs in [VSwapper::Preventer, VSwapper::Both] {
            let (on, (in_on, t_on)) = run(vs);
            let (po, pn) = (off.swap_pathologies(), on.swap_pathologies());
            assert_eq!(po.false_swap_reads, 100);
            assert_eq!(
                (
                    po.preventer_emulated,
                    po.preventer_reads_avoided,
                    po.preventer_merges
                ),
                (0, 0, 0)
            );
            assert_eq!(pn.false_swap_reads, 0, "{vs:?}");
            assert_eq!(
                (
                    pn.preventer_emulated,
                    pn.preventer_reads_avoided,
                    pn.preventer_merges
                ),
                (100, 100, 0),
                "{vs:?}"
            );
            // (and both read the 4 page-table pages process 2 reuses, process 0's, which the
            // host swapped out too: a walk's read, not an emulated store)
            assert_eq!((in_off, in_on), (104, 4));
            assert_eq!(host_stats(&off).pswpin - host_stats(&on).pswpin, 100);
            assert_eq!(t_off - t_on, 100 * (100_000 - 1_000));
            // (the Mapper has nothing to do here)
            assert_eq!(pn.mapper_discards + pn.mapper_cow_breaks, 0);
        }
    }

    #[test]
    fn a_partial_write_to_a_swapped_page_reads_it_and_merges() {
        // The host swaps process 0's 100 pages out (`freed_and_swapped` without the exit),
        // on a timed host swap device: 100 µs a request plus 1 µs a page (4 KiB at
        // 4096 MB/s), 1024 channels (no request waits for another). Process 0 then stores to
        // its page 5, which the guest has mapped: not a fill. The Preventer emulates the
        // store, then reads the old content (1 swap read) and merges it with the buffer when
        // it completes: 1 emulated, 1 merge, no read avoided. The vCPU waits exactly the
        // read's time, 100 + 1 = 101 µs (as off, where the fault reads the page the same way;
        // the walk's reads of process 0's 4 page-table pages, also swapped out, run on other
        // channels at the same time), and the fault costs the same.
        let run = |vs: VSwapper| {
            let mut c = config(400, 200, CacheMode::None, 0, vs);
            c.host_swap = Some(
                DeviceSpec::parse("ssd:latency_us=100,qd=1024,bw_mbps=4096,submit_us=0").unwrap(),
            );
            let mut v = vm_of(&c, 100);
            touch(&mut v, 0, 100);
            touch(&mut v, 1, 300);
            v.op(0, Op::Switch { pid: 0 }).unwrap();
            let p0 = v.swap_pathologies();
            let (pswpin, t) = (host_stats(&v).pswpin, v.r.time.host_fault_ns);
            let w0 = v.vcpus[0].io_wait;
            v.op(
                0,
                Op::Access {
                    page: 5,
                    write: true,
                },
            )
            .unwrap();
            v.validate().unwrap();
            let p = v.swap_pathologies();
            assert_eq!(p.false_swap_reads, p0.false_swap_reads);
            (
                p,
                host_stats(&v).pswpin - pswpin,
                v.vcpus[0].io_wait - w0,
                v.r.time.host_fault_ns - t,
            )
        };
        let (p_off, in_off, wait_off, t_off) = run(VSwapper::Off);
        let (p_on, in_on, wait_on, t_on) = run(VSwapper::Preventer);
        assert_eq!(wait_on, 101_000);
        assert_eq!(wait_off, 101_000);
        assert_eq!(in_on, in_off);
        // (the page, and the 4 levels of process 0's page table, which the walk reads back)
        assert_eq!(in_on, 5);
        assert_eq!(t_on, t_off);
        assert_eq!(
            (
                p_on.preventer_emulated,
                p_on.preventer_reads_avoided,
                p_on.preventer_merges
            ),
            (1, 0, 1)
        );
        assert_eq!(p_off.preventer_emulated, 0);
    }

    #[test]
    fn the_preventer_needs_no_image_read_for_a_dropped_mapped_page_overwritten_whole() {
        // The guest reads blocks 0..100 (with the Mapper: pages mapped from the image), a
        // process writes 300 pages, which push the 100 out (dropped: 100 discards); the guest
        // then drops the blocks from its cache (`fadvise(DONTNEED)`: their frames are its
        // only free memory) and a new process writes 100 pages, clearing those frames. The
        // Mapper alone reads each block back from the image first (100 refaults, in block
        // order, read through `filemap_fault`'s read-around: 6 requests on the host's disk,
        // as in `the_swap_mapper_drops_the_silent_writes_and_refaults_from_the_image`) and
        // the fill then breaks each mapping (100 copy-on-writes). With the Preventer too (`vswapper`), each fill is emulated whole:
        // no refault, no image read, the association simply forgotten (no copy-on-write):
        // 100 emulated and 100 reads avoided, no named page left.
        let run = |vs: VSwapper| {
            let mut v = vm_full(400, 200, 100, CacheMode::None, 0, vs);
            for i in 0..100 {
                file(&mut v, FileOp::Pread, i, 1);
            }
            touch(&mut v, 0, 300);
            assert_eq!(v.swap_pathologies().mapper_discards, 100);
            let mut o = io(FileOp::Fadvise, 0, 100);
            o.addr = fadv::DONTNEED;
            v.file_op(0, &o, &|_, _| ContentClass::Random).unwrap();
            assert_eq!(v.guest.mm.frames.n_free(), 100);
            let disk = host_disk(&v);
            touch(&mut v, 1, 100);
            v.validate().unwrap();
            let reads = host_disk(&v).read_requests - disk.read_requests;
            let named = v
                .host
                .as_ref()
                .unwrap()
                .shared
                .borrow()
                .m
                .named
                .as_ref()
                .unwrap()
                .len();
            (v.swap_pathologies(), reads, named)
        };
        let (pm, reads_m, named_m) = run(VSwapper::Mapper);
        assert_eq!(
            (pm.mapper_refaults, pm.mapper_cow_breaks, reads_m, named_m),
            (100, 100, 6, 0)
        );
        assert_eq!(pm.preventer_emulated, 0);
        let (pv, reads_v, named_v) = run(VSwapper::Both);
        assert_eq!(
            (pv.mapper_refaults, pv.mapper_cow_breaks, reads_v, named_v),
            (0, 0, 0, 0)
        );
        assert_eq!(
            (
                pv.preventer_emulated,
                pv.preventer_reads_avoided,
                pv.preventer_merges
            ),
            (100, 100, 0)
        );
        assert_eq!((pm.false_swap_reads, pv.false_swap_reads), (0, 0));
    }

    /// Random file I/O (buffered and direct reads and writes, fsync, fadvise, truncation)
    /// and process memory (writes, reads, exits) in a VM under memory pressure on both
    /// sides: after every op, every image block the VM layer associates with a guest frame
    /// is a clean page of the guest's cache holding that block (`Vm::validate`).
    #[test]
    fn the_image_association_follows_the_guest_page_cache() {
        use rand::{Rng, SeedableRng};
        let mut seen = SwapPathologies::default();
        for seed in 0..8u64 {
            let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
            let mode = [CacheMode::Writeback, CacheMode::None][seed as usize % 2];
            let mut v = vm(160, 60, 80, mode);
            let mut pid = 0u32;
            let mut most = 0;
            for _ in 0..1500 {
                let index = rng.gen_range(0..80u64);
                let pages = rng.gen_range(1..5u64).min(80 - index);
                match rng.gen_range(0..20) {
                    0..=5 => file(&mut v, FileOp::Pread, index, pages),
                    6..=7 => file(&mut v, FileOp::Pwrite, index, pages),
                    8 => file(&mut v, FileOp::Fsync, 0, 0),
                    9 => {
                        let mut o = io(FileOp::Fadvise, index, pages);
                        o.addr = fadv::DONTNEED;
                        v.file_op(0, &o, &|_, _| ContentClass::Random).unwrap();
                    }
                    10 => file(&mut v, FileOp::DirectWrite, index, pages),
                    11 => file(&mut v, FileOp::DirectRead, index, pages),
                    12 if rng.gen_bool(0.3) => {
                        let mut o = io(FileOp::Ftruncate, 0, 0);
                        o.len = (40 + index / 2) * 4096;
                        v.file_op(0, &o, &|_, _| ContentClass::Random).unwrap();
                    }
                    12 => {
                        // A new process replaces the running one: its frames are freed
                        // and reused.
                        v.op(0, Op::Spawn { pid: pid + 1 }).unwrap();
                        v.op(0, Op::Switch { pid: pid + 1 }).unwrap();
                        v.op(0, Op::Exit { pid }).unwrap();
                        pid += 1;
                    }
                    _ => v
                        .access(0, rng.gen_range(0..120), rng.gen_bool(0.5))
                        .unwrap(),
                }
                v.validate()
                    .unwrap_or_else(|e| panic!("seed {seed} {mode:?}: {e}"));
                most = most.max(v.image_blocks.as_ref().unwrap().borrow().frame_of.len());
            }
            // The guest cached blocks and the host swapped guest memory out.
            assert!(most > 20, "seed {seed}: {most}");
            let swapped = v.host.as_ref().unwrap().shared.borrow().m.stats.pswpout;
            assert!(swapped > 0, "seed {seed}");
            let p = v.swap_pathologies();
            seen.silent_swap_writes += p.silent_swap_writes;
            seen.stale_swap_reads += p.stale_swap_reads;
            seen.false_swap_reads += p.false_swap_reads;
        }
        // The host's swapping of the guest's memory showed each pathology.
        assert!(
            seen.silent_swap_writes > 0 && seen.stale_swap_reads > 0 && seen.false_swap_reads > 0,
            "{seen:?}"
        );
    }
}
