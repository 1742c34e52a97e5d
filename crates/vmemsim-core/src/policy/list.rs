//! Index-linked doubly linked lists over frame numbers, kept in one slab of links.
//!
//! Several lists can share one `Links` slab (a frame is on at most one list at a time), which
//! is how the kernel's LRU lists share the `folio->lru` field. Head = most recently added;
//! tail = oldest, where eviction looks first.

pub const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct Links {
    /// (prev, next) of each id, side by side so one cache line serves both.
    link: Vec<[u32; 2]>,
}

impl Links {
    pub fn new(n: usize) -> Self {
        Links {
            link: crate::hint::huge_vec(n, [NIL; 2]),
        }
    }
    pub fn len(&self) -> usize {
        self.link.len()
    }
    pub fn is_empty(&self) -> bool {
        self.link.is_empty()
    }
    /// Grow to hold ids below `n` (for lists over ghost ids).
    pub fn ensure(&mut self, n: usize) {
        if n > self.link.len() {
            self.link.resize(n, [NIL; 2]);
        }
    }
    /// Prefetch the links of `x` (speed only).
    #[inline]
    pub fn prefetch(&self, x: u32) {
        crate::hint::prefetch(self.link.as_ptr().wrapping_add(x as usize));
    }
    #[inline]
    pub fn next(&self, x: u32) -> u32 {
        self.link[x as usize][1]
    }
    #[inline]
    pub fn prev(&self, x: u32) -> u32 {
        self.link[x as usize][0]
    }
}

/// One list's ends and length; its links live in a shared [`Links`].
#[derive(Clone, Copy, Debug)]
pub struct List {
    pub head: u32,
    pub tail: u32,
    pub len: u32,
}

impl Default for List {
    fn default() -> Self {
        List {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

impl List {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn push_head(&mut self, l: &mut Links, x: u32) {
        l.link[x as usize][0] = NIL;
        l.link[x as usize][1] = self.head;
        if self.head != NIL {
            l.link[self.head as usize][0] = x;
        } else {
            self.tail = x;
        }
        self.head = x;
        self.len += 1;
    }

    #[inline]
    pub fn push_tail(&mut self, l: &mut Links, x: u32) {
        l.link[x as usize][1] = NIL;
        l.link[x as usize][0] = self.tail;
        if self.tail != NIL {
            l.link[self.tail as usize][1] = x;
        } else {
            self.head = x;
        }
        self.tail = x;
        self.len += 1;
    }

    #[inline]
    pub fn remove(&mut self, l: &mut Links, x: u32) {
        let (p, n) = (l.link[x as usize][0], l.link[x as usize][1]);
        if p != NIL {
            l.link[p as usize][1] = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            l.link[n as usize][0] = p;
        } else {
            self.tail = p;
        }
        l.link[x as usize][0] = NIL;
        l.link[x as usize][1] = NIL;
        self.len -= 1;
    }

    #[inline]
    pub fn pop_tail(&mut self, l: &mut Links) -> Option<u32> {
        let t = self.tail;
        if t == NIL {
            return None;
        }
        self.remove(l, t);
        Some(t)
    }

    #[inline]
    pub fn move_to_head(&mut self, l: &mut Links, x: u32) {
        if self.head == x {
            return;
        }
        self.remove(l, x);
        self.push_head(l, x);
    }

    /// Put `new` (on no list) where `old` is, and take `old` off the list: LIRS and CLOCK-Pro
    /// keep a page's place in their stack when it stops being resident.
    #[inline]
    pub fn replace(&mut self, l: &mut Links, old: u32, new: u32) {
        let (p, n) = (l.link[old as usize][0], l.link[old as usize][1]);
        l.link[new as usize] = [p, n];
        if p != NIL {
            l.link[p as usize][1] = new;
        } else {
            self.head = new;
        }
        if n != NIL {
            l.link[n as usize][0] = new;
        } else {
            self.tail = new;
        }
        l.link[old as usize] = [NIL; 2];
    }

    /// The `k`-th id from the tail (0 = the tail), if the list is that long.
    #[inline]
    pub fn nth_from_tail(&self, l: &Links, k: usize) -> Option<u32> {
        let mut x = self.tail;
        for _ in 0..k {
            if x == NIL {
                break;
            }
            x = l.prev(x);
        }
        (x != NIL).then_some(x)
    }

    /// Ids from head to tail (for validation and tests).
    pub fn iter<'a>(&self, l: &'a Links) -> impl Iterator<Item = u32> + 'a {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            if cur == NIL {
                return None;
            }
            let x = cur;
            cur = l.link[x as usize][1];
            Some(x)
        })
    }

    /// Check that walking from head reaches tail in `len` steps with consistent back links.
    pub fn validate(&self, l: &Links, name: &str) -> Result<(), String> {
        let mut n = 0u32;
        let mut prev = NIL;
        let mut cur = self.head;
        while cur != NIL {
            if l.link[cur as usize][0] != prev {
                return Err(format!("list {name}: bad back link at {cur}"));
            }
            n += 1;
            if n > self.len {
                return Err(format!("list {name}: longer than its length {}", self.len));
            }
            prev = cur;
            cur = l.link[cur as usize][1];
        }
        if prev != self.tail || n != self.len {
            return Err(format!(
                "list {name}: length {n} / tail mismatch (len {})",
                self.len
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod nth_tests {
    use super::*;

    #[test]
    fn nth_from_tail_walks_towards_head() {
        let mut l = Links::new(8);
        let mut q = List::default();
        for x in [5, 2, 7] {
            q.push_head(&mut l, x); // head 7, 2, 5 tail
        }
        assert_eq!(q.nth_from_tail(&l, 0), Some(5));
        assert_eq!(q.nth_from_tail(&l, 1), Some(2));
        assert_eq!(q.nth_from_tail(&l, 2), Some(7));
        assert_eq!(q.nth_from_tail(&l, 3), None);
        assert_eq!(List::default().nth_from_tail(&l, 0), None);
        q.replace(&mut l, 2, 4); // head 7, 4, 5 tail
        q.replace(&mut l, 5, 6); // head 7, 4, 6 tail
        q.replace(&mut l, 7, 1); // head 1, 4, 6 tail
        assert_eq!(q.iter(&l).collect::<Vec<_>>(), vec![1, 4, 6]);
        assert_eq!((q.head, q.tail, q.len), (1, 6, 3));
        q.validate(&l, "replaced").unwrap();
    }
}
