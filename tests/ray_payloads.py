"""Module-level task functions for tests/test_ray_executor.py. Ray pickles a function by
module and name, so the workers import this module: the test's Ray head is started with
this directory on PYTHONPATH."""

from __future__ import annotations

import os
import time


def square(payload: dict) -> dict:
    """The payload's ``x`` squared; raises ValueError for a payload with ``fail`` set."""
    if payload.get("fail"):
        raise ValueError(f"payload {payload['x']} asked to fail")
    return {"x": payload["x"], "square": payload["x"] * payload["x"], "pid": os.getpid()}


def noop(payload: dict) -> dict:
    return payload


def crash_or_square(payload: dict) -> dict:
    """For a payload with ``log``: append a line to that file (so a test can count how often
    this ran), then end the worker process without raising, as a crashing run would.
    Otherwise :func:`square`."""
    if "log" not in payload:
        return square(payload)
    with open(payload["log"], "a") as f:
        f.write("ran\n")
    os._exit(3)


def sleep_or_return(payload: dict) -> dict:
    """Sleep ``payload['sleep']`` seconds, then return the payload."""
    time.sleep(payload.get("sleep", 0))
    return payload
