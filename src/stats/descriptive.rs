//! Descriptive helpers: mean, population standard deviation, median.

use super::{StatResult, Undefined, check_finite, cmp_f64, finite};

fn check_nonempty(values: &[f64]) -> StatResult<()> {
    if values.is_empty() { Err(Undefined::new("empty input")) } else { check_finite(values) }
}

/// Arithmetic mean. Undefined for empty or non-finite input.
pub fn mean(values: &[f64]) -> StatResult<f64> {
    check_nonempty(values)?;
    finite(mean_unchecked(values))
}

/// Mean of a non-empty slice of finite values, without checks.
pub(crate) fn mean_unchecked(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Population standard deviation (divides by n, like `numpy.std` with `ddof=0`).
///
/// Undefined for empty or non-finite input; a single value gives 0.
pub fn population_stdev(values: &[f64]) -> StatResult<f64> {
    check_nonempty(values)?;
    let m = mean_unchecked(values);
    let ss: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    finite((ss / values.len() as f64).sqrt())
}

/// Median; the mean of the two middle values when the count is even.
///
/// Undefined for empty or non-finite input.
pub fn median(values: &[f64]) -> StatResult<f64> {
    check_nonempty(values)?;
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(|a, b| cmp_f64(*a, *b));
    let n = sorted.len();
    Ok(if n % 2 == 1 {
        sorted[n / 2]
    } else {
        // Halve first so two huge values do not overflow.
        sorted[n / 2 - 1] / 2.0 + sorted[n / 2] / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_stdev_median_of_known_values() {
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&v).unwrap(), 5.0);
        assert_eq!(population_stdev(&v).unwrap(), 2.0);
        assert_eq!(median(&v).unwrap(), 4.5);
        assert_eq!(median(&[3.0, 1.0, 2.0]).unwrap(), 2.0);
        assert_eq!(population_stdev(&[7.5]).unwrap(), 0.0);
    }

    #[test]
    fn empty_and_non_finite_are_undefined() {
        assert_eq!(mean(&[]).unwrap_err().reason, "empty input");
        assert_eq!(median(&[]).unwrap_err().reason, "empty input");
        assert_eq!(population_stdev(&[1.0, f64::INFINITY]).unwrap_err().reason, "non-finite input");
        assert!(median(&[f64::NAN, 1.0]).is_err());
        assert_eq!(mean(&[f64::MAX, f64::MAX]).unwrap_err().reason, "numeric overflow");
        assert_eq!(median(&[f64::MAX, f64::MAX]).unwrap(), f64::MAX);
    }
}
