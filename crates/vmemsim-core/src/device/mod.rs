//! Swap devices (the content classes are shared with workloads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[repr(u8)]
pub enum ContentClass {
    Zero,
    Text,
    Numeric,
    Random,
}
