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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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

/// The tag of an invalid way (no real tag reaches it: tags are addresses shifted right).
const INVALID: u64 = u64::MAX;

/// Ways are kept as parallel arrays (structure of arrays) so a probe scans only the tags of
/// a set (two host cache lines for 16 ways) and a fill only the stamps.
#[derive(Clone, Debug)]
pub struct SetAssoc {
    ways: usize,
    mask: u64,
    tags: Vec<u64>,
    stamps: Vec<u64>,
    vals: Vec<u64>,
    /// Address-space tag: `vpid << 12 | pcid` (see [`asid`]); 0 where unused.
    asids: Vec<u32>,
    flags: Vec<u8>,
    tick: u64,
}

impl SetAssoc {
    pub fn new(g: Geometry, key: &str) -> Result<Self> {
        g.check(key)?;
        let n = g.entries() as usize;
        Ok(SetAssoc {
            ways: g.ways as usize,
            mask: (g.sets as u64).wrapping_sub(1),
            tags: vec![INVALID; n],
            stamps: vec![0; n],
            vals: vec![0; n],
            asids: vec![0; n],
            flags: vec![0; n],
            tick: 0,
        })
    }

    #[inline]
    pub fn is_present(&self) -> bool {
        !self.tags.is_empty()
    }

    pub fn sets(&self) -> usize {
        self.tags.len().checked_div(self.ways).unwrap_or(0)
    }

    pub fn ways(&self) -> usize {
        self.ways
    }

    #[inline]
    pub fn set_of(&self, tag: u64) -> usize {
        (tag & self.mask) as usize
    }

    #[inline]
    fn find(&self, tag: u64, asid: u32) -> Option<usize> {
        if self.tags.is_empty() {
            return None;
        }
        let base = self.set_of(tag) * self.ways;
        let set = &self.tags[base..base + self.ways];
        for (i, &t) in set.iter().enumerate() {
            if t == tag && serves(self.asids[base + i], self.flags[base + i], asid) {
                return Some(base + i);
            }
        }
        None
    }

    /// Looks `tag` up for address space `asid`; on a hit makes the way most recently used and
    /// returns (value, flags).
    #[inline]
    pub fn probe(&mut self, tag: u64, asid: u32) -> Option<(u64, u8)> {
        let i = self.find(tag, asid)?;
        self.tick += 1;
        self.stamps[i] = self.tick;
        Some((self.vals[i], self.flags[i]))
    }

    /// Looks up without changing the LRU order.
    pub fn peek(&self, tag: u64, asid: u32) -> Option<(u64, u8)> {
        self.find(tag, asid).map(|i| (self.vals[i], self.flags[i]))
    }

    /// Fills (`tag`, `asid`) with `val`; an existing way with the same tag and address space
    /// is updated in place. Returns the tag of a valid way evicted to make room.
    pub fn insert(&mut self, tag: u64, asid: u32, val: u64, flags: u8) -> Option<u64> {
        if self.tags.is_empty() {
            return None;
        }
        let base = self.set_of(tag) * self.ways;
        self.tick += 1;
        let mut victim = base;
        let mut best = u64::MAX;
        for i in base..base + self.ways {
            let t = self.tags[i];
            if t == INVALID {
                if best != 0 {
                    victim = i;
                    best = 0;
                }
                continue;
            }
            if t == tag && self.asids[i] == asid {
                victim = i;
                break;
            }
            if self.stamps[i] < best {
                best = self.stamps[i];
                victim = i;
            }
        }
        let old = self.tags[victim];
        let evicted =
            (old != INVALID && !(old == tag && self.asids[victim] == asid)).then_some(old);
        self.tags[victim] = tag;
        self.stamps[victim] = self.tick;
        self.vals[victim] = val;
        self.asids[victim] = asid;
        self.flags[victim] = flags | VALID;
        evicted
    }

    /// Invalidates every valid way for which `pred(tag, asid, flags)` holds; returns how many.
    pub fn invalidate(&mut self, mut pred: impl FnMut(u64, u32, u8) -> bool) -> u64 {
        let mut n = 0;
        for i in 0..self.tags.len() {
            if self.tags[i] != INVALID && pred(self.tags[i], self.asids[i], self.flags[i]) {
                self.tags[i] = INVALID;
                self.flags[i] = 0;
                n += 1;
            }
        }
        n
    }

    /// Invalidates the ways of `tag` that serve `asid` (looks in one set only).
    pub fn invalidate_tag(&mut self, tag: u64, asid: u32) -> u64 {
        if self.tags.is_empty() {
            return 0;
        }
        let base = self.set_of(tag) * self.ways;
        let mut n = 0;
        for i in base..base + self.ways {
            if self.tags[i] == tag && serves(self.asids[i], self.flags[i], asid) {
                self.tags[i] = INVALID;
                self.flags[i] = 0;
                n += 1;
            }
        }
        n
    }

    pub fn valid_entries(&self) -> usize {
        self.tags.iter().filter(|&&t| t != INVALID).count()
    }

    /// The valid tags of `set`, most recently used first (for tests and inspection).
    pub fn set_contents(&self, set: usize) -> Vec<(u64, u32)> {
        let mut v: Vec<usize> = (set * self.ways..(set + 1) * self.ways)
            .filter(|&i| self.tags[i] != INVALID)
            .collect();
        v.sort_by_key(|&i| std::cmp::Reverse(self.stamps[i]));
        v.into_iter()
            .map(|i| (self.tags[i], self.asids[i]))
            .collect()
    }

    /// Recounts the invariants: valid flag iff a tag, each valid tag in its set, no (tag,
    /// asid) twice in a set, valid stamps distinct and not ahead of the counter.
    pub fn validate(&self, name: &str) -> std::result::Result<(), String> {
        for set in 0..self.sets() {
            let r = set * self.ways..(set + 1) * self.ways;
            for i in r.clone() {
                let valid = self.tags[i] != INVALID;
                if valid != (self.flags[i] & VALID != 0) {
                    return Err(format!("{name}: way {i}: valid flag and tag disagree"));
                }
                if !valid {
                    continue;
                }
                if self.set_of(self.tags[i]) != set {
                    return Err(format!("{name}: tag {:#x} in set {set}", self.tags[i]));
                }
                if self.stamps[i] > self.tick {
                    return Err(format!("{name}: stamp ahead of the counter in set {set}"));
                }
                for x in i + 1..r.end {
                    if self.tags[x] == INVALID {
                        continue;
                    }
                    if self.tags[x] == self.tags[i] && self.asids[x] == self.asids[i] {
                        return Err(format!(
                            "{name}: tag {:#x} twice in set {set}",
                            self.tags[i]
                        ));
                    }
                    if self.stamps[x] == self.stamps[i] {
                        return Err(format!("{name}: two ways share a stamp in set {set}"));
                    }
                }
            }
        }
        Ok(())
    }
}
