"""Executors: where the runs of a sweep execute.

An executor maps a run function over payloads and yields each ``(payload, result)`` as it
finishes, in any order; ``result`` is the exception when the function raised or its worker
died, so one failure never stops the map. At most a few payloads per worker are in flight,
and payloads are pulled lazily, so a sweep killed at any moment loses only those.

- :class:`LocalExecutor`: worker processes on this machine (``--executor local``).
- :class:`vmemsim.sweep.ray_executor.RayExecutor`: tasks on a Ray cluster
  (``--executor ray``).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, List, Optional, Protocol, Tuple, Union

from .._native import VmemsimError

RunFn = Callable[[Dict[str, Any]], Dict[str, Any]]
Outcome = Tuple[Dict[str, Any], Union[Dict[str, Any], BaseException]]


class Executor(Protocol):
    name: str
    workers: int

    def map_unordered(self, fn: RunFn, payloads: Iterable[Dict[str, Any]]) -> Iterator[Outcome]:
        ...

    def close(self) -> None:
        ...


class WorkerDied(RuntimeError):
    """The process running a payload ended without answering (killed, crashed)."""


def _worker_main(conn: Connection, fn: RunFn) -> None:
    # Ctrl-C (and a SIGTERM or SIGHUP sent to the process group: `timeout`, a closed
    # terminal, a batch system) reaches every process; the parent decides what stops and
    # records what finished, so a worker ignores them and is killed by the parent instead.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    while True:
        try:
            p = conn.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if p is None:
            return
        try:
            out: Any = ("ok", fn(p))
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            out = ("err", f"{type(e).__name__}: {e}")
        try:
            conn.send(out)
        except (BrokenPipeError, OSError):
            return


class _Worker:
    def __init__(self, ctx: Any, fn: RunFn) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker_main, args=(child, fn), daemon=True)
        self.proc.start()
        child.close()
        self.payload: Optional[Dict[str, Any]] = None

    def stop(self, hard: bool) -> None:
        try:
            if hard:
                self.proc.kill()  # SIGKILL: it ignores SIGTERM
            else:
                self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.proc.join(timeout=None if not hard else 5)
        if self.proc.is_alive():  # pragma: no cover - a worker that ignores SIGTERM
            self.proc.kill()
            self.proc.join()
        self.conn.close()


class LocalExecutor:
    """``workers`` processes on this machine, each running one payload at a time.

    Workers start from a fork server (a clean process that has imported vmemsim once), so
    starting them is cheap and safe even when the parent has threads (the progress bar).
    A worker that dies is replaced and its payload is reported as :class:`WorkerDied`.
    """

    name = "local"

    def __init__(self, workers: Optional[int] = None) -> None:
        n = workers if workers is not None else (os.cpu_count() or 1)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise VmemsimError(f"workers: expected a whole number of at least 1, got {workers!r}")
        self.workers = n
        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        self._ctx = mp.get_context(method)
        if method == "forkserver":
            self._ctx.set_forkserver_preload(["vmemsim.sweep.runner"])
        self._pool: List[_Worker] = []
        self._fn: Optional[RunFn] = None

    def map_unordered(self, fn: RunFn, payloads: Iterable[Dict[str, Any]]) -> Iterator[Outcome]:
        if fn is not self._fn:  # workers are started with their function
            self.close()
            self._fn = fn
        it = iter(payloads)
        idle: Deque[_Worker] = deque(self._pool)
        busy: Dict[Any, _Worker] = {}
        exhausted = False
        clean = False
        try:
            while True:
                while not exhausted and (idle or len(self._pool) < self.workers):
                    try:
                        p = next(it)
                    except StopIteration:
                        exhausted = True
                        break
                    w = idle.popleft() if idle else self._spawn(fn)
                    w.payload = p
                    w.conn.send(p)
                    busy[w.conn] = w
                if not busy:
                    clean = True
                    return
                ready = wait(list(busy) + [w.proc.sentinel for w in busy.values()])
                for obj in ready:
                    w = busy.get(obj) or next(
                        (b for b in busy.values() if b.proc.sentinel == obj), None)
                    if w is None or w.conn not in busy:
                        continue  # already handled through its other handle
                    p = w.payload
                    try:
                        kind, value = w.conn.recv()
                    except (EOFError, OSError):
                        kind, value = "died", None
                    del busy[w.conn]
                    w.payload = None
                    if kind == "died":
                        w.proc.join(timeout=5)
                        code = w.proc.exitcode
                        self._pool.remove(w)
                        w.conn.close()
                        how = (f"killed by signal {-code}" if code is not None and code < 0
                               else f"exit status {code}")
                        yield p, WorkerDied(f"worker process died ({how}) while running")
                        continue
                    idle.append(w)
                    yield p, (value if kind == "ok" else RuntimeError(value))
        finally:
            # Normal end: workers are reused by the next map. Closed early or interrupted:
            # what is in flight is abandoned, its workers terminated.
            if not clean:
                for w in list(busy.values()):
                    w.stop(hard=True)
                    self._pool.remove(w)

    def _spawn(self, fn: RunFn) -> _Worker:
        w = _Worker(self._ctx, fn)
        self._pool.append(w)
        return w

    def close(self) -> None:
        for w in self._pool:
            w.stop(hard=False)
        self._pool.clear()

    def __enter__(self) -> "LocalExecutor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def make_executor(kind: str, workers: Optional[int] = None, address: Optional[str] = None) -> Any:
    """An executor by name: ``local`` or ``ray`` (``address`` only for ray)."""
    if kind == "local":
        if address is not None:
            raise VmemsimError("--address: only for --executor ray")
        return LocalExecutor(workers)
    if kind == "ray":
        from .ray_executor import RayExecutor

        return RayExecutor(address=address, workers=workers)
    raise VmemsimError(f"executor: unknown executor {kind!r} (known: local, ray)")
