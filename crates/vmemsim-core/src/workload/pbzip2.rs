//! `pbzip2-like`: pbzip2 1.1 compressing one file with `threads` compressor threads (seed 004,
//! VSwapper §5.1, Fig. 5 and 11: "Pbzip's 8 threads compressing Linux within a guest", the
//! Linux source as one tar file, in a 1-vCPU guest of 512 MB).
//!
//! ```text
//! pbzip2-like:bytes=512MiB,bs=900000,threads=8,vcpus=1,ratio=0.2,ns_per_kib=100000,seed=S
//! ```
//!
//! # The program
//!
//! pbzip2's producer thread reads the input sequentially in blocks of `bs` bytes (`-b9`:
//! 900,000) and queues them; `threads` consumer threads each take the next block and call
//! `BZ2_bzBuffToBuffCompress` on it (`-9`); a writer thread writes the compressed blocks, in
//! order, to the output file. bzip2's compressor (`BZ2_bzCompressInit` with `n = bs`)
//! allocates `arr1` (`ptr`, 4 bytes a byte; `mtfv` aliases it), `arr2` (`4 (n + 34)` bytes:
//! `block`, then from byte `n + 34` rounded up to even the 2-byte `quadrant`, and the output
//! bits `zbits` from byte `n`) and `ftab` (65,537 × 4 bytes): bzip2's documented compress
//! memory, 400k + 8 × block size (7.6 MB at `-9`).
//!
//! # The model
//!
//! Block `b` (0-based; the last may be short) is compressed by consumer `b mod threads`, the
//! static form of the shared queue when every block costs the same. A VM gives a workload
//! one vCPU per stream and has no scheduler of guest threads, so the `threads` consumers are
//! dealt round-robin onto `vcpus` streams (consumer `c` runs on vCPU `c mod vcpus`, default
//! 1 as in the paper's guest): a vCPU compresses its consumers' blocks one after another in
//! block order (a consumer's whole block at a time, where a guest kernel would time-slice
//! them; the cyclic reuse of the `threads` working sets is the same). The producer's `read`
//! of a block and the writer's `write` of its output are made on the vCPU of the block's
//! consumer, just before and after the compression (they are short and wait on I/O; on which
//! vCPU the real threads make them depends on the guest scheduler).
//!
//! Per block of `n` bytes (`K = ceil(n / 1024)` KiB), as steps of one KiB:
//!
//! 1. `read(in, n)` at `b × bs` into the consumer's input buffer (its pages written).
//! 2. Copy (`ADD_CHAR_TO_BLOCK`: RLE1, CRC): input buffer read, `block` written, in order.
//! 3. `ftab` and `quadrant` cleared, page by page.
//! 4. Radix placement (`mainSort`'s bucket counts and `ptr[--ftab[j]] = i`): `block` read in
//!    order, one `ftab` page and [`RADIX_PER_KIB`] `ptr` pages written at random.
//! 5. Bucket sorting (`mainQSort3`, `mainGtU`): `ptr` read in order, [`SORT_READS_PER_KIB`]
//!    `block` pages read and [`SORT_QUAD_PER_KIB`] `quadrant` pages written at random.
//! 6. MTF (`generateMTFValues`): `ptr` read in order, [`MTF_PER_KIB`] `block` pages read at
//!    random (`block[ptr[i] - 1]`), `mtfv` written in order (2 bytes a symbol).
//! 7. Huffman coding (`sendMTFValues`): `mtfv` read in order, `zbits` written in order and
//!    copied into the consumer's output buffer (`ratio` of the block).
//! 8. `write(out, ceil(ratio × n))` at `b × ceil(ratio × bs)` from the output buffer (its
//!    pages read).
//!
//! The random pages stand for the distinct cache lines the sort reaches per KiB (the
//! references are a few thousand per KiB, mostly to lines just touched): with the
//! defaults every page of `ptr` and `block` is touched a few times per block, as the BWT
//! sort does. Each block draws from its own random stream (seed, block), so its ops do not
//! depend on `threads` or `vcpus`.
//!
//! Memory: each consumer's input buffer, output buffer, `arr1`, `arr2` and `ftab`, anonymous
//! pages of process 0 from page 0 up, consumer after consumer, reused for each of its
//! blocks. pbzip2 `malloc`s them per block and frees them after; glibc's mmap threshold
//! grows to the size of a freed mmapped chunk (up to 32 MiB), so from the second block on
//! these sizes come from the thread's arena and the same pages come back: the model reuses
//! them from the first block. (The input buffers are the producer's allocations, freed by
//! the writer; one per consumer is in flight here.) The files: the input exists at the start
//! (`bytes`), the output is new.
//!
//! CPU: `ns_per_kib` per KiB of each block, a partial last KiB counted whole (100 µs: bzip2
//! `-9` at about 10 MB/s per core on the paper's 2013 hardware, an estimate), split over the
//! steps as 10% copy, 10% radix, 50% sorting, 15% MTF, 15% Huffman (estimates; the sort
//! dominates bzip2's time).
//!
//! [`Workload::footprint_pages`]: the pages each consumer touches for its largest block
//! (input buffer `n`, output buffer `ceil(ratio × n)`, `ptr` `4n`, `arr2` up to the end of
//! `quadrant`, `ftab`), plus the input file's and the output file's pages.
//!
//! # Estimates and left out
//!
//! `ratio` 0.2 (bzip2 `-9` on C source text compresses to ~18–22%) and `ns_per_kib` are
//! estimates; the random pages per KiB are the model's resolution, not measured. Left out:
//! RLE1's shrinking of runs (the block is `n` bytes), bzip2's `nblockMAX = bs − 19` (the last
//! 19 bytes of a full block make a second bzip2 block), `fallbackSort` for repetitive blocks
//! (it uses `arr2` as `eclass`), the queues' own memory and locking, the stream headers and
//! CRCs in the output, the threads' stacks, content classes of the pages (all numeric).

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::common::{pages_of, push_file_op, stream, Emitter, CHUNK_OPS, PAGE_BYTES};
use super::params::{fmt_size, Params};
use super::{bad_tid, Op, Workload};
use crate::error::Result;
use crate::mm::FileSpec;
use crate::trace::recorded::{FileIo, FileOp};

const TAG: u64 = 0x5042_5A32;
const KEYS: &[&str] = &[
    "bytes",
    "bs",
    "threads",
    "vcpus",
    "ratio",
    "ns_per_kib",
    "seed",
];

/// `BZ_N_OVERSHOOT` (`BZ_N_RADIX + BZ_N_QSORT + BZ_N_SHELL + 2`): bytes `block` and
/// `quadrant` extend past the block.
const OVERSHOOT: u64 = 34;
/// `ftab`: 65,537 4-byte bucket counts.
const FTAB_BYTES: u64 = 65_537 * 4;
/// Random `ptr` pages written per KiB in the radix placement.
pub const RADIX_PER_KIB: u64 = 2;
/// Random `block` pages read and `quadrant` pages written per KiB by the bucket sort.
pub const SORT_READS_PER_KIB: u64 = 2;
pub const SORT_QUAD_PER_KIB: u64 = 1;
/// Random `block` pages read per KiB by the MTF pass.
pub const MTF_PER_KIB: u64 = 2;
/// Shares of `ns_per_kib` (percent) of the copy, radix, sort and MTF steps; Huffman coding
/// takes the rest.
const SHARES: [u64; 4] = [10, 10, 50, 15];

/// Steps of a block (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Read,
    Copy,
    Clear,
    Radix,
    Sort,
    Mtf,
    Huffman,
    Write,
}

struct Stream {
    em: Emitter,
    /// The block being compressed (`None`: look for the next of this vCPU's), its step and
    /// the step's position (KiB, or page for `Clear`).
    block: Option<u64>,
    step: Step,
    k: u64,
    /// The next block to consider.
    next: u64,
    rng: Xoshiro256PlusPlus,
    finished: bool,
    ios: Vec<FileIo>,
}

/// The pbzip2 model (module docs).
pub struct Pbzip2Like {
    bytes: u64,
    bs: u64,
    threads: u64,
    vcpus: usize,
    ratio: f64,
    ns_per_kib: u64,
    seed: u64,
    state: Vec<Stream>,
}

/// A consumer's regions, pages from its first: input buffer, output buffer, `arr1`, `arr2`,
/// `ftab`.
#[derive(Clone, Copy, Debug)]
struct Regions {
    inb: u64,
    outb: u64,
    arr1: u64,
    arr2: u64,
    ftab: u64,
}

impl Pbzip2Like {
    pub(crate) fn parse(text: &str, run_seed: u64) -> Result<Pbzip2Like> {
        let p = Params::parse("pbzip2-like", text, KEYS)?;
        let bs = p.size("bs")?.unwrap_or(900_000);
        if bs == 0 || bs > 1 << 30 {
            return Err(p.err("bs", "must be 1 byte to 1 GiB"));
        }
        let bytes = p.size("bytes")?.unwrap_or(512 << 20);
        if bytes == 0 || bytes > 1 << 42 {
            return Err(p.err("bytes", "must be 1 byte to 4 TiB"));
        }
        let threads = p.u64_in("threads", 8, 1, 256)?;
        let vcpus = p.u64_in("vcpus", 1, 1, threads)? as usize;
        let w = Pbzip2Like {
            bytes,
            bs,
            threads,
            vcpus,
            ratio: p.f64_in("ratio", 0.2, 0.01, 1.0)?,
            ns_per_kib: p.u64_in("ns_per_kib", 100_000, 0, 1 << 32)?,
            seed: p.seed(run_seed)?,
            state: Vec::new(),
        };
        Ok(w.reset())
    }

    fn reset(mut self) -> Self {
        self.state = (0..self.vcpus)
            .map(|_| Stream {
                em: Emitter::default(),
                block: None,
                step: Step::Read,
                k: 0,
                next: 0,
                rng: stream(self.seed, TAG, 0),
                finished: false,
                ios: Vec::new(),
            })
            .collect();
        self
    }

    fn blocks(&self) -> u64 {
        self.bytes.div_ceil(self.bs)
    }

    /// Bytes of block `b`.
    fn len(&self, b: u64) -> u64 {
        self.bs.min(self.bytes - b * self.bs)
    }

    /// Compressed bytes of a block of `n` bytes.
    fn out_len(&self, n: u64) -> u64 {
        (n as f64 * self.ratio).ceil() as u64
    }

    /// Byte offset of `quadrant` in `arr2` for a block of `n` bytes, and the end of it.
    fn quadrant(n: u64) -> (u64, u64) {
        let q0 = (n + OVERSHOOT).next_multiple_of(2);
        (q0, q0 + 2 * (n + OVERSHOOT))
    }

    /// Consumer `c`'s regions (allocated sizes: the output buffer is pbzip2's
    /// `1.01 × bs + 600`).
    fn regions(&self, c: u64) -> Regions {
        let out_alloc = (self.bs as f64 * 1.01).ceil() as u64 + 600;
        let sizes = [
            pages_of(self.bs),
            pages_of(out_alloc),
            pages_of(4 * self.bs),
            pages_of(4 * (self.bs + OVERSHOOT)),
            pages_of(FTAB_BYTES),
        ];
        let per: u64 = sizes.iter().sum();
        let inb = c * per;
        let outb = inb + sizes[0];
        let arr1 = outb + sizes[1];
        let arr2 = arr1 + sizes[2];
        let ftab = arr2 + sizes[3];
        Regions {
            inb,
            outb,
            arr1,
            arr2,
            ftab,
        }
    }

    /// Pages a consumer touches for a block of `n` bytes.
    pub fn consumer_pages(&self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        pages_of(n)
            + pages_of(self.out_len(n))
            + pages_of(4 * n)
            + pages_of(Self::quadrant(n).1)
            + pages_of(FTAB_BYTES)
    }

    /// The vCPU that compresses block `b`.
    fn vcpu_of(&self, b: u64) -> usize {
        ((b % self.threads) % self.vcpus as u64) as usize
    }
}

/// Append a file op with its record.
fn file(st: &mut Stream, buf: &mut Vec<Op>, op: FileOp, file: u32, offset: u64, len: u64) {
    st.em.flush(buf);
    st.em.split();
    push_file_op(buf, &mut st.ios, op, file, offset, len);
}

impl Workload for Pbzip2Like {
    fn name(&self) -> String {
        format!(
            "pbzip2-like:bytes={},bs={},threads={},vcpus={},ratio={},ns_per_kib={},seed={}",
            fmt_size(self.bytes),
            fmt_size(self.bs),
            self.threads,
            self.vcpus,
            self.ratio,
            self.ns_per_kib,
            self.seed
        )
    }

    fn threads(&self) -> usize {
        self.vcpus
    }

    fn footprint_pages(&self) -> u64 {
        let (nb, full) = (self.blocks(), self.bytes / self.bs);
        let consumers: u64 = (0..self.threads.min(nb))
            .map(|c| {
                // Consumer c's largest block: a full one if it has one, else the short last.
                if c < full {
                    self.consumer_pages(self.bs)
                } else {
                    self.consumer_pages(self.len(c))
                }
            })
            .sum();
        consumers + pages_of(self.bytes) + pages_of(self.files()[1].extent)
    }

    fn files(&self) -> Vec<FileSpec> {
        let nb = self.blocks();
        let out = (nb - 1) * self.out_len(self.bs) + self.out_len(self.len(nb - 1));
        vec![
            FileSpec {
                id: 0,
                initial_size: self.bytes,
                extent: self.bytes,
            },
            FileSpec {
                id: 1,
                initial_size: 0,
                extent: out,
            },
        ]
    }

    fn file_io(&self, tid: usize, slot: u32) -> Option<&FileIo> {
        self.state.get(tid)?.ios.get(slot as usize)
    }

    fn next_ops(&mut self, tid: usize, buf: &mut Vec<Op>) -> Result<()> {
        if tid >= self.vcpus {
            return Err(bad_tid("pbzip2-like", tid, self.vcpus));
        }
        self.state[tid].ios.clear();
        if self.state[tid].finished {
            return Ok(());
        }
        let nb = self.blocks();
        let start = buf.len();
        while buf.len() - start < CHUNK_OPS {
            let b = match self.state[tid].block {
                Some(b) => b,
                None => {
                    let mut b = self.state[tid].next;
                    while b < nb && self.vcpu_of(b) != tid {
                        b += 1;
                    }
                    let st = &mut self.state[tid];
                    if b >= nb {
                        st.em.flush(buf);
                        st.finished = true;
                        break;
                    }
                    st.next = b + 1;
                    st.block = Some(b);
                    st.step = Step::Read;
                    st.k = 0;
                    st.rng = stream(self.seed, TAG, b + 1);
                    b
                }
            };
            let n = self.len(b);
            let out = self.out_len(n);
            let r = self.regions(b % self.threads);
            let kib = n.div_ceil(1024);
            let (q0, q1) = Self::quadrant(n);
            let block_pages = pages_of(n);
            let ptr_pages = pages_of(4 * n);
            let quad = (q0 / PAGE_BYTES, (q1 - 1) / PAGE_BYTES + 1);
            let ftab_pages = pages_of(FTAB_BYTES);
            let share = |i: usize| self.ns_per_kib * SHARES[i] / 100;
            let huff_ns = self.ns_per_kib
                - SHARES
                    .iter()
                    .map(|s| self.ns_per_kib * s / 100)
                    .sum::<u64>();
            let (bs, out_full) = (self.bs, self.out_len(self.bs));
            let st = &mut self.state[tid];
            let k = st.k;
            // The byte of the block at this KiB, its page.
            let at = k * 1024;
            let page = at / PAGE_BYTES;
            match st.step {
                Step::Read => {
                    file(st, buf, FileOp::Read, 0, b * bs, n);
                    for p in 0..block_pages {
                        st.em.access(buf, r.inb + p, true);
                    }
                    st.step = Step::Copy;
                    continue;
                }
                Step::Copy => {
                    st.em.access(buf, r.inb + page, false);
                    st.em.access(buf, r.arr2 + page, true);
                    st.em.compute(share(0));
                }
                Step::Clear => {
                    // ftab's pages, then quadrant's.
                    if k < ftab_pages {
                        st.em.access(buf, r.ftab + k, true);
                    } else {
                        st.em.access(buf, r.arr2 + quad.0 + (k - ftab_pages), true);
                    }
                    st.k += 1;
                    if st.k == ftab_pages + quad.1 - quad.0 {
                        st.step = Step::Radix;
                        st.k = 0;
                    }
                    continue;
                }
                Step::Radix => {
                    st.em.access(buf, r.arr2 + page, false);
                    let f = st.rng.gen_range(0..ftab_pages);
                    st.em.access(buf, r.ftab + f, true);
                    for _ in 0..RADIX_PER_KIB {
                        let p = st.rng.gen_range(0..ptr_pages);
                        st.em.access(buf, r.arr1 + p, true);
                    }
                    st.em.compute(share(1));
                }
                Step::Sort => {
                    // ptr: 4 bytes a byte of the block.
                    st.em.access(buf, r.arr1 + (4 * at) / PAGE_BYTES, false);
                    for _ in 0..SORT_READS_PER_KIB {
                        let p = st.rng.gen_range(0..block_pages);
                        st.em.access(buf, r.arr2 + p, false);
                    }
                    for _ in 0..SORT_QUAD_PER_KIB {
                        let p = st.rng.gen_range(quad.0..quad.1);
                        st.em.access(buf, r.arr2 + p, true);
                    }
                    st.em.compute(share(2));
                }
                Step::Mtf => {
                    st.em.access(buf, r.arr1 + (4 * at) / PAGE_BYTES, false);
                    for _ in 0..MTF_PER_KIB {
                        let p = st.rng.gen_range(0..block_pages);
                        st.em.access(buf, r.arr2 + p, false);
                    }
                    // mtfv: 2 bytes a symbol, over the start of arr1.
                    st.em.access(buf, r.arr1 + (2 * at) / PAGE_BYTES, true);
                    st.em.compute(share(3));
                }
                Step::Huffman => {
                    st.em.access(buf, r.arr1 + (2 * at) / PAGE_BYTES, false);
                    // This KiB's share of the compressed bytes: zbits from byte n of arr2,
                    // copied into the output buffer.
                    let o = |x: u64| (x.min(n) as u128 * out as u128 / n as u128) as u64;
                    let (o0, o1) = (o(at), o(at + 1024));
                    let arr2_at = r.arr2 * PAGE_BYTES + n;
                    st.em.range(buf, arr2_at + o0, o1 - o0, true);
                    st.em.range(buf, r.outb * PAGE_BYTES + o0, o1 - o0, true);
                    st.em.compute(huff_ns);
                }
                Step::Write => {
                    for p in 0..pages_of(out) {
                        st.em.access(buf, r.outb + p, false);
                    }
                    file(st, buf, FileOp::Write, 1, b * out_full, out);
                    st.block = None;
                    continue;
                }
            }
            // A KiB step done.
            st.k += 1;
            if st.k == kib {
                st.k = 0;
                st.step = match st.step {
                    Step::Copy => Step::Clear,
                    Step::Radix => Step::Sort,
                    Step::Sort => Step::Mtf,
                    Step::Mtf => Step::Huffman,
                    _ => Step::Write,
                };
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::parse;
    use std::collections::HashSet;

    use crate::vm::workloads::testutil::drain_with_files as drain;

    fn calls(ios: &[FileIo], op: FileOp) -> Vec<(u64, u64)> {
        ios.iter()
            .filter(|x| x.op == op)
            .map(|x| (x.offset, x.len))
            .collect()
    }

    #[test]
    fn blocks_are_read_compressed_and_written_in_order() {
        // 40 KiB in 16 KiB blocks: 16, 16 and 8 KiB, read at 0, 16 and 32 KiB; at ratio 0.25
        // each is written as 4096, 4096 and 2048 bytes at 0, 4096 and 8192. Two consumers
        // (blocks 0 and 2, block 1) on one vCPU.
        let mut w = parse(
            "pbzip2-like:bytes=40KiB,bs=16KiB,threads=2,ratio=0.25,ns_per_kib=1000",
            0,
        )
        .unwrap();
        assert_eq!(
            w.name(),
            "pbzip2-like:bytes=40KiB,bs=16KiB,threads=2,vcpus=1,ratio=0.25,ns_per_kib=1000,seed=0"
        );
        assert_eq!(w.threads(), 1);
        let (ops, ios) = drain(w.as_mut());
        assert_eq!(
            calls(&ios[0], FileOp::Read),
            [(0, 16384), (16384, 16384), (32768, 8192)]
        );
        assert_eq!(
            calls(&ios[0], FileOp::Write),
            [(0, 4096), (4096, 4096), (8192, 2048)]
        );
        assert!(ios[0]
            .iter()
            .all(|x| (x.op == FileOp::Read) == (x.file == 0)));
        let f = w.files();
        assert_eq!((f[0].initial_size, f[0].extent), (40960, 40960));
        assert_eq!((f[1].initial_size, f[1].extent), (0, 10240));
        // CPU: 16 + 16 + 8 KiB at 1000 ns a KiB.
        let cpu: u64 = ops[0]
            .iter()
            .map(|o| match o {
                Op::Compute { ns } => *ns as u64,
                _ => 0,
            })
            .sum();
        assert_eq!(cpu, 40_000);
        // Each consumer's region: input buffer 4 pages, output buffer pages_of(16548 + 600)
        // = 5, arr1 pages_of(65536) = 16, arr2 pages_of(4 × 16418) = 17, ftab
        // pages_of(262148) = 65: 107 pages. Touched for a 16 KiB block: input 4, output
        // pages_of(4096) = 1, ptr 16, arr2 up to quadrant's end (16418 + 2 × 16418 = 49254
        // bytes: 13 pages), ftab 65: 99.
        let pages: HashSet<u64> = ops[0]
            .iter()
            .filter_map(|o| match o {
                Op::Access { page, .. } => Some(*page),
                _ => None,
            })
            .collect();
        assert_eq!(pages.iter().filter(|&&p| p < 107).count(), 99);
        assert_eq!(
            pages.iter().filter(|&&p| (107..214).contains(&p)).count(),
            99
        );
        assert_eq!(pages.len(), 198);
        // Footprint: 2 × 99, the input's 10 pages and the output's pages_of(10240) = 3.
        assert_eq!(w.footprint_pages(), 198 + 10 + 3);
    }

    #[test]
    fn consumers_are_dealt_onto_vcpus_and_blocks_do_not_depend_on_them() {
        // 5 blocks of 8 KiB, 3 consumers on 2 vCPUs: block b to consumer b mod 3, on vCPU
        // (b mod 3) mod 2: vCPU 0 has blocks 0, 2, 3, vCPU 1 blocks 1, 4. Outputs of
        // ceil(0.25 × 8192) = 2048 bytes at b × 2048.
        let spec = "pbzip2-like:bytes=40KiB,bs=8KiB,threads=3,vcpus=2,ratio=0.25";
        let mut w = parse(spec, 5).unwrap();
        assert_eq!(w.threads(), 2);
        let (ops, ios) = drain(w.as_mut());
        let reads = |v: usize| calls(&ios[v], FileOp::Read);
        let writes = |v: usize| calls(&ios[v], FileOp::Write);
        assert_eq!(reads(0), [(0, 8192), (16384, 8192), (24576, 8192)]);
        assert_eq!(reads(1), [(8192, 8192), (32768, 8192)]);
        assert_eq!(writes(0), [(0, 2048), (4096, 2048), (6144, 2048)]);
        assert_eq!(writes(1), [(2048, 2048), (8192, 2048)]);
        // The same blocks on one vCPU: the same ops, block by block in block order.
        let one = spec.replace("vcpus=2", "vcpus=1");
        let mut w1 = parse(&one, 5).unwrap();
        let (ops1, _) = drain(w1.as_mut());
        let blocks = |s: &[Op]| -> Vec<Vec<Op>> {
            // Split a stream at its reads (each block starts with one).
            let mut out: Vec<Vec<Op>> = Vec::new();
            let mut file_ops = 0;
            for op in s {
                if matches!(op, Op::File { .. }) {
                    file_ops += 1;
                    if file_ops % 2 == 1 {
                        out.push(Vec::new());
                    }
                }
                if let Some(last) = out.last_mut() {
                    // Slots restart at each chunk: compare ops without them.
                    if !matches!(op, Op::File { .. }) {
                        last.push(*op);
                    }
                }
            }
            out
        };
        let (a, b, c) = (blocks(&ops[0]), blocks(&ops[1]), blocks(&ops1[0]));
        assert_eq!((a.len(), b.len(), c.len()), (3, 2, 5));
        assert_eq!(c, [&a[0], &b[0], &a[1], &a[2], &b[1]].map(|x| x.clone()));
        // Deterministic in (spec, seed), and the name re-runs it.
        let again = parse(&w.name(), 99).unwrap();
        assert_eq!(again.name(), w.name());
        let mut w2 = parse(spec, 5).unwrap();
        assert_eq!(drain(w2.as_mut()).0, ops);
    }

    #[test]
    fn default_footprint() {
        // bs = 900,000: per consumer pages_of(900000) = 220, pages_of(180000) = 44,
        // pages_of(3600000) = 879, quadrant's end 900034 + 2 × 900034 = 2700102: 660, ftab
        // 65: 1,868 pages (7.3 MiB); 8 of them. The input's 131,072 pages; 597 blocks, the
        // last of 536870912 − 596 × 900000 = 470912 bytes: an output of 596 × 180000 +
        // ceil(94182.4) = 107374183 bytes, 26,215 pages.
        let w = parse("pbzip2-like", 1).unwrap();
        assert_eq!(
            w.name(),
            "pbzip2-like:bytes=512MiB,bs=900000,threads=8,vcpus=1,ratio=0.2,ns_per_kib=100000,seed=1"
        );
        assert_eq!(w.files()[1].extent, 107_374_183);
        assert_eq!(w.footprint_pages(), 8 * 1_868 + 131_072 + 26_215);
    }

    #[test]
    fn bad_keys_are_named() {
        for (spec, key) in [
            ("pbzip2-like:vcpus=9", "pbzip2-like.vcpus:"),
            ("pbzip2-like:threads=2,vcpus=3", "pbzip2-like.vcpus:"),
            ("pbzip2-like:level=9", "pbzip2-like.level:"),
            ("pbzip2-like:bs=0", "pbzip2-like.bs:"),
            ("pbzip2-like:ratio=abc", "pbzip2-like.ratio:"),
            ("pbzip2-like:bytes=0", "pbzip2-like.bytes:"),
            ("pbzip2-like:threads=1,threads=2", "pbzip2-like.threads:"),
        ] {
            let e = parse(spec, 0).err().unwrap().to_string();
            assert!(e.starts_with(key), "{spec}: {e}");
        }
    }

    #[test]
    fn runs_in_a_small_vm_with_its_cpu_time() {
        // 1 MiB in 128 KiB blocks, 4 consumers on 2 vCPUs, in a guest of half the footprint
        // on a host of a little more: it completes, reads its input and writes its output
        // through the guest's page cache, and its CPU time is 1024 KiB × 20 µs.
        use crate::vm::{run, Paging, VmConfig};
        let spec = "pbzip2-like:bytes=1MiB,bs=128KiB,threads=4,vcpus=2,ns_per_kib=20000";
        let mut w = crate::vm::workloads::parse(spec, 3).unwrap();
        let fp = w.footprint_pages() as u32;
        let c = VmConfig::new(Paging::Tdp, fp / 2 + 64, fp + 256);
        let r = run(&c, w.as_mut()).unwrap();
        assert_eq!(r.workload, w.name());
        assert_eq!(r.time.compute_ns, 1024 * 20_000);
        // Two vCPUs, each with two 128 KiB blocks' CPU at least.
        assert!(r.runtime_ns >= 4 * 128 * 20_000, "{}", r.runtime_ns);
        assert!(r.stats.first_touch > 0);
    }
}
