"""The one "did you mean" of vmemsim's messages (CLI options, policies, sweep keys and
sections, figures): the core's ``did_you_mean`` (nearest name by edit distance, adjacent
swaps counting one, within a third of the word's length), so Rust and Python messages agree."""

from __future__ import annotations

from typing import Iterable

from . import _native


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """`` (did you mean 'lru'?)`` for the nearest of ``options``, or ``""``."""
    return _native.did_you_mean(str(word), [str(o) for o in options])
