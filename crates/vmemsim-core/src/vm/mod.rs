//! Virtual machines: guest programs ([`crate::workload::Op`] streams) run by a guest OS on vCPUs, translated by
//! native, shadow or nested paging, on a host whose memory manager backs guest memory.

pub mod balloon;
pub mod machine;
pub mod workloads;

#[cfg(test)]
mod stress_tests;
#[cfg(test)]
mod tests;

pub use machine::{
    host_for, run, run_many, run_many_with, shrink_slab_plan, Costs, HostCpus, HostShared, Paging,
    RunResult, SwapPathologies, Vm, VmConfig, VmRun, VmRunConfig, VmTime,
};
