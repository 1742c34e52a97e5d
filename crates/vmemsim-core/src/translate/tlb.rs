//! One TLB level: a set-associative array per page size (4K, 2M, 1G), LRU within a set,
//! entries tagged by VPID and PCID (SDM vol. 3 §4.10.1, §28.1), global entries shared by all
//! PCIDs of a VPID (§4.10.2.4).
//!
//! The tag of an entry is the input page number at its size (`va >> shift`), and its set is
//! `tag % sets`. A size whose array is absent (`sets == 0`) is filled as the largest smaller
//! size present (a 1G page in an iTLB without 1G entries is cached as 2M pieces, as
//! Skylake's iTLB does). The same structure serves as the nested TLB, with guest-physical
//! input addresses and PCID 0.

use serde::{Deserialize, Serialize};

use super::set_assoc::{SetAssoc, GLOBAL, WRITABLE};
use super::PageSize;
use crate::error::Result;

pub use super::set_assoc::asid;

/// Geometry of one TLB level, per page size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlbGeometry {
    #[serde(rename = "4k")]
    pub k4: super::Geometry,
    #[serde(rename = "2m")]
    pub m2: super::Geometry,
    #[serde(rename = "1g")]
    pub g1: super::Geometry,
}

impl TlbGeometry {
    pub fn get(&self, size: PageSize) -> super::Geometry {
        match size {
            PageSize::K4 => self.k4,
            PageSize::M2 => self.m2,
            PageSize::G1 => self.g1,
        }
    }
}

/// A TLB hit: the translated page's base, its (TLB entry) size and permissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlbHit {
    pub base: u64,
    pub size: PageSize,
    pub writable: bool,
    pub global: bool,
}

impl TlbHit {
    #[inline]
    pub fn translate(&self, va: u64) -> u64 {
        self.base | (va & (self.size.bytes() - 1))
    }
}

#[derive(Clone, Debug)]
pub struct Tlb {
    arrays: [SetAssoc; 3],
}

impl Tlb {
    /// `key` names the configuration key in errors.
    pub fn new(g: &TlbGeometry, key: &str) -> Result<Self> {
        Ok(Tlb {
            arrays: [
                SetAssoc::new(g.k4, &format!("{key}.4k"))?,
                SetAssoc::new(g.m2, &format!("{key}.2m"))?,
                SetAssoc::new(g.g1, &format!("{key}.1g"))?,
            ],
        })
    }

    pub fn array(&self, size: PageSize) -> &SetAssoc {
        &self.arrays[size.index()]
    }

    /// Looks `va` up in every size's array (4K first) for address space `asid`.
    #[inline]
    pub fn lookup(&mut self, va: u64, asid: u32) -> Option<TlbHit> {
        for size in PageSize::ALL {
            let a = &mut self.arrays[size.index()];
            if let Some((frame, flags)) = a.probe(va >> size.shift(), asid) {
                return Some(TlbHit {
                    base: frame << 12,
                    size,
                    writable: flags & WRITABLE != 0,
                    global: flags & GLOBAL != 0,
                });
            }
        }
        None
    }

    /// The size an entry for a page of `size` is kept at: `size` if that array exists,
    /// else the largest smaller one present.
    pub fn fill_size(&self, size: PageSize) -> Option<PageSize> {
        PageSize::ALL[..=size.index()]
            .iter()
            .rev()
            .copied()
            .find(|s| self.arrays[s.index()].is_present())
    }

    /// Fills the translation of `va` → `pa` (the addresses of the access) for a page of
    /// `size`. Returns the size actually filled.
    pub fn insert(
        &mut self,
        va: u64,
        pa: u64,
        size: PageSize,
        asid: u32,
        writable: bool,
        global: bool,
    ) -> Option<PageSize> {
        let s = self.fill_size(size)?;
        let flags = if writable { WRITABLE } else { 0 } | if global { GLOBAL } else { 0 };
        let frame = (pa >> s.shift()) << (s.shift() - 12);
        self.arrays[s.index()].insert(va >> s.shift(), asid, frame, flags);
        Some(s)
    }

    /// Invalidates the entries of every size that translate `va` for `asid` (global ones of
    /// the same VPID included): INVLPG. Returns how many.
    pub fn flush_va(&mut self, va: u64, asid: u32) -> u64 {
        let mut n = 0;
        for size in PageSize::ALL {
            n += self.arrays[size.index()].invalidate_tag(va >> size.shift(), asid);
        }
        n
    }

    /// Invalidates the non-global entries of `asid` (MOV to CR3 without the no-flush bit).
    pub fn flush_asid_nonglobal(&mut self, asid: u32) -> u64 {
        self.invalidate(|_, a, f| a == asid && f & GLOBAL == 0)
    }

    /// Invalidates every entry of `vpid`, global ones included (VM entry/exit without VPID,
    /// INVVPID single-context).
    pub fn flush_vpid(&mut self, vpid: u16) -> u64 {
        self.invalidate(|_, a, _| a >> 12 == vpid as u32)
    }

    pub fn flush_all(&mut self) -> u64 {
        self.invalidate(|_, _, _| true)
    }

    fn invalidate(&mut self, mut pred: impl FnMut(u64, u32, u8) -> bool) -> u64 {
        let mut n = 0;
        for a in self.arrays.iter_mut() {
            n += a.invalidate(&mut pred);
        }
        n
    }

    pub fn valid_entries(&self) -> usize {
        self.arrays.iter().map(|a| a.valid_entries()).sum()
    }

    pub fn validate(&self, name: &str) -> std::result::Result<(), String> {
        for size in PageSize::ALL {
            self.arrays[size.index()].validate(&format!("{name}.{size:?}"))?;
        }
        Ok(())
    }
}
