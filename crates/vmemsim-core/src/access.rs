//! One memory reference of a workload, at page granularity.

/// A page access as it reaches the memory model: the virtual page number touched, whether it
/// was a write (which sets the PTE dirty bit), and who made it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Access {
    /// Virtual page number (address >> page shift), or an object id treated as one.
    pub page: u64,
    pub write: bool,
    /// Made by the kernel's `get_user_pages` on the program's behalf (with `FOLL_TOUCH`, and
    /// `FOLL_WRITE` when `write`), as `O_DIRECT` I/O pins its user buffer, not by the CPU.
    /// Consecutive such accesses are one call over a range of pages (see
    /// [`crate::engine::Machine::access`]). Traces never set it; the kernel yardstick's
    /// replay of its own guest program does.
    pub gup: bool,
}

impl Access {
    #[inline]
    pub const fn new(page: u64, write: bool) -> Self {
        Access {
            page,
            write,
            gup: false,
        }
    }
    #[inline]
    pub const fn read(page: u64) -> Self {
        Access::new(page, false)
    }
    #[inline]
    pub const fn write(page: u64) -> Self {
        Access::new(page, true)
    }
    /// An access by `get_user_pages` (see [`Access::gup`]).
    #[inline]
    pub const fn gup(page: u64, write: bool) -> Self {
        Access {
            page,
            write,
            gup: true,
        }
    }
}
