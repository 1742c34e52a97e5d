//! Keeps the spec targets' executions short: a workload model sizes its tables when its spec
//! is parsed, so a spec with a large footprint (or a kind whose default footprint is large)
//! costs seconds per execution. Those specs are skipped; their parameters are parsed the
//! same way as the small ones, which are fuzzed.

/// (key, largest value fuzzed); sizes are in bytes, as the models read them.
const CAPS: &[(&str, f64)] = &[
    ("footprint", 4.0 * 1048576.0),
    ("sf", 0.02),
    ("scale", 12.0),
    ("edge_factor", 16.0),
    ("records", 4096.0),
    ("bytes", 4.0 * 1048576.0),
    ("size", 4.0 * 1048576.0),
    ("keys", 4096.0),
    ("value_bytes", 65536.0),
    ("jobs", 64.0),
    ("parallel", 16.0),
    ("text_bytes", 4.0 * 1048576.0),
    ("data_bytes", 4.0 * 1048576.0),
    ("heap_bytes", 4.0 * 1048576.0),
    ("stack_bytes", 4.0 * 1048576.0),
    ("pages", 1048576.0),
    ("threads", 64.0),
    ("vcpus", 64.0),
    ("alloc_bytes", 64.0 * 1048576.0),
];

/// A value as the models read it: `_` ignored, an optional binary size suffix, then a float.
fn value(v: &str) -> Option<f64> {
    let t = v.trim();
    let (num, mult) = [
        ("KiB", 1024.0),
        ("MiB", 1048576.0),
        ("GiB", 1073741824.0),
        ("TiB", 1099511627776.0),
    ]
    .iter()
    .find_map(|(s, m)| t.strip_suffix(s).map(|n| (n.trim(), *m)))
    .unwrap_or((t, 1.0));
    num.replace('_', "").parse::<f64>().ok().map(|x| x * mult)
}

/// Whether `spec` is cheap enough to parse: every capped key has a value within its cap (a
/// value that is not a number is an error the parser reports, so it is kept), file paths stay
/// in the working directory, and a kind whose default footprint is large names its size.
pub fn cheap(spec: &str) -> bool {
    let lower = spec.to_ascii_lowercase();
    // Keys are matched in any case (as the parsers do), values as given (size suffixes are
    // case-sensitive).
    for item in spec.split([',', '(', ')', '+', ':']) {
        let Some((k, v)) = item.split_once('=') else {
            continue;
        };
        let k = k.trim().to_ascii_lowercase();
        if k == "path" && (v.contains('/') || v.contains('\\')) {
            return false;
        }
        if let Some(&(_, cap)) = CAPS.iter().find(|(c, _)| *c == k.as_str()) {
            if value(v).is_some_and(|x| !(x <= cap)) {
                return false;
            }
        }
    }
    let kind = lower.trim().split(':').next().unwrap_or("").trim();
    let sized = |keys: &[&str]| keys.iter().any(|k| lower.contains(&format!("{k}=")));
    match kind {
        "tpch-like" => sized(&["footprint", "sf"]),
        "pagerank" => sized(&["footprint", "scale"]),
        "ycsb-a" | "ycsb-b" | "ycsb-c" => sized(&["footprint", "records"]),
        "stress-vm" => sized(&["bytes"]),
        "redis-like" => sized(&["keys"]),
        "lmbench-like" => sized(&["size"]),
        "jvm-like" => sized(&["heap_bytes"]) && sized(&["alloc_bytes"]),
        _ => true,
    }
}
