//! Virtual machines: guest programs ([`ops`]) run by a guest OS on vCPUs, translated by
//! native, shadow or nested paging, on a host whose memory manager backs guest memory.

pub mod machine;
pub mod ops;
pub mod workloads;

#[cfg(test)]
mod stress_tests;
#[cfg(test)]
mod tests;

pub use machine::{
    host_for, run, run_many, run_many_with, shrink_slab_plan, HostCpus, HostShared, Paging, Vm,
    VmConfig, VmCosts, VmResult, VmTime,
};
pub use ops::{GuestOp, GuestWorkload};

/// A VM configuration for tests elsewhere in the crate.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use crate::engine::MachineConfig;
    use crate::policy::{PolicyKind, PolicyOptions};
    use crate::translate::{PageSize, TranslateConfig};

    /// TDP, clock-lru on both sides, default translation and costs, 4 KiB pages.
    pub(crate) fn cfg_tdp(guest_frames: u32, host_frames: u32) -> VmConfig {
        VmConfig {
            paging: Paging::Tdp,
            guest: MachineConfig::new(guest_frames),
            guest_policy: PolicyKind::from_name("clock-lru").unwrap(),
            guest_options: PolicyOptions::new(1),
            host: MachineConfig::new(host_frames),
            host_policy: PolicyKind::from_name("clock-lru").unwrap(),
            host_options: PolicyOptions::new(1),
            translate: TranslateConfig::default(),
            guest_levels: 4,
            host_levels: 4,
            pt_pages: 0,
            eviction: crate::kvm::Eviction::Fifo,
            mmu_pages: None,
            guest_page: PageSize::K4,
            host_page: PageSize::K4,
            host_swap: None,
            guest_swap: None,
            costs: Default::default(),
        }
    }
}
