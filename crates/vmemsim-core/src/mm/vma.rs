//! Virtual memory areas (`struct vm_area_struct`): ranges of pages that are anonymous or map a file.
//!
//! With no VMA declared, every page is anonymous (a trace replay of one process heap).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmaKind {
    Anon,
    /// A file mapping: first touch and refault read from the file; dirty pages are written back.
    File {
        file: u32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    pub kind: VmaKind,
    /// `VM_SEQ_READ` / `VM_RAND_READ` (madvise hints): MG-LRU's walk skips such VMAs.
    pub seq_or_rand_hint: bool,
}

/// VMAs sorted by start, non-overlapping.
#[derive(Clone, Debug, Default)]
pub struct Vmas {
    list: Vec<Vma>,
}

impl Vmas {
    pub fn add(&mut self, vma: Vma) -> Result<(), String> {
        if vma.start >= vma.end {
            return Err(format!("empty VMA [{:#x}, {:#x})", vma.start, vma.end));
        }
        let pos = self.list.partition_point(|v| v.start < vma.start);
        if pos > 0 && self.list[pos - 1].end > vma.start
            || pos < self.list.len() && self.list[pos].start < vma.end
        {
            return Err(format!(
                "VMA [{:#x}, {:#x}) overlaps another",
                vma.start, vma.end
            ));
        }
        self.list.insert(pos, vma);
        Ok(())
    }

    /// The kind of memory at `vpn`; pages outside any declared VMA are anonymous.
    pub fn kind(&self, vpn: u64) -> VmaKind {
        self.find(vpn).map_or(VmaKind::Anon, |v| v.kind)
    }

    pub fn find(&self, vpn: u64) -> Option<&Vma> {
        let pos = self.list.partition_point(|v| v.start <= vpn);
        (pos > 0 && self.list[pos - 1].end > vpn).then(|| &self.list[pos - 1])
    }

    pub fn iter(&self) -> impl Iterator<Item = &Vma> {
        self.list.iter()
    }
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}
