"""Typed stubs of the compiled core binding (``crates/vmemsim-py``). Private: use ``vmemsim``.

A ``source`` is one of (built by ``vmemsim.api``):

- ``{"path": str, "format": str | None, "page_size": int, "addresses": bool, "csv": str | None}``
- ``{"gen": str, "seed": int}``
- ``{"pages": uint64 or int64 array, "writes": bool array | None, "gup": bool array | None}``

``make lint`` checks this file against the compiled module (``mypy.stubtest``).
"""

from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

__version__: str
__all__ = [
    "version",
    "did_you_mean",
    "policies",
    "trace_formats",
    "trace_format_descriptions",
    "generator_kinds",
    "check_generator",
    "generator_plan",
    "replay",
    "replay_config_defaults",
    "replay_config_schema",
    "run_timed",
    "run_config_defaults",
    "workload_kinds",
    "cost_defaults",
    "rotational_slots",
    "swap_max_pages",
    "check_frames",
    "vm_config_defaults",
    "vm_config_schema",
    "run_config_schema",
    "guest_workload_kinds",
    "run_vm",
    "check_guest_workload",
    "check_workload",
    "miss_ratio_curve",
    "trace_info",
    "read_trace",
    "load_trace",
    "write_trace",
    "record_convert",
    "import_formats",
    "import_trace",
    "read_recorded",
    "VmemsimError",
    "__version__",
]

_ProgressFn = Callable[[int, Optional[int]], Any]

class VmemsimError(ValueError):
    """Bad input: the message is one line naming the file and line, or the configuration key."""

def version() -> str: ...
def did_you_mean(word: str, options: list[str]) -> str:
    """`` (did you mean 'lru'?)`` for the nearest option, or ``""``."""
def policies() -> list[tuple[str, str, str]]:
    """Every registered policy as ``(name, description, family)``."""

def trace_formats() -> list[str]: ...
def trace_format_descriptions() -> list[tuple[str, str]]:
    """Every trace format as ``(name, description)``."""

def generator_kinds() -> list[tuple[str, str]]:
    """Every generator kind as ``(name, description)``."""

def check_generator(spec: str, seed: int) -> tuple[str, int]:
    """Parse and build a generator spec; returns ``(name, accesses)``."""

def generator_plan(spec: str, seed: int) -> str:
    """The generator as the token plan of the kernel harness's workload program."""

def replay(
    source: Mapping[str, Any], config: str, progress: Optional[_ProgressFn] = None
) -> str:
    """Replay a source: ``config`` is the JSON of the core's ``ReplayConfig`` (unknown keys
    and bad values are errors naming them); returns the JSON of the core's ``ReplayResult``
    (with ``series``, the cumulative ``Stats`` every ``sample_every`` accesses, when that is
    above 0)."""

def replay_config_defaults() -> str:
    """The defaults of a replay (``ReplayConfig``) as JSON."""

def replay_config_schema() -> str:
    """The JSON Schema of a replay's settings (``replay::ReplayConfig``): each key's type, default and documentation."""

def miss_ratio_curve(
    source: Mapping[str, Any],
    config: str,
    sizes: Optional[Sequence[int]] = None,
    points: Optional[int] = None,
    shards: Optional[float] = None,
    workers: Optional[int] = None,
    progress: Optional[_ProgressFn] = None,
) -> str:
    """The miss-ratio curve as JSON: the core's ``MissCurve`` plus ``policy``, ``method``,
    ``seed``, ``version``, ``distinct_pages`` and ``workers``. ``config`` is the JSON of the
    core's ``ReplayConfig`` without ``frames``, ``sample_every`` and ``warmup``."""

def trace_info(
    source: Mapping[str, Any], reuse: bool = True, progress: Optional[_ProgressFn] = None
) -> str:
    """The JSON of the core's ``TraceInfo``."""

def read_trace(
    source: Mapping[str, Any], progress: Optional[_ProgressFn] = None
) -> tuple[int, float]:
    """Read a whole source: ``(accesses, seconds)``."""

def load_trace(
    source: Mapping[str, Any], progress: Optional[_ProgressFn] = None
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """Every access as ``(pages, writes)``."""

def write_trace(
    source: Mapping[str, Any], out: str, format: str, progress: Optional[_ProgressFn] = None
) -> int:
    """Copy a source into a new trace file; returns the accesses written."""

def record_convert(
    raw: str, out: str, origin: str, extra: Sequence[tuple[str, str]]
) -> dict[str, Any]:
    """Convert the vmrec tool's stream at ``raw`` (a FIFO or file) into a recorded trace
    ``out``; returns the counts (records, accesses, reads, writes, ifetches, io_records,
    files, threads, instructions, raw_bytes, complete)."""

def read_recorded(path: str) -> dict[str, Any]:
    """Every record of a native trace with all fields (see ``vmemsim.recorder.read_recorded``)."""

def cost_defaults() -> str:
    """The one cost table's defaults as JSON (key -> default)."""

def rotational_slots(spec: str) -> Optional[int]:
    """The swap slots of a rotating disk's device spec (``hdd[:size=SIZE,...]``), ``None``
    for another device."""

def swap_max_pages(spec: str) -> int:
    """The largest request of a swap device's spec (its ``max_pages``), up to which the
    plug merges reclaim's contiguous swap writes."""

def check_frames(spec: str) -> None:
    """Raise ``VmemsimError`` (naming ``frames``) unless ``spec`` is a frame count or a
    percentage as the core parses it."""

def workload_kinds() -> List[Tuple[str, str]]:
    """Every workload kind of ``vmemsim run`` as ``(name, description)``."""

def check_workload(spec: str, seed: int) -> Tuple[str, int, int]:
    """Check a workload spec: ``(canonical spec, threads, footprint pages)``."""

def run_timed(config: str, progress: Optional[_ProgressFn] = None) -> str:
    """A timed run: ``config`` is the JSON of the core's ``RunConfig`` (unknown keys and bad
    values are errors naming them); returns the JSON of ``TimedResult``."""

def run_config_defaults() -> str:
    """The defaults of a timed run (``RunConfig``) as JSON."""

def import_formats() -> List[Tuple[str, str]]:
    """Every import format as ``(name, description)``."""

def import_trace(
    path: str, out: str, format: str, page_size: int = 4096, ifetch: bool = False
) -> dict[str, Any]:
    """Import ``path`` in a public format (``msr``, ``lackey``) into a recorded trace at
    ``out``; returns the import's counts."""

def guest_workload_kinds() -> List[Tuple[str, str]]: ...
def check_guest_workload(spec: str, seed: int) -> Tuple[str, int, int]: ...
def run_vm(config: str) -> str:
    """Run VMs: ``config`` is the JSON of the core's ``VmRunConfig``; returns a ``RunResult``'s JSON (the one result type; with a balloon device each VM's ``balloon``, with MOM the host's ``mom``)."""

def vm_config_defaults() -> str:
    """The defaults of a VM run (``VmRunConfig``) as JSON."""

def run_config_schema() -> str:
    """The JSON Schema of a native timed run's settings (``timed::RunConfig``): each key's type, default and documentation."""

def vm_config_schema() -> str:
    """The JSON Schema of a VM run's settings (``VmRunConfig``): each key's type, default and documentation."""
