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
