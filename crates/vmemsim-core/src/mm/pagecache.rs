//! The page cache: files as address spaces of 4 KiB pages (`struct address_space`), each
//! with its `i_pages` xarray from page index to a folio or, once the folio was reclaimed, to
//! its workingset shadow entry (`xa_mk_value`, stored by `workingset_eviction` in
//! `__remove_mapping`), its size (`i_size`) and its readahead state (`struct file_ra_state`).
//!
//! The xarray is modelled with the machine's radix page table ([`super::PageTable`], the same
//! shape: a tree of fixed-size nodes) over a range of page numbers reserved for files,
//! [`FILE_BASE`]..[`FILE_LIMIT`]: file `f`'s page `i` has the entry of page number
//! `base(f) + i`. A present entry (`make_present(frame)`) is a cached folio, an entry with
//! `PTE_FILE_GONE` holds the shadow of an evicted one, 0 is a page never cached. The frame
//! of a cached page has its reverse map pointing at that entry, as an anonymous frame's
//! points at its PTE, so reclaim, the policies and the invariant checks treat both alike; a
//! page-cache frame no file mapping maps has `F_MAPPED` clear, so reclaim's rmap walk never
//! finds it young, as `folio_referenced` finds no mapping of an unmapped page-cache folio.
//!
//! Each file gets a contiguous range of page numbers large enough for the furthest byte any
//! record of the run touches ([`FileSpec::extent`]), rounded up to whole leaves of 512.
//!
//! A file mapping (a recorded `mmap` of a file, [`FileMap`]) maps the cached pages at user
//! page numbers: a frame it maps has its rmap moved to the mapping's PTE (`F_MAPPED`), so
//! reclaim's rmap walk and the policies see its accessed and dirty bits as they see an
//! anonymous page's, and its xarray entry still holds the frame; [`super::Mm::pc_page`]
//! finds the entry of a mapped frame through the mapping. A page is mapped by one PTE at a
//! time: a fault of a second mapping on a page another one maps moves the page to it (the
//! first one's next access is a minor fault), where the kernel would map it twice.
//!
//! Left out: large folios (order-0 pages only, as ext4 and block devices have in 6.8).

use std::collections::{BTreeSet, HashMap};

/// First page number of the page cache's range (above every user address of a 47-bit
/// address space: 2^35 pages of 4 KiB).
pub const FILE_BASE: u64 = 1 << 35;
/// End of the page cache's range: where the engine's ids of non-address pages start
/// (`engine::REMAP_BASE`).
pub const FILE_LIMIT: u64 = 3 << 34;
const LEAF: u64 = 512;

/// A file of a run as the front end knows it before the run: its size when the run starts
/// and the furthest byte any record touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileSpec {
    pub id: u32,
    /// `i_size` at the start, in bytes.
    pub initial_size: u64,
    /// The end of the furthest byte any record reads or writes (at least `initial_size`).
    pub extent: u64,
}

/// `struct file_ra_state` (include/linux/fs.h): the last readahead window `[start, start +
/// size)` whose last `async_size` pages are still ahead of the reader, and the position
/// after the previous read (`prev_pos`, -1 before any: `file_ra_state_init`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileRaState {
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
    pub prev_pos: i64,
    /// `ra->mmap_miss`: page-cache misses of faults on the file's mappings less their hits
    /// (`do_sync_mmap_readahead` counts up to `MMAP_LOTSAMISS * 10`; `do_async_mmap_readahead`
    /// and `filemap_map_pages` count down); above `MMAP_LOTSAMISS` a fault reads no more
    /// around it.
    pub mmap_miss: u32,
}

impl Default for FileRaState {
    fn default() -> Self {
        FileRaState {
            start: 0,
            size: 0,
            async_size: 0,
            prev_pos: -1,
            mmap_miss: 0,
        }
    }
}

/// One file's `struct address_space` with its inode's size and its open file's readahead
/// state (one open file per file: a trace's reads of a file share one `file_ra_state`).
#[derive(Clone, Debug)]
pub struct AddressSpace {
    pub id: u32,
    /// Page number of the file's page 0.
    pub base: u64,
    /// Pages of page numbers reserved (at least the extent's pages).
    pub reserved: u64,
    /// `i_size` in bytes.
    pub i_size: u64,
    /// Pages cached now (`mapping->nrpages`).
    pub nrpages: u64,
    pub ra: FileRaState,
    /// The open file's `ra->ra_pages` when `fadvise64` set it (`POSIX_FADV_SEQUENTIAL`:
    /// twice the device's), else the device's.
    pub ra_pages: Option<u64>,
    /// `FMODE_RANDOM` (`POSIX_FADV_RANDOM`): reads are forced readahead of the request only.
    pub random: bool,
    /// The dirty pages' indices (`PAGECACHE_TAG_DIRTY`): writeback of a range visits these,
    /// not every page of the range.
    pub dirty: BTreeSet<u64>,
    /// When the file went from clean to dirty (`inode->dirtied_when`; timed runs: simulated
    /// ns), the age the flusher's periodic writeback goes by.
    pub dirtied_when: u64,
    /// `mapping->writeback_index`: where the flusher's next cyclic writeback of the file
    /// starts (`write_cache_pages` with `range_cyclic`).
    pub writeback_index: u64,
}

impl AddressSpace {
    /// Pages the file has now: `ceil(i_size / 4096)`.
    pub fn size_pages(&self) -> u64 {
        self.i_size.div_ceil(4096)
    }
}

/// Every file of a machine.
#[derive(Clone, Debug, Default)]
pub struct PageCache {
    files: Vec<AddressSpace>,
    by_id: HashMap<u32, u32>,
}

impl PageCache {
    /// Declare a file. Errors: a file declared twice, an extent smaller than the initial
    /// size, more file pages than the page cache's range holds.
    pub fn add(&mut self, spec: FileSpec) -> Result<usize, String> {
        if self.by_id.contains_key(&spec.id) {
            return Err(format!("file {} declared twice", spec.id));
        }
        if spec.extent < spec.initial_size {
            return Err(format!(
                "file {}: extent {} below its initial size {}",
                spec.id, spec.extent, spec.initial_size
            ));
        }
        let base = self.files.last().map_or(FILE_BASE, |f| f.base + f.reserved);
        let reserved = spec.extent.div_ceil(4096).div_ceil(LEAF).max(1) * LEAF;
        if reserved > FILE_LIMIT - base {
            return Err(format!(
                "file {}: {} bytes do not fit: the page cache's files may hold {} pages in all",
                spec.id,
                spec.extent,
                FILE_LIMIT - FILE_BASE
            ));
        }
        let i = self.files.len();
        self.files.push(AddressSpace {
            id: spec.id,
            base,
            reserved,
            i_size: spec.initial_size,
            nrpages: 0,
            ra: FileRaState::default(),
            ra_pages: None,
            random: false,
            dirty: BTreeSet::new(),
            dirtied_when: 0,
            writeback_index: 0,
        });
        self.by_id.insert(spec.id, i as u32);
        Ok(i)
    }

    /// The position of file `id` among the files.
    #[inline]
    pub fn find(&self, id: u32) -> Option<usize> {
        self.by_id.get(&id).map(|&i| i as usize)
    }

    #[inline]
    pub fn file(&self, i: usize) -> &AddressSpace {
        &self.files[i]
    }

    #[inline]
    pub fn file_mut(&mut self, i: usize) -> &mut AddressSpace {
        &mut self.files[i]
    }

    pub fn files(&self) -> &[AddressSpace] {
        &self.files
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The file and page index of page number `vpn`, if it is in a file's range.
    pub fn page_of(&self, vpn: u64) -> Option<(usize, u64)> {
        if !(FILE_BASE..FILE_LIMIT).contains(&vpn) {
            return None;
        }
        let i = self.files.partition_point(|f| f.base <= vpn);
        let f = self.files.get(i.checked_sub(1)?)?;
        (vpn < f.base + f.reserved).then(|| (i - 1, vpn - f.base))
    }
}

/// A file mapping (`struct vm_area_struct` of a file, `vm_pgoff`): user pages `start..end`
/// map pages `pgoff..` of the file at position `file`; `shared`: `MAP_SHARED` (writes dirty
/// the page-cache page), else `MAP_PRIVATE` (writes copy the page into an anonymous one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMap {
    pub start: u64,
    pub end: u64,
    pub file: usize,
    pub pgoff: u64,
    pub shared: bool,
}

impl FileMap {
    /// The file page user page `vpn` (inside the mapping) maps.
    #[inline]
    pub fn index(&self, vpn: u64) -> u64 {
        self.pgoff + (vpn - self.start)
    }
}

/// The file mappings of a machine, sorted by start, not overlapping.
#[derive(Clone, Debug, Default)]
pub struct FileMaps {
    list: Vec<FileMap>,
}

impl FileMaps {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The mapping holding user page `vpn`.
    #[inline]
    pub fn find(&self, vpn: u64) -> Option<&FileMap> {
        let pos = self.list.partition_point(|m| m.start <= vpn);
        let m = self.list.get(pos.checked_sub(1)?)?;
        (vpn < m.end).then_some(m)
    }

    pub fn iter(&self) -> impl Iterator<Item = &FileMap> {
        self.list.iter()
    }

    /// Insert `m`; the caller removed what overlapped it.
    pub fn insert(&mut self, m: FileMap) {
        let pos = self.list.partition_point(|x| x.start < m.start);
        debug_assert!(pos == 0 || self.list[pos - 1].end <= m.start);
        debug_assert!(pos == self.list.len() || self.list[pos].start >= m.end);
        self.list.insert(pos, m);
    }

    /// Remove user pages `start..end` from every mapping (a mapping cut in two keeps both
    /// ends, the second with its `pgoff` moved on).
    pub fn remove(&mut self, start: u64, end: u64) {
        let mut out = Vec::with_capacity(self.list.len() + 1);
        for &m in &self.list {
            if m.end <= start || m.start >= end {
                out.push(m);
                continue;
            }
            if m.start < start {
                out.push(FileMap { end: start, ..m });
            }
            if m.end > end {
                out.push(FileMap {
                    start: end,
                    pgoff: m.index(end),
                    ..m
                });
            }
        }
        self.list = out;
    }
}
