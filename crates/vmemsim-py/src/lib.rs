//! Thin PyO3 binding: converts arguments, calls vmemsim-core, returns plain Python data.
//! No simulation logic lives here.
//!
//! Everything the user can name (policies, trace formats, generator kinds, option keys) comes
//! from the core's registries ([`PolicyKind::ALL`], [`TraceFormat::ALL`], [`generate::KINDS`]),
//! so a policy, format or generator added to the core shows up here and in the CLI without
//! touching this crate.
//!
//! # Trace sources
//!
//! Every function that reads a trace takes a *source*: a dict built by `vmemsim.api`, one of
//!
//! - `{"path": str, "format": str | None, "page_size": int, "addresses": bool,
//!   "csv": str | None}`: a trace file ([`trace::open`] with [`ReaderOptions`]; `format`
//!   `None` detects it);
//! - `{"gen": spec, "seed": int}`: a generator ([`generate::GenSpec`]; `seed` is used where
//!   the spec gives none), named `gen:<canonical spec>` in results so it can be re-run;
//! - `{"pages": ndarray, "writes": ndarray | None, "gup": ndarray | None}`: page numbers in
//!   memory; `gup` marks the accesses made by `get_user_pages` ([`Access::gup`]).
//!
//! A source is checked when it is converted (file exists and its format is known, reader
//! options parse, the generator spec parses and builds), so bad input is reported before any
//! long run.
//!
//! # Results, errors, progress
//!
//! Results cross the boundary as JSON of the core's types (`ReplayResult`, [`MissCurve`],
//! [`TraceInfo`]); the Python side turns them into typed objects. Every core error becomes a
//! `vmemsim.VmemsimError` (a `ValueError`) carrying the one-line `Display` of
//! [`vmemsim_core::Error`]. Work runs on a worker thread with the GIL released while the
//! calling thread waits; every [`PROGRESS_EVERY`] the calling thread takes the GIL, lets
//! Python handle pending signals (Ctrl-C in a notebook) and calls the progress callback with
//! `(accesses done, total or None)`. An exception from either stops the work at its next chunk
//! and is re-raised.

// pyo3 0.22's `#[pyfunction]` expansion trips this lint on every `PyResult` return.
#![allow(clippy::useless_conversion)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use numpy::{PyArray1, PyArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use vmemsim_core::engine::MAX_FRAMES;
use vmemsim_core::generate::{self, GenSpec};
use vmemsim_core::mrc::{self, MissCurve, ShardsConfig};
use vmemsim_core::policy::registry::PolicyVisitor;
use vmemsim_core::policy::{Policy, PolicyKind, PolicyOptions};
use vmemsim_core::replay;
use vmemsim_core::trace::info::{self, TraceInfo};
use vmemsim_core::trace::{
    self, CsvOptions, ReaderOptions, TraceFormat, TraceMeta, TraceSource, VecSource, CHUNK,
};
use vmemsim_core::util::PageMap;
use vmemsim_core::{Access, Error};

create_exception!(
    vmemsim,
    VmemsimError,
    PyValueError,
    "Bad input to vmemsim (unknown policy or option, bad size, malformed or missing trace). \
     The message is one line naming the file and line, or the configuration key."
);

/// Smallest gap between two calls of a progress callback.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

fn py_err(e: Error) -> PyErr {
    VmemsimError::new_err(e.to_string())
}

fn config_err(key: &str, msg: impl Into<String>) -> PyErr {
    py_err(Error::config(key, msg))
}

/// The project's one "did you mean" (`vmemsim_core::error::did_you_mean`).
#[pyfunction]
fn did_you_mean(word: &str, options: Vec<String>) -> String {
    vmemsim_core::error::did_you_mean(word, &options)
}

/// The package version of the core (also the version written into results).
#[pyfunction]
fn version() -> &'static str {
    replay::VERSION
}

/// Builds nothing but a policy, to learn its family (registry entries do not carry it).
struct FamilyProbe;

impl PolicyVisitor for FamilyProbe {
    type Out = String;
    fn visit<P: Policy>(self, p: P) -> String {
        format!("{:?}", p.family()).to_ascii_lowercase()
    }
}

/// Every registered policy as `(name, description, family)`, in registry order.
#[pyfunction]
fn policies() -> Vec<(String, String, String)> {
    PolicyKind::ALL
        .iter()
        .map(|e| {
            let opts = PolicyOptions::new(0);
            let family = catch_unwind(AssertUnwindSafe(|| e.0.build(1024, &opts, FamilyProbe)))
                .ok()
                .and_then(|r| r.ok())
                .unwrap_or_else(|| "unknown".to_string());
            (e.1.to_string(), e.2.to_string(), family)
        })
        .collect()
}

/// Names of the trace file formats the core reads.
#[pyfunction]
fn trace_formats() -> Vec<String> {
    TraceFormat::ALL.iter().map(|e| e.1.to_string()).collect()
}

/// Every trace format as `(name, description)`.
#[pyfunction]
fn trace_format_descriptions() -> Vec<(String, String)> {
    TraceFormat::ALL
        .iter()
        .map(|e| (e.1.to_string(), e.0.description().to_string()))
        .collect()
}

/// Every generator kind as `(name, description)`.
#[pyfunction]
fn generator_kinds() -> Vec<(String, String)> {
    generate::KINDS
        .iter()
        .map(|(k, d)| (k.to_string(), d.to_string()))
        .collect()
}

/// Parse and build a generator spec: returns `(name, accesses)`, the name being
/// `gen:<canonical spec with its seed>`.
#[pyfunction]
fn check_generator(spec: &str, seed: u64) -> PyResult<(String, u64)> {
    let src = Source::generator(spec, seed)?;
    let g = src.open().map_err(py_err)?;
    Ok((g.name(), g.len_hint().unwrap_or(0)))
}

/// The generator's plan for the kernel harness's workload program (`GenSpec::plan`).
#[pyfunction]
fn generator_plan(spec: &str, seed: u64) -> PyResult<String> {
    GenSpec::parse(spec)
        .and_then(|g| g.plan(seed))
        .map_err(py_err)
}

// ---------------------------------------------------------------------------------- sources

/// Where accesses come from (see the module docs).
enum Source {
    File {
        path: String,
        format: TraceFormat,
        opts: ReaderOptions,
    },
    Gen {
        spec: GenSpec,
        seed: u64,
    },
    Memory(VecSource),
}

/// A generator under the name `gen:<canonical spec>`, so that a result's `trace` field can be
/// given back to `--trace`.
struct NamedGen {
    inner: generate::Generator,
    name: String,
}

impl TraceSource for NamedGen {
    fn next_chunk(&mut self, buf: &mut Vec<Access>) -> vmemsim_core::Result<()> {
        self.inner.next_chunk(buf)
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn len_hint(&self) -> Option<u64> {
        self.inner.len_hint()
    }
}

const SOURCE_KEYS: &str =
    "path, format, page_size, addresses, csv | gen, seed | pages, writes, gup";

impl Source {
    fn generator(spec: &str, seed: u64) -> PyResult<Source> {
        let spec = spec.trim();
        let spec = spec.strip_prefix("gen:").unwrap_or(spec);
        let parsed = GenSpec::parse(spec).map_err(py_err)?;
        // Building checks what parsing cannot (a missing `n`); it is cheap (no table).
        parsed.build(seed).map_err(py_err)?;
        Ok(Source::Gen { spec: parsed, seed })
    }

    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Source> {
        let mut path: Option<String> = None;
        let mut format: Option<String> = None;
        let mut opts = ReaderOptions::default();
        let mut csv: Option<String> = None;
        let mut gen: Option<String> = None;
        let mut seed: u64 = 0;
        let mut pages: Option<Bound<'_, PyAny>> = None;
        let mut writes: Option<Bound<'_, PyAny>> = None;
        let mut gup: Option<Bound<'_, PyAny>> = None;
        for (k, v) in d.iter() {
            let key: String = k.extract().map_err(|_| {
                config_err("trace", format!("keys must be strings, got {}", repr(&k)))
            })?;
            match key.as_str() {
                "path" => path = Some(v.extract().map_err(|_| expected("trace", "a path", &v))?),
                "format" => {
                    if !v.is_none() {
                        format = Some(v.extract().map_err(|_| expected("format", "a name", &v))?)
                    }
                }
                "page_size" => {
                    opts.page_size =
                        int_in("page_size", &v, 0, u64::MAX as i128, "positive")? as u64
                }
                "addresses" => opts.addresses = v.is_truthy()?,
                "csv" => {
                    if !v.is_none() {
                        csv = Some(v.extract().map_err(|_| expected("csv", "a string", &v))?)
                    }
                }
                "gen" => gen = Some(v.extract().map_err(|_| expected("trace", "a spec", &v))?),
                "seed" => seed = int_in("seed", &v, 0, u64::MAX as i128, "0..2^64-1")? as u64,
                "pages" => pages = Some(v),
                "writes" => {
                    if !v.is_none() {
                        writes = Some(v)
                    }
                }
                "gup" => {
                    if !v.is_none() {
                        gup = Some(v)
                    }
                }
                _ => {
                    return Err(config_err(
                        "trace",
                        format!("unknown source key '{key}'; valid: {SOURCE_KEYS}"),
                    ))
                }
            }
        }
        match (path, gen, pages) {
            (Some(path), None, None) => {
                opts.page_shift().map_err(py_err)?;
                let format = match format.as_deref() {
                    None | Some("") | Some("auto") => TraceFormat::detect(&path).map_err(py_err)?,
                    Some(f) => TraceFormat::from_name(f).map_err(py_err)?,
                };
                if let Some(spec) = csv {
                    if format != TraceFormat::Csv {
                        return Err(config_err(
                            "csv",
                            format!(
                                "a column mapping is for CSV traces; {path} is read as {}",
                                format.name()
                            ),
                        ));
                    }
                    opts.csv = CsvOptions::parse(&spec).map_err(py_err)?;
                }
                Ok(Source::File { path, format, opts })
            }
            (None, Some(spec), None) => Source::generator(&spec, seed),
            (None, None, Some(pages)) => {
                let mut accesses = pages_from(&pages)?;
                if let Some(w) = writes {
                    set_flags(&mut accesses, &w, "writes", |a, v| a.write = v)?;
                }
                if let Some(g) = gup {
                    set_flags(&mut accesses, &g, "gup", |a, v| a.gup = v)?;
                }
                Ok(Source::Memory(VecSource::new(accesses)))
            }
            _ => Err(config_err(
                "trace",
                "give exactly one of a path, a generator spec or page numbers",
            )),
        }
    }

    fn open(&self) -> vmemsim_core::Result<Box<dyn TraceSource>> {
        Ok(match self {
            Source::File { path, format, opts } => trace::open(path, Some(*format), opts)?,
            Source::Gen { spec, seed } => {
                let inner = spec.build(*seed)?;
                let name = format!("gen:{}", inner.spec());
                Box::new(NamedGen { inner, name })
            }
            Source::Memory(v) => Box::new(v.clone()),
        })
    }

    /// Bytes per page of the source's page numbers when it does not record its own.
    fn page_size(&self) -> u64 {
        match self {
            Source::File { opts, .. } => opts.page_size,
            _ => ReaderOptions::default().page_size,
        }
    }
}

fn expected(key: &str, what: &str, v: &Bound<'_, PyAny>) -> PyErr {
    config_err(key, format!("expected {what}, got {}", repr(v)))
}

fn pages_from(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Access>> {
    if let Ok(a) = obj.downcast::<PyArray1<u64>>() {
        let ro = a.readonly();
        return Ok(ro.as_array().iter().map(|&p| Access::read(p)).collect());
    }
    if let Ok(a) = obj.downcast::<PyArray1<i64>>() {
        let ro = a.readonly();
        let view = ro.as_array();
        let mut out = Vec::with_capacity(view.len());
        for (i, &p) in view.iter().enumerate() {
            if p < 0 {
                return Err(config_err(
                    "trace",
                    format!("negative page number {p} at index {i}"),
                ));
            }
            out.push(Access::read(p as u64));
        }
        return Ok(out);
    }
    Err(config_err(
        "trace",
        format!(
            "expected a 1-D numpy array of uint64 or int64 page numbers, got {}",
            describe(obj)
        ),
    ))
}

/// One bool per access from a numpy array under source key `key`.
fn set_flags(
    accesses: &mut [Access],
    w: &Bound<'_, PyAny>,
    key: &str,
    set: impl Fn(&mut Access, bool),
) -> PyResult<()> {
    let a = w.downcast::<PyArray1<bool>>().map_err(|_| {
        config_err(
            key,
            format!("expected a 1-D numpy bool array, got {}", describe(w)),
        )
    })?;
    let ro = a.readonly();
    let view = ro.as_array();
    if view.len() != accesses.len() {
        return Err(config_err(
            key,
            format!(
                "has {} entries but the trace has {} accesses",
                view.len(),
                accesses.len()
            ),
        ));
    }
    for (a, &w) in accesses.iter_mut().zip(view.iter()) {
        set(a, w);
    }
    Ok(())
}

fn describe(obj: &Bound<'_, PyAny>) -> String {
    let ty = obj
        .get_type()
        .name()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "?".into());
    match (obj.getattr("dtype"), obj.getattr("ndim")) {
        (Ok(d), Ok(n)) => format!("{ty} of dtype {} with {} dimension(s)", repr(&d), repr(&n)),
        _ => ty,
    }
}

// --------------------------------------------------------------------------------- progress

/// Shared between the worker and the waiting thread: accesses done, the total when known
/// (`u64::MAX` = unknown), and the request to stop.
struct Meter {
    done: AtomicU64,
    total: AtomicU64,
    cancel: AtomicBool,
}

impl Meter {
    fn new() -> Self {
        Meter {
            done: AtomicU64::new(0),
            total: AtomicU64::new(u64::MAX),
            cancel: AtomicBool::new(false),
        }
    }
    fn set_total(&self, t: Option<u64>) {
        self.total.store(t.unwrap_or(u64::MAX), Ordering::Relaxed);
    }
    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
    /// The error a source returns once stopping was asked for (replaced by the Python
    /// exception that asked for it before it reaches the caller).
    fn stop_error(&self) -> Error {
        Error::config("progress", "stopped")
    }
}

/// A source that adds what it yields to a [`Meter`] (unless `count` is false: a preliminary
/// pass that progress should not report) and stops when asked.
struct Metered {
    inner: Box<dyn TraceSource>,
    meter: Arc<Meter>,
    count: bool,
}

impl TraceSource for Metered {
    fn next_chunk(&mut self, buf: &mut Vec<Access>) -> vmemsim_core::Result<()> {
        if self.meter.cancelled() {
            return Err(self.meter.stop_error());
        }
        self.inner.next_chunk(buf)?;
        if !self.count {
            return Ok(());
        }
        self.meter
            .done
            .fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }
    fn name(&self) -> String {
        self.inner.name()
    }
    fn page_size(&self) -> Option<u64> {
        self.inner.page_size()
    }
    fn len_hint(&self) -> Option<u64> {
        self.inner.len_hint()
    }
}

fn metered(src: &Source, meter: &Arc<Meter>) -> vmemsim_core::Result<Box<dyn TraceSource>> {
    Ok(Box::new(Metered {
        inner: src.open()?,
        meter: meter.clone(),
        count: true,
    }))
}

/// Distinct pages of a source, in a pass that can be stopped but is not reported.
fn count_distinct(src: &Source, meter: &Arc<Meter>) -> vmemsim_core::Result<u64> {
    let mut s = Metered {
        inner: src.open()?,
        meter: meter.clone(),
        count: false,
    };
    replay::count_distinct(&mut s)
}

/// Unwind payload that stops a replay between two chunks once the meter is cancelled (the
/// core's replay loop has no other exit). `resume_unwind` does not call the panic hook, so
/// nothing is printed; the core's state is dropped on the way out and never reused.
struct Cancelled;

/// Run `work` on a worker thread with the GIL released, reporting progress from this thread
/// (see the module docs). A panic in the core becomes an "internal error".
fn with_progress<T, W>(py: Python<'_>, progress: Option<PyObject>, work: W) -> PyResult<T>
where
    T: Send,
    W: FnOnce(&Arc<Meter>) -> PyResult<T> + Send,
{
    let meter = Arc::new(Meter::new());
    let (out, stopped) = py.allow_threads(|| {
        std::thread::scope(|s| {
            let (tx, rx) = mpsc::channel::<()>();
            let m = meter.clone();
            let worker = s.spawn(move || {
                let r = catch_unwind(AssertUnwindSafe(|| work(&m)));
                let _ = tx.send(());
                r
            });
            let mut stopped: Option<PyErr> = None;
            let mut last = Instant::now();
            loop {
                let wait = PROGRESS_EVERY.saturating_sub(last.elapsed());
                match rx.recv_timeout(wait) {
                    Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        last = Instant::now();
                        if stopped.is_some() {
                            continue;
                        }
                        let done = meter.done.load(Ordering::Relaxed);
                        let total = match meter.total.load(Ordering::Relaxed) {
                            u64::MAX => None,
                            t => Some(t),
                        };
                        let r = Python::with_gil(|py| -> PyResult<()> {
                            py.check_signals()?;
                            if let Some(cb) = &progress {
                                cb.call1(py, (done, total))?;
                            }
                            Ok(())
                        });
                        if let Err(e) = r {
                            meter.cancel.store(true, Ordering::Relaxed);
                            stopped = Some(e);
                        }
                    }
                }
            }
            let out = worker.join().unwrap_or_else(Err);
            (out, stopped)
        })
    });
    if let Some(e) = stopped {
        return Err(e);
    }
    match out {
        Ok(r) => r,
        Err(p) => Err(internal(p)),
    }
}

fn internal(payload: Box<dyn std::any::Any + Send>) -> PyErr {
    let msg = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into());
    VmemsimError::new_err(format!("internal error (a bug, please report): {msg}"))
}

// ----------------------------------------------------------------------------------- values

fn int_in(key: &str, v: &Bound<'_, PyAny>, lo: i128, hi: i128, what: &str) -> PyResult<i128> {
    if v.is_instance_of::<pyo3::types::PyBool>() {
        return Err(config_err(
            key,
            format!("expected an integer, got {}", repr(v)),
        ));
    }
    let n: i128 = v
        .extract()
        .map_err(|_| config_err(key, format!("expected an integer, got {}", repr(v))))?;
    if n < lo || n > hi {
        return Err(config_err(key, format!("must be {what}, got {n}")));
    }
    Ok(n)
}

fn repr(v: &Bound<'_, PyAny>) -> String {
    v.repr()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "?".into())
}

// ----------------------------------------------------------------------------------- replay

/// Replay a source through one policy: `config` is the JSON of the core's `ReplayConfig`
/// (the one declaration of a replay's settings and their defaults: policy, frames as a count
/// or a percentage of the trace's distinct pages, seed, the policy's options, the machine's
/// knobs, the swap device's kind, `sample_every`, `warmup`; unknown keys and bad values are
/// errors naming them). Every setting and the policy's options are checked before the trace
/// is read. Returns the JSON of the core's `ReplayResult`.
#[pyfunction]
#[pyo3(name = "replay", signature = (source, config, progress=None))]
fn replay_source(
    py: Python<'_>,
    source: &Bound<'_, PyDict>,
    config: &str,
    progress: Option<PyObject>,
) -> PyResult<String> {
    // Building checks the policy's options by building it (a panic there is a bug).
    let run = match catch_unwind(AssertUnwindSafe(|| {
        replay::ReplayConfig::from_json(config).and_then(|c| c.build())
    })) {
        Ok(r) => r.map_err(py_err)?,
        Err(p) => return Err(internal(p)),
    };
    let src = Source::from_dict(source)?;
    let result = with_progress(py, progress, move |meter| {
        let spec = run
            .resolve(|| count_distinct(&src, meter))
            .map_err(py_err)?;
        let mut s = src.open().map_err(py_err)?;
        meter.set_total(s.len_hint());
        // The replay reports after each chunk; stopping unwinds out of the core.
        let mut report = |done: u64| {
            meter.done.store(done, Ordering::Relaxed);
            if meter.cancelled() {
                std::panic::resume_unwind(Box::new(Cancelled));
            }
        };
        replay::replay(s.as_mut(), &spec, Some(&mut report)).map_err(py_err)
    })?;
    to_json(&result)
}

/// The defaults of a replay (`ReplayConfig`) as JSON: what `replay` and `miss_ratio_curve`
/// use for a key they are not given.
#[pyfunction]
fn replay_config_defaults() -> PyResult<String> {
    to_json(&replay::ReplayConfig::default())
}

/// The schema of a replay's settings (`ReplayConfig::schema`, JSON Schema): every key with
/// its type, default and documentation, from which the front ends take their help.
#[pyfunction]
fn replay_config_schema() -> PyResult<String> {
    to_json(&replay::ReplayConfig::schema())
}

// ------------------------------------------------------------------------------------ timed

/// A timed run (`vmemsim_core::timed`): `config` is the JSON of the core's `RunConfig` (the
/// one declaration of a native run's settings and their defaults: workload, policy, frames
/// as a count or a percentage of the footprint, the swap device, the CPUs, the costs, the
/// machine's knobs; unknown keys and bad values are errors naming them). Progress reports
/// simulated nanoseconds. Returns the JSON of the core's `RunResult`.
#[pyfunction]
#[pyo3(signature = (config, progress=None))]
fn run_timed(py: Python<'_>, config: &str, progress: Option<PyObject>) -> PyResult<String> {
    // Building checks the policy's options by building it (a panic there is a bug).
    let run = match catch_unwind(AssertUnwindSafe(|| {
        vmemsim_core::timed::RunConfig::from_json(config).and_then(|c| c.build())
    })) {
        Ok(r) => r.map_err(py_err)?,
        Err(p) => return Err(internal(p)),
    };
    let result = with_progress(py, progress, move |meter| {
        let mut report = |now: u64| {
            meter.done.store(now, Ordering::Relaxed);
            if meter.cancelled() {
                std::panic::resume_unwind(Box::new(Cancelled));
            }
        };
        run.run(Some(&mut report)).map_err(py_err)
    })?;
    to_json(&result)
}

/// The defaults of a timed run (`RunConfig`) as JSON: what `run_timed` uses for a key it is
/// not given.
#[pyfunction]
fn run_config_defaults() -> PyResult<String> {
    to_json(&vmemsim_core::timed::RunConfig::default())
}

/// Check a guest workload spec: `(canonical spec, vCPUs, footprint pages)`.
#[pyfunction]
fn check_guest_workload(spec: &str, seed: u64) -> PyResult<(String, usize, u64)> {
    let w = vmemsim_core::vm::workloads::parse(spec, seed).map_err(py_err)?;
    Ok((w.name(), w.threads(), w.footprint_pages()))
}

/// Check a workload spec: `(canonical spec, threads, footprint pages)`.
#[pyfunction]
fn check_workload(spec: &str, seed: u64) -> PyResult<(String, usize, u64)> {
    let w = vmemsim_core::workload::parse(spec, seed).map_err(py_err)?;
    Ok((w.name(), w.threads(), w.footprint_pages()))
}

/// Every guest workload kind (`vmemsim_core::vm::workloads`) as `(name, description)`.
#[pyfunction]
fn guest_workload_kinds() -> Vec<(String, String)> {
    vmemsim_core::vm::workloads::KINDS
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect()
}

/// Run guest workloads (`vmemsim_core::vm::workloads`) in VMs on a host: `config` is the
/// JSON of the core's `VmRunConfig` (the one declaration of a VM run's settings and their
/// defaults; unknown keys and bad values are errors naming them). Returns the JSON of the
/// core's `RunResult` (with `balloon`, each VM's balloon device and a guest's OOM kill
/// recorded there, not raised; with `mom`, the manager's counts).
#[pyfunction]
fn run_vm(py: Python<'_>, config: &str) -> PyResult<String> {
    let run = vmemsim_core::vm::VmRunConfig::from_json(config)
        .and_then(|c| c.build())
        .map_err(py_err)?;
    let result = py.allow_threads(move || run.run().map_err(py_err))?;
    to_json(&result)
}

/// The defaults of a VM run (`VmRunConfig`) as JSON: what `run_vm` uses for a key it is not
/// given.
#[pyfunction]
fn vm_config_defaults() -> PyResult<String> {
    to_json(&vmemsim_core::vm::VmRunConfig::default())
}

/// The schema of a native timed run's settings (`timed::RunConfig::schema`, JSON Schema).
#[pyfunction]
fn run_config_schema() -> PyResult<String> {
    to_json(&vmemsim_core::timed::RunConfig::schema())
}

/// The schema of a VM run's settings (`VmRunConfig::schema`, JSON Schema): every key with its
/// type, default and documentation, from which the front ends take their keys and help.
#[pyfunction]
fn vm_config_schema() -> PyResult<String> {
    to_json(&vmemsim_core::vm::VmRunConfig::schema())
}

/// Every workload kind as `(name, description)`.
#[pyfunction]
fn workload_kinds() -> Vec<(String, String)> {
    vmemsim_core::workload::KINDS
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect()
}

/// The swap slots of a rotating disk's spec (`hdd[:size=SIZE,...]`, the core's
/// `DeviceSpec::rotational_slots`: its pages less mkswap's header), `None` for a device that
/// is not one; a bad spec is an error naming its key (`hdd.size`).
#[pyfunction]
fn rotational_slots(spec: &str) -> PyResult<Option<u32>> {
    Ok(vmemsim_core::device::DeviceSpec::parse(spec)
        .map_err(py_err)?
        .rotational_slots())
}

/// The largest request of a swap device's spec (its `max_pages`; `DeviceSpec::max_request_pages`),
/// the plug's limit on merging reclaim's swap writes; a bad spec is an error naming its key.
#[pyfunction]
fn swap_max_pages(spec: &str) -> PyResult<u32> {
    Ok(vmemsim_core::device::DeviceSpec::parse(spec)
        .map_err(py_err)?
        .max_request_pages())
}

/// Check a frames setting as every front end's core parses it (`FramesSpec::parse`: a whole
/// number of frames up to the simulator's limit, or a percentage above 0): the sweep checks
/// `machine.frames`, `vm.host_frames` with it before any run. An error names `frames`.
#[pyfunction]
fn check_frames(spec: &str) -> PyResult<()> {
    vmemsim_core::replay::FramesSpec::parse(spec).map_err(py_err)?;
    Ok(())
}

/// The one cost table's defaults as JSON (`vmemsim_core::vm::Costs`, key -> default): the
/// keys `--cost`, `costs=` and `machine.costs.*` take, in the table's order.
#[pyfunction]
fn cost_defaults() -> PyResult<String> {
    to_json(&vmemsim_core::vm::Costs::default())
}

fn to_json<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_string(v)
        .map_err(|e| VmemsimError::new_err(format!("internal error: result not serialisable: {e}")))
}

// -------------------------------------------------------------------------------------- mrc

/// The miss-ratio curve of a policy on a source, at `sizes` frames or at `points` sizes
/// log-spaced up to the trace's distinct pages. `config` is the JSON of the core's
/// `ReplayConfig` without a single replay's `frames`, `sample_every` and `warmup`: the
/// policy, its seed and options and the machine every size is replayed on. Method:
/// `exact-lru` (one pass of stack distances) for `lru` with no options and no swap
/// readahead; `shards-lru` when `shards` (a sampling rate) is given; otherwise `replay`, one
/// replay per size in parallel on `workers` threads (default: one per core). Returns JSON:
/// the core's `MissCurve` plus `policy`, `method`, `seed`, `version`, `distinct_pages`
/// (exact when known, else None; SHARDS estimates it) and `workers`.
#[pyfunction]
#[pyo3(signature = (source, config, sizes=None, points=None, shards=None, workers=None,
                    progress=None))]
#[allow(clippy::too_many_arguments)]
fn miss_ratio_curve(
    py: Python<'_>,
    source: &Bound<'_, PyDict>,
    config: &str,
    sizes: Option<Vec<u64>>,
    points: Option<u32>,
    shards: Option<f64>,
    workers: Option<usize>,
    progress: Option<PyObject>,
) -> PyResult<String> {
    // Building checks the policy's options by building it (a panic there is a bug).
    let spec = match catch_unwind(AssertUnwindSafe(|| {
        replay::ReplayConfig::from_json(config).and_then(|c| c.curve_spec())
    })) {
        Ok(r) => r.map_err(py_err)?,
        Err(p) => return Err(internal(p)),
    };
    let (kind, seed) = (spec.policy, spec.options.seed);
    let policy = kind.name();
    let method = mrc::Method::choose(
        kind.name(),
        spec.options.keys().next().is_some(),
        spec.machine.page_cluster,
        shards,
        sizes.as_deref(),
        points,
    )
    .map_err(py_err)?;
    let points = points.unwrap_or(20);
    if workers == Some(0) {
        return Err(config_err("workers", "must be at least 1"));
    }
    let replaying = method == mrc::Method::Replay;
    let src = Source::from_dict(source)?;
    let pool = match workers {
        Some(n) if replaying => Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| config_err("workers", e.to_string()))?,
        ),
        _ => None,
    };
    let used_workers = match &pool {
        Some(p) => p.current_num_threads(),
        None if replaying => rayon::current_num_threads(),
        None => 1,
    };
    let (curve, distinct) = with_progress(py, progress, move |meter| {
        let open = || metered(&src, meter);
        match method {
            mrc::Method::ExactLru => {
                let mut s = open().map_err(py_err)?;
                meter.set_total(s.len_hint());
                let name = s.name();
                let h = mrc::lru_histogram(s.as_mut()).map_err(py_err)?;
                let sizes = sizes.unwrap_or_else(|| mrc::log_sizes(h.cold, points));
                Ok((h.curve(&name, Some(&sizes)), Some(h.cold)))
            }
            mrc::Method::ShardsLru => {
                let cfg = ShardsConfig {
                    rate: shards.unwrap_or(1.0),
                    ..ShardsConfig::default()
                };
                let mut s = open().map_err(py_err)?;
                let runs = if sizes.is_some() { 1 } else { 2 };
                meter.set_total(s.len_hint().map(|n| n * runs));
                let sizes = match sizes {
                    Some(s) => s,
                    None => {
                        // Misses at the largest size are the cold misses, an estimate of the
                        // distinct pages; a second pass evaluates the log-spaced sizes.
                        let full = mrc::shards_lru(s.as_mut(), &cfg, None).map_err(py_err)?;
                        let top = full.points.last().map_or(1, |p| p.misses);
                        s = open().map_err(py_err)?;
                        mrc::log_sizes(top, points)
                    }
                };
                let c = mrc::shards_lru(s.as_mut(), &cfg, Some(&sizes)).map_err(py_err)?;
                Ok((c, None))
            }
            mrc::Method::Replay => {
                let (sizes, distinct) = match sizes {
                    Some(s) => (s, None),
                    None => {
                        let d = count_distinct(&src, meter).map_err(py_err)?;
                        (mrc::log_sizes(d, points), Some(d))
                    }
                };
                let frames: Vec<u32> = sizes
                    .iter()
                    .map(|&c| c.min(MAX_FRAMES as u64) as u32)
                    .collect();
                let hint = src.open().map_err(py_err)?.len_hint();
                meter.set_total(hint.map(|n| n * frames.len() as u64));
                // ReplaySpec is Send, not Sync: it moves into the pool.
                let run = move || mrc::policy_curve(open, &spec, &frames);
                let c = match &pool {
                    Some(p) => p.install(run),
                    None => run(),
                };
                match c {
                    Ok(c) => Ok((c, distinct)),
                    Err(_) if meter.cancelled() => Err(py_err(meter.stop_error())),
                    Err(e) => Err(py_err(e)),
                }
            }
        }
    })?;
    curve_json(&curve, policy, method.name(), seed, distinct, used_workers)
}

fn curve_json(
    c: &MissCurve,
    policy: &str,
    method: &str,
    seed: u64,
    distinct: Option<u64>,
    workers: usize,
) -> PyResult<String> {
    let mut v = serde_json::to_value(c)
        .map_err(|e| VmemsimError::new_err(format!("internal error: {e}")))?;
    if let Some(o) = v.as_object_mut() {
        o.insert("policy".into(), policy.into());
        o.insert("method".into(), method.into());
        o.insert("seed".into(), seed.into());
        o.insert("version".into(), replay::VERSION.into());
        o.insert("distinct_pages".into(), distinct.into());
        o.insert("workers".into(), workers.into());
    }
    to_json(&v)
}

// ---------------------------------------------------------------------------- trace commands

/// Summarise a source in one pass. With `reuse`, LRU reuse-distance percentiles too
/// ([`info::info`]); without, a cheaper pass that only counts (one hash-set entry per page)
/// and leaves `reuse_distance` `None`. Returns the JSON of the core's `TraceInfo`.
#[pyfunction]
#[pyo3(signature = (source, reuse=true, progress=None))]
fn trace_info(
    py: Python<'_>,
    source: &Bound<'_, PyDict>,
    reuse: bool,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let src = Source::from_dict(source)?;
    let page_size = src.page_size();
    let info = with_progress(py, progress, move |meter| {
        let mut s = metered(&src, meter).map_err(py_err)?;
        meter.set_total(s.len_hint());
        if reuse {
            info::info(s.as_mut(), page_size).map_err(py_err)
        } else {
            counts_only(s.as_mut(), page_size).map_err(py_err)
        }
    })?;
    to_json(&info)
}

/// [`info::info`] without the stack distances: counts, footprint and page range only.
fn counts_only(src: &mut dyn TraceSource, page_size: u64) -> vmemsim_core::Result<TraceInfo> {
    let page_size = src.page_size().unwrap_or(page_size);
    let mut seen: PageMap<()> = PageMap::default();
    let (mut n, mut writes, mut min, mut max) = (0u64, 0u64, u64::MAX, 0u64);
    let mut buf = Vec::with_capacity(CHUNK);
    loop {
        src.next_chunk(&mut buf)?;
        if buf.is_empty() {
            break;
        }
        n += buf.len() as u64;
        for a in &buf {
            writes += a.write as u64;
            min = min.min(a.page);
            max = max.max(a.page);
            seen.insert(a.page, ());
        }
    }
    let distinct = seen.len() as u64;
    let frac = |x: u64| if n == 0 { 0.0 } else { x as f64 / n as f64 };
    Ok(TraceInfo {
        trace: src.name(),
        page_size,
        accesses: n,
        reads: n - writes,
        writes,
        write_fraction: frac(writes),
        distinct_pages: distinct,
        footprint_bytes: distinct.saturating_mul(page_size),
        min_page: (n > 0).then_some(min),
        max_page: (n > 0).then_some(max),
        cold_fraction: frac(distinct),
        reuse_distance: None,
    })
}

/// Read a whole source and drop it: returns `(accesses, seconds)` (the cost of reading alone).
#[pyfunction]
#[pyo3(signature = (source, progress=None))]
fn read_trace(
    py: Python<'_>,
    source: &Bound<'_, PyDict>,
    progress: Option<PyObject>,
) -> PyResult<(u64, f64)> {
    let src = Source::from_dict(source)?;
    with_progress(py, progress, move |meter| {
        let t0 = Instant::now();
        let mut s = metered(&src, meter).map_err(py_err)?;
        meter.set_total(s.len_hint());
        let mut buf = Vec::with_capacity(CHUNK);
        let mut n = 0u64;
        loop {
            s.next_chunk(&mut buf).map_err(py_err)?;
            if buf.is_empty() {
                break;
            }
            n += buf.len() as u64;
        }
        Ok((n, t0.elapsed().as_secs_f64()))
    })
}

/// `(pages, writes)` as numpy arrays.
type Arrays<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<bool>>);

/// Every access of a source as numpy arrays `(pages: uint64, writes: bool)`.
#[pyfunction]
#[pyo3(signature = (source, progress=None))]
fn load_trace<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyDict>,
    progress: Option<PyObject>,
) -> PyResult<Arrays<'py>> {
    let src = Source::from_dict(source)?;
    let (pages, writes) = with_progress(py, progress, move |meter| {
        let mut s = metered(&src, meter).map_err(py_err)?;
        let hint = s.len_hint();
        meter.set_total(hint);
        let cap = hint.unwrap_or(0).min(1 << 24) as usize;
        let (mut pages, mut writes) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
        let mut buf = Vec::with_capacity(CHUNK);
        loop {
            s.next_chunk(&mut buf).map_err(py_err)?;
            if buf.is_empty() {
                break;
            }
            pages.extend(buf.iter().map(|a| a.page));
            writes.extend(buf.iter().map(|a| a.write));
        }
        Ok((pages, writes))
    })?;
    Ok((
        PyArray1::from_vec_bound(py, pages),
        PyArray1::from_vec_bound(py, writes),
    ))
}

/// Copy a source into a new trace file `out` of format `format`; returns the accesses
/// written. The file's metadata (native header, text comment) records the source's name as
/// its origin and its page size (the source's own, else its reader's `page_size`). A failed
/// copy leaves a partial file, which the caller removes.
#[pyfunction]
#[pyo3(signature = (source, out, format, progress=None))]
fn write_trace(
    py: Python<'_>,
    source: &Bound<'_, PyDict>,
    out: String,
    format: &str,
    progress: Option<PyObject>,
) -> PyResult<u64> {
    let format = TraceFormat::from_name(format).map_err(py_err)?;
    let src = Source::from_dict(source)?;
    let default_page_size = src.page_size();
    with_progress(py, progress, move |meter| {
        let mut s = metered(&src, meter).map_err(py_err)?;
        meter.set_total(s.len_hint());
        let meta = TraceMeta {
            page_size: s.page_size().unwrap_or(default_page_size),
            origin: Some(s.name()),
            records: s.len_hint(),
            ..TraceMeta::default()
        };
        let mut w = trace::create(&out, format, &meta).map_err(py_err)?;
        trace::convert(s.as_mut(), w.as_mut()).map_err(py_err)
    })
}

/// Every import format as `(name, description)` ([`trace::imports::ImportFormat`]).
#[pyfunction]
fn import_formats() -> Vec<(String, String)> {
    trace::imports::ImportFormat::ALL
        .iter()
        .map(|e| (e.1.to_string(), e.0.description().to_string()))
        .collect()
}

/// Import `path` in the public format `format` (`msr`, `lackey`) into a new recorded trace
/// (native version 2) at `out`; returns the import's counts as a dict
/// ([`trace::imports::ImportStats`]). The GIL is released throughout. A failed import leaves
/// a partial file, which the caller removes.
#[pyfunction]
#[pyo3(signature = (path, out, format, page_size=4096, ifetch=false))]
fn import_trace<'py>(
    py: Python<'py>,
    path: String,
    out: String,
    format: &str,
    page_size: u64,
    ifetch: bool,
) -> PyResult<Bound<'py, PyDict>> {
    use trace::imports::{import, ImportFormat, ImportOptions};
    let fmt = ImportFormat::from_name(format).ok_or_else(|| {
        let names: Vec<&str> = ImportFormat::ALL.iter().map(|e| e.1).collect();
        config_err(
            "format",
            format!(
                "unknown import format '{format}'; valid: {}",
                names.join(", ")
            ),
        )
    })?;
    let opts = ImportOptions { page_size, ifetch };
    let st = py
        .allow_threads(move || import(&path, fmt, &opts, &out))
        .map_err(py_err)?;
    let d = PyDict::new_bound(py);
    d.set_item("format", fmt.name())?;
    d.set_item("lines", st.lines)?;
    // "accesses" are access records, what replay and `trace info` count (consecutive
    // references to one page fold into one); "memory_references" are the load, store and
    // fetch instructions' references they fold (the sum of the records' counts).
    d.set_item("accesses", st.records)?;
    d.set_item("memory_references", st.accesses)?;
    d.set_item("read_references", st.reads)?;
    d.set_item("write_references", st.writes)?;
    d.set_item("ifetch_references", st.ifetches)?;
    d.set_item("io_records", st.io_records)?;
    d.set_item("files", st.files)?;
    d.set_item("io_bytes", st.io_bytes)?;
    d.set_item("out_of_order", st.out_of_order)?;
    d.set_item("instructions", st.instructions)?;
    Ok(d)
}

/// Convert the `vmrec` Valgrind tool's stream at `raw` (a FIFO it is writing, or a file)
/// into a recorded (version-2 native) trace at `out`, while the program runs. `origin` and
/// `extra` go into the trace's header. Returns the conversion's counts as a dict
/// ([`vmemsim_core::trace::recorder::RecordStats`]). The GIL is released throughout.
#[pyfunction]
#[pyo3(signature = (raw, out, origin, extra))]
fn record_convert<'py>(
    py: Python<'py>,
    raw: String,
    out: String,
    origin: String,
    extra: Vec<(String, String)>,
) -> PyResult<Bound<'py, PyDict>> {
    use vmemsim_core::trace::recorded::RecordedWriter;
    use vmemsim_core::trace::recorder;
    let st = py.allow_threads(move || -> Result<recorder::RecordStats, Error> {
        let f = recorder::open_stream(&raw)?;
        let (st, _w) = recorder::convert_stream(f, &raw, |h| {
            let mut meta = TraceMeta {
                page_size: h.page_size,
                origin: Some(origin),
                ..TraceMeta::default()
            };
            meta.extra.extend(extra);
            meta.extra.insert(
                "stamp".into(),
                "guest instructions executed before the record (all threads of its process; a forked child counts on from its parent's count at the fork)".into(),
            );
            meta.extra
                .insert("ifetch".into(), if h.ifetch { "yes" } else { "no" }.into());
            meta.extra.insert("tid".into(), recorder::TID_DOC.into());
            // Compress in a second thread when there are cores for it beside the program
            // and the parsing thread.
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let w = RecordedWriter::create(&out, meta)?;
            if cores >= 4 {
                w.with_worker()
            } else {
                Ok(w)
            }
        })?;
        Ok(st)
    });
    let st = st.map_err(py_err)?;
    let d = PyDict::new_bound(py);
    // "accesses" are access records, what replay and `trace info` count (consecutive
    // references to one page fold into one); "memory_references" are the load, store and
    // fetch instructions' references they fold (the sum of the records' counts).
    d.set_item("accesses", st.records)?;
    d.set_item("memory_references", st.accesses)?;
    d.set_item("read_references", st.reads)?;
    d.set_item("write_references", st.writes)?;
    d.set_item("ifetch_references", st.ifetches)?;
    d.set_item("io_records", st.io_records)?;
    d.set_item("files", st.files)?;
    d.set_item("threads", st.threads)?;
    d.set_item("processes", st.processes)?;
    d.set_item("instructions", st.instructions)?;
    d.set_item("raw_bytes", st.raw_bytes)?;
    d.set_item("complete", st.complete)?;
    Ok(d)
}

/// Every record of a native trace (either version) with all its fields: a dict with
/// `version`, `page_size`, `meta` (the header's extra key/values), `origin`, numpy arrays
/// `page`, `write`, `ifetch`, `tid`, `count`, `stamp` (one entry per access record, in file
/// order), `events` (a list of dicts: `index` = access records before it, `op`, `tid`,
/// `stamp`, `file`, `path`, `offset`, `len`, `addr`) and `files` (id → path).
#[pyfunction]
fn read_recorded<'py>(py: Python<'py>, path: String) -> PyResult<Bound<'py, PyDict>> {
    use vmemsim_core::trace::recorded::{Event, FileIo, RecordedReader};
    type Loaded = (
        RecordedReader,
        Vec<vmemsim_core::trace::recorded::Recorded>,
        Vec<(usize, FileIo)>,
    );
    let (r, acc, io): Loaded = py
        .allow_threads(|| -> Result<Loaded, Error> {
            let mut r = RecordedReader::open(&path)?;
            let (mut acc, mut io) = (Vec::new(), Vec::new());
            let mut buf = Vec::new();
            loop {
                r.next_events(&mut buf)?;
                if buf.is_empty() {
                    return Ok((r, acc, io));
                }
                for e in buf.drain(..) {
                    match e {
                        Event::Access(a) => acc.push(a),
                        Event::Io(f) => io.push((acc.len(), f)),
                        Event::File { .. } => {}
                    }
                }
            }
        })
        .map_err(py_err)?;
    let d = PyDict::new_bound(py);
    d.set_item("version", r.version())?;
    d.set_item("page_size", r.meta().page_size)?;
    d.set_item("origin", r.meta().origin.clone())?;
    d.set_item(
        "meta",
        r.meta().extra.clone().into_iter().collect::<Vec<_>>(),
    )?;
    d.set_item(
        "page",
        PyArray1::from_iter_bound(py, acc.iter().map(|a| a.page)),
    )?;
    d.set_item(
        "write",
        PyArray1::from_iter_bound(py, acc.iter().map(|a| a.write)),
    )?;
    d.set_item(
        "ifetch",
        PyArray1::from_iter_bound(py, acc.iter().map(|a| a.ifetch)),
    )?;
    d.set_item(
        "tid",
        PyArray1::from_iter_bound(py, acc.iter().map(|a| a.tid)),
    )?;
    d.set_item(
        "count",
        PyArray1::from_iter_bound(py, acc.iter().map(|a| a.count)),
    )?;
    d.set_item(
        "stamp",
        PyArray1::from_iter_bound(py, acc.iter().map(|a| a.stamp)),
    )?;
    let files = PyDict::new_bound(py);
    for (id, p) in r.files() {
        files.set_item(id, p)?;
    }
    let events = pyo3::types::PyList::empty_bound(py);
    for (index, f) in io {
        let e = PyDict::new_bound(py);
        e.set_item("index", index)?;
        e.set_item("op", f.op.name())?;
        e.set_item("tid", f.tid)?;
        e.set_item("stamp", f.stamp)?;
        e.set_item("file", f.file)?;
        e.set_item("path", r.files().get(&f.file).cloned())?;
        e.set_item("offset", f.offset)?;
        e.set_item("len", f.len)?;
        e.set_item("addr", f.addr)?;
        events.append(e)?;
    }
    d.set_item("events", events)?;
    d.set_item("files", files)?;
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(did_you_mean, m)?)?;
    m.add_function(wrap_pyfunction!(policies, m)?)?;
    m.add_function(wrap_pyfunction!(trace_formats, m)?)?;
    m.add_function(wrap_pyfunction!(trace_format_descriptions, m)?)?;
    m.add_function(wrap_pyfunction!(generator_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(check_generator, m)?)?;
    m.add_function(wrap_pyfunction!(generator_plan, m)?)?;
    m.add_function(wrap_pyfunction!(replay_source, m)?)?;
    m.add_function(wrap_pyfunction!(replay_config_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(replay_config_schema, m)?)?;
    m.add_function(wrap_pyfunction!(run_timed, m)?)?;
    m.add_function(wrap_pyfunction!(run_config_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(workload_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(cost_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(rotational_slots, m)?)?;
    m.add_function(wrap_pyfunction!(swap_max_pages, m)?)?;
    m.add_function(wrap_pyfunction!(check_frames, m)?)?;
    m.add_function(wrap_pyfunction!(vm_config_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(vm_config_schema, m)?)?;
    m.add_function(wrap_pyfunction!(run_config_schema, m)?)?;
    m.add_function(wrap_pyfunction!(guest_workload_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(run_vm, m)?)?;
    m.add_function(wrap_pyfunction!(check_guest_workload, m)?)?;
    m.add_function(wrap_pyfunction!(check_workload, m)?)?;
    m.add_function(wrap_pyfunction!(miss_ratio_curve, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(read_trace, m)?)?;
    m.add_function(wrap_pyfunction!(load_trace, m)?)?;
    m.add_function(wrap_pyfunction!(write_trace, m)?)?;
    m.add_function(wrap_pyfunction!(record_convert, m)?)?;
    m.add_function(wrap_pyfunction!(import_formats, m)?)?;
    m.add_function(wrap_pyfunction!(import_trace, m)?)?;
    m.add_function(wrap_pyfunction!(read_recorded, m)?)?;
    m.add("VmemsimError", m.py().get_type_bound::<VmemsimError>())?;
    m.add("__version__", replay::VERSION)?;
    Ok(())
}
