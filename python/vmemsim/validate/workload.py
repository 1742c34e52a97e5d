"""The workload of a validation run: the access sequence the guest program (``vmwl.c``) makes
and the simulator replays.

A workload is a generator spec (``gen:zipf:pages=...``, drawn by the guest program itself
from the generator's plan, :func:`vmemsim._native.generator_plan`) or a trace file (any
format vmemsim reads; written into the guest as u32 records). The ``mode`` says what the
program does per access:

- ``rw``: reads its page and writes it (every access is a write to the simulator);
- ``r``: first writes every page of the footprint once in ascending order (the union of the
  generator's page ranges, or the trace's distinct pages), then reads, writing only where the
  access says so. A read of anonymous memory never written maps the shared zero page, which
  takes no frame; the write pass makes every page real first.

Trace pages are placed as the guest sees them: each 2 MiB region (512 pages, one PMD) the
trace uses keeps its offsets and regions are packed in ascending order, so PMD locality
(MG-LRU's walks and Bloom filter, VMA swap readahead) survives while the guest's mapping stays
small. Both sides run the placed sequence.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from .. import _native
from ..api import VmemsimError, generate, load_trace

SOURCE = Path(__file__).with_name("vmwl.c")
MODES = ("rw", "r")
GEN_PREFIX = "gen:"
#: File workload kinds (``KIND:key=value,...``) and their keys with defaults (None: required;
#: sizes take K/M/G suffixes, powers of 1024).
FILE_KINDS: Dict[str, Dict[str, Optional[int]]] = {
    "fileread": {"bytes": None, "bs": 65536, "passes": 2, "disk": 0},
    "filerand": {"bytes": None, "bs": 4096, "n": 0, "seed": None, "disk": 0},
    "filewrite": {"bytes": None, "bs": 65536, "passes": 1, "fsync": 1, "disk": 0},
    "filewrand": {"bytes": None, "bs": 4096, "n": 0, "seed": None, "fsync": 0, "disk": 0},
    "mmapread": {"bytes": None, "bs": 4096, "passes": 2, "disk": 0},
    "mmaprand": {"bytes": None, "bs": 4096, "n": 0, "seed": None, "disk": 0},
}
#: The file workloads that map the device instead of calling read/write on it.
MMAP_KINDS = ("mmapread", "mmaprand")
#: ``vmwl.c``'s op for each file workload kind.
PROGRAM_OPS = {"fileread": ("read", ("passes",)), "filerand": ("rand", ("n", "seed")),
               "filewrite": ("write", ("passes", "fsync")),
               "filewrand": ("randw", ("n", "seed", "fsync")), "mmapread": ("mmap", ("passes",)),
               "mmaprand": ("mmaprand", ("n", "seed"))}
#: The ops of the file I/O records (``FileOp`` in recorded.rs, ``vmwl.c``'s dump); ``OP_LOAD``
#: is ``vmwl.c``'s own, a load from the mapping (no record: an access of the mapped page).
OP_READ, OP_WRITE, OP_PREAD, OP_PWRITE, OP_FSYNC, OP_LOAD = 1, 2, 3, 4, 6, 12
#: ``FileOp::Mmap`` and the flags of its ``addr`` (``mmap_flags`` in recorded.rs).
OP_MMAP, MMAP_KNOWN, MMAP_SHARED = 5, 1, 2
#: Where the trace maps the device (a user page number below the page cache's file base).
MMAP_BASE_PAGE = 0x10000
PMD_PAGES = 512
#: Largest placed page (the guest program keeps pages in 31 bits).
MAX_PAGE = (1 << 31) - 1
#: ``vmwl.c`` streams a trace from its disk into a buffer of ``CHUNK_BYTES`` (1 MiB, 256
#: pages): each refill is an ``O_DIRECT`` read into it (``get_user_pages`` with FOLL_WRITE
#: faults the pages in and dirties them), and each 4-byte record is copied out of it. Those
#: pages are the program's anonymous memory too, taken from the free memory during the phase.
TRACE_CHUNK_RECS = 1024 * 1024 // 4
#: Records per 4 KiB page of that buffer.
TRACE_RECS_PER_PAGE = 4096 // 4


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vmemsim" / "validate"


def build_program(out_dir: Optional[Path] = None) -> Path:
    """Compile ``vmwl.c`` statically (gcc, glibc's static libraries) into the cache, once per
    source; returns the binary's path."""
    src = SOURCE.read_bytes()
    tag = hashlib.sha256(src).hexdigest()[:16]
    d = Path(out_dir) if out_dir else cache_dir() / "vmwl"
    exe = d / f"vmwl-{tag}"
    if exe.exists():
        return exe
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise VmemsimError(
            "validate: gcc is needed to build the guest workload program "
            "(Debian/Ubuntu: apt-get install gcc libc6-dev)"
        )
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".vmwl-{tag}.{os.getpid()}"
    cmd = [cc, "-O2", "-static", "-ffp-contract=off", "-o", str(tmp), str(SOURCE), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise VmemsimError(
            "validate: building the guest workload program failed (needs gcc and glibc's static "
            f"libraries, libc6-dev): {r.stderr.strip()[-400:]}"
        )
    os.replace(tmp, exe)
    return exe


def _plan_ranges(plan: List[str]) -> List[Tuple[int, int]]:
    """Leaf page ranges ``[start, start + pages)`` of a generator plan, in plan order."""
    out: List[Tuple[int, int]] = []
    i = 2  # after "N total"

    def node() -> None:
        nonlocal i
        t = plan[i]
        if t == "M":
            k = int(plan[i + 2])
            i += 3 + k
            for _ in range(k):
                node()
        elif t == "Q":
            k = int(plan[i + 1])
            i += 2 + k
            for _ in range(k):
                node()
        else:
            start, pages = int(plan[i + 2]), int(plan[i + 4])
            out.append((start, start + pages))
            i += {"U": 5, "S": 5, "Z": 7, "H": 7}[t]

    node()
    return out


def _union_ascending(ranges: List[Tuple[int, int]]) -> np.ndarray:
    parts = []
    nxt = 0
    for a, b in sorted(ranges):
        a = max(a, nxt)
        if b > a:
            parts.append(np.arange(a, b, dtype=np.uint64))
        nxt = max(nxt, b)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


def place_pages(pages: np.ndarray) -> np.ndarray:
    """Pack the 2 MiB regions a trace uses in ascending order, keeping offsets within each."""
    if pages.size == 0:
        return pages.astype(np.uint64)
    regions = pages >> np.uint64(9)
    uniq, inv = np.unique(regions, return_inverse=True)
    placed = (inv.astype(np.uint64) << np.uint64(9)) | (pages & np.uint64(PMD_PAGES - 1))
    if placed.size and int(placed.max()) > MAX_PAGE:
        raise VmemsimError(
            f"validate: the trace spans {len(uniq)} 2 MiB regions; the guest program takes at "
            f"most {(MAX_PAGE + 1) // PMD_PAGES}"
        )
    return placed


@dataclass
class Workload:
    """One validation workload: what the guest runs and the simulator replays."""

    #: The spec as given (``gen:...`` or a trace path).
    spec: str
    mode: str
    seed: int
    #: ``gen`` or ``trace``.
    kind: str
    #: For ``gen``: the canonical generator name with its seed (re-runs the same accesses).
    name: str
    #: For ``gen``: the plan tokens handed to the guest program.
    plan: Optional[List[str]] = None
    #: For ``trace``: the placed pages and write flags (before the mode's transformation).
    trace_pages: Optional[np.ndarray] = None
    trace_writes: Optional[np.ndarray] = None
    #: For ``file``: the parsed spec (:func:`parse_file_spec`), ``kind`` included.
    file: Optional[Dict[str, object]] = None

    @property
    def key(self) -> str:
        """What identifies the access sequence (for the kernel result cache)."""
        if self.kind == "gen":
            return f"gen:{self.name}|mode={self.mode}"
        if self.kind == "file":
            return f"file:{self.name}"
        h = hashlib.sha256()
        h.update(np.ascontiguousarray(self.trace_pages).tobytes())
        h.update(np.ascontiguousarray(self.trace_writes).tobytes())
        return f"trace:{os.path.basename(self.spec)}:{h.hexdigest()[:16]}|mode={self.mode}"

    def sequence(self) -> Tuple[np.ndarray, np.ndarray]:
        """``(pages, writes)``: every access the guest program makes, in order (computed
        once per workload)."""
        cached = self.__dict__.get("_sequence")
        if cached is None:
            cached = self.__dict__["_sequence"] = self._make_sequence()
        return cached

    def _make_sequence(self) -> Tuple[np.ndarray, np.ndarray]:
        if self.kind == "file":
            # What the guest program's checksum counts per call (vmwl.c's io_note).
            op, off, ln = self.io_records()
            pages = ((off >> np.uint64(12)) << np.uint64(16)) | (ln >> np.uint64(12))
            return pages, (op == OP_WRITE) | (op == OP_PWRITE) | (op == OP_FSYNC)
        if self.kind == "gen":
            pages, writes = load_trace(generate(self.spec[len(GEN_PREFIX):], seed=self.seed))
            footprint = _union_ascending(_plan_ranges(self.plan or []))
        else:
            pages, writes = self.trace_pages, self.trace_writes
            footprint = np.unique(pages)
        pages = np.asarray(pages, dtype=np.uint64)
        writes = np.asarray(writes, dtype=bool)
        if self.mode == "rw":
            return pages, np.ones(pages.size, dtype=bool)
        return (
            np.concatenate([footprint, pages]),
            np.concatenate([np.ones(footprint.size, dtype=bool), writes]),
        )

    def cpu_accesses(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The sequence as the guest's CPU issues it, which is what the simulator replays.
        ``vmwl.c``'s ``touch`` always loads the page's counter and stores it back only for a
        write (``v = *p; if (w) *p = v + count``), so a write access is a load followed by a
        store: a page that is not present takes a *read* fault first (``do_swap_page``
        without ``FAULT_FLAG_WRITE``: ``should_try_to_free_swap`` keeps its swap slot, and
        the page stays in the swap cache), then the store finds it mapped read-only and
        ``do_wp_page`` reuses it (``PageAnonExclusive``) without freeing the slot. A single
        write access would be a write fault, which frees the slot at swap-in.

        A trace streamed from the disk also touches the program's trace buffer (see
        :func:`trace_buffer_accesses`); those accesses are interleaved where ``vmwl.c`` makes
        them, at pages beyond the workload's span (a PMD apart, as a separate mapping). The
        refill's are not the CPU's: the ``O_DIRECT`` read pins the buffer with
        ``get_user_pages`` (``FOLL_WRITE``; one call for the chunk's pages, as
        ``__blkdev_direct_IO_simple`` → ``bio_iov_iter_get_pages`` makes it for a 1 MiB
        request) and the device writes it.

        Returns ``(pages, writes, gup)``, ``gup`` marking the accesses of ``get_user_pages``
        (``vmemsim.replay``'s ``gup``)."""
        pages, writes = self.sequence()
        extra_before = np.zeros(pages.size, dtype=np.int64)
        buf = None
        if self.kind == "trace":
            base = -(-(self.span_pages() + PMD_PAGES) // PMD_PAGES) * PMD_PAGES
            buf = trace_buffer_accesses(pages.size, base)
            extra_before = buf[0]
        idx = (np.arange(pages.size, dtype=np.int64) + np.cumsum(writes, dtype=np.int64)
               - writes + extra_before)
        n_buf = 0 if buf is None else buf[1].size
        out_pages = np.empty(pages.size + int(writes.sum()) + n_buf, dtype=pages.dtype)
        out_writes = np.zeros(out_pages.size, dtype=bool)
        out_gup = np.zeros(out_pages.size, dtype=bool)
        out_pages[idx] = pages
        w_idx = idx[writes] + 1
        out_pages[w_idx] = pages[writes]
        out_writes[w_idx] = True
        if buf is not None:
            _, bpages, bwrites, brec = buf
            # The buffer accesses before record k fill the places just before k's own, in
            # the order trace_buffer_accesses lists them.
            first = np.searchsorted(brec, brec, side="left")
            count = np.searchsorted(brec, brec, side="right") - first
            bidx = idx[brec] - count + (np.arange(brec.size) - first)
            out_pages[bidx] = bpages
            out_writes[bidx] = bwrites
            # The refill's writes are the pins of one `get_user_pages` call.
            out_gup[bidx] = bwrites
        return out_pages, out_writes, out_gup

    def io_records(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A file workload's calls in order, as ``vmwl.c`` makes them: ``(op, offset,
        bytes)`` (ops :data:`OP_READ`, :data:`OP_WRITE`, :data:`OP_PREAD`, :data:`OP_PWRITE`,
        :data:`OP_FSYNC`)."""
        f = self.file or {}
        size, bs = int(f["bytes"]), int(f["bs"])
        blocks = size // bs
        if f["kind"] in MMAP_KINDS:
            if f["kind"] == "mmaprand":
                n = int(f["n"])
                with np.errstate(over="ignore"):
                    k = np.arange(n, dtype=np.uint64)
                    page = _mix64(np.uint64(int(f["seed"])) ^ _mix64(k)) % np.uint64(blocks)
            else:
                page = np.tile(np.arange(blocks, dtype=np.uint64), int(f["passes"]))
            return (np.full(page.size, OP_LOAD, dtype=np.uint8), page * np.uint64(4096),
                    np.full(page.size, 4096, dtype=np.uint64))
        if f["kind"] in ("filerand", "filewrand"):
            n = int(f["n"])
            with np.errstate(over="ignore"):
                k = np.arange(n, dtype=np.uint64)
                off = (_mix64(np.uint64(int(f["seed"])) ^ _mix64(k)) % np.uint64(blocks)) \
                    * np.uint64(bs)
            ops = np.full(n, OP_PREAD if f["kind"] == "filerand" else OP_PWRITE, dtype=np.uint8)
            ln = np.full(n, bs, dtype=np.uint64)
            if f["kind"] == "filewrand" and int(f["fsync"]):
                ops = np.append(ops, np.uint8(OP_FSYNC))
                off = np.append(off, np.uint64(0))
                ln = np.append(ln, np.uint64(0))
            return ops, off, ln
        passes = int(f["passes"])
        off = np.tile(np.arange(blocks, dtype=np.uint64) * np.uint64(bs), passes)
        op = OP_READ if f["kind"] == "fileread" else OP_WRITE
        ops = np.full(off.size, op, dtype=np.uint8)
        ln = np.full(off.size, bs, dtype=np.uint64)
        if f["kind"] == "filewrite" and int(f["fsync"]):
            ops = np.append(ops, np.uint8(OP_FSYNC))
            off = np.append(off, np.uint64(0))
            ln = np.append(ln, np.uint64(0))
        return ops, off, ln

    def disk_bytes(self) -> int:
        """A file workload's device size."""
        f = self.file or {}
        return int(f.get("disk") or 0) or int(f.get("bytes") or 0)

    def footprint_pages(self) -> int:
        """Distinct pages the program touches."""
        if self.kind == "file":
            return int((self.file or {})["bs"]) // 4096
        if self.kind == "gen":
            return int(_union_ascending(_plan_ranges(self.plan or [])).size) if self.mode == "r" \
                else int(np.unique(self.sequence()[0]).size)
        return int(np.unique(self.trace_pages).size)

    def span_pages(self) -> int:
        """Pages of the guest program's mapping (highest page + 1)."""
        if self.kind == "file":
            return int((self.file or {})["bs"]) // 4096
        if self.kind == "gen":
            return max(b for _, b in _plan_ranges(self.plan or []))
        return int(self.trace_pages.max()) + 1 if self.trace_pages.size else 0

    def program_args(self, trace_path: str = "/dev/vdb") -> List[str]:
        """Arguments of the guest program after the options."""
        if self.kind == "gen":
            return ["gen", *(self.plan or [])]
        if self.kind == "file":
            f = self.file or {}
            op, keys = PROGRAM_OPS[str(f["kind"])]
            return ["file", trace_path, op, str(f["bytes"]), str(f["bs"]),
                    *(str(f[k]) for k in keys)]
        return ["trace", trace_path]

    def write_sequence_file(self, path: Path) -> int:
        """The sequence file the guest program replays a trace from (see ``vmwl.c``): a
        4096-byte header, then u32 LE records (page | write << 31) of :meth:`sequence`, the
        mode's write pass included, padded to 4096 bytes. Returns its size in bytes."""
        pages, writes = self.sequence()
        header = b"VMWLSEQ1" + struct.pack("<QQ", pages.size, self.span_pages())
        rec = (pages.astype(np.uint32) | (writes.astype(np.uint32) << np.uint32(31))).astype("<u4")
        with open(path, "wb") as f:
            f.write(header.ljust(4096, b"\0"))
            f.write(rec.tobytes())
            pad = -(4096 + rec.nbytes) % 4096
            f.write(b"\0" * pad)
        return 4096 + rec.nbytes + pad


def trace_buffer_accesses(
    n: int, base: int, chunk_recs: int = TRACE_CHUNK_RECS,
    recs_per_page: int = TRACE_RECS_PER_PAGE,
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The accesses ``vmwl.c``'s trace mode makes to its own buffer while it replays ``n``
    records, the buffer's page ``j`` being page ``base + j``: before record ``k`` with
    ``k % chunk_recs == 0``, ``fill_chunk`` writes the pages the chunk needs (all
    ``chunk_recs / recs_per_page`` of them, or ``ceil(left * 4 / 4096)`` for the last one);
    before every record with ``k % recs_per_page == 0`` the ``memcpy`` of that record reads
    the buffer's page ``(k % chunk_recs) / recs_per_page`` (the later reads of the same page
    follow at once and change nothing a policy sees).

    Returns ``(extra_before, pages, writes, record)``: for each record, how many buffer
    accesses come before it; and each buffer access in order with the record it precedes."""
    if n <= 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z.astype(np.uint64), z.astype(bool), z
    per_chunk = chunk_recs // recs_per_page
    starts = np.arange(0, n, chunk_recs, dtype=np.int64)
    left = n - starts
    # ceil(left * 4 / 4096) pages: records of 4096 / recs_per_page bytes
    fills = np.where(left >= chunk_recs, per_chunk, -(-left // recs_per_page))
    reads = -(-np.minimum(left, chunk_recs) // recs_per_page)
    recs, pages, writes = [], [], []
    for s0, f, r in zip(starts.tolist(), fills.tolist(), reads.tolist()):
        recs.append(np.full(f, s0, dtype=np.int64))
        pages.append(np.arange(f, dtype=np.int64))
        writes.append(np.ones(f, dtype=bool))
        recs.append(s0 + np.arange(r, dtype=np.int64) * recs_per_page)
        pages.append(np.arange(r, dtype=np.int64))
        writes.append(np.zeros(r, dtype=bool))
    rec = np.concatenate(recs)
    page = (np.concatenate(pages) + base).astype(np.uint64)
    write = np.concatenate(writes)
    extra = np.searchsorted(rec, np.arange(n, dtype=np.int64), side="right")
    return extra, page, write, rec


def _mix64(z: np.ndarray) -> np.ndarray:
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def checksum(pages: np.ndarray, writes: np.ndarray) -> str:
    """The guest program's checksum of a sequence: the sum mod 2^64 of
    mix64((page << 1 | write) ^ mix64(index))."""
    with np.errstate(over="ignore"):
        idx = np.arange(pages.size, dtype=np.uint64)
        key = (pages.astype(np.uint64) << np.uint64(1)) | writes.astype(np.uint64)
        total = int(np.sum(_mix64(key ^ _mix64(idx)), dtype=np.uint64))
    return f"{total & ((1 << 64) - 1):016x}"


_SIZE = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _size(key: str, text: str) -> int:
    t = text.strip().upper()
    for suffix in ("IB", "B"):
        if t.endswith(suffix) and t[:-len(suffix)][-1:] in "KMG" and len(t) > len(suffix):
            t = t[:-len(suffix)]
            break
    mult = _SIZE.get(t[-1:], 1) if t[-1:] in "KMG" else 1
    num = t[:-1] if t[-1:] in "KMG" else t
    try:
        v = float(num) * mult
    except ValueError:
        raise VmemsimError(f"validate: {key}={text!r}: expected a number (K/M/G suffixes)") from None
    if v != int(v) or v < 0:
        raise VmemsimError(f"validate: {key}={text!r}: expected a whole, non-negative number")
    return int(v)


def is_file_spec(spec: str) -> bool:
    return spec.split(":", 1)[0] in FILE_KINDS and ":" in spec


def parse_file_spec(spec: str, seed: int = 0) -> Dict[str, object]:
    """``mmapread:bytes=SIZE[,passes=K][,disk=SIZE]`` (``[0, bytes)`` of the device mapped
    shared and read-only, one byte of each page loaded in order, ``passes`` times),
    ``mmaprand:bytes=SIZE[,n=N][,seed=S][,disk=SIZE]`` (``n`` loads of seeded pages of the
    mapping; ``n`` defaults to its pages),
    ``fileread:bytes=SIZE[,bs=SIZE][,passes=K][,disk=SIZE]`` (sequential ``read()`` of
    ``[0, bytes)`` in ``bs`` blocks, ``passes`` times), ``filerand:bytes=SIZE[,bs=SIZE]
    [,n=N][,seed=S][,disk=SIZE]`` (``n`` ``pread()`` calls of ``bs`` bytes at seeded block
    offsets below ``bytes``; ``n`` defaults to ``bytes / bs``, ``seed`` to ``--seed``),
    ``filewrite:bytes=SIZE[,bs=SIZE][,passes=K][,fsync=0|1][,disk=SIZE]`` (sequential
    ``write()`` calls, then ``fsync``), ``filewrand:bytes=SIZE[,bs=SIZE][,n=N][,seed=S]
    [,fsync=0|1][,disk=SIZE]`` (``n`` ``pwrite()`` calls at the blocks ``filerand`` reads,
    then ``fsync`` when 1; default 0). ``disk`` is the block device's size (default ``bytes``).
    Returns the canonical values with ``kind`` and ``name`` (the canonical spec)."""
    kind, _, body = spec.partition(":")
    keys = FILE_KINDS.get(kind)
    if keys is None:
        raise VmemsimError(f"validate: {kind!r} is not a file workload ({', '.join(FILE_KINDS)})")
    out: Dict[str, object] = dict(keys)
    for item in filter(None, (x.strip() for x in body.split(","))):
        k, sep, v = item.partition("=")
        k = k.strip()
        if not sep or k not in keys:
            raise VmemsimError(
                f"validate: {kind}: unknown or malformed {item!r} (keys: {', '.join(keys)})")
        out[k] = _size(k, v)
    if out.get("seed", 0) is None:
        out["seed"] = seed
    if out["bytes"] is None:
        raise VmemsimError(f"validate: {kind}: bytes= is required")
    size, bs = int(out["bytes"]), int(out["bs"])  # type: ignore[arg-type]
    if bs <= 0 or bs % 4096 or size < bs:
        raise VmemsimError(f"validate: {kind}: bs must be a positive multiple of 4096 and at most "
                           f"bytes (bs={bs}, bytes={size})")
    if size % bs:
        raise VmemsimError(f"validate: {kind}: bytes must be a multiple of bs")
    if int(out["disk"] or 0) and int(out["disk"]) < size:  # type: ignore[arg-type]
        raise VmemsimError(f"validate: {kind}: disk must be at least bytes")
    if not out["disk"]:
        out["disk"] = size
    if kind in MMAP_KINDS and bs != 4096:
        raise VmemsimError(f"validate: {kind}: bs must be 4096 (one page a load)")
    if kind in ("filerand", "filewrand", "mmaprand") and not out["n"]:
        out["n"] = size // bs
    for k in ("passes",):
        if k in out and int(out[k]) < 1:  # type: ignore[arg-type]
            raise VmemsimError(f"validate: {kind}: {k} must be at least 1")
    if "fsync" in out and out["fsync"] not in (0, 1):
        raise VmemsimError(f"validate: {kind}: fsync must be 0 or 1")
    out["kind"] = kind
    out["name"] = kind + ":" + ",".join(f"{k}={out[k]}" for k in keys)
    return out


def write_file_trace(w: Workload, path: Path) -> Path:
    """The file workload's calls as a recorded trace (native v2) of one file (the guest's
    block device, named ``blockdev:`` and the canonical spec),
    whose file I/O records (``read``, ``pread64``, ``write``, ``fsync``) ``vmemsim replay``
    serves through its page cache. It starts with a ``read`` of 0 bytes at the device's end:
    a replay sizes a file from the records (``file_specs``: a read reaches bytes that exist
    from the start), and that record, which does nothing else (``filemap_read`` returns on
    an empty read), gives it the block device's size. The trace holds no access records: the
    program's only anonymous memory, its buffer, was written before the phase, and the
    simulator's frames are the memory the kernel had free after that."""
    op, off, ln = w.io_records()
    if str((w.file or {})["kind"]) in MMAP_KINDS:
        return _write_mmap_trace(w, off, path)
    n = op.size + 1
    op = np.concatenate([[OP_READ], op]).astype(np.uint64)
    off = np.concatenate([[w.disk_bytes()], off]).astype(np.uint64)
    ln = np.concatenate([[0], ln]).astype(np.uint64)
    rec = np.empty((n, 6), dtype="<u8")
    rec[:, 0] = np.uint64(4) | np.uint64(_TID << 8) | (op << np.uint64(32))
    rec[:, 1] = np.arange(n, dtype=np.uint64)  # stamp
    rec[:, 2] = 1  # file id
    rec[:, 3] = off
    rec[:, 4] = ln
    rec[:, 5] = 0
    return _write_raw_trace(w, [], rec, 0, n, path)


#: The thread of the traces the harness writes.
_TID = 1


def _write_raw_trace(w: Workload, head_words: List[int], rec: np.ndarray, n_acc: int,
                     n_io: int, path: Path) -> Path:
    """Write a one-process raw recorder stream (``trace/recorder.rs``'s layout: header,
    process start, the device as file 1, ``head_words``, the records ``rec``, the end record
    with ``n_acc`` access and ``n_io`` I/O records) and convert it to a native trace at
    ``path``."""
    words = [int.from_bytes(b"VMRECRAW", "little"), 2, 4096, 0]
    words += [7 | (_TID << 8) | (1 << 32), 1, 0]  # process 1 starts
    p = ("blockdev:" + w.name).encode()
    words += [5 | (_TID << 8) | (len(p) << 32), 1]
    words += list(np.frombuffer(p.ljust(-(-len(p) // 8) * 8, b"\0"), dtype="<u8"))
    head = np.array(words + head_words, dtype="<u8")
    tail = np.array([6 | (_TID << 8), n_acc, n_io], dtype="<u8")
    raw = Path(str(path) + ".raw")
    with open(raw, "wb") as fh:
        fh.write(head.tobytes())
        fh.write(rec.tobytes())
        fh.write(tail.tobytes())
    try:
        _native.record_convert(str(raw), str(path), "vmemsim validate " + w.name, [])
    finally:
        raw.unlink()
    return Path(path)


def _write_mmap_trace(w: Workload, off: np.ndarray, path: Path) -> Path:
    """A mapping workload's recorded trace: the size record (as :func:`write_file_trace`),
    one ``mmap`` record of ``[0, bytes)`` of the device, shared and read-only
    (``MAP_SHARED``, no ``PROT_WRITE``), at user page :data:`MMAP_BASE_PAGE`, then one read
    access record per load, of the mapped page (``vmemsim replay`` serves them through its
    file mappings: fault-around, ``filemap_fault``'s read-around)."""
    f = w.file or {}
    nacc = off.size
    addr = (MMAP_BASE_PAGE << 12) | MMAP_KNOWN | MMAP_SHARED
    io = [4 | (_TID << 8) | (OP_READ << 32), 0, 1, w.disk_bytes(), 0, 0,
          4 | (_TID << 8) | (OP_MMAP << 32), 1, 1, 0, int(f["bytes"]), addr]
    rec = np.empty((nacc, 3), dtype="<u8")
    rec[:, 0] = np.uint64(1 | (_TID << 8) | (1 << 32))  # a read run of one access
    rec[:, 1] = np.arange(2, nacc + 2, dtype=np.uint64)  # stamp
    rec[:, 2] = np.uint64(MMAP_BASE_PAGE) + (off >> np.uint64(12))
    return _write_raw_trace(w, io, rec, nacc, 2, path)


def make_workload(spec: str, mode: str = "rw", seed: int = 0) -> Workload:
    """A workload from ``gen:SPEC``, a file workload (:func:`parse_file_spec`) or a trace path
    (read with vmemsim's readers)."""
    if mode not in MODES:
        raise VmemsimError(f"validate: mode must be one of {', '.join(MODES)}, got {mode!r}")
    if is_file_spec(spec):
        f = parse_file_spec(spec, seed)
        return Workload(spec=spec, mode=mode, seed=seed, kind="file", name=str(f["name"]), file=f)
    if spec.startswith(GEN_PREFIX):
        body = spec[len(GEN_PREFIX):]
        g = generate(body, seed=seed)
        plan = _native.generator_plan(body, seed).split()
        w = Workload(spec=spec, mode=mode, seed=seed, kind="gen", name=g.name, plan=plan)
        if w.span_pages() > MAX_PAGE:
            raise VmemsimError(
                f"validate: the generator spans {w.span_pages()} pages; the guest program "
                f"takes at most {MAX_PAGE + 1}"
            )
        return w
    if not os.path.exists(spec):
        raise VmemsimError(f"validate: {spec}: no such trace file (a generator needs 'gen:')")
    pages, writes = load_trace(spec)
    placed = place_pages(np.asarray(pages, dtype=np.uint64))
    return Workload(
        spec=spec, mode=mode, seed=seed, kind="trace", name=os.path.basename(spec),
        trace_pages=placed, trace_writes=np.asarray(writes, dtype=bool),
    )
