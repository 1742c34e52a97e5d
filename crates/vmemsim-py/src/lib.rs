//! Thin PyO3 binding: converts arguments, calls vmemsim-core, returns plain Python data.
//! No simulation logic lives here.
//!
//! Everything the user can name (policies, trace formats, option keys) comes from the core's
//! registries ([`PolicyKind::ALL`], [`TraceFormat::ALL`]), so a policy or format added to the
//! core shows up here and in the CLI without touching this crate.
//!
//! Results cross the boundary as the JSON of [`ReplayResult`]; the Python side
//! (`vmemsim.api.ReplayResult`) turns it into a typed object. Every core error becomes a
//! `vmemsim.VmemsimError` (a `ValueError`) carrying the one-line `Display` of
//! [`vmemsim_core::Error`]. The simulation runs with the GIL released; a progress callback,
//! if given, is called with the GIL re-acquired at most [`PROGRESS_EVERY`] apart.

// pyo3 0.22's `#[pyfunction]` expansion trips this lint on every `PyResult` return.
#![allow(clippy::useless_conversion)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use numpy::{PyArray1, PyArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use vmemsim_core::engine::MachineConfig;
use vmemsim_core::policy::registry::PolicyVisitor;
use vmemsim_core::policy::{Policy, PolicyKind, PolicyOptions};
use vmemsim_core::replay::{self, FramesSpec, ReplayResult, ReplaySpec};
use vmemsim_core::trace::{self, TraceFormat, TraceSource, VecSource};
use vmemsim_core::watermarks::Watermarks;
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

/// Checks a policy's options before any trace is read: building the policy reads its option
/// keys and values, so an unknown key or a malformed value is reported at once, not after a
/// long run. The probe is built with at most [`PROBE_FRAMES`] frames so that a huge machine is
/// not allocated twice; the machine itself (frames, watermarks, swappiness, page_cluster) is
/// checked by the engine before the run reads the trace.
struct OptionsProbe;

const PROBE_FRAMES: u32 = 4096;

impl PolicyVisitor for OptionsProbe {
    type Out = ();
    fn visit<P: Policy>(self, _p: P) {}
}

fn int_in(key: &str, v: &Bound<'_, PyAny>, lo: i128, hi: i128, what: &str) -> PyResult<i128> {
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

const MACHINE_KEYS: &[&str] = &[
    "page_cluster",
    "watermarks",
    "swappiness",
    "check_invariants",
];

/// The machine dict of the Python API: `page_cluster` (None or 0..=10), `watermarks`
/// (None or `(min, low, high)`), `swappiness` (0..=200), `check_invariants` (bool).
fn machine_config(frames: u32, d: Option<&Bound<'_, PyDict>>) -> PyResult<MachineConfig> {
    let mut m = MachineConfig::new(frames);
    let Some(d) = d else { return Ok(m) };
    for (k, v) in d.iter() {
        let key: String = k.extract().map_err(|_| {
            config_err("machine", format!("keys must be strings, got {}", repr(&k)))
        })?;
        match key.as_str() {
            "page_cluster" => {
                if !v.is_none() {
                    m.page_cluster = Some(int_in(&key, &v, 0, 10, "0..=10")? as u8);
                }
            }
            "swappiness" => {
                if !v.is_none() {
                    m.swappiness = int_in(&key, &v, 0, 200, "0..=200")? as u32;
                }
            }
            "check_invariants" => {
                m.check_invariants = v.is_truthy()?;
            }
            "watermarks" => {
                if !v.is_none() {
                    let bad =
                        || config_err(&key, format!("expected (min, low, high), got {}", repr(&v)));
                    let t: Vec<Bound<'_, PyAny>> = v.extract().map_err(|_| bad())?;
                    if t.len() != 3 {
                        return Err(bad());
                    }
                    let w: Vec<u32> = t
                        .iter()
                        .map(|x| {
                            int_in(&key, x, 0, u32::MAX as i128, "a page count").map(|n| n as u32)
                        })
                        .collect::<PyResult<_>>()?;
                    m.watermarks = Some(Watermarks {
                        min: w[0],
                        low: w[1],
                        high: w[2],
                    });
                }
            }
            _ => {
                return Err(config_err(
                    "machine",
                    format!("unknown key '{key}'; valid: {}", MACHINE_KEYS.join(", ")),
                ))
            }
        }
    }
    Ok(m)
}

fn policy_options(seed: u64, d: Option<&Bound<'_, PyDict>>) -> PyResult<PolicyOptions> {
    let mut o = PolicyOptions::new(seed);
    if let Some(d) = d {
        for (k, v) in d.iter() {
            let key: String = k.extract().map_err(|_| {
                config_err("options", format!("keys must be strings, got {}", repr(&k)))
            })?;
            // Values are given as text, like `--opt key=value`; numbers and booleans from
            // Python are spelled the way the core parses them.
            let val: String = if let Ok(b) = v.extract::<bool>() {
                if b { "true" } else { "false" }.to_string()
            } else {
                v.str()?.to_string()
            };
            o.set(&key, &val);
        }
    }
    Ok(o)
}

/// Everything a replay needs besides the trace, checked before the trace is read.
struct Prepared {
    kind: PolicyKind,
    frames: FramesSpec,
    machine: MachineConfig,
    options: PolicyOptions,
}

fn prepare(
    policy: &str,
    frames: &str,
    seed: u64,
    options: Option<&Bound<'_, PyDict>>,
    machine: Option<&Bound<'_, PyDict>>,
) -> PyResult<Prepared> {
    let kind = PolicyKind::from_name(policy).map_err(py_err)?;
    let frames = FramesSpec::parse(frames).map_err(py_err)?;
    let probe_frames = match frames {
        FramesSpec::Count(n) => n.min(PROBE_FRAMES),
        FramesSpec::Percent(_) => PROBE_FRAMES,
    };
    let machine = machine_config(0, machine)?;
    let options = policy_options(seed, options)?;
    check_options(kind, probe_frames, &options)?;
    Ok(Prepared {
        kind,
        frames,
        machine,
        options,
    })
}

fn check_options(kind: PolicyKind, frames: u32, options: &PolicyOptions) -> PyResult<()> {
    match catch_unwind(AssertUnwindSafe(|| {
        kind.build(frames, options, OptionsProbe)
    })) {
        Ok(r) => r.map_err(py_err),
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

/// Unwind payload that stops a run early with a Python exception (raised by the progress
/// callback or a signal handler). `resume_unwind` does not call the panic hook, so nothing is
/// printed; the core's state is dropped on the way out and never reused.
struct Cancelled(PyErr);

/// Runs one replay with the GIL released. `make_src` is called once per pass over the trace
/// (twice when frames is a percentage: once to count distinct pages, once to replay).
fn run<F>(
    py: Python<'_>,
    prep: Prepared,
    make_src: F,
    total: Option<u64>,
    progress: Option<PyObject>,
) -> PyResult<String>
where
    F: Fn() -> vmemsim_core::Result<Box<dyn TraceSource>> + Send,
{
    let Prepared {
        kind,
        frames,
        mut machine,
        options,
    } = prep;
    let outcome = py.allow_threads(move || {
        catch_unwind(AssertUnwindSafe(move || -> PyResult<ReplayResult> {
            machine.frames = match frames {
                FramesSpec::Count(n) => n,
                FramesSpec::Percent(_) => {
                    let mut src = make_src().map_err(py_err)?;
                    let distinct = replay::count_distinct(src.as_mut()).map_err(py_err)?;
                    if distinct == 0 {
                        return Err(config_err(
                            "frames",
                            "a percentage needs a trace with at least one access",
                        ));
                    }
                    frames.resolve(distinct)
                }
            };
            let spec = ReplaySpec {
                policy: kind,
                machine,
                options,
            };
            let mut src = make_src().map_err(py_err)?;
            // Every PROGRESS_EVERY: take the GIL, let Python handle pending signals (Ctrl-C
            // in a notebook), call the user's callback. An exception from either ends the run
            // at once by unwinding out of the core with the error as payload.
            let mut last = Instant::now();
            let mut report = |done: u64| {
                if last.elapsed() < PROGRESS_EVERY {
                    return;
                }
                last = Instant::now();
                let r = Python::with_gil(|py| {
                    py.check_signals()?;
                    match &progress {
                        Some(cb) => cb.call1(py, (done, total)).map(|_| ()),
                        None => Ok(()),
                    }
                });
                if let Err(e) = r {
                    std::panic::resume_unwind(Box::new(Cancelled(e)));
                }
            };
            replay::replay(src.as_mut(), &spec, Some(&mut report)).map_err(py_err)
        }))
    });
    let result = match outcome {
        Ok(r) => r?,
        Err(p) => match p.downcast::<Cancelled>() {
            Ok(c) => return Err(c.0),
            Err(p) => return Err(internal(p)),
        },
    };
    serde_json::to_string(&result)
        .map_err(|e| VmemsimError::new_err(format!("internal error: result not serialisable: {e}")))
}

/// Replay a trace file. `format` `None` detects it. `frames` is a count or a percentage of
/// the trace's distinct pages ("25%"). Returns the JSON of the core's `ReplayResult`.
#[pyfunction]
#[pyo3(signature = (path, format, policy, frames, seed=0, options=None, machine=None, progress=None))]
#[allow(clippy::too_many_arguments)]
fn replay_path(
    py: Python<'_>,
    path: String,
    format: Option<String>,
    policy: &str,
    frames: &str,
    seed: u64,
    options: Option<&Bound<'_, PyDict>>,
    machine: Option<&Bound<'_, PyDict>>,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let format = match format.as_deref() {
        None | Some("") | Some("auto") => None,
        Some(f) => Some(TraceFormat::from_name(f).map_err(py_err)?),
    };
    let prep = prepare(policy, frames, seed, options, machine)?;
    let make = move || trace::open(&path, format);
    run(py, prep, make, None, progress)
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

/// Replay an in-memory trace: `pages` a 1-D uint64/int64 numpy array, `writes` an optional
/// bool array of the same length (true = write). Other parameters as [`replay_path`].
#[pyfunction]
#[pyo3(signature = (pages, writes, policy, frames, seed=0, options=None, machine=None, progress=None))]
#[allow(clippy::too_many_arguments)]
fn replay_array(
    py: Python<'_>,
    pages: &Bound<'_, PyAny>,
    writes: Option<&Bound<'_, PyAny>>,
    policy: &str,
    frames: &str,
    seed: u64,
    options: Option<&Bound<'_, PyDict>>,
    machine: Option<&Bound<'_, PyDict>>,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let prep = prepare(policy, frames, seed, options, machine)?;
    let mut accesses = pages_from(pages)?;
    if let Some(w) = writes.filter(|w| !w.is_none()) {
        let a = w.downcast::<PyArray1<bool>>().map_err(|_| {
            config_err(
                "writes",
                format!("expected a 1-D numpy bool array, got {}", describe(w)),
            )
        })?;
        let ro = a.readonly();
        let view = ro.as_array();
        if view.len() != accesses.len() {
            return Err(config_err(
                "writes",
                format!(
                    "has {} entries but the trace has {} accesses",
                    view.len(),
                    accesses.len()
                ),
            ));
        }
        for (a, &w) in accesses.iter_mut().zip(view.iter()) {
            a.write = w;
        }
    }
    let total = accesses.len() as u64;
    let src = VecSource::new(accesses);
    let make = move || Ok(Box::new(src.clone()) as Box<dyn TraceSource>);
    run(py, prep, make, Some(total), progress)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(policies, m)?)?;
    m.add_function(wrap_pyfunction!(trace_formats, m)?)?;
    m.add_function(wrap_pyfunction!(replay_path, m)?)?;
    m.add_function(wrap_pyfunction!(replay_array, m)?)?;
    m.add("VmemsimError", m.py().get_type_bound::<VmemsimError>())?;
    m.add("__version__", replay::VERSION)?;
    Ok(())
}
