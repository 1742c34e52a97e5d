"""vmemsim: a fast, kernel-faithful simulator of memory management.

The simulation lives in a Rust core; this package is its Python face::

    import vmemsim
    r = vmemsim.replay("trace.txt", policy="lru", frames="25%")
    print(r.faults, r.major_faults, r.miss_ratio)

``vmemsim.policies()`` lists the registered policies. Every bad input raises
``vmemsim.VmemsimError`` (a ``ValueError``) with a one-line message naming the file and line
or the configuration key.
"""

from ._native import VmemsimError, version as _version
from .api import (
    PolicyInfo,
    ReplayResult,
    policies,
    policy_names,
    replay,
    trace_formats,
)

__version__: str = _version()

__all__ = [
    "PolicyInfo",
    "ReplayResult",
    "VmemsimError",
    "__version__",
    "policies",
    "policy_names",
    "replay",
    "trace_formats",
]
