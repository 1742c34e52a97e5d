/* vmrec: a Valgrind tool that records a program's page accesses for vmemsim.

   Built out of tree against Valgrind's tool API (the `valgrind` Debian package ships it:
   /usr/include/valgrind/pub_tool_*.h and libcoregrind/libvex); see
   python/vmemsim/recorder/__init__.py for the build and `vmemsim trace record` for use.

   What it records, into the intermediate stream of crates/vmemsim-core/src/trace/recorder.rs
   (written to --out, a FIFO the converter reads while the program runs):
   - every guest load and store (and with --ifetch=yes every instruction fetch), folded to
     page granularity: consecutive data accesses by one thread to one page are one record
     with a count, a write flag (any of them wrote) and the instruction stamp of the first;
     fetches are folded the same way, apart from data (a loop on one code page touching many
     data pages is one fetch record);
   - an access that straddles a page boundary (an unaligned 8-byte load across two pages)
     counts once on each page it touches: on its first page, then on the next;
   - successful read / write / pread64 / pwrite64 / mmap system calls on regular files, with
     a file id, byte offset, length (and for mmap the mapping address, its low bits the
     flags: 1 always, 2 MAP_SHARED, 4 PROT_WRITE), and once per file
     (device + inode) a file-table record with its path (from /proc/self/fd); readv / writev
     / preadv / pwritev / preadv2 / pwritev2 are recorded as one record per call, as the
     plain call with the same effect on the file (read / write / pread64 / pwrite64: the
     iovecs fill or drain one consecutive file range, of the bytes transferred);
   - on a file open with O_DIRECT, those reads and writes as direct ones (ops 9, 10) with the
     user buffer's address (the first iovec's); fsync / fdatasync (op 6), fadvise64 (op 7,
     the advice in the address field), ftruncate (op 8, the new size as the length);
   - the end of a recorded file (op 11, unlink): when unlink / unlinkat removes its last
     name (nlink 1) and no descriptor of the process is open on it, at once; else at the
     close of the last descriptor on it. The file's entry is then forgotten, so a new file
     that gets the same inode number is a new file id.

   The stamp is the number of guest instructions executed by all threads before the access:
   a counter in memory that the instrumented code bumps by the superblock's instruction
   count at every side exit and at the end, with the instructions since then passed to the
   helper as a constant, so it is exact (Valgrind runs one thread at a time).

   Cost model: one call to a helper per memory access, whose common case (same page as the
   previous access) is a compare and an increment; a record (24 bytes) only when the page
   changes, written in 1 MiB blocks. lackey's --trace-mem, by contrast, formats and writes a
   line per access.

   Processes: every block written starts with a process record (pid, parent pid) and is
   written under an exclusive flock() on the stream, so that the blocks of a forked child
   (which runs on under this same tool instance) never interleave with its parent's. Before
   a fork the parent flushes its runs and buffer (nothing is sent twice: the child starts
   with an empty buffer); the child reopens the stream (its own open file description, so
   that flock excludes the parent), numbers its threads from 1 and counts its own records
   for its own end record. Before execve a process sends its end record (an exec'd program
   under --trace-children=yes is a fresh tool instance that sends the stream header again
   and starts the same pid anew; if execve fails the next block starts it again). The
   converter (recorder.rs) gives each process's threads distinct trace tids.

   Left out: sendfile/copy_file_range/splice/io_uring, munmap, truncate by path, rename over
   a recorded file (its old inode goes too), descriptors shared with another process (a
   forked child's close ends the file for its parent too, or the reverse),
   sync_file_range and msync are not recorded (the trace format has no record for them); an access spanning more than two pages (a page size
   below the access size) counts on its first and last page only; a process killed
   (SIGKILL) while writing a block corrupts the stream from there. */

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_vki.h"
#include "pub_tool_vkiscnums.h"

/* In libcoregrind but not in the public headers. */
extern Int VG_(safe_fd)(Int oldfd);
extern Bool VG_(resolve_filename)(Int fd, const HChar** buf);
extern SysRes VG_(do_syscall)(UWord sysno, UWord a1, UWord a2, UWord a3, UWord a4, UWord a5,
                              UWord a6, UWord a7, UWord a8);

/* ------------------------------------------------------------------ options */

static const HChar* clo_out = NULL;
static Long clo_page_size = 4096;
static Bool clo_ifetch = False;

static Bool vmrec_process_cmd_line_option(const HChar* arg)
{
   if VG_STR_CLO(arg, "--out", clo_out) {}
   else if VG_INT_CLO(arg, "--page-size", clo_page_size) {}
   else if VG_BOOL_CLO(arg, "--ifetch", clo_ifetch) {}
   else return False;
   return True;
}

static void vmrec_print_usage(void)
{
   VG_(printf)(
"    --out=PATH           where to write the recorder stream (required)\n"
"    --page-size=N        bytes per page, a power of two [4096]\n"
"    --ifetch=yes|no      record instruction fetches too [no]\n");
}

static void vmrec_print_debug_usage(void) {}

/* ------------------------------------------------------------------ output */

enum { K_READ = 1, K_WRITE = 2, K_FETCH = 3, K_IO = 4, K_FILE = 5, K_END = 6, K_PROC = 7 };

#define BUF_WORDS (1 << 17) /* 1 MiB */
/* Words kept free at the start of the buffer for a block's head: the stream header (4 words,
   first block of a tool instance only) and the process record (3 words). */
#define HEAD_WORDS 7
static ULong buf[BUF_WORDS];
static UInt buf_n = HEAD_WORDS;
static Int out_fd = -1;
static UInt page_shift = 12;
/* Records sent since this process's start (for its end record). */
static ULong n_acc_records, n_io_records;
static Int my_pid, my_ppid;
static Bool send_header; /* the next block begins with the stream header */
static Bool send_start;  /* the next block starts this process's records */

/* The block's head goes in front of the records, then the block is written whole under an
   exclusive flock (a write to a pipe above PIPE_BUF bytes is not atomic). */
static void flush_buf(void)
{
   if (buf_n == HEAD_WORDS)
      return;
   UInt first = HEAD_WORDS - 3;
   buf[first] = (ULong)K_PROC | ((ULong)(send_start ? 1 : 0) << 32);
   buf[first + 1] = (ULong)my_pid;
   buf[first + 2] = (ULong)my_ppid;
   if (send_header) {
      first -= 4;
      VG_(memcpy)(&buf[first], "VMRECRAW", 8);
      buf[first + 1] = 2;
      buf[first + 2] = (ULong)clo_page_size;
      buf[first + 3] = clo_ifetch ? 1 : 0;
   }
   const UChar* p = (const UChar*)&buf[first];
   Long left = (Long)(buf_n - first) * 8;
   buf_n = HEAD_WORDS;
   if (out_fd < 0)
      return;
   send_header = send_start = False;
   VG_(do_syscall)(__NR_flock, out_fd, 2 /* LOCK_EX */, 0, 0, 0, 0, 0, 0);
   while (out_fd >= 0 && left > 0) {
      Int chunk = left > (1 << 30) ? (1 << 30) : (Int)left;
      Int w = VG_(write)(out_fd, p, chunk);
      if (w <= 0) {
         VG_(umsg)("vmrec: writing to %s failed; recording stops here\n", clo_out);
         VG_(close)(out_fd);
         out_fd = -1;
         return;
      }
      p += w;
      left -= w;
   }
   VG_(do_syscall)(__NR_flock, out_fd, 8 /* LOCK_UN */, 0, 0, 0, 0, 0, 0);
}

static inline void room(UInt words)
{
   if (UNLIKELY(buf_n + words > BUF_WORDS))
      flush_buf();
}

/* kind in bits 0..7, thread number in 8..31, x in 32..63. */
static inline ULong head_word(UInt kind, UInt thread, ULong x)
{
   return (ULong)kind | ((ULong)(thread & 0xFFFFFF) << 8) | (x << 32);
}

/* ------------------------------------------------------------------ folding */

static ULong icount;      /* guest instructions, bumped by the instrumented code */
static UInt cur_thread;   /* number of the thread whose runs are pending */

/* Thread numbers: 1, 2, 3... in the order threads first run (1 = the main thread). Valgrind
   gives an exited thread's ThreadId to the next new thread, so the number is forgotten when
   a thread exits. */
static UInt* tnum;
static UInt cap_tnum, n_threads;

static UInt thread_number(ThreadId tid)
{
   if (tid >= cap_tnum) {
      UInt cap = cap_tnum ? 2 * cap_tnum : 64;
      while (cap <= tid)
         cap *= 2;
      tnum = VG_(realloc)("vmrec.threads", tnum, cap * sizeof(UInt));
      for (UInt i = cap_tnum; i < cap; i++)
         tnum[i] = 0;
      cap_tnum = cap;
   }
   if (tnum[tid] == 0)
      tnum[tid] = ++n_threads;
   return tnum[tid];
}

static void vmrec_thread_exit(ThreadId tid)
{
   if (tid < cap_tnum)
      tnum[tid] = 0;
}

/* Pending runs; NO_PAGE is no run (real pages are below 2^52). */
#define NO_PAGE (~0ULL)
#define MAX_COUNT 0xFFFFFFFFULL
static ULong d_page = NO_PAGE, d_count, d_stamp;
static UInt d_write;
static ULong f_page = NO_PAGE, f_count, f_stamp;

static void emit_run(UInt kind, ULong count, ULong stamp, ULong page)
{
   while (count > 0) {
      ULong c = count > MAX_COUNT ? MAX_COUNT : count;
      room(3);
      buf[buf_n++] = head_word(kind, cur_thread, c);
      buf[buf_n++] = stamp;
      buf[buf_n++] = page;
      n_acc_records++;
      count -= c;
   }
}

static void flush_runs(void)
{
   if (d_page != NO_PAGE)
      emit_run(d_write ? K_WRITE : K_READ, d_count, d_stamp, d_page);
   if (f_page != NO_PAGE)
      emit_run(K_FETCH, f_count, f_stamp, f_page);
   d_page = f_page = NO_PAGE;
}

static void data_miss(ULong page, UWord k, UInt w)
{
   if (d_page != NO_PAGE)
      emit_run(d_write ? K_WRITE : K_READ, d_count, d_stamp, d_page);
   d_page = page;
   d_count = 1;
   d_write = w;
   d_stamp = icount + k;
}

/* The access [a, a + size - 1] on the page of a, then, if it straddles, on the page of its
   last byte too. ks: the instructions since the counter was bumped (low 32 bits) and the
   access size less one (high 32 bits). */
static void data_access(Addr a, UWord ks, UInt w)
{
   ULong page = (ULong)a >> page_shift;
   ULong last = ((ULong)a + (ks >> 32)) >> page_shift;
   UWord k = ks & 0xFFFFFFFFUL;
   if (page == d_page) {
      d_count++;
      d_write |= w;
   } else {
      data_miss(page, k, w);
   }
   if (last != page)
      data_miss(last, k, w);
}

static VG_REGPARM(2) void on_load(Addr a, UWord ks)
{
   ULong page = (ULong)a >> page_shift;
   if (LIKELY(page == d_page) && LIKELY((((ULong)a + (ks >> 32)) >> page_shift) == page)) {
      d_count++;
      return;
   }
   data_access(a, ks, 0);
}

static VG_REGPARM(2) void on_store(Addr a, UWord ks)
{
   ULong page = (ULong)a >> page_shift;
   if (LIKELY(page == d_page) && LIKELY((((ULong)a + (ks >> 32)) >> page_shift) == page)) {
      d_count++;
      d_write = 1;
      return;
   }
   data_access(a, ks, 1);
}

static VG_REGPARM(2) void on_fetch(Addr a, UWord k)
{
   ULong page = (ULong)a >> page_shift;
   if (LIKELY(page == f_page)) {
      f_count++;
      return;
   }
   if (f_page != NO_PAGE)
      emit_run(K_FETCH, f_count, f_stamp, f_page);
   f_page = page;
   f_count = 1;
   f_stamp = icount + k;
}

/* Runs are per thread: a thread switch ends them. */
static void vmrec_start_client_code(ThreadId tid, ULong blocks_dispatched)
{
   UInt t = thread_number(tid);
   if (t != cur_thread) {
      flush_runs();
      cur_thread = t;
   }
}

static void send_end(void);

/* ------------------------------------------------------------------ files */

typedef struct { ULong dev, ino; UInt id; Bool unlinked; } FileKey;
static FileKey* files;
static UInt n_files, cap_files;

/* The id of the regular file open on fd (recording its path the first time), or -1. */
static Int file_id(Int fd, UInt thread)
{
   struct vg_stat st;
   if (fd < 0 || VG_(fstat)(fd, &st) != 0 || !VKI_S_ISREG(st.mode))
      return -1;
   for (UInt i = n_files; i > 0; i--)
      if (files[i - 1].dev == st.dev && files[i - 1].ino == st.ino)
         return (Int)files[i - 1].id;
   if (n_files == cap_files) {
      cap_files = cap_files ? 2 * cap_files : 64;
      files = VG_(realloc)("vmrec.files", files, cap_files * sizeof(FileKey));
   }
   UInt id = n_files + 1;
   files[n_files].dev = st.dev;
   files[n_files].ino = st.ino;
   files[n_files].id = id;
   files[n_files].unlinked = False;
   n_files++;
   const HChar* path = NULL;
   if (!VG_(resolve_filename)(fd, &path) || path == NULL)
      path = "?";
   UInt len = VG_(strlen)(path);
   if (len > 65536)
      len = 65536;
   UInt words = (len + 7) / 8;
   room(2 + words);
   buf[buf_n++] = head_word(K_FILE, thread, len);
   buf[buf_n++] = id;
   buf[buf_n + words - 1] = 0;
   VG_(memcpy)(&buf[buf_n], path, len);
   buf_n += words;
   return (Int)id;
}

/* The entry of the recorded file with this device and inode, or -1. */
static Int file_index(ULong dev, ULong ino)
{
   for (UInt i = n_files; i > 0; i--)
      if (files[i - 1].dev == dev && files[i - 1].ino == ino)
         return (Int)i - 1;
   return -1;
}

/* Whether a descriptor of this process other than `except` is open on the inode. */
static Bool inode_open(ULong dev, ULong ino, Int except)
{
   struct vg_stat st;
   for (Int fd = 0; fd < 4096; fd++)
      if (fd != except && VG_(fstat)(fd, &st) == 0 && st.dev == dev && st.ino == ino)
         return True;
   return False;
}

/* The file is gone: its unlink record (op 11), and its entry forgotten (the inode number
   may come back as another file). */
static void file_gone(Int idx, UInt thread)
{
   room(6);
   buf[buf_n++] = head_word(K_IO, thread, 11);
   buf[buf_n++] = icount;
   buf[buf_n++] = (ULong)files[idx].id;
   buf[buf_n++] = 0;
   buf[buf_n++] = 0;
   buf[buf_n++] = 0;
   n_io_records++;
   files[idx] = files[n_files - 1];
   n_files--;
}

/* An unlink / unlinkat or close in progress, per thread: the inode it may end. */
#define VMREC_MAX_THREADS 4096
static struct { ULong dev, ino; Bool set; } pending[VMREC_MAX_THREADS];

/* The inode a path names (relative to dirfd for unlinkat), if it is a recorded regular
   file with one name left, not a symbolic link. */
static Bool last_name_of_recorded(Int dirfd, const HChar* path, ULong* dev, ULong* ino)
{
   if (path == NULL)
      return False;
   HChar full[4096];
   if (path[0] == '/' || dirfd == VKI_AT_FDCWD)
      VG_(snprintf)(full, sizeof full, "%s", path);
   else
      VG_(snprintf)(full, sizeof full, "/proc/self/fd/%d/%s", dirfd, path);
   HChar link[8];
   if (VG_(readlink)(full, link, sizeof link) >= 0)
      return False; /* unlink removes the link, not its target */
   struct vg_stat st;
   if (sr_isError(VG_(stat)(full, &st)) || !VKI_S_ISREG(st.mode) || st.nlink != 1)
      return False;
   if (file_index(st.dev, st.ino) < 0)
      return False;
   *dev = st.dev;
   *ino = st.ino;
   return True;
}

/* O_DIRECT in the open file's flags (F_GETFL; the value is the architecture's). */
#if defined(VGA_arm64) || defined(VGA_arm)
#define VMREC_O_DIRECT 0200000
#else
#define VMREC_O_DIRECT 040000
#endif
static Bool is_direct(Int fd)
{
   SysRes r = VG_(do_syscall)(__NR_fcntl, fd, VKI_F_GETFL, 0, 0, 0, 0, 0, 0);
   return !sr_isError(r) && (sr_Res(r) & VMREC_O_DIRECT) != 0;
}

/* An execve that succeeds ends this tool instance without its fini: send the end first. */
static void vmrec_pre_syscall(ThreadId tid, UInt sysno, UWord* args, UInt nArgs)
{
   if (sysno == __NR_execve || sysno == __NR_execveat)
      send_end();
   if (out_fd < 0 || tid >= VMREC_MAX_THREADS)
      return;
   pending[tid].set = False;
   ULong dev, ino;
   struct vg_stat st;
   switch (sysno) {
#if defined(__NR_unlink)
   case __NR_unlink:
      pending[tid].set = last_name_of_recorded(VKI_AT_FDCWD, (const HChar*)args[0], &dev, &ino);
      break;
#endif
   case __NR_unlinkat:
      if (args[2] & 0x200) /* AT_REMOVEDIR */
         return;
      pending[tid].set = last_name_of_recorded((Int)args[0], (const HChar*)args[1], &dev, &ino);
      break;
   case __NR_close: {
      Int fd = (Int)args[0];
      if (VG_(fstat)(fd, &st) != 0 || !VKI_S_ISREG(st.mode))
         return;
      Int i = file_index(st.dev, st.ino);
      if (i < 0 || !files[i].unlinked)
         return;
      dev = st.dev;
      ino = st.ino;
      pending[tid].set = True;
      break;
   }
   default:
      return;
   }
   pending[tid].dev = dev;
   pending[tid].ino = ino;
}

static void vmrec_post_syscall(ThreadId tid, UInt sysno, UWord* args, UInt nArgs, SysRes res)
{
   if (out_fd < 0 || sr_isError(res))
      return;
   if ((sysno == __NR_unlinkat || sysno == __NR_close
#if defined(__NR_unlink)
        || sysno == __NR_unlink
#endif
        ) && tid < VMREC_MAX_THREADS) {
      if (!pending[tid].set)
         return;
      pending[tid].set = False;
      Int i = file_index(pending[tid].dev, pending[tid].ino);
      if (i < 0)
         return;
      flush_runs();
      if (inode_open(pending[tid].dev, pending[tid].ino, -1))
         files[i].unlinked = True; /* open still: it ends at the last close */
      else
         file_gone(i, thread_number(tid));
      return;
   }
   UWord r = sr_Res(res);
   UInt op;
   Int fd;
   ULong off = 0, len, addr = 0;
   switch (sysno) {
   case __NR_read:
   case __NR_write:
   case __NR_pread64:
   case __NR_pwrite64:
      if (r == 0)
         return;
      fd = (Int)args[0];
      len = r;
      op = sysno == __NR_read ? 1 : sysno == __NR_write ? 2 : sysno == __NR_pread64 ? 3 : 4;
      off = args[3];
      addr = args[1];
      break;
   /* Vectored calls: one record of the plain call (the iovecs cover one file range). */
   case __NR_readv:
   case __NR_writev:
      if (r == 0)
         return;
      fd = (Int)args[0];
      len = r;
      op = sysno == __NR_readv ? 1 : 2;
      addr = args[2] > 0 ? (ULong)((struct vki_iovec*)args[1])->iov_base : 0;
      break;
   case __NR_preadv:
   case __NR_pwritev:
   case __NR_preadv2:
   case __NR_pwritev2: {
      if (r == 0)
         return;
      fd = (Int)args[0];
      len = r;
      Bool rd = sysno == __NR_preadv || sysno == __NR_preadv2;
      /* pos_l (64 bits on amd64); preadv2/pwritev2 at offset -1 use the file position. */
      off = args[3];
      if ((sysno == __NR_preadv2 || sysno == __NR_pwritev2) && (Long)off == -1)
         op = rd ? 1 : 2;
      else
         op = rd ? 3 : 4;
      addr = args[2] > 0 ? (ULong)((struct vki_iovec*)args[1])->iov_base : 0;
      break;
   }
   case __NR_fsync:
   case __NR_fdatasync:
      fd = (Int)args[0];
      len = 0;
      op = 6;
      break;
   case __NR_fadvise64:
      fd = (Int)args[0];
      off = args[1];
      len = args[2];
      addr = args[3];
      op = 7;
      break;
   case __NR_ftruncate:
      fd = (Int)args[0];
      len = args[1];
      op = 8;
      break;
   case __NR_mmap:
      if (args[3] & VKI_MAP_ANONYMOUS)
         return;
      fd = (Int)args[4];
      len = args[1];
      off = args[5];
      /* The address is page-aligned: its low bits carry the flags (1: present, 2:
         MAP_SHARED (or MAP_SHARED_VALIDATE), 4: PROT_WRITE). */
      addr = r | 1 | ((args[3] & VKI_MAP_SHARED) ? 2 : 0) | ((args[2] & VKI_PROT_WRITE) ? 4 : 0);
      op = 5;
      break;
   default:
      return;
   }
   /* Keep the order: runs so far come before the call. */
   flush_runs();
   UInt thread = thread_number(tid);
   Int id = file_id(fd, thread);
   if (id < 0)
      return;
   if (op == 1 || op == 2) {
      Off64T pos = VG_(lseek)(fd, 0, VKI_SEEK_CUR);
      if (pos < 0)
         return;
      off = (ULong)pos - len;
   }
   if (op <= 4) {
      /* A read or write of a file open with O_DIRECT: the buffer's address goes with it;
         the others keep 0 there. */
      if (is_direct(fd))
         op = (op == 1 || op == 3) ? 9 : 10;
      else
         addr = 0;
   }
   room(6);
   buf[buf_n++] = head_word(K_IO, thread, op);
   buf[buf_n++] = icount;
   buf[buf_n++] = (ULong)id;
   buf[buf_n++] = off;
   buf[buf_n++] = len;
   buf[buf_n++] = addr;
   n_io_records++;
}

/* The end of this process's records: before exit, and before execve. */
static void send_end(void)
{
   flush_runs();
   room(3);
   buf[buf_n++] = head_word(K_END, 0, 0);
   buf[buf_n++] = n_acc_records;
   buf[buf_n++] = n_io_records;
   flush_buf();
   n_acc_records = n_io_records = 0;
   send_start = True;
}

/* Before fork: everything so far goes out now, so that the child starts empty and the
   parent's file-table entries precede the child's records. */
static void vmrec_atfork_pre(ThreadId tid)
{
   flush_runs();
   flush_buf();
}

/* In the child: its own stream description, process, thread numbers and counts. */
static void vmrec_atfork_child(ThreadId tid)
{
   buf_n = HEAD_WORDS;
   d_page = f_page = NO_PAGE;
   if (out_fd >= 0) {
      VG_(close)(out_fd);
      SysRes sr = VG_(open)(clo_out, VKI_O_WRONLY | VKI_O_APPEND, 0);
      if (sr_isError(sr)) {
         VG_(umsg)("vmrec: a forked child cannot reopen %s; it is not recorded\n", clo_out);
         out_fd = -1;
      } else {
         out_fd = VG_(safe_fd)(sr_Res(sr));
      }
   }
   my_ppid = my_pid;
   my_pid = VG_(getpid)();
   n_acc_records = n_io_records = 0;
   send_start = True;
   send_header = False;
   for (UInt i = 0; i < cap_tnum; i++)
      tnum[i] = 0;
   n_threads = 0;
   cur_thread = thread_number(tid);
}

/* ------------------------------------------------------------------ instrumentation */

/* size: bytes of the access (0 for fetches), passed less one in the high half of k. */
static void add_call(IRSB* sb, const HChar* name, void* fn, IRExpr* addr, UInt k, Int size,
                     IRExpr* guard)
{
   HWord ks = (HWord)k | (size > 1 ? (HWord)(size - 1) << 32 : 0);
   IRExpr** args = mkIRExprVec_2(addr, mkIRExpr_HWord(ks));
   IRDirty* di = unsafeIRDirty_0_N(2, name, VG_(fnptr_to_fnentry)(fn), args);
   if (guard)
      di->guard = guard;
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

/* icount += n, inline. */
static void bump_icount(IRSB* sb, UInt n)
{
   if (n == 0)
      return;
   IRTemp t1 = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp t2 = newIRTemp(sb->tyenv, Ity_I64);
   IRExpr* at = mkIRExpr_HWord((HWord)&icount);
   addStmtToIRSB(sb, IRStmt_WrTmp(t1, IRExpr_Load(Iend_LE, Ity_I64, at)));
   addStmtToIRSB(sb, IRStmt_WrTmp(t2, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(t1),
                                                   IRExpr_Const(IRConst_U64(n)))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, mkIRExpr_HWord((HWord)&icount), IRExpr_RdTmp(t2)));
}

#define LOAD(e, sz, g) add_call(sbOut, "on_load", on_load, (e), n, (sz), (g))
#define STORE(e, sz, g) add_call(sbOut, "on_store", on_store, (e), n, (sz), (g))
#define SIZE(e) sizeofIRType(typeOfIRExpr(sbIn->tyenv, (e)))

static IRSB* vmrec_instrument(VgCallbackClosure* closure, IRSB* sbIn,
                              const VexGuestLayout* layout, const VexGuestExtents* vge,
                              const VexArchInfo* archinfo_host, IRType gWordTy,
                              IRType hWordTy)
{
   if (gWordTy != hWordTy)
      VG_(tool_panic)("vmrec: host/guest word size mismatch");
   IRSB* sbOut = deepCopyIRSBExceptStmts(sbIn);
   Int i = 0;
   while (i < sbIn->stmts_used && sbIn->stmts[i]->tag != Ist_IMark) {
      addStmtToIRSB(sbOut, sbIn->stmts[i]);
      i++;
   }
   UInt n = 0; /* instructions since icount was last bumped */
   for (; i < sbIn->stmts_used; i++) {
      IRStmt* st = sbIn->stmts[i];
      if (!st || st->tag == Ist_NoOp)
         continue;
      switch (st->tag) {
      case Ist_IMark:
         n++;
         if (clo_ifetch)
            add_call(sbOut, "on_fetch", on_fetch, mkIRExpr_HWord(st->Ist.IMark.addr), n, 0,
                     NULL);
         break;
      case Ist_WrTmp:
         if (st->Ist.WrTmp.data->tag == Iex_Load)
            LOAD(st->Ist.WrTmp.data->Iex.Load.addr,
                 sizeofIRType(st->Ist.WrTmp.data->Iex.Load.ty), NULL);
         break;
      case Ist_Store:
         STORE(st->Ist.Store.addr, SIZE(st->Ist.Store.data), NULL);
         break;
      case Ist_StoreG: {
         IRStoreG* sg = st->Ist.StoreG.details;
         STORE(sg->addr, SIZE(sg->data), sg->guard);
         break;
      }
      case Ist_LoadG: {
         IRLoadG* lg = st->Ist.LoadG.details;
         IRType t_res, t_arg;
         typeOfIRLoadGOp(lg->cvt, &t_res, &t_arg);
         LOAD(lg->addr, sizeofIRType(t_arg), lg->guard);
         break;
      }
      case Ist_Dirty: {
         IRDirty* d = st->Ist.Dirty.details;
         if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
            LOAD(d->mAddr, d->mSize, NULL);
         if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
            STORE(d->mAddr, d->mSize, NULL);
         break;
      }
      case Ist_CAS: {
         /* A compare-and-swap reads, and writes if it succeeds: counted as a write. */
         IRCAS* c = st->Ist.CAS.details;
         STORE(c->addr, SIZE(c->dataLo) * (c->dataHi ? 2 : 1), NULL);
         break;
      }
      case Ist_LLSC:
         if (st->Ist.LLSC.storedata == NULL)
            LOAD(st->Ist.LLSC.addr,
                 sizeofIRType(typeOfIRTemp(sbIn->tyenv, st->Ist.LLSC.result)), NULL);
         else
            STORE(st->Ist.LLSC.addr, SIZE(st->Ist.LLSC.storedata), NULL);
         break;
      case Ist_Exit:
         bump_icount(sbOut, n);
         n = 0;
         break;
      default:
         break;
      }
      addStmtToIRSB(sbOut, st);
   }
   bump_icount(sbOut, n);
   return sbOut;
}

/* ------------------------------------------------------------------ setup */

static void vmrec_post_clo_init(void)
{
   if (clo_out == NULL) {
      VG_(fmsg_bad_option)("--out", "vmrec needs --out=PATH\n");
   }
   if (clo_page_size < 2 || (clo_page_size & (clo_page_size - 1)) != 0) {
      VG_(fmsg_bad_option)("--page-size", "must be a power of two of at least 2\n");
   }
   page_shift = 0;
   while ((1LL << page_shift) < clo_page_size)
      page_shift++;
   /* O_APPEND: a regular file as --out takes the blocks of several processes in turn. */
   SysRes sr = VG_(open)(clo_out, VKI_O_WRONLY | VKI_O_CREAT | VKI_O_TRUNC | VKI_O_APPEND, 0600);
   if (sr_isError(sr)) {
      VG_(fmsg)("vmrec: cannot open --out=%s\n", clo_out);
      VG_(exit)(1);
   }
   out_fd = VG_(safe_fd)(sr_Res(sr));
   my_pid = VG_(getpid)();
   my_ppid = VG_(getppid)();
   send_header = send_start = True;
   VG_(atfork)(vmrec_atfork_pre, NULL, vmrec_atfork_child);
}

static void vmrec_fini(Int exitcode)
{
   if (out_fd < 0)
      return;
   if (VG_(clo_verbosity) > 1)
      VG_(umsg)("vmrec: pid %d: %llu access records, %llu file I/O records, %llu instructions\n",
                my_pid, n_acc_records, n_io_records, icount);
   send_end();
   if (out_fd >= 0)
      VG_(close)(out_fd);
   out_fd = -1;
}

static void vmrec_pre_clo_init(void)
{
   VG_(details_name)("vmrec");
   VG_(details_version)("1");
   VG_(details_description)("vmemsim page-access recorder");
   VG_(details_copyright_author)("vmemsim");
   VG_(details_bug_reports_to)("the vmemsim project");
   VG_(details_avg_translation_sizeB)(400);
   VG_(basic_tool_funcs)(vmrec_post_clo_init, vmrec_instrument, vmrec_fini);
   VG_(needs_command_line_options)(vmrec_process_cmd_line_option, vmrec_print_usage,
                                   vmrec_print_debug_usage);
   VG_(needs_syscall_wrapper)(vmrec_pre_syscall, vmrec_post_syscall);
   VG_(track_start_client_code)(vmrec_start_client_code);
   VG_(track_pre_thread_ll_exit)(vmrec_thread_exit);
}

VG_DETERMINE_INTERFACE_VERSION(vmrec_pre_clo_init)
