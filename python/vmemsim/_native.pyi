"""Typed stubs of the compiled core binding (``crates/vmemsim-py``). Private: use ``vmemsim``."""

from typing import Any, Callable, Mapping, Optional

import numpy as np
import numpy.typing as npt

__version__: str

class VmemsimError(ValueError):
    """Bad input: the message is one line naming the file and line, or the configuration key."""

def version() -> str: ...
def policies() -> list[tuple[str, str, str]]:
    """Every registered policy as ``(name, description, family)``."""

def trace_formats() -> list[str]: ...
def replay_path(
    path: str,
    format: Optional[str],
    policy: str,
    frames: str,
    seed: int = 0,
    options: Optional[Mapping[str, str]] = None,
    machine: Optional[Mapping[str, Any]] = None,
    progress: Optional[Callable[[int, Optional[int]], Any]] = None,
) -> str:
    """Replay a trace file; returns the JSON of the core's ``ReplayResult``."""

def replay_array(
    pages: npt.NDArray[np.uint64] | npt.NDArray[np.int64],
    writes: Optional[npt.NDArray[np.bool_]],
    policy: str,
    frames: str,
    seed: int = 0,
    options: Optional[Mapping[str, str]] = None,
    machine: Optional[Mapping[str, Any]] = None,
    progress: Optional[Callable[[int, Optional[int]], Any]] = None,
) -> str:
    """Replay page numbers in memory; returns the JSON of the core's ``ReplayResult``."""
