//! Synthetic workloads: seeded generators usable wherever a trace is (each is a
//! [`TraceSource`]), described by a textual spec that the CLI passes through.
//!
//! # Spec grammar
//!
//! ```text
//! spec    := kind [ ':' params ]                       uniform, zipf, scan, loop, hotcold
//!          | 'mix' ':' part ( '+' part )* [ ',' params ]
//!          | 'seq' ':' '(' spec ')' ( '+' '(' spec ')' )* [ ',' params ]
//! part    := '(' spec ')' [ '*' weight ]               weight > 0, default 1
//! params  := key '=' value ( ',' key '=' value )*
//! ```
//!
//! Numbers are decimal integers (underscores allowed) or exact scientific notation (`1e6`).
//! Spaces around tokens are ignored. Unknown, repeated or misplaced keys are errors naming the
//! key as `kind.key`.
//!
//! | kind      | keys (default)                                             | draws                                   |
//! |-----------|------------------------------------------------------------|-----------------------------------------|
//! | `uniform` | `pages`                                                    | every page equally likely               |
//! | `zipf`    | `pages`, `alpha` (0.99), `shuffle` (true)                  | rank k with probability ∝ k^-alpha      |
//! | `scan`    | `pages`; `n` defaults to `pages` (one sweep)               | start, start+1, …, wrapping around      |
//! | `loop`    | `pages`; `n` required                                      | the same sweep, repeated                |
//! | `hotcold` | `pages`, `hot_pages` (0.2), `hot_accesses` (0.8)           | a fraction of accesses to the first     |
//! |           |                                                            | fraction of the pages, uniform in each  |
//! | `mix`     | `n`, `seed`                                                | each access from part i w.p. weight_i   |
//! | `seq`     | `seed`                                                     | the phases one after the other          |
//!
//! Every simple kind also takes `n` (accesses), `seed`, `start` (first page, 0) and `write`
//! (probability that an access is a write, 0). `n` is required at the top level (except for
//! `scan` and `seq`, whose length is known) and on each `seq` phase; it is refused on `mix`
//! parts, which are endless streams the mix draws from (a `seq` inside a mix repeats).
//!
//! Examples:
//! `zipf:pages=100000,alpha=0.99,n=1000000,seed=1`,
//! `mix:(zipf:pages=1e5,alpha=0.9)*0.7+(scan:pages=1e6,start=1e6)*0.3,n=1e6`,
//! `seq:(scan:pages=1000)+(hotcold:pages=1e4,n=5e4,write=0.3)`.
//!
//! # Randomness
//!
//! Each generator has its own xoshiro256++ stream seeded from `seed`, or, when absent, from the
//! seed handed to [`GenSpec::build`] (the run's seed) mixed with the part's position, so parts
//! of a mix are independent and a run is a pure function of (spec, seed).
//!
//! Zipf ranks come from rejection-inversion (Hörmann and Derflinger, "Rejection-inversion to
//! generate variates from monotone discrete distributions", ACM TOMACS 1996): O(1) expected
//! work per sample for any `alpha ≥ 0` (1 included), no table. With `shuffle`, rank k is
//! mapped to a page by a seeded pseudo-random permutation of the page range (a 4-round
//! Feistel network with cycle walking; O(1) memory), so popular pages are spread over the
//! range rather than packed at its start.

use std::fmt;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::access::Access;
use crate::error::{Error, Result};
use crate::trace::{TraceSource, CHUNK};
use crate::util::mix64;

/// Every generator kind with a one-line description (for help texts).
pub const KINDS: &[(&str, &str)] = &[
    ("uniform", "pages drawn uniformly: pages"),
    ("zipf", "Zipf ranks (p ∝ k^-alpha) shuffled over the range: pages, alpha=0.99, shuffle=true"),
    ("scan", "one sequential sweep (wraps if n > pages): pages, n=pages"),
    ("loop", "repeated sequential sweeps: pages, n"),
    ("hotcold", "hot_accesses of accesses to the first hot_pages of pages: pages, hot_pages=0.2, hot_accesses=0.8"),
    ("mix", "weighted random mixture: mix:(spec)*w+(spec)*w,n=.."),
    ("seq", "phases in order: seq:(spec)+(spec)"),
];

/// A parsed generator spec (see the module docs for the grammar).
#[derive(Clone, Debug, PartialEq)]
pub struct GenSpec {
    pub kind: GenKind,
    /// Accesses; `None` = the kind's default (see [`GenSpec::accesses`]).
    pub n: Option<u64>,
    pub seed: Option<u64>,
    /// Probability that an access is a write.
    pub write: f64,
    /// First page of the range.
    pub start: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum GenKind {
    Uniform {
        pages: u64,
    },
    Zipf {
        pages: u64,
        alpha: f64,
        shuffle: bool,
    },
    Scan {
        pages: u64,
    },
    Loop {
        pages: u64,
    },
    HotCold {
        pages: u64,
        hot_pages: f64,
        hot_accesses: f64,
    },
    Mix(Vec<(GenSpec, f64)>),
    Seq(Vec<GenSpec>),
}

impl GenKind {
    fn name(&self) -> &'static str {
        match self {
            GenKind::Uniform { .. } => "uniform",
            GenKind::Zipf { .. } => "zipf",
            GenKind::Scan { .. } => "scan",
            GenKind::Loop { .. } => "loop",
            GenKind::HotCold { .. } => "hotcold",
            GenKind::Mix(_) => "mix",
            GenKind::Seq(_) => "seq",
        }
    }
    fn pages(&self) -> Option<u64> {
        match *self {
            GenKind::Uniform { pages }
            | GenKind::Zipf { pages, .. }
            | GenKind::Scan { pages }
            | GenKind::Loop { pages }
            | GenKind::HotCold { pages, .. } => Some(pages),
            _ => None,
        }
    }
}

/// Parse a spec and build its generator with `seed` as the run's seed.
pub fn open(spec: &str, seed: u64) -> Result<Generator> {
    GenSpec::parse(spec)?.build(seed)
}

// ---------------------------------------------------------------------------------------------
// Parsing

#[derive(Clone, Copy, PartialEq)]
enum Ctx {
    Top,
    MixPart,
    SeqPhase,
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
    /// `mix`/`seq` parts open around the one being parsed (at most [`MAX_NESTING`]).
    depth: u32,
}

/// Deepest nesting of `mix`/`seq` parts a spec may have. Every walk over a spec (printing,
/// building, planning, dropping) recurses once per level, so an unbounded depth could
/// overflow the stack; no real workload needs more than a few levels.
pub const MAX_NESTING: u32 = 64;

impl<'a> Parser<'a> {
    fn err(&self, msg: impl fmt::Display) -> Error {
        Error::config(
            "generator",
            format!("'{}' at column {}: {msg}", self.s, self.pos + 1),
        )
    }
    fn skip_ws(&mut self) {
        while self.s[self.pos..].starts_with(' ') {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.s[self.pos..].chars().next()
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: char) -> Result<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.err(format!("expected '{c}'")))
        }
    }
    fn ident(&mut self) -> Result<&'a str> {
        self.skip_ws();
        let rest = &self.s[self.pos..];
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(rest.len());
        if len == 0 {
            return Err(self.err("expected a name"));
        }
        self.pos += len;
        Ok(&rest[..len])
    }
    /// Raw text up to one of `stops` (or the end), trimmed.
    fn value(&mut self, stops: &[char]) -> &'a str {
        self.skip_ws();
        let rest = &self.s[self.pos..];
        let len = rest.find(|c| stops.contains(&c)).unwrap_or(rest.len());
        self.pos += len;
        rest[..len].trim()
    }

    fn spec(&mut self, ctx: Ctx) -> Result<GenSpec> {
        let kind = self.ident()?.to_ascii_lowercase();
        let has_params = self.eat(':');
        match kind.as_str() {
            "mix" | "seq" => {
                if !has_params {
                    return Err(self.err(format!("{kind} needs parts: {kind}:(spec)+(spec)")));
                }
                let mut parts = Vec::new();
                if self.depth >= MAX_NESTING {
                    return Err(
                        self.err(format!("{kind} parts nested more than {MAX_NESTING} deep"))
                    );
                }
                loop {
                    self.expect('(')?;
                    self.depth += 1;
                    let inner = self.spec(if kind == "mix" {
                        Ctx::MixPart
                    } else {
                        Ctx::SeqPhase
                    });
                    self.depth -= 1;
                    let inner = inner?;
                    self.expect(')')?;
                    let mut w = 1.0;
                    if self.eat('*') {
                        if kind == "seq" {
                            return Err(self.err("seq phases take no weight"));
                        }
                        let at = self.pos;
                        let v = self.value(&['+', ',', ')']);
                        w = parse_f64(v)
                            .filter(|w| *w > 0.0 && w.is_finite())
                            .ok_or_else(|| {
                                self.pos = at;
                                self.err(format!("weight '{v}' is not a positive number"))
                            })?;
                    }
                    parts.push((inner, w));
                    if !self.eat('+') {
                        break;
                    }
                }
                let kv = if self.eat(',') {
                    self.params()?
                } else {
                    Vec::new()
                };
                let kind = if kind == "mix" {
                    GenKind::Mix(parts)
                } else {
                    GenKind::Seq(parts.into_iter().map(|p| p.0).collect())
                };
                build_spec(kind, kv, ctx)
            }
            "uniform" | "zipf" | "scan" | "loop" | "hotcold" => {
                let kv = if has_params {
                    self.params()?
                } else {
                    Vec::new()
                };
                let defaults = match kind.as_str() {
                    "uniform" => GenKind::Uniform { pages: 0 },
                    "zipf" => GenKind::Zipf {
                        pages: 0,
                        alpha: 0.99,
                        shuffle: true,
                    },
                    "scan" => GenKind::Scan { pages: 0 },
                    "loop" => GenKind::Loop { pages: 0 },
                    _ => GenKind::HotCold {
                        pages: 0,
                        hot_pages: 0.2,
                        hot_accesses: 0.8,
                    },
                };
                build_spec(defaults, kv, ctx)
            }
            _ => {
                let names: Vec<&str> = KINDS.iter().map(|k| k.0).collect();
                Err(Error::config(
                    "generator",
                    format!("unknown generator '{kind}'; valid: {}", names.join(", ")),
                ))
            }
        }
    }

    fn params(&mut self) -> Result<Vec<(String, String)>> {
        let mut kv = Vec::new();
        loop {
            let k = self.ident()?.to_string();
            self.expect('=')?;
            let v = self.value(&[',', ')', '(']).to_string();
            if v.is_empty() {
                return Err(self.err(format!("key '{k}' has no value")));
            }
            kv.push((k, v));
            if self.peek() == Some(',') {
                self.pos += 1;
                continue;
            }
            return Ok(kv);
        }
    }
}

fn parse_f64(s: &str) -> Option<f64> {
    s.replace('_', "").parse::<f64>().ok()
}

fn parse_u64(s: &str) -> Option<u64> {
    let t = s.replace('_', "");
    if let Ok(v) = t.parse::<u64>() {
        return Some(v);
    }
    // `1e6`, `2.5e3`: a whole number in float notation. Past 2^53 every f64 is whole, and
    // `1e19` is exactly 10^19, as `10000000000000000000` is: both forms mean the same.
    let f: f64 = t.parse().ok()?;
    (f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f < 18_446_744_073_709_551_616.0)
        .then_some(f as u64)
}

/// Pages a generator may span: a 64-bit virtual address space of 4 KiB pages (2^52).
pub const MAX_PAGES: u64 = 1 << 52;

fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Apply `kv` to a kind (its defaults; `pages` must be given) and check it for `ctx`.
fn build_spec(mut kind: GenKind, kv: Vec<(String, String)>, ctx: Ctx) -> Result<GenSpec> {
    let name = kind.name();
    let allowed: &[&str] = match kind {
        GenKind::Uniform { .. } | GenKind::Scan { .. } | GenKind::Loop { .. } => {
            &["pages", "n", "seed", "write", "start"]
        }
        GenKind::Zipf { .. } => &["pages", "alpha", "shuffle", "n", "seed", "write", "start"],
        GenKind::HotCold { .. } => &[
            "pages",
            "hot_pages",
            "hot_accesses",
            "n",
            "seed",
            "write",
            "start",
        ],
        GenKind::Mix(_) => &["n", "seed"],
        GenKind::Seq(_) => &["seed"],
    };
    let mut spec = GenSpec {
        kind: GenKind::Uniform { pages: 0 },
        n: None,
        seed: None,
        write: 0.0,
        start: 0,
    };
    let mut pages = None;
    let mut seen: Vec<&str> = Vec::new();
    for (k, v) in &kv {
        let key = format!("{name}.{k}");
        if !allowed.contains(&k.as_str()) {
            return Err(Error::config(
                key,
                format!("unknown key for {name} (valid: {})", allowed.join(", ")),
            ));
        }
        if seen.contains(&k.as_str()) {
            return Err(Error::config(&key, "given twice"));
        }
        seen.push(k);
        let int = || {
            parse_u64(v).ok_or_else(|| Error::config(&key, format!("'{v}' is not a whole number")))
        };
        let frac = |lo_open: bool| {
            parse_f64(v)
                .filter(|x| (if lo_open { *x > 0.0 } else { *x >= 0.0 }) && *x <= 1.0)
                .ok_or_else(|| {
                    Error::config(
                        &key,
                        format!(
                            "'{v}' is not a fraction in {}0, 1]",
                            if lo_open { "(" } else { "[" }
                        ),
                    )
                })
        };
        match k.as_str() {
            "pages" => {
                let p = int()?;
                if p == 0 {
                    return Err(Error::config(&key, "must be at least 1"));
                }
                pages = Some(p);
            }
            "n" => {
                let n = int()?;
                if n == 0 {
                    return Err(Error::config(&key, "must be at least 1"));
                }
                spec.n = Some(n);
            }
            "seed" => spec.seed = Some(int()?),
            "start" => spec.start = int()?,
            "write" => spec.write = frac(false)?,
            "alpha" => {
                let a = parse_f64(v)
                    .filter(|a| *a >= 0.0 && *a <= 100.0)
                    .ok_or_else(|| {
                        Error::config(&key, format!("'{v}' is not an exponent in [0, 100]"))
                    })?;
                if let GenKind::Zipf { alpha, .. } = &mut kind {
                    *alpha = a;
                }
            }
            "shuffle" => {
                let b = parse_bool(v).ok_or_else(|| {
                    Error::config(&key, format!("expected true or false, got '{v}'"))
                })?;
                if let GenKind::Zipf { shuffle, .. } = &mut kind {
                    *shuffle = b;
                }
            }
            "hot_pages" => {
                let f = frac(true)?;
                if let GenKind::HotCold { hot_pages, .. } = &mut kind {
                    *hot_pages = f;
                }
            }
            "hot_accesses" => {
                let f = frac(false)?;
                if let GenKind::HotCold { hot_accesses, .. } = &mut kind {
                    *hot_accesses = f;
                }
            }
            _ => unreachable!("key checked against the allowed list"),
        }
    }
    if let Some(p) = pages {
        match &mut kind {
            GenKind::Uniform { pages }
            | GenKind::Zipf { pages, .. }
            | GenKind::Scan { pages }
            | GenKind::Loop { pages }
            | GenKind::HotCold { pages, .. } => *pages = p,
            _ => {}
        }
    } else if kind.pages().is_some() {
        return Err(Error::config(
            format!("{name}.pages"),
            "required: the number of pages",
        ));
    }
    if let Some(p) = kind.pages() {
        if p > MAX_PAGES {
            return Err(Error::config(
                format!("{name}.pages"),
                format!(
                    "{p} pages exceed a 64-bit address space of 4 KiB pages ({MAX_PAGES} pages)"
                ),
            ));
        }
        if spec.start.checked_add(p).is_none_or(|end| end > MAX_PAGES) {
            return Err(Error::config(
                format!("{name}.start"),
                format!(
                    "start + pages ({} + {p}) exceeds a 64-bit address space of 4 KiB pages \
                     ({MAX_PAGES} pages)",
                    spec.start
                ),
            ));
        }
    }
    if let GenKind::HotCold { pages, .. } = kind {
        if pages < 2 {
            return Err(Error::config(
                "hotcold.pages",
                "needs at least 2 pages (one hot, one cold)",
            ));
        }
    }
    spec.kind = kind;
    match ctx {
        Ctx::MixPart if spec.n.is_some() => {
            return Err(Error::config(
                format!("{name}.n"),
                "not allowed in a mix part (the mix's n counts all accesses)",
            ))
        }
        Ctx::Top | Ctx::SeqPhase if spec.accesses().is_none() => {
            return Err(Error::config(
                format!("{name}.n"),
                "required: the number of accesses",
            ))
        }
        _ => {}
    }
    Ok(spec)
}

impl GenSpec {
    /// Parse a spec (grammar in the module docs).
    pub fn parse(s: &str) -> Result<GenSpec> {
        let mut p = Parser {
            s: s.trim(),
            pos: 0,
            depth: 0,
        };
        let spec = p.spec(Ctx::Top)?;
        if p.peek().is_some() {
            return Err(p.err("unexpected text after the spec"));
        }
        Ok(spec)
    }

    /// Accesses this spec yields: `n`, else one sweep for `scan`, the sum of the phases for
    /// `seq`; `None` for an endless stream.
    pub fn accesses(&self) -> Option<u64> {
        if let Some(n) = self.n {
            return Some(n);
        }
        match &self.kind {
            GenKind::Scan { pages } => Some(*pages),
            GenKind::Seq(phases) => phases
                .iter()
                .try_fold(0u64, |acc, p| acc.checked_add(p.accesses()?)),
            _ => None,
        }
    }

    /// [`GenSpec::accesses`], or an error naming `kind.n` when the spec gives no length.
    fn required_accesses(&self) -> Result<u64> {
        self.accesses().ok_or_else(|| {
            Error::config(
                format!("{}.n", self.kind.name()),
                "required: the number of accesses",
            )
        })
    }

    /// The generator as a flat plan of tokens for `vmwl`, the kernel harness's workload
    /// program (`python/vmemsim/validate/vmwl.c`), which draws the same accesses from it
    /// inside a real Linux guest: `N <total> <node>` with, per node (seeds resolved as
    /// [`GenSpec::build`] resolves them, floats in shortest round-trip decimal):
    ///
    /// - `U seed start write pages` (uniform), `S seed start write pages` (scan and loop),
    /// - `Z seed start write pages alpha shuffle(0|1)`,
    /// - `H seed start write pages hot_pages hot_accesses`,
    /// - `M seed k w1 .. wk part1 .. partk` (mix), `Q k n1 .. nk phase1 .. phasek` (seq).
    pub fn plan(&self, seed: u64) -> Result<String> {
        let total = self.required_accesses()?;
        let mut out = format!("N {total}");
        plan_node(self, seed, &mut out);
        Ok(out)
    }

    /// Build the generator; `seed` is used where the spec gives none.
    pub fn build(&self, seed: u64) -> Result<Generator> {
        let total = self.required_accesses()?;
        let seed = self.seed.unwrap_or(seed);
        let mut named = self.clone();
        named.seed = Some(seed);
        Ok(Generator {
            root: Node::build(self, seed),
            total,
            left: total,
            name: named.to_string(),
        })
    }
}

fn fmt_f64(x: f64) -> String {
    format!("{x}")
}

impl fmt::Display for GenSpec {
    /// The canonical spec: parses back to an equal `GenSpec`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut kv: Vec<String> = Vec::new();
        match &self.kind {
            GenKind::Mix(parts) => {
                let p: Vec<String> = parts
                    .iter()
                    .map(|(s, w)| format!("({s})*{}", fmt_f64(*w)))
                    .collect();
                write!(f, "mix:{}", p.join("+"))?;
            }
            GenKind::Seq(phases) => {
                let p: Vec<String> = phases.iter().map(|s| format!("({s})")).collect();
                write!(f, "seq:{}", p.join("+"))?;
            }
            k => {
                write!(f, "{}:", k.name())?;
                kv.push(format!("pages={}", k.pages().unwrap_or(0)));
                match k {
                    GenKind::Zipf { alpha, shuffle, .. } => {
                        kv.push(format!("alpha={}", fmt_f64(*alpha)));
                        if !shuffle {
                            kv.push("shuffle=false".into());
                        }
                    }
                    GenKind::HotCold {
                        hot_pages,
                        hot_accesses,
                        ..
                    } => {
                        kv.push(format!("hot_pages={}", fmt_f64(*hot_pages)));
                        kv.push(format!("hot_accesses={}", fmt_f64(*hot_accesses)));
                    }
                    _ => {}
                }
                if self.start != 0 {
                    kv.push(format!("start={}", self.start));
                }
                if self.write != 0.0 {
                    kv.push(format!("write={}", fmt_f64(self.write)));
                }
            }
        }
        if let Some(n) = self.n {
            kv.push(format!("n={n}"));
        }
        if let Some(s) = self.seed {
            kv.push(format!("seed={s}"));
        }
        let composite = matches!(self.kind, GenKind::Mix(_) | GenKind::Seq(_));
        if !kv.is_empty() {
            if composite {
                write!(f, ",")?;
            }
            write!(f, "{}", kv.join(","))?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Sampling

/// Zipf ranks 1..=n with P(k) ∝ k^-s by rejection-inversion (Hörmann & Derflinger 1996).
///
/// H is an antiderivative of h(x) = x^-s; the interval (H(1.5) - 1, H(n + 0.5)] is split so
/// that rank k owns a piece of width h(k) ending at H(k + 0.5) (exact for k = 1 by the choice
/// of the lower end). A uniform u in the interval is inverted to x = H⁻¹(u) and rounded to k;
/// it is accepted when it falls in k's piece. Since h is convex the pieces fill most of
/// [H(k - 0.5), H(k + 0.5)], so few draws are rejected; `squeeze` accepts early when x is
/// within a distance of k that is safe for every k ≥ 2.
#[derive(Clone, Debug)]
pub(crate) struct Zipf {
    n: f64,
    s: f64,
    lo: f64,
    hi: f64,
    squeeze: f64,
}

/// log1p(x)/x, continuous at 0.
fn log1p_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// expm1(x)/x, continuous at 0.
fn expm1_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

impl Zipf {
    pub(crate) fn new(n: u64, s: f64) -> Self {
        let mut z = Zipf {
            n: n as f64,
            s,
            lo: 0.0,
            hi: 0.0,
            squeeze: 0.0,
        };
        z.lo = z.big_h(1.5) - 1.0;
        z.hi = z.big_h(n as f64 + 0.5);
        z.squeeze = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        z
    }
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }
    /// (x^(1-s) - 1) / (1-s), and ln x at s = 1.
    fn big_h(&self, x: f64) -> f64 {
        let l = x.ln();
        expm1_over((1.0 - self.s) * l) * l
    }
    fn big_h_inv(&self, y: f64) -> f64 {
        (log1p_over((1.0 - self.s) * y) * y).exp()
    }
    pub(crate) fn sample(&self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        loop {
            let u = self.hi + rng.gen::<f64>() * (self.lo - self.hi);
            let x = self.big_h_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.squeeze || u >= self.big_h(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

/// Ranges up to this many pages are shuffled with a table (fast); larger ones with a
/// Feistel network (no memory).
const TABLE_PERMUTATION_MAX: u64 = 1 << 22;

/// A seeded permutation of `0..n`. Up to [`TABLE_PERMUTATION_MAX`] pages, a table shuffled
/// by Fisher-Yates (Durstenfeld's in-place form); above, a balanced 4-round Feistel network on
/// the smallest even-bit-width domain ≥ n, cycle-walked back into range (the domain is under
/// 4n, so under 4 walks on average).
#[derive(Clone, Debug)]
struct Permutation {
    n: u64,
    table: Vec<u32>,
    half: u32,
    mask: u64,
    keys: [u64; 4],
}

impl Permutation {
    fn new(n: u64, seed: u64) -> Self {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half = bits.div_ceil(2);
        let mask = if half >= 64 {
            u64::MAX
        } else {
            (1u64 << half) - 1
        };
        let mut keys = [0u64; 4];
        for (i, k) in keys.iter_mut().enumerate() {
            *k = mix64(seed ^ mix64(0xF0E1_D2C3 + i as u64));
        }
        let mut table = Vec::new();
        if n <= TABLE_PERMUTATION_MAX {
            table = (0..n as u32).collect();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            for i in (1..table.len()).rev() {
                let j = rng.gen_range(0..=i);
                table.swap(i, j);
            }
        }
        Permutation {
            n,
            table,
            half,
            mask,
            keys,
        }
    }
    #[inline]
    fn apply(&self, x: u64) -> u64 {
        match self.table.get(x as usize) {
            Some(&y) => y as u64,
            None => self.feistel(x),
        }
    }
    fn feistel(&self, mut x: u64) -> u64 {
        loop {
            let (mut l, mut r) = (
                if self.half == 0 { 0 } else { x >> self.half },
                x & self.mask,
            );
            for k in self.keys {
                let f = mix64(r ^ k) & self.mask;
                (l, r) = (r, l ^ f);
            }
            x = if self.half == 0 {
                r
            } else {
                (l << self.half) | r
            };
            if x < self.n {
                return x;
            }
        }
    }
}

#[derive(Clone, Debug)]
enum Node {
    Uniform {
        rng: Xoshiro256PlusPlus,
        start: u64,
        pages: u64,
        write: f64,
    },
    Zipf {
        rng: Xoshiro256PlusPlus,
        start: u64,
        zipf: Zipf,
        perm: Option<Permutation>,
        write: f64,
    },
    Scan {
        rng: Xoshiro256PlusPlus,
        start: u64,
        pages: u64,
        pos: u64,
        write: f64,
    },
    HotCold {
        rng: Xoshiro256PlusPlus,
        start: u64,
        hot: u64,
        pages: u64,
        p_hot: f64,
        write: f64,
    },
    Mix {
        rng: Xoshiro256PlusPlus,
        cum: Vec<f64>,
        parts: Vec<Node>,
    },
    Seq {
        phases: Vec<(Node, u64)>,
        cur: usize,
        left: u64,
    },
}

/// One node of [`GenSpec::plan`], seeded as [`Node::build`] seeds it.
fn plan_node(spec: &GenSpec, seed: u64, out: &mut String) {
    use std::fmt::Write;
    let seed = spec.seed.unwrap_or(seed);
    let head = |out: &mut String, tag: &str, pages: u64| {
        let _ = write!(out, " {tag} {seed} {} {:?} {pages}", spec.start, spec.write);
    };
    match &spec.kind {
        GenKind::Uniform { pages } => head(out, "U", *pages),
        GenKind::Scan { pages } | GenKind::Loop { pages } => head(out, "S", *pages),
        GenKind::Zipf {
            pages,
            alpha,
            shuffle,
        } => {
            head(out, "Z", *pages);
            let _ = write!(out, " {alpha:?} {}", u8::from(*shuffle));
        }
        GenKind::HotCold {
            pages,
            hot_pages,
            hot_accesses,
        } => {
            head(out, "H", *pages);
            let _ = write!(out, " {hot_pages:?} {hot_accesses:?}");
        }
        GenKind::Mix(parts) => {
            let _ = write!(out, " M {seed} {}", parts.len());
            for (_, w) in parts {
                let _ = write!(out, " {w:?}");
            }
            for (i, (p, _)) in parts.iter().enumerate() {
                plan_node(p, child_seed(seed, i), out);
            }
        }
        GenKind::Seq(phases) => {
            let _ = write!(out, " Q {}", phases.len());
            for p in phases {
                let _ = write!(out, " {}", p.accesses().unwrap_or(1).max(1));
            }
            for (i, p) in phases.iter().enumerate() {
                plan_node(p, child_seed(seed, i), out);
            }
        }
    }
}

fn child_seed(seed: u64, i: usize) -> u64 {
    mix64(seed ^ mix64(i as u64 + 1))
}

#[inline]
fn is_write(rng: &mut Xoshiro256PlusPlus, p: f64) -> bool {
    p > 0.0 && rng.gen::<f64>() < p
}

impl Node {
    fn build(spec: &GenSpec, seed: u64) -> Node {
        let seed = spec.seed.unwrap_or(seed);
        let rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let (start, write) = (spec.start, spec.write);
        match &spec.kind {
            GenKind::Uniform { pages } => Node::Uniform {
                rng,
                start,
                pages: *pages,
                write,
            },
            GenKind::Zipf {
                pages,
                alpha,
                shuffle,
            } => Node::Zipf {
                rng,
                start,
                zipf: Zipf::new(*pages, *alpha),
                perm: shuffle.then(|| Permutation::new(*pages, mix64(seed ^ 0x5EED))),
                write,
            },
            GenKind::Scan { pages } | GenKind::Loop { pages } => Node::Scan {
                rng,
                start,
                pages: *pages,
                pos: 0,
                write,
            },
            GenKind::HotCold {
                pages,
                hot_pages,
                hot_accesses,
            } => Node::HotCold {
                rng,
                start,
                hot: ((*pages as f64 * hot_pages).round() as u64).clamp(1, pages - 1),
                pages: *pages,
                p_hot: *hot_accesses,
                write,
            },
            GenKind::Mix(parts) => {
                let total: f64 = parts.iter().map(|p| p.1).sum();
                let mut acc = 0.0;
                let cum = parts
                    .iter()
                    .map(|p| {
                        acc += p.1 / total;
                        acc
                    })
                    .collect();
                Node::Mix {
                    rng,
                    cum,
                    parts: parts
                        .iter()
                        .enumerate()
                        .map(|(i, p)| Node::build(&p.0, child_seed(seed, i)))
                        .collect(),
                }
            }
            GenKind::Seq(phases) => {
                let phases: Vec<(Node, u64)> = phases
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        (
                            Node::build(p, child_seed(seed, i)),
                            p.accesses().unwrap_or(1).max(1),
                        )
                    })
                    .collect();
                let left = phases[0].1;
                Node::Seq {
                    phases,
                    cur: 0,
                    left,
                }
            }
        }
    }

    #[inline]
    fn sample(&mut self) -> Access {
        match self {
            Node::Uniform {
                rng,
                start,
                pages,
                write,
            } => {
                let page = *start + rng.gen_range(0..*pages);
                Access {
                    page,
                    write: is_write(rng, *write),
                    gup: false,
                }
            }
            Node::Zipf {
                rng,
                start,
                zipf,
                perm,
                write,
            } => {
                let rank0 = zipf.sample(rng) - 1;
                let off = match perm {
                    Some(p) => p.apply(rank0),
                    None => rank0,
                };
                Access {
                    page: *start + off,
                    write: is_write(rng, *write),
                    gup: false,
                }
            }
            Node::Scan {
                rng,
                start,
                pages,
                pos,
                write,
            } => {
                let page = *start + *pos;
                *pos += 1;
                if *pos == *pages {
                    *pos = 0;
                }
                Access {
                    page,
                    write: is_write(rng, *write),
                    gup: false,
                }
            }
            Node::HotCold {
                rng,
                start,
                hot,
                pages,
                p_hot,
                write,
            } => {
                let off = if rng.gen::<f64>() < *p_hot {
                    rng.gen_range(0..*hot)
                } else {
                    rng.gen_range(*hot..*pages)
                };
                Access {
                    page: *start + off,
                    write: is_write(rng, *write),
                    gup: false,
                }
            }
            Node::Mix { rng, cum, parts } => {
                let u = rng.gen::<f64>();
                let i = cum.iter().position(|&c| u < c).unwrap_or(parts.len() - 1);
                parts[i].sample()
            }
            Node::Seq { phases, cur, left } => {
                if *left == 0 {
                    *cur = (*cur + 1) % phases.len();
                    *left = phases[*cur].1;
                }
                *left -= 1;
                phases[*cur].0.sample()
            }
        }
    }
}

/// A running generator: yields exactly `len` accesses.
#[derive(Clone, Debug)]
pub struct Generator {
    root: Node,
    total: u64,
    left: u64,
    name: String,
}

impl Generator {
    /// The canonical spec with its resolved seed (re-running it gives the same accesses).
    pub fn spec(&self) -> &str {
        &self.name
    }
}

impl TraceSource for Generator {
    fn next_chunk(&mut self, buf: &mut Vec<Access>) -> Result<()> {
        buf.clear();
        let k = self.left.min(CHUNK as u64) as usize;
        buf.reserve(k);
        for _ in 0..k {
            buf.push(self.root.sample());
        }
        self.left -= k as u64;
        Ok(())
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn len_hint(&self) -> Option<u64> {
        Some(self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::collect;

    fn gen(spec: &str, seed: u64) -> Vec<Access> {
        collect(&mut open(spec, seed).unwrap()).unwrap()
    }

    fn counts(v: &[Access], pages: usize) -> Vec<u64> {
        let mut c = vec![0u64; pages];
        for a in v {
            c[a.page as usize] += 1;
        }
        c
    }

    /// Least-squares slope of ln(count) against ln(rank) over ranks 1..=k.
    fn slope(c: &[u64], k: usize) -> f64 {
        let pts: Vec<(f64, f64)> = (1..=k)
            .map(|r| ((r as f64).ln(), (c[r - 1] as f64).ln()))
            .collect();
        let mx = pts.iter().map(|p| p.0).sum::<f64>() / k as f64;
        let my = pts.iter().map(|p| p.1).sum::<f64>() / k as f64;
        let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
        sxy / sxx
    }

    #[test]
    fn zipf_rank_frequencies() {
        let n = 400_000u64;
        for (alpha, seed) in [(0.6, 1u64), (1.0, 2), (1.3, 3)] {
            let pages = 1000usize;
            let v = gen(
                &format!("zipf:pages={pages},alpha={alpha},shuffle=false,n={n}"),
                seed,
            );
            let c = counts(&v, pages);
            // Exact probabilities from the generalized harmonic number H(N, alpha).
            let hn: f64 = (1..=pages).map(|k| (k as f64).powf(-alpha)).sum();
            for k in 1..=20usize {
                let p = (k as f64).powf(-alpha) / hn;
                let mean = n as f64 * p;
                let sd = (n as f64 * p * (1.0 - p)).sqrt();
                assert!(
                    (c[k - 1] as f64 - mean).abs() < 5.0 * sd,
                    "alpha {alpha} rank {k}: {} vs {mean:.0} ± {sd:.0}",
                    c[k - 1]
                );
            }
            let s = slope(&c, 50);
            assert!((s + alpha).abs() < 0.05, "alpha {alpha}: slope {s}");
        }
    }

    #[test]
    fn zipf_shuffled_keeps_frequencies_and_spreads_pages() {
        let pages = 1000usize;
        let v = gen(
            &format!("zipf:pages={pages},alpha=1,n=300000,start=5000"),
            9,
        );
        assert!(v.iter().all(|a| (5000..6000).contains(&a.page)));
        let mut c = vec![0u64; pages];
        for a in &v {
            c[(a.page - 5000) as usize] += 1;
        }
        let first_ten: u64 = c[..10].iter().sum();
        c.sort_unstable_by(|a, b| b.cmp(a));
        let s = slope(&c, 50);
        assert!((s + 1.0).abs() < 0.06, "slope {s}");
        // Unshuffled, pages 0..10 would take the ten top ranks (~39% of accesses at alpha 1);
        // shuffled, those ten pages hold ranks drawn at random.
        assert!((first_ten as f64) < 0.2 * v.len() as f64, "{first_ten}");
    }

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1u64, 2, 3, 17, 1000, 4097] {
            let p = Permutation::new(n, 42);
            let mut seen = vec![false; n as usize];
            let mut seen_feistel = vec![false; n as usize];
            for x in 0..n {
                let y = p.apply(x);
                assert!(y < n && !seen[y as usize], "n {n} x {x} → {y}");
                seen[y as usize] = true;
                let y = p.feistel(x);
                assert!(
                    y < n && !seen_feistel[y as usize],
                    "feistel n {n} x {x} → {y}"
                );
                seen_feistel[y as usize] = true;
            }
        }
        // Beyond the table limit the Feistel network is used.
        let big = Permutation::new(TABLE_PERMUTATION_MAX + 5, 1);
        assert!(big.table.is_empty());
        assert!(big.apply(TABLE_PERMUTATION_MAX + 4) < TABLE_PERMUTATION_MAX + 5);
    }

    #[test]
    fn uniform_chi_square() {
        let v = gen("uniform:pages=100,n=200000", 5);
        let c = counts(&v, 100);
        let e = 2000.0;
        let chi2: f64 = c.iter().map(|&x| (x as f64 - e).powi(2) / e).sum();
        // 99 degrees of freedom: mean 99, sd 14; 5 sd above the mean is far in the tail.
        assert!(chi2 < 99.0 + 5.0 * 14.1, "chi2 {chi2}");
    }

    #[test]
    fn hotcold_and_write_fractions() {
        let v = gen(
            "hotcold:pages=1000,hot_pages=0.1,hot_accesses=0.9,n=200000,write=0.25",
            11,
        );
        let hot = v.iter().filter(|a| a.page < 100).count() as f64 / v.len() as f64;
        let writes = v.iter().filter(|a| a.write).count() as f64 / v.len() as f64;
        // sd of a fraction over 200000 draws is below 0.0011.
        assert!((hot - 0.9).abs() < 0.006, "{hot}");
        assert!((writes - 0.25).abs() < 0.006, "{writes}");
        assert!(v.iter().all(|a| a.page < 1000));
        assert!(gen("uniform:pages=10,n=1000", 1).iter().all(|a| !a.write));
    }

    #[test]
    fn scan_loop_and_seq_are_exact() {
        let pages: Vec<u64> = gen("scan:pages=4,start=10", 0)
            .iter()
            .map(|a| a.page)
            .collect();
        assert_eq!(pages, vec![10, 11, 12, 13]);
        let pages: Vec<u64> = gen("loop:pages=3,n=7", 0).iter().map(|a| a.page).collect();
        assert_eq!(pages, vec![0, 1, 2, 0, 1, 2, 0]);
        let v = gen(
            "seq:(scan:pages=3)+(uniform:pages=5,start=100,n=4)+(loop:pages=2,n=3)",
            0,
        );
        let pages: Vec<u64> = v.iter().map(|a| a.page).collect();
        assert_eq!(&pages[..3], &[0, 1, 2]);
        assert!(pages[3..7].iter().all(|p| (100..105).contains(p)));
        assert_eq!(&pages[7..], &[0, 1, 0]);
    }

    #[test]
    fn mix_weights() {
        let v = gen(
            "mix:(uniform:pages=100)*0.7+(scan:pages=1000,start=10000)*0.3,n=100000",
            3,
        );
        assert_eq!(v.len(), 100_000);
        let from_scan = v.iter().filter(|a| a.page >= 10_000).count() as f64 / 1e5;
        assert!((from_scan - 0.3).abs() < 0.008, "{from_scan}");
        // The scan part keeps its own position between draws: its pages come in order.
        let scan: Vec<u64> = v
            .iter()
            .filter(|a| a.page >= 10_000)
            .take(5)
            .map(|a| a.page)
            .collect();
        assert_eq!(scan, vec![10_000, 10_001, 10_002, 10_003, 10_004]);
    }

    #[test]
    fn seeds_determine_output() {
        let a = gen("zipf:pages=1000,n=5000", 1);
        assert_eq!(a, gen("zipf:pages=1000,n=5000", 1));
        assert_ne!(a, gen("zipf:pages=1000,n=5000", 2));
        // An explicit seed wins over the run's.
        assert_eq!(gen("zipf:pages=1000,n=5000,seed=1", 99), a);
        // Parts of a mix draw from independent streams.
        let m = gen(
            "mix:(uniform:pages=1000000)+(uniform:pages=1000000),n=1000",
            4,
        );
        let mut s: Vec<u64> = m.iter().map(|a| a.page).collect();
        s.sort_unstable();
        s.dedup();
        assert!(s.len() > 990);
    }

    #[test]
    fn canonical_spec_round_trips() {
        for s in [
            "zipf:pages=100000,alpha=0.99,n=1000000,seed=1",
            "zipf:pages=10,alpha=1,shuffle=false,start=5,write=0.5,n=3",
            "mix:(zipf:pages=1e5,alpha=0.9)*0.7+(scan:pages=1e6,start=1e6)*0.3,n=1e6",
            "seq:(scan:pages=1000)+(hotcold:pages=1e4,n=5e4,write=0.3),seed=7",
            " mix : ( uniform : pages = 10 ) + (loop:pages=3) , n = 5 ",
            "mix:(seq:(scan:pages=3)+(uniform:pages=9,n=2))*2+(uniform:pages=4),n=100",
        ] {
            let spec = GenSpec::parse(s).unwrap();
            let again = GenSpec::parse(&spec.to_string()).unwrap();
            assert_eq!(spec, again, "{s} → {spec}");
        }
        let g = open("zipf:pages=10,n=3", 42).unwrap();
        assert_eq!(g.spec(), "zipf:pages=10,alpha=0.99,n=3,seed=42");
        assert_eq!(g.len_hint(), Some(3));
        assert_eq!(
            GenSpec::parse("seq:(scan:pages=3)+(loop:pages=2,n=5)")
                .unwrap()
                .accesses(),
            Some(8)
        );
    }

    #[test]
    fn huge_numbers_mean_the_same_in_both_notations() {
        let e = |s: &str| GenSpec::parse(s).unwrap_err().to_string();
        // 1e19 and 10000000000000000000 are the same number, refused for the same reason.
        for p in ["1e19", "10000000000000000000"] {
            assert_eq!(
                e(&format!("zipf:pages={p},n=10")),
                "zipf.pages: 10000000000000000000 pages exceed a 64-bit address space of 4 KiB \
                 pages (4503599627370496 pages)"
            );
        }
        // Float notation above 2^53 is accepted where the value is allowed: 2^52 = 4.503...e15.
        let z = GenSpec::parse("zipf:pages=4503599627370496,n=10").unwrap();
        assert_eq!(z.kind.pages(), Some(MAX_PAGES));
        assert_eq!(
            GenSpec::parse("zipf:pages=1e15,n=1e6")
                .unwrap()
                .kind
                .pages(),
            Some(1_000_000_000_000_000)
        );
        assert!(e("scan:pages=10,start=4503599627370490").contains("start + pages"));
        assert!(e("zipf:pages=2e19,n=10").contains("not a whole number"));
    }

    #[test]
    fn nesting_is_bounded_with_a_clear_error() {
        // 64 levels of seq parse (and print back); 65 are refused, and ~3,100, which used to
        // overflow the stack, get the same message instead of a crash.
        let nested = |d: usize| format!("{}scan:pages=10{}", "seq:(".repeat(d), ")".repeat(d));
        let ok = GenSpec::parse(&nested(64)).unwrap();
        assert_eq!(ok.accesses(), Some(10));
        assert_eq!(GenSpec::parse(&ok.to_string()).unwrap(), ok);
        for d in [65, 3_100, 100_000] {
            let e = GenSpec::parse(&nested(d)).unwrap_err().to_string();
            assert!(e.contains("nested more than 64 deep"), "{e}");
        }
    }

    #[test]
    fn spec_errors_name_the_key() {
        let e = |s: &str| GenSpec::parse(s).unwrap_err().to_string();
        assert_eq!(
            e("zipf:pages=10,alpah=1,n=5"),
            "zipf.alpah: unknown key for zipf (valid: pages, alpha, shuffle, n, seed, write, start)"
        );
        assert_eq!(
            e("zipf:alpha=1,n=5"),
            "zipf.pages: required: the number of pages"
        );
        assert_eq!(
            e("uniform:pages=10"),
            "uniform.n: required: the number of accesses"
        );
        assert_eq!(e("uniform:pages=10,n=5,n=6"), "uniform.n: given twice");
        assert_eq!(
            e("uniform:pages=ten,n=5"),
            "uniform.pages: 'ten' is not a whole number"
        );
        assert_eq!(
            e("uniform:pages=10,n=5,write=2"),
            "uniform.write: '2' is not a fraction in [0, 1]"
        );
        assert_eq!(
            e("zipf:pages=10,n=5,alpha=-1"),
            "zipf.alpha: '-1' is not an exponent in [0, 100]"
        );
        assert_eq!(
            e("mix:(uniform:pages=10,n=5)*1,n=5"),
            "uniform.n: not allowed in a mix part (the mix's n counts all accesses)"
        );
        assert_eq!(
            e("mix:(uniform:pages=10)"),
            "mix.n: required: the number of accesses"
        );
        assert_eq!(
            e("seq:(uniform:pages=10)"),
            "uniform.n: required: the number of accesses"
        );
        assert_eq!(e("gauss:pages=10"), "generator: unknown generator 'gauss'; valid: uniform, zipf, scan, loop, hotcold, mix, seq");
        assert_eq!(
            e("mix:(uniform:pages=10)*x,n=5"),
            "generator: 'mix:(uniform:pages=10)*x,n=5' at column 24: weight 'x' is not a positive number"
        );
        assert_eq!(
            e("mix:(uniform:pages=10"),
            "generator: 'mix:(uniform:pages=10' at column 22: expected ')'"
        );
        assert_eq!(
            e("scan:pages=3)"),
            "generator: 'scan:pages=3)' at column 13: unexpected text after the spec"
        );
        assert_eq!(
            e("hotcold:pages=1,n=4"),
            "hotcold.pages: needs at least 2 pages (one hot, one cold)"
        );
        assert_eq!(
            e("scan:pages=10,start=18446744073709551615"),
            "scan.start: start + pages (18446744073709551615 + 10) exceeds a 64-bit address \
             space of 4 KiB pages (4503599627370496 pages)"
        );
    }
}
