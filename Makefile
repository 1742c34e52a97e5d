# vmemsim: `make test` works on a fresh machine with only a Rust toolchain, python3 and pip.

PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
export PIP_ROOT_USER_ACTION := ignore

.PHONY: test install recorder deps-debian rust-test py-test demo clean

test: install rust-test py-test

# maturin builds the Rust extension (release profile) and installs the package editable, so
# `python -m vmemsim` and the tests see the tree as it is.
install:
	$(PIP) install -q --disable-pip-version-check "maturin>=1.5,<2"
	$(PIP) install -q --disable-pip-version-check --no-build-isolation -e ".[test]"
	$(PYTHON) python/vmemsim/recorder/build.py --if-available

# The Valgrind tool behind `vmemsim trace record` (built on first use otherwise; says what is
# missing when Valgrind's tool headers or gcc are not installed).
recorder:
	$(PYTHON) python/vmemsim/recorder/build.py --verbose

# Debian/Ubuntu packages the recorder and its tests need (run as root; CI calls it).
deps-debian:
	apt-get install -y --no-install-recommends valgrind gcc libc6-dev || \
	  (apt-get update -qq && apt-get install -y --no-install-recommends valgrind gcc libc6-dev)

rust-test:
	cargo test -p vmemsim-core

py-test:
	$(PYTHON) -m pytest -q tests

demo: install
	$(PYTHON) -m vmemsim demo

clean:
	cargo clean
	rm -f python/vmemsim/_native*.so
	rm -rf .pytest_cache .hypothesis
