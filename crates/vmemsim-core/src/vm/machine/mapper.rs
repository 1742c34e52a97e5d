//! VSwapper's Swap Mapper (Amit, Tsafrir and Schuster, ASPLOS 2014, §4.1), with
//! `VmConfig::vswapper = mapper`: QEMU serves a guest's disk read by mapping the image's
//! blocks into guest memory (`mmap` of the image with `MAP_PRIVATE`, "populate"), not by
//! copying them (`preadv`), so the host knows which of the VM's pages hold an unchanged
//! copy of which image block and treats them as named, file-backed memory.
//!
//! - Made when QEMU's DMA of a guest disk read fills a guest frame (`Vm::qemu_dma` →
//!   `HostSide::qemu_touch`): the gfn's host page is associated with the block. A page the
//!   host had swapped out or dropped is not read back first: the mapping replaces it (the
//!   `mmap` over the old anonymous page, which the kernel zaps), so the Mapper has no stale
//!   swap reads. A DMA of another block into an associated page re-associates it (a new
//!   mapping, no copy: not a copy-on-write).
//! - Host reclaim of an associated page drops it without a swap write (the host's
//!   `__remove_mapping` of a clean file page; [`crate::engine::Machine::named`], the entry
//!   left is `PTE_NAMED_GONE`), counted as the VM's `mapper_discards`; the EPT entry goes as
//!   for any reclaim.
//! - A later host fault on it (the guest's access: an EPT violation, a host fault under
//!   shadow paging) reads the block from the image (`filemap_fault`) on the host's file disk
//!   — through the host's page cache (`Pread`, with its readahead) under the cache modes that
//!   use it, a read of the disk past the host's cache otherwise (below) — and is a host major fault: `mapper_refaults`. With a
//!   timed host swap device the faulting vCPU waits for that read as for a swap read (its
//!   completion joins the host's reads of the access, `HostShared::named_read_done`);
//!   without one the fault costs a host major fault's flat time, as a swap read does. The
//!   mapping reads through the host's page cache whatever QEMU's `O_DIRECT` does, so under
//!   `none` the read is `filemap_fault`'s read-around (`do_sync_mmap_readahead`: `ra_pages`
//!   of the host's `read_ahead_kb` from the block − `ra_pages` / 2, the pages already read
//!   skipped; one request), and a later refault of a block read so far costs no disk read
//!   (it waits for that read if still in flight). Left out: the read-around's pages take no
//!   host frames (at most two windows of them are remembered, per VM, and a guest write
//!   request of a block forgets it, `kiocb_invalidate_pages`), the mapping's `mmap_miss`
//!   and async readahead; a refault that finds its block read still counts as a major fault.
//!   Under a caching mode the page-cache copy is a frame of its own beside the guest's
//!   page (the kernel maps the page-cache page itself).
//! - Any write to the page breaks the association (`do_wp_page`'s copy-on-write of the
//!   private page: anonymous from then on, swapped as before): a guest store (a write
//!   `HostSide::touch`, the guest's `clear_page` or fill of a frame included) and the guest
//!   page cache's copy into the page (`folio_mark_dirty`: [`FileBackend::page_written`]);
//!   counted as `mapper_cow_breaks`. Dirty pages are not tracked (§4.1): a written page is
//!   never associated again unless a guest read fills it anew.
//!
//! - §4.1 "Data Consistency": a guest write request of a block that pages still map
//!   (`VirtioDisk::submit`, `HostShared::mapper_before_write`: the paper's new `open` flag)
//!   ends those mappings before QEMU writes; a page reclaim dropped is first read back from
//!   the image (a refault, the old content) and the write waits for that read.
//!
//! - On the host's LRU lists a named page is a file page (the page-cache page the private
//!   mapping maps): `Machine::set_named` moves it to the file lists of a policy that has
//!   them (`Policy::set_file_lru`: `clock-lru`, to the inactive file list's head as a new
//!   folio of `folio_add_lru`; `mglru`, to the file generations, `min_seq[FILE] + 1` as
//!   `lru_gen_add_folio` places a page-cache folio) when QEMU maps it and when it refaults
//!   from the image, and back to the anonymous lists when it is copied on write. So a kernel host's reclaim
//!   weighs it with QEMU's code and its own page cache (`get_scan_count`'s file side), not
//!   with anonymous memory: the named guest pages are no longer anonymous beside QEMU's
//!   code (§3 "False Page Anonymity", which §4.1 says the Mapper undoes).
//!
//! - §4.1 "Guest I/O Flow": a page the guest wrote to the image is mapped to its block once
//!   QEMU's write is done (`Vm::note_written`, `mapper_write_maps`), if the host holds it
//!   and the guest's page cache still holds it clean.
//!
//! Left out: the host caching policy of §4.1 (the host page cache holding only blocks in guest
//! memory), the named pages' list type under the other policies (FIFO, CLOCK, ... have
//! one list), and hosts with large
//! pages (`host_page` must be 4 KiB). The False Reads Preventer (§4.2) is module `preventer`
//! (`vswapper = preventer`, or `vswapper` for both).
//!
//! [`FileBackend::page_written`]: crate::engine::FileBackend::page_written

use super::*;

use crate::mm::PTE_NAMED_GONE;
use crate::trace::recorded::{FileIo, FileOp};

/// VSwapper (§4) on a VM: which of its mechanisms run. `vswapper` (the paper's §5 name for
/// the whole system) is the Mapper and the Preventer together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VSwapper {
    /// Uncooperative swapping as is: guest memory is anonymous to the host.
    #[default]
    Off,
    /// The Swap Mapper (§4.1): pages QEMU filled from the disk image are named copies of
    /// their blocks, dropped by host reclaim and read back from the image.
    Mapper,
    /// The False Reads Preventer (§4.2, module `preventer`): a guest write to a page the
    /// host swapped out is emulated into a buffer; a page overwritten whole is not read.
    Preventer,
    /// Both (§5's "vswapper").
    #[serde(rename = "vswapper")]
    Both,
}

impl VSwapper {
    /// The names [`VSwapper::parse`] accepts.
    pub const NAMES: &'static [&'static str] = &["off", "mapper", "preventer", "vswapper"];

    pub fn parse(s: &str) -> Result<VSwapper> {
        match s {
            "off" => Ok(VSwapper::Off),
            "mapper" => Ok(VSwapper::Mapper),
            "preventer" => Ok(VSwapper::Preventer),
            "vswapper" => Ok(VSwapper::Both),
            _ => Err(Error::config(
                "vswapper",
                format!(
                    "unknown VSwapper setting {s:?} ({})",
                    VSwapper::NAMES.join(", ")
                ),
            )),
        }
    }

    /// The name [`VSwapper::parse`] takes for it.
    pub fn name(self) -> &'static str {
        VSwapper::NAMES[self as usize]
    }

    /// Whether the Swap Mapper (§4.1) runs.
    pub fn mapper(self) -> bool {
        matches!(self, VSwapper::Mapper | VSwapper::Both)
    }

    /// Whether the False Reads Preventer (§4.2) runs.
    pub fn preventer(self) -> bool {
        matches!(self, VSwapper::Preventer | VSwapper::Both)
    }
}

/// The host's side of VSwapper: per VM with the Mapper on, its cache mode; the associated
/// pages; per VM, whether the Preventer (module `preventer`) is on.
#[derive(Debug, Default)]
pub(super) struct MapperState {
    /// Per VM: `Some(cache mode)` with the Mapper on.
    pub(super) on: Vec<Option<CacheMode>>,
    /// Per VM: the False Reads Preventer is on.
    pub(super) prevent: Vec<bool>,
    /// Host page → the image block it is a private mapping of.
    pub(super) block: std::collections::HashMap<u64, u64>,
    /// (VM, image block) → the host pages mapping it.
    keys: std::collections::HashMap<(usize, u64), Vec<u64>>,
    /// Per VM: the image blocks the refaults' read-around read without `O_DIRECT`'s bypass
    /// (`do_sync_mmap_readahead`), each with its read's completion, oldest first: at most
    /// two windows, kept without host frames (see `HostShared::mapper_refault_read`).
    around: Vec<std::collections::VecDeque<(u64, u64)>>,
}

impl MapperState {
    fn unlink(&mut self, vm: usize, key: u64) -> Option<u64> {
        let b = self.block.remove(&key)?;
        if let Some(ks) = self.keys.get_mut(&(vm, b)) {
            ks.retain(|&k| k != key);
            if ks.is_empty() {
                self.keys.remove(&(vm, b));
            }
        }
        Some(b)
    }
}

impl MapperState {
    /// VSwapper's state for `cfgs` (`None`: off on every VM). Errors with large host pages:
    /// the Mapper maps 4 KiB blocks, and the Preventer's buffer is a page a guest fill of one
    /// 4 KiB frame overwrites whole.
    pub(super) fn for_vms(cfgs: &[&VmConfig]) -> Result<Option<MapperState>> {
        if cfgs.iter().all(|c| c.vswapper == VSwapper::Off) {
            return Ok(None);
        }
        if cfgs[0].host_page.shift() != 12 {
            let c = cfgs
                .iter()
                .find(|c| c.vswapper != VSwapper::Off)
                .unwrap_or(&cfgs[0]);
            let why = if c.vswapper.mapper() {
                "the Swap Mapper maps 4 KiB blocks (VSwapper §4.1)"
            } else {
                "the False Reads Preventer's buffer is one 4 KiB page, which a guest fill of a \
                 4 KiB frame overwrites whole (VSwapper §4.2)"
            };
            return Err(Error::config(
                "vm.vswapper",
                format!(
                    "vswapper = {}: {why}: needs host_page = 4k",
                    c.vswapper.name()
                ),
            ));
        }
        Ok(Some(MapperState {
            on: cfgs
                .iter()
                .map(|c| c.vswapper.mapper().then_some(c.cache_mode))
                .collect(),
            prevent: cfgs.iter().map(|c| c.vswapper.preventer()).collect(),
            block: Default::default(),
            keys: Default::default(),
            around: vec![Default::default(); cfgs.len()],
        }))
    }
}

impl HostShared {
    /// §4.1 "Data Consistency": VM `vm`'s guest writes image blocks `first..first + n`
    /// (`VirtioDisk::submit`, before QEMU's write): each page still mapping one of them
    /// stops doing so, keeping the old content; one reclaim dropped is read back from the
    /// image first (the write waits for it). Returns when those reads are done (`now`
    /// without any).
    pub(super) fn mapper_before_write(
        &mut self,
        vm: usize,
        first: u64,
        n: u64,
        now: u64,
    ) -> Result<u64> {
        if !self.mapper_on(vm) {
            return Ok(now);
        }
        let mut done = now;
        for b in first..first + n {
            let Some(keys) = self
                .mapper
                .as_ref()
                .and_then(|s| s.keys.get(&(vm, b)).cloned())
            else {
                continue;
            };
            for key in keys {
                if self.m.mm.pt.pte(key) & PTE_NAMED_GONE != 0 {
                    self.m.mm.now = done;
                    // (QEMU's write waits for the read: `done` below)
                    self.mapper_refault_read(vm, key)?;
                    self.serve(key, false)?;
                    self.distribute();
                    done = done.max(self.m.mm.now);
                }
                if let Some(s) = self.mapper.as_mut() {
                    s.unlink(vm, key);
                }
                self.m.set_named(key, false);
            }
        }
        // (QEMU's `O_DIRECT` write then invalidates the page cache's copies of the blocks,
        // the read-around's included: `kiocb_invalidate_pages`)
        if let Some(s) = self.mapper.as_mut() {
            s.around[vm].retain(|&(b, _)| !(first..first + n).contains(&b));
        }
        Ok(done)
    }

    fn mapper_on(&self, vm: usize) -> bool {
        self.mapper
            .as_ref()
            .is_some_and(|s| s.on.get(vm).copied().flatten().is_some())
    }

    /// QEMU maps image block `block` at VM `vm`'s host page `key`, about to be filled by
    /// the DMA of a guest read: a page the host swapped out or dropped is zapped first (the
    /// new mapping replaces it, nothing is read back). No-op with the Mapper off.
    pub(super) fn mapper_before_dma(&mut self, vm: usize, key: u64) {
        if !self.mapper_on(vm) {
            return;
        }
        if self.m.mm.pt.pte(key) & PTE_PRESENT == 0 {
            self.m.unmap_page(key);
        }
    }

    /// The DMA filled VM `vm`'s host page `key` with image block `block`: associated.
    pub(super) fn mapper_map(&mut self, vm: usize, key: u64, block: u64) {
        if !self.mapper_on(vm) {
            return;
        }
        if let Some(s) = self.mapper.as_mut() {
            s.unlink(vm, key);
            s.block.insert(key, block);
            s.keys.entry((vm, block)).or_default().push(key);
        }
        self.m.set_named(key, true);
    }

    /// QEMU wrote VM `vm`'s host page `key` to image block `block` for a guest write request
    /// (`Vm::note_written`): a page the host holds is mapped to it, as after a read's DMA;
    /// one it swapped out or dropped is left as it is. No-op with the Mapper off.
    pub(super) fn mapper_map_written(&mut self, vm: usize, key: u64, block: u64) {
        if self.mapper_on(vm) && self.m.mm.pt.pte(key) & PTE_PRESENT != 0 {
            self.mapper_map(vm, key, block);
            self.pathologies[vm].mapper_write_maps += 1;
        }
    }

    /// A write to VM `vm`'s host page `key`: an associated page is copied on write
    /// (`do_wp_page`) and anonymous from then on.
    pub(super) fn mapper_write(&mut self, vm: usize, key: u64) {
        let Some(s) = self.mapper.as_mut() else {
            return;
        };
        if s.unlink(vm, key).is_some() {
            self.m.set_named(key, false);
            self.pathologies[vm].mapper_cow_breaks += 1;
        }
    }

    /// VM `vm`'s host page `key` no longer holds its block, and not by a copy-on-write:
    /// the False Reads Preventer replaced the page reclaim dropped (module `preventer`).
    pub(super) fn mapper_forget(&mut self, vm: usize, key: u64) {
        if let Some(s) = self.mapper.as_mut() {
            s.unlink(vm, key);
        }
        self.m.set_named(key, false);
    }

    /// Before the host serves VM `vm`'s host page `key`: if reclaim dropped it as a named
    /// page, read its block from the image (`filemap_fault`'s read: through the host's page
    /// cache or `O_DIRECT` by the VM's cache mode). The fault itself is the engine's.
    /// Returns when the read completes (0: no read).
    pub(super) fn mapper_refault_read(&mut self, vm: usize, key: u64) -> Result<u64> {
        let Some(s) = self.mapper.as_ref() else {
            return Ok(0);
        };
        if self.m.mm.pt.pte(key) & PTE_NAMED_GONE == 0 {
            return Ok(0);
        }
        let (Some(&block), Some(mode)) = (s.block.get(&key), s.on[vm]) else {
            return Ok(0);
        };
        if !self.m.has_file_backend() {
            return Ok(0);
        }
        // (Cacol's cache is its own: the refault reads the disk)
        let op = if mode.host_cached() && mode != CacheMode::Cacol {
            FileOp::Pread
        } else {
            FileOp::DirectRead
        };
        let (mut offset, mut len) = (block * 4096, 4096);
        if op == FileOp::DirectRead {
            // `filemap_fault` → `do_sync_mmap_readahead`: the mapping reads through the page
            // cache whatever QEMU's `O_DIRECT` does, around the fault (`ra_pages` from
            // `pgoff - ra_pages / 2`), the pages it has already read skipped. A block
            // read so far is in the page cache: no disk read, its read's completion.
            let ra = (self.m.read_ahead_kb() as u64 / 4).max(1);
            let size = self
                .m
                .mm
                .cache
                .find(vm as u32)
                .map_or(block + 1, |i| self.m.mm.cache.file(i).i_size.div_ceil(4096));
            let around = &self.mapper.as_ref().expect("checked above").around[vm];
            if let Some(&(_, done)) = around.iter().find(|&&(b, _)| b == block) {
                return Ok(done);
            }
            let start = block.saturating_sub(ra / 2);
            let end = (start + ra).min(size).max(block + 1);
            let missing = |b: &u64| !around.iter().any(|&(a, _)| a == *b);
            let lo = (start..=block).find(missing).unwrap_or(block);
            let hi = (block..end).rev().find(missing).unwrap_or(block) + 1;
            (offset, len) = (lo * 4096, (hi - lo) * 4096);
        }
        self.m.file_io(&FileIo {
            op,
            tid: 0,
            stamp: 0,
            file: vm as u32,
            offset,
            len,
            addr: 0,
        })?;
        self.m.flush_file_writes();
        let _ = self.m.take_file_work();
        // (`file_io` waited for the read: the host's clock is at its completion)
        let done = self.m.mm.now;
        if op == FileOp::DirectRead {
            let ra = (self.m.read_ahead_kb() as u64 / 4).max(1) as usize;
            let s = self.mapper.as_mut().expect("checked above");
            let q = &mut s.around[vm];
            for b in offset / 4096..(offset + len) / 4096 {
                if !q.iter().any(|&(a, _)| a == b) {
                    q.push_back((b, done));
                }
            }
            while q.len() > 2 * ra {
                q.pop_front();
            }
        }
        Ok(done)
    }
}

impl HostShared {
    /// The Mapper's invariants: the host's named pages are the associated ones, each
    /// listed under its block, in its VM's range.
    pub(super) fn mapper_validate(&self) -> std::result::Result<(), String> {
        let Some(s) = self.mapper.as_ref() else {
            return Ok(());
        };
        let named = self.m.named.as_ref().ok_or("mapper without named pages")?;
        if named.len() != s.block.len() || s.block.keys().any(|k| !named.contains(k)) {
            return Err(format!(
                "mapper: {} named host pages, {} associated",
                named.len(),
                s.block.len()
            ));
        }
        let listed: usize = s.keys.values().map(|v| v.len()).sum();
        if listed != s.block.len() {
            return Err(format!(
                "mapper: {listed} pages by block, {}",
                s.block.len()
            ));
        }
        for (&(vm, b), ks) in &s.keys {
            for k in ks {
                if s.block.get(k) != Some(&b) || self.bases[vm] > *k {
                    return Err(format!("mapper: page {k} under block {b} of VM {vm}"));
                }
            }
        }
        Ok(())
    }
}
