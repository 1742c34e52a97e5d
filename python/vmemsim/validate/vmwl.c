/*
 * vmwl: the workload program of `vmemsim validate`. It runs inside a real Linux guest and
 * touches anonymous memory in exactly the page order vmemsim replays, so the kernel's
 * /proc/vmstat and the simulator's counters describe the same accesses.
 *
 *   vmwl [--mode rw|r] [--snap] [--dump FILE] gen N TOTAL NODE...
 *   vmwl [--snap] [--dump FILE] trace FILE
 *   vmwl [--snap] [--dump FILE] file DEV read BYTES BS PASSES
 *   vmwl [--snap] [--dump FILE] file DEV rand BYTES BS N SEED
 *   vmwl [--snap] [--dump FILE] file DEV write BYTES BS PASSES FSYNC
 *   vmwl [--snap] [--dump FILE] file DEV randw BYTES BS N SEED FSYNC
 *   vmwl [--snap] [--dump FILE] file DEV mmap BYTES 4096 PASSES
 *   vmwl [--snap] [--dump FILE] file DEV mmaprand BYTES 4096 N SEED
 *
 * gen: the plan of a vmemsim generator spec (`GenSpec::plan` in generate.rs writes it), drawn
 *   here with the same algorithms and the same random streams: xoshiro256++ seeded through
 *   SplitMix64 (rand_xoshiro's seed_from_u64), rand 0.8's f64 (53 high bits) and its
 *   widening-multiply integer ranges, Zipf by rejection-inversion, the shuffle permutation
 *   (Fisher-Yates up to 2^22 pages, a 4-round Feistel network above).
 * trace: a sequence file written by the harness, replayed as it is (for a trace the harness
 *   writes the sequence after --mode's transformation, write pass included): a 4096-byte header
 *   ("VMWLSEQ1", u64 record count, u64 span in pages, zeros), then little-endian u32 records,
 *   page | write << 31. It is streamed in 1 MiB chunks with O_DIRECT where the file allows it
 *   (a virtio disk in the guest), so a long trace costs the guest no memory.
 *
 * file: buffered I/O on DEV (a block device in the guest, a regular file natively) through one
 *   BS-byte buffer (BS a multiple of 4096), which is written once before the phase so the
 *   program's anonymous memory stays that buffer: `read` reads [0, BYTES) with read() in BS
 *   blocks, PASSES times (lseek to 0 between passes); `rand` makes N pread()s of BS bytes at
 *   block (mix64(SEED ^ mix64(k)) mod (BYTES / BS)) * BS, k = 0..N-1; `write` writes [0,
 *   BYTES) with write() in BS blocks, PASSES times, then fsync()s when FSYNC is 1; `randw`
 *   makes N pwrite()s of BS bytes at the blocks `rand` reads, then fsync()s when FSYNC is 1;
 *   `mmap` maps
 *   [0, BYTES) of DEV read-only and shared (before the snapshot) and reads one byte of each
 *   page in order, PASSES times; `mmaprand` reads one byte of each of N pages, page
 *   mix64(SEED ^ mix64(k)) mod (BYTES / 4096) (BS must be 4096: one page an access). Before the
 *   snapshot the device's cached pages are dropped (posix_fadvise DONTNEED over all of it:
 *   the kernel's partition scan reads a few). With --dump each call is written as 17 bytes
 *   (u8 op: 1 read, 2 write, 3 pread64, 4 pwrite64, 6 fsync, 12 a load from the mapping; u64 offset; u64
 *   bytes transferred: 4096 for a load) and the
 *   I/O is still done. The checksum counts each call as an access of page
 *   (offset / 4096) << 16 | (bytes / 4096), a write for write(), pwrite() and fsync. With --snap, after
 *   the snapshots, `@@resident A-B ...` (the device's pages the page cache holds: mincore)
 *   and /proc/zoneinfo as it was after the phase (`@@zoneinfo-after`).
 *
 * --mode rw (default): every access reads its page and then writes it (every page is dirty).
 * --mode r: a write pass over the footprint first (every page of every generator range, in
 *   ascending order, or every distinct page of the trace), then reads, writing only where the
 *   access is a write. Without the pass a read of untouched anonymous memory would map the
 *   shared zero page, which no simulator frame stands for.
 * --snap: copy /proc/vmstat, /proc/meminfo and /proc/zoneinfo just before the first access
 *   and /proc/vmstat just after the last, and print them afterwards between @@ markers; with
 *   a swap disk (vda), its /sys/block/vda/stat at both points too (`@@diskstat-before ...`
 *   and `@@diskstat-after ...`, one line each).
 * --dump FILE: write each access as 9 bytes (u64 page, u8 write) instead of touching memory
 *   (the test that compares this program with the simulator's generator).
 *
 * Always printed: `@@vmwl accesses=N checksum=HEX span=PAGES`, where the checksum is the sum
 * mod 2^64 of mix64((page << 1 | write) ^ mix64(index)) over every access, which the harness
 * compares with the sequence it replays.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL

static void die(const char *msg) {
    fprintf(stderr, "vmwl: %s\n", msg);
    exit(2);
}

/* ---------------------------------------------------------------- random streams */

typedef struct { uint64_t s[4]; } rng_t;

static uint64_t splitmix_next(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng_t *r) {
    uint64_t *s = r->s;
    uint64_t out = rotl(s[0] + s[3], 23) + s[0];
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

static void rng_seed(rng_t *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix_next(&x);
    if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3])) rng_seed(r, 0);
}

static double rng_f64(rng_t *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

/* rand 0.8's UniformInt::sample_single_inclusive for u64: [lo, hi]. */
static uint64_t rng_range_incl(rng_t *r, uint64_t lo, uint64_t hi) {
    uint64_t range = hi - lo + 1;
    if (range == 0) return rng_next(r);
    uint64_t zone = (range << __builtin_clzll(range)) - 1;
    for (;;) {
        unsigned __int128 m = (unsigned __int128)rng_next(r) * range;
        uint64_t hi64 = (uint64_t)(m >> 64), lo64 = (uint64_t)m;
        if (lo64 <= zone) return lo + hi64;
    }
}

static uint64_t mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* ---------------------------------------------------------------- Zipf (rejection-inversion) */

typedef struct { double n, s, lo, hi, squeeze; } zipf_t;

static double log1p_over(double x) {
    return fabs(x) > 1e-8 ? log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}
static double expm1_over(double x) {
    return fabs(x) > 1e-8 ? expm1(x) / x : 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
}
static double zh(const zipf_t *z, double x) { return exp(-z->s * log(x)); }
static double zbig_h(const zipf_t *z, double x) {
    double l = log(x);
    return expm1_over((1.0 - z->s) * l) * l;
}
static double zbig_h_inv(const zipf_t *z, double y) {
    return exp(log1p_over((1.0 - z->s) * y) * y);
}
static void zipf_init(zipf_t *z, uint64_t n, double s) {
    z->n = (double)n;
    z->s = s;
    z->lo = zbig_h(z, 1.5) - 1.0;
    z->hi = zbig_h(z, (double)n + 0.5);
    z->squeeze = 2.0 - zbig_h_inv(z, zbig_h(z, 2.5) - zh(z, 2.0));
}
static uint64_t zipf_sample(const zipf_t *z, rng_t *r) {
    for (;;) {
        double u = z->hi + rng_f64(r) * (z->lo - z->hi);
        double x = zbig_h_inv(z, u);
        double k = floor(x + 0.5);
        if (k < 1.0) k = 1.0;
        if (k > z->n) k = z->n;
        if (k - x <= z->squeeze || u >= zbig_h(z, k + 0.5) - zh(z, k)) return (uint64_t)k;
    }
}

/* ---------------------------------------------------------------- shuffle permutation */

#define TABLE_PERMUTATION_MAX (1ULL << 22)

typedef struct {
    uint64_t n, mask;
    uint32_t half;
    uint64_t keys[4];
    uint32_t *table;
} perm_t;

static void perm_init(perm_t *p, uint64_t n, uint64_t seed) {
    uint32_t bits = n <= 1 ? 0 : 64 - __builtin_clzll(n - 1);
    p->n = n;
    p->half = (bits + 1) / 2;
    p->mask = p->half >= 64 ? ~0ULL : (1ULL << p->half) - 1;
    for (int i = 0; i < 4; i++) p->keys[i] = mix64(seed ^ mix64(0xF0E1D2C3ULL + (uint64_t)i));
    p->table = NULL;
    if (n <= TABLE_PERMUTATION_MAX) {
        p->table = malloc(n * sizeof(uint32_t) + 1);
        if (!p->table) die("out of memory for the permutation table");
        for (uint64_t i = 0; i < n; i++) p->table[i] = (uint32_t)i;
        rng_t r;
        rng_seed(&r, seed);
        for (uint64_t i = n ? n - 1 : 0; i >= 1; i--) {
            uint64_t j = rng_range_incl(&r, 0, i);
            uint32_t t = p->table[i];
            p->table[i] = p->table[j];
            p->table[j] = t;
        }
    }
}
static uint64_t perm_apply(const perm_t *p, uint64_t x) {
    if (p->table) return p->table[x];
    for (;;) {
        uint64_t l = p->half == 0 ? 0 : x >> p->half, r = x & p->mask;
        for (int i = 0; i < 4; i++) {
            uint64_t f = mix64(r ^ p->keys[i]) & p->mask;
            uint64_t nl = r;
            r = l ^ f;
            l = nl;
        }
        x = p->half == 0 ? r : (l << p->half) | r;
        if (x < p->n) return x;
    }
}

/* ---------------------------------------------------------------- generator nodes */

enum { UNIFORM, ZIPF, SCAN, HOTCOLD, MIX, SEQ };

typedef struct node {
    int kind;
    rng_t rng;
    uint64_t start, pages, pos, hot;
    double write, p_hot;
    zipf_t zipf;
    int shuffle;
    perm_t perm;
    int k;               /* parts / phases */
    double *cum;         /* mix */
    uint64_t *len;       /* seq phase lengths */
    uint64_t left;
    int cur;
    struct node **kids;
} node_t;

static char **tok;
static int ntok, itok;

static const char *next_tok(void) {
    if (itok >= ntok) die("plan ends early");
    return tok[itok++];
}
/* A decimal integer, or death naming where it was wanted. */
static uint64_t parse_u64_in(const char *t, const char *where) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(t, &end, 10);
    if (errno || *end || end == t) die(where);
    return v;
}
static uint64_t parse_u64(const char *t) {
    return parse_u64_in(t, "bad integer in the file workload");
}
static uint64_t tok_u64(void) {
    return parse_u64_in(next_tok(), "bad integer in the plan");
}
static double tok_f64(void) {
    const char *t = next_tok();
    char *end;
    double v = strtod(t, &end);
    if (*end || end == t) die("bad number in the plan");
    return v;
}

static node_t *parse_node(void) {
    node_t *n = calloc(1, sizeof *n);
    if (!n) die("out of memory");
    const char *t = next_tok();
    if (!strcmp(t, "M")) {
        n->kind = MIX;
        rng_seed(&n->rng, tok_u64());
        n->k = (int)tok_u64();
        double *w = calloc(n->k, sizeof *w), total = 0.0, acc = 0.0;
        n->cum = calloc(n->k, sizeof *n->cum);
        n->kids = calloc(n->k, sizeof *n->kids);
        for (int i = 0; i < n->k; i++) total += (w[i] = tok_f64());
        for (int i = 0; i < n->k; i++) n->cum[i] = (acc += w[i] / total);
        for (int i = 0; i < n->k; i++) n->kids[i] = parse_node();
        free(w);
        return n;
    }
    if (!strcmp(t, "Q")) {
        n->kind = SEQ;
        n->k = (int)tok_u64();
        n->len = calloc(n->k, sizeof *n->len);
        n->kids = calloc(n->k, sizeof *n->kids);
        for (int i = 0; i < n->k; i++) n->len[i] = tok_u64();
        for (int i = 0; i < n->k; i++) n->kids[i] = parse_node();
        n->left = n->len[0];
        return n;
    }
    uint64_t seed = tok_u64();
    rng_seed(&n->rng, seed);
    n->start = tok_u64();
    n->write = tok_f64();
    n->pages = tok_u64();
    if (!strcmp(t, "U")) n->kind = UNIFORM;
    else if (!strcmp(t, "S")) n->kind = SCAN;
    else if (!strcmp(t, "Z")) {
        n->kind = ZIPF;
        zipf_init(&n->zipf, n->pages, tok_f64());
        n->shuffle = (int)tok_u64();
        if (n->shuffle) perm_init(&n->perm, n->pages, mix64(seed ^ 0x5EEDULL));
    } else if (!strcmp(t, "H")) {
        n->kind = HOTCOLD;
        double hp = tok_f64();
        n->p_hot = tok_f64();
        double h = round((double)n->pages * hp);
        uint64_t hot = h <= 1.0 ? 1 : (uint64_t)h;
        if (hot > n->pages - 1) hot = n->pages - 1;
        n->hot = hot;
    } else die("unknown node kind in the plan");
    return n;
}

static int is_write(rng_t *r, double p) { return p > 0.0 && rng_f64(r) < p; }

static uint64_t sample(node_t *n, int *w) {
    uint64_t page;
    switch (n->kind) {
    case UNIFORM:
        page = n->start + rng_range_incl(&n->rng, 0, n->pages - 1);
        break;
    case ZIPF: {
        uint64_t rank0 = zipf_sample(&n->zipf, &n->rng) - 1;
        page = n->start + (n->shuffle ? perm_apply(&n->perm, rank0) : rank0);
        break;
    }
    case SCAN:
        page = n->start + n->pos;
        if (++n->pos == n->pages) n->pos = 0;
        break;
    case HOTCOLD:
        if (rng_f64(&n->rng) < n->p_hot) page = n->start + rng_range_incl(&n->rng, 0, n->hot - 1);
        else page = n->start + rng_range_incl(&n->rng, n->hot, n->pages - 1);
        break;
    case MIX: {
        double u = rng_f64(&n->rng);
        int i = 0;
        while (i < n->k && !(u < n->cum[i])) i++;
        if (i == n->k) i = n->k - 1;
        return sample(n->kids[i], w);
    }
    default: /* SEQ */
        if (n->left == 0) {
            n->cur = (n->cur + 1) % n->k;
            n->left = n->len[n->cur];
        }
        n->left--;
        return sample(n->kids[n->cur], w);
    }
    *w = is_write(&n->rng, n->write);
    return page;
}

/* Leaf ranges [start, start + pages), for the span and the write pass of --mode r. */
static void ranges(node_t *n, uint64_t (*out)[2], int *k, int cap) {
    if (n->kind == MIX || n->kind == SEQ) {
        for (int i = 0; i < n->k; i++) ranges(n->kids[i], out, k, cap);
        return;
    }
    if (*k >= cap) die("too many generator parts");
    out[*k][0] = n->start;
    out[*k][1] = n->start + n->pages;
    (*k)++;
}

/* ---------------------------------------------------------------- the phase */

static volatile uint64_t *mem;
static uint64_t span;
static int mode_rw = 1;
static FILE *dump;
static uint64_t count, sum;

static void touch(uint64_t page, int w) {
    unsigned char b[9];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(page >> (8 * i));
    b[8] = (unsigned char)w;
    sum += mix64(((page << 1) | (uint64_t)w) ^ mix64(count));
    count++;
    if (dump) {
        if (fwrite(b, 1, 9, dump) != 9) die("cannot write the dump");
        return;
    }
    if (page >= span) die("page beyond the span");
    volatile uint64_t *p = mem + page * (PAGE / 8);
    uint64_t v = *p;
    if (w) *p = v + count;
}

#define SNAP_MAX (256 * 1024)
static char snap_vmstat0[SNAP_MAX], snap_meminfo0[SNAP_MAX], snap_zoneinfo0[SNAP_MAX];
static char snap_vmstat1[SNAP_MAX];
/* The swap disk's /sys/block/vda/stat (block/genhd.c: diskstats_show's fields for one
 * device), before and after the phase; empty when there is no vda (zram swap). */
static char snap_disk0[SNAP_MAX], snap_disk1[SNAP_MAX];

static void slurp(const char *path, char *buf) {
    int fd = open(path, O_RDONLY);
    size_t n = 0;
    if (fd >= 0) {
        ssize_t r;
        while (n < SNAP_MAX - 1 && (r = read(fd, buf + n, SNAP_MAX - 1 - n)) > 0) n += (size_t)r;
        close(fd);
    }
    buf[n] = 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define CHUNK_BYTES (1024 * 1024)
#define CHUNK_RECS (CHUNK_BYTES / 4)
static int trace_fd = -1;
static unsigned char *chunk;

/* The next chunk of records (up to `left` of them) from the trace file. */
static void fill_chunk(uint64_t left) {
    size_t want = left >= CHUNK_RECS ? CHUNK_BYTES : (size_t)((left * 4 + 4095) / 4096 * 4096);
    size_t got = 0;
    while (got < want) {
        ssize_t r = read(trace_fd, chunk + got, want - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    if (got < (left >= CHUNK_RECS ? (size_t)CHUNK_BYTES : (size_t)left * 4)) die("the trace file ends early");
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* ---------------------------------------------------------------- file workloads */

static void io_note(int op, uint64_t off, uint64_t len) {
    int w = op == 2 || op == 4 || op == 6;
    uint64_t key = ((off / PAGE) << 16) | (len / PAGE);
    sum += mix64(((key << 1) | (uint64_t)w) ^ mix64(count));
    count++;
    if (dump) {
        unsigned char b[17];
        b[0] = (unsigned char)op;
        for (int i = 0; i < 8; i++) b[1 + i] = (unsigned char)(off >> (8 * i));
        for (int i = 0; i < 8; i++) b[9 + i] = (unsigned char)(len >> (8 * i));
        if (fwrite(b, 1, 17, dump) != 17) die("cannot write the dump");
    }
}


static void snapshot0(void) {
    slurp("/proc/vmstat", snap_vmstat1); /* fault the buffers in before the snapshot */
    slurp("/proc/meminfo", snap_meminfo0);
    slurp("/proc/zoneinfo", snap_zoneinfo0);
    slurp("/proc/vmstat", snap_vmstat0);
    slurp("/proc/meminfo", snap_meminfo0);
    slurp("/proc/zoneinfo", snap_zoneinfo0);
    slurp("/proc/vmstat", snap_vmstat0);
}

static char snap_zoneinfo1[SNAP_MAX];

/* After the phase: which pages of the device the page cache holds (mincore of a shared
 * read-only mapping, which faults nothing in), printed as `@@resident A-B ...` runs of page
 * indices [A, B). */
static void resident(int fd) {
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0) return;
    uint64_t pages = ((uint64_t)size + PAGE - 1) / PAGE;
    void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    unsigned char *vec = malloc(pages);
    if (m == MAP_FAILED || !vec || mincore(m, (size_t)size, vec)) {
        printf("@@resident-error\n");
        return;
    }
    printf("@@resident");
    for (uint64_t p = 0; p < pages;) {
        if (!(vec[p] & 1)) { p++; continue; }
        uint64_t a = p;
        while (p < pages && (vec[p] & 1)) p++;
        printf(" %llu-%llu", (unsigned long long)a, (unsigned long long)p);
    }
    printf("\n");
    munmap(m, (size_t)size);
    free(vec);
}

static int file_main(int snap, const char *dump_path, int argc, char **argv, int i) {
    if (argc - i < 5) die("file DEV read|rand|write BYTES BS ...");
    const char *dev = argv[i], *op = argv[i + 1];
    uint64_t bytes = parse_u64(argv[i + 2]), bs = parse_u64(argv[i + 3]);
    if (bs == 0 || bs % PAGE || bytes < bs) die("BS must be a positive multiple of 4096, at most BYTES");
    int kind = !strcmp(op, "read") ? 0 : !strcmp(op, "rand") ? 1 : !strcmp(op, "write") ? 2
             : !strcmp(op, "mmap") ? 3 : !strcmp(op, "mmaprand") ? 4 : !strcmp(op, "randw") ? 5 : -1;
    int want = kind == 0 || kind == 3 ? 5 : kind == 5 ? 7 : 6;
    if (kind < 0) die("file workloads: read, rand, write, randw, mmap or mmaprand");
    if (argc - i != want) die("wrong number of file workload arguments");
    if ((kind == 3 || kind == 4) && bs != PAGE) die("mmap workloads load one page at a time: BS must be 4096");
    uint64_t a = parse_u64(argv[i + 4]), b = kind == 0 || kind == 3 ? 0 : parse_u64(argv[i + 5]);
    int sync_after = kind == 2 ? b != 0 : kind == 5 ? parse_u64(argv[i + 6]) != 0 : 0;
    int fd = open(dev, kind == 2 || kind == 5 ? O_RDWR : O_RDONLY);
    if (fd < 0) die("cannot open the file workload's device");
    const volatile unsigned char *map = NULL;
    if (kind == 3 || kind == 4) {
        void *m = mmap(NULL, (size_t)bytes, PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) die("cannot map the file workload's device");
        map = m;
    }
    unsigned char *buf;
    if (posix_memalign((void **)&buf, PAGE, bs)) die("out of memory");
    memset(buf, 0x5a, bs);
    if (dump_path) {
        dump = fopen(dump_path, "wb");
        if (!dump) die("cannot create the dump file");
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (snap) snapshot0();
    double t0 = now_s();
    uint64_t blocks = bytes / bs, calls = kind == 1 || kind == 4 || kind == 5 ? a : a * blocks, tenth = calls / 10 ? calls / 10 : 1;
    uint64_t k = 0;
    unsigned sink = 0;
    for (uint64_t pass = 0; kind == 3 && pass < a; pass++) {
        for (uint64_t p = 0; p < blocks; p++, k++) {
            if (snap && k % tenth == 0 && k)
                fprintf(stderr, "@@progress %llu %llu\n", (unsigned long long)k, (unsigned long long)calls);
            sink += map[p * PAGE];
            io_note(12, p * PAGE, PAGE);
        }
    }
    for (k = 0; kind == 4 && k < a; k++) {
        if (snap && k % tenth == 0 && k)
            fprintf(stderr, "@@progress %llu %llu\n", (unsigned long long)k, (unsigned long long)calls);
        uint64_t p = mix64(b ^ mix64(k)) % blocks;
        sink += map[p * PAGE];
        io_note(12, p * PAGE, PAGE);
    }
    if (sink == 0xffffffffu) fprintf(stderr, "\n"); /* keep the loads */
    for (uint64_t pass = 0; kind != 1 && kind < 3 && pass < a; pass++) {
        if (lseek(fd, 0, SEEK_SET) != 0) die("lseek failed");
        for (uint64_t blk = 0; blk < blocks; blk++, k++) {
            if (snap && k % tenth == 0 && k)
                fprintf(stderr, "@@progress %llu %llu\n", (unsigned long long)k, (unsigned long long)calls);
            ssize_t r = kind == 0 ? read(fd, buf, bs) : write(fd, buf, bs);
            if (r != (ssize_t)bs) die(kind == 0 ? "short read" : "short write");
            io_note(kind == 0 ? 1 : 2, blk * bs, bs);
        }
    }
    for (k = 0; (kind == 1 || kind == 5) && k < a; k++) {
        if (snap && k % tenth == 0 && k)
            fprintf(stderr, "@@progress %llu %llu\n", (unsigned long long)k, (unsigned long long)calls);
        uint64_t off = (mix64(b ^ mix64(k)) % blocks) * bs;
        ssize_t r = kind == 1 ? pread(fd, buf, bs, (off_t)off) : pwrite(fd, buf, bs, (off_t)off);
        if (r != (ssize_t)bs) die(kind == 1 ? "short pread" : "short pwrite");
        io_note(kind == 1 ? 3 : 4, off, bs);
    }
    if (sync_after) {
        if (fsync(fd)) die("fsync failed");
        io_note(6, 0, 0);
    }
    double t1 = now_s();
    if (snap) {
        slurp("/proc/vmstat", snap_vmstat1);
        slurp("/proc/zoneinfo", snap_zoneinfo1);
    }
    if (dump && fclose(dump)) die("cannot write the dump");
    printf("@@vmwl accesses=%llu checksum=%016llx span=%llu seconds=%.3f\n",
           (unsigned long long)count, (unsigned long long)sum, (unsigned long long)(bytes / PAGE), t1 - t0);
    if (snap) {
        printf("@@vmstat-before\n%s@@meminfo-before\n%s@@zoneinfo-before\n%s@@vmstat-after\n%s@@end\n",
               snap_vmstat0, snap_meminfo0, snap_zoneinfo0, snap_vmstat1);
        resident(fd);
        printf("@@zoneinfo-after\n%s@@end-after\n", snap_zoneinfo1);
    }
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    int snap = 0, i = 1;
    const char *dump_path = NULL;
    for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
        if (!strcmp(argv[i], "--snap")) snap = 1;
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
            const char *m = argv[++i];
            if (!strcmp(m, "rw")) mode_rw = 1;
            else if (!strcmp(m, "r")) mode_rw = 0;
            else die("--mode takes rw or r");
        } else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump_path = argv[++i];
        else die("unknown option (usage: vmwl [--mode rw|r] [--snap] [--dump FILE] gen PLAN... | trace FILE)");
    }
    if (i >= argc) die("missing gen or trace");
    const char *what = argv[i++];
    if (!strcmp(what, "file")) return file_main(snap, dump_path, argc, argv, i);
    node_t *root = NULL;
    uint64_t total = 0;
    uint64_t (*rg)[2] = NULL;
    int nrg = 0;

    if (!strcmp(what, "gen")) {
        tok = argv + i;
        ntok = argc - i;
        itok = 0;
        if (strcmp(next_tok(), "N")) die("a plan starts with N");
        total = tok_u64();
        root = parse_node();
        if (itok != ntok) die("text after the plan");
        rg = calloc(4096, sizeof *rg);
        ranges(root, rg, &nrg, 4096);
        for (int k = 0; k < nrg; k++)
            if (rg[k][1] > span) span = rg[k][1];
    } else if (!strcmp(what, "trace")) {
        if (i >= argc) die("trace needs a file");
        trace_fd = open(argv[i], O_RDONLY | O_DIRECT);
        if (trace_fd < 0) trace_fd = open(argv[i], O_RDONLY); /* no O_DIRECT here (tmpfs) */
        if (trace_fd < 0) die("cannot open the trace file");
        if (posix_memalign((void **)&chunk, 4096, CHUNK_BYTES)) die("out of memory");
        if (read(trace_fd, chunk, 4096) != 4096 || memcmp(chunk, "VMWLSEQ1", 8))
            die("the trace file has no VMWLSEQ1 header");
        memcpy(&total, chunk + 8, 8);
        memcpy(&span, chunk + 16, 8);
        mode_rw = 0; /* the file holds the sequence as made */
    } else die("expected gen or trace");

    if (dump_path) {
        dump = fopen(dump_path, "wb");
        if (!dump) die("cannot create the dump file");
    } else {
        /* Page 0 starts a PMD (2 MiB), as the simulator's virtual page 0 does: MG-LRU's page
         * table walks, its Bloom filter and VMA swap readahead all work per PMD. */
        const uint64_t pmd = 512 * PAGE;
        char *m = mmap(NULL, span * PAGE + pmd, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) die("cannot map the workload's memory");
        m += (pmd - (uint64_t)m % pmd) % pmd;
        madvise(m, span * PAGE, MADV_NOHUGEPAGE);
        mem = (volatile uint64_t *)m;
    }
    if (snap) {
        slurp("/proc/vmstat", snap_vmstat1); /* fault the buffers in before the snapshot */
        slurp("/proc/meminfo", snap_meminfo0);
        slurp("/proc/zoneinfo", snap_zoneinfo0);
        slurp("/proc/vmstat", snap_vmstat0);
        slurp("/proc/meminfo", snap_meminfo0);
        slurp("/proc/zoneinfo", snap_zoneinfo0);
        slurp("/sys/block/vda/stat", snap_disk0);
        slurp("/proc/vmstat", snap_vmstat0);
    }
    double t0 = now_s();
    if (!mode_rw && root) {
        {
            /* the union of the leaf ranges, ascending */
            qsort(rg, nrg, sizeof *rg, cmp_u64);
            uint64_t next = 0;
            for (int k = 0; k < nrg; k++) {
                uint64_t a = rg[k][0] > next ? rg[k][0] : next;
                for (uint64_t p = a; p < rg[k][1]; p++) touch(p, 1);
                if (rg[k][1] > next) next = rg[k][1];
            }
        }
    }
    uint64_t tenth = total / 10 ? total / 10 : 1;
    for (uint64_t k = 0; k < total; k++) {
        int w;
        if (snap && k % tenth == 0 && k) {
            fprintf(stderr, "@@progress %llu %llu\n", (unsigned long long)k, (unsigned long long)total);
        }
        uint64_t p;
        if (root) p = sample(root, &w);
        else {
            if (k % CHUNK_RECS == 0) fill_chunk(total - k);
            uint32_t r;
            memcpy(&r, chunk + (k % CHUNK_RECS) * 4, 4);
            p = r & 0x7FFFFFFFu;
            w = (int)(r >> 31);
        }
        touch(p, mode_rw ? 1 : w);
    }
    double t1 = now_s();
    if (snap) {
        slurp("/proc/vmstat", snap_vmstat1);
        slurp("/sys/block/vda/stat", snap_disk1);
    }
    if (dump && fclose(dump)) die("cannot write the dump");
    printf("@@vmwl accesses=%llu checksum=%016llx span=%llu seconds=%.3f\n",
           (unsigned long long)count, (unsigned long long)sum, (unsigned long long)span, t1 - t0);
    if (snap) {
        printf("@@vmstat-before\n%s@@meminfo-before\n%s@@zoneinfo-before\n%s@@vmstat-after\n%s@@end\n",
               snap_vmstat0, snap_meminfo0, snap_zoneinfo0, snap_vmstat1);
        if (snap_disk0[0] && snap_disk1[0])
            printf("@@diskstat-before %s@@diskstat-after %s", snap_disk0, snap_disk1);
    }
    fflush(stdout);
    return 0;
}
