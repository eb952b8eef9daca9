//! Binary detection against binary truth, as MASA's hallucination table
//! reports it: accuracy, precision, sensitivity and F1 macro-averaged over
//! the two classes, and the specificity of the positive class.
//!
//! Each item is a (truth, said) pair of booleans, `true` being the positive
//! class (the higher of the two levels). For a class c, with TP_c the items
//! of class c said to be c, FP_c the items said to be c that are not, and
//! FN_c the items of class c said to be the other class:
//!
//! - precision_c = TP_c / (TP_c + FP_c), 0 when nothing is said to be c
//!   (scikit-learn's `zero_division=0`);
//! - recall_c (sensitivity) = TP_c / (TP_c + FN_c);
//! - F1_c = 2 TP_c / (2 TP_c + FP_c + FN_c) (scikit-learn's form, equal to the
//!   harmonic mean of precision_c and recall_c where both are positive).
//!
//! The macro values are the plain means over the two classes
//! (`precision_recall_fscore_support(average="macro", labels=[neg, pos])`).
//! The specificity of the positive class is TN / (TN + FP), the recall of
//! the negative class. A macro-averaged specificity would be the mean of
//! the two classes' specificities, which are the recalls of the other
//! class: it always equals the macro sensitivity, so it is not reported.

use super::{StatResult, Undefined, check_same_len};

/// The 2×2 confusion counts of binary decisions against binary truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BinaryCounts {
    /// Positives said to be positive.
    pub tp: u64,
    /// Positives said to be negative.
    pub fn_: u64,
    /// Negatives said to be positive.
    pub fp: u64,
    /// Negatives said to be negative.
    pub tn: u64,
}

impl BinaryCounts {
    /// The counts of `said` against `truth`. Undefined when the lengths differ.
    pub fn new(truth: &[bool], said: &[bool]) -> StatResult<Self> {
        check_same_len(truth.len(), said.len())?;
        let mut c = Self::default();
        for (&t, &s) in truth.iter().zip(said) {
            c.add(t, s, 1);
        }
        Ok(c)
    }

    /// Adds `count` items of truth `t` said to be `s`.
    pub fn add(&mut self, t: bool, s: bool, count: u64) {
        match (t, s) {
            (true, true) => self.tp += count,
            (true, false) => self.fn_ += count,
            (false, true) => self.fp += count,
            (false, false) => self.tn += count,
        }
    }

    pub fn n(&self) -> u64 {
        self.tp + self.fn_ + self.fp + self.tn
    }

    /// Share of items said right (the macro mean of the two classes'
    /// one-vs-rest accuracies is the same number). Undefined without items.
    pub fn accuracy(&self) -> StatResult<f64> {
        if self.n() == 0 {
            return Err(Undefined::new("no pairs"));
        }
        Ok((self.tp + self.tn) as f64 / self.n() as f64)
    }

    /// Mean of the two classes' precisions (a class never said counts 0).
    pub fn macro_precision(&self) -> StatResult<f64> {
        self.both_classes()?;
        let p = |hit: u64, wrong: u64| if hit + wrong == 0 { 0.0 } else { hit as f64 / (hit + wrong) as f64 };
        Ok((p(self.tp, self.fp) + p(self.tn, self.fn_)) / 2.0)
    }

    /// Mean of the two classes' recalls (balanced accuracy).
    pub fn macro_sensitivity(&self) -> StatResult<f64> {
        self.both_classes()?;
        let pos = self.tp as f64 / (self.tp + self.fn_) as f64;
        let neg = self.tn as f64 / (self.tn + self.fp) as f64;
        Ok((pos + neg) / 2.0)
    }

    /// Specificity of the positive class: TN / (TN + FP).
    pub fn specificity(&self) -> StatResult<f64> {
        self.both_classes()?;
        Ok(self.tn as f64 / (self.tn + self.fp) as f64)
    }

    /// Mean of the two classes' F1 scores.
    pub fn macro_f1(&self) -> StatResult<f64> {
        self.both_classes()?;
        let f = |hit: u64, fp: u64, fn_: u64| 2.0 * hit as f64 / (2 * hit + fp + fn_) as f64;
        Ok((f(self.tp, self.fp, self.fn_) + f(self.tn, self.fn_, self.fp)) / 2.0)
    }

    /// The macro values need both classes in the truth.
    fn both_classes(&self) -> StatResult<()> {
        if self.tp + self.fn_ == 0 {
            return Err(Undefined::new("no positives"));
        }
        if self.tn + self.fp == 0 {
            return Err(Undefined::new("no negatives"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round1(v: f64) -> f64 {
        (v * 1000.0).round() / 10.0
    }

    /// MASA's Table 5 in percent, from the only confusion counts its figures
    /// allow: 10 hallucinations in 100 question summaries, 3 found, no false
    /// alarm; 3 in 50 dialogue summaries, 2 found, no false alarm.
    #[test]
    fn masa_table_5_is_reproduced() {
        let question = BinaryCounts { tp: 3, fn_: 7, fp: 0, tn: 90 };
        let got = [
            question.accuracy().unwrap(),
            question.macro_precision().unwrap(),
            question.macro_sensitivity().unwrap(),
            question.specificity().unwrap(),
            question.macro_f1().unwrap(),
        ];
        assert_eq!(got.map(round1), [93.0, 96.4, 65.0, 100.0, 71.2]);
        let dialogue = BinaryCounts { tp: 2, fn_: 1, fp: 0, tn: 47 };
        let got = [
            dialogue.accuracy().unwrap(),
            dialogue.macro_precision().unwrap(),
            dialogue.macro_sensitivity().unwrap(),
            dialogue.specificity().unwrap(),
            dialogue.macro_f1().unwrap(),
        ];
        assert_eq!(got.map(round1), [98.0, 99.0, 83.3, 100.0, 89.5]);
        // A macro specificity (mean over the two classes) is the macro sensitivity.
        let macro_specificity = (question.tn as f64 / 90.0 + question.tp as f64 / 10.0) / 2.0;
        assert_eq!(macro_specificity, question.macro_sensitivity().unwrap());
    }

    #[test]
    fn counts_and_edge_cases() {
        let c = BinaryCounts::new(&[true, true, false, false, false], &[true, false, true, false, false]).unwrap();
        assert_eq!(c, BinaryCounts { tp: 1, fn_: 1, fp: 1, tn: 2 });
        assert_eq!(c.accuracy().unwrap(), 0.6);
        assert!((c.macro_precision().unwrap() - (0.5 + 2.0 / 3.0) / 2.0).abs() < 1e-12);
        // Nothing said positive: that class's precision counts 0, its F1 is 0.
        let none = BinaryCounts { tp: 0, fn_: 2, fp: 0, tn: 3 };
        assert_eq!(none.macro_precision().unwrap(), 0.3);
        assert!((none.macro_f1().unwrap() - (0.0 + 6.0 / 8.0) / 2.0).abs() < 1e-12);
        let one_class = BinaryCounts { tp: 2, fn_: 1, fp: 0, tn: 0 };
        assert_eq!(one_class.macro_f1().unwrap_err().reason, "no negatives");
        assert_eq!(BinaryCounts { tn: 2, ..Default::default() }.specificity().unwrap_err().reason, "no positives");
        assert_eq!(BinaryCounts::default().accuracy().unwrap_err().reason, "no pairs");
        assert!(BinaryCounts::new(&[true], &[]).is_err());
    }
}
