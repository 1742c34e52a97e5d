# vmemsim: `make test` works on a fresh machine with only a Rust toolchain and python3.
#
# Everything runs in a virtual environment, .venv by default (the README's first command
# makes the same one): a distribution's python3 refuses `pip install` outside one (PEP 668).
# It is created on first use. `make test VENV=DIR` uses another one; `make test PYTHON=...`
# uses that interpreter as it is (an environment you manage yourself).

VENV ?= .venv
PYTHON ?= $(VENV)/bin/python
PIP ?= $(PYTHON) -m pip
export PIP_ROOT_USER_ACTION := ignore

.PHONY: test venv install recorder deps-debian deps-drivers deps-kernel lint rust-test py-test demo clean

test: install lint rust-test py-test

# `python3 -m venv` needs ensurepip (Debian/Ubuntu: the python3-venv package); without it,
# the environment is made without pip and pip is installed into it by the system's pip.
venv:
	@if [ "$(PYTHON)" = "$(VENV)/bin/python" ] && [ ! -x "$(PYTHON)" ]; then \
	  echo "creating the virtual environment $(VENV)"; \
	  python3 -m venv "$(VENV)" 2>/dev/null || { rm -rf "$(VENV)" && \
	    python3 -m venv --without-pip "$(VENV)" && \
	    python3 -m pip --python "$(VENV)/bin/python" install -q --disable-pip-version-check pip; } || \
	  { rm -rf "$(VENV)"; echo "error: cannot create $(VENV): install python3-venv (apt-get install python3-venv) or pip" >&2; exit 1; }; \
	fi

# maturin builds the Rust extension (release profile) and installs the package editable, so
# `python -m vmemsim` and the tests see the tree as it is.
install: venv
	$(PIP) install -q --disable-pip-version-check "maturin>=1.5,<2"
	$(PIP) install -q --disable-pip-version-check --no-build-isolation -e ".[test]"
	$(PYTHON) python/vmemsim/recorder/build.py --if-available

# The Valgrind tool behind `vmemsim trace record` (built on first use otherwise; says what is
# missing when Valgrind's tool headers or gcc are not installed).
recorder: venv
	$(PYTHON) python/vmemsim/recorder/build.py --verbose

# Debian/Ubuntu packages the recorder and its tests need (run as root; CI calls it).
deps-debian:
	apt-get install -y --no-install-recommends valgrind gcc libc6-dev || \
	  (apt-get update -qq && apt-get install -y --no-install-recommends valgrind gcc libc6-dev)

# Programs of `vmemsim workloads record` (run as root; CI calls it): Debian packages, and
# python-igraph (the pagerank driver) through the package's "drivers" extra.
DRIVER_DEBS := redis-server redis-tools memcached pbzip2 gzip coreutils gcc stress-ng
deps-drivers: venv
	apt-get install -y --no-install-recommends $(DRIVER_DEBS) || \
	  (apt-get update -qq && apt-get install -y --no-install-recommends $(DRIVER_DEBS))
	$(PIP) install -q --disable-pip-version-check "igraph>=0.10"

# What `vmemsim validate` boots a real kernel with (run as root; CI calls it): QEMU, a static
# busybox for the initramfs, gcc and glibc's static libraries for the guest workload program.
# The kernel itself is fetched by `apt-get download` on first use (no root needed).
KERNEL_DEBS := qemu-system-x86 busybox-static gcc libc6-dev
deps-kernel:
	apt-get install -y --no-install-recommends $(KERNEL_DEBS) || \
	  (apt-get update -qq && apt-get install -y --no-install-recommends $(KERNEL_DEBS))

# Formatting and lints: rustfmt, clippy with warnings as errors, ruff (its rules in
# pyproject.toml), and the binding's stubs (_native.pyi) against the compiled module.
lint: install
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(PYTHON) -m ruff check python tests experiments benchmarks fuzz/python
	cd python && $(abspath $(PYTHON)) -m mypy.stubtest vmemsim._native

rust-test:
	cargo test -p vmemsim-core

py-test:
	$(PYTHON) -m pytest -q tests

demo: install
	$(PYTHON) -m vmemsim demo

clean:
	cargo clean
	rm -f python/vmemsim/_native*.so
	rm -rf .pytest_cache .hypothesis $(VENV)
