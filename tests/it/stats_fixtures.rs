//! Checks `moot::stats` against reference values computed by scipy,
//! scikit-learn, numpy and the `krippendorff` package
//! (see tests/fixtures/stats/make_fixtures.py).

use std::path::PathBuf;

use moot::stats::{
    self, AlphaLevel, Confusion, CorrelationKind, KappaWeights, PairedCells, Resampling, Undefined,
    bootstrap_cells_with, bootstrap_ci, complete_pairs, krippendorff_alpha,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// Agreement with a closed-form reference.
const TOL: f64 = 1e-9;

#[derive(Deserialize)]
struct Fixture<C> {
    cases: Vec<C>,
}

fn load<C: DeserializeOwned>(name: &str) -> Vec<C> {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "fixtures", "stats", name].iter().collect();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let fixture: Fixture<C> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(!fixture.cases.is_empty(), "{name} has no cases");
    fixture.cases
}

/// Compares a result with a reference value; `None` means the reference had
/// no value and moot must answer `Undefined` with `reason`.
fn check(case: &str, metric: &str, got: Result<f64, Undefined>, expected: Option<f64>, reason: Option<&str>, tol: f64) {
    match (got, expected) {
        (Ok(v), Some(e)) => assert!((v - e).abs() <= tol, "{case}/{metric}: got {v}, expected {e}"),
        (Err(u), None) => {
            let reason = reason.unwrap_or_else(|| panic!("{case}/{metric}: fixture gives no reason"));
            assert_eq!(u.reason, reason, "{case}/{metric}");
        }
        (Ok(v), None) => panic!("{case}/{metric}: got {v}, expected undefined ({reason:?})"),
        (Err(u), Some(e)) => panic!("{case}/{metric}: undefined ({}), expected {e}", u.reason),
    }
}

#[derive(Deserialize)]
struct CorrelationCase {
    name: String,
    x: Vec<Option<f64>>,
    y: Vec<Option<f64>>,
    n: usize,
    dropped: usize,
    expected: CorrelationExpected,
    undefined: Option<String>,
}

#[derive(Deserialize)]
struct CorrelationExpected {
    pearson: Option<f64>,
    spearman: Option<f64>,
    kendall_tau_b: Option<f64>,
}

#[test]
fn correlations_match_scipy() {
    let cases: Vec<CorrelationCase> = load("correlation.json");
    for c in &cases {
        let pairs = complete_pairs(&c.x, &c.y).unwrap();
        assert_eq!(pairs.n(), c.n, "{}", c.name);
        assert_eq!(pairs.dropped, c.dropped, "{}", c.name);
        for kind in CorrelationKind::ALL {
            let expected = match kind {
                CorrelationKind::Pearson => c.expected.pearson,
                CorrelationKind::Spearman => c.expected.spearman,
                CorrelationKind::KendallTauB => c.expected.kendall_tau_b,
            };
            let got = kind.compute(&pairs.x, &pairs.y);
            if let Ok(r) = &got {
                assert_eq!(r.n, c.n, "{}/{}", c.name, kind.name());
            }
            check(&c.name, kind.name(), got.map(|r| r.value), expected, c.undefined.as_deref(), TOL);
        }
    }
}

#[derive(Deserialize)]
struct AlphaCase {
    name: String,
    units: Vec<Vec<Option<f64>>>,
    expected: AlphaExpected,
    undefined: Option<String>,
}

#[derive(Deserialize)]
struct AlphaExpected {
    interval: Option<f64>,
    ordinal: Option<f64>,
}

#[test]
fn krippendorff_alpha_matches_reference_package() {
    let cases: Vec<AlphaCase> = load("krippendorff.json");
    for c in &cases {
        for (level, expected) in
            [(AlphaLevel::Interval, c.expected.interval), (AlphaLevel::Ordinal, c.expected.ordinal)]
        {
            let got = krippendorff_alpha(&c.units, level).map(|a| a.alpha);
            check(&c.name, level.name(), got, expected, c.undefined.as_deref(), TOL);
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Labels {
    Ints(Vec<i64>),
    Strings(Vec<String>),
}

#[derive(Deserialize)]
struct KappaCase {
    name: String,
    a: Labels,
    b: Labels,
    expected: KappaExpected,
    undefined: Option<String>,
}

#[derive(Deserialize)]
struct KappaExpected {
    cohen_kappa: Option<f64>,
    cohen_kappa_quadratic: Option<f64>,
    agreement_rate: Option<f64>,
}

fn check_kappa<T: Ord + Clone>(c: &KappaCase, a: &[T], b: &[T]) {
    let reason = c.undefined.as_deref();
    check(&c.name, "cohen_kappa", stats::cohen_kappa(a, b), c.expected.cohen_kappa, reason, TOL);
    check(
        &c.name,
        "cohen_kappa_quadratic",
        stats::cohen_kappa_quadratic(a, b),
        c.expected.cohen_kappa_quadratic,
        reason,
        TOL,
    );
    check(&c.name, "agreement_rate", stats::agreement_rate(a, b), c.expected.agreement_rate, reason, TOL);
    let conf = Confusion::new(a, b).unwrap();
    assert_eq!(conf.total(), a.len() as u64, "{}", c.name);
    check(&c.name, "confusion.agreement_rate", conf.agreement_rate(), c.expected.agreement_rate, reason, TOL);
    check(&c.name, "confusion.kappa", conf.kappa(KappaWeights::Unweighted), c.expected.cohen_kappa, reason, TOL);
}

#[test]
fn cohen_kappa_matches_sklearn() {
    let cases: Vec<KappaCase> = load("kappa.json");
    for c in &cases {
        match (&c.a, &c.b) {
            (Labels::Ints(a), Labels::Ints(b)) => check_kappa(c, a, b),
            (Labels::Strings(a), Labels::Strings(b)) => check_kappa(c, a, b),
            _ => panic!("{}: mixed label types", c.name),
        }
    }
}

#[derive(Deserialize)]
struct AucCase {
    name: String,
    truth: Vec<bool>,
    scores: Vec<f64>,
    expected: Option<f64>,
    undefined: Option<String>,
}

#[test]
fn roc_auc_matches_sklearn() {
    let cases: Vec<AucCase> = load("auc.json");
    for c in &cases {
        let got = stats::roc_auc(&c.truth, &c.scores);
        check(&c.name, "roc_auc", got, c.expected, c.undefined.as_deref(), TOL);
    }
}

#[derive(Deserialize)]
struct DescriptiveCase {
    name: String,
    values: Vec<f64>,
    expected: DescriptiveExpected,
}

#[derive(Deserialize)]
struct DescriptiveExpected {
    mean: f64,
    population_stdev: f64,
    median: f64,
}

#[test]
fn descriptive_helpers_match_numpy() {
    let cases: Vec<DescriptiveCase> = load("descriptive.json");
    for c in &cases {
        check(&c.name, "mean", stats::mean(&c.values), Some(c.expected.mean), None, TOL);
        check(
            &c.name,
            "population_stdev",
            stats::population_stdev(&c.values),
            Some(c.expected.population_stdev),
            None,
            TOL,
        );
        check(&c.name, "median", stats::median(&c.values), Some(c.expected.median), None, TOL);
    }
}

#[derive(Deserialize)]
struct ScaleCase {
    name: String,
    truth: Vec<i64>,
    judge: Vec<i64>,
    expected: ScaleExpected,
}

#[derive(Deserialize)]
struct ScaleExpected {
    n: usize,
    exact: usize,
    gaps: [usize; 4],
    over: usize,
    under: usize,
    accuracy: f64,
    gap_ratio: [f64; 4],
    over_rating_ratio: f64,
    under_rating_ratio: f64,
}

#[test]
fn scale_errors_match_counting() {
    let cases: Vec<ScaleCase> = load("scale.json");
    for c in &cases {
        let e = stats::scale_errors(&c.truth, &c.judge).unwrap();
        let x = &c.expected;
        assert_eq!((e.n, e.exact, e.gaps, e.over, e.under), (x.n, x.exact, x.gaps, x.over, x.under), "{}", c.name);
        check(&c.name, "accuracy", e.accuracy(), Some(x.accuracy), None, TOL);
        for gap in 1..=4u32 {
            let name = format!("gap_ratio_{gap}");
            check(&c.name, &name, e.gap_ratio(gap), Some(x.gap_ratio[gap as usize - 1]), None, TOL);
        }
        check(&c.name, "over_rating_ratio", e.over_rating_ratio(), Some(x.over_rating_ratio), None, TOL);
        check(&c.name, "under_rating_ratio", e.under_rating_ratio(), Some(x.under_rating_ratio), None, TOL);
    }
}

#[derive(Deserialize)]
struct BootstrapCase {
    name: String,
    statistic: String,
    x: Vec<f64>,
    y: Vec<f64>,
    level: f64,
    resamples: usize,
    point: f64,
    scipy_low: f64,
    scipy_high: f64,
}

/// Different random streams give different intervals; with 10,000
/// resamples both land within Monte Carlo noise of the same quantiles.
const BOOTSTRAP_TOL: f64 = 0.03;

#[test]
fn bootstrap_percentile_interval_is_close_to_scipy() {
    let cases: Vec<BootstrapCase> = load("bootstrap.json");
    for c in &cases {
        assert_eq!(c.statistic, "pearson");
        let stat = CorrelationKind::Pearson.statistic();
        let point = stat(&c.x, &c.y).unwrap();
        assert!((point - c.point).abs() < TOL, "{}", c.name);
        let ci = bootstrap_ci(&c.x, &c.y, stat, c.resamples, 2024, c.level).unwrap();
        assert!(ci.low < point && point < ci.high, "{}: {ci:?} vs {point}", c.name);
        assert!((ci.low - c.scipy_low).abs() < BOOTSTRAP_TOL, "{}: low {} vs scipy {}", c.name, ci.low, c.scipy_low);
        assert!(
            (ci.high - c.scipy_high).abs() < BOOTSTRAP_TOL,
            "{}: high {} vs scipy {}",
            c.name,
            ci.high,
            c.scipy_high
        );
        assert_eq!(ci.resamples, c.resamples);
        // Same seed, same interval, bit for bit.
        assert_eq!(ci, bootstrap_ci(&c.x, &c.y, stat, c.resamples, 2024, c.level).unwrap());
    }
}

/// The bootstrap over distinct cells (multinomial cell counts, or per-item
/// draws when most values are distinct) lands within Monte Carlo noise of
/// scipy's per-item bootstrap as well.
#[test]
fn cell_bootstrap_is_close_to_scipy() {
    let cases: Vec<BootstrapCase> = load("bootstrap.json");
    for c in &cases {
        let cells = PairedCells::new(&c.x, &c.y).unwrap();
        for method in [Resampling::Multinomial, Resampling::PerItem] {
            let pearson = |w: &mut moot::stats::Weighted<'_>, out: &mut [Option<f64>]| out[0] = w.pearson().ok();
            let ci = bootstrap_cells_with(&cells, method, 1, pearson, c.resamples, 2024, c.level).unwrap();
            let ci = ci[0].clone().unwrap();
            assert!(
                (ci.low - c.scipy_low).abs() < BOOTSTRAP_TOL,
                "{} {method:?}: low {} vs {}",
                c.name,
                ci.low,
                c.scipy_low
            );
            assert!(
                (ci.high - c.scipy_high).abs() < BOOTSTRAP_TOL,
                "{} {method:?}: high {} vs {}",
                c.name,
                ci.high,
                c.scipy_high
            );
        }
    }
}

/// A fixed interval for a fixed seed: catches accidental changes to the
/// resampling stream (generator, index sampling, quantile rule), which
/// would silently change every reported interval.
#[test]
fn bootstrap_stream_is_stable() {
    let x: Vec<f64> = (0..25).map(|i| f64::from(i % 5) + 1.0).collect();
    let y: Vec<f64> = (0..25).map(|i| f64::from((i * 3) % 5) + f64::from(i % 5) * 0.5).collect();
    let ci = bootstrap_ci(&x, &y, CorrelationKind::Spearman.statistic(), 500, 42, 0.9).unwrap();
    let again = bootstrap_ci(&x, &y, CorrelationKind::Spearman.statistic(), 500, 42, 0.9).unwrap();
    assert_eq!(ci, again);
    assert_eq!((ci.low, ci.high), PINNED_SPEARMAN_CI, "{ci:?}");
}

const PINNED_SPEARMAN_CI: (f64, f64) = (0.6502442566285135, 0.8916256157635468);
