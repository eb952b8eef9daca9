//! Several human raters on scores: each item's plurality score, quadratic-
//! weighted Cohen's κ between two raters, and leave-one-rater-out
//! correlations of the raters and of a judge.
//!
//! Ratings are an items × raters matrix: `ratings[i][r]` is rater r's score
//! of item i, `None` when r did not rate it (rows may be shorter than the
//! number of raters). A missing score is left out, never filled in.

use super::{Confusion, CorrelationKind, KappaWeights, StatResult, Undefined, check_same_len};

/// The score given most often; when several scores share the most votes,
/// the median of all the scores. None without scores. (A group's majority
/// result, `engine::vote`, is this too.)
pub fn plurality_score(values: &[f64]) -> Option<f64> {
    let same = |a: f64, b: f64| (a - b).abs() < 1e-9;
    let votes = |v: f64| values.iter().filter(|w| same(**w, v)).count();
    let most = values.iter().map(|v| votes(*v)).max()?;
    let mut tops: Vec<f64> = values.iter().copied().filter(|v| votes(*v) == most).collect();
    tops.sort_by(f64::total_cmp);
    tops.dedup_by(|a, b| same(*a, *b));
    if tops.len() == 1 {
        return Some(tops[0]);
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    Some(if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 })
}

/// Per item, the mean of the scores it received (`None` without any).
pub fn item_means(ratings: &[Vec<Option<f64>>]) -> Vec<Option<f64>> {
    ratings
        .iter()
        .map(|row| {
            let vals: Vec<f64> = row.iter().flatten().copied().collect();
            (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
        })
        .collect()
}

/// Per item, the [`plurality_score`] of the scores it received.
pub fn item_pluralities(ratings: &[Vec<Option<f64>>]) -> Vec<Option<f64>> {
    ratings.iter().map(|row| plurality_score(&row.iter().flatten().copied().collect::<Vec<_>>())).collect()
}

/// Quadratic-weighted κ of two raters over the items both rated.
#[derive(Debug, Clone, PartialEq)]
pub struct PairKappa {
    /// Items both raters rated.
    pub n: usize,
    pub kappa: StatResult<f64>,
}

/// Quadratic-weighted Cohen's κ of raters `a` and `b` (one score per item,
/// `None` = not rated) over the items both rated. The categories are
/// `levels` when given (a whole scale, unused levels included), else the
/// scores either rater gave.
///
/// Undefined with fewer than `min_items` shared items, when a score is not a
/// whole number, or as [`Confusion::kappa`] is.
pub fn pair_kappa_quadratic(
    a: &[Option<f64>],
    b: &[Option<f64>],
    levels: Option<&[i64]>,
    min_items: usize,
) -> StatResult<PairKappa> {
    check_same_len(a.len(), b.len())?;
    let shared: Vec<(f64, f64)> = a.iter().zip(b).filter_map(|(x, y)| Some(((*x)?, (*y)?))).collect();
    let n = shared.len();
    let kappa = (|| {
        if n < min_items {
            return Err(Undefined::new(format!("fewer than {min_items} items rated by both")));
        }
        if shared.iter().any(|(x, y)| x.fract() != 0.0 || y.fract() != 0.0 || !x.is_finite() || !y.is_finite()) {
            return Err(Undefined::new("scores are not whole numbers"));
        }
        let (x, y): (Vec<i64>, Vec<i64>) = shared.iter().map(|(x, y)| (*x as i64, *y as i64)).unzip();
        let confusion = match levels {
            Some(levels) => Confusion::with_labels(&x, &y, levels)?,
            None => Confusion::new(&x, &y)?,
        };
        confusion.kappa(KappaWeights::Quadratic)
    })();
    Ok(PairKappa { n, kappa })
}

/// One held-out rater: that rater, and the judge, each correlated with the
/// mean of the other raters over the same items.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldOut {
    /// Items the rater rated, the judge scored and another rater rated.
    pub n: usize,
    /// The held-out rater against the others' mean.
    pub rater: StatResult<f64>,
    /// The judge against the others' mean.
    pub judge: StatResult<f64>,
}

/// Leave-one-rater-out correlations, one [`HeldOut`] per rater (column of
/// `ratings`), and their means.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaveOneRaterOut {
    pub held_out: Vec<HeldOut>,
}

impl LeaveOneRaterOut {
    /// Held-out raters whose two correlations are both defined: the ones
    /// the means average over.
    pub fn averaged(&self) -> usize {
        self.held_out.iter().filter(|h| h.rater.is_ok() && h.judge.is_ok()).count()
    }
    /// Mean over [`averaged`](Self::averaged) raters of the held-out rater's correlation.
    pub fn rater_mean(&self) -> StatResult<f64> {
        self.mean_of(|h| &h.rater)
    }
    /// Mean over the same raters of the judge's correlation.
    pub fn judge_mean(&self) -> StatResult<f64> {
        self.mean_of(|h| &h.judge)
    }
    fn mean_of(&self, pick: impl Fn(&HeldOut) -> &StatResult<f64>) -> StatResult<f64> {
        let vals: Vec<f64> = self
            .held_out
            .iter()
            .filter(|h| h.rater.is_ok() && h.judge.is_ok())
            .filter_map(|h| pick(h).as_ref().ok().copied())
            .collect();
        if vals.is_empty() {
            return Err(Undefined::new("no held-out rater has both correlations"));
        }
        Ok(vals.iter().sum::<f64>() / vals.len() as f64)
    }
}

/// For each rater r: the items r rated that the judge scored and at least
/// one other rater rated; on those items, the correlation (`kind`) of r's
/// scores with the mean of the other raters' scores, and of the judge's
/// scores with the same means. A correlation over fewer than `min_items`
/// items is undefined.
pub fn leave_one_rater_out_scores(
    ratings: &[Vec<Option<f64>>],
    judge: &[Option<f64>],
    kind: CorrelationKind,
    min_items: usize,
) -> StatResult<LeaveOneRaterOut> {
    check_same_len(ratings.len(), judge.len())?;
    let raters = ratings.iter().map(Vec::len).max().unwrap_or(0);
    let mut held_out = Vec::with_capacity(raters);
    for r in 0..raters {
        let (mut own, mut others, mut said) = (Vec::new(), Vec::new(), Vec::new());
        for (row, j) in ratings.iter().zip(judge) {
            let (Some(x), Some(j)) = (row.get(r).copied().flatten(), *j) else { continue };
            let rest: Vec<f64> = row.iter().enumerate().filter(|(i, _)| *i != r).filter_map(|(_, v)| *v).collect();
            if rest.is_empty() {
                continue;
            }
            own.push(x);
            others.push(rest.iter().sum::<f64>() / rest.len() as f64);
            said.push(j);
        }
        let n = own.len();
        let corr = |x: &[f64]| -> StatResult<f64> {
            if n < min_items {
                return Err(Undefined::new(format!("n < {min_items}")));
            }
            kind.compute(x, &others).map(|c| c.value)
        };
        held_out.push(HeldOut { n, rater: corr(&own), judge: corr(&said) });
    }
    Ok(LeaveOneRaterOut { held_out })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurality_takes_the_most_given_score_else_the_median() {
        assert_eq!(plurality_score(&[]), None);
        assert_eq!(plurality_score(&[5.0, 2.0, 2.0]), Some(2.0));
        assert_eq!(plurality_score(&[3.0, 3.0, 4.0, 5.0]), Some(3.0), "a plurality, not a majority");
        assert_eq!(plurality_score(&[2.0, 2.0, 5.0, 5.0]), Some(3.5), "a tie: the median");
        assert_eq!(plurality_score(&[1.0, 4.0, 5.0]), Some(4.0), "nobody agrees: the median");
    }

    #[test]
    fn pair_kappa_uses_only_shared_items() {
        // Shared items: (1,1), (2,3), (3,3); levels 1..3, quadratic weights
        // w = 0, 1, 4 for 0, 1, 2 apart. Observed Σw = 1 (the (2,3) pair).
        // Marginals a: 1,1,1; b: 1,0,2; expected count e_ij = a_i b_j / 3;
        // Σ w e = (1/3)[1·(0·1 + 1·0 + 4·2) + 1·(1·1 + 0 + 1·2) + 1·(4·1 + 1·0 + 0)]
        //       = (1/3)(8 + 3 + 4) = 5; κ = 1 − 1/5 = 0.8.
        let a = [Some(1.0), Some(2.0), Some(3.0), None, Some(2.0)];
        let b = [Some(1.0), Some(3.0), Some(3.0), Some(1.0), None];
        let k = pair_kappa_quadratic(&a, &b, None, 3).unwrap();
        assert_eq!(k.n, 3);
        assert!((k.kappa.unwrap() - 0.8).abs() < 1e-12);
        let few = pair_kappa_quadratic(&a, &b, None, 4).unwrap();
        assert_eq!(few.kappa.unwrap_err().reason, "fewer than 4 items rated by both");
        let half = pair_kappa_quadratic(&[Some(1.5)], &[Some(2.0)], None, 1).unwrap();
        assert_eq!(half.kappa.unwrap_err().reason, "scores are not whole numbers");
    }

    #[test]
    fn leave_one_out_correlates_with_the_others_mean() {
        // Three raters on four items; rater 2 skipped item 3.
        let ratings = vec![
            vec![Some(1.0), Some(1.0), Some(2.0)],
            vec![Some(2.0), Some(3.0), Some(2.0)],
            vec![Some(3.0), Some(3.0), Some(5.0)],
            vec![Some(5.0), Some(4.0), None],
        ];
        let judge = [Some(1.0), Some(2.0), Some(4.0), None];
        let loo = leave_one_rater_out_scores(&ratings, &judge, CorrelationKind::Pearson, 3).unwrap();
        // Rater 0 on items 0..3 (item 3 has no judge score): own 1, 2, 3;
        // others' means 1.5, 2.5, 4: r(own, others) = pearson([1,2,3], [1.5,2.5,4]).
        let expect = crate::stats::pearson(&[1.0, 2.0, 3.0], &[1.5, 2.5, 4.0]).unwrap().value;
        assert_eq!(loo.held_out[0].n, 3);
        assert!((loo.held_out[0].rater.clone().unwrap() - expect).abs() < 1e-12);
        // The judge, 1, 2, 4, against the same means.
        let judge0 = crate::stats::pearson(&[1.0, 2.0, 4.0], &[1.5, 2.5, 4.0]).unwrap().value;
        assert!((loo.held_out[0].judge.clone().unwrap() - judge0).abs() < 1e-12);
        assert_eq!(loo.held_out[2].n, 3);
        assert_eq!(loo.averaged(), 3);
        let mean: f64 = loo.held_out.iter().map(|h| h.rater.clone().unwrap()).sum::<f64>() / 3.0;
        assert!((loo.rater_mean().unwrap() - mean).abs() < 1e-12);
        let none = leave_one_rater_out_scores(&ratings, &judge, CorrelationKind::Pearson, 4).unwrap();
        assert_eq!(none.held_out[0].rater.clone().unwrap_err().reason, "n < 4");
        assert!(none.judge_mean().is_err());
    }
}
