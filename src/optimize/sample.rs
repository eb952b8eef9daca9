//! Sample selection: a seeded test split and held-out split, TF-IDF vectors
//! of the examples' text, k-means clusters of the training part
//! (`linfa-clustering`, seeded) or clusters by the value of a field of the
//! items, and each iteration's draw of examples per cluster.

use std::collections::{BTreeMap, BTreeSet};

use linfa::prelude::*;
use linfa_clustering::KMeans;
use ndarray::Array2;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rand_xoshiro::Xoshiro256Plus;
use rand_xoshiro::rand_core::SeedableRng as _;

/// Split `n` examples into (training, held-out) index lists: a seeded
/// shuffle, the first `ceil(fraction × n)` held out (at least one each side
/// when `n ≥ 2` and `fraction > 0`). Both lists come back sorted.
pub fn split(n: usize, fraction: f64, seed: u64) -> (Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed ^ 0x686f_6c64));
    let mut held = if fraction <= 0.0 { 0 } else { ((fraction * n as f64).ceil() as usize).max(1) };
    if n >= 2 {
        held = held.min(n - 1);
    } else {
        held = 0;
    }
    let (h, t) = order.split_at(held);
    let (mut train, mut holdout) = (t.to_vec(), h.to_vec());
    train.sort_unstable();
    holdout.sort_unstable();
    (train, holdout)
}

/// The three splits of `n` examples: (training, held-out, test). The test
/// split (`ceil(test × n)` examples of a seeded shuffle of its own; none when
/// `test` is 0) is set apart first and never judged before the loop ends;
/// the rest is split into training and held-out as [`split`] does. With no
/// test split this is [`split`] exactly. All lists come back sorted.
pub fn split_three(n: usize, holdout: f64, test: f64, seed: u64) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    if test <= 0.0 || n < 3 {
        let (train, held) = split(n, holdout, seed);
        return (train, held, Vec::new());
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed ^ 0x7465_7374));
    // At least one example left for training and one for the held-out split.
    let tested = ((test * n as f64).ceil() as usize).clamp(1, n - 2);
    let (t, rest) = order.split_at(tested);
    let mut rest = rest.to_vec();
    rest.sort_unstable();
    let (train, held) = split(rest.len(), holdout, seed);
    let mut test = t.to_vec();
    test.sort_unstable();
    (train.iter().map(|&i| rest[i]).collect(), held.iter().map(|&i| rest[i]).collect(), test)
}

/// One cluster per distinct value (an item field such as `source`, the
/// dataset an example comes from), numbered by first appearance.
pub fn cluster_by_value(values: &[String]) -> Vec<usize> {
    let mut numbers: BTreeMap<&str, usize> = BTreeMap::new();
    values
        .iter()
        .map(|v| {
            let next = numbers.len();
            *numbers.entry(v.as_str()).or_insert(next)
        })
        .collect()
}

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 1).map(str::to_lowercase)
}

/// TF-IDF vectors of `texts` (one row each), rows scaled to unit length.
/// Words are lowercase runs of letters and digits longer than one character;
/// tf is the word's share of the text, idf = ln((1 + n) / (1 + df)) + 1.
pub fn tfidf(texts: &[String]) -> Array2<f64> {
    let docs: Vec<BTreeMap<String, usize>> = texts
        .iter()
        .map(|t| {
            let mut m = BTreeMap::new();
            for w in words(t) {
                *m.entry(w).or_insert(0) += 1;
            }
            m
        })
        .collect();
    let vocab: BTreeSet<&String> = docs.iter().flat_map(|d| d.keys()).collect();
    let index: BTreeMap<&String, usize> = vocab.iter().enumerate().map(|(i, w)| (*w, i)).collect();
    let n = texts.len();
    let mut df = vec![0usize; index.len()];
    for d in &docs {
        for w in d.keys() {
            df[index[w]] += 1;
        }
    }
    let mut m = Array2::<f64>::zeros((n, index.len().max(1)));
    for (row, d) in docs.iter().enumerate() {
        let total: usize = d.values().sum();
        for (w, &count) in d {
            let j = index[w];
            let idf = ((1 + n) as f64 / (1 + df[j]) as f64).ln() + 1.0;
            m[[row, j]] = count as f64 / total.max(1) as f64 * idf;
        }
        let norm = m.row(row).dot(&m.row(row)).sqrt();
        if norm > 0.0 {
            m.row_mut(row).mapv_inplace(|v| v / norm);
        }
    }
    m
}

/// Cluster `texts` into at most `k` groups by k-means on their TF-IDF
/// vectors (k-means++ start, 10 runs, the best kept; seeded, so the same
/// seed gives the same clusters). Returns each text's cluster, numbered by
/// first appearance so the numbering does not depend on the library's.
pub fn cluster(texts: &[String], k: usize, seed: u64) -> Result<Vec<usize>, String> {
    let n = texts.len();
    if n == 0 {
        return Err("no examples to cluster".into());
    }
    let k = k.clamp(1, n);
    if k == 1 {
        return Ok(vec![0; n]);
    }
    let data = tfidf(texts);
    let dataset = DatasetBase::from(data.clone());
    let model = KMeans::params_with_rng(k, Xoshiro256Plus::seed_from_u64(seed))
        .max_n_iterations(200)
        .tolerance(1e-6)
        .fit(&dataset)
        .map_err(|e| format!("k-means: {e}"))?;
    let raw = model.predict(&data);
    let mut renumber: BTreeMap<usize, usize> = BTreeMap::new();
    Ok(raw
        .iter()
        .map(|c| {
            let next = renumber.len();
            *renumber.entry(*c).or_insert(next)
        })
        .collect())
}

/// Who put an example among an iteration's picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PickedBy {
    /// Drawn from its cluster.
    Draw,
    /// Pinned or added by a person.
    Human,
}

/// One iteration's draw: `per_cluster` examples from each cluster (a seeded
/// shuffle per iteration), after the `pinned` ones (which count towards their
/// cluster's share), never one in `excluded`. `clusters[i]` is the cluster of
/// training example `i`; returns (example index, cluster, by) in index order.
pub fn draw(
    clusters: &[usize],
    per_cluster: usize,
    pinned: &BTreeSet<usize>,
    excluded: &BTreeSet<usize>,
    seed: u64,
    iteration: u32,
) -> Vec<(usize, usize, PickedBy)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(iteration));
    let k = clusters.iter().copied().max().map_or(0, |m| m + 1);
    let mut out: Vec<(usize, usize, PickedBy)> =
        pinned.iter().filter(|&&i| i < clusters.len()).map(|&i| (i, clusters[i], PickedBy::Human)).collect();
    for c in 0..k {
        let taken = out.iter().filter(|(_, oc, _)| *oc == c).count();
        let mut members: Vec<usize> =
            (0..clusters.len()).filter(|i| clusters[*i] == c && !pinned.contains(i) && !excluded.contains(i)).collect();
        members.shuffle(&mut rng);
        out.extend(members.into_iter().take(per_cluster.saturating_sub(taken)).map(|i| (i, c, PickedBy::Draw)));
    }
    out.sort_by_key(|(i, _, _)| *i);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts() -> Vec<String> {
        [
            "the capital of france is paris",
            "paris is the capital city of france",
            "water boils at one hundred degrees celsius",
            "at sea level water boils at 100 degrees",
            "photosynthesis turns light into chemical energy",
            "plants use photosynthesis to store light energy",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn split_is_seeded_and_disjoint() {
        let (t, h) = split(10, 0.3, 1);
        assert_eq!((t.len(), h.len()), (7, 3));
        assert!(t.iter().all(|i| !h.contains(i)));
        assert_eq!(split(10, 0.3, 1), (t, h));
        assert_ne!(split(10, 0.3, 1).1, split(10, 0.3, 2).1);
        assert_eq!(split(1, 0.3, 1), (vec![0], vec![]));
    }

    #[test]
    fn the_test_split_is_apart_from_training_and_held_out() {
        let (train, held, test) = split_three(10, 0.3, 0.2, 4);
        assert_eq!(test.len(), 2);
        assert_eq!(train.len() + held.len() + test.len(), 10);
        let all: BTreeSet<usize> = train.iter().chain(&held).chain(&test).copied().collect();
        assert_eq!(all.len(), 10, "disjoint");
        assert!(!held.is_empty() && !train.is_empty());
        assert_eq!(split_three(10, 0.3, 0.2, 4), (train, held, test));
        // No test split: the two-way split as before.
        let (t, h) = split(10, 0.3, 4);
        assert_eq!(split_three(10, 0.3, 0.0, 4), (t, h, vec![]));
    }

    #[test]
    fn clusters_by_value_follow_first_appearance() {
        let v = ["nq", "hotpot", "nq", "topiocqa", "hotpot"].map(String::from);
        assert_eq!(cluster_by_value(&v), [0, 1, 0, 2, 1]);
    }

    #[test]
    fn tfidf_rows_are_unit_length() {
        let m = tfidf(&texts());
        for row in m.rows() {
            assert!((row.dot(&row) - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn similar_texts_share_a_cluster() {
        let c = cluster(&texts(), 3, 5).unwrap();
        assert_eq!(c[0], c[1]);
        assert_eq!(c[2], c[3]);
        assert_eq!(c[4], c[5]);
        assert_eq!(c.iter().collect::<BTreeSet<_>>().len(), 3);
    }

    #[test]
    fn draws_take_pins_first_and_skip_exclusions() {
        let clusters = [0, 0, 0, 1, 1, 1];
        let pinned = BTreeSet::from([1]);
        let excluded = BTreeSet::from([3]);
        let d = draw(&clusters, 2, &pinned, &excluded, 9, 1);
        assert_eq!(d.len(), 4);
        assert!(d.contains(&(1, 0, PickedBy::Human)));
        assert!(d.iter().all(|(i, _, _)| *i != 3));
        assert_eq!(d, draw(&clusters, 2, &pinned, &excluded, 9, 1));
    }
}
