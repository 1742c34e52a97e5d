#!/usr/bin/env python3
"""Regenerate crates/vmemsim-core/tests/data/libcachesim_golden.json: small seeded page traces
(stored in full, so the Rust test needs no generator) and libCacheSim's miss counts for them
at several memory sizes. The Rust test `libcachesim_golden.rs` replays the same traces through
vmemsim and compares.

    python3 tests/gen_libcachesim_golden.py
    python3 tests/gen_libcachesim_golden.py --big --out /tmp/big.json   # the pytest's traces
    VMEMSIM_LIBCACHESIM_GOLDEN=/tmp/big.json cargo test -p vmemsim-core --test libcachesim_golden

Needs `numpy` and `libcachesim` (PyPI, the official binding of libCacheSim).
"""

from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import libcachesim_ref as ref  # noqa: E402

OUT = (
    pathlib.Path(__file__).resolve().parent.parent
    / "crates/vmemsim-core/tests/data/libcachesim_golden.json"
)


def main() -> None:
    import argparse

    import libcachesim

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--big", action="store_true", help="the larger traces of the pytest")
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    args = ap.parse_args()

    traces = ref.big_traces() if args.big else ref.traces()
    sizes = ref.BIG_FRAMES if args.big else ref.FRAMES
    results = []
    for name, tr in traces.items():
        for policy in ref.POLICIES:
            for frames in sizes:
                if not ref.comparable(policy, frames):
                    continue
                results.append(
                    {
                        "trace": name,
                        "policy": policy,
                        "frames": frames,
                        "misses": ref.libcachesim_misses(policy, tr, frames),
                    }
                )
    doc = {
        "about": "libCacheSim miss counts (obj_size 1, cache_size in objects, one get per "
        "access) on the stored traces; regenerate with tests/gen_libcachesim_golden.py",
        "libcachesim_version": getattr(libcachesim, "__version__", "?"),
        "libcachesim_classes": {k: v[0] for k, v in ref.POLICIES.items()},
        "exact": list(ref.EXACT),
        "traces": {name: [int(x) for x in tr] for name, tr in traces.items()},
        "results": results,
    }
    out = args.out
    # One trace and one result per line: diffable without being huge.
    lines = ["{"]
    for key in ("about", "libcachesim_version", "libcachesim_classes", "exact"):
        lines.append(f"{json.dumps(key)}: {json.dumps(doc[key])},")
    lines.append('"traces": {')
    items = list(doc["traces"].items())
    for i, (name, pages) in enumerate(items):
        sep = "," if i + 1 < len(items) else ""
        lines.append(f"  {json.dumps(name)}: {json.dumps(pages, separators=(',', ':'))}{sep}")
    lines.append("},")
    lines.append('"results": [')
    for i, r in enumerate(results):
        sep = "," if i + 1 < len(results) else ""
        lines.append(f"  {json.dumps(r)}{sep}")
    lines.append("]")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    json.loads(text)  # well-formed
    out.write_text(text)
    print(f"wrote {out} ({len(text)} bytes, {len(results)} results)")


if __name__ == "__main__":
    main()
