//! A set-associative array with true LRU within a set: the building block of the TLBs, the
//! page-walk caches, the nested TLB and the page-table line cache.
//!
//! The set of a tag is `tag % sets` (low bits; `sets` is a power of two), as in a simple
//! hardware index function; real parts may hash more bits (left out). LRU is kept with a
//! per-array counter stamped on each way at fill and hit: the victim is an invalid way
//! (lowest index first) or else the way with the smallest stamp. Stamps are 64-bit, so they
//! never wrap in a run.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Sets × ways of one array. `sets == 0` means the array is absent (e.g. an iTLB without 1G
/// entries).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Geometry {
    pub sets: u32,
    pub ways: u32,
}

impl Geometry {
    pub const NONE: Geometry = Geometry { sets: 0, ways: 0 };
    pub const fn new(sets: u32, ways: u32) -> Self {
        Geometry { sets, ways }
    }
    pub const fn entries(&self) -> u32 {
        self.sets * self.ways
    }
    /// Checks the geometry; `key` names the configuration key in the error.
    pub fn check(&self, key: &str) -> Result<()> {
        if self.sets == 0 {
            return Ok(());
        }
        if !self.sets.is_power_of_two() {
            return Err(Error::config(
                key,
                format!("sets must be a power of two or 0, got {}", self.sets),
            ));
        }
        if self.ways == 0 || self.ways > 64 {
            return Err(Error::config(
                key,
                format!("ways must be 1..=64 when sets > 0, got {}", self.ways),
            ));
        }
        if self.sets > 1 << 24 {
            return Err(Error::config(
                key,
                format!("at most 2^24 sets, got {}", self.sets),
            ));
        }
        Ok(())
    }
}

pub const VALID: u8 = 1;
pub const GLOBAL: u8 = 2;
pub const WRITABLE: u8 = 4;

#[derive(Clone, Copy, Debug, Default)]
struct Way {
    tag: u64,
    val: u64,
    stamp: u64,
    /// Address-space tag: `vpid << 12 | pcid` (see [`asid`]); 0 where unused.
    asid: u32,
    flags: u8,
}

/// The address-space tag of a TLB entry: VPID in bits 12..28, PCID in bits 0..12.
#[inline]
pub const fn asid(vpid: u16, pcid: u16) -> u32 {
    ((vpid as u32) << 12) | (pcid as u32 & 0xfff)
}

#[inline]
const fn vpid_of(asid: u32) -> u32 {
    asid >> 12
}

/// Whether a valid way with (`wasid`, `wflags`) serves a lookup from `asid`: the same tag, or
/// a global entry of the same VPID (global entries ignore the PCID, SDM 4.10.2.4).
#[inline]
fn serves(wasid: u32, wflags: u8, asid: u32) -> bool {
    wasid == asid || (wflags & GLOBAL != 0 && vpid_of(wasid) == vpid_of(asid))
}

#[derive(Clone, Debug)]
pub struct SetAssoc {
    ways: usize,
    mask: u64,
    slots: Vec<Way>,
    tick: u64,
}

impl SetAssoc {
    pub fn new(g: Geometry, key: &str) -> Result<Self> {
        g.check(key)?;
        let n = g.entries() as usize;
        Ok(SetAssoc {
            ways: g.ways as usize,
            mask: (g.sets as u64).wrapping_sub(1),
            slots: vec![Way::default(); n],
            tick: 0,
        })
    }

    #[inline]
    pub fn is_present(&self) -> bool {
        !self.slots.is_empty()
    }

    pub fn sets(&self) -> usize {
        self.slots.len().checked_div(self.ways).unwrap_or(0)
    }

    pub fn ways(&self) -> usize {
        self.ways
    }

    #[inline]
    pub fn set_of(&self, tag: u64) -> usize {
        (tag & self.mask) as usize
    }

    /// Looks `tag` up for address space `asid`; on a hit makes the way most recently used and
    /// returns (value, flags).
    #[inline]
    pub fn probe(&mut self, tag: u64, asid: u32) -> Option<(u64, u8)> {
        if self.slots.is_empty() {
            return None;
        }
        let base = self.set_of(tag) * self.ways;
        let set = &mut self.slots[base..base + self.ways];
        for w in set.iter_mut() {
            if w.flags & VALID != 0 && w.tag == tag && serves(w.asid, w.flags, asid) {
                self.tick += 1;
                w.stamp = self.tick;
                return Some((w.val, w.flags));
            }
        }
        None
    }

    /// Looks up without changing the LRU order.
    pub fn peek(&self, tag: u64, asid: u32) -> Option<(u64, u8)> {
        if self.slots.is_empty() {
            return None;
        }
        let base = self.set_of(tag) * self.ways;
        self.slots[base..base + self.ways]
            .iter()
            .find(|w| w.flags & VALID != 0 && w.tag == tag && serves(w.asid, w.flags, asid))
            .map(|w| (w.val, w.flags))
    }

    /// Fills (`tag`, `asid`) with `val`; an existing way with the same tag and address space
    /// is updated in place. Returns the tag of a valid way evicted to make room.
    pub fn insert(&mut self, tag: u64, asid: u32, val: u64, flags: u8) -> Option<u64> {
        if self.slots.is_empty() {
            return None;
        }
        let base = self.set_of(tag) * self.ways;
        self.tick += 1;
        let tick = self.tick;
        let set = &mut self.slots[base..base + self.ways];
        let mut victim = 0;
        let mut best = u64::MAX;
        for (i, w) in set.iter().enumerate() {
            if w.flags & VALID == 0 {
                if best != 0 {
                    victim = i;
                    best = 0;
                }
                continue;
            }
            if w.tag == tag && w.asid == asid {
                victim = i;
                break;
            }
            if w.stamp < best {
                best = w.stamp;
                victim = i;
            }
        }
        let w = &mut set[victim];
        let evicted = (w.flags & VALID != 0 && !(w.tag == tag && w.asid == asid)).then_some(w.tag);
        *w = Way {
            tag,
            val,
            stamp: tick,
            asid,
            flags: flags | VALID,
        };
        evicted
    }

    /// Invalidates every valid way for which `pred(tag, asid, flags)` holds; returns how many.
    pub fn invalidate(&mut self, mut pred: impl FnMut(u64, u32, u8) -> bool) -> u64 {
        let mut n = 0;
        for w in self.slots.iter_mut() {
            if w.flags & VALID != 0 && pred(w.tag, w.asid, w.flags) {
                w.flags = 0;
                n += 1;
            }
        }
        n
    }

    /// Invalidates the ways of `tag` that serve `asid` (looks in one set only).
    pub fn invalidate_tag(&mut self, tag: u64, asid: u32) -> u64 {
        if self.slots.is_empty() {
            return 0;
        }
        let base = self.set_of(tag) * self.ways;
        let mut n = 0;
        for w in self.slots[base..base + self.ways].iter_mut() {
            if w.flags & VALID != 0 && w.tag == tag && serves(w.asid, w.flags, asid) {
                w.flags = 0;
                n += 1;
            }
        }
        n
    }

    pub fn valid_entries(&self) -> usize {
        self.slots.iter().filter(|w| w.flags & VALID != 0).count()
    }

    /// The valid tags of `set`, most recently used first (for tests and inspection).
    pub fn set_contents(&self, set: usize) -> Vec<(u64, u32)> {
        let base = set * self.ways;
        let mut v: Vec<&Way> = self.slots[base..base + self.ways]
            .iter()
            .filter(|w| w.flags & VALID != 0)
            .collect();
        v.sort_by_key(|w| std::cmp::Reverse(w.stamp));
        v.into_iter().map(|w| (w.tag, w.asid)).collect()
    }

    /// Recounts the invariants: each valid tag is in its set, no (tag, asid) twice in a set,
    /// valid stamps distinct and not ahead of the counter.
    pub fn validate(&self, name: &str) -> std::result::Result<(), String> {
        for set in 0..self.sets() {
            let ways = &self.slots[set * self.ways..(set + 1) * self.ways];
            for (i, w) in ways.iter().enumerate() {
                if w.flags & VALID == 0 {
                    continue;
                }
                if self.set_of(w.tag) != set {
                    return Err(format!("{name}: tag {:#x} in set {set}", w.tag));
                }
                if w.stamp > self.tick {
                    return Err(format!("{name}: stamp ahead of the counter in set {set}"));
                }
                for x in &ways[i + 1..] {
                    if x.flags & VALID == 0 {
                        continue;
                    }
                    if x.tag == w.tag && x.asid == w.asid {
                        return Err(format!("{name}: tag {:#x} twice in set {set}", w.tag));
                    }
                    if x.stamp == w.stamp {
                        return Err(format!("{name}: two ways share a stamp in set {set}"));
                    }
                }
            }
        }
        Ok(())
    }
}
