//! Small helpers shared by trace analysis and generators: a fast hash map keyed by page
//! numbers and the SplitMix64 mixer used to derive seeds and hash pages.
//!
//! These serve analysis passes (stack distances, SHARDS sampling), not the simulation hot
//! path, which uses dense arrays and no hashing.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// SplitMix64's output function (Steele, Lea, Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): a bijective 64-bit mixer whose every output bit depends on every
/// input bit.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A hasher for `u64` keys: [`mix64`] of the key. Aligned addresses and sequential pages
/// spread over every bucket bit, unlike a bare multiplicative hash.
#[derive(Default, Clone, Copy)]
pub struct PageHasher(u64);

impl Hasher for PageHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix64(self.0 ^ b as u64);
        }
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = mix64(self.0 ^ n);
    }
}

/// A `HashMap` keyed by page numbers.
pub type PageMap<V> = HashMap<u64, V, BuildHasherDefault<PageHasher>>;

/// Estimated bytes of simulator memory per frame of simulated memory: the frame table, the
/// free list and a policy's per-frame arrays. Measured (peak RSS less the interpreter's, 2 M
/// frames, 4 M pages): 47 B for lru, 52 B for clock-lru, 59 B for mglru; rounded up.
pub const BYTES_PER_FRAME: u64 = 64;
/// Estimated bytes per page of a workload's footprint: its page-table entry and, once
/// swapped, its swap-slot record (8 + 8); rounded up.
pub const BYTES_PER_PAGE: u64 = 16;
/// Estimated bytes per access of a trace that must be held whole (OPT: the access and the
/// index of its next use, 16 + 8, and the vector's growth): measured 57 B; rounded up.
pub const BYTES_PER_HELD_ACCESS: u64 = 64;

/// Memory the machine can give (``MemAvailable`` of /proc/meminfo, bytes), lowered by
/// ``VMEMSIM_MEMORY_LIMIT`` (bytes) when set; `None` when neither is known.
pub fn available_memory() -> Option<u64> {
    let limit = std::env::var("VMEMSIM_MEMORY_LIMIT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok());
    let avail = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    match (avail, limit) {
        (Some(a), Some(l)) => Some(a.min(l)),
        (a, l) => a.or(l),
    }
}

/// A configuration read from JSON, with an error that names the entry serde refused by its
/// path (`costs.exit_ns: -5 is not a valid value (...)`, `pagin: unknown field ...`) rather
/// than serde's position in the text; `what` names the whole (a JSON syntax error, a value
/// of the wrong shape). Nested tables are searched one entry at a time, which works for
/// types whose every field has a default (`#[serde(default)]`).
pub fn from_json_keyed<T: serde::de::DeserializeOwned>(json: &str, what: &str) -> crate::Result<T> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| crate::Error::config(what, serde_msg(&e)))?;
    match serde_json::from_value::<T>(value.clone()) {
        Ok(t) => Ok(t),
        Err(e) => Err(json_culprit::<T>(&value, &[])
            .unwrap_or_else(|| crate::Error::config(what, serde_msg(&e)))),
    }
}

/// serde's message without its position ("at line 1 column 5": the text is generated).
fn serde_msg(e: &serde_json::Error) -> String {
    let m = e.to_string();
    m.split(" at line ").next().unwrap_or(&m).to_string()
}

/// The first entry under `path` of `value` that `T` refuses on its own, as an error naming
/// its full path.
fn json_culprit<T: serde::de::DeserializeOwned>(
    value: &serde_json::Value,
    path: &[&str],
) -> Option<crate::Error> {
    let serde_json::Value::Object(map) = value else {
        return None;
    };
    for (k, v) in map {
        let mut p: Vec<&str> = path.to_vec();
        p.push(k);
        // {p0: {p1: ... v}}: the entry alone, every other one at its default.
        let one = p.iter().rev().fold(v.clone(), |inner, key| {
            serde_json::Value::Object([(key.to_string(), inner)].into_iter().collect())
        });
        if let Err(e) = serde_json::from_value::<T>(one) {
            if let Some(deeper) = json_culprit::<T>(v, &p) {
                return Some(deeper);
            }
            let msg = serde_msg(&e);
            let msg = if msg.starts_with("unknown field") || v.is_object() {
                msg
            } else {
                format!("{v} is not a valid value ({msg})")
            };
            return Some(crate::Error::config(p.join("."), msg));
        }
    }
    None
}

/// Refuse a run whose estimated memory (`bytes`, for `what`) exceeds what the machine has
/// available, naming the parameter (`key`), the estimate and the limit, before anything is
/// allocated. ``VMEMSIM_FORCE=1`` runs anyway (for users who know better).
pub fn check_memory(key: &str, what: &str, bytes: u64) -> crate::Result<()> {
    if std::env::var("VMEMSIM_FORCE").is_ok_and(|v| v == "1") {
        return Ok(());
    }
    let Some(avail) = available_memory() else {
        return Ok(());
    };
    if bytes > avail {
        return Err(crate::Error::config(
            key,
            format!(
                "{what} needs about {} of memory and this machine has {} available; make it \
                 smaller, or set VMEMSIM_FORCE=1 to run anyway",
                fmt_bytes(bytes),
                fmt_bytes(avail)
            ),
        ));
    }
    Ok(())
}

/// `1.5 GiB`, `320.0 MiB`.
pub fn fmt_bytes(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < U.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

/// `a.f += b.f` for each listed field, and `a.m = max(a.m, b.m)` for each field after `max:`
/// (peaks, which do not add up): the typed sums of counters structs (a VM's vCPUs, several
/// VMs' results).
macro_rules! add_fields {
    ($a:expr, $b:expr; $($f:ident),* $(; max: $($m:ident),*)?) => {{
        $( $a.$f += $b.$f; )*
        $($( $a.$m = $a.$m.max($b.$m); )*)?
    }};
}
pub(crate) use add_fields;

/// The JSON Schema (draft 7) of a front end's settings (`RunConfig`, `VmRunConfig`): every
/// key with its type, default and the documentation written on its field, which the Python
/// front ends show as help.
pub fn schema_of<T: schemars::JsonSchema>() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(T)).expect("a JSON schema serializes")
}

/// The schema of a setting that takes one of `names` (a string with `enum`): the front ends
/// (CLI choices, the sweep's checks) take the names from it, so the names the core's parser
/// accepts are written once, beside the parser.
pub(crate) fn names_schema(names: &[&str]) -> schemars::schema::Schema {
    schemars::schema::SchemaObject {
        instance_type: Some(schemars::schema::InstanceType::String.into()),
        enum_values: Some(names.iter().map(|n| serde_json::json!(n)).collect()),
        ..Default::default()
    }
    .into()
}

/// The `names_schema` of a setting, as `#[schemars(schema_with = ...)]` takes it.
macro_rules! names_schema_fn {
    ($fn:ident, $names:expr) => {
        pub(crate) fn $fn(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
            $crate::util::names_schema($names)
        }
    };
}
pub(crate) use names_schema_fn;

/// For tests: `T`'s schema lists exactly the keys `T::default()` serializes, each documented
/// and with that default; returns the schema for further checks.
#[cfg(test)]
pub(crate) fn checked_schema<T: schemars::JsonSchema + serde::Serialize + Default>(
) -> serde_json::Value {
    let schema = schema_of::<T>();
    let props = schema["properties"].as_object().unwrap();
    let defaults = serde_json::to_value(T::default()).unwrap();
    let keys = defaults.as_object().unwrap();
    assert_eq!(
        props.keys().collect::<Vec<_>>(),
        keys.keys().collect::<Vec<_>>()
    );
    for (k, p) in props {
        let doc = p["description"].as_str().unwrap_or("");
        assert!(!doc.is_empty(), "{k} has no documentation");
        assert_eq!(p["default"], keys[k], "{k}");
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // SplitMix64 seeded with 0 yields these first outputs (the generator adds the golden
        // gamma before mixing; published in the reference implementation's test vectors).
        assert_eq!(mix64(0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(mix64(0x9E37_79B9_7F4A_7C15), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn page_map_works_with_aligned_keys() {
        let mut m: PageMap<u32> = PageMap::default();
        for i in 0..10_000u64 {
            m.insert(i << 12, i as u32);
        }
        assert_eq!(m.len(), 10_000);
        assert_eq!(m[&(77 << 12)], 77);
    }
}
