"""Record a real program's page accesses: ``vmemsim trace record -- CMD ARGS...``.

The program runs under Valgrind with the ``vmrec`` tool (``vmrec.c``, built on first use by
:mod:`.build`), which folds its loads and stores (and optionally instruction fetches) to page
granularity and streams fixed-size records through a FIFO; the Rust side
(``_native.record_convert``) reads the FIFO on another core while the program runs and writes
a recorded trace: native format version 2, with thread, count, instruction stamp and file I/O
per record. Every trace command reads it (one access per record); :func:`read_recorded` gives
every field.

Later layers (workload drivers, imports) use :func:`record` and :func:`read_recorded`.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from .. import _native
from .._files import umask_mode
from .build import INSTALL_HINT, TOOL, Unavailable, build, find_valgrind

__all__ = ["Recording", "Unavailable", "record", "read_recorded", "available", "INSTALL_HINT"]


def available() -> Optional[str]:
    """``None`` when the recorder can be built and run here, else the reason (with how to
    install what is missing)."""
    try:
        build()
    except Unavailable as e:
        return str(e)
    return None


@dataclass
class Recording:
    """What :func:`record` did."""

    out: str
    command: List[str]
    #: Exit status of the recorded program (as Valgrind passes it on).
    returncode: int
    seconds: float
    #: Counts from the conversion: records, accesses, reads, writes, ifetches, io_records,
    #: files, threads, instructions, raw_bytes, complete.
    stats: Dict[str, Any] = field(default_factory=dict)

    @property
    def trace_bytes(self) -> int:
        return os.path.getsize(self.out)


def record(
    command: Sequence[str],
    out: str,
    page_size: int = 4096,
    ifetch: bool = False,
    valgrind_args: Sequence[str] = (),
    stdout: Any = None,
    stderr: Any = None,
) -> Recording:
    """Run ``command`` under the recorder and write its trace to ``out``.

    Raises :class:`Unavailable` when Valgrind or gcc is missing, and ``VmemsimError`` when
    the recorder's stream is malformed or absent (the program could not be started). A
    program that exits with an error still gives its trace (see ``returncode``)."""
    if not command:
        raise ValueError("no command to record")
    if page_size < 2 or page_size & (page_size - 1):
        raise ValueError(f"page size {page_size} is not a power of two of at least 2")
    libdir = build()
    vg = find_valgrind()
    # The trace is written next to ``out`` under a temporary name and renamed when the
    # recording succeeded: a program that cannot be started leaves no empty file behind and
    # an existing ``out`` untouched. Fail before the program starts if it cannot be created
    # (a converter that stopped early would leave the recorder writing into a closed pipe).
    final = out
    d, base = os.path.split(os.path.abspath(out))
    try:
        fd, out = tempfile.mkstemp(prefix=f".{base}.", suffix=".part", dir=d)
        try:
            os.fchmod(fd, umask_mode())  # a new file's usual mode, not mkstemp's 0o600
        finally:
            os.close(fd)
    except OSError as e:
        raise _native.VmemsimError(f"{final}: cannot create the trace: {e.strerror}") from None
    try:
        rec = _record_into(command, out, final, page_size, ifetch, valgrind_args, stdout,
                           stderr, libdir, vg)
        os.replace(out, final)
    except BaseException:
        try:
            os.unlink(out)
        except OSError:
            pass
        raise
    rec.out = final
    return rec


def _record_into(command: Sequence[str], out: str, final: str, page_size: int, ifetch: bool,
                 valgrind_args: Sequence[str], stdout: Any, stderr: Any, libdir: Any,
                 vg: Dict[str, Any]) -> "Recording":
    tmp = tempfile.mkdtemp(prefix="vmemsim-record-")
    fifo = os.path.join(tmp, "stream")
    os.mkfifo(fifo, 0o600)
    cmd = list(command)
    origin = shlex.join(cmd)
    extra = [
        ("recorder", f"{TOOL} ({vg['version']})"),
        ("command", origin),
        ("cwd", os.getcwd()),
    ]
    result: Dict[str, Any] = {}

    def convert() -> None:
        try:
            result["stats"] = _native.record_convert(fifo, out, origin, extra)
        except BaseException as e:  # reported by the caller's thread
            result["error"] = e

    conv = threading.Thread(target=convert, name="vmemsim-record-convert", daemon=True)
    conv.start()
    argv = [
        str(vg["exe"]), f"--tool={TOOL}", "-q", f"--out={fifo}", f"--page-size={page_size}",
        f"--ifetch={'yes' if ifetch else 'no'}", *valgrind_args, *cmd,
    ]
    env = dict(os.environ, VALGRIND_LIB=str(libdir))
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=stdout, stderr=stderr)
    # Ctrl-C / SIGTERM go to the program (Valgrind then finishes the stream), not to us.
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    in_main = threading.current_thread() is threading.main_thread()
    try:
        if in_main:
            for s in old:
                signal.signal(s, lambda sig, _f: proc.send_signal(sig))
        rc = proc.wait()
    finally:
        if in_main:
            for s, h in old.items():
                signal.signal(s, h)
    seconds = time.perf_counter() - t0
    conv.join(timeout=2.0)
    if conv.is_alive():
        # Valgrind exited without opening the FIFO (the command could not be started):
        # open the write end so that the converter sees an empty stream and stops.
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass
        conv.join()
    try:
        os.unlink(fifo)
        os.rmdir(tmp)
    except OSError:
        pass
    if "error" in result:
        err = result["error"]
        if "wrong magic" in str(err):
            raise _native.VmemsimError(
                f"the recorder wrote nothing: valgrind exited with status {rc} "
                f"before the program started ({origin})"
            ) from None
        raise err
    seconds = max(seconds, 1e-9)
    return Recording(out=out, command=cmd, returncode=rc, seconds=seconds,
                     stats=dict(result["stats"]))


def read_recorded(path: str) -> Dict[str, Any]:
    """Every record of a native trace (version 1 or 2) with all its fields: ``page``,
    ``write``, ``ifetch``, ``tid``, ``count``, ``stamp`` (numpy arrays, one entry per access
    record), ``events`` (file I/O records as dicts with ``index``, the number of access
    records before it, ``op``, ``tid``, ``stamp``, ``file``, ``path``, ``offset``, ``len``,
    ``addr``), ``files`` (id → path), ``version``, ``page_size``, ``origin``, ``meta``."""
    d = _native.read_recorded(os.fspath(path))
    d["meta"] = dict(d["meta"])
    return d
