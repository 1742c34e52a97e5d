"""Run functions for the executor tests: module-level, so worker processes can import them."""

import os
import signal
import time


def square(p):
    return {"run_id": p["run_id"], "value": p["x"] * p["x"]}


def maybe_fail(p):
    if p["x"] == 3:
        raise ValueError("three is not allowed")
    if p["x"] == 5:
        os.kill(os.getpid(), signal.SIGKILL)  # a worker that crashes
    return {"run_id": p["run_id"], "value": p["x"] * p["x"]}


def slow(p):
    time.sleep(0.05)
    return {"run_id": p["run_id"], "value": p["x"]}
