"""The real kernel as yardstick: ``vmemsim validate``.

Runs a workload on a real Linux kernel under QEMU (:mod:`.kernel`), the same access sequence
through vmemsim (:mod:`.compare`), and sets the counters side by side.
"""
