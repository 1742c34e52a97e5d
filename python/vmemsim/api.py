"""The Python API: replay a trace through one policy and get a typed result.

All simulation happens in the Rust core (``vmemsim._native``); this module converts
arguments, calls it and wraps the JSON it returns. Policy and trace-format names come from
the core's registries, never from lists kept here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native
from ._native import VmemsimError

__all__ = [
    "PolicyInfo",
    "ReplayResult",
    "VmemsimError",
    "policies",
    "policy_names",
    "replay",
    "trace_formats",
]

#: What ``replay`` accepts as a trace: a path, or page numbers in memory.
Trace = Union[str, "os.PathLike[str]", np.ndarray, Sequence[int]]
#: ``progress(done, total)``: accesses replayed so far, and the total when known (arrays).
ProgressFn = Callable[[int, Optional[int]], Any]


@dataclass(frozen=True)
class PolicyInfo:
    """One registered policy."""

    name: str
    family: str
    description: str


def policies() -> list[PolicyInfo]:
    """Every policy the core registers, in registry order."""
    return [PolicyInfo(name=n, family=f, description=d) for (n, d, f) in _native.policies()]


def policy_names() -> list[str]:
    return [p.name for p in policies()]


def trace_formats() -> list[str]:
    """Names accepted by ``format=`` (and ``--format``); ``None`` detects the format."""
    return list(_native.trace_formats())


@dataclass(frozen=True)
class ReplayResult:
    """What one replay produced, with everything needed to run it again.

    ``faults`` counts every miss, cold (first-touch) misses included; ``major_faults`` those
    that read from swap or a file; ``minor_faults`` those served without I/O. ``stats`` holds
    every counter of the run (named as in ``/proc/vmstat`` where one exists) and
    ``policy_counters`` the policy's own.
    """

    accesses: int
    faults: int
    major_faults: int
    minor_faults: int
    policy: str
    frames: int
    seed: int
    version: str
    trace: str
    page_cluster: int
    watermarks: Tuple[int, int, int]
    stats: Dict[str, int] = field(default_factory=dict)
    policy_counters: Dict[str, int] = field(default_factory=dict)
    options: Dict[str, str] = field(default_factory=dict)

    @property
    def miss_ratio(self) -> float:
        """``faults / accesses`` (0.0 for an empty trace)."""
        return self.faults / self.accesses if self.accesses else 0.0

    @classmethod
    def from_json(cls, text: str) -> "ReplayResult":
        """Build from the JSON of the core's ``ReplayResult`` (as the binding returns it)."""
        raw = json.loads(text)
        stats = dict(raw["stats"])
        w = raw["watermarks"]
        return cls(
            accesses=int(stats["accesses"]),
            faults=int(stats["faults"]),
            major_faults=int(stats["major_faults"]),
            minor_faults=int(stats["minor_faults"]),
            policy=raw["policy"],
            frames=int(raw["frames"]),
            seed=int(raw["seed"]),
            version=raw["version"],
            trace=raw["trace"],
            page_cluster=int(raw["page_cluster"]),
            watermarks=(int(w["min"]), int(w["low"]), int(w["high"])),
            stats=stats,
            policy_counters=dict(raw["policy_counters"]),
            options=dict(raw["options"]),
        )

    def to_dict(self) -> Dict[str, Any]:
        """Plain JSON-ready data: the headline numbers at top level, everything else nested."""
        return {
            "accesses": self.accesses,
            "faults": self.faults,
            "major_faults": self.major_faults,
            "minor_faults": self.minor_faults,
            "miss_ratio": self.miss_ratio,
            "policy": self.policy,
            "frames": self.frames,
            "seed": self.seed,
            "version": self.version,
            "trace": self.trace,
            "page_cluster": self.page_cluster,
            "watermarks": {
                "min": self.watermarks[0],
                "low": self.watermarks[1],
                "high": self.watermarks[2],
            },
            "options": dict(self.options),
            "stats": dict(self.stats),
            "policy_counters": dict(self.policy_counters),
        }

    def to_pandas(self) -> "Any":
        """A one-row ``pandas.DataFrame``: configuration columns, then every counter
        (policy counters prefixed ``policy.``, options ``opt.``)."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError(
                "ReplayResult.to_pandas() needs pandas: pip install 'vmemsim[pandas]'"
            ) from e
        row: Dict[str, Any] = {
            "policy": self.policy,
            "frames": self.frames,
            "seed": self.seed,
            "trace": self.trace,
            "version": self.version,
            "page_cluster": self.page_cluster,
            "wmark_min": self.watermarks[0],
            "wmark_low": self.watermarks[1],
            "wmark_high": self.watermarks[2],
            "miss_ratio": self.miss_ratio,
        }
        row.update(self.stats)
        row.update({f"policy.{k}": v for k, v in self.policy_counters.items()})
        row.update({f"opt.{k}": v for k, v in self.options.items()})
        return pd.DataFrame([row])


def _frames_arg(frames: Union[int, str, None]) -> str:
    if frames is None:
        raise VmemsimError(
            "frames: required: a number of frames such as 1024, or a percentage of the "
            "trace's distinct pages such as '25%'"
        )
    if isinstance(frames, bool) or not isinstance(frames, (int, np.integer, str)):
        raise VmemsimError(
            f"frames: expected a whole number or a percentage string like '25%', got {frames!r}"
        )
    return str(frames)


def _seed_arg(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise VmemsimError(f"seed: expected an integer, got {seed!r}")
    if not 0 <= int(seed) < 2**64:
        raise VmemsimError(f"seed: must be 0..2^64-1, got {seed}")
    return int(seed)


def _options_arg(options: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for k, v in (options or {}).items():
        if not isinstance(k, str):
            raise VmemsimError(f"options: keys must be strings, got {k!r}")
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


def _pages_arg(trace: Any) -> np.ndarray:
    try:
        arr = np.asarray(trace)
    except (ValueError, TypeError, OverflowError) as e:
        raise VmemsimError(f"trace: cannot read page numbers: {e}") from None
    if arr.ndim != 1:
        raise VmemsimError(f"trace: expected a 1-D sequence of page numbers, got shape {arr.shape}")
    if arr.dtype == object or arr.size == 0:
        try:
            arr = np.asarray([int(x) for x in arr.tolist()] if arr.size else [], dtype=np.uint64)
        except (ValueError, TypeError, OverflowError) as e:
            raise VmemsimError(f"trace: page numbers must be integers 0..2^64-1: {e}") from None
    if arr.dtype.kind == "u":
        return np.ascontiguousarray(arr, dtype=np.uint64)
    if arr.dtype.kind == "i":
        if arr.size and int(arr.min()) < 0:
            i = int(np.argmax(arr < 0))
            raise VmemsimError(f"trace: negative page number {int(arr[i])} at index {i}")
        return np.ascontiguousarray(arr, dtype=np.uint64)
    raise VmemsimError(f"trace: page numbers must be integers, got dtype {arr.dtype}")


def _machine_arg(
    page_cluster: Optional[int],
    watermarks: Optional[Sequence[int]],
    swappiness: int,
    check_invariants: bool,
) -> Dict[str, Any]:
    m: Dict[str, Any] = {"swappiness": swappiness, "check_invariants": bool(check_invariants)}
    if page_cluster is not None:
        m["page_cluster"] = page_cluster
    if watermarks is not None:
        w = tuple(watermarks)
        if len(w) != 3:
            raise VmemsimError(f"watermarks: expected (min, low, high), got {watermarks!r}")
        m["watermarks"] = w
    return m


def replay(
    trace: Trace,
    policy: str = "lru",
    frames: Union[int, str, None] = None,
    seed: int = 0,
    format: Optional[str] = None,
    options: Optional[Mapping[str, Any]] = None,
    page_cluster: Optional[int] = None,
    watermarks: Optional[Sequence[int]] = None,
    swappiness: int = 60,
    check_invariants: bool = False,
    progress: Optional[ProgressFn] = None,
    writes: Optional[Union[np.ndarray, Sequence[bool]]] = None,
) -> ReplayResult:
    """Replay ``trace`` through ``policy`` on a machine of ``frames`` 4 KiB frames.

    ``trace`` is a path to a trace file (``format`` names its format, ``None`` detects it) or
    page numbers in memory (a numpy array or a sequence of ints; ``writes`` optionally marks
    writes). ``frames`` is a count or a percentage of the trace's distinct pages (``"25%"``).
    ``options`` are the policy's ``key=value`` knobs; an unknown key is an error.
    ``page_cluster`` (``vm.page-cluster``), ``watermarks`` ``(min, low, high)`` and
    ``swappiness`` configure the machine (``None`` = the kernel's defaults for kernel policies,
    none for demand policies). ``progress(done, total)`` is called a few times a second.

    Raises ``VmemsimError`` (a ``ValueError``) with a one-line message on any bad input.
    """
    frames_s = _frames_arg(frames)
    seed_i = _seed_arg(seed)
    opts = _options_arg(options)
    machine = _machine_arg(page_cluster, watermarks, swappiness, check_invariants)
    if not isinstance(policy, str):
        raise VmemsimError(f"policy: expected a policy name, got {policy!r}")
    if isinstance(trace, (str, os.PathLike)):
        if writes is not None:
            raise VmemsimError("writes: only for in-memory traces (a file says R/W itself)")
        path = os.fsdecode(os.fspath(trace))
        out = _native.replay_path(
            path, format, policy, frames_s, seed_i, opts, machine, progress
        )
    else:
        if format is not None:
            raise VmemsimError("format: only for trace files, not in-memory page numbers")
        pages = _pages_arg(trace)
        w = None
        if writes is not None:
            w = np.ascontiguousarray(np.asarray(writes), dtype=np.bool_)
        out = _native.replay_array(pages, w, policy, frames_s, seed_i, opts, machine, progress)
    return ReplayResult.from_json(out)
