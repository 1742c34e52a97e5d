"""Run a sweep's runs as Ray tasks, on this machine or on a Ray cluster.

:class:`RayExecutor` follows the sweep's executor protocol (see ``executors.py``): it runs
``fn(payload)`` for every payload, one Ray task per run asking for one CPU, and yields
``(payload, result)`` as each run finishes. Only about ``2 * workers`` runs are in flight at
once, so payloads are drawn lazily and a killed sweep loses only those.

Where the runs happen is chosen by ``address``:

``None``
    a private Ray instance on this machine with ``workers`` CPUs (default: all of them),
    started by the constructor and shut down by :meth:`RayExecutor.close`. If this process
    has already called ``ray.init`` itself, that connection is used and left open.
``"HOST:PORT"`` or ``"auto"``
    join the existing cluster whose head (GCS) listens there as a driver; ``"auto"`` finds a
    cluster started on this machine with ``ray start``. This machine must be able to reach
    every node of the cluster.
``"ray://HOST:PORT"``
    Ray Client: talk to the head's client server (port 10001 by default) over one gRPC
    connection, for a laptop outside the cluster's network.

Closing only disconnects from a cluster it joined; the cluster keeps running.

A cluster for sweeps (the full recipe is in docs/ray.md)::

    head$    ray start --head --port=6379            # also serves Ray Client on 10001
    worker$  ray start --address=HEAD:6379           # on every other node
    laptop$  vmemsim sweep run exp.toml --executor ray --address HEAD:6379
             vmemsim sweep run exp.toml --executor ray --address ray://HEAD:10001

Every node runs the runs itself, so every node needs the *same* vmemsim version installed in
the Python environment that ran ``ray start`` (runs are looked up by module and function
name, and a version mismatch would mix results of different simulators). For a cluster
without vmemsim, pass a Ray ``runtime_env``, e.g. ``RayExecutor(address,
runtime_env={"pip": ["vmemsim==X.Y.Z"]})``; it is given to ``ray.init`` unchanged, and
needs a cluster installed with ``ray[default]``.

What is left out: Ray's own retries (a run whose worker crashes is reported once, never
re-run behind the sweep's back), resources other than one CPU per run, and actors.
"""

from __future__ import annotations

import logging
import os
import re
import socket
from typing import Any, Callable, Dict, Iterable, Iterator, Optional, Tuple, Union

from .._native import VmemsimError

__all__ = ["RayExecutor"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NO_RAY = "the ray executor needs the ray package: pip install 'vmemsim[ray]'"


def _shutdown_quietly(ray: Any) -> None:
    try:
        ray.shutdown()
    except Exception:  # noqa: BLE001 - nothing was connected
        pass


class RemoteTraceback(Exception):
    """The traceback of an exception raised inside a Ray task, as text. It is set as the
    ``__cause__`` of the exception :meth:`RayExecutor.map_unordered` yields, the way
    ``concurrent.futures`` does for a process pool, so a printed traceback shows where in
    the worker the run failed."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


class RayExecutor:
    """Run sweep payloads as Ray tasks; see the module documentation for ``address``.

    ``workers`` is how many runs go at once: for a private instance the CPUs it gets
    (default ``os.cpu_count()``), for a cluster by default its total CPU count. Each run
    asks Ray for one CPU. ``runtime_env`` is passed to ``ray.init`` unchanged (the Ray
    documentation's dict: ``pip``, ``env_vars``, ``py_modules``, ...).

    Importing this module does not import Ray; the constructor does, and raises
    :class:`vmemsim.VmemsimError` if Ray is not installed or the cluster cannot be reached.
    """

    name = "ray"

    def __init__(
        self,
        address: Optional[str] = None,
        workers: Optional[int] = None,
        *,
        runtime_env: Optional[Dict[str, Any]] = None,
    ) -> None:
        if workers is not None and (
            isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
        ):
            raise VmemsimError(f"workers: expected a positive integer, got {workers!r}")
        if address is not None and (not isinstance(address, str) or not address.strip()):
            raise VmemsimError(
                f"address: expected 'HOST:PORT', 'auto' or 'ray://HOST:PORT', got {address!r}"
            )
        try:
            import ray
        except ImportError as e:
            raise VmemsimError(_NO_RAY) from e
        self._ray = ray
        self.address = address
        self._remotes: Dict[Callable[[dict], dict], Any] = {}
        self._closed = False
        # Whether close() shuts down the Ray runtime this executor started or joined.
        self._owns_connection = True

        if address is None and ray.is_initialized():
            if runtime_env is not None:
                raise VmemsimError(
                    "runtime_env: this process is already connected to ray, and a runtime_env "
                    "can only be given when connecting; pass it to ray.init instead"
                )
            self._owns_connection = False
        elif address is None:
            # "local" starts a new instance even if `ray start` left a cluster's address in
            # /tmp/ray/ray_current_cluster (ray.init() with no address would join that one).
            # Usage statistics are off unless the user asked for them.
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            try:
                ray.init(
                    address="local",
                    num_cpus=workers or os.cpu_count() or 1,
                    include_dashboard=False,
                    runtime_env=runtime_env,
                    logging_level=logging.WARNING,
                )
            except Exception as e:  # noqa: BLE001 - Ray raises many kinds; say which start failed
                raise VmemsimError(f"cannot start a local ray instance: {_why(e)}") from e
        else:
            if ray.is_initialized():
                raise VmemsimError(
                    f"address {address!r}: this process is already connected to ray; "
                    "call ray.shutdown() first"
                )
            _probe(address)
            # Ray Client's proxy starts one server process per client and, racing with it,
            # reads that process's command line; when the process is briefly a zombie the
            # start is reported as failed ("Initialization failure from server", psutil
            # ZombieProcess in `start_specific_server`, Ray 2.60). A second attempt gets a
            # fresh server, so Ray Client connections are tried up to 3 times.
            attempts = 3 if address.startswith("ray://") else 1
            for attempt in range(attempts):
                try:
                    ray.init(address=address, runtime_env=runtime_env,
                             logging_level=logging.WARNING)
                    break
                except Exception as e:  # noqa: BLE001
                    _shutdown_quietly(ray)  # leave no half-made connection behind
                    retry = "Initialization failure from server" in str(e)
                    if attempt + 1 < attempts and retry:
                        continue
                    raise VmemsimError(
                        f"cannot connect to the ray cluster at {address!r}: {_why(e)}"
                    ) from e

        if workers is None:
            try:
                cpus = int(ray.cluster_resources().get("CPU", 0))
            except Exception:
                self.close()
                raise
            if cpus < 1:
                self.close()
                where = repr(address) if address else "this machine"
                raise VmemsimError(f"the ray cluster at {where} reports no CPUs")
            workers = cpus
        self.workers: int = workers

    # -- executor protocol -------------------------------------------------------------------

    def map_unordered(
        self, fn: Callable[[dict], dict], payloads: Iterable[dict]
    ) -> Iterator[Tuple[dict, Union[dict, BaseException]]]:
        """Yield ``(payload, fn(payload))`` for every payload as its task finishes, in any
        order. A run that raised yields its exception (the original one, with the remote
        traceback as ``__cause__``); a run whose worker died yields Ray's error for that
        (e.g. ``ray.exceptions.WorkerCrashedError``). At most ``2 * workers`` payloads are
        drawn ahead of the results; closing the generator cancels the tasks still in flight
        (killing their workers). An error that is not Ray's report on one task, such as the
        ``ConnectionError`` of a lost Ray Client connection, is raised and ends the map."""
        if self._closed:
            raise VmemsimError("the ray executor is closed")
        ray = self._ray
        remote = self._remote(fn)
        limit = 2 * self.workers
        source = iter(payloads)
        pending: Dict[Any, dict] = {}  # ObjectRef -> payload
        drained = False
        try:
            while True:
                while not drained and len(pending) < limit:
                    try:
                        payload = next(source)
                    except StopIteration:
                        drained = True
                        break
                    pending[remote.remote(payload)] = payload
                if not pending:
                    return
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    payload = pending.pop(ref)
                    yield payload, self._result(ref)
        finally:
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 - finished meanwhile, or connection gone
                    pass

    def close(self) -> None:
        """Shut down the private instance, or disconnect from the cluster. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._remotes.clear()
        if self._owns_connection and self._ray.is_initialized():
            self._ray.shutdown()

    def __enter__(self) -> "RayExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------------

    def _remote(self, fn: Callable[[dict], dict]) -> Any:
        # One CPU per run; no retries, so a run that crashes its worker is reported, not
        # silently repeated. The function is pickled by reference (module + name), which is
        # why the workers must be able to import it.
        remote = self._remotes.get(fn)
        if remote is None:
            remote = self._ray.remote(num_cpus=1, max_retries=0)(fn)
            self._remotes[fn] = remote
        return remote

    def _result(self, ref: Any) -> Union[dict, BaseException]:
        exceptions = self._ray.exceptions
        try:
            return self._ray.get(ref)
        except exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            # An unpicklable original exception arrives as a plain RayError with the
            # traceback in its message; the RayTaskError itself says more then.
            if isinstance(cause, BaseException) and not isinstance(cause, exceptions.RayError):
                # str() of Ray's error is the remote traceback ("ray::fn() (pid=..., ip=...)"
                # and the frames), coloured for a terminal.
                if cause.__cause__ is None:
                    cause.__cause__ = RemoteTraceback(_ANSI.sub("", str(e)))
                return cause
            return e
        except exceptions.RayError as e:
            # The worker or its node died, the task was cancelled, its result was lost...
            # one run's failure, not the sweep's.
            return e


def _why(e: BaseException) -> str:
    """One line for a failed ray.init: the first line of its message, and the last line of
    the error at the bottom of its ``__cause__`` chain. Ray wraps e.g. an authentication
    failure in a ConnectionError that says only "Failed to connect", caused by a RuntimeError
    whose message is a whole traceback ending in the AuthenticationError's text."""
    root = e
    while root.__cause__ is not None and root.__cause__ is not root:
        root = root.__cause__
    lines = [str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__]
    if root is not e and str(root).strip():
        lines.append(str(root).strip().splitlines()[-1].strip())
    return ": ".join(lines)


def _probe(address: str) -> None:
    """Fail fast when nothing listens at a HOST:PORT address: ray.init retries a dead
    address for many minutes (each try waits for a gRPC timeout) before it gives up.
    ``auto`` and addresses without a port are left to Ray."""
    hostport = address[len("ray://") :] if address.startswith("ray://") else address
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        return
    host = host.strip("[]")  # [::1]:6379
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as e:
        raise VmemsimError(
            f"cannot connect to the ray cluster at {address!r}: no connection to {hostport} "
            f"({e.strerror or e})"
        ) from e
