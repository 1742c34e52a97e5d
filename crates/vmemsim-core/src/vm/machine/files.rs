//! Files in timed runs: the page cache of the workload's kernel ([`Machine::file_io`], Linux
//! 6.8's buffered and direct I/O) with its device in time, natively and in a VM.
//!
//! - **Natively** the files are on one block device (`VmConfig::file_device`, default a
//!   `ssd`), laid out one after the other in the order they are declared, each contiguous
//!   (as an ext4 file of few extents): page `j` of a file is block `start + j`
//!   ([`Layout`]). A request longer than the device's largest is split
//!   (`blk_queue_split`); its parts complete when the last does.
//! - **In a VM** the guest's files are on its virtual disk (virtio-blk), with the same
//!   layout, and the disk is QEMU's image file on the host ([`VirtioDisk`]): each request of
//!   the guest (`virtio_blk` queues one per bio) becomes QEMU's `preadv`/`pwritev` of the
//!   image at the same offset, through the host's page cache (`cache=writeback`,
//!   `writethrough`) or with `O_DIRECT` (`none`, `directsync`; [`CacheMode`]), on the
//!   host's memory manager, which the VMs' guest memory shares. The image is a file of the
//!   host's page cache (its id is the VM's index), on the host's file disk. The guest's
//!   flush (`fsync` → `REQ_PREFLUSH` → `VIRTIO_BLK_T_FLUSH`) is the image's `fdatasync`
//!   under `writeback`. A request completes when the host's call returns, plus
//!   [`Costs::virtio_blk_ns`] (the kick's exit, QEMU's handling, the interrupt) and the
//!   host's copy of the pages ([`Costs::copy_page_ns`] each). A read's pages are written by
//!   QEMU into guest memory: the host backs those guest frames (a host fault when they were
//!   never touched or were reclaimed), as QEMU's own accesses, not the guest's (no EPT
//!   violation).
//! - **The guest's copies** between its page cache and user memory are guest accesses to
//!   the page-cache frames, which the host serves after the call (`Vm::page_cache_copies`;
//!   the engine tells the frames through [`FileBackend::page_copied`]).
//! - **Double caching** ([`Vm::double_cached`]): a guest page-cache page whose image page
//!   the host's page cache holds too.
//!
//! Left out: QEMU's I/O threads' CPU time (the host's copy is counted in the request's
//! latency, not on a CPU), the guest's and the host's I/O schedulers (requests are served
//! in submission order on the device's channels), the delay QEMU's reads of guest memory
//! for a write add to it (they are served after the call: [`Vm::qemu_write_reads`]), file
//! systems' metadata,
//! a volatile write cache in the disks, large guest pages with files (refused).

use super::*;
use crate::device::{DeviceSpec, DeviceStats, IoCompletion, IoKind, SwapDevice};
use crate::engine::FileBackend;
use crate::mm::FileSpec;
use crate::trace::recorded::{FileIo, FileOp};
use std::cell::RefCell;
use std::rc::Rc;

/// Where each file starts on its disk, in pages: one after the other in declaration order,
/// each taking the pages of its extent (the furthest byte the run reaches).
#[derive(Clone, Debug, Default)]
pub(super) struct Layout {
    starts: std::collections::HashMap<u32, u64>,
    pub(super) total: u64,
}

impl Layout {
    fn add(&mut self, id: u32, pages: u64) {
        self.starts.insert(id, self.total);
        self.total += pages;
    }

    pub(super) fn block(&self, file: u32, index: u64) -> u64 {
        self.starts.get(&file).copied().unwrap_or(0) + index
    }
}

/// The file disk of a native machine, or the host's disk holding the images.
pub(super) struct BlockFiles {
    dev: Box<dyn SwapDevice>,
    layout: Layout,
    classes: Vec<ContentClass>,
}

impl BlockFiles {
    pub(super) fn new(spec: Option<&DeviceSpec>) -> Result<BlockFiles> {
        let spec = match spec {
            Some(s) => *s,
            None => DeviceSpec::parse("ssd")?,
        };
        if matches!(spec, DeviceSpec::Zram(_)) {
            return Err(Error::config(
                "file_device",
                "zram is a swap device in memory, not a disk for files: use hdd, ssd or nvme",
            ));
        }
        Ok(BlockFiles {
            dev: crate::device::build(&spec)?,
            layout: Layout::default(),
            classes: Vec::new(),
        })
    }
}

/// Submit `pages` pages from `block` to `dev`, split at its largest request: the parts'
/// submission time summed, the last completion.
fn submit_split(
    dev: &mut dyn SwapDevice,
    classes: &mut Vec<ContentClass>,
    now: u64,
    kind: IoKind,
    block: u64,
    pages: u64,
) -> IoCompletion {
    let max = dev.max_request_pages().max(1) as u64;
    let mut out = IoCompletion {
        done_at: now,
        cpu_ns: 0,
    };
    let mut at = 0;
    while at < pages {
        let n = (pages - at).min(max);
        classes.clear();
        classes.resize(n as usize, ContentClass::Random);
        let c = dev.submit(now + out.cpu_ns, kind, block + at, classes);
        out.cpu_ns += c.cpu_ns;
        out.done_at = out.done_at.max(c.done_at);
        at += n;
    }
    out
}

impl FileBackend for BlockFiles {
    fn submit(
        &mut self,
        now: u64,
        file: u32,
        index: u64,
        pages: u64,
        write: bool,
        _frames: &[crate::mm::FrameId],
    ) -> IoCompletion {
        let kind = if write { IoKind::Write } else { IoKind::Read };
        let block = self.layout.block(file, index);
        submit_split(&mut *self.dev, &mut self.classes, now, kind, block, pages)
    }

    fn add_file(&mut self, file: u32, pages: u64) {
        self.layout.add(file, pages);
    }

    fn stats(&self) -> DeviceStats {
        self.dev.stats()
    }
}

/// What a VM's virtual disk leaves for the VM to do after the guest's call: guest frames
/// QEMU wrote (the host backs them), and an error of the host's side.
#[derive(Default)]
pub(super) struct VirtioLog {
    pub(super) dma: Vec<u64>,
    /// The image block of each frame in `dma`.
    pub(super) dma_blocks: Vec<u64>,
    /// The guest's writes that reached the image: (file, first page, pages).
    pub(super) written: Vec<(u32, u64, u64)>,
    /// The guest page cache's copies to and from user memory, in order: the frame, and
    /// why the guest touches it (read: [`HostTouch::Other`]; written whole:
    /// [`HostTouch::GuestFill`]; written in part: [`HostTouch::GuestWrite`]).
    pub(super) copies: Vec<(u64, HostTouch)>,
    pub(super) err: Option<Error>,
}

/// A VM's virtual disk: its guest's requests served by QEMU from the image on the host.
pub(super) struct VirtioDisk {
    host: Rc<RefCell<HostShared>>,
    /// The image's file id on the host (the VM's index).
    image: u32,
    mode: CacheMode,
    layout: Layout,
    virtio_ns: u64,
    copy_page_ns: u64,
    log: Rc<RefCell<VirtioLog>>,
    /// The image block each guest frame holds unchanged (module `pathologies`).
    blocks: Rc<RefCell<super::pathologies::ImageBlocks>>,
    /// A refault of QEMU's code: the host's major fault (`Costs::host_major_fault_ns`).
    code_fault_ns: u64,
    /// The guest's view of its disk: requests, pages, their latency (from submission to
    /// completion) as service time.
    stats: DeviceStats,
}

impl VirtioDisk {
    /// QEMU's call on the image for `[offset, offset + len)`, at `now` on the host:
    /// `op` through the host's page cache (or `O_DIRECT`), or with `cacol` Cacol's
    /// [`Machine::cacol_io`] (`op` a read or a write). Returns when it is done on the host.
    fn host_call(&mut self, now: u64, op: FileOp, offset: u64, len: u64) -> u64 {
        let mut sh = self.host.borrow_mut();
        sh.m.mm.now = now;
        let r = if self.mode == CacheMode::Cacol && op != FileOp::Fsync {
            let write = matches!(op, FileOp::Pwrite | FileOp::DirectWrite);
            sh.m.cacol_io(self.image as usize, write, offset, len)
        } else {
            sh.m.file_io(&FileIo {
                op,
                tid: 0,
                stamp: 0,
                file: self.image,
                offset,
                len,
                addr: 0,
            })
        };
        if let Err(e) = r {
            self.log.borrow_mut().err.get_or_insert(e);
        }
        if let Some(t) = sh.m.out_of_memory() {
            self.log.borrow_mut().err.get_or_insert(Error::config(
                "vm.host_frames",
                format!(
                    "host out of memory at its access {t} (QEMU's I/O on the disk image): give \
                     the host more frames"
                ),
            ));
        }
        sh.m.flush_file_writes();
        sh.distribute();
        let _ = sh.m.take_file_work();
        sh.m.mm.now
    }
}

impl FileBackend for VirtioDisk {
    fn submit(
        &mut self,
        now: u64,
        file: u32,
        index: u64,
        pages: u64,
        write: bool,
        frames: &[crate::mm::FrameId],
    ) -> IoCompletion {
        let offset = self.layout.block(file, index) * 4096;
        let len = pages * 4096;
        let mut start = now + self.virtio_ns;
        {
            // QEMU's handling of the request runs its code (`VmConfig::qemu_text_pages`).
            let mut sh = self.host.borrow_mut();
            sh.m.mm.now = start;
            match sh.qemu_code(self.image as usize) {
                Ok(faults) => start += faults * self.code_fault_ns,
                Err(e) => {
                    self.log.borrow_mut().err.get_or_insert(e);
                }
            }
        }
        let op = match (self.mode.host_cached(), write) {
            (true, false) => FileOp::Pread,
            (true, true) => FileOp::Pwrite,
            (false, false) => FileOp::DirectRead,
            (false, true) => FileOp::DirectWrite,
        };
        if write {
            // VSwapper §4.1 "Data Consistency": pages mapping these blocks first.
            let mut sh = self.host.borrow_mut();
            match sh.mapper_before_write(self.image as usize, offset / 4096, pages, start) {
                Ok(t) => start = t,
                Err(e) => {
                    self.log.borrow_mut().err.get_or_insert(e);
                }
            }
        }
        let mut end = self.host_call(start, op, offset, len);
        if write && self.mode == CacheMode::Writethrough {
            // `O_DSYNC`: `generic_write_sync` writes what the call dirtied before it
            // returns (the image has no other dirty pages under writethrough).
            end = self.host_call(end, FileOp::Fsync, 0, 0);
        }
        if self.mode.host_cached() {
            end += pages * self.copy_page_ns;
        }
        if write {
            self.log.borrow_mut().written.push((file, index, pages));
        } else {
            let mut log = self.log.borrow_mut();
            log.dma.extend(frames.iter().map(|&f| f as u64));
            let first = offset / 4096;
            log.dma_blocks
                .extend((0..frames.len() as u64).map(|k| first + k));
        }
        let kind = if write { IoKind::Write } else { IoKind::Read };
        self.stats
            .count_request(kind, pages, (now, now, end.max(now)), 0);
        IoCompletion {
            done_at: end.max(now),
            cpu_ns: 0,
        }
    }

    fn flush(&mut self, now: u64) -> u64 {
        if matches!(self.mode, CacheMode::Writeback | CacheMode::Cacol) {
            self.host_call(now + self.virtio_ns, FileOp::Fsync, 0, 0)
        } else {
            now
        }
    }

    fn stats(&self) -> DeviceStats {
        self.stats.clone()
    }

    /// The guest dirtied a page-cache frame or dropped it: it no longer holds its block.
    fn page_changed(&mut self, frame: crate::mm::FrameId) {
        self.blocks.borrow_mut().clear(frame);
    }

    /// The guest's page cache copied from the frame or into it: the host backs it when the
    /// call returns (`Vm::page_cache_copies`).
    fn page_copied(&mut self, frame: crate::mm::FrameId, write: bool, whole: bool) {
        let why = match (write, whole) {
            (false, _) => HostTouch::Other,
            (true, true) => HostTouch::GuestFill,
            (true, false) => HostTouch::GuestWrite,
        };
        self.log.borrow_mut().copies.push((frame as u64, why));
    }

    /// The guest's page cache copied into the frame: the Swap Mapper's copy-on-write.
    fn page_written(&mut self, frame: crate::mm::FrameId) {
        let mut sh = self.host.borrow_mut();
        let key = sh.bases[self.image as usize] + frame as u64;
        sh.mapper_write(self.image as usize, key);
    }
}

impl Vm {
    /// Declare the workload's files: in the workload's kernel (natively the machine, in a
    /// VM the guest) with their device in time, and in a VM the disk image on the host.
    /// Errors: files with large guest pages, a policy without page-cache pages, files
    /// that do not fit the page cache's range, a bad device.
    pub fn add_files(&mut self, files: &[FileSpec], cfg: &VmConfig) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        if self.gshift != 0 {
            return Err(Error::config(
                "vm.guest_page",
                "the page cache is modelled with 4 KiB pages: a workload with file I/O needs \
                 guest_page = 4k",
            ));
        }
        let mut layout = Layout::default();
        for &f in files {
            self.guest.add_file(f)?;
            layout.add(f.id, f.extent.div_ceil(4096).max(1));
        }
        self.file_layout = Some(layout.clone());
        match self.host.as_ref() {
            None => {
                let mut disk = BlockFiles::new(cfg.file_device.as_ref())?;
                disk.layout = layout;
                self.guest.set_file_backend(Box::new(disk));
            }
            Some(h) => {
                let image = h.vm as u32;
                {
                    let mut sh = h.shared.borrow_mut();
                    if !sh.m.has_file_backend() {
                        let disk = BlockFiles::new(cfg.file_device.as_ref())?;
                        sh.m.set_file_backend(Box::new(disk));
                    }
                    let bytes = layout.total * 4096;
                    sh.m.add_file(FileSpec {
                        id: image,
                        initial_size: bytes,
                        extent: bytes,
                    })?;
                    let i = sh.m.mm.cache.find(image).expect("just added");
                    let reserved = sh.m.mm.cache.file(i).reserved;
                    sh.m.file_backend_add(image, reserved);
                    if cfg.cache_mode == CacheMode::Cacol && sh.m.cacol_state().is_none() {
                        let n = sh.bases.len();
                        sh.m.enable_cacol(n)?;
                    }
                }
                let log = Rc::new(RefCell::new(VirtioLog::default()));
                self.virtio = Some(log.clone());
                let blocks = Rc::new(RefCell::new(super::pathologies::ImageBlocks::new(
                    self.guest_frames,
                )));
                h.shared.borrow_mut().images[h.vm] = Some(blocks.clone());
                self.image_blocks = Some(blocks.clone());
                self.guest.set_file_backend(Box::new(VirtioDisk {
                    host: h.shared.clone(),
                    image,
                    mode: cfg.cache_mode,
                    layout,
                    virtio_ns: self.costs.virtio_blk_ns,
                    copy_page_ns: self.costs.copy_page_ns,
                    log,
                    blocks,
                    code_fault_ns: self.costs.host_major_fault_ns,
                    stats: DeviceStats::default(),
                }));
            }
        }
        self.has_files = true;
        Ok(())
    }

    /// One file I/O call of vCPU (natively: thread) `v`: through the page cache of its
    /// kernel, at its clock. The call's CPU time (`syscall_ns`, `copy_page_ns` per page
    /// copied, `pagecache_add_ns` per page read from the device, the device's submission)
    /// and the faults and reclaim its allocations caused advance the clock; its waits for
    /// the device halt the vCPU (`io_wait`: the CPU is free meanwhile).
    pub fn file_op(&mut self, v: usize, io: &FileIo, cls: Classes<'_>) -> Result<()> {
        if !self.has_files {
            return Err(Error::config(
                "workload",
                "a file I/O op, but the workload declared no files",
            ));
        }
        if self.shares_host {
            self.sync_host_unmaps();
        }
        self.last_valid = false;
        let before = self.work_snapshot();
        let t0 = self.vcpus[v].clock;
        self.guest.mm.now = t0;
        let reads0 = self.guest.stats.file_reads;
        self.guest.file_io(io)?;
        let fsync = io.op == FileOp::Fsync;
        if fsync {
            let now = self.guest.mm.now;
            let done = self.guest.flush_file_device(now);
            self.guest.note_file_wait(done);
        }
        if let Some(e) = self.virtio.as_ref().and_then(|l| l.borrow_mut().err.take()) {
            return Err(e);
        }
        self.sync_guest_unmaps(Some(v))?;
        self.sync_host_unmaps();
        self.qemu_dma()?;
        self.page_cache_copies()?;
        // (a page is written to the image after the guest's copy filled it)
        self.qemu_write_reads()?;
        self.note_written();
        let after = self.work_snapshot();
        self.charge(v, &before, &after, false, cls);
        let w = self.guest.take_file_work();
        let c = &self.costs;
        let cpu = c.syscall_ns
            + w.pages_copied * c.copy_page_ns
            + (self.guest.stats.file_reads - reads0) * c.pagecache_add_ns
            + w.submit_ns;
        self.r.time.file_cpu_ns += cpu;
        self.r.time.file_wait_ns += w.wait_ns;
        let vc = &mut self.vcpus[v];
        vc.clock += cpu + w.wait_ns;
        vc.io_wait += w.wait_ns;
        Ok(())
    }

    /// At the end of the run: the file writes complete by then leave writeback, so
    /// `nr_writeback` is the writes still in flight when the last vCPU finished.
    pub(super) fn settle_files(&mut self) {
        if !self.has_files {
            return;
        }
        let end = self.vcpus.iter().map(|c| c.clock).max().unwrap_or(0);
        self.guest.settle_file_io(end);
        if let Some(h) = self.host.as_ref() {
            h.shared.borrow_mut().m.settle_file_io(end);
        }
    }

    /// QEMU read the guest frames of the guest's write requests (its `pwritev` of the image
    /// takes the data from guest memory): the host serves each page as a read of QEMU's
    /// own (no EPT violation), a swap read when it had swapped the page out since the guest
    /// dirtied it (`qemu_write_swap_reads`). The frames are the guest page cache's, found by
    /// file and index after the call (a page the guest has dropped since is not read).
    /// Left out: `O_DIRECT` writes' user buffers, and the read's delay of the request.
    fn qemu_write_reads(&mut self) -> Result<()> {
        let Some(log) = self.virtio.as_ref() else {
            return Ok(());
        };
        let written = log.borrow().written.clone();
        if written.is_empty() || self.host.is_none() {
            return Ok(());
        }
        let mut gfns = Vec::new();
        for &(file, index, pages) in &written {
            gfns.extend((index..index + pages).filter_map(|j| self.guest.file_page_frame(file, j)));
        }
        let host = self.host.as_mut().expect("checked");
        host.shared.borrow_mut().m.mm.now = self.guest.mm.now;
        for &gfn in &gfns {
            host.qemu_read(gfn as u64)?;
        }
        self.sync_host_unmaps();
        Ok(())
    }

    /// QEMU wrote guest frames (the reads it served): the host backs each, as QEMU's own
    /// access (a host fault if need be, no EPT violation).
    fn qemu_dma(&mut self) -> Result<()> {
        let Some(log) = self.virtio.as_ref() else {
            return Ok(());
        };
        let gfns = std::mem::take(&mut log.borrow_mut().dma);
        let blocks = std::mem::take(&mut log.borrow_mut().dma_blocks);
        if gfns.is_empty() {
            return Ok(());
        }
        let Some(host) = self.host.as_mut() else {
            return Ok(());
        };
        host.shared.borrow_mut().m.mm.now = self.guest.mm.now;
        for (&gfn, &block) in gfns.iter().zip(&blocks) {
            host.qemu_touch(gfn, block)?;
        }
        self.sync_host_unmaps();
        self.map_dma(&gfns);
        Ok(())
    }

    /// The guest's page cache copied between its frames and user memory (`filemap_read`'s
    /// `copy_page_to_iter`, `generic_perform_write`'s `copy_page_from_iter_atomic`): each
    /// frame is a guest access to its gfn, which the host serves as it serves a guest
    /// access that walks (`serve`): an EPT violation (under shadow paging a host fault)
    /// when the host has no mapping, a host swap-in when it swapped the page out, the
    /// EPT's accessed bit for the host's reclaim otherwise. A read of the frame is
    /// [`HostTouch::Other`]; a write that overwrites it whole is the guest's fill
    /// ([`HostTouch::GuestFill`]: a false read if the host reads it in, the Preventer's
    /// to avoid), a partial one a store ([`HostTouch::GuestWrite`]). The copy's CPU time is
    /// the call's (`copy_page_ns`); the host's faults add their own costs. The user
    /// buffer's side of the copy is the workload's own accesses (`workload/fileio.rs`
    /// touches its buffer after each call). Left out: the guest kernel's direct map in the
    /// vCPU's TLB (every copied page is served as a walk would: the TLB holds no nested
    /// translation across calls), the copies' order against QEMU's DMA within one call
    /// (the DMA first, then the copies, which is their order for a page read from disk).
    fn page_cache_copies(&mut self) -> Result<()> {
        let Some(log) = self.virtio.as_ref() else {
            return Ok(());
        };
        let copies = std::mem::take(&mut log.borrow_mut().copies);
        if copies.is_empty() {
            return Ok(());
        }
        let mut out = Ok(());
        for &(gfn, why) in &copies {
            let write = why != HostTouch::Other;
            out = self.host_touch_as(gfn, write, why).map(|_| ());
            if out.is_err() {
                break;
            }
        }
        if let Some(log) = self.virtio.as_ref() {
            let mut l = log.borrow_mut();
            if l.copies.is_empty() {
                l.copies = copies;
                l.copies.clear();
            }
        }
        out
    }

    /// With Cacol on the host: its counters by name (empty otherwise).
    pub fn cacol_counters(&self) -> BTreeMap<String, u64> {
        let Some((c, _)) = self
            .host
            .as_ref()
            .and_then(|h| h.shared.borrow().m.cacol_state())
        else {
            return BTreeMap::new();
        };
        [
            ("bypassed", c.bypassed),
            ("hits", c.hits),
            ("inserted", c.inserted),
            ("scanned", c.scanned),
            ("decremented", c.decremented),
            ("evicted", c.evicted),
            ("evicted_dirty", c.evicted_dirty),
            ("at_watermarks", c.at_watermarks),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// With Cacol on the host: each VM's low watermark now (0 otherwise).
    pub fn cacol_watermark(&self) -> u64 {
        self.host
            .as_ref()
            .and_then(|h| h.shared.borrow().m.cacol_state())
            .and_then(|(_, per_vm)| per_vm.first().map(|&(_, wm)| wm))
            .unwrap_or(0)
    }

    /// Double caching now: the guest's page-cache pages whose image page is in the host's
    /// page cache, and the host's page-cache pages of this VM's image (0, 0 natively or
    /// without files).
    pub fn double_cached(&self) -> (u64, u64) {
        let (Some(host), Some(log)) = (self.host.as_ref(), self.virtio.as_ref()) else {
            return (0, 0);
        };
        let _ = log;
        let sh = host.shared.borrow();
        let image = host.vm as u32;
        let Some(hi) = sh.m.mm.cache.find(image) else {
            return (0, 0);
        };
        let host_pages = sh.m.mm.cache.file(hi).nrpages;
        let Some(layout) = self.file_layout.as_ref() else {
            return (0, host_pages);
        };
        let mut both = 0;
        let frames = &self.guest.mm.frames;
        for f in 0..frames.len() {
            if !frames.in_use(f) || frames.flags(f) & crate::mm::frames::F_PAGECACHE == 0 {
                continue;
            }
            let vpn = self.guest.mm.owner(f);
            if let Some((i, index)) = self.guest.mm.cache.page_of(vpn) {
                let id = self.guest.mm.cache.file(i).id;
                if sh.m.file_page_cached(hi, layout.block(id, index)) {
                    both += 1;
                }
            }
        }
        (both, host_pages)
    }
}

impl HostSide {
    /// QEMU reads guest frame `gfn` (a write's data): the host serves its page as a read of
    /// QEMU's, without the EPT.
    fn qemu_read(&mut self, gfn: u64) -> Result<()> {
        let key = self.base + (gfn >> self.shift);
        let mut sh = self.shared.borrow_mut();
        sh.touch = HostTouch::QemuRead;
        let r = sh.serve(key, false);
        sh.distribute();
        sh.touch = HostTouch::Other;
        r
    }

    /// QEMU writes guest frame `gfn` (a read's data): the host serves its page as a write
    /// of QEMU's, without the EPT.
    fn qemu_touch(&mut self, gfn: u64, block: u64) -> Result<()> {
        let key = self.base + (gfn >> self.shift);
        let mut sh = self.shared.borrow_mut();
        // With the Swap Mapper, QEMU maps the block instead (module `mapper`).
        sh.mapper_before_dma(self.vm, key);
        // A swap read here is a stale read (VSwapper §3): the copy overwrites the page.
        sh.touch = HostTouch::QemuDma;
        sh.serve(key, true)?;
        sh.distribute();
        sh.touch = HostTouch::Other;
        sh.mapper_map(self.vm, key, block);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One channel, 100 µs a request plus 1 µs a page (4096 B at 4096 MB/s), no submission
    /// time.
    const DISK: &str = "ssd:latency_us=100,qd=1,bw_mbps=4096,submit_us=0";

    fn cfg(paging: Paging, guest_frames: u32, read_ahead_kb: u32) -> VmConfig {
        let mut c = VmConfig::new(paging, guest_frames, 4 * guest_frames);
        c.guest.read_ahead_kb = read_ahead_kb;
        c.guest.check_invariants = true;
        c.host.check_invariants = true;
        c.file_device = Some(DeviceSpec::parse(DISK).unwrap());
        c.tlb = paging != Paging::Native;
        c
    }

    fn run(c: &VmConfig, spec: &str) -> RunResult {
        let mut w = crate::vm::workloads::parse(spec, 0).unwrap();
        super::super::run(c, w.as_mut()).unwrap()
    }

    #[test]
    fn a_native_reader_waits_for_each_page_it_reads() {
        // `read_ahead_kb = 0`: each read of a page not cached reads it alone
        // (`force_page_cache_ra` of one page). dd of 16 KiB in 4 KiB blocks: 4 requests of
        // one page, each 101 µs on an idle disk, each waited for; per call 300 ns of
        // syscall, 400 ns of copy and 500 ns of page-cache insertion.
        let r = run(&cfg(Paging::Native, 256, 0), "dd-like:bytes=16KiB,bs=4KiB");
        let d = r.file_device_stats.as_ref().unwrap();
        assert_eq!((d.read_requests, d.pages_read, d.write_requests), (4, 4, 0));
        assert_eq!(r.time.file_wait_ns, 4 * 101_000);
        assert_eq!(r.time.file_cpu_ns, 4 * (300 + 400 + 500));
        assert_eq!(r.stats.pgpgin, 16);
        assert_eq!(r.stats.nr_file_pages, 4);
        // The run's time is the calls', the waits' and the buffer's one access per call
        // (its first touch is a minor fault: 1 µs).
        assert_eq!(r.runtime_ns, 4 * (101_000 + 1_200 + 100) + 1_000);
    }

    #[test]
    fn readahead_reads_ahead_in_one_request_and_a_later_read_waits_for_it() {
        // `read_ahead_kb = 128` (32 pages), a file of 64 pages read in 16 KiB (4-page)
        // blocks, by `ondemand_readahead`'s rules: the first read's window is
        // `get_init_ra_size(4, 32)` = 8 pages (4 ≤ 32/4), async size 4: one request of
        // pages 0..8 with page 4 marked; the read at 4 hits the mark: next window
        // `get_next_ra_size(8, 32)` = 16 at 8 (one request, page 8 marked); the read at 8:
        // 32 pages at 24 (page 24 marked); the read at 24: 32 more at 56, clipped to the
        // file's end (`do_page_cache_ra`): 8 pages. 4 requests, 64 pages, none read twice;
        // the first read waits for its request.
        let r = run(
            &cfg(Paging::Native, 1024, 128),
            "dd-like:bytes=256KiB,bs=16KiB",
        );
        let d = r.file_device_stats.as_ref().unwrap();
        assert_eq!((d.read_requests, d.pages_read), (4, 64));
        assert_eq!(r.stats.pgpgin, 256);
        assert!(r.time.file_wait_ns >= 108_000, "{}", r.time.file_wait_ns);
    }

    #[test]
    fn writes_reach_the_disk_at_fsync() {
        // dd of 32 KiB in 8 KiB blocks with conv=fsync: 8 pages dirtied, written by the fsync
        // in one request of 8 consecutive pages (108 µs), waited for.
        let r = run(
            &cfg(Paging::Native, 256, 128),
            "dd-like:bytes=32KiB,bs=8KiB,op=write,fsync=1",
        );
        let d = r.file_device_stats.as_ref().unwrap();
        assert_eq!(
            (d.write_requests, d.pages_written, d.read_requests),
            (1, 8, 0)
        );
        assert_eq!(r.time.file_wait_ns, 108_000);
        assert_eq!(r.stats.nr_dirty, 0);
        assert_eq!(r.stats.pgpgout, 32);
    }

    #[test]
    fn a_guest_read_is_cached_twice_under_writeback_and_once_under_none() {
        // A 64 KiB file read by a guest with `read_ahead_kb = 0` (16 one-page requests on
        // its virtual disk). Under writeback QEMU's `preadv` of each page goes through the
        // host's page cache, whose own readahead reads ahead in the image: every page the
        // guest caches is in the host's cache too (16 double-cached pages), and the host
        // caches at least those. Under none (`O_DIRECT`) the host caches nothing.
        let wb = run(&cfg(Paging::Tdp, 256, 0), "dd-like:bytes=64KiB,bs=4KiB");
        assert_eq!(wb.stats.nr_file_pages, 16);
        assert_eq!(wb.double_cached_pages, 16);
        assert!(wb.host_image_pages >= 16, "{}", wb.host_image_pages);
        let vd = wb.file_device_stats.as_ref().unwrap();
        assert_eq!((vd.read_requests, vd.pages_read), (16, 16));
        let hd = wb.host_file_device_stats.as_ref().unwrap();
        assert!(hd.read_requests < 16 && hd.pages_read >= 16, "{hd:?}");
        let mut c = cfg(Paging::Tdp, 256, 0);
        c.cache_mode = CacheMode::None;
        let none = run(&c, "dd-like:bytes=64KiB,bs=4KiB");
        assert_eq!(none.stats.nr_file_pages, 16);
        assert_eq!((none.double_cached_pages, none.host_image_pages), (0, 0));
        assert_eq!(none.host_stats.nr_file_pages, 0);
        let hd = none.host_file_device_stats.as_ref().unwrap();
        assert_eq!((hd.read_requests, hd.pages_read), (16, 16));
        // Each guest request waits for the host's: 10 µs of virtio plus the disk's 101 µs.
        assert_eq!(none.time.file_wait_ns, 16 * 111_000);
    }

    #[test]
    fn a_recorded_programs_file_io_runs_on_the_timed_machine() {
        // The replay's hand-checked trace (`recorded_file_io_goes_through_the_page_cache`):
        // 16 pages read with readahead in windows 0..4, 4..12 and 12..16 (three requests
        // on the disk), an append of two whole pages (dirty, not read), 3 anonymous pages.
        let path = crate::engine::pc_tmp("timed.vmt");
        crate::engine::pc_write_trace(&path);
        let c = cfg(Paging::Native, 1024, 128);
        // (natively, as `vmemsim run` parses it: the process model's trace workload)
        let mut w = crate::workload::parse(&format!("trace:path={path}"), 0).unwrap();
        let r = super::super::run(&c, w.as_mut()).unwrap();
        assert_eq!(r.stats.file_io, 17);
        assert_eq!((r.stats.file_reads, r.stats.pgpgin), (16, 64));
        assert_eq!((r.stats.nr_file_pages, r.stats.nr_dirty), (18, 2));
        let d = r.file_device_stats.as_ref().unwrap();
        assert_eq!(
            (d.read_requests, d.pages_read, d.write_requests),
            (3, 16, 0)
        );
        // In a VM, the same guest counters. The host's cache holds every block the guest
        // caches: the 16 it read, and the 2 the append wrote in the guest's cache only,
        // whose image blocks (still the old, empty ones) the host's readahead of the image
        // (32 pages from block 0) brought in: 18 blocks cached twice.
        let r = run(&cfg(Paging::Tdp, 1024, 128), &format!("trace:path={path}"));
        assert_eq!((r.stats.file_reads, r.stats.nr_file_pages), (16, 18));
        assert_eq!(r.double_cached_pages, 18);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn cacol_keeps_a_page_from_its_second_request() {
        // A guest of 64 frames (watermarks 1/2/3... by the kernel's rule for so few) reads a
        // 256-page file twice with `read_ahead_kb = 0`: each guest miss is one request of
        // one page. On the first pass every page is requested for the first time: Cacol
        // serves it from the disk and keeps nothing (256 bypassed). Every later request of a
        // page (the second pass's reads of pages the guest no longer caches, and a page the
        // guest's reclaim took between its readahead and its copy, read again) is admitted
        // or, once admitted, a hit. The host has room for all: nothing is evicted, and its
        // cache is exactly the admitted pages.
        let mut c = cfg(Paging::Tdp, 64, 0);
        c.cache_mode = CacheMode::Cacol;
        c.host.frames = 4096;
        let r = run(&c, "dd-like:bytes=1MiB,bs=4KiB,passes=2");
        let k = |name: &str| r.cacol[name];
        assert_eq!(k("bypassed"), 256);
        assert_eq!(k("inserted") + k("hits"), r.stats.file_reads - 256);
        assert!(k("inserted") > 0);
        assert_eq!(k("evicted"), 0);
        assert_eq!(r.host_image_pages, k("inserted"));
        assert!(r.double_cached_pages <= k("inserted"));
        // One pass: every request is a first one, the host keeps nothing (seed 003's "almost
        // zero memory waste" for dd); under writeback it keeps the whole image (256 pages,
        // its own readahead reading what the guest had not asked for yet).
        let one = run(&c, "dd-like:bytes=1MiB,bs=4KiB");
        assert_eq!((one.cacol["bypassed"], one.host_image_pages), (256, 0));
        assert_eq!(one.double_cached_pages, 0);
        c.cache_mode = CacheMode::Writeback;
        let wb = run(&c, "dd-like:bytes=1MiB,bs=4KiB");
        assert_eq!(wb.host_image_pages, 256);
        assert_eq!(wb.double_cached_pages, wb.stats.nr_file_pages);
    }

    #[test]
    fn cacol_under_host_pressure_keeps_its_invariants() {
        // Two VMs reading files three times on a host too small for both images: Cacol
        // evicts (its invariants and the policy's, checked after every step, hold), and
        // reclaim takes Cacol's pages before the guests' memory.
        let mut c = cfg(Paging::Tdp, 128, 0);
        c.cache_mode = CacheMode::Cacol;
        // Each VM: 128 guest frames and 64 page-table pages; 300 frames more for the caches.
        c.host.frames = 2 * (128 + 64) + 300;
        let cfgs = vec![c.clone(), c];
        let mut wls: Vec<Box<dyn crate::workload::Workload>> = vec![
            crate::vm::workloads::parse("dd-like:bytes=2MiB,bs=4KiB,passes=3", 0).unwrap(),
            crate::vm::workloads::parse("dd-like:bytes=2MiB,bs=4KiB,passes=3", 1).unwrap(),
        ];
        let r = super::super::run_many(&cfgs, &mut wls).unwrap();
        assert!(r.cacol["evicted"] > 0, "{:?}", r.cacol);
        assert_eq!(r.per_vm.len(), 2);
    }

    #[test]
    fn a_writer_above_the_dirty_limit_waits_for_the_disk() {
        // A native machine of 1,000 frames (watermarks 0) writing a new file of 1,000 pages,
        // a page a call: dirtyable memory is 1,000 (the dd buffer's page is anonymous), so
        // thresh = 819 × 1000 / 4096 = 199 and bg_thresh = 409 × 1000 / 4096 = 99. Every
        // 100th dirty page starts background writeback of the 100 (one request of
        // consecutive pages: 200 µs on the one-channel disk); the writer dirties 100 pages in
        // about 100 × 0.8 µs, far faster, so writes queue and dirty + writeback passes 199:
        // the writer waits for the oldest write each time. 10 requests of 100 pages; the
        // writer ends once the 9th is done, about 80 µs + 9 × 200 µs after the start.
        let mut c = cfg(Paging::Native, 1000, 128);
        c.guest.watermarks = Some(crate::watermarks::Watermarks {
            min: 0,
            low: 0,
            high: 0,
        });
        let r = run(&c, "dd-like:bytes=4000KiB,bs=4KiB,op=write");
        let d = r.file_device_stats.as_ref().unwrap();
        assert_eq!((d.write_requests, d.pages_written), (10, 1000));
        assert_eq!((r.stats.wb_background, r.stats.nr_dirty), (1000, 0));
        // The last request (the 10th: the writer waited for the 9th only) is still in
        // flight when the run ends.
        assert_eq!(r.stats.nr_writeback, 100);
        assert!(r.stats.dirty_throttled >= 8, "{}", r.stats.dirty_throttled);
        assert!(
            (1_800_000..2_100_000).contains(&r.runtime_ns),
            "{}",
            r.runtime_ns
        );
    }

    /// Random file I/O of 2 threads over 3 files: reads, writes, fsyncs, fadvise and
    /// truncations, each thread's whole stream handed out at once.
    struct RandomFiles {
        ops: Vec<Vec<Op>>,
        ios: Vec<Vec<FileIo>>,
        given: Vec<bool>,
    }

    impl RandomFiles {
        fn new(seed: u64) -> RandomFiles {
            use rand::{Rng, SeedableRng};
            let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
            let mut ops = vec![Vec::new(), Vec::new()];
            let mut ios = vec![Vec::new(), Vec::new()];
            for t in 0..2 {
                for _ in 0..300 {
                    let file = rng.gen_range(0..3u32);
                    let offset = rng.gen_range(0..60u64) * 4096 + rng.gen_range(0..2u64) * 1000;
                    let len = rng.gen_range(1..5u64) * 4096;
                    let (op, offset, len, addr) = match rng.gen_range(0..10) {
                        0..=4 => (FileOp::Pread, offset, len, 0),
                        5..=7 => (FileOp::Pwrite, offset, len, 0),
                        8 => (FileOp::Fsync, 0, 0, 0),
                        _ => (
                            FileOp::Fadvise,
                            offset,
                            len,
                            crate::trace::recorded::fadv::DONTNEED,
                        ),
                    };
                    ops[t].push(Op::File {
                        slot: ios[t].len() as u32,
                    });
                    ios[t].push(FileIo {
                        op,
                        tid: t as u32,
                        stamp: 0,
                        file,
                        offset,
                        len,
                        addr,
                    });
                    ops[t].push(Op::Access {
                        page: rng.gen_range(0..32),
                        write: rng.gen_bool(0.5),
                    });
                }
            }
            RandomFiles {
                ops,
                ios,
                given: vec![false; 2],
            }
        }
    }

    impl crate::workload::Workload for RandomFiles {
        fn name(&self) -> String {
            "random-files".into()
        }
        fn threads(&self) -> usize {
            2
        }
        fn footprint_pages(&self) -> u64 {
            32
        }
        fn next_ops(&mut self, tid: usize, buf: &mut Vec<Op>) -> Result<()> {
            if !std::mem::replace(&mut self.given[tid], true) {
                buf.extend_from_slice(&self.ops[tid]);
            }
            Ok(())
        }
        fn files(&self) -> Vec<FileSpec> {
            (0..3)
                .map(|id| FileSpec {
                    id,
                    initial_size: 40 * 4096,
                    extent: 70 * 4096,
                })
                .collect()
        }
        fn file_io(&self, tid: usize, slot: u32) -> Option<&FileIo> {
            self.ios[tid].get(slot as usize)
        }
    }

    #[test]
    fn random_file_io_in_vms_keeps_invariants_and_is_deterministic() {
        // Guest and host invariants (every page-cache frame's entry points back at it, the
        // policies hold exactly their frames, Cacol's own checks through the host's
        // validate) after every step, under memory pressure on both sides; the same run
        // twice gives the same result.
        for seed in 0..6u64 {
            for mode in [CacheMode::Writeback, CacheMode::None, CacheMode::Cacol] {
                let mut c = cfg(Paging::Tdp, 160, 16);
                c.cache_mode = mode;
                c.host.frames = 160 + 64 + 120;
                c.guest_policy = crate::policy::PolicyKind::from_name(if seed % 2 == 0 {
                    "clock-lru"
                } else {
                    "mglru"
                })
                .unwrap();
                let a = super::super::run(&c, &mut RandomFiles::new(seed)).unwrap();
                let b = super::super::run(&c, &mut RandomFiles::new(seed)).unwrap();
                assert_eq!(
                    serde_json::to_string(&a).unwrap(),
                    serde_json::to_string(&b).unwrap(),
                    "seed {seed} {mode:?}"
                );
                assert_eq!(a.stats.file_io, 600);
                assert!(a.stats.nr_file_pages <= 3 * 70);
                // Pressure on both sides: the guest and the host reclaim (the host's image
                // pages under writeback, Cacol's under cacol), the flusher writes.
                assert!(a.stats.evictions > 0 && a.stats.wb_background > 0);
                match mode {
                    CacheMode::Writeback => assert!(a.host_stats.evictions > 0),
                    CacheMode::Cacol => assert!(a.cacol["evicted"] > 0),
                    _ => assert_eq!(a.host_stats.nr_file_pages, 0),
                }
            }
        }
    }
}
