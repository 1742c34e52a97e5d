"""Small helpers for the files vmemsim writes."""

from __future__ import annotations

import os


def umask_mode() -> int:
    """The mode a new file gets from ``open`` (0o666 less the umask). ``tempfile.mkstemp``
    makes its files 0o600, which would leave traces and results unreadable to a group."""
    um = os.umask(0o022)
    os.umask(um)
    return 0o666 & ~um
