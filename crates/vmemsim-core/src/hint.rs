//! CPU hints for the simulator's own speed; they never change a result.

/// Prefetch the cache line holding `*p` (no-op where the target has no prefetch instruction).
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: prefetch is a hint; it never faults, even on an invalid address.
        #[allow(unused_unsafe)]
        unsafe {
            core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Bytes below which an array is not worth a huge page.
const HUGE: usize = 2 << 20;

/// A vector of `n` copies of `value` whose buffer the kernel is asked to back with transparent
/// huge pages (`madvise(MADV_HUGEPAGE)` before the first touch), so the simulator's random
/// accesses to big per-page and per-frame arrays miss the TLB less. Speed only.
pub fn huge_vec<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    advise_huge(&v);
    v.resize(n, value);
    v
}

/// Grow `v` by `additional` elements of `value`, advising huge pages on a new buffer.
pub fn huge_extend<T: Clone>(v: &mut Vec<T>, additional: usize, value: T) {
    let cap = v.capacity();
    v.reserve(additional);
    if v.capacity() != cap {
        advise_huge(v);
    }
    v.resize(v.len() + additional, value);
}

fn advise_huge<T>(v: &Vec<T>) {
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes < HUGE {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let start = v.as_ptr() as usize;
        let lo = (start + HUGE - 1) & !(HUGE - 1);
        let hi = (start + bytes) & !(HUGE - 1);
        if hi > lo {
            // SAFETY: the range lies inside this vector's allocation; MADV_HUGEPAGE only
            // changes how the kernel backs it, never its contents. Failure is harmless.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
}
