//! Ghost lists: recency lists of page numbers that are no longer resident (ARC's B1/B2,
//! S3-FIFO's ghost FIFO, the kernel's shadow entries in spirit).
//!
//! Entries live in a slab of ghost ids linked with [`Links`]; a page-number → id table finds
//! an entry in O(1). Lookups happen only on misses (a page that is resident is never a
//! ghost), so the hit path never hashes. The table is sized up front; ids are recycled through
//! a free list, so a steady state allocates nothing.

use super::list::{Links, List};

pub use crate::util::PageMap;

const NO_LIST: u8 = u8::MAX;

/// `N` ghost lists over one slab and one index. Head = most recently added, tail = oldest.
#[derive(Debug)]
pub struct Ghosts<const N: usize> {
    links: Links,
    lists: [List; N],
    vpn: Vec<u64>,
    list_of: Vec<u8>,
    free: Vec<u32>,
    index: PageMap<u32>,
}

impl<const N: usize> Ghosts<N> {
    /// Room for `cap` ghosts without allocating (more grow the slab).
    pub fn with_capacity(cap: usize) -> Self {
        let mut index = PageMap::default();
        index.reserve(cap);
        Ghosts {
            links: Links::new(cap),
            lists: [List::default(); N],
            vpn: vec![u64::MAX; cap],
            list_of: vec![NO_LIST; cap],
            free: (0..cap as u32).rev().collect(),
            index,
        }
    }

    #[inline]
    pub fn len(&self, list: usize) -> u32 {
        self.lists[list].len
    }

    /// Total ghosts over all lists.
    pub fn total(&self) -> u32 {
        self.lists.iter().map(|l| l.len).sum()
    }

    /// Which list holds `vpn`, if any (no change).
    pub fn find(&self, vpn: u64) -> Option<usize> {
        self.index
            .get(&vpn)
            .map(|&g| self.list_of[g as usize] as usize)
    }

    /// Remove `vpn` if it is a ghost; returns the list it was on.
    pub fn take(&mut self, vpn: u64) -> Option<usize> {
        let g = self.index.remove(&vpn)?;
        let l = self.list_of[g as usize] as usize;
        self.lists[l].remove(&mut self.links, g);
        self.release(g);
        Some(l)
    }

    /// Add `vpn` at the head (most recent end) of `list`; `vpn` must not be a ghost already.
    pub fn push_head(&mut self, list: usize, vpn: u64) {
        debug_assert!(
            !self.index.contains_key(&vpn),
            "page {vpn:#x} is already a ghost"
        );
        let g = match self.free.pop() {
            Some(g) => g,
            None => {
                let g = self.vpn.len() as u32;
                self.vpn.push(u64::MAX);
                self.list_of.push(NO_LIST);
                self.links.ensure(self.vpn.len());
                g
            }
        };
        self.vpn[g as usize] = vpn;
        self.list_of[g as usize] = list as u8;
        self.lists[list].push_head(&mut self.links, g);
        self.index.insert(vpn, g);
    }

    /// Drop the oldest ghost of `list`; returns its page.
    pub fn pop_tail(&mut self, list: usize) -> Option<u64> {
        let g = self.lists[list].pop_tail(&mut self.links)?;
        let vpn = self.vpn[g as usize];
        self.index.remove(&vpn);
        self.release(g);
        Some(vpn)
    }

    fn release(&mut self, g: u32) {
        self.vpn[g as usize] = u64::MAX;
        self.list_of[g as usize] = NO_LIST;
        self.free.push(g);
    }

    /// Pages of `list` from newest to oldest (validation and tests).
    pub fn iter(&self, list: usize) -> impl Iterator<Item = u64> + '_ {
        self.lists[list]
            .iter(&self.links)
            .map(move |g| self.vpn[g as usize])
    }

    /// Each list well linked, every listed id indexed under its page, nothing else indexed.
    pub fn validate(&self, name: &str) -> Result<(), String> {
        let mut n = 0usize;
        for (l, list) in self.lists.iter().enumerate() {
            list.validate(&self.links, name)?;
            for g in list.iter(&self.links) {
                let vpn = self.vpn[g as usize];
                if self.list_of[g as usize] as usize != l {
                    return Err(format!(
                        "{name}: ghost {g} on list {l} says list {}",
                        self.list_of[g as usize]
                    ));
                }
                if self.index.get(&vpn) != Some(&g) {
                    return Err(format!("{name}: ghost page {vpn:#x} not indexed"));
                }
                n += 1;
            }
        }
        if n != self.index.len() {
            return Err(format!(
                "{name}: {} pages indexed, {n} ghosts listed",
                self.index.len()
            ));
        }
        if n + self.free.len() != self.vpn.len() {
            return Err(format!(
                "{name}: {n} ghosts + {} free ids != {} slots",
                self.free.len(),
                self.vpn.len()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_push_pop() {
        let mut g: Ghosts<2> = Ghosts::with_capacity(2);
        g.push_head(0, 10);
        g.push_head(0, 11);
        g.push_head(1, 12); // beyond the initial capacity: the slab grows
        assert_eq!((g.len(0), g.len(1), g.total()), (2, 1, 3));
        assert_eq!(g.find(11), Some(0));
        assert_eq!(g.take(10), Some(0));
        assert_eq!(g.take(10), None);
        assert_eq!(g.pop_tail(0), Some(11));
        assert_eq!(g.pop_tail(0), None);
        assert_eq!(g.iter(1).collect::<Vec<_>>(), vec![12]);
        g.validate("test").unwrap();
    }
}
