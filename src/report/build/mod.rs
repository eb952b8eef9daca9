//! From item records to report rows: joining human ratings, scores per
//! stage, group and dimension, and every statistic (all computed by
//! [`crate::stats`]).

mod binary;
mod bootstrap;
mod panel;
mod raters;
mod rouge;
mod rows;
mod versus;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::human::HumanFile;
use super::load::{ItemRecord, PanelInfo};
use crate::session::run_folder::Pricing;
use crate::stats::StatResult;
use bootstrap::{Job, run_bootstraps};
use panel::PanelReport;

/// Fewest complete pairs for an agreement statistic with human ratings.
pub const MIN_PAIRS: usize = 3;

/// Which scores of a session are compared with the humans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Phase-1 scores (before any debate).
    Initial,
    /// Scores after the debate (each agent's final evaluation).
    Final,
    /// The protocol's result, before human overrides.
    Aggregate,
    /// The result with human overrides applied.
    HumanAdjusted,
    /// The agents' probability-weighted final scores (mean per group and
    /// panel), where the provider returned log-probabilities.
    Weighted,
    /// Not a judge: ROUGE-L F1 of each item's content against its
    /// `reference`, a lexical baseline (panel-wide rows only).
    RougeL,
}

impl Stage {
    /// The judges' stages (not [`Stage::RougeL`]).
    pub const ALL: [Stage; 5] = [Stage::Initial, Stage::Final, Stage::Aggregate, Stage::HumanAdjusted, Stage::Weighted];
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Initial => "initial",
            Stage::Final => "final",
            Stage::Aggregate => "aggregate",
            Stage::HumanAdjusted => "human_adjusted",
            Stage::Weighted => "weighted",
            Stage::RougeL => "rouge_l",
        }
    }
}

/// One number of a report (or the reason there is none).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub panel: String,
    /// Dimension key, `overall`, `label` for pairwise decisions; null for cost and effort.
    pub dimension: Option<String>,
    /// Group name; null for panel-wide.
    pub group: Option<String>,
    /// Agent name for one agent's own scores (its group in `group`); null
    /// for group and panel-wide rows.
    pub agent: Option<String>,
    pub stage: Option<Stage>,
    pub metric: String,
    pub value: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub n: Option<usize>,
    /// Items left out by pairwise deletion (a rating or a score missing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undefined_reason: Option<String>,
    /// For `human_ratings` rows: how many values came from each source;
    /// for pairwise rows, how many decisions were a person's (`human`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<BTreeMap<String, usize>>,
    /// Pairwise: the system (candidate id) a row is about; null otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// "Human raters" rows: the pair of raters a κ is about, or the rater
    /// held out; null for rows about all the raters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raters: Option<Vec<String>>,
    /// `agreement_difference` rows: the other panel (the row's value is the
    /// row's panel minus this one); null otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versus: Option<String>,
}

impl Row {
    pub(crate) fn new(
        panel: &str,
        dimension: Option<&str>,
        group: Option<&str>,
        stage: Option<Stage>,
        metric: &str,
    ) -> Self {
        Row {
            panel: panel.to_string(),
            dimension: dimension.map(str::to_string),
            group: group.map(str::to_string),
            agent: None,
            stage,
            metric: metric.to_string(),
            value: None,
            ci_low: None,
            ci_high: None,
            n: None,
            dropped: None,
            undefined_reason: None,
            sources: None,
            system: None,
            raters: None,
            versus: None,
        }
    }

    pub(crate) fn set(mut self, result: StatResult<f64>) -> Self {
        match result {
            Ok(v) => self.value = Some(v),
            Err(u) => self.undefined_reason = Some(u.reason),
        }
        self
    }

    pub(crate) fn for_agent(mut self, agent: Option<&str>) -> Self {
        self.agent = agent.map(str::to_string);
        self
    }

    pub(crate) fn with_n(mut self, n: usize, dropped: Option<usize>) -> Self {
        self.n = Some(n);
        self.dropped = dropped;
        self
    }
}

/// Settings of a report.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Bootstrap resamples for confidence intervals (0: none).
    pub bootstrap: usize,
    pub seed: u64,
    /// Confidence level of the intervals.
    pub level: f64,
    /// Prices for cost rows (else those recorded in run folders, else none).
    pub pricing: Option<Pricing>,
    /// Threads for reading logs and bootstrapping.
    pub threads: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        Self {
            bootstrap: 10_000,
            seed: 0,
            level: 0.95,
            pricing: None,
            threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        }
    }
}

/// What went into one panel's part of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PanelSummary {
    /// The name used in rows (made unique when two different panels share a name).
    pub name: String,
    pub protocol: String,
    /// The panel's results are pairwise decisions, not scores (a `pairwise`
    /// panel, CollabEval's pairwise mode, or sessions that recorded only
    /// pairwise decisions).
    pub pairwise: bool,
    pub keys: Vec<String>,
    pub groups: Vec<String>,
    /// The models its agents talked to (`provider/model`).
    pub models: Vec<String>,
    /// Logs read, by how they ended.
    pub logs: BTreeMap<String, usize>,
    /// Sessions used (completed and stopped, one per item).
    pub sessions: usize,
    /// Logs of an item already covered by a newer or completed log.
    pub duplicates: usize,
    /// Items with at least one human rating.
    pub rated_items: usize,
    /// Values taken from each source: `item`, `session`, `file`.
    pub human_sources: BTreeMap<String, usize>,
    /// Keys nobody rated (no correlation rows for them).
    pub unrated_keys: Vec<String>,
    /// Items rated by named raters (`human_raters`), whose value per key is
    /// the mean of their raters.
    pub rater_items: usize,
    /// The raters' names, sorted.
    pub raters: Vec<String>,
}

/// How one key's scores spread over the scale, for charts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Distribution {
    pub panel: String,
    pub key: String,
    /// Bin centres (scale levels on an integer scale).
    pub bins: Vec<f64>,
    /// Counts per bin: human ratings, then the panel-wide initial, final and aggregate scores.
    pub human: Vec<usize>,
    pub initial: Vec<usize>,
    pub final_: Vec<usize>,
    pub aggregate: Vec<usize>,
    /// A meta-evaluator reviewed the scores (SAGEval): `initial` is the
    /// evaluator's, `final_` the rectified ones.
    pub reviewed: bool,
}

/// A whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub panels: Vec<PanelSummary>,
    pub rows: Vec<Row>,
    /// Score distributions per panel and key (for `--plot`).
    pub distributions: Vec<Distribution>,
    /// Things the reader should know (unreadable logs, ratings for unknown items…).
    pub notes: Vec<String>,
    /// The interval settings used.
    pub bootstrap: usize,
    pub seed: u64,
    pub level: f64,
}

/// Build the report of `records` (from any number of panels).
pub fn build_report(records: Vec<ItemRecord>, human: Option<&HumanFile>, opts: &ReportOptions) -> Report {
    let mut by_panel: Vec<(Arc<PanelInfo>, Vec<ItemRecord>)> = Vec::new();
    for r in records {
        match by_panel.iter_mut().find(|(p, _)| Arc::ptr_eq(p, &r.panel)) {
            Some((_, list)) => list.push(r),
            None => by_panel.push((r.panel.clone(), vec![r])),
        }
    }
    by_panel.sort_by(|a, b| (&a.0.name, &a.0.keys, &a.0.groups).cmp(&(&b.0.name, &b.0.keys, &b.0.groups)));
    let mut report = Report {
        panels: Vec::new(),
        rows: Vec::new(),
        distributions: Vec::new(),
        notes: Vec::new(),
        bootstrap: opts.bootstrap,
        seed: opts.seed,
        level: opts.level,
    };
    let mut jobs: Vec<Job> = Vec::new();
    let mut used_file_ids = std::collections::HashSet::new();
    let mut name_counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut digests: Vec<versus::Digest> = Vec::new();
    for (info, records) in by_panel {
        let count = name_counts.entry(info.name.clone()).or_default();
        *count += 1;
        let name = if *count == 1 { info.name.clone() } else { format!("{} #{count}", info.name) };
        let sage_rows = super::sage::rows(&name, &records);
        let mut panel = PanelReport::new(name, info, records, human, &mut used_file_ids);
        if panel.summary.pairwise {
            // Pairwise judges give decisions, not scores: no score statistics.
            let (pairwise, judged) =
                super::pairwise::rows(&panel.summary.name, &panel.records, human, opts, &mut report.notes);
            report.rows.extend(pairwise);
            digests.push(versus::Digest::of_pairs(&panel.summary.name, judged));
            panel.effort_rows(&panel.summary.name.clone(), opts, &mut report.rows);
            report.panels.push(panel.summary);
            continue;
        }
        panel.rows(opts, &mut report.rows, &mut jobs);
        digests.push(versus::Digest::of_scores(&panel));
        report.rows.extend(sage_rows);
        report.distributions.extend(panel.distributions());
        report.panels.push(panel.summary);
    }
    if let Some(h) = human {
        let unknown = h.ratings.keys().filter(|id| !used_file_ids.contains(*id)).count();
        if unknown > 0 {
            report.notes.push(format!("{}: {unknown} rated ids match no session read", h.source));
        }
    }
    versus::versus_rows(&digests, opts, &mut report.rows, &mut jobs);
    run_bootstraps(&mut report.rows, jobs, opts);
    report
}

/// The decision of more than half of the votes, else a tie; none without votes.
pub use crate::stats::raters::majority;
