"""Experiment files (``parse_experiment``) under random mutation: the only exception a bad
file raises is ``VmemsimError``, and a file that parses expands into runs. A quick, seeded
version of the atheris fuzzer ``fuzz/python/fuzz_sweep_spec.py``."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from vmemsim import VmemsimError
from vmemsim.sweep.spec import SCHEMA, parse_experiment, run_id

ROOT = Path(__file__).resolve().parent.parent
SEEDS = sorted((ROOT / "fuzz" / "corpus" / "sweep_spec").glob("*.toml"))

# Pieces of TOML syntax and of the schema that mutations insert.
TOKENS = [
    "[", "]", "[[", "]]", "{", "}", "=", ",", ".", '"', "'", '"""', "'''", "\n", "#", " ",
    "\\u0000", "\\", "0", "-1", "1e309", "inf", "nan", "-0.0", "0x10", "1_000", "true",
    "false", "1979-05-27T07:32:00Z", "07:32:00", "1979-05-27", "[]", "{}", "[1, 2]",
    '"25%"', '"0%"', '"nan%"', '"default"', "experiment", "sweep", "zip", "cases",
    "report", "figures", "machine", "workload", "vm", "options", "costs", "seeds",
    *sorted({p.split(".")[-1] for p in SCHEMA}),
]


def check(text: str) -> None:
    try:
        exp = parse_experiment(text, "m.toml")
    except VmemsimError:
        return
    assert exp.total >= 1
    for i in {0, exp.total - 1}:
        run = exp.run_at(i)
        assert run.run_id == run_id(run.config, run.seed)


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 4)):
        i = rng.randint(0, len(text))
        j = min(len(text), i + rng.randint(0, 40))
        op = rng.randrange(5)
        if op == 0:
            text = text[:i] + text[j:]
        elif op == 1:
            text = text[:i] + rng.choice(TOKENS) + text[i:]
        elif op == 2:
            text = text[:i] + text[i:j] * rng.randint(2, 4) + text[j:]
        elif op == 3:
            text = text[:i] + chr(rng.choice([0, 9, 10, 13, 0x7F, 0xE9, 0x2028, 0xFEFF])) + text[i:]
        else:
            k = rng.randint(0, len(text))
            text = text[:i] + text[k:k + rng.randint(1, 60)] + text[i:]
    return text


@pytest.mark.parametrize("seed_file", SEEDS, ids=lambda p: p.name)
def test_mutated_experiment_files_raise_only_vmemsim_error(seed_file: Path) -> None:
    text = seed_file.read_text()
    check(text)
    rng = random.Random(seed_file.name)
    for _ in range(60):
        check(mutate(text, rng))


@pytest.mark.parametrize("text", [
    "x = " + "[" * 3000 + "]" * 3000,
    "x = " + "{a=" * 3000 + "1" + "}" * 3000,
    '[experiment]\nname = "t"\n[sweep]\n' + ".".join(["machine"] + ["a"] * 3000) + " = [1]\n",
    '[experiment]\nname = "t"\n[machine]\n' + ".".join(["a"] * 3000) + " = 1\n",
])
def test_deep_nesting_is_a_vmemsim_error(text: str) -> None:
    # Found while writing fuzz/python/fuzz_sweep_spec.py: tomllib and flatten() recursed, and the
    # parser raised RecursionError.
    with pytest.raises(VmemsimError, match="m.toml"):
        parse_experiment(text, "m.toml")
