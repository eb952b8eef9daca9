//! ROUGE-L against the reference as a lexical baseline: where items have a
//! `reference`, each item's ROUGE-L F1 (its content against the reference)
//! is compared with the human values like a judge's scores, in panel-wide
//! rows of stage `rouge_l`.

use super::binary::{binary_levels, binary_rows};
use super::bootstrap::Job;
use super::panel::PanelReport;
use super::rows::{Target, agreement_rows};
use super::{Row, Stage};

impl PanelReport {
    /// Correlations (and, on binary human values, ROC AUC) of ROUGE-L with
    /// each rated key; none when no item has a reference.
    pub(super) fn rouge_rows(&self, panel: &str, rows: &mut Vec<Row>, jobs: &mut Vec<Job>) {
        let rouge: Vec<Option<f64>> = self.records.iter().map(|r| r.rouge_l).collect();
        if rouge.iter().all(Option::is_none) {
            return;
        }
        for (k, key) in self.info.keys.iter().enumerate() {
            let human: Vec<Option<f64>> = self.truth.iter().map(|t| t.vals[k]).collect();
            if human.iter().all(Option::is_none) {
                continue;
            }
            let at = Target { panel, key, group: None, agent: None, stage: Stage::RougeL };
            agreement_rows(&at, &human, &rouge, None, rows, jobs);
            if let Some(levels) = binary_levels(&human) {
                binary_rows(&at, &human, &rouge, levels, rows, jobs);
            }
        }
    }
}
