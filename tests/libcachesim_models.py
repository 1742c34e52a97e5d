"""Models of two libCacheSim policies for objects of size 1, written from the rules of their C
source (`libCacheSim/cache/eviction/LIRS.c` and `ClockPro.c`, as bundled in the `libcachesim`
0.3.5 binding), to explain where vmemsim's `lirs` and `clock-pro` cannot equal them.

LIRS.c keeps three LRU lists: S (the LIRS stack), Q (resident HIR objects) and NH (the
non-resident HIR objects of S, in the order they became non-resident), with
`hirs_limit = max(1, ⌊0.01 c⌋)` and `lirs_limit = c − hirs_limit`. Its `evictLIR` moves the
bottom LIR object of S to the MRU end of Q, first evicting Q's LRU object while Q is full, then
prunes S; its `limitStack` (after every request) forgets the oldest NH objects while S holds
more than 2c entries; its `occupied_byte` counts residents.

With `hit_rule="libcachesim"` the model follows `hit_RD_HIRinQ`: a hit on a resident HIR object
that is not in S first runs `evictLIR` while the LIR set is full, although no object changes
status, so a hit can evict (with `hirs_limit = 1`, the accessed object itself leaves Q and then
sits in S as a "resident" HIR object outside Q and outside the occupancy count). With
`hit_rule="paper"` the object is only pushed on S and moved to the end of Q, as the paper's
§3.3 says and vmemsim does. The tests check that the first reproduces libCacheSim and the
second vmemsim, miss for miss.

ClockPro.c for objects of size 1 admits the first ⌊init_ratio_cold · c⌋ distinct objects and
then nothing, ever (see `clockpro_admitted_only`).
"""

from __future__ import annotations

from collections import OrderedDict


class LirsModel:
    def __init__(self, c: int, hit_rule: str = "libcachesim") -> None:
        assert hit_rule in ("libcachesim", "paper")
        self.c = c
        self.hir_limit = max(1, int(0.01 * c))
        self.lir_limit = c - self.hir_limit
        # OrderedDicts, oldest first (the last key is the top of S / the end of Q).
        self.s: OrderedDict[int, None] = OrderedDict()
        self.q: OrderedDict[int, None] = OrderedDict()
        self.nh: OrderedDict[int, None] = OrderedDict()
        self.lir: dict[int, bool] = {}
        self.resident: dict[int, bool] = {}
        self.n_lir = 0
        self.n_hir = 0
        self.occupied = 0
        self.libcachesim_hits = hit_rule == "libcachesim"
        self.hir_hits_outside_stack = 0

    @staticmethod
    def _to_top(d: OrderedDict, x: int) -> None:
        d.pop(x, None)
        d[x] = None

    def _prune(self) -> None:
        while len(self.s) > 1:
            bottom = next(iter(self.s))
            if self.lir[bottom]:
                break
            if not self.resident[bottom]:
                self.nh.pop(bottom, None)
            del self.s[bottom]

    def _evict_hir(self) -> None:
        v = next(iter(self.q))
        del self.q[v]
        self.n_hir -= 1
        self.occupied -= 1
        if v in self.s:
            self.resident[v] = False
            self._to_top(self.nh, v)

    def _evict_lir(self) -> None:
        b = next(iter(self.s))
        del self.s[b]
        self.n_lir -= 1
        self.occupied -= 1
        while self.n_hir + 1 > self.hir_limit:
            self._evict_hir()
        self._to_top(self.q, b)
        self.n_hir += 1
        self.occupied += 1
        self._prune()

    def access(self, x: int) -> bool:
        """One request; True on a hit."""
        hit = self._access(x)
        while len(self.s) > 2 * self.c and self.nh:
            v = next(iter(self.nh))
            del self.nh[v]
            del self.s[v]
        return hit

    def _access(self, x: int) -> bool:
        in_s, in_q = x in self.s, x in self.q
        if in_s:
            self._to_top(self.s, x)
        if in_q:
            self._to_top(self.q, x)
        if in_s and self.lir[x]:
            self._prune()
            return True
        if in_s and self.resident[x]:  # hit_RD_HIRinS
            if in_q:
                del self.q[x]
                self.n_hir -= 1
                self.occupied -= 1
            while self.n_lir + 1 > self.lir_limit:
                self._evict_lir()
            self.lir[x] = True
            self.n_lir += 1
            self.occupied += 1
            return True
        if in_q:  # hit_RD_HIRinQ
            self.hir_hits_outside_stack += 1
            if self.libcachesim_hits:
                while self.n_lir + 1 > self.lir_limit:
                    self._evict_lir()
            self._to_top(self.s, x)
            self.lir[x] = False
            self.resident[x] = True
            return True
        if in_s:  # miss on a non-resident HIR object of S: LIRS_can_insert, evict, insert
            while self.n_lir + 1 > self.lir_limit:
                self._evict_lir()
            self.nh.pop(x, None)
            while self.occupied + 1 > self.c:
                while self.n_hir >= self.hir_limit:
                    self._evict_hir()
                self._evict_lir()
            self.lir[x] = True
            self.resident[x] = True
            self.n_lir += 1
            self.occupied += 1
            return False
        # A new object.
        if self.n_lir + 1 > self.lir_limit and self.n_hir + 1 > self.hir_limit:
            while self.n_hir + 1 > self.hir_limit:
                self._evict_hir()
        self._to_top(self.s, x)
        self.resident[x] = True
        if self.n_lir + 1 <= self.lir_limit:
            self.lir[x] = True
            self.n_lir += 1
        else:
            self.lir[x] = False
            self._to_top(self.q, x)
            self.n_hir += 1
        self.occupied += 1
        return False


def lirs_model_misses(trace, c: int, hit_rule: str) -> tuple[int, int]:
    """(misses, hits on resident HIR objects outside S) of the model on `trace`."""
    m = LirsModel(c, hit_rule)
    misses = sum(not m.access(int(p)) for p in trace)
    return misses, m.hir_hits_outside_stack


def clockpro_admitted_only(trace, c: int, init_ratio_cold: float) -> int:
    """Misses of a cache that admits the first ⌊init_ratio_cold · c⌋ distinct objects and
    never evicts: libCacheSim 0.3.5's ClockPro for objects of size 1. `ClockPro_can_insert`
    requires `mem_cold + size <= mem_cold_max`; new objects enter cold, and `mem_cold` only
    falls inside `ClockPro_evict`, which `cache_get_base` calls only after `can_insert`
    succeeded and only when the cache is full, which the cold limit (≤ c) reaches no earlier
    than `can_insert` starts refusing."""
    room = int(c * init_ratio_cold)
    held: set[int] = set()
    misses = 0
    for p in trace:
        p = int(p)
        if p in held:
            continue
        misses += 1
        if len(held) < room:
            held.add(p)
    return misses
