//! The kernel's own reclaimable slab memory that grows with the page cache and the swap
//! cache (Linux 6.1 and 6.8): which slab page each object is in, so that the machine takes a
//! `MIGRATE_RECLAIMABLE` page (or an order-1 chunk) from the buddy allocator when a cache
//! has no slab with room, and gives it back when its last object goes. Two caches use it:
//!
//! - `bh_cachep` (fs/buffer.c): one 104-byte `struct buffer_head` per page a buffered write
//!   reaches on a block device or a buffer-head file system; order-0 slabs of 39 objects
//!   ([`BH_PER_SLAB`]).
//! - `radix_tree_node_cachep` (lib/radix-tree.c, `SLAB_RECLAIM_ACCOUNT`): the nodes of the
//!   page cache's and the swap cache's xarrays (`struct xa_node`, 576 bytes, 584 with SLUB's
//!   free pointer outside the object, as the cache has a constructor). SLUB's
//!   `calculate_order` for one CPU: `min_objects` 8, so order-1 slabs of 14 objects (`oo`),
//!   and order-0 slabs of 7 (`s->min`) when an order-1 chunk cannot be had
//!   ([`XA_NODES_PER_SLAB`]).
//!
//! Placement follows SLUB loosely: a new object goes into the lowest-numbered slab with
//! room (left out: the per-CPU slab and per-CPU partial lists, which decide which slab
//! fills first, and `min_partial`, the 5 empty slabs a node keeps instead of freeing them).
//!
//! [`XaShape`] says which xarray nodes exist for a set of indices, as lib/xarray.c keeps
//! them: 64 slots a node (`XA_CHUNK_SHIFT` 6), a tree just tall enough for the largest
//! index (`xas_expand`, and `xas_shrink` when every entry fits under the root's first slot),
//! no node for a lone entry at index 0 (it sits in `xa_head`), a node freed when its last
//! entry goes (`xas_delete_node`). A page-cache or swap-cache entry is a page or a shadow
//! (`workingset_eviction`'s value): reclaim turns one into the other and frees no node.
//! Left out: the shadow-node shrinker (`count_shadow_nodes`/`scan_shadow_nodes`), which
//! frees nodes holding only shadows beyond one per 8 present pages of the node (5,120 nodes
//! at 160 MiB); Linux 6.1's swap cache does not even put its nodes on that list
//! (`workingset_update_node` is used by the page cache alone until 6.6).

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

use super::FrameId;

/// `struct buffer_head`s per slab page: 104 bytes each on x86-64, in order-0 slabs of
/// `bh_cachep` (SLUB's `calculate_order` for one CPU: 8 objects fit in a page), 4096 / 104.
pub const BH_PER_SLAB: u32 = 39;
/// `struct xa_node`s per slab of `radix_tree_node_cachep` on x86-64 with one CPU: 14 in an
/// order-1 slab (8192 / 584), 7 in an order-0 one (`s->min`).
pub const XA_NODES_PER_SLAB: [u32; 2] = [7, 14];
/// The order of `radix_tree_node_cachep`'s slabs (`oo`).
pub const XA_NODE_SLAB_ORDER: u8 = 1;

/// One slab page (or chunk): its first frame, its order, its objects and room.
#[derive(Clone, Copy, Debug)]
struct SlabPage {
    first: FrameId,
    order: u8,
    objects: u32,
    capacity: u32,
}

/// One `kmem_cache`'s slabs, objects named by a key `K`.
#[derive(Debug)]
pub struct SlabCache<K> {
    slab_of: HashMap<K, u32>,
    slabs: Vec<SlabPage>,
    /// Slabs with room, by number.
    partial: BTreeSet<u32>,
    /// Numbers of slabs given back, for reuse.
    unused: Vec<u32>,
}

impl<K> Default for SlabCache<K> {
    fn default() -> Self {
        SlabCache {
            slab_of: HashMap::new(),
            slabs: Vec::new(),
            partial: BTreeSet::new(),
            unused: Vec::new(),
        }
    }
}

impl<K: Hash + Eq + Copy> SlabCache<K> {
    /// Whether object `key` is allocated.
    pub fn contains(&self, key: K) -> bool {
        self.slab_of.contains_key(&key)
    }

    /// Put object `key` in the lowest-numbered slab with room; false when none has room
    /// (the caller then takes a page and calls [`SlabCache::add_slab`]).
    pub fn place(&mut self, key: K) -> bool {
        let Some(&s) = self.partial.iter().next() else {
            return false;
        };
        self.put(s, key);
        true
    }

    fn put(&mut self, s: u32, key: K) {
        self.slab_of.insert(key, s);
        let slab = &mut self.slabs[s as usize];
        slab.objects += 1;
        if slab.objects == slab.capacity {
            self.partial.remove(&s);
        }
    }

    /// A new slab of `1 << order` frames from `first`, for `capacity` objects, holding
    /// object `key`.
    pub fn add_slab(&mut self, first: FrameId, order: u8, capacity: u32, key: K) {
        let page = SlabPage {
            first,
            order,
            objects: 0,
            capacity,
        };
        let s = match self.unused.pop() {
            Some(s) => {
                self.slabs[s as usize] = page;
                s
            }
            None => {
                self.slabs.push(page);
                self.slabs.len() as u32 - 1
            }
        };
        self.partial.insert(s);
        self.put(s, key);
    }

    /// Free object `key`: `Some((first frame, order))` of its slab when that was its last
    /// object (`discard_slab`: the caller gives the frames back).
    pub fn remove(&mut self, key: K) -> Option<(FrameId, u8)> {
        let s = self.slab_of.remove(&key)?;
        let slab = &mut self.slabs[s as usize];
        slab.objects -= 1;
        if slab.objects > 0 {
            self.partial.insert(s);
            return None;
        }
        let out = (slab.first, slab.order);
        self.partial.remove(&s);
        self.unused.push(s);
        Some(out)
    }

    /// Objects in each slab that holds any, by slab number.
    pub fn slab_objects(&self) -> Vec<u32> {
        self.slabs
            .iter()
            .map(|s| s.objects)
            .filter(|&n| n > 0)
            .collect()
    }

    /// Objects allocated.
    pub fn objects(&self) -> usize {
        self.slab_of.len()
    }

    /// Pages the cache's slabs hold.
    pub fn pages(&self) -> u64 {
        let mut n = 0;
        for (s, slab) in self.slabs.iter().enumerate() {
            if slab.objects > 0 || self.partial.contains(&(s as u32)) {
                n += 1u64 << slab.order;
            }
        }
        n
    }
}

/// Levels of nodes tracked: indices below 64^7 = 2^42.
const LEVELS: usize = 7;
/// `XA_CHUNK_SHIFT`.
const CHUNK_SHIFT: u32 = 6;

/// A node of an xarray: its level (1: a leaf, whose slots are entries) and the range of
/// indices it covers (`index >> (6 * level)`).
pub type XaNode = (u8, u64);

/// Which nodes an xarray holding a set of indices has (module docs).
#[derive(Debug, Default)]
pub struct XaShape {
    /// Per level 1..=LEVELS: entries under each node-sized range that has any.
    counts: [HashMap<u64, u32>; LEVELS],
    total: u64,
    zero: bool,
}

impl XaShape {
    /// Entries held.
    pub fn len(&self) -> u64 {
        self.total
    }
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The tree's height: 0 without nodes (empty, or a lone entry at index 0), else the
    /// level of the root, the lowest whose only non-empty range is the first.
    fn height(&self) -> usize {
        if self.total == 0 || (self.total == 1 && self.zero) {
            return 0;
        }
        (1..=LEVELS)
            .find(|&l| self.counts[l - 1].len() == 1 && self.counts[l - 1].contains_key(&0))
            .unwrap_or(LEVELS)
    }

    fn count(&self, level: usize, range: u64) -> u32 {
        self.counts[level - 1].get(&range).copied().unwrap_or(0)
    }

    /// Store an entry at `index`, where there was none; the nodes that came to exist are
    /// pushed to `born`.
    pub fn insert(&mut self, index: u64, born: &mut Vec<XaNode>) {
        if index >> (CHUNK_SHIFT as usize * LEVELS) != 0 {
            // (beyond 2^42 pages: no node is counted for it)
            return;
        }
        let h0 = self.height();
        for l in 1..=LEVELS {
            *self.counts[l - 1]
                .entry(index >> (CHUNK_SHIFT * l as u32))
                .or_insert(0) += 1;
        }
        self.total += 1;
        self.zero |= index == 0;
        self.changed(index, h0, 1, born);
    }

    /// Erase the entry at `index`; the nodes that went are pushed to `gone`. (An index with
    /// no entry under it changes nothing: the caller tracks entries, not this shape.)
    pub fn remove(&mut self, index: u64, gone: &mut Vec<XaNode>) {
        if index >> (CHUNK_SHIFT as usize * LEVELS) != 0 || self.count(1, index >> CHUNK_SHIFT) == 0
        {
            debug_assert!(false, "no entry at index {index}");
            return;
        }
        let h0 = self.height();
        for l in 1..=LEVELS {
            let r = index >> (CHUNK_SHIFT * l as u32);
            if let Some(c) = self.counts[l - 1].get_mut(&r) {
                *c -= 1;
                if *c == 0 {
                    self.counts[l - 1].remove(&r);
                }
            }
        }
        self.total -= 1;
        if index == 0 {
            self.zero = false;
        }
        self.changed(index, h0, -1, gone);
    }

    /// The nodes whose existence changed when an entry at `index` was added (`delta` 1) or
    /// removed (-1), the height having been `h0`: those on the index's path, and the first
    /// node of each level the height crossed.
    fn changed(&self, index: u64, h0: usize, delta: i64, out: &mut Vec<XaNode>) {
        let h1 = self.height();
        for l in 1..=h0.max(h1) {
            let path = index >> (CHUNK_SHIFT * l as u32);
            let mut check = |r: u64| {
                let now = self.count(l, r) as i64;
                let before = now - if r == path { delta } else { 0 };
                if (l <= h0 && before > 0) != (l <= h1 && now > 0) {
                    out.push((l as u8, r));
                }
            };
            check(path);
            // The first node of a level off the path changes only with the height.
            if path != 0 && l > h0.min(h1) {
                check(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(x: &XaShape) -> usize {
        let h = x.height();
        (1..=h).map(|l| x.counts[l - 1].len()).sum()
    }

    /// Node counts worked out from lib/xarray.c's rules by hand.
    #[test]
    fn xarray_nodes_follow_the_tree_height() {
        let mut x = XaShape::default();
        let mut ev = Vec::new();
        // A lone entry at 0 sits in xa_head: no node.
        x.insert(0, &mut ev);
        assert!(ev.is_empty());
        // Index 5: one leaf (level 1, range 0).
        x.insert(5, &mut ev);
        assert_eq!(ev, vec![(1, 0)]);
        ev.clear();
        // Index 5000 (>= 4096): height 3. New: its leaf (1, 78), its level-2 node (2, 1),
        // the level-2 node over the old leaf (2, 0), the root (3, 0).
        x.insert(5000, &mut ev);
        ev.sort();
        assert_eq!(ev, vec![(1, 78), (2, 0), (2, 1), (3, 0)]);
        assert_eq!(nodes(&x), 5);
        ev.clear();
        // Removing 5000: every entry fits under the root's first slot again, the tree
        // shrinks to the one leaf (xas_shrink): four nodes go.
        x.remove(5000, &mut ev);
        ev.sort();
        assert_eq!(ev, vec![(1, 78), (2, 0), (2, 1), (3, 0)]);
        ev.clear();
        // Removing 5 leaves the lone entry at 0 in the head: the leaf goes.
        x.remove(5, &mut ev);
        assert_eq!(ev, vec![(1, 0)]);
        ev.clear();
        x.remove(0, &mut ev);
        assert!(ev.is_empty() && x.is_empty());
        // A swap address space's indices are the full offsets: 16,384..16,450 (space 1)
        // need a root at level 3 (16,384 >= 4,096), one level-2 node (16,384 >> 12 = 4)
        // and two leaves (256, 257).
        for i in 16_384..16_450 {
            x.insert(i, &mut ev);
        }
        ev.sort();
        assert_eq!(ev, vec![(1, 256), (1, 257), (2, 4), (3, 0)]);
        assert_eq!(nodes(&x), 4);
    }

    #[test]
    fn slab_objects_fill_the_lowest_slab_and_an_empty_slab_is_given_back() {
        let mut c: SlabCache<u32> = SlabCache::default();
        assert!(!c.place(1));
        c.add_slab(100, 1, 2, 1);
        assert!(c.place(2));
        // Full: the next object needs a new slab.
        assert!(!c.place(3));
        c.add_slab(200, 1, 2, 3);
        assert_eq!(c.pages(), 4);
        assert_eq!(c.remove(1), None);
        // Slab 0 has room again and is the lowest.
        assert!(c.place(4));
        assert_eq!(c.remove(3), Some((200, 1)));
        assert_eq!(c.pages(), 2);
        assert_eq!(c.objects(), 2);
    }
}
