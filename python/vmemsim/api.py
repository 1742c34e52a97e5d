"""The Python API: replay a trace through one policy, miss-ratio curves, trace files and
generators, all with typed results.

All simulation happens in the Rust core (``vmemsim._native``); this module converts
arguments, calls it and wraps the JSON it returns. Policy and trace-format names come from
the core's registries, never from lists kept here.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import numbers
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._native import VmemsimError

if TYPE_CHECKING:
    import numpy as np


class _Numpy:
    """numpy, imported on first use: the CLI replaying a file never needs it, and importing
    it costs more than a small simulation."""

    def __getattr__(self, name: str) -> Any:
        import numpy

        globals()["np"] = numpy
        return getattr(numpy, name)


if not TYPE_CHECKING:
    np = _Numpy()

__all__ = [
    "CurvePoint",
    "Generated",
    "MissRatioCurve",
    "PolicyInfo",
    "ReadStats",
    "ReplayResult",
    "ReuseDistance",
    "RunResult",
    "TraceInfo",
    "VmemsimError",
    "convert",
    "generate",
    "generator_kinds",
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
    "trace_formats",
    "trace_info",
    "workload_kinds",
    "write_trace",
]

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
    ``policy_counters`` the policy's own. ``series`` (when the replay was given
    ``sample_every``) holds the cumulative counters after every ``sample_every`` accesses and
    at the end of the trace: one dict per sample with the same keys as ``stats``, the last
    equal to ``stats``; an empty tuple otherwise. ``warmup`` is the accesses replayed before
    counting started (:func:`replay`'s ``warmup``): ``stats``, ``series`` and the headline
    numbers cover the accesses after it (``accesses`` counts those), ``policy_counters`` the
    whole run.
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
    #: ``"disk"`` or ``"zram"`` (see :func:`replay`'s ``swap``).
    swap: str = "disk"
    #: ``"6.8"`` or ``"6.1"`` (see :func:`replay`'s ``kernel``).
    kernel: str = "6.8"
    #: zram's pool charged to memory: ``{"class": ..., "params": {...}}``, else None.
    zram_pool: Optional[Dict[str, Any]] = None
    policy_counters: Dict[str, int] = field(default_factory=dict)
    options: Dict[str, str] = field(default_factory=dict)
    series: Tuple[Dict[str, int], ...] = ()
    warmup: int = 0

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
            swap=str(raw.get("swap", "disk")),
            kernel=str(raw.get("kernel", "6.8")),
            zram_pool=raw.get("zram_pool"),
            policy_counters=dict(raw["policy_counters"]),
            options=dict(raw["options"]),
            series=tuple(dict(x) for x in raw.get("series", ())),
            warmup=int(raw.get("warmup", 0)),
        )

    def to_dict(self) -> Dict[str, Any]:
        """Plain JSON-ready data: the headline numbers at top level, everything else nested
        (``series``, a list of dicts, only when there is one)."""
        out: Dict[str, Any] = {
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
            "warmup": self.warmup,
            "page_cluster": self.page_cluster,
            "swap": self.swap,
            "kernel": self.kernel,
            "zram_pool": self.zram_pool,
            "watermarks": {
                "min": self.watermarks[0],
                "low": self.watermarks[1],
                "high": self.watermarks[2],
            },
            "options": dict(self.options),
            "stats": dict(self.stats),
            "policy_counters": dict(self.policy_counters),
        }
        if self.series:
            out["series"] = [dict(x) for x in self.series]
        return out

    def series_frame(self) -> "Any":
        """The time series as a ``pandas.DataFrame``: one row per sample, one column per
        counter (``accesses`` first; cumulative values). No rows without a series."""
        pd = _pandas("ReplayResult.series_frame()")
        columns = list(self.series[0] if self.series else self.stats)
        return pd.DataFrame([dict(x) for x in self.series], columns=columns)

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
            "warmup": self.warmup,
            "page_cluster": self.page_cluster,
            "swap": self.swap,
            "kernel": self.kernel,
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
    if isinstance(frames, bool) or not isinstance(frames, (numbers.Integral, str)):
        raise VmemsimError(
            f"frames: expected a whole number or a percentage string like '25%', got {frames!r}"
        )
    return str(frames)


def _seed_arg(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise VmemsimError(f"seed: expected an integer, got {seed!r}")
    if not 0 <= int(seed) < 2**64:
        raise VmemsimError(f"seed: must be 0..2^64-1, got {seed}")
    return int(seed)


def _sample_every_arg(v: Any) -> int:
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 0 <= int(v) < 2**64:
        raise VmemsimError(
            f"sample_every: expected a whole number of accesses, at least 0 (0 = no series), "
            f"got {v!r}"
        )
    return int(v)


def _warmup_arg(v: Any) -> int:
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 0 <= int(v) < 2**64:
        raise VmemsimError(
            f"warmup: expected a whole number of accesses, at least 0 (0 = none), got {v!r}"
        )
    return int(v)


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


#: Swap devices of an untimed replay: what decides counters, not time. ``zram`` takes the
#: parameters of ``vmemsim run --device zram:key=value,...`` (its compression ratios and disk
#: size decide its pool).
REPLAY_SWAPS = ("disk", "zram", "hdd")
#: Content classes of a trace's pages for zram's compressed sizes (as ``custom`` workloads'
#: ``class=``): ``zero`` same-filled, ``text`` and ``numeric`` compressible by the zram ratios,
#: ``random`` incompressible, ``sparse`` zeros but for one 8-byte word (41 bytes in LZO-RLE).
CONTENT_CLASSES = ("zero", "text", "numeric", "random", "sparse")
#: Linux versions whose reclaim rules the kernel policies can follow where they differ
#: (docs/kernel-6.1-vs-6.8.md); the models follow 6.8 by default.
KERNEL_VERSIONS = ("6.8", "6.1")


def _bool_arg(name: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise VmemsimError(f"{name}: expected True or False, got {v!r}")
    return v


def _charge(charge_device_ram: bool, cgroup: Optional[bool]) -> bool:
    """Whether zram's pool counts against ``frames``. ``cgroup=True`` (the CLI's ``--cgroup``:
    frames is a memory cgroup limit, which zsmalloc's pages are not charged to) is the same as
    ``charge_device_ram=False`` (the older name, kept); giving both, they must agree. (Replays;
    a timed run's is the core's ``RunConfig::charges_device_ram``, the same rule.)"""
    if cgroup is None:
        return bool(charge_device_ram)
    if not isinstance(cgroup, bool):
        raise VmemsimError(f"cgroup: expected True or False, got {cgroup!r}")
    if charge_device_ram is not True and bool(charge_device_ram) == cgroup:
        raise VmemsimError("cgroup and charge_device_ram disagree (cgroup=True is "
                           "charge_device_ram=False); give one")
    return not cgroup


def _hdd_slots(swap: str) -> int:
    """Usable slots of ``hdd[:size=SIZE]`` (mkswap's ``last_page``: the size in pages less
    the header page), as the core's ``hdd`` device reads its spec (a timed run's
    ``--device hdd:size=SIZE`` is the same disk); its other keys (the disk's timing) mean
    nothing to an untimed replay."""
    slots = _native.rotational_slots(swap)
    if slots is None:
        raise VmemsimError(f"swap: {swap!r} is not a rotating disk (hdd[:size=SIZE])")
    return slots


def _zones_arg(zones: Optional[Sequence[Mapping[str, Any]]]) -> List[Dict[str, Any]]:
    """The machine's zones, lowest first, as the core's ``zones`` key takes them: each a
    mapping of ``frames`` and optionally ``name``, ``watermarks`` ``(min, low, high)`` and
    ``lowmem_reserve``. The core checks the values and names what is wrong."""
    if zones is None:
        return []
    if isinstance(zones, (str, bytes)) or not isinstance(zones, Sequence):
        raise VmemsimError(f"zones: expected a list of zones (mappings), got {zones!r}")
    out: List[Dict[str, Any]] = []
    for i, z in enumerate(zones):
        if not isinstance(z, Mapping):
            raise VmemsimError(f"zones[{i}]: expected a mapping with frames, got {z!r}")
        d = dict(z)
        if d.get("watermarks") is not None:
            d["watermarks"] = [_int_arg(f"zones[{i}].watermarks", x) for x in d["watermarks"]]
        out.append(d)
    return out


def _machine_arg(
    page_cluster: Optional[int],
    watermarks: Optional[Sequence[int]],
    swappiness: int,
    check_invariants: bool,
    swap: str = "disk",
    kernel: str = "6.8",
    content_class: str = "numeric",
    charge_device_ram: bool = True,
) -> Dict[str, Any]:
    """The machine's keys of the core's ReplayConfig (:data:`REPLAY_DEFAULTS`): ``swap`` and
    ``content_class`` become ``swap_sync_io``, ``swap_rotational``, ``swap_max_pages`` and
    ``zram_pool``. The
    ranges (swappiness, page_cluster, watermarks, the kernel version, zram's parameters) are
    the core's to check, in errors naming the key."""
    if not isinstance(swap, str):
        raise VmemsimError(f"swap: expected one of {', '.join(REPLAY_SWAPS)}, got {swap!r}")
    kind, _, params = (x.strip() for x in swap.partition(":"))
    kind = kind.lower()
    disk_pages = None
    if kind == "disk" and params:
        # disk:max_pages=N, the disk's largest request (the devices' key).
        key, _, value = (x.strip() for x in params.partition("="))
        if key != "max_pages" or not value:
            raise VmemsimError(f"swap: disk takes only max_pages=N, got {swap!r}")
        try:
            disk_pages = int(value)
        except ValueError:
            raise VmemsimError(f"swap: disk max_pages must be a whole number, got {value!r}") from None
    if kind not in REPLAY_SWAPS:
        raise VmemsimError(
            f"swap: expected disk[:max_pages=N], hdd[:size=SIZE,...] or zram[:key=value,...], "
            f"got {swap!r}"
        )
    if content_class not in CONTENT_CLASSES:
        raise VmemsimError(
            f"content_class: expected one of {', '.join(CONTENT_CLASSES)}, got {content_class!r}"
        )
    m: Dict[str, Any] = {
        "swappiness": _int_arg("swappiness", swappiness),
        "check_invariants": bool(check_invariants),
        "kernel": kernel,
        "page_cluster": None if page_cluster is None else _int_arg("page_cluster", page_cluster),
    }
    if kind == "hdd":
        m["swap_rotational"] = _hdd_slots(swap)
        m["swap_max_pages"] = _native.swap_max_pages(swap)
    if disk_pages is not None:
        m["swap_max_pages"] = disk_pages
    if kind == "zram":
        m["swap_sync_io"] = True
        if charge_device_ram:
            m["zram_pool"] = {"class": content_class, "device": swap.strip()}
    if watermarks is not None:
        w = tuple(watermarks)
        if len(w) != 3:
            raise VmemsimError(f"watermarks: expected (min, low, high), got {watermarks!r}")
        m["watermarks"] = [_int_arg("watermarks", x) for x in w]
    return m


# ---------------------------------------------------------------- trace sources

#: A string trace starting with this prefix is a generator spec, not a path.
GEN_PREFIX = "gen:"


@dataclass(frozen=True)
class Generated:
    """A seeded synthetic trace from the core's generators (see :func:`generate`); usable
    wherever a trace is accepted. Nothing is generated until it is used: each use replays the
    same accesses (a pure function of spec and seed)."""

    #: The spec as given, without the ``gen:`` prefix.
    spec: str
    #: Seed for the parts of the spec that give none.
    seed: int
    #: ``gen:<canonical spec with its seed>``: the ``trace`` name in results; passing it
    #: back as a trace gives the same accesses.
    name: str
    #: Number of accesses it yields.
    accesses: int

    def __len__(self) -> int:
        return self.accesses

    def to_numpy(self) -> np.ndarray:
        """The page numbers, as a ``uint64`` array."""
        return load_trace(self)[0]

    def to_arrays(self) -> Tuple[np.ndarray, np.ndarray]:
        """``(pages, writes)``: ``uint64`` page numbers and a ``bool`` write mask."""
        return load_trace(self)


def generate(spec: str, seed: int = 0) -> Generated:
    """A generator trace from a spec such as ``"zipf:pages=1000,alpha=0.9,n=10000"`` (a
    leading ``gen:`` is accepted). The grammar and kinds: ``vmemsim generate --help`` or
    :func:`generator_kinds`. ``seed`` seeds every part whose spec gives no ``seed=``.
    Raises ``VmemsimError`` naming the key (``zipf.alpha``) for a bad spec."""
    if not isinstance(spec, str):
        raise VmemsimError(f"generator: expected a spec string, got {spec!r}")
    seed_i = _seed_arg(seed)
    body = spec.strip()
    if body.startswith(GEN_PREFIX):
        body = body[len(GEN_PREFIX):]
    name, n = _native.check_generator(body, seed_i)
    return Generated(spec=body, seed=seed_i, name=name, accesses=n)


def generator_kinds() -> List[Tuple[str, str]]:
    """Every generator kind as ``(name, description of its keys)``."""
    return list(_native.generator_kinds())


#: What the functions of this module accept as a trace: a path, a ``"gen:SPEC"`` string, a
#: :class:`Generated`, or page numbers in memory.
Trace = Union[str, "os.PathLike[str]", "np.ndarray", Sequence[int], "Generated"]


def _source_arg(
    trace: Any,
    *,
    format: Optional[str] = None,
    page_size: int = 4096,
    addresses: bool = False,
    csv: Optional[str] = None,
    seed: int = 0,
    writes: Any = None,
    gup: Any = None,
) -> Dict[str, Any]:
    """The source dict of the binding (see ``crates/vmemsim-py``)."""
    is_file = isinstance(trace, os.PathLike) or (
        isinstance(trace, str) and not trace.startswith(GEN_PREFIX)
    )
    if not is_file:
        for key, val, default in (
            ("format", format, None),
            ("page_size", page_size, 4096),
            ("addresses", addresses, False),
            ("csv", csv, None),
        ):
            if val != default:
                raise VmemsimError(f"{key}: only for trace files, not generators or arrays")
    if gup is not None and (is_file or isinstance(trace, Generated)
                            or (isinstance(trace, str) and trace.startswith(GEN_PREFIX))):
        raise VmemsimError("gup: only for in-memory traces")
    if isinstance(trace, Generated):
        if writes is not None:
            raise VmemsimError("writes: only for in-memory traces (a generator has its own)")
        return {"gen": trace.spec, "seed": trace.seed}
    if isinstance(trace, str) and trace.startswith(GEN_PREFIX):
        if writes is not None:
            raise VmemsimError("writes: only for in-memory traces (a generator has its own)")
        return {"gen": trace[len(GEN_PREFIX):], "seed": _seed_arg(seed)}
    if is_file:
        if writes is not None:
            raise VmemsimError("writes: only for in-memory traces (a file says R/W itself)")
        if isinstance(page_size, bool) or not isinstance(page_size, numbers.Integral):
            raise VmemsimError(f"page_size: expected an integer, got {page_size!r}")
        if csv is not None and not isinstance(csv, str):
            if isinstance(csv, Mapping):
                csv = ",".join(f"{k}={v}" for k, v in csv.items())
            else:
                raise VmemsimError(f"csv: expected 'column=...,op=...' or a dict, got {csv!r}")
        return {
            "path": os.fsdecode(os.fspath(trace)),
            "format": format,
            "page_size": int(page_size),
            "addresses": bool(addresses),
            "csv": csv,
        }
    src: Dict[str, Any] = {"pages": _pages_arg(trace)}
    if writes is not None:
        src["writes"] = np.ascontiguousarray(np.asarray(writes), dtype=np.bool_)
    if gup is not None:
        src["gup"] = np.ascontiguousarray(np.asarray(gup), dtype=np.bool_)
    return src


# ---------------------------------------------------------------- replay


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
    page_size: int = 4096,
    addresses: bool = False,
    csv: Optional[Union[str, Mapping[str, str]]] = None,
    sample_every: Optional[int] = None,
    swap: str = "disk",
    kernel: str = "6.8",
    content_class: str = "numeric",
    charge_device_ram: bool = True,
    warmup: Optional[int] = None,
    cgroup: Optional[bool] = None,
    gup: Optional[Union[np.ndarray, Sequence[bool]]] = None,
    read_ahead_kb: int = 128,
    zones: Optional[Sequence[Mapping[str, Any]]] = None,
    watermark_boost_factor: int = 15000,
) -> ReplayResult:
    """Replay ``trace`` through ``policy`` on a machine of ``frames`` 4 KiB frames.

    ``trace`` is a path to a trace file, a generator (``vmemsim.generate(spec)`` or a
    ``"gen:SPEC"`` string, seeded by ``seed``) or page numbers in memory (a numpy array or a
    sequence of ints; ``writes`` optionally marks writes). For files, ``format`` names the
    format (``None`` detects it), ``page_size`` and ``addresses`` say how to read values (byte
    addresses are divided by the page size) and ``csv`` maps CSV columns
    (``"column=addr,op=type"``). ``frames`` is a count or a percentage of the trace's distinct
    pages (``"25%"``). ``options`` are the policy's ``key=value`` knobs; an unknown key is an
    error. ``page_cluster`` (``vm.page-cluster``), ``watermarks`` ``(min, low, high)`` and
    ``swappiness`` configure the machine (``None`` = the kernel's defaults for kernel
    policies, none for demand policies). ``progress(done, total)`` is called a few times a
    second. ``sample_every`` (accesses; ``None`` or 0 = none) records the counters along the
    run into ``ReplayResult.series``; a run may record at most a million samples.
    ``swap`` is ``"disk"`` (swap cache and readahead; a non-rotational device's slot
    allocator), ``"hdd:size=SIZE"`` (the same on a rotational device of SIZE, default 4 GiB,
    whose slots come from the kernel's rotational allocator and swap slots cache; QEMU's
    virtio-blk is one) or ``"zram"``: a synchronous device. A disk's ``max_pages``
    (``"disk:max_pages=254"``, ``"hdd:size=1GiB,max_pages=254"``; ``hdd``'s default 168, a
    plain ``disk``'s the block layer's 128) is its largest request, up to which the plug of a
    reclaim pass merges its contiguous swap writes (MG-LRU: a write the plug dispatches
    completes within the pass). zram is synchronous
    (``SWP_SYNCHRONOUS_IO``): its swap-ins of pages with one reference skip the swap cache
    and readahead and free their slot (``do_swap_page``). zram's compressed pool is memory of
    the machine: every swapped-out page takes the zsmalloc object its compressed size needs
    (from ``content_class``, one of :data:`CONTENT_CLASSES`, and the ratios of
    ``"zram:text_ratio=3,numeric_ratio=2"``), and the pool's pages are taken from the free
    frames; ``cgroup=True`` (``--cgroup``; the older ``charge_device_ram=False``) leaves it out
    (frames is a memory cgroup's limit, which
    zram's allocations are not charged to). ``stats["zram_mem_used_max"]`` is the pool's peak
    in bytes, as zram's ``mm_stat`` reports it. ``warmup`` (accesses; ``None`` or 0 = none)
    replays the first ``warmup`` accesses before counting starts: the result's counters (but
    the peaks ``peak_resident`` and ``zram_mem_used_max``) and ``series`` cover only the rest;
    a warm-up of the whole trace, leaving nothing to count, is an error.
    ``gup`` (in-memory traces only) marks the accesses the kernel's ``get_user_pages`` makes
    for the program rather than its CPU, as ``O_DIRECT`` I/O into a buffer does: each run of
    consecutive marked accesses is one call, whose lockless walk pins present (and, for
    writes, writable) pages untouched, and whose slow path, from the first page it cannot
    pin on, faults pages in and marks every page accessed (``mark_page_accessed``);
    ``stats["gup_pages"]`` and ``stats["gup_touched"]`` count them.
    ``zones`` splits the machine into the kernel's zones, lowest first (ZONE_DMA, ZONE_DMA32,
    ...): a list of mappings with ``frames`` (summing to ``frames``) and optionally ``name``,
    ``watermarks`` ``(min, low, high)`` and ``lowmem_reserve`` (unset: derived as Linux does);
    the allocator falls back from the highest zone by watermark and reserve, kswapd stops
    when one zone is balanced, and MG-LRU keeps its lists per zone (docs/models.md, "Zones").
    It replaces ``watermarks``. A zone's ``pagetypes`` (``{"blocks": [unmovable, movable,
    reclaimable], "free": [[chunks of order 0..10] per type]}``, /proc/pagetypeinfo's
    tables) give it the buddy allocator's migratetypes: an allocation that falls back to
    another type's free list boosts the zone's watermarks by ``watermark_boost_factor``
    (``vm.watermark_boost_factor``, 1/10,000 of its high watermark, at least 512 pages; 0 =
    off) and wakes kswapd for that zone (docs/models.md, "Watermark boost").

    The file I/O records of a recorded trace (``read``, ``write``, ``pread64``,
    ``pwrite64``, ``fsync``, ``fadvise64``, ``ftruncate``, ``unlink``, ``read_direct``/``write_direct`` of
    ``O_DIRECT`` files; MSR/SNIA imports) go through the page cache, with readahead of at most
    ``read_ahead_kb`` KiB (the files' device's ``read_ahead_kb``; 0 = none): ``stats`` counts
    ``file_io``, ``pgpgin``/``pgpgout`` (KiB), ``nr_file_pages``, ``nr_dirty``,
    ``workingset_refault_file``; ``mmap`` records of files map the page cache (``file_mmaps``,
    ``nr_mapped``, ``pgfault``, ``major_faults``).
    MG-LRU and ``opt`` do not model file pages yet: such a trace under them is an error.

    Raises ``VmemsimError`` (a ``ValueError``) with a one-line message on any bad input.
    """
    frames_s = _frames_arg(frames)
    seed_i = _seed_arg(seed)
    every = _sample_every_arg(sample_every)
    warm = _warmup_arg(warmup)
    opts = _options_arg(options)
    machine = _machine_arg(
        page_cluster, watermarks, swappiness, check_invariants, swap, kernel, content_class,
        _charge(charge_device_ram, cgroup),
    )
    if not isinstance(policy, str):
        raise VmemsimError(f"policy: expected a policy name, got {policy!r}")
    src = _source_arg(
        trace, format=format, page_size=page_size, addresses=addresses, csv=csv, seed=seed_i,
        writes=writes, gup=gup,
    )
    # The core's ReplayConfig (REPLAY_DEFAULTS): its build() checks the machine's ranges and
    # the policy's options before the trace is read, and resolves a percentage of frames.
    config: Dict[str, Any] = {
        "policy": policy, "frames": frames_s, "seed": seed_i, "options": opts, **machine,
        "sample_every": every, "warmup": warm, "read_ahead_kb": read_ahead_kb,
        "zones": _zones_arg(zones),
        "watermark_boost_factor": _count_arg("watermark_boost_factor", watermark_boost_factor,
                                             lo=0),
    }
    out = _native.replay(src, json.dumps(config), progress)
    return ReplayResult.from_json(out)


# ---------------------------------------------------------------- miss-ratio curves


@dataclass(frozen=True)
class CurvePoint:
    """Misses (cold misses included) with ``frames`` frames of memory."""

    frames: int
    misses: int
    miss_ratio: float


@dataclass(frozen=True)
class MissRatioCurve:
    """Misses against memory size for one policy on one trace.

    ``method`` says how it was computed: ``exact-lru`` (one pass of LRU stack distances;
    equal to replaying ``lru`` at each size), ``shards-lru`` (SHARDS spatial sampling at
    ``sampling_rate``, an approximation) or ``replay`` (one full replay per size).
    ``distinct_pages`` is exact when the method counted them, else ``None``.
    """

    policy: str
    method: str
    trace: str
    seed: int
    version: str
    accesses: int
    sampling_rate: float
    distinct_pages: Optional[int]
    workers: int
    points: Tuple[CurvePoint, ...]

    @property
    def frames(self) -> List[int]:
        return [p.frames for p in self.points]

    @property
    def misses(self) -> List[int]:
        return [p.misses for p in self.points]

    @property
    def miss_ratios(self) -> List[float]:
        return [p.miss_ratio for p in self.points]

    @classmethod
    def from_json(cls, text: str) -> "MissRatioCurve":
        raw = json.loads(text)
        return cls(
            policy=raw["policy"],
            method=raw["method"],
            trace=raw["trace"],
            seed=int(raw["seed"]),
            version=raw["version"],
            accesses=int(raw["accesses"]),
            sampling_rate=float(raw["sampling_rate"]),
            distinct_pages=None if raw["distinct_pages"] is None else int(raw["distinct_pages"]),
            workers=int(raw["workers"]),
            points=tuple(
                CurvePoint(int(p["frames"]), int(p["misses"]), float(p["miss_ratio"]))
                for p in raw["points"]
            ),
        )

    def to_dict(self) -> Dict[str, Any]:
        """The CLI's JSON: the configuration, then ``points`` as a list of dicts."""
        return {
            "policy": self.policy,
            "method": self.method,
            "trace": self.trace,
            "seed": self.seed,
            "version": self.version,
            "accesses": self.accesses,
            "distinct_pages": self.distinct_pages,
            "sampling_rate": self.sampling_rate,
            "workers": self.workers,
            "points": [dataclasses.asdict(p) for p in self.points],
        }

    def to_pandas(self) -> "Any":
        """A ``pandas.DataFrame``, one row per size: ``frames``, ``misses``, ``miss_ratio``,
        then ``policy``, ``method``, ``trace``, ``seed``."""
        pd = _pandas("MissRatioCurve.to_pandas()")
        return pd.DataFrame(
            {
                "frames": self.frames,
                "misses": self.misses,
                "miss_ratio": self.miss_ratios,
                "policy": [self.policy] * len(self.points),
                "method": [self.method] * len(self.points),
                "trace": [self.trace] * len(self.points),
                "seed": [self.seed] * len(self.points),
            }
        )


def _pandas(what: str) -> Any:
    """pandas, or an ImportError saying that ``what`` (a method) needs it."""
    try:
        import pandas as pd
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(f"{what} needs pandas: pip install 'vmemsim[pandas]'") from e
    return pd


def _int_arg(key: str, v: Any) -> int:
    """A whole number (its range is the core's to check)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise VmemsimError(f"{key}: expected an integer, got {v!r}")
    return int(v)


def _device_arg(key: str, v: Any) -> Optional[str]:
    if v is not None and not isinstance(v, str):
        raise VmemsimError(f"{key}: expected a device spec string, got {v!r}")
    return v


def _table_arg(key: str, v: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """A table of settings, passed on to the core (which names an unknown key)."""
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise VmemsimError(f"{key}: expected a table of settings, got {v!r}")
    return dict(v)


def _count_arg(key: str, v: Any, lo: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or int(v) < lo:
        raise VmemsimError(f"{key}: expected a whole number of at least {lo}, got {v!r}")
    return int(v)


def mrc(
    trace: Trace,
    policy: str = "lru",
    sizes: Optional[Sequence[int]] = None,
    points: Optional[int] = None,
    shards: Optional[float] = None,
    seed: int = 0,
    format: Optional[str] = None,
    page_size: int = 4096,
    addresses: bool = False,
    csv: Optional[Union[str, Mapping[str, str]]] = None,
    options: Optional[Mapping[str, Any]] = None,
    page_cluster: Optional[int] = None,
    watermarks: Optional[Sequence[int]] = None,
    swappiness: int = 60,
    workers: Optional[int] = None,
    progress: Optional[ProgressFn] = None,
    writes: Optional[Union[np.ndarray, Sequence[bool]]] = None,
    check_invariants: bool = False,
) -> MissRatioCurve:
    """The miss-ratio curve of ``policy`` on ``trace`` (any trace :func:`replay` accepts).

    Sizes: ``sizes`` (frames), or ``points`` sizes spaced on a log scale from 1 to the
    trace's distinct pages (default 20). For ``lru`` without options or swap readahead the
    curve is exact from one pass of stack distances (Mattson et al. 1970), or approximated by
    SHARDS sampling at rate ``shards`` (Waldspurger et al., FAST'15); any other policy is
    replayed once per size, in parallel on ``workers`` threads (default: one per core).
    """
    if not isinstance(policy, str):
        raise VmemsimError(f"policy: expected a policy name, got {policy!r}")
    seed_i = _seed_arg(seed)
    sizes_l: Optional[List[int]] = None
    if sizes is not None:
        if isinstance(sizes, (str, bytes)):
            raise VmemsimError(f"sizes: expected a sequence of frame counts, got {sizes!r}")
        sizes_l = [_count_arg("sizes", s) for s in sizes]
    points_i = None if points is None else _count_arg("points", points)
    workers_i = None if workers is None else _count_arg("workers", workers)
    shards_f = None
    if shards is not None:
        if isinstance(shards, bool) or not isinstance(shards, numbers.Real):
            raise VmemsimError(f"shards: expected a sampling rate in (0, 1], got {shards!r}")
        shards_f = float(shards)
    src = _source_arg(
        trace, format=format, page_size=page_size, addresses=addresses, csv=csv, seed=seed_i,
        writes=writes,
    )
    # The machine every size is replayed on: the core's ReplayConfig, as replay()'s.
    config: Dict[str, Any] = {
        "policy": policy, "seed": seed_i, "options": _options_arg(options),
        **_machine_arg(page_cluster, watermarks, swappiness, check_invariants),
    }
    out = _native.miss_ratio_curve(
        src, json.dumps(config), sizes_l, points_i, shards_f, workers_i, progress,
    )
    return MissRatioCurve.from_json(out)


# ---------------------------------------------------------------- trace files


@dataclass(frozen=True)
class ReuseDistance:
    """Percentiles (nearest rank) of LRU stack distances of re-references, in pages: ``p90``
    frames of LRU memory would serve 90% of the re-references."""

    p50: int
    p90: int
    p99: int
    max: int
    mean: float


@dataclass(frozen=True)
class TraceInfo:
    """A one-pass summary of a trace (``vmemsim trace info``)."""

    trace: str
    page_size: int
    accesses: int
    reads: int
    writes: int
    write_fraction: float
    distinct_pages: int
    footprint_bytes: int
    min_page: Optional[int]
    max_page: Optional[int]
    #: First touches / accesses.
    cold_fraction: float
    #: ``None`` when no page is accessed twice or when not computed (``reuse=False``).
    reuse_distance: Optional[ReuseDistance]

    @classmethod
    def from_json(cls, text: str) -> "TraceInfo":
        raw = json.loads(text)
        rd = raw.pop("reuse_distance")
        return cls(
            reuse_distance=None if rd is None else ReuseDistance(**rd),
            **{f.name: raw[f.name] for f in dataclasses.fields(cls) if f.name in raw},
        )

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


def trace_info(
    trace: Trace,
    reuse: bool = True,
    format: Optional[str] = None,
    page_size: int = 4096,
    addresses: bool = False,
    csv: Optional[Union[str, Mapping[str, str]]] = None,
    seed: int = 0,
    progress: Optional[ProgressFn] = None,
    writes: Optional[Union[np.ndarray, Sequence[bool]]] = None,
) -> TraceInfo:
    """Summarise a trace in one pass: accesses, reads/writes, distinct pages, footprint, page
    range and (unless ``reuse=False``, which is faster) LRU reuse-distance percentiles."""
    src = _source_arg(
        trace, format=format, page_size=page_size, addresses=addresses, csv=csv,
        seed=_seed_arg(seed), writes=writes,
    )
    return TraceInfo.from_json(_native.trace_info(src, bool(reuse), progress))


@dataclass(frozen=True)
class ReadStats:
    """What reading a whole trace cost (``vmemsim trace read``)."""

    accesses: int
    seconds: float

    @property
    def accesses_per_second(self) -> float:
        return self.accesses / self.seconds if self.seconds > 0 else float("inf")


def read_trace(
    trace: Trace,
    format: Optional[str] = None,
    page_size: int = 4096,
    addresses: bool = False,
    csv: Optional[Union[str, Mapping[str, str]]] = None,
    seed: int = 0,
    progress: Optional[ProgressFn] = None,
) -> ReadStats:
    """Read every access of ``trace`` and drop it: the cost of reading alone."""
    src = _source_arg(
        trace, format=format, page_size=page_size, addresses=addresses, csv=csv,
        seed=_seed_arg(seed),
    )
    n, secs = _native.read_trace(src, progress)
    return ReadStats(int(n), float(secs))


def load_trace(
    trace: Trace,
    format: Optional[str] = None,
    page_size: int = 4096,
    addresses: bool = False,
    csv: Optional[Union[str, Mapping[str, str]]] = None,
    seed: int = 0,
    progress: Optional[ProgressFn] = None,
) -> Tuple[np.ndarray, np.ndarray]:
    """Every access of ``trace`` in memory: ``(pages, writes)`` as ``uint64`` and ``bool``
    numpy arrays."""
    src = _source_arg(
        trace, format=format, page_size=page_size, addresses=addresses, csv=csv,
        seed=_seed_arg(seed),
    )
    return _native.load_trace(src, progress)


#: Output format by file-name ending (lower case), for :func:`output_format`.
_EXTENSIONS = (
    (".vmt", "native"),
    (".oraclegeneral", "oracle-general"),
    (".oraclegeneral.bin", "oracle-general"),
    (".bin", "oracle-general"),
    (".csv", "csv"),
    (".txt", "text"),
)


def output_format(path: Union[str, "os.PathLike[str]"], default: str = "text") -> str:
    """The format a trace written to ``path`` gets when none is named: ``.vmt`` native,
    ``.oracleGeneral`` (or ``.bin``) oracle-general, ``.csv`` csv, ``.txt`` text, anything
    else ``default``. The same endings are what format detection reads back."""
    name = os.path.basename(os.fsdecode(os.fspath(path))).lower()
    for ext, fmt in _EXTENSIONS:
        if name.endswith(ext):
            return fmt
    return default


def _write(src: Dict[str, Any], out: str, fmt: str, progress: Optional[ProgressFn]) -> int:
    """Write ``src`` to ``out``; a failed write removes what it created."""
    existed = os.path.lexists(out)
    if src.get("path") is not None and existed:
        try:
            if os.path.samefile(src["path"], out):
                raise VmemsimError(f"{out}: the output is the input trace; give another path")
        except OSError:
            pass
    try:
        return int(_native.write_trace(src, out, fmt, progress))
    except BaseException:
        if not existed:
            try:
                os.remove(out)
            except OSError:
                pass
        raise


def convert(
    src: Trace,
    dst: Union[str, "os.PathLike[str]"],
    from_format: Optional[str] = None,
    to_format: Optional[str] = None,
    page_size: int = 4096,
    addresses: bool = False,
    csv: Optional[Union[str, Mapping[str, str]]] = None,
    seed: int = 0,
    progress: Optional[ProgressFn] = None,
    ifetch: bool = False,
) -> int:
    """Copy the trace ``src`` (any trace: a file read with ``from_format`` and the reader
    options, a generator, page numbers) into a new file ``dst`` of ``to_format`` (default: by
    ``dst``'s ending, see :func:`output_format`). Returns the accesses written.
    oracle-general has no operation field: writes become reads.

    ``from_format`` ``msr`` (or ``snia``) or ``lackey`` imports a public format instead
    (:func:`import_trace`; ``ifetch`` is its option): the output is always a recorded trace
    (native version 2), and the return value the records written (access and file I/O)."""
    if isinstance(from_format, str) and from_format.strip().lower() in IMPORT_NAMES:
        if to_format is not None and to_format.strip().lower() not in ("native", "vmt"):
            raise VmemsimError(
                f"format: an import from {from_format} writes a recorded trace (native); "
                f"convert that to {to_format} afterwards"
            )
        for key, val, default in (("addresses", addresses, False), ("csv", csv, None)):
            if val != default:
                raise VmemsimError(f"{key}: not an option of an import from {from_format}")
        st = import_trace(src, dst, from_format, page_size=page_size, ifetch=ifetch)
        return st["accesses"] + st["io_records"]
    if ifetch:
        raise VmemsimError("ifetch: only for an import from lackey")
    source = _source_arg(
        src, format=from_format, page_size=page_size, addresses=addresses, csv=csv,
        seed=_seed_arg(seed),
    )
    out = os.fsdecode(os.fspath(dst))
    return _write(source, out, to_format or output_format(out), progress)


def import_formats() -> List[Tuple[str, str]]:
    """The public formats :func:`import_trace` reads, as ``(name, description)``."""
    return [(str(n), str(d)) for n, d in _native.import_formats()]


#: Names ``convert(from_format=...)`` hands to :func:`import_trace` (``snia`` = ``msr``).
IMPORT_NAMES = ("msr", "snia", "lackey")


def import_trace(
    src: Union[str, "os.PathLike[str]"],
    dst: Union[str, "os.PathLike[str]"],
    format: str,
    page_size: int = 4096,
    ifetch: bool = False,
) -> Dict[str, Any]:
    """Import the file ``src`` in a public format into a new recorded trace (native version
    2) at ``dst``, whatever ``dst``'s ending:

    - ``msr``: block I/O CSV in the MSR Cambridge / SNIA layout (timestamp, host, disk, type,
      offset, size, response time): one file per (host, disk), one ``pread64``/``pwrite64``
      file I/O record per row, stamps in ns since the first row; no access records.
    - ``lackey``: ``valgrind --tool=lackey --trace-mem=yes`` output: access records of thread
      1 folded per page (``page_size``), stamps in instructions; ``ifetch`` keeps the ``I``
      lines as fetch records.

    A name ending in ``.gz`` is decompressed with ``gzip -dc``. Returns the counts (``lines``,
    ``records``, ``accesses``, ``reads``, ``writes``, ``ifetches``, ``io_records``, ``files``,
    ``io_bytes``, ``out_of_order``, ``instructions``). Details: ``docs/recording.md``."""
    if not isinstance(src, (str, os.PathLike)) or (
        isinstance(src, str) and src.startswith(GEN_PREFIX)
    ):
        raise VmemsimError(f"trace: an import reads a file, got {src!r}")
    if not isinstance(format, str):
        raise VmemsimError(f"format: expected a name, got {format!r}")
    if isinstance(page_size, bool) or not isinstance(page_size, numbers.Integral):
        raise VmemsimError(f"page_size: expected an integer, got {page_size!r}")
    if page_size <= 0:
        raise VmemsimError(f"page_size: {page_size} is not a power of two of at least 2")
    path = os.fsdecode(os.fspath(src))
    out = os.fsdecode(os.fspath(dst))
    existed = os.path.lexists(out)
    if existed:
        try:
            if os.path.samefile(path, out):
                raise VmemsimError(f"{out}: the output is the input trace; give another path")
        except OSError:
            pass
    try:
        return dict(_native.import_trace(path, out, format, int(page_size), bool(ifetch)))
    except BaseException:
        if not existed:
            try:
                os.remove(out)
            except OSError:
                pass
        raise


def write_trace(
    trace: Union[np.ndarray, Sequence[int], Generated],
    path: Union[str, "os.PathLike[str]"],
    format: Optional[str] = None,
    writes: Optional[Union[np.ndarray, Sequence[bool]]] = None,
    progress: Optional[ProgressFn] = None,
) -> int:
    """Write page numbers in memory (``writes`` marks writes) or a generator to a trace file
    of ``format`` (default: by ``path``'s ending, see :func:`output_format`). Returns the
    accesses written."""
    if isinstance(trace, (str, os.PathLike)) and not (
        isinstance(trace, str) and trace.startswith(GEN_PREFIX)
    ):
        raise VmemsimError("trace: write_trace takes arrays or generators; use convert for files")
    out = os.fsdecode(os.fspath(path))
    return _write(_source_arg(trace, writes=writes), out, format or output_format(out), progress)


# ---------------------------------------------------------------- timed runs


class RunResult:
    """What a run produced: the one result type of the one machine (the core's
    ``RunResult``), for a native run (:func:`run`, ``vmemsim run``; ``paging`` is ``native``
    and the host fields are empty) and for VMs (:func:`run_vm`, ``vmemsim vm``).

    The same thing has the same name in both. ``runtime_ns`` is when the last application
    thread (vCPU) finished; ``cpu`` says where CPU time went (application, direct reclaim,
    kswapd, aging walks, rmap scanning, the device, I/O and run-queue waits); ``threads``
    each thread's (vCPU's) times and counts; ``stats`` are the counters of the kernel the
    workload runs under (natively the machine's, in a VM the guest's) and ``vmstat`` the
    same under their ``/proc/vmstat`` names (``pgfault``, ``pgmajfault``, ``pswpin``,
    ``pswpout``, ``pgscan_kswapd``, ``pgscan_direct``, ``pgsteal_*``,
    ``workingset_refault_*``, ...); ``host_stats`` and ``host_vmstat`` the host's in a VM;
    ``device_stats`` and ``host_device_stats`` their swap devices' counters (``None`` for a
    VM side with the flat major-fault cost); ``latency`` has per-request-kind percentiles
    (``read``, ``update``, ``insert``, ``all``: ``count``, ``mean``, ``p50``, ``p90``,
    ``p99``, ``p999``, ``p9999``, ``max``, in ns) and ``latency_buckets`` the histograms;
    ``translate`` the CPUs' (vCPUs') TLBs and page walks when ``tlb`` is set; ``config`` the
    configuration that was run (with ``seed`` and ``version``: enough to run it again).
    A native run's ``cgroup`` says whether ``frames`` was a memory cgroup limit (zram's pool
    not charged).

    VM runs add their events: ``time`` (where the vCPUs' time went), ``ept_violations``,
    ``exits`` and exits by reason, ``kvm`` (KVM's shadow-MMU statistics under shadow paging:
    ``pf_fixed``, ``mmu_recycled``, ...), ``cr3_loads``, ``shootdown_pages``, process counts,
    the walk grid, ``kvm_folded`` and ``per_vm`` (each VM's own result, as a dict, when
    several VMs share the host); with a balloon device, ``balloon`` (the VM's balloon:
    pages, rounds, OOM outcome, MOM's decisions; ``None`` without) and ``mom`` (the
    manager's counts; ``None`` without). The names of older releases are still read:
    ``guest`` (``stats``), ``host`` (``host_stats``), ``guest_device`` (``device_stats``),
    ``host_device`` (``host_device_stats``), ``latency_by_kind`` (``latency``),
    ``guest_policy`` (``policy``), ``guest_frames`` (``frames``). A VM run's ``latency`` is
    by kind now: its old summary is ``latency["all"]``.
    """

    version: str
    workload: str
    seed: int
    paging: Optional[str]
    policy: str
    host_policy: str
    options: Dict[str, str]
    frames: int
    host_frames: int
    footprint_pages: int
    cpus: int
    slice_ns: int
    device: str
    tlb: bool
    cgroup: bool
    runtime_ns: int
    stats: Dict[str, int]
    vmstat: Dict[str, int]
    host_stats: Dict[str, int]
    host_vmstat: Dict[str, int]
    cpu: Dict[str, int]
    threads: Tuple[Dict[str, int], ...]
    device_stats: Optional[Dict[str, Any]]
    host_device_stats: Optional[Dict[str, Any]]
    file_device_stats: Optional[Dict[str, Any]]
    host_file_device_stats: Optional[Dict[str, Any]]
    double_cached_pages: int
    host_image_pages: int
    swap_pathologies: Dict[str, int]
    cacol: Dict[str, int]
    device_frames_peak: int
    latency: Dict[str, Dict[str, float]]
    latency_buckets: Dict[str, Tuple[Tuple[int, int], ...]]
    policy_counters: Dict[str, int]
    series: Tuple[Dict[str, Any], ...]
    translate: Dict[str, Any]
    config: Dict[str, Any]
    time: Dict[str, int]
    per_vm: List[Dict[str, Any]]
    kvm: Optional[Dict[str, Any]]
    kvm_folded: str
    balloon: Optional[Dict[str, Any]]
    mom: Optional[Dict[str, int]]

    #: The names of older releases, read as the current ones.
    ALIASES = {"guest": "stats", "host": "host_stats", "guest_device": "device_stats",
               "host_device": "host_device_stats", "latency_by_kind": "latency",
               "guest_policy": "policy", "guest_frames": "frames"}

    def __init__(self, d: Mapping[str, Any]) -> None:
        d = dict(d)
        d.setdefault("cgroup", False)
        d.setdefault("config", {})
        # (the core leaves them out of runs without file I/O)
        d.setdefault("file_device_stats", None)
        d.setdefault("host_file_device_stats", None)
        d.setdefault("cacol", {})
        d.setdefault("swap_pathologies", {})
        d.setdefault("per_vm", [])
        # (VM runs with a balloon device, and with MOM, only)
        d.setdefault("balloon", None)
        d.setdefault("mom", None)
        d["threads"] = tuple(dict(t) for t in d.get("threads", ()))
        d["latency"] = {k: dict(v) for k, v in (d.get("latency") or {}).items()}
        d["latency_buckets"] = {k: tuple((int(a), int(b)) for a, b in v)
                                for k, v in (d.get("latency_buckets") or {}).items()}
        # The time series flat: one dict per sample with the time, kswapd's CPU time and
        # the counters.
        d["series"] = tuple(
            {"time_ns": s["time_ns"], "kswapd_ns": s["kswapd_ns"], **s["stats"],
             **({"caches": [dict(c) for c in s["caches"]]} if s.get("caches") else {})}
            if "stats" in s else dict(s)
            for s in d.get("series", ()))
        self.__dict__["_d"] = d

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__.get("_d")
        if d is None:
            raise AttributeError(name)
        if name in d:
            return d[name]
        if name in RunResult.ALIASES:
            return d[RunResult.ALIASES[name]]
        raise AttributeError(f"RunResult has no field {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a RunResult is read-only")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunResult) and self._d == other._d

    def __repr__(self) -> str:
        return (f"RunResult(workload={self.workload!r}, paging={self.paging!r}, "
                f"policy={self.policy!r}, frames={self.frames}, "
                f"runtime_ns={self.runtime_ns}, faults={self.faults})")

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self._d))

    @property
    def runtime_s(self) -> float:
        return self.runtime_ns / 1e9

    @property
    def faults(self) -> int:
        return int(self.stats["faults"])

    @property
    def major_faults(self) -> int:
        return int(self.stats["major_faults"])

    @property
    def refs_per_walk(self) -> float:
        """Memory references per TLB miss (walk references / walks)."""
        t = self.translate
        return t["walk_refs"] / t["walks"] if t.get("walks") else 0.0

    @classmethod
    def from_json(cls, text: str, **extra: Any) -> "RunResult":
        """From the core's JSON, with ``extra`` fields (``cgroup``, ``config``) added."""
        d = json.loads(text)
        d.update(extra)
        return cls(d)

    def to_dict(self) -> Dict[str, Any]:
        d = dict(self._d)
        d["runtime_s"] = self.runtime_s
        if not d["series"]:
            d.pop("series")
        return d


#: The older name of :class:`RunResult` for VM runs: one type now.
VmResult = RunResult


def workload_kinds() -> List[Tuple[str, str]]:
    """Every workload model as ``(name, description)``."""
    return list(_native.workload_kinds())


#: The one cost table (``vmemsim_core::vm::Costs``) with its defaults, for native and VM
#: runs alike: ns per event, ``cpu_ghz`` the clock rate that converts the TLB model's
#: page-walk cycles to ns, ``kvm_work_ns`` KVM's handler work per unit of each kind of work
#: (a list). ``costs=`` of :func:`run` and :func:`run_vm`, ``--cost`` and
#: ``machine.costs.*`` take these keys; a cost only a VM incurs (``exit_ns``, ...) is not
#: incurred natively.
COST_DEFAULTS: Dict[str, Any] = json.loads(_native.cost_defaults())
COST_KEYS = tuple(COST_DEFAULTS)
#: The defaults of a VM run (``vmemsim_core::vm::VmRunConfig``, declared once in the core):
#: :func:`run_vm`'s, ``vmemsim vm``'s and the sweep's ``vm.*`` defaults are these.
VM_DEFAULTS: Dict[str, Any] = json.loads(_native.vm_config_defaults())
#: The defaults of a native timed run (``vmemsim_core::timed::RunConfig``, declared once in
#: the core): :func:`run`'s, ``vmemsim run``'s and the sweep's timed-run defaults are these.
RUN_DEFAULTS: Dict[str, Any] = json.loads(_native.run_config_defaults())
#: The schema of a native timed run's settings (JSON Schema of ``timed::RunConfig``): each
#: key's type, default and documentation as written in the core.
RUN_SCHEMA: Dict[str, Any] = json.loads(_native.run_config_schema())
#: The defaults of a trace replay (``vmemsim_core::replay::ReplayConfig``, declared once in
#: the core): :func:`replay`'s, :func:`mrc`'s, ``vmemsim replay``'s and the sweep's replay
#: defaults are these.
REPLAY_DEFAULTS: Dict[str, Any] = json.loads(_native.replay_config_defaults())
#: The schema of a trace replay's settings (JSON Schema of ``replay::ReplayConfig``): each
#: key's type, default and documentation as written in the core, which ``vmemsim replay
#: --help`` and the sweep's replay keys show (:func:`replay_setting_help`).
REPLAY_SCHEMA: Dict[str, Any] = json.loads(_native.replay_config_schema())
#: The schema of a VM run's settings (JSON Schema of ``VmRunConfig``): each key's type,
#: default and documentation as written in the core, which ``vmemsim vm --help`` and the
#: sweep's ``vm.*`` keys show (:func:`vm_setting_help`).
VM_SCHEMA: Dict[str, Any] = json.loads(_native.vm_config_schema())


def _setting_help(schema: Mapping[str, Any], key: str) -> str:
    # A dotted key is a field of a table (``zram_pool.class``): its schema is a definition,
    # referred to from the table's entry (through ``anyOf`` when the table is optional).
    *tables, last = key.split(".")
    props = schema["properties"]
    for t in tables:
        entry = props[t]
        ref = next(x["$ref"] for x in [entry, *entry.get("anyOf", []), *entry.get("allOf", [])]
                   if "$ref" in x)
        props = schema["definitions"][ref.rsplit("/", 1)[1]]["properties"]
    return " ".join(props[last]["description"].replace("`", "").split())


def setting_choices(schema: Mapping[str, Any], key: str) -> Tuple[str, ...]:
    """The values setting ``key`` of ``schema`` (``RUN_SCHEMA``, ``REPLAY_SCHEMA``,
    ``VM_SCHEMA``) takes, as the core declares them beside its parser (the schema's
    ``enum``): the CLI's choices and the sweep's checks."""
    names = schema["properties"][key].get("enum")
    if not names:
        raise ValueError(f"{key}: the core declares no names for this setting")
    return tuple(names)


def vm_setting_help(key: str) -> str:
    """The documentation of the VM run setting ``key`` (a key of :data:`VM_DEFAULTS`), as
    the core declares it, on one line."""
    return _setting_help(VM_SCHEMA, key)


def run_setting_help(key: str) -> str:
    """The documentation of the native run setting ``key`` (a key of :data:`RUN_DEFAULTS`),
    as the core declares it, on one line."""
    return _setting_help(RUN_SCHEMA, key)


def replay_setting_help(key: str) -> str:
    """The documentation of the replay setting ``key`` (a key of :data:`REPLAY_DEFAULTS`, or
    ``zram_pool.class`` for a table's field), as the core declares it, on one line."""
    return _setting_help(REPLAY_SCHEMA, key)
#: Old names of cost keys, still read.
COST_ALIASES = {"guest_minor_fault_ns": "minor_fault_ns"}


def _costs_arg(costs: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """``costs`` checked against the one cost table: known keys (old names under their new
    ones), whole ns of 0 or more, ``cpu_ghz`` a clock rate above 0, ``kvm_work_ns`` a list
    of one time per kind of KVM work."""
    if costs is None:
        return {}
    if not isinstance(costs, Mapping):
        raise VmemsimError(f"costs: expected a table of key = ns, got {costs!r}")
    c: Dict[str, Any] = {}
    for k, v in costs.items():
        key = COST_ALIASES.get(k, k)
        if key not in COST_DEFAULTS:
            near = difflib.get_close_matches(str(k), COST_KEYS, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise VmemsimError(f"costs.{k}: unknown cost{hint}; known: {', '.join(COST_KEYS)}")
        if key in c:
            raise VmemsimError(f"costs.{k}: given twice (as {key} and its old name {k})")
        if key == "cpu_ghz":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
                raise VmemsimError(f"costs.cpu_ghz: {v!r} is not a clock rate in GHz (above 0)")
            c[key] = float(v)
        elif key == "kvm_work_ns":
            n = len(COST_DEFAULTS[key])
            if (not isinstance(v, (list, tuple)) or len(v) != n
                    or any(isinstance(x, bool) or not isinstance(x, (int, float))
                           or not 0 <= x < math.inf for x in v)):
                raise VmemsimError(f"costs.kvm_work_ns: expected a list of {n} times in ns "
                                   f"(0 or more), one per kind of KVM work, got {v!r}")
            c[key] = [float(x) for x in v]
        else:
            c[key] = _count_arg(f"costs.{k}", v, lo=0)
    return c


def run(
    workload: str,
    policy: str = "mglru",
    frames: Union[int, str, None] = "50%",
    seed: int = 0,
    device: str = "ssd",
    cpus: int = 6,
    costs: Optional[Mapping[str, Any]] = None,
    options: Optional[Mapping[str, Any]] = None,
    page_cluster: Optional[int] = None,
    watermarks: Optional[Sequence[int]] = None,
    swappiness: int = 60,
    slice_ns: Optional[int] = None,
    sample_every_ns: int = 0,
    step_ns: int = 2000,
    charge_device_ram: bool = True,
    cgroup: Optional[bool] = None,
    check_invariants: bool = False,
    progress: Optional[ProgressFn] = None,
    swap: Optional[str] = None,
    tlb: bool = False,
    kernel: str = "6.8",
    file_device: Optional[str] = None,
    read_ahead_kb: int = 128,
    zones: Optional[Sequence[Mapping[str, Any]]] = None,
    watermark_boost_factor: int = 15000,
) -> RunResult:
    """Run a workload model on a timed machine (the timing engine,
    ``vmemsim_core::timed``): its threads and kswapd compete for ``cpus`` CPUs, every event
    costs CPU time (``costs``, see :data:`COST_KEYS`), swap goes to ``device`` (``ssd``,
    ``nvme``, ``zram``, ``remote``, with ``key=value`` parameters such as
    ``"ssd:latency_us=7500,qd=32"``); ``swap=`` is the same setting under the name of
    ``--swap`` and ``machine.swap``.

    ``workload`` is a model spec such as ``"ycsb-a:footprint=64MiB"`` (kinds:
    :func:`workload_kinds`), seeded by ``seed``. ``frames`` is a count or a percentage of the
    workload's footprint (``"50%"``). ``cgroup=True`` (``--cgroup``; the older
    ``charge_device_ram=False``) keeps zram's compressed
    pool out of ``frames``, as a memory cgroup limit does (zsmalloc memory is not charged to
    the cgroup). ``kernel`` picks whose reclaim rules the kernel policies follow where Linux
    versions differ (``"6.8"`` or ``"6.1"``, as :func:`replay`'s). ``progress(done, None)``
    reports simulated ns. A workload with file I/O (``dd-like``, ``fileio``, ``gzip-like``,
    ``pbzip2-like``, ``mapreduce-like``, a recorded program's reads and writes, an MSR
    import) goes through the page cache, its files on ``file_device`` (``hdd``, ``ssd``,
    ``nvme``, ``remote``; default ``ssd``) with readahead of ``read_ahead_kb``;
    ``file_device_stats`` counts the disk's requests and
    ``time["file_cpu_ns"]``/``time["file_wait_ns"]`` the calls' CPU time and waits.
    ``zones`` splits the machine into the kernel's zones, and ``watermark_boost_factor``
    boosts them, as :func:`replay`'s do.
    """
    if not isinstance(workload, str):
        raise VmemsimError(f"workload: expected a workload spec string, got {workload!r}")
    if not isinstance(policy, str):
        raise VmemsimError(f"policy: expected a policy name, got {policy!r}")
    if swap is not None:
        # swap= is the name of the CLI's --swap and of machine.swap; device= the older one
        if device != RUN_DEFAULTS["device"] and device != swap:
            raise VmemsimError(f"swap and device are the same setting (swap={swap!r}, "
                               f"device={device!r}); give one")
        device = swap
    if not isinstance(device, str):
        raise VmemsimError(f"device: expected a device spec string, got {device!r}")
    if cgroup is not None and not isinstance(cgroup, bool):
        raise VmemsimError(f"cgroup: expected True or False, got {cgroup!r}")
    if watermarks is not None:
        w = tuple(watermarks)
        if len(w) != 3:
            raise VmemsimError(f"watermarks: expected (min, low, high), got {watermarks!r}")
        watermarks = [_int_arg("watermarks", x) for x in w]
    # The core's RunConfig (RUN_DEFAULTS): its build() resolves frames, checks the
    # machine's ranges and the policy's options, and maps cgroup onto charge_device_ram.
    config: Dict[str, Any] = {
        "workload": workload, "seed": _seed_arg(seed), "policy": policy,
        "frames": _frames_arg(frames), "options": _options_arg(options), "device": device,
        "cpus": _count_arg("cpus", cpus),
        "slice_ns": None if slice_ns is None else _count_arg("slice_ns", slice_ns),
        "costs": _costs_arg(costs),
        "sample_every_ns": _count_arg("sample_every_ns", sample_every_ns, lo=0),
        "step_ns": _count_arg("step_ns", step_ns),
        "charge_device_ram": bool(charge_device_ram), "cgroup": cgroup,
        "tlb": _bool_arg("tlb", tlb),
        "page_cluster": None if page_cluster is None else _int_arg("page_cluster", page_cluster),
        "watermarks": watermarks, "swappiness": _int_arg("swappiness", swappiness),
        "kernel": kernel, "check_invariants": bool(check_invariants),
        "file_device": _device_arg("file_device", file_device),
        "read_ahead_kb": _count_arg("read_ahead_kb", read_ahead_kb, lo=0),
        "zones": _zones_arg(zones),
        "watermark_boost_factor": _count_arg("watermark_boost_factor", watermark_boost_factor,
                                             lo=0),
    }
    out = _native.run_timed(json.dumps(config), progress)
    # The core refused a cgroup that disagrees with charge_device_ram; one decides.
    in_cgroup = cgroup if cgroup is not None else not config["charge_device_ram"]
    return RunResult.from_json(out, cgroup=in_cgroup, config=config)


# ---------------------------------------------------------------- virtual machines


def guest_workload_kinds() -> List[Tuple[str, str]]:
    """Every guest workload model (for :func:`run_vm`) as ``(name, description)``."""
    return list(_native.guest_workload_kinds())


def run_vm(
    workload: Union[str, Sequence[str]],
    paging: str = "tdp",
    guest_frames: Union[int, str] = "200%",
    host_frames: Union[int, str] = "150%",
    guest_policy: str = "clock-lru",
    host_policy: str = "clock-lru",
    eviction: str = "fifo",
    mmu_pages: Optional[int] = None,
    seed: int = 0,
    guest_levels: int = 4,
    host_levels: int = 4,
    pt_pages: int = 0,
    translate: Optional[Mapping[str, Any]] = None,
    costs: Optional[Mapping[str, Any]] = None,
    guest_page: str = "4k",
    host_page: str = "4k",
    vms: int = 1,
    host_swap: Optional[str] = None,
    guest_swap: Optional[str] = None,
    host_cpus: Optional[int] = None,
    walk_caches: bool = True,
    shared_disk: bool = False,
    cache_mode: str = "writeback",
    file_device: Optional[str] = None,
    read_ahead_kb: int = 128,
    sample_every_ns: int = 0,
    balloon: bool = False,
    deflate_on_oom: bool = False,
    balloon_size_mib: Optional[int] = None,
    balloon_costs: Optional[Mapping[str, Any]] = None,
    mom: bool = False,
    mom_config: Optional[Mapping[str, Any]] = None,
    guest_swapoff: bool = False,
    qemu_text_pages: int = 0,
    vswapper: str = "off",
) -> RunResult:
    """Run a guest workload model (:func:`guest_workload_kinds`: ``stress-vm``,
    ``redis-like``, ``kernbench-like``, ``lmbench-like``, ``jvm-like``) in a VM on a host:
    ``paging`` is ``native`` (no VM), ``tdp`` (nested paging) or ``shadow`` (KVM's shadow
    MMU, whose pool of ``mmu_pages`` shadow pages is recycled by ``eviction``: ``fifo``,
    ``clock``, ``clock-leaf``, ``clock-parent``). ``guest_frames`` is a count or a percentage
    of the workload's footprint; ``host_frames`` a count or a percentage of guest memory.
    The defaults (200% and 150%) leave room above both kernels' watermarks, so there is no
    reclaim unless asked for.
    ``translate`` overrides the translation hardware's configuration (TLB geometries,
    walk caches; unknown keys are errors); ``costs`` overrides entries of the one cost table
    (:data:`COST_KEYS`: ``access_ns``, ``exit_ns``, ``kvm_work_ns``, ...; the same table as
    :func:`run`'s). The result's
    ``runtime_ns``, ``time`` (where the vCPUs' time went) and ``latency`` (per request,
    from its arrival) come from those costs; ``kvm_folded`` is KVM's handler work as folded
    stacks for a flame graph (:func:`vmemsim.flamegraph.write_svg`).
    ``guest_page`` and ``host_page`` (``4k``, ``2m``, ``1g``) are the page sizes the guest
    maps its processes' memory with and the host backs guest memory with (2 MiB as THP,
    1 GiB as hugetlbfs, never reclaimed); percentages of frames are rounded up to whole
    pages of that size. ``vms`` VMs (each running the workload with seed ``seed + i``), or
    one VM per spec when ``workload`` is a list of specs, share the host: ``guest_frames`` as
    a percentage is of each VM's own workload, ``host_frames`` of all their memory; the
    result's counters are sums over the VMs and ``per_vm`` holds each VM's own result.
    ``host_swap`` and ``guest_swap`` (device specs as ``vmemsim run --swap``: ``ssd``,
    ``nvme``, ``zram``, ``remote``, with ``key=value`` parameters) give a side's swap a timed
    device (queueing, zram's CPU time) instead of the flat major-fault cost; the result's
    ``host_device_stats`` / ``device_stats`` are the devices' counters. ``host_cpus`` makes all
    the vCPUs share that many host CPUs in time slices (EEVDF's base slice); a runnable vCPU
    waiting for one is steal time (``time["steal_ns"]``), which request latency includes.
    Unset, each vCPU has a CPU of its own. ``shared_disk=True`` makes the guests' swap
    devices one disk of the host (their virtual disks are files on it), with the host's swap
    when ``host_swap`` is the same device: their requests queue together (each VM's
    ``device_stats`` counts its own). ``walk_caches=False`` turns the page-walk caches
    and the nested TLB off (``vmemsim vm --no-walk-caches``, ``vm.walk_caches = false``;
    the same as ``translate={"pwc": {"enabled": False}, "ntlb": {"enabled": False}}``).
    A guest workload with file I/O (``dd-like``, ``fileio``, ``gzip-like``, ``pbzip2-like``,
    ``mapreduce-like``, a recorded program) goes through the guest's page cache to its
    virtual disk (virtio-blk), whose image QEMU opens with ``cache_mode`` (``writeback``:
    through the host's page cache;
    ``none``: ``O_DIRECT``; ``writethrough``; ``directsync``; ``cacol``: the host's cache of
    the images managed by Cacol, seed 003, its counters in ``cacol``) on the host's
    ``file_device``;
    ``double_cached_pages`` counts the guest's page-cache pages the host caches too and
    ``host_image_pages`` the host's pages of the image, at the end; with
    ``sample_every_ns`` each sample of ``series`` has them per VM (``caches``).
    ``swap_pathologies`` counts what the host's swapping of the VM's memory did that
    VSwapper (ASPLOS'14, §3) calls the pathologies of uncooperative swapping:
    ``silent_swap_writes`` (pages written to host swap that hold a block of the guest's
    disk image unchanged, a clean page of the guest's page cache), of those
    ``silent_swap_writes_in_sequence`` (in the slot after the previous block's copy: their
    decay is decayed swap sequentiality), ``stale_swap_reads`` (pages swapped in for QEMU's
    DMA of a guest disk read to overwrite), ``false_swap_reads`` (pages swapped in for the
    guest's fault to overwrite whole: ``clear_page``, the guest's swap-in, a file page's
    read), ``host_swap_readahead`` and ``host_swap_readahead_hits`` (the host's swap
    readahead of the VM's pages, and those later used), ``hypervisor_code_faults`` (with
    ``qemu_text_pages``: refaults of QEMU's code, that many host pages of named memory the
    host runs through for each of the guest's disk requests and reclaims as any file page:
    false page anonymity), and with ``vswapper="mapper"`` (VSwapper's Swap Mapper, §4.1:
    pages QEMU filled from the disk image are named copies of their blocks)
    ``mapper_discards`` (such pages host reclaim dropped without a swap write),
    ``mapper_refaults`` (their faults, read back from the image), ``mapper_cow_breaks``
    (writes that made one anonymous) and ``mapper_write_maps`` (pages mapped to the block a
    guest write request wrote them to, §4.1 "Guest I/O Flow"), ``qemu_write_swap_reads``
    (host swap reads of pages QEMU read to write them to the image, swapped out since the
    guest dirtied them), and with ``vswapper="preventer"`` (VSwapper's False
    Reads Preventer, §4.2: a guest write to a page the host swapped out is emulated into a
    buffer, and a page the guest overwrites whole is not read, so ``false_swap_reads`` stay
    0) ``preventer_emulated`` (such writes emulated), ``preventer_reads_avoided`` (whole-page
    fills that needed no read) and ``preventer_merges`` (partial writes merged with the old
    content after its read); ``vswapper="vswapper"`` runs both. Each VM's in ``per_vm``, and
    so far in each sample's ``caches``. ``vswapper`` (``off``, ``mapper``, ``preventer``,
    ``vswapper``) needs ``host_page="4k"``.
    ``balloon=True`` gives each guest a virtio-balloon device (Linux 6.8's driver, QEMU's
    device; tdp or shadow paging, 4k pages): ``balloon_size_mib`` inflates it at boot,
    ``mom=True`` runs MOM's balloon.rules on the host (``mom_config`` its tunables),
    ``deflate_on_oom`` is QEMU's ``deflate-on-oom`` (off by default) and ``balloon_costs``
    the rounds' costs. The result's ``balloon`` (each VM's, in ``per_vm`` with several)
    has the balloon's target and actual pages, pages inflated and deflated, rounds,
    out-of-puff events, OOM deflations, the host frames freed, ``oom_killed`` and
    ``oom_kill_ns`` (a guest out of memory kills its workload: the VM's run ends), and
    MOM's ``decisions`` and ``samples``; ``mom`` the manager's counts. ``guest_swapoff``
    runs the guests without swap space.
    """
    for name, flag in (("walk_caches", walk_caches), ("shared_disk", shared_disk),
                       ("balloon", balloon), ("deflate_on_oom", deflate_on_oom),
                       ("mom", mom), ("guest_swapoff", guest_swapoff)):
        if not isinstance(flag, bool):
            raise VmemsimError(f"{name}: expected True or False, got {flag!r}")
    if not walk_caches:
        merged = {k: dict(v) if isinstance(v, Mapping) else v
                  for k, v in dict(translate or {}).items()}
        for part in ("pwc", "ntlb"):
            if not isinstance(merged.setdefault(part, {}), dict):
                raise VmemsimError(f"translate.{part}: expected a table, got {merged[part]!r}")
            merged[part]["enabled"] = False
        translate = merged
    for name, v in (("host_swap", host_swap), ("guest_swap", guest_swap)):
        if v is not None and not isinstance(v, str):
            raise VmemsimError(f"{name}: expected a device spec string, got {v!r}")
    workloads = [workload] if isinstance(workload, str) else list(workload)
    for name, v in (("paging", paging), ("eviction", eviction),
                    ("guest_policy", guest_policy), ("host_policy", host_policy),
                    ("guest_page", guest_page), ("host_page", host_page)):
        if not isinstance(v, str):
            raise VmemsimError(f"{name}: expected a string, got {v!r}")
    if mmu_pages is not None:
        mmu_pages = _count_arg("mmu_pages", mmu_pages)
    for v in workloads:
        if not isinstance(v, str):
            raise VmemsimError(f"workload: expected a string, got {v!r}")
    config: Dict[str, Any] = {
        "workload": workloads, "seed": _seed_arg(seed), "paging": paging,
        "guest_frames": _frames_arg(guest_frames), "host_frames": _frames_arg(host_frames),
        "guest_policy": guest_policy, "host_policy": host_policy, "eviction": eviction,
        "mmu_pages": mmu_pages, "guest_levels": _count_arg("guest_levels", guest_levels),
        "host_levels": _count_arg("host_levels", host_levels),
        "pt_pages": _count_arg("pt_pages", pt_pages, lo=0),
        "translate": dict(translate or {}), "costs": _costs_arg(costs),
        "guest_page": guest_page, "host_page": host_page, "vms": _count_arg("vms", vms),
        "host_swap": host_swap, "guest_swap": guest_swap, "shared_disk": shared_disk,
        "host_cpus": None if host_cpus is None else _count_arg("host_cpus", host_cpus),
        "cache_mode": cache_mode, "file_device": _device_arg("file_device", file_device),
        "read_ahead_kb": _count_arg("read_ahead_kb", read_ahead_kb, lo=0),
        "sample_every_ns": _count_arg("sample_every_ns", sample_every_ns, lo=0),
        "balloon": balloon, "deflate_on_oom": deflate_on_oom,
        "balloon_size_mib": None if balloon_size_mib is None
        else _count_arg("balloon_size_mib", balloon_size_mib, lo=0),
        "balloon_costs": _table_arg("balloon_costs", balloon_costs),
        "mom": mom, "mom_config": _table_arg("mom_config", mom_config),
        "guest_swapoff": guest_swapoff,
        "qemu_text_pages": _count_arg("qemu_text_pages", qemu_text_pages, lo=0),
        "vswapper": vswapper,
    }
    out = _native.run_vm(json.dumps(config))
    return RunResult.from_json(out, config=config)
