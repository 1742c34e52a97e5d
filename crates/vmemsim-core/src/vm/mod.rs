//! Virtual machines: guest programs ([`ops`]) run by a guest OS on vCPUs, translated by
//! native, shadow or nested paging, on a host whose memory manager backs guest memory.

pub mod ops;
pub mod workloads;

pub use ops::{GuestOp, GuestWorkload};
