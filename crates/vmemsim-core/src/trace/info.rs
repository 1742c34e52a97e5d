//! One-pass summary of a trace (`vmemsim trace info`): size, footprint, read/write mix, page
//! range, and LRU reuse distances.
//!
//! Reuse distances are LRU stack distances ([`crate::mrc::StackDistance`]: distinct pages
//! touched since the previous access to the same page, that page included), so `p90 = 5000`
//! means 90% of re-references would hit in an LRU memory of 5000 frames. Percentiles are
//! nearest-rank over re-references only; first touches are counted in `cold_fraction`.
//! Memory: one entry per distinct page.

use serde::{Deserialize, Serialize};

use super::{TraceSource, CHUNK};
use crate::error::{Error, Result};
use crate::mrc::{LruHistogram, StackDistance};

/// Percentiles of LRU stack distances of re-references, in pages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReuseSummary {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
    pub mean: f64,
}

/// What [`info`] reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceInfo {
    pub trace: String,
    /// Bytes per page used for the footprint (the trace's own when it records one).
    pub page_size: u64,
    pub accesses: u64,
    pub reads: u64,
    pub writes: u64,
    /// writes / accesses (0 for an empty trace).
    pub write_fraction: f64,
    pub distinct_pages: u64,
    /// distinct_pages × page_size.
    pub footprint_bytes: u64,
    pub min_page: Option<u64>,
    pub max_page: Option<u64>,
    /// First touches / accesses (0 for an empty trace).
    pub cold_fraction: f64,
    /// `None` when no page is accessed twice.
    pub reuse_distance: Option<ReuseSummary>,
}

/// Summarise `src`; `page_size` is used unless the source records its own.
pub fn info(src: &mut dyn TraceSource, page_size: u64) -> Result<TraceInfo> {
    Ok(info_with_histogram(src, page_size)?.0)
}

/// [`info`] and the stack-distance histogram of the same pass (from which
/// [`LruHistogram::curve`] gives the exact LRU miss curve without reading the trace again).
pub fn info_with_histogram(
    src: &mut dyn TraceSource,
    page_size: u64,
) -> Result<(TraceInfo, LruHistogram)> {
    let page_size = src.page_size().unwrap_or(page_size);
    let name = src.name();
    let mut sd = StackDistance::new();
    let mut h = LruHistogram::default();
    let (mut writes, mut min, mut max) = (0u64, u64::MAX, 0u64);
    let mut buf = Vec::with_capacity(CHUNK);
    loop {
        src.next_chunk(&mut buf)?;
        if buf.is_empty() {
            break;
        }
        for a in &buf {
            writes += a.write as u64;
            min = min.min(a.page);
            max = max.max(a.page);
            let d = sd
                .access(a.page)
                .map_err(|m| Error::trace(&name, format!("access {}", h.accesses), m))?;
            h.record(d);
        }
    }
    let n = h.accesses;
    let frac = |x: u64| if n == 0 { 0.0 } else { x as f64 / n as f64 };
    let reuse = h.percentile(0.5).map(|p50| ReuseSummary {
        p50,
        p90: h.percentile(0.9).unwrap_or(p50),
        p99: h.percentile(0.99).unwrap_or(p50),
        max: h.hist.len() as u64,
        mean: h.mean().unwrap_or(0.0),
    });
    let info = TraceInfo {
        trace: name,
        page_size,
        accesses: n,
        reads: n - writes,
        writes,
        write_fraction: frac(writes),
        distinct_pages: h.cold,
        footprint_bytes: h.cold.saturating_mul(page_size),
        min_page: (n > 0).then_some(min),
        max_page: (n > 0).then_some(max),
        cold_fraction: frac(h.cold),
        reuse_distance: reuse,
    };
    Ok((info, h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::VecSource;
    use crate::Access;

    #[test]
    fn info_by_hand() {
        // Pages 10 20 30 20 10 10 40 20, writes at positions 1 and 6.
        let pages = [10u64, 20, 30, 20, 10, 10, 40, 20];
        let v: Vec<Access> = pages
            .iter()
            .enumerate()
            .map(|(i, &p)| Access {
                page: p,
                write: i == 1 || i == 6,
                gup: false,
            })
            .collect();
        let i = info(&mut VecSource::new(v).named("hand"), 4096).unwrap();
        assert_eq!(i.trace, "hand");
        assert_eq!((i.accesses, i.reads, i.writes), (8, 6, 2));
        assert_eq!(i.write_fraction, 0.25);
        assert_eq!(i.distinct_pages, 4);
        assert_eq!(i.footprint_bytes, 4 * 4096);
        assert_eq!((i.min_page, i.max_page), (Some(10), Some(40)));
        assert_eq!(i.cold_fraction, 0.5);
        // Re-reference distances 2, 3, 1, 3 (counted by hand in mrc::tests).
        assert_eq!(
            i.reuse_distance,
            Some(ReuseSummary {
                p50: 2,
                p90: 3,
                p99: 3,
                max: 3,
                mean: 2.25
            })
        );
    }

    #[test]
    fn empty_and_no_reuse() {
        let i = info(&mut VecSource::new(vec![]), 4096).unwrap();
        assert_eq!((i.accesses, i.distinct_pages, i.min_page), (0, 0, None));
        assert_eq!(i.reuse_distance, None);
        let i = info(&mut VecSource::from_pages(&[5, 6, 7]), 2 << 20).unwrap();
        assert_eq!((i.cold_fraction, i.footprint_bytes), (1.0, 3 * (2 << 20)));
        assert_eq!(i.reuse_distance, None);
    }

    #[test]
    fn native_page_size_wins() {
        let meta = crate::trace::TraceMeta {
            page_size: 1 << 21,
            ..Default::default()
        };
        let mut w = crate::trace::native::NativeWriter::new("m", Vec::new(), meta).unwrap();
        crate::trace::TraceWriter::write(&mut w, &[Access::read(1), Access::read(2)]).unwrap();
        let bytes = w.into_inner().unwrap();
        let mut r = crate::trace::native::NativeReader::from_reader(
            "m",
            Box::new(std::io::Cursor::new(bytes)),
        )
        .unwrap();
        let i = info(&mut r, 4096).unwrap();
        assert_eq!((i.page_size, i.footprint_bytes), (1 << 21, 2 << 21));
    }
}
