//! x86-64 radix page tables with 4 or 5 levels and leaves at 4K (PTE), 2M (PDE with PS) and
//! 1G (PDPTE with PS), SDM vol. 3 §4.5.
//!
//! Each table is a 512-entry page with a physical frame number in the table's own physical
//! space: host-physical for a native, host (EPT/NPT) or shadow table, guest-physical for a
//! guest table. The walk reports the physical address of every entry it reads
//! (`frame * 4096 + index * 8`), which is what the page-walk caches, the nested walk and the
//! page-table line cache see.
//!
//! Entry bits follow x86 where x86 defines them (P bit 0, W bit 1, A bit 5, D bit 6, PS bit 7,
//! G bit 8). A non-leaf entry keeps the child's index in this structure's arena (the child's
//! physical frame is kept beside it), where hardware keeps the child's physical address:
//! same walk, simpler bookkeeping. Permissions live on leaves only (non-leaf entries are
//! writable), user/supervisor and NX are left out. The walker sets A on every entry it reads
//! and D on a leaf it writes through, as the hardware walker does (SDM §4.8).

use crate::error::{Error, Result};

use super::PageSize;

pub const ENTRIES: usize = 512;
pub const PTE_P: u64 = 1 << 0;
pub const PTE_W: u64 = 1 << 1;
pub const PTE_A: u64 = 1 << 5;
pub const PTE_D: u64 = 1 << 6;
pub const PTE_PS: u64 = 1 << 7;
pub const PTE_G: u64 = 1 << 8;
const PAYLOAD_SHIFT: u32 = 12;

/// The entries one walk read, top level first: at most 5.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkPath {
    pub len: u8,
    /// Physical address (in the table's own physical space) of each entry read.
    pub entry_pa: [u64; 5],
}

impl WalkPath {
    pub fn entries(&self) -> &[u64] {
        &self.entry_pa[..self.len as usize]
    }
}

/// How a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkEnd {
    /// A present leaf: the page's base physical address and size, and its permissions.
    Leaf {
        base: u64,
        size: PageSize,
        writable: bool,
        global: bool,
    },
    /// The entry at `level` (5..=1) was not present (or the address is beyond the table's
    /// reach, then with no entry read).
    NotPresent { level: u8 },
}

/// A page table a hardware walker can walk. `walk` fills `path` with the entries it read
/// (top first: entry i is at level `levels() - i`, at most `levels()` entries, the last one
/// the leaf or the non-present entry) and sets accessed / dirty bits as the hardware does.
/// `levels()` is 4 or 5. The shadow-page pool can implement this to be walked in shadow mode.
pub trait Walkable {
    /// Number of levels (4 or 5).
    fn levels(&self) -> u8;
    fn walk(&mut self, va: u64, write: bool, path: &mut WalkPath) -> WalkEnd;
}

/// A radix page table of one address space (see the module docs).
#[derive(Clone, Debug)]
pub struct RadixTable {
    levels: u8,
    /// 512 entries per table, table `t` at `t * 512`. Table 0 is the root.
    entries: Vec<u64>,
    /// Physical frame number of each table.
    frames: Vec<u64>,
    /// Level of each table (`levels` for the root, 1 for a PTE table); 0 for a freed slot.
    level_of: Vec<u8>,
    /// Present entries per table.
    used: Vec<u16>,
    free: Vec<u32>,
    /// Live tables by physical frame (the view a guest-table reader such as KVM needs).
    by_frame: std::collections::HashMap<u64, u32>,
    /// When set, every entry written by `map` / `unmap`: (table frame, entry index). A VM
    /// under shadow paging replays these as the guest's stores to its page-table pages.
    pub log: Option<Vec<(u64, u16)>>,
}

#[inline]
fn index(va: u64, level: u8) -> usize {
    ((va >> (12 + 9 * (level as u32 - 1))) & 511) as usize
}

impl RadixTable {
    /// An empty table with `levels` (4 or 5) whose root is at physical frame `root_frame`.
    pub fn new(levels: u8, root_frame: u64) -> Result<Self> {
        if levels != 4 && levels != 5 {
            return Err(Error::config(
                "translate.levels",
                format!("levels must be 4 or 5, got {levels}"),
            ));
        }
        Ok(RadixTable {
            levels,
            entries: vec![0; ENTRIES],
            frames: vec![root_frame],
            level_of: vec![levels],
            used: vec![0],
            free: Vec::new(),
            by_frame: std::collections::HashMap::from([(root_frame, 0)]),
            log: None,
        })
    }

    pub fn levels(&self) -> u8 {
        self.levels
    }

    pub fn root_frame(&self) -> u64 {
        self.frames[0]
    }

    /// One past the largest input address (2^48 for 4 levels, 2^57 for 5).
    pub fn va_limit(&self) -> u64 {
        1 << (12 + 9 * self.levels as u32)
    }

    /// Number of live tables, root included (each one page of the physical space).
    pub fn tables(&self) -> usize {
        self.frames.len() - self.free.len()
    }

    /// Bytes of host (simulator) memory the structure holds.
    pub fn memory_bytes(&self) -> usize {
        self.entries.capacity() * 8
            + self.frames.capacity() * 8
            + self.level_of.capacity()
            + self.used.capacity() * 2
            + self.free.capacity() * 4
    }

    /// The physical frames of all live tables (root first), e.g. to back guest tables.
    pub fn table_frames(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.frames.len())
            .filter(|&t| self.level_of[t] != 0)
            .map(|t| self.frames[t])
    }

    fn new_table(&mut self, level: u8, frame: u64) -> usize {
        let t = self.new_table_slot(level, frame);
        self.by_frame.insert(frame, t as u32);
        t
    }

    #[inline]
    fn note(&mut self, t: usize, slot: usize) {
        if let Some(log) = self.log.as_mut() {
            log.push((self.frames[t], (slot % ENTRIES) as u16));
        }
    }

    fn new_table_slot(&mut self, level: u8, frame: u64) -> usize {
        if let Some(t) = self.free.pop() {
            let t = t as usize;
            self.entries[t * ENTRIES..(t + 1) * ENTRIES].fill(0);
            self.frames[t] = frame;
            self.level_of[t] = level;
            self.used[t] = 0;
            t
        } else {
            self.entries.resize(self.entries.len() + ENTRIES, 0);
            self.frames.push(frame);
            self.level_of.push(level);
            self.used.push(0);
            self.frames.len() - 1
        }
    }

    /// Maps the page of `size` at `va` to physical address `pa`; `flags` may hold
    /// [`PTE_W`] and [`PTE_G`]. Missing tables are created with frames from `alloc` (`None`:
    /// out of memory, an error). Replacing a present leaf of the same size returns its old
    /// base address; a leaf of another size or a table in the way is an error.
    pub fn map(
        &mut self,
        va: u64,
        pa: u64,
        size: PageSize,
        flags: u64,
        alloc: &mut dyn FnMut() -> Option<u64>,
    ) -> Result<Option<u64>> {
        let key = "translate.map";
        if va >= self.va_limit() {
            return Err(Error::config(
                key,
                format!("va {va:#x} beyond {} levels", self.levels),
            ));
        }
        if va & (size.bytes() - 1) != 0 || pa & (size.bytes() - 1) != 0 {
            return Err(Error::config(
                key,
                format!("va {va:#x} / pa {pa:#x} not aligned to {size:?}"),
            ));
        }
        if flags & !(PTE_W | PTE_G) != 0 {
            return Err(Error::config(
                key,
                format!("flags {flags:#x}: only W and G may be given"),
            ));
        }
        let leaf = size.leaf_level();
        let mut t = 0usize;
        for level in (leaf + 1..=self.levels).rev() {
            let slot = t * ENTRIES + index(va, level);
            let e = self.entries[slot];
            if e & PTE_P == 0 {
                let frame = alloc().ok_or_else(|| {
                    Error::config(key, format!("no frame for a level-{} table", level - 1))
                })?;
                let c = self.new_table(level - 1, frame);
                self.entries[slot] = ((c as u64) << PAYLOAD_SHIFT) | PTE_P | PTE_W;
                self.used[t] += 1;
                self.note(t, slot);
                t = c;
            } else if e & PTE_PS != 0 {
                return Err(Error::config(
                    key,
                    format!("va {va:#x}: a larger page is mapped at level {level}"),
                ));
            } else {
                t = (e >> PAYLOAD_SHIFT) as usize;
            }
        }
        let slot = t * ENTRIES + index(va, leaf);
        let e = self.entries[slot];
        let ps = if leaf > 1 { PTE_PS } else { 0 };
        let old = if e & PTE_P != 0 {
            if leaf > 1 && e & PTE_PS == 0 {
                return Err(Error::config(
                    key,
                    format!("va {va:#x}: smaller pages are mapped below level {leaf}"),
                ));
            }
            Some((e >> PAYLOAD_SHIFT) << PAYLOAD_SHIFT)
        } else {
            self.used[t] += 1;
            None
        };
        self.entries[slot] = ((pa >> PAYLOAD_SHIFT) << PAYLOAD_SHIFT) | PTE_P | ps | flags;
        self.note(t, slot);
        Ok(old)
    }

    /// Unmaps the leaf covering `va`; tables left empty are freed and their frames handed to
    /// `freed` (as `free_pgtables` returns page-table pages). Returns the old leaf.
    pub fn unmap(&mut self, va: u64, freed: &mut dyn FnMut(u64)) -> Option<(u64, PageSize)> {
        if va >= self.va_limit() {
            return None;
        }
        let mut trail = [(0usize, 0usize); 5];
        let mut t = 0usize;
        for (depth, level) in (1..=self.levels).rev().enumerate() {
            let slot = t * ENTRIES + index(va, level);
            trail[depth] = (t, slot);
            let e = self.entries[slot];
            if e & PTE_P == 0 {
                return None;
            }
            if level == 1 || e & PTE_PS != 0 {
                self.entries[slot] = 0;
                self.used[t] -= 1;
                self.note(t, slot);
                let mut d = depth;
                while d > 0 && self.used[trail[d].0] == 0 {
                    let dead = trail[d].0;
                    self.level_of[dead] = 0;
                    self.free.push(dead as u32);
                    self.by_frame.remove(&self.frames[dead]);
                    freed(self.frames[dead]);
                    let (parent, pslot) = trail[d - 1];
                    self.entries[pslot] = 0;
                    self.used[parent] -= 1;
                    self.note(parent, pslot);
                    d -= 1;
                }
                let size = PageSize::from_level(level).expect("leaf levels are 1..=3");
                return Some(((e >> PAYLOAD_SHIFT) << PAYLOAD_SHIFT, size));
            }
            t = (e >> PAYLOAD_SHIFT) as usize;
        }
        None
    }

    /// Entry `index` of the live table at physical frame `table_frame`, in the architectural
    /// encoding (SDM 4.5: P, W, U, A, D, PS, G and the address of the next table or page),
    /// as a reader of guest page tables through guest memory sees it; `None` if no live table
    /// is there. Every entry is user-accessible (the model has no kernel/user split).
    pub fn entry_arch(&self, table_frame: u64, index: usize) -> Option<u64> {
        let t = *self.by_frame.get(&table_frame)? as usize;
        let e = self.entries[t * ENTRIES + index % ENTRIES];
        if e & PTE_P == 0 {
            return Some(0);
        }
        const USER: u64 = 1 << 2;
        let lvl = self.level_of[t];
        Some(if lvl == 1 || e & PTE_PS != 0 {
            e | USER
        } else {
            let child = (e >> PAYLOAD_SHIFT) as usize;
            (self.frames[child] << 12) | (e & 0xfff) | USER | PTE_A
        })
    }

    /// Sets the accessed and dirty bits given in `bits` on entry `index` of the table at
    /// frame `table_frame` (a hypervisor updating guest A/D bits,
    /// `FNAME(update_accessed_dirty_bits)`).
    pub fn set_ad(&mut self, table_frame: u64, index: usize, bits: u64) {
        if let Some(&t) = self.by_frame.get(&table_frame) {
            let slot = t as usize * ENTRIES + index % ENTRIES;
            if self.entries[slot] & PTE_P != 0 {
                self.entries[slot] |= bits & (PTE_A | PTE_D);
            }
        }
    }

    /// The leaf entry covering `va` (no bits changed): (slot, entry, level).
    fn find(&self, va: u64) -> Option<(usize, u64, u8)> {
        if va >= self.va_limit() {
            return None;
        }
        let mut t = 0usize;
        for level in (1..=self.levels).rev() {
            let slot = t * ENTRIES + index(va, level);
            let e = self.entries[slot];
            if e & PTE_P == 0 {
                return None;
            }
            if level == 1 || e & PTE_PS != 0 {
                return Some((slot, e, level));
            }
            t = (e >> PAYLOAD_SHIFT) as usize;
        }
        None
    }

    /// The translation of `va` without touching accessed bits: (physical address, page size,
    /// leaf entry bits).
    pub fn lookup(&self, va: u64) -> Option<(u64, PageSize, u64)> {
        let (_, e, level) = self.find(va)?;
        let size = PageSize::from_level(level)?;
        let base = (e >> PAYLOAD_SHIFT) << PAYLOAD_SHIFT;
        Some((base + (va & (size.bytes() - 1)), size, e & 0xfff))
    }

    /// Clears the leaf's accessed bit, returning whether it was set
    /// (`ptep_test_and_clear_young`; like x86 Linux, no TLB flush follows).
    pub fn test_and_clear_young(&mut self, va: u64) -> Option<bool> {
        let (slot, e, _) = self.find(va)?;
        self.entries[slot] = e & !PTE_A;
        Some(e & PTE_A != 0)
    }

    /// Changes the leaf's W bit (e.g. write-protection of a shadowed guest page table).
    /// The caller flushes the TLBs as the kernel would.
    pub fn set_writable(&mut self, va: u64, writable: bool) -> Option<()> {
        let (slot, e, _) = self.find(va)?;
        self.entries[slot] = if writable { e | PTE_W } else { e & !PTE_W };
        Some(())
    }

    /// Recounts every invariant: present-entry counts, each live non-root table referenced
    /// once from a table one level up, PS only at levels 2 and 3, leaves aligned, freed slots
    /// unreferenced, distinct table frames.
    pub fn validate(&self) -> std::result::Result<(), String> {
        let n = self.frames.len();
        let mut refs = vec![0u32; n];
        for t in 0..n {
            let lvl = self.level_of[t];
            if lvl == 0 {
                continue;
            }
            let mut used = 0u16;
            for i in 0..ENTRIES {
                let e = self.entries[t * ENTRIES + i];
                if e & PTE_P == 0 {
                    if e != 0 {
                        return Err(format!("table {t}: non-present entry {i} = {e:#x}"));
                    }
                    continue;
                }
                used += 1;
                let leaf = lvl == 1 || e & PTE_PS != 0;
                if e & PTE_PS != 0 && !(lvl == 2 || lvl == 3) {
                    return Err(format!("table {t}: PS at level {lvl}"));
                }
                if leaf {
                    let size = PageSize::from_level(lvl).ok_or("leaf level")?;
                    let base = (e >> PAYLOAD_SHIFT) << PAYLOAD_SHIFT;
                    if base & (size.bytes() - 1) != 0 {
                        return Err(format!("table {t}: leaf {i} misaligned"));
                    }
                } else {
                    let c = (e >> PAYLOAD_SHIFT) as usize;
                    if c >= n || self.level_of[c] != lvl - 1 {
                        return Err(format!("table {t}: entry {i} points to a bad table {c}"));
                    }
                    refs[c] += 1;
                }
            }
            if used != self.used[t] {
                return Err(format!(
                    "table {t}: {used} present entries, counted {}",
                    self.used[t]
                ));
            }
        }
        if self.level_of[0] != self.levels {
            return Err("root level".into());
        }
        for (t, (&r, &lvl)) in refs.iter().zip(&self.level_of).enumerate().skip(1) {
            if r != u32::from(lvl != 0) {
                return Err(format!("table {t}: referenced {r} times"));
            }
        }
        let mut frames: Vec<u64> = self.table_frames().collect();
        frames.sort_unstable();
        if frames.windows(2).any(|w| w[0] == w[1]) {
            return Err("two tables share a frame".into());
        }
        Ok(())
    }
}

impl Walkable for RadixTable {
    fn levels(&self) -> u8 {
        self.levels
    }

    #[inline]
    fn walk(&mut self, va: u64, write: bool, path: &mut WalkPath) -> WalkEnd {
        path.len = 0;
        if va >= self.va_limit() {
            return WalkEnd::NotPresent { level: self.levels };
        }
        let mut t = 0usize;
        for level in (1..=self.levels).rev() {
            let idx = index(va, level);
            let slot = t * ENTRIES + idx;
            path.entry_pa[path.len as usize] = (self.frames[t] << 12) | (idx as u64 * 8);
            path.len += 1;
            let e = self.entries[slot];
            if e & PTE_P == 0 {
                return WalkEnd::NotPresent { level };
            }
            if level == 1 || e & PTE_PS != 0 {
                let writable = e & PTE_W != 0;
                let d = if write && writable { PTE_D } else { 0 };
                self.entries[slot] = e | PTE_A | d;
                return WalkEnd::Leaf {
                    base: (e >> PAYLOAD_SHIFT) << PAYLOAD_SHIFT,
                    size: PageSize::from_level(level).expect("leaf levels are 1..=3"),
                    writable,
                    global: e & PTE_G != 0,
                };
            }
            self.entries[slot] = e | PTE_A;
            t = (e >> PAYLOAD_SHIFT) as usize;
        }
        unreachable!("level 1 is always a leaf or not present")
    }
}
