//! Benchmarks for the statistics used by `moot report`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use moot::stats::{CorrelationKind, bootstrap_ci, kendall_tau_b};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Correlated pairs with ties (scores rounded to one decimal).
fn sample(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let x: Vec<f64> = (0..n).map(|_| (rng.random::<f64>() * 50.0).round() / 10.0).collect();
    let y: Vec<f64> = x.iter().map(|v| ((v + rng.random::<f64>() * 2.0) * 10.0).round() / 10.0).collect();
    (x, y)
}

fn bench_stats(c: &mut Criterion) {
    let (x, y) = sample(200, 1);
    let pearson = CorrelationKind::Pearson.statistic();
    c.bench_function("bootstrap_pearson_10000x200", |b| {
        b.iter(|| bootstrap_ci(black_box(&x), black_box(&y), pearson, 10_000, 7, 0.95))
    });

    let (x, y) = sample(1000, 2);
    c.bench_function("bootstrap_pearson_10000x1000", |b| {
        b.iter(|| bootstrap_ci(black_box(&x), black_box(&y), pearson, 10_000, 7, 0.95))
    });
    c.bench_function("kendall_tau_b_1000", |b| b.iter(|| kendall_tau_b(black_box(&x), black_box(&y))));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench_stats
}
criterion_main!(benches);
