//! One memory reference of a workload, at page granularity.

/// A page access as it reaches the memory model: the virtual page number touched and whether
/// it was a write (which sets the PTE dirty bit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Access {
    /// Virtual page number (address >> page shift), or an object id treated as one.
    pub page: u64,
    pub write: bool,
}

impl Access {
    #[inline]
    pub const fn read(page: u64) -> Self {
        Access { page, write: false }
    }
    #[inline]
    pub const fn write(page: u64) -> Self {
        Access { page, write: true }
    }
}
