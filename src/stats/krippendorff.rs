//! Krippendorff's α for a units × raters matrix with missing values.
//!
//! Coincidence-matrix formulation: every ordered pair of values (c, k)
//! given to the same unit by two different raters adds 1/(m_u − 1) to the
//! coincidence o_ck, where m_u is the number of values the unit received;
//! units with fewer than two values are not pairable and contribute
//! nothing. With n_c = Σ_k o_ck and n = Σ_c n_c,
//!
//! α = 1 − (n − 1) · Σ_ck o_ck δ²(c, k) / Σ_ck n_c n_k δ²(c, k).
//!
//! The coincidence matrix is not stored: its weighted sum Σ o_ck δ² is
//! accumulated pair by pair within each unit, and the marginals n_c are
//! the counts of pairable values, so memory stays linear in the data even
//! for continuous scores with many distinct values.

use super::{StatResult, Undefined, cmp_f64};

/// Level of measurement, which fixes the distance δ² between two values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AlphaLevel {
    /// δ²(c, k) = (c − k)².
    Interval,
    /// δ²(c, k) = (Σ_{g from c to k} n_g − (n_c + n_k)/2)², ranks by the
    /// pairable values' own frequencies.
    Ordinal,
}

impl AlphaLevel {
    /// Metric name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Interval => "krippendorff_alpha_interval",
            Self::Ordinal => "krippendorff_alpha_ordinal",
        }
    }
}

/// Krippendorff's α with the quantities it was computed from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KrippendorffAlpha {
    /// α: 1 is perfect agreement, 0 agreement at chance level; negative
    /// values are systematic disagreement.
    pub alpha: f64,
    /// Units with at least two values.
    pub pairable_units: usize,
    /// Values in pairable units (n, the total of the coincidence matrix).
    pub pairable_values: usize,
    /// Observed disagreement D_o = Σ o_ck δ²(c, k) / n.
    pub observed_disagreement: f64,
    /// Expected disagreement D_e = Σ n_c n_k δ²(c, k) / (n (n − 1)).
    pub expected_disagreement: f64,
}

/// Krippendorff's α of `units`, each a row with one cell per rater
/// (`None`, NaN or infinite = no value; rows may differ in length).
///
/// Undefined when no unit has two values (`"no pairable units"`) or all
/// pairable values are equal (`"no variation in pairable values"`).
pub fn krippendorff_alpha<U: AsRef<[Option<f64>]>>(units: &[U], level: AlphaLevel) -> StatResult<KrippendorffAlpha> {
    let pairable: Vec<Vec<f64>> = units
        .iter()
        .map(|u| u.as_ref().iter().flatten().copied().filter(|v| v.is_finite()).collect::<Vec<f64>>())
        .filter(|vals| vals.len() >= 2)
        .collect();
    if pairable.is_empty() {
        return Err(Undefined::new("no pairable units"));
    }

    // Value domain and marginals n_c.
    let mut all: Vec<f64> = pairable.iter().flatten().copied().collect();
    all.sort_unstable_by(|a, b| cmp_f64(*a, *b));
    let n = all.len();
    let mut domain: Vec<f64> = Vec::new();
    let mut counts: Vec<f64> = Vec::new();
    for &v in &all {
        match domain.last() {
            Some(&last) if last == v => {
                if let Some(c) = counts.last_mut() {
                    *c += 1.0;
                }
            }
            _ => {
                domain.push(v);
                counts.push(1.0);
            }
        }
    }
    if domain.len() < 2 {
        return Err(Undefined::new("no variation in pairable values"));
    }
    // prefix[i] = Σ_{g < i} n_g, for ordinal distances.
    let mut prefix = Vec::with_capacity(counts.len() + 1);
    prefix.push(0.0);
    for c in &counts {
        prefix.push(prefix.last().copied().unwrap_or(0.0) + c);
    }
    let index_of = |v: f64| domain.binary_search_by(|d| cmp_f64(*d, v)).unwrap_or(0);
    let ordinal_delta2 = |i: usize, j: usize| {
        let (lo, hi) = if i <= j { (i, j) } else { (j, i) };
        let d = prefix[hi + 1] - prefix[lo] - (counts[lo] + counts[hi]) / 2.0;
        d * d
    };

    // Σ o_ck δ²(c, k), over ordered pairs of values within each unit.
    let mut observed = 0.0;
    for vals in &pairable {
        let mut unit_sum = 0.0;
        match level {
            AlphaLevel::Interval => {
                for (a, &va) in vals.iter().enumerate() {
                    for &vb in &vals[a + 1..] {
                        unit_sum += (va - vb) * (va - vb);
                    }
                }
            }
            AlphaLevel::Ordinal => {
                let idx: Vec<usize> = vals.iter().map(|&v| index_of(v)).collect();
                for (a, &ia) in idx.iter().enumerate() {
                    for &ib in &idx[a + 1..] {
                        unit_sum += ordinal_delta2(ia, ib);
                    }
                }
            }
        }
        observed += 2.0 * unit_sum / (vals.len() - 1) as f64;
    }

    // Σ n_c n_k δ²(c, k), over ordered pairs of domain values.
    let nf = n as f64;
    let expected = match level {
        AlphaLevel::Interval => {
            let m = domain.iter().zip(&counts).map(|(v, c)| v * c).sum::<f64>() / nf;
            2.0 * nf * domain.iter().zip(&counts).map(|(v, c)| c * (v - m) * (v - m)).sum::<f64>()
        }
        AlphaLevel::Ordinal => {
            let mut s = 0.0;
            for c in 0..domain.len() {
                for k in c + 1..domain.len() {
                    s += counts[c] * counts[k] * ordinal_delta2(c, k);
                }
            }
            2.0 * s
        }
    };
    if !expected.is_finite() || !observed.is_finite() {
        return Err(Undefined::new("numeric overflow"));
    }
    if expected <= 0.0 {
        return Err(Undefined::new("no variation in pairable values"));
    }
    Ok(KrippendorffAlpha {
        alpha: 1.0 - (nf - 1.0) * observed / expected,
        pairable_units: pairable.len(),
        pairable_values: n,
        observed_disagreement: observed / nf,
        expected_disagreement: expected / (nf * (nf - 1.0)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units × raters version of the four-coder example from Krippendorff's
    /// "Computing Krippendorff's Alpha-Reliability" (2011), whose published
    /// values are α_interval = 0.849 and α_ordinal = 0.815.
    fn textbook() -> Vec<Vec<Option<f64>>> {
        let rows: [[f64; 12]; 4] = [
            [1., 2., 3., 3., 2., 1., 4., 1., 2., f64::NAN, f64::NAN, f64::NAN],
            [1., 2., 3., 3., 2., 2., 4., 1., 2., 5., f64::NAN, 3.],
            [f64::NAN, 3., 3., 3., 2., 3., 4., 2., 2., 5., 1., f64::NAN],
            [1., 2., 3., 3., 2., 4., 4., 1., 2., 5., 1., f64::NAN],
        ];
        (0..12).map(|u| rows.iter().map(|r| Some(r[u]).filter(|v| !v.is_nan())).collect()).collect()
    }

    #[test]
    fn textbook_values() {
        let units = textbook();
        let interval = krippendorff_alpha(&units, AlphaLevel::Interval).unwrap();
        let ordinal = krippendorff_alpha(&units, AlphaLevel::Ordinal).unwrap();
        assert!((interval.alpha - 0.849).abs() < 5e-4, "{interval:?}");
        assert!((ordinal.alpha - 0.815).abs() < 5e-4, "{ordinal:?}");
        // Unit 12 has a single value and is not pairable.
        assert_eq!(interval.pairable_units, 11);
        assert_eq!(interval.pairable_values, 40);
    }

    #[test]
    fn perfect_agreement_is_one() {
        let units = vec![vec![Some(1.0), Some(1.0)], vec![Some(3.0), Some(3.0), None], vec![Some(2.0), Some(2.0)]];
        for level in [AlphaLevel::Interval, AlphaLevel::Ordinal] {
            assert_eq!(krippendorff_alpha(&units, level).unwrap().alpha, 1.0);
        }
    }

    #[test]
    fn undefined_cases() {
        let single: Vec<Vec<Option<f64>>> = vec![vec![Some(1.0), None], vec![None, Some(2.0)]];
        assert_eq!(krippendorff_alpha(&single, AlphaLevel::Interval).unwrap_err().reason, "no pairable units");
        let same = vec![vec![Some(4.0), Some(4.0)], vec![Some(4.0), Some(4.0)], vec![Some(1.0)]];
        assert_eq!(
            krippendorff_alpha(&same, AlphaLevel::Ordinal).unwrap_err().reason,
            "no variation in pairable values"
        );
        let empty: Vec<Vec<Option<f64>>> = vec![];
        assert!(krippendorff_alpha(&empty, AlphaLevel::Interval).is_err());
    }
}
