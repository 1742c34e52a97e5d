"""Fuzz the experiment-file parser (``vmemsim.sweep.spec.parse_experiment``) with atheris.

An experiment file is TOML checked against the configuration schema. For any text the parser
must return an experiment or raise ``VmemsimError`` (the documented error for a bad file,
naming the file and the key); any other exception is a bug. An experiment that parses must
expand: at least one run, and its first and last runs are built with stable run ids.

    /work/venv/bin/pip install atheris
    PYTHONPATH=python python fuzz/python/fuzz_sweep_spec.py CORPUS_DIR fuzz/corpus/sweep_spec \\
        -runs=1000000

The arguments after the script are libFuzzer's (``-runs``, ``-max_total_time``, corpus dirs).
"""

import sys

import atheris

with atheris.instrument_imports(include=["vmemsim.sweep", "tomllib"]):
    from vmemsim import VmemsimError
    from vmemsim.sweep.spec import parse_experiment, run_id


def check(text: str) -> None:
    try:
        exp = parse_experiment(text, "fuzz.toml")
    except VmemsimError:
        return
    assert exp.total >= 1, exp.total
    for i in {0, exp.total - 1}:
        run = exp.run_at(i)
        assert run.index == i
        assert run.run_id == run_id(run.config, run.seed)


def test_one_input(data: bytes) -> None:
    check(data.decode("utf-8", errors="replace"))


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
