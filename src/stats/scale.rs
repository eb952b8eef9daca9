//! Integer-scale helpers: exact accuracy, gap ratios, over- and
//! under-rating ratios of judge scores against true scores.
//!
//! Gap and over/under ratios are shares of the *misses* (items where the
//! judge's score differs from the truth), not of all items.

use super::{StatResult, Undefined, check_same_len};

/// Error profile of integer scores against the truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScaleErrors {
    /// Items compared.
    pub n: usize,
    /// Items where the judge matched the truth exactly.
    pub exact: usize,
    /// Misses by gap: `gaps[0]` off by 1, `gaps[1]` by 2, `gaps[2]` by 3,
    /// `gaps[3]` by 4 or more.
    pub gaps: [usize; 4],
    /// Misses where the judge scored above the truth.
    pub over: usize,
    /// Misses where the judge scored below the truth.
    pub under: usize,
}

impl ScaleErrors {
    /// Items where the judge missed the truth.
    pub fn misses(&self) -> usize {
        self.n - self.exact
    }

    /// Share of items scored exactly right. Undefined with no items.
    pub fn accuracy(&self) -> StatResult<f64> {
        if self.n == 0 {
            return Err(Undefined::new("no pairs"));
        }
        Ok(self.exact as f64 / self.n as f64)
    }

    /// Share of misses off by `gap` points (1, 2, 3; 4 means 4 or more).
    ///
    /// Undefined when there are no misses or `gap` is not 1–4.
    pub fn gap_ratio(&self, gap: u32) -> StatResult<f64> {
        let idx = match gap {
            1..=4 => gap as usize - 1,
            _ => return Err(Undefined::new("gap must be 1, 2, 3 or 4")),
        };
        self.of_misses(self.gaps[idx])
    }

    /// Share of misses where the judge scored too high. Undefined with no misses.
    pub fn over_rating_ratio(&self) -> StatResult<f64> {
        self.of_misses(self.over)
    }

    /// Share of misses where the judge scored too low. Undefined with no misses.
    pub fn under_rating_ratio(&self) -> StatResult<f64> {
        self.of_misses(self.under)
    }

    fn of_misses(&self, count: usize) -> StatResult<f64> {
        match self.misses() {
            0 => Err(Undefined::new("no misses")),
            m => Ok(count as f64 / m as f64),
        }
    }
}

/// Compares judge scores with true scores item by item.
///
/// Undefined only when the lengths differ.
pub fn scale_errors(truth: &[i64], judge: &[i64]) -> StatResult<ScaleErrors> {
    check_same_len(truth.len(), judge.len())?;
    let mut e = ScaleErrors { n: truth.len(), ..ScaleErrors::default() };
    for (&t, &j) in truth.iter().zip(judge) {
        let gap = t.abs_diff(j);
        if gap == 0 {
            e.exact += 1;
            continue;
        }
        e.gaps[(gap.min(4) - 1) as usize] += 1;
        if j > t {
            e.over += 1;
        } else {
            e.under += 1;
        }
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_of_misses() {
        let truth = [3, 3, 1, 5, 2, 4, 1, 5];
        let judge = [3, 4, 5, 4, 4, 4, 1, 1];
        let e = scale_errors(&truth, &judge).unwrap();
        assert_eq!(e.n, 8);
        assert_eq!(e.exact, 3);
        assert_eq!(e.misses(), 5);
        assert_eq!(e.gaps, [2, 1, 0, 2]);
        assert_eq!((e.over, e.under), (3, 2));
        assert_eq!(e.accuracy().unwrap(), 3.0 / 8.0);
        assert_eq!(e.gap_ratio(1).unwrap(), 0.4);
        assert_eq!(e.gap_ratio(4).unwrap(), 0.4);
        assert_eq!(e.over_rating_ratio().unwrap(), 0.6);
        assert_eq!(e.under_rating_ratio().unwrap(), 0.4);
        assert!(e.gap_ratio(0).is_err());
        assert!(e.gap_ratio(5).is_err());
    }

    #[test]
    fn no_misses_or_items() {
        let e = scale_errors(&[1, 2], &[1, 2]).unwrap();
        assert_eq!(e.accuracy().unwrap(), 1.0);
        assert_eq!(e.gap_ratio(1).unwrap_err().reason, "no misses");
        assert_eq!(e.over_rating_ratio().unwrap_err().reason, "no misses");
        assert_eq!(scale_errors(&[], &[]).unwrap().accuracy().unwrap_err().reason, "no pairs");
        assert!(scale_errors(&[1], &[]).is_err());
        // Extreme values do not overflow.
        let e = scale_errors(&[i64::MIN], &[i64::MAX]).unwrap();
        assert_eq!(e.gaps, [0, 0, 0, 1]);
    }
}
