// Minimal /init: load virtio modules, swapon /dev/vda, run a deterministic pageout/free test and
// print every op and the swap offset each pageout got (from /proc/self/pagemap).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

static void load(const char *p) {
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || syscall(SYS_finit_module, fd, "", 0) != 0) printf("@@modfail %s\n", p);
    if (fd >= 0) close(fd);
}

static int pm;
static long slot_of(char *base, long i) {
    uint64_t e;
    if (pread(pm, &e, 8, ((uintptr_t)(base + i * 4096) / 4096) * 8) != 8) return -3;
    if (e >> 63) return -1;              // present
    if (!((e >> 62) & 1)) return -2;     // neither
    return (long)((e >> 5) & ((1ULL << 50) - 1));
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t xr(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

int main(void) {
    mount("devtmpfs", "/dev", "devtmpfs", 0, 0);
    mount("proc", "/proc", "proc", 0, 0);
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mods[] = {"virtio.ko", "virtio_ring.ko", "virtio_pci_modern_dev.ko",
                          "virtio_pci_legacy_dev.ko", "virtio_pci.ko", "virtio_blk.ko"};
    for (unsigned k = 0; k < 6; k++) load(mods[k]);
    for (int t = 0; t < 200 && access("/dev/vda", F_OK); t++) usleep(50000);
    if (swapon("/dev/vda", 0)) printf("@@swaponfail\n");
    int f = open("/proc/sys/vm/page-cluster", O_WRONLY); write(f, "0\n", 2); close(f);
    char buf[512]; f = open("/proc/cmdline", O_RDONLY); int n = read(f, buf, 511); buf[n > 0 ? n : 0] = 0; close(f);
    long N = 6000, OPS = 20000;
    char *p;
    if ((p = strstr(buf, "tn="))) N = atol(p + 3);
    if ((p = strstr(buf, "tops="))) OPS = atol(p + 5);
    if ((p = strstr(buf, "tseed="))) rng = strtoull(p + 6, 0, 10);
    f = open("/sys/block/vda/queue/rotational", O_RDONLY); n = read(f, buf, 8); buf[n > 0 ? n : 0] = 0; close(f);
    printf("@@rot %s", buf);
    f = open("/proc/swaps", O_RDONLY); n = read(f, buf, 511); buf[n > 0 ? n : 0] = 0; close(f);
    printf("@@swaps %s", buf);
    pm = open("/proc/self/pagemap", O_RDONLY);
    char *base = mmap(0, N * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    madvise(base, N * 4096, MADV_NOHUGEPAGE);
    // state: 0 none, 1 resident, 2 swapped out
    char *st = calloc(N, 1);
    for (long i = 0; i < N; i++) { base[i * 4096] = 1 + (i & 127); base[i * 4096 + 8] = i; st[i] = 1; }
    int dirty = 0;
    printf("@@begin\n");
    for (long i = 0; i < N; i++) {
        madvise(base + i * 4096, 4096, MADV_PAGEOUT);
        long s = slot_of(base, i);
        printf("P %ld %ld\n", i, s);
        if (s >= 0) st[i] = 2;
        dirty = 1;
    }
    for (long k = 0; k < OPS; k++) {
        long i = xr() % N;
        unsigned r = xr() % 100;
        if (st[i] == 1 && r < 55) {
            madvise(base + i * 4096, 4096, MADV_PAGEOUT);
            long s = slot_of(base, i);
            printf("P %ld %ld\n", i, s);
            if (s >= 0) st[i] = 2;
            dirty = 1;
            continue;
        }
        if (dirty) { usleep(3000); dirty = 0; }
        if (st[i] == 0) { base[i * 4096] = 7; st[i] = 1; printf("T %ld\n", i); continue; }
        if (r < 30 || (st[i] == 1 && r >= 90)) { madvise(base + i * 4096, 4096, MADV_DONTNEED); st[i] = 0; printf("D %ld\n", i); continue; }
        if (st[i] == 2) {
            if (r < 65) { volatile char c = base[i * 4096]; (void)c; printf("R %ld\n", i); }
            else { base[i * 4096 + 16] = 3; printf("W %ld\n", i); }
            st[i] = 1;
        }
    }
    usleep(3000);
    long bad = 0;
    for (long i = 0; i < N; i++) if (st[i] == 2) printf("F %ld %ld\n", i, slot_of(base, i));
    printf("@@end %ld\n", bad);
    f = open("/proc/meminfo", O_RDONLY); n = read(f, buf, 511); buf[n > 0 ? n : 0] = 0; close(f);
    printf("%.200s\n", buf);
    fflush(stdout);
    reboot(RB_POWER_OFF);
    return 0;
}
