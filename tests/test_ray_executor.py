"""RayExecutor against a real Ray head on this machine.

One head is started for the module with the ``ray`` CLI of this interpreter
(``python -m ray.scripts.scripts start --head --block``) in a process group of its own and a
temporary directory of its own (RAY_TMPDIR points there too, for the private instance
one test starts); teardown kills that process group, never ``ray stop``, which finds Ray
processes by name and would stop every Ray instance on the machine it may signal. The head runs with this directory
on its PYTHONPATH, so its workers import the task functions of ``ray_payloads.py`` by name,
as they import ``vmemsim.sweep.runner.run_one`` in a real sweep. The head and the drivers
share a one-off authentication token (RAY_AUTH_MODE=token, RAY_AUTH_TOKEN), so nothing else
can submit work to it while it runs and ~/.ray is not touched.

The module is skipped only when ``import ray`` fails.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List

import pytest

import ray_payloads
import vmemsim
from vmemsim.sweep.ray_executor import RayExecutor, RemoteTraceback

TESTS = Path(__file__).resolve().parent
#: How long the head may take to come up on a loaded 2-core machine.
START_TIMEOUT = 120.0


@dataclass
class Head:
    gcs: str  # HOST:PORT of the head's GCS, for a driver
    client: str  # ray://HOST:PORT of its Ray Client server
    log: Path


def _free_ports(n: int) -> List[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the head's process group (``ray start`` and every daemon and worker it
    spawned; they stay in the group), then SIGKILL what is left of it."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the group outlives its leader
    except ProcessLookupError:
        pass
    proc.wait()


@pytest.fixture(scope="module")
def ray_head() -> Iterator[Head]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_AUTH_MODE", "token")
        mp.setenv("RAY_AUTH_TOKEN", secrets.token_hex(32))
        mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
        ray = pytest.importorskip("ray", reason="ray is not installed: pip install 'vmemsim[ray]'")
        # Ray reads RAY_AUTH_MODE into its config when it loads; if an earlier test imported
        # it, re-read it, as Ray's own token setup does (Ray without token auth lacks this).
        refresh = getattr(getattr(ray, "_raylet", None), "Config", None)
        if refresh is not None and hasattr(refresh, "initialize"):
            refresh.initialize("")

        # Short, because Ray's unix socket paths live under it and must fit in 107 bytes.
        temp = Path(tempfile.mkdtemp(prefix="vmr-"))
        # A private instance started by a test keeps its session under here too.
        mp.setenv("RAY_TMPDIR", str(temp))
        gcs, client, dash, agent_http, agent_grpc, env_agent, metrics = _free_ports(7)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(TESTS), env.get("PYTHONPATH", "")) if p
        )
        cmd = [
            sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block",
            "--node-ip-address=127.0.0.1", f"--port={gcs}",
            f"--ray-client-server-port={client}", "--num-cpus=2",
            "--include-dashboard=false", f"--dashboard-port={dash}",
            f"--dashboard-agent-listen-port={agent_http}",
            f"--dashboard-agent-grpc-port={agent_grpc}",
            f"--runtime-env-agent-port={env_agent}", f"--metrics-export-port={metrics}",
            f"--object-store-memory={200 * 2**20}", "--disable-usage-stats",
            f"--temp-dir={temp}",
        ]  # fmt: skip
        log = temp / "ray-start.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(
                cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while "Ray runtime started" not in log.read_text():
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the test's ray head did not start:\n{log.read_text()}")
                time.sleep(0.2)
            yield Head(f"127.0.0.1:{gcs}", f"ray://127.0.0.1:{client}", log)
        finally:
            _stop_group(proc)
            shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture
def executor(ray_head: Head) -> Iterator[RayExecutor]:
    with RayExecutor(ray_head.gcs) as ex:
        yield ex


def _check_squares(results, xs, failing=()) -> None:
    """Every payload of ``xs`` came back exactly once, with x*x or, for ``failing``, the
    ValueError its function raised."""
    assert sorted(p["x"] for p, _ in results) == sorted(xs)
    for payload, result in results:
        x = payload["x"]
        if x in failing:
            assert isinstance(result, ValueError), result
            assert str(result) == f"payload {x} asked to fail"
        else:
            assert result == {"x": x, "square": x * x, "pid": result["pid"]}


def test_importing_vmemsim_does_not_import_ray():
    code = (
        "import sys, vmemsim, vmemsim.sweep.ray_executor\n"
        "assert 'ray' not in sys.modules, 'ray was imported'\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr


def test_missing_ray_is_a_vmemsim_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` raise ImportError
    with pytest.raises(vmemsim.VmemsimError, match=r"pip install 'vmemsim\[ray\]'"):
        RayExecutor()


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_an_address_where_nothing_listens_fails_fast(scheme):
    pytest.importorskip("ray", reason="ray is not installed: pip install 'vmemsim[ray]'")
    [port] = _free_ports(1)
    address = f"{scheme}127.0.0.1:{port}"
    start = time.monotonic()
    with pytest.raises(vmemsim.VmemsimError, match=f"'{address}': no connection to 127.0.0.1:{port}"):
        RayExecutor(address)
    assert time.monotonic() - start < 30  # ray.init alone retries for minutes


@pytest.mark.parametrize("workers", [0, -1, 1.5, True])
def test_bad_workers_are_rejected(workers):
    with pytest.raises(vmemsim.VmemsimError, match="workers"):
        RayExecutor(workers=workers)


def test_cluster_address_runs_every_payload_once(executor):
    assert executor.name == "ray"
    assert executor.workers == 2  # the head's --num-cpus
    xs = list(range(20))
    results = list(executor.map_unordered(ray_payloads.square, ({"x": x} for x in xs)))
    _check_squares(results, xs)
    # The runs ran in the head's worker processes, not in this one.
    assert os.getpid() not in {r["pid"] for _, r in results}


def test_a_raising_run_yields_its_exception_and_the_rest_complete(executor):
    xs = list(range(12))
    payloads = [{"x": x, "fail": x in (3, 8)} for x in xs]
    results = list(executor.map_unordered(ray_payloads.square, payloads))
    _check_squares(results, xs, failing=(3, 8))
    err = next(r for p, r in results if p["x"] == 3)
    # The worker's traceback travels along, as concurrent.futures does it.
    assert isinstance(err.__cause__, RemoteTraceback)
    assert "ray_payloads.py" in str(err.__cause__) and "in square" in str(err.__cause__)


def test_a_crashed_worker_is_reported_once_not_retried(executor, tmp_path):
    ray = pytest.importorskip("ray")
    log = tmp_path / "crash.log"
    payloads = [{"log": str(log), "sleep": 0}, {"x": 5}]
    results = {}
    for payload, result in executor.map_unordered(ray_payloads.crash_or_square, payloads):
        results["crash" if "log" in payload else "ok"] = result
    assert isinstance(results["crash"], ray.exceptions.WorkerCrashedError), results["crash"]
    assert results["ok"]["square"] == 25
    assert log.read_text() == "ran\n"  # max_retries=0: the crashing run ran once


def test_payloads_are_drawn_lazily_at_most_two_per_worker_ahead(executor):
    limit = 2 * executor.workers
    drawn = 0

    def payloads():
        nonlocal drawn
        for x in range(15):
            drawn += 1
            yield {"x": x}

    seen = []
    for k, (payload, _) in enumerate(executor.map_unordered(ray_payloads.square, payloads())):
        if k == 0:
            assert drawn == limit  # filled the window, and no more, before the first result
        assert drawn <= k + limit  # k results done before this one, `limit` in flight
        seen.append(payload["x"])
    assert sorted(seen) == list(range(15))


def test_closing_the_generator_cancels_the_runs_in_flight(executor):
    # One quick run and three that would sleep a minute: with 2 workers, the quick one
    # finishes first while two sleepers run and one waits.
    payloads = [{"x": 0, "sleep": 0}] + [{"x": i, "sleep": 60} for i in (1, 2, 3)]
    gen = executor.map_unordered(ray_payloads.sleep_or_return, payloads)
    first, _ = next(gen)
    assert first["x"] == 0
    gen.close()
    # If the sleepers still held both CPUs, these would wait about a minute.
    start = time.monotonic()
    results = list(executor.map_unordered(ray_payloads.square, [{"x": 4}, {"x": 5}]))
    _check_squares(results, [4, 5])
    assert time.monotonic() - start < 30


def _client_executor(address: str) -> RayExecutor:
    try:
        return RayExecutor(address)
    except vmemsim.VmemsimError as e:
        if "Initialization failure from server" in str(e):
            # Ray 2.60's client proxy reads the command line of the per-client server it has
            # just started and fails when that process is momentarily a zombie
            # (`start_specific_server`, psutil ZombieProcess); the executor already retried.
            pytest.skip(f"Ray Client's proxy failed to start a client server 3 times: {e}")
        raise


def test_ray_client_address(ray_head):
    with _client_executor(ray_head.client) as ex:
        assert ex.workers == 2
        xs = list(range(20))
        payloads = [{"x": x, "fail": x == 7} for x in xs]
        results = list(ex.map_unordered(ray_payloads.square, payloads))
    _check_squares(results, xs, failing=(7,))


def test_private_local_instance_with_runtime_env(ray_head):
    # address=None starts a new instance even though the module's head runs (Ray's
    # address "local"), and runtime_env reaches the workers: here it gives them the
    # PYTHONPATH they need to import ray_payloads.
    ray = pytest.importorskip("ray")
    with RayExecutor(workers=1, runtime_env={"env_vars": {"PYTHONPATH": str(TESTS)}}) as ex:
        assert ex.workers == 1
        assert ray.cluster_resources()["CPU"] == 1  # its own instance, not the 2-CPU head
        results = list(ex.map_unordered(ray_payloads.square, [{"x": x} for x in range(5)]))
        # A second executor in a process already connected uses that connection, and
        # closing it leaves the connection open.
        with RayExecutor() as again:
            assert again.workers == 1
            [(_, r)] = list(again.map_unordered(ray_payloads.square, [{"x": 6}]))
            assert r["square"] == 36
        assert ray.is_initialized()
    _check_squares(results, range(5))
    assert not ray.is_initialized()  # the first one's close() shut its instance down


def test_sweep_cli_on_the_ray_head_matches_local(ray_head, tmp_path):
    # The whole path: `vmemsim sweep run --executor ray --address HOST:PORT` against the
    # test's head gives the same table as the local executor (runs are pure functions).
    exp = tmp_path / "e.toml"
    exp.write_text(
        '[experiment]\nname = "ray-sweep"\nseeds = 3\n'
        '[machine]\nframes = "25%"\n'
        '[workload]\ntrace = "gen:zipf:pages=500,alpha=0.9,n=5000"\n'
        '[sweep]\n"machine.policy" = ["lru", "clock-lru"]\n'
    )

    def run(*extra):
        r = subprocess.run(
            [sys.executable, "-m", "vmemsim", "sweep", "run", str(exp), "-q", *extra],
            capture_output=True, text=True, timeout=180, env=dict(os.environ),
        )
        assert r.returncode == 0, r.stderr
        return r

    r = run("--out", str(tmp_path / "ray"), "--executor", "ray", "--address", ray_head.gcs)
    assert "6/6 runs done" in r.stdout and "ray worker" in r.stdout
    run("--out", str(tmp_path / "local"), "--workers", "2")
    from vmemsim.sweep import open_results

    a = open_results(tmp_path / "ray").table().set_index("run_id").sort_index()
    b = open_results(tmp_path / "local").table().set_index("run_id").sort_index()
    assert list(a.index) == list(b.index)
    for col in ("faults", "major_faults", "pswpout", "pgscan_kswapd"):
        assert list(a[col]) == list(b[col])
