"""vmemsim: a fast, kernel-faithful simulator of memory management.

The simulation lives in a Rust core; this package is its Python face::

    import vmemsim
    r = vmemsim.replay("trace.txt", policy="lru", frames="25%")
    print(r.faults, r.major_faults, r.miss_ratio)

    g = vmemsim.generate("zipf:pages=1000,alpha=0.9,n=10000", seed=1)
    curve = vmemsim.mrc(g, policy="lru", points=10)       # exact, one pass
    print(vmemsim.trace_info(g).distinct_pages, curve.misses)

A trace is a path (``format``, ``page_size``, ``addresses`` and ``csv`` say how to read it),
a generator (:func:`generate`, or a ``"gen:SPEC"`` string) or page numbers in memory.
``vmemsim.policies()`` lists the registered policies. Every bad input raises
``vmemsim.VmemsimError`` (a ``ValueError``) with a one-line message naming the file and line
or the configuration key.
"""

from ._native import VmemsimError, version as _version
from .api import (
    COST_DEFAULTS,
    COST_KEYS,
    CurvePoint,
    Generated,
    MissRatioCurve,
    PolicyInfo,
    ReadStats,
    ReplayResult,
    ReuseDistance,
    RunResult,
    TraceInfo,
    VmResult,
    convert,
    generate,
    generator_kinds,
    guest_workload_kinds,
    import_formats,
    import_trace,
    load_trace,
    mrc,
    output_format,
    policies,
    policy_names,
    read_trace,
    replay,
    run,
    run_vm,
    trace_formats,
    trace_info,
    workload_kinds,
    write_trace,
)

__version__: str = _version()

__all__ = [
    "COST_DEFAULTS",
    "COST_KEYS",
    "CurvePoint",
    "Generated",
    "MissRatioCurve",
    "PolicyInfo",
    "ReadStats",
    "ReplayResult",
    "ReuseDistance",
    "RunResult",
    "TraceInfo",
    "VmResult",
    "VmemsimError",
    "__version__",
    "convert",
    "generate",
    "generator_kinds",
    "guest_workload_kinds",
    "import_formats",
    "import_trace",
    "load_trace",
    "mrc",
    "output_format",
    "policies",
    "policy_names",
    "read_trace",
    "replay",
    "run",
    "run_vm",
    "trace_formats",
    "trace_info",
    "workload_kinds",
    "write_trace",
]
