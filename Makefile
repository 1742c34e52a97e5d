# vmemsim: `make test` works on a fresh machine with only a Rust toolchain, python3 and pip.

PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
export PIP_ROOT_USER_ACTION := ignore

.PHONY: test install recorder deps-debian deps-drivers deps-kernel rust-test py-test demo clean

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

# Programs of `vmemsim workloads record` (run as root; CI calls it): Debian packages, and
# python-igraph (the pagerank driver) through the package's "drivers" extra.
DRIVER_DEBS := redis-server redis-tools memcached pbzip2 gzip coreutils gcc stress-ng
deps-drivers:
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
