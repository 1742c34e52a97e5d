//! Index-linked doubly linked lists over frame numbers, kept in one slab of links.
//!
//! Several lists can share one `Links` slab (a frame is on at most one list at a time), which
//! is how the kernel's LRU lists share the `folio->lru` field. Head = most recently added;
//! tail = oldest, where eviction looks first.

pub const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct Links {
    prev: Vec<u32>,
    next: Vec<u32>,
}

impl Links {
    pub fn new(n: usize) -> Self {
        Links {
            prev: vec![NIL; n],
            next: vec![NIL; n],
        }
    }
    pub fn len(&self) -> usize {
        self.prev.len()
    }
    pub fn is_empty(&self) -> bool {
        self.prev.is_empty()
    }
    /// Grow to hold ids below `n` (for lists over ghost ids).
    pub fn ensure(&mut self, n: usize) {
        if n > self.prev.len() {
            self.prev.resize(n, NIL);
            self.next.resize(n, NIL);
        }
    }
    #[inline]
    pub fn next(&self, x: u32) -> u32 {
        self.next[x as usize]
    }
    #[inline]
    pub fn prev(&self, x: u32) -> u32 {
        self.prev[x as usize]
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
        l.prev[x as usize] = NIL;
        l.next[x as usize] = self.head;
        if self.head != NIL {
            l.prev[self.head as usize] = x;
        } else {
            self.tail = x;
        }
        self.head = x;
        self.len += 1;
    }

    #[inline]
    pub fn push_tail(&mut self, l: &mut Links, x: u32) {
        l.next[x as usize] = NIL;
        l.prev[x as usize] = self.tail;
        if self.tail != NIL {
            l.next[self.tail as usize] = x;
        } else {
            self.head = x;
        }
        self.tail = x;
        self.len += 1;
    }

    #[inline]
    pub fn remove(&mut self, l: &mut Links, x: u32) {
        let (p, n) = (l.prev[x as usize], l.next[x as usize]);
        if p != NIL {
            l.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            l.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
        l.prev[x as usize] = NIL;
        l.next[x as usize] = NIL;
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

    /// Ids from head to tail (for validation and tests).
    pub fn iter<'a>(&self, l: &'a Links) -> impl Iterator<Item = u32> + 'a {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            if cur == NIL {
                return None;
            }
            let x = cur;
            cur = l.next[x as usize];
            Some(x)
        })
    }

    /// Check that walking from head reaches tail in `len` steps with consistent back links.
    pub fn validate(&self, l: &Links, name: &str) -> Result<(), String> {
        let mut n = 0u32;
        let mut prev = NIL;
        let mut cur = self.head;
        while cur != NIL {
            if l.prev[cur as usize] != prev {
                return Err(format!("list {name}: bad back link at {cur}"));
            }
            n += 1;
            if n > self.len {
                return Err(format!("list {name}: longer than its length {}", self.len));
            }
            prev = cur;
            cur = l.next[cur as usize];
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
