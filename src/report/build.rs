//! From item records to report rows: joining human ratings, scores per
//! stage, group and dimension, and every statistic (all computed by
//! [`crate::stats`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

use super::human::HumanFile;
use super::load::{ItemRecord, PanelInfo, Vals};
use crate::eval::{LogState, Pricing};
use crate::stats::{
    self, AlphaLevel, Confusion, CorrelationKind, KappaWeights, PairedCells, Preference, StatResult, Undefined,
    Weighted, complete_pairs, kappa_of_counts, krippendorff_alpha, scale_errors, tie_confusion, win_rates,
};

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
}

impl Stage {
    pub const ALL: [Stage; 5] = [Stage::Initial, Stage::Final, Stage::Aggregate, Stage::HumanAdjusted, Stage::Weighted];
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Initial => "initial",
            Stage::Final => "final",
            Stage::Aggregate => "aggregate",
            Stage::HumanAdjusted => "human_adjusted",
            Stage::Weighted => "weighted",
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

/// Human values of one item, with the source of each.
struct Truth {
    vals: Vec<Option<f64>>,
    /// Which source each value came from.
    from: Vec<Option<&'static str>>,
    label: Option<Preference>,
}

const SOURCE_ITEM: &str = "item";
const SOURCE_SESSION: &str = "session";
const SOURCE_FILE: &str = "file";

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
    for (info, records) in by_panel {
        let count = name_counts.entry(info.name.clone()).or_default();
        *count += 1;
        let name = if *count == 1 { info.name.clone() } else { format!("{} #{count}", info.name) };
        let sage_rows = super::sage::rows(&name, &records);
        let mut panel = PanelReport::new(name, info, records, human, &mut used_file_ids);
        if panel.summary.pairwise {
            // Pairwise judges give decisions, not scores: no score statistics.
            let pairwise = super::pairwise::rows(&panel.summary.name, &panel.records, human, opts, &mut report.notes);
            report.rows.extend(pairwise);
            panel.effort_rows(&panel.summary.name.clone(), opts, &mut report.rows);
            report.panels.push(panel.summary);
            continue;
        }
        panel.rows(opts, &mut report.rows, &mut jobs);
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
    run_bootstraps(&mut report.rows, jobs, opts);
    report
}

/// Rows whose intervals come from one bootstrap of paired values (human,
/// judge): every statistic is evaluated on the same resamples.
struct PairedJob {
    x: Vec<f64>,
    y: Vec<f64>,
    /// Rows of `pearson`, `spearman`, `kendall_tau_b`.
    correlations: [Option<usize>; 3],
    /// Integer categories `lo..=hi` (values rounded and clamped as in the
    /// point estimates) with the rows of the agreement rate (`accuracy` or
    /// `agreement_rate`), `cohen_kappa` and `cohen_kappa_quadratic`.
    categories: Option<(i64, i64, [Option<usize>; 3])>,
}

/// A bootstrap interval job.
enum Job {
    Paired(PairedJob),
    /// Shares of decisions coded 0 (A), 1 (B), 2 (tie), with the rows of
    /// `win_rate`, `loss_rate`, `tie_rate`.
    Shares {
        codes: Vec<f64>,
        rows: [Option<usize>; 3],
    },
}

/// A value on an integer scale: rounded to the nearest level, clamped.
fn to_level(v: f64, lo: i64, hi: i64) -> i64 {
    (v.round() as i64).clamp(lo, hi)
}

impl Job {
    /// Computes the job's intervals: (row, interval) for each of its rows.
    fn run(&self, opts: &ReportOptions) -> Vec<(usize, StatResult<stats::BootstrapCi>)> {
        match self {
            Job::Paired(job) => job.run(opts),
            Job::Shares { codes, rows } => {
                let Ok(cells) = PairedCells::new(codes, codes) else { return Vec::new() };
                let levels = cells.x_levels().to_vec();
                let share = |w: &mut Weighted<'_>, out: &mut [Option<f64>]| {
                    let n = w.n() as f64;
                    for (a, _, c) in w.cells() {
                        let code = levels[a] as usize;
                        if let Some(o) = out.get_mut(code) {
                            *o = Some(o.unwrap_or(0.0) + c as f64 / n);
                        }
                    }
                    for o in out.iter_mut() {
                        o.get_or_insert(0.0);
                    }
                };
                collect(rows, stats::bootstrap_cells(&cells, 3, share, opts.bootstrap, opts.seed, opts.level))
            }
        }
    }
}

impl PairedJob {
    fn run(&self, opts: &ReportOptions) -> Vec<(usize, StatResult<stats::BootstrapCi>)> {
        let Ok(cells) = PairedCells::new(&self.x, &self.y) else { return Vec::new() };
        let corr = self.correlations.map(|r| r.is_some());
        let categories = self.categories.map(|(lo, hi, rows)| {
            let k = (hi - lo + 1) as usize;
            let index = |v: &f64| (to_level(*v, lo, hi) - lo) as usize;
            let x_cat: Vec<usize> = cells.x_levels().iter().map(index).collect();
            let y_cat: Vec<usize> = cells.y_levels().iter().map(index).collect();
            (k, x_cat, y_cat, rows.map(|r| r.is_some()))
        });
        let mut confusion = vec![0u64; categories.as_ref().map_or(0, |c| c.0 * c.0)];
        let statistic = |w: &mut Weighted<'_>, out: &mut [Option<f64>]| {
            if corr[0] {
                out[0] = w.pearson().ok();
            }
            if corr[1] {
                out[1] = w.spearman().ok();
            }
            if corr[2] {
                out[2] = w.kendall_tau_b().ok();
            }
            if let Some((k, x_cat, y_cat, wanted)) = &categories {
                let k = *k;
                confusion.fill(0);
                for (a, b, c) in w.cells() {
                    confusion[x_cat[a] * k + y_cat[b]] += c;
                }
                if wanted[0] {
                    let agree: u64 = (0..k).map(|i| confusion[i * k + i]).sum();
                    out[3] = Some(agree as f64 / w.n() as f64);
                }
                if wanted[1] {
                    out[4] = kappa_of_counts(&confusion, k, KappaWeights::Unweighted).ok();
                }
                if wanted[2] {
                    out[5] = kappa_of_counts(&confusion, k, KappaWeights::Quadratic).ok();
                }
            }
        };
        let rows: Vec<Option<usize>> =
            self.correlations.iter().copied().chain(self.categories.map_or([None; 3], |c| c.2)).collect();
        collect(&rows, stats::bootstrap_cells(&cells, 6, statistic, opts.bootstrap, opts.seed, opts.level))
    }
}

/// Pairs each wanted row with its interval.
fn collect(
    rows: &[Option<usize>],
    cis: StatResult<Vec<StatResult<stats::BootstrapCi>>>,
) -> Vec<(usize, StatResult<stats::BootstrapCi>)> {
    let Ok(cis) = cis else { return Vec::new() };
    rows.iter().zip(cis).filter_map(|(row, ci)| Some(((*row)?, ci))).collect()
}

/// Runs the jobs on `opts.threads` threads. Each job resamples with its own
/// generator seeded from `opts.seed`, so the intervals do not depend on the
/// number of threads or on which thread runs which job.
fn run_bootstraps(rows: &mut [Row], jobs: Vec<Job>, opts: &ReportOptions) {
    if opts.bootstrap == 0 || jobs.is_empty() {
        return;
    }
    let threads = opts.threads.clamp(1, 64).min(jobs.len());
    // Jobs differ in cost (distinct cells, items), so threads take the next
    // job from a shared counter rather than fixed chunks.
    let next = AtomicUsize::new(0);
    let results: Vec<(usize, StatResult<stats::BootstrapCi>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        done.extend(job.run(opts));
                    }
                    done
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    });
    for (row, ci) in results {
        if let Ok(ci) = ci {
            rows[row].ci_low = Some(ci.low);
            rows[row].ci_high = Some(ci.high);
        }
    }
}

/// One panel's sessions, joined with human ratings.
struct PanelReport {
    info: Arc<PanelInfo>,
    records: Vec<ItemRecord>,
    truth: Vec<Truth>,
    summary: PanelSummary,
}

fn status_rank(s: LogState) -> u8 {
    match s {
        LogState::Completed => 0,
        LogState::Stopped => 1,
        LogState::Failed => 2,
        LogState::Incomplete => 3,
    }
}

impl PanelReport {
    fn new(
        name: String,
        info: Arc<PanelInfo>,
        mut records: Vec<ItemRecord>,
        human: Option<&HumanFile>,
        used_file_ids: &mut std::collections::HashSet<String>,
    ) -> Self {
        let mut logs: BTreeMap<String, usize> = BTreeMap::new();
        for r in &records {
            *logs.entry(r.status.as_str().to_string()).or_default() += 1;
        }
        records.retain(|r| matches!(r.status, LogState::Completed | LogState::Stopped));
        // One session per item: completed before stopped, then the newest.
        records.sort_by(|a, b| {
            a.item_id
                .cmp(&b.item_id)
                .then(status_rank(a.status).cmp(&status_rank(b.status)))
                .then(b.started.cmp(&a.started))
                .then(a.source.cmp(&b.source))
        });
        let before = records.len();
        records.dedup_by(|later, first| later.item_id == first.item_id);
        let duplicates = before - records.len();

        let mut sources: BTreeMap<String, usize> = BTreeMap::new();
        let mut truth = Vec::with_capacity(records.len());
        let mut per_key_rated = vec![0usize; info.keys.len()];
        let mut rated_items = 0;
        for r in &records {
            let mut vals: Vec<Option<f64>> = vec![None; info.keys.len()];
            let mut from: Vec<Option<&'static str>> = vec![None; info.keys.len()];
            for (source, layer) in [(SOURCE_ITEM, &r.human_item), (SOURCE_SESSION, &r.human_session)] {
                for (k, v) in layer.iter().enumerate() {
                    if v.is_some() {
                        vals[k] = *v;
                        from[k] = Some(source);
                    }
                }
            }
            let mut label = None;
            if let Some(entry) = human.and_then(|h| h.ratings.get(&r.item_id)) {
                used_file_ids.insert(r.item_id.clone());
                for (k, v) in &entry.scores {
                    if let Some(i) = info.key_index(k) {
                        vals[i] = Some(*v);
                        from[i] = Some(SOURCE_FILE);
                    }
                }
                label = entry.label;
            }
            for (k, f) in from.iter().enumerate() {
                if let Some(f) = f {
                    *sources.entry((*f).to_string()).or_default() += 1;
                    per_key_rated[k] += 1;
                }
            }
            if from.iter().any(Option::is_some) || label.is_some() {
                rated_items += 1;
            }
            truth.push(Truth { vals, from, label });
        }
        let unrated_keys =
            info.keys.iter().zip(&per_key_rated).filter(|(_, n)| **n == 0).map(|(k, _)| k.clone()).collect();
        let summary = PanelSummary {
            name,
            protocol: info.protocol.clone(),
            pairwise: info.pairwise
                || (!records.is_empty()
                    && records.iter().all(|r| r.pairwise.as_ref().is_some_and(|p| !p.pairs.is_empty()))),
            keys: info.keys.clone(),
            groups: info.groups.clone(),
            logs,
            sessions: records.len(),
            duplicates,
            rated_items,
            human_sources: sources,
            unrated_keys,
        };
        PanelReport { info, records, truth, summary }
    }

    /// A stage's value of key `k` for one session: for a group (or all agents) the mean
    /// of the agents' scores at initial/final, else the protocol's result.
    fn stage_value(&self, r: &ItemRecord, group: Option<usize>, stage: Stage, k: usize) -> Option<f64> {
        let from_agents = |pick: fn(&super::load::AgentScores) -> Option<&Vals>| {
            let vals: Vec<f64> = r
                .agents
                .iter()
                .filter(|a| group.is_none_or(|g| a.group == g))
                .filter_map(|a| pick(a).and_then(|v| v[k]))
                .collect();
            (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
        };
        match stage {
            Stage::Initial => from_agents(|a| a.initial.as_ref()),
            Stage::Final => from_agents(|a| a.final_.as_ref()),
            Stage::Aggregate => match group {
                Some(g) => r.group_aggregate.get(g)?.as_ref()?[k],
                None => r.aggregate.as_ref()?[k],
            },
            Stage::HumanAdjusted => match group {
                Some(g) => r.group_adjusted.get(g)?.as_ref()?[k],
                None => r.adjusted.as_ref()?[k],
            },
            Stage::Weighted => from_agents(|a| a.weighted.as_ref()),
        }
    }

    fn distributions(&self) -> Vec<Distribution> {
        let (lo, hi) = self.info.scale.unwrap_or((1.0, 5.0));
        let bins: Vec<f64> = match self.info.integer_scale() {
            Some((lo, hi)) => (lo..=hi).map(|v| v as f64).collect(),
            None => {
                let w = (hi - lo) / 10.0;
                (0..10).map(|i| lo + w * (i as f64 + 0.5)).collect()
            }
        };
        let bin_of = |v: f64| -> usize {
            let (first, last) = (bins[0], bins[bins.len() - 1]);
            if bins.len() < 2 || last <= first {
                return 0;
            }
            let step = (last - first) / (bins.len() - 1) as f64;
            (((v - first) / step).round().max(0.0) as usize).min(bins.len() - 1)
        };
        let count = |vals: &mut dyn Iterator<Item = Option<f64>>| {
            let mut c = vec![0usize; bins.len()];
            for v in vals.flatten() {
                c[bin_of(v)] += 1;
            }
            c
        };
        (0..self.info.keys.len())
            .map(|k| Distribution {
                panel: self.summary.name.clone(),
                key: self.info.keys[k].clone(),
                bins: bins.clone(),
                human: count(&mut self.truth.iter().map(|t| t.vals[k])),
                initial: count(&mut self.records.iter().map(|r| self.stage_value(r, None, Stage::Initial, k))),
                final_: count(&mut self.records.iter().map(|r| self.stage_value(r, None, Stage::Final, k))),
                aggregate: count(&mut self.records.iter().map(|r| self.stage_value(r, None, Stage::Aggregate, k))),
            })
            .collect()
    }

    fn groups(&self) -> Vec<Option<usize>> {
        std::iter::once(None).chain((0..self.info.groups.len()).map(Some)).collect()
    }

    fn group_name(&self, g: Option<usize>) -> Option<&str> {
        g.map(|g| self.info.groups[g].as_str())
    }

    fn rows(&mut self, opts: &ReportOptions, rows: &mut Vec<Row>, jobs: &mut Vec<Job>) {
        let panel = self.summary.name.clone();
        let n_items = self.records.len();
        // Human ratings per key.
        for (k, key) in self.info.keys.iter().enumerate() {
            let mut sources: BTreeMap<String, usize> = BTreeMap::new();
            let mut rated = 0;
            for source in self.truth.iter().filter_map(|t| t.from[k]) {
                rated += 1;
                *sources.entry(source.to_string()).or_default() += 1;
            }
            let mut row = Row::new(&panel, Some(key), None, None, "human_ratings").with_n(n_items, None);
            row.value = Some(rated as f64);
            row.sources = Some(sources);
            rows.push(row);
        }

        let integer = self.info.integer_scale();
        let agents = self.agents();
        // The weighted stage only where some judge has weighted scores.
        let weighted = self.records.iter().any(|r| r.agents.iter().any(|a| a.weighted.is_some()));
        let stages: Vec<Stage> = Stage::ALL.into_iter().filter(|s| *s != Stage::Weighted || weighted).collect();
        let agent_stages: Vec<Stage> = [Stage::Initial, Stage::Final, Stage::Weighted]
            .into_iter()
            .filter(|s| *s != Stage::Weighted || weighted)
            .collect();
        for (k, key) in self.info.keys.clone().iter().enumerate() {
            let human: Vec<Option<f64>> = self.truth.iter().map(|t| t.vals[k]).collect();
            if human.iter().all(Option::is_none) {
                continue;
            }
            for g in self.groups() {
                let group = self.group_name(g).map(str::to_string);
                for &stage in &stages {
                    let judge: Vec<Option<f64>> =
                        self.records.iter().map(|r| self.stage_value(r, g, stage, k)).collect();
                    let at = Target { panel: &panel, key, group: group.as_deref(), agent: None, stage };
                    agreement_rows(&at, &human, &judge, integer, rows, jobs);
                }
            }
            // Each agent's own scores.
            for (name, g) in &agents {
                for &stage in &agent_stages {
                    let judge: Vec<Option<f64>> = self
                        .records
                        .iter()
                        .map(|r| {
                            let a = r.agents.iter().find(|a| a.name == *name)?;
                            let vals = match stage {
                                Stage::Initial => a.initial.as_ref(),
                                Stage::Weighted => a.weighted.as_ref(),
                                _ => a.final_.as_ref(),
                            };
                            vals?[k]
                        })
                        .collect();
                    let group = self.info.groups.get(*g).map(String::as_str);
                    let at = Target { panel: &panel, key, group, agent: Some(name), stage };
                    agreement_rows(&at, &human, &judge, None, rows, jobs);
                }
            }
        }

        // Agreement among the agents of each group (and of the whole panel).
        for (k, key) in self.info.keys.iter().enumerate() {
            for g in self.groups() {
                let agents: Vec<usize> = match self.records.first() {
                    Some(r) => (0..r.agents.len()).filter(|&a| g.is_none_or(|g| r.agents[a].group == g)).collect(),
                    None => Vec::new(),
                };
                for stage in [Stage::Initial, Stage::Final] {
                    let units: Vec<Vec<Option<f64>>> = self
                        .records
                        .iter()
                        .map(|r| {
                            r.agents
                                .iter()
                                .filter(|a| g.is_none_or(|g| a.group == g))
                                .map(|a| match stage {
                                    Stage::Initial => a.initial.as_ref().and_then(|v| v[k]),
                                    _ => a.final_.as_ref().and_then(|v| v[k]),
                                })
                                .collect()
                        })
                        .collect();
                    for level in [AlphaLevel::Interval, AlphaLevel::Ordinal] {
                        let mut row = Row::new(&panel, Some(key), self.group_name(g), Some(stage), level.name());
                        if agents.len() < 2 && g.is_some() {
                            row.undefined_reason = Some("fewer than two agents in the group".into());
                            row.n = Some(0);
                        } else {
                            match krippendorff_alpha(&units, level) {
                                Ok(a) => {
                                    row.value = Some(a.alpha);
                                    row.n = Some(a.pairable_units);
                                    row.dropped = Some(units.len() - a.pairable_units);
                                }
                                Err(u) => {
                                    row.undefined_reason = Some(u.reason);
                                    row.n = Some(0);
                                }
                            }
                        }
                        rows.push(row);
                    }
                }
            }
        }

        self.label_rows(&panel, rows, jobs);
        self.effort_rows(&panel, opts, rows);
    }

    /// The agents of the panel's sessions with their group index, in order of first appearance.
    fn agents(&self) -> Vec<(String, usize)> {
        let mut seen: Vec<(String, usize)> = Vec::new();
        for r in &self.records {
            for a in &r.agents {
                if !seen.iter().any(|(n, _)| *n == a.name) {
                    seen.push((a.name.clone(), a.group));
                }
            }
        }
        seen
    }

    /// Pairwise decisions (`A`, `B`, `tie`) when agents give them.
    fn label_rows(&self, panel: &str, rows: &mut Vec<Row>, jobs: &mut Vec<Job>) {
        let any =
            self.records.iter().any(|r| r.agents.iter().any(|a| a.initial_label.is_some() || a.final_label.is_some()));
        if !any {
            return;
        }
        let human: Vec<Option<Preference>> = self.truth.iter().map(|t| t.label).collect();
        for g in self.groups() {
            let group = self.group_name(g);
            for stage in [Stage::Initial, Stage::Final] {
                let judge: Vec<Option<Preference>> = self
                    .records
                    .iter()
                    .map(|r| {
                        let votes: Vec<Preference> = r
                            .agents
                            .iter()
                            .filter(|a| g.is_none_or(|g| a.group == g))
                            .filter_map(|a| if stage == Stage::Initial { a.initial_label } else { a.final_label })
                            .collect();
                        majority(&votes)
                    })
                    .collect();
                let decided: Vec<Preference> = judge.iter().flatten().copied().collect();
                let rates = win_rates(&decided);
                let n = rates.n();
                let dropped = Some(judge.len() - n);
                let mut push = |metric: &str, value: StatResult<f64>| -> Option<usize> {
                    let defined = value.is_ok();
                    rows.push(Row::new(panel, Some("label"), group, Some(stage), metric).set(value).with_n(n, dropped));
                    defined.then(|| rows.len() - 1)
                };
                let shares = [
                    push("win_rate", rates.a_rate()),
                    push("loss_rate", rates.b_rate()),
                    push("tie_rate", rates.tie_rate()),
                ];
                push("win_rate_excluding_ties", rates.a_rate_excluding_ties());
                if shares.iter().any(Option::is_some) {
                    jobs.push(Job::Shares {
                        codes: decided.iter().map(|&p| preference_code(p)).collect(),
                        rows: shares,
                    });
                }

                let (truth, said): (Vec<Preference>, Vec<Preference>) =
                    human.iter().zip(&judge).filter_map(|(h, j)| Some(((*h)?, (*j)?))).unzip();
                if human.iter().all(Option::is_none) {
                    continue;
                }
                let n = truth.len();
                let dropped = Some(judge.len() - n);
                let few = |v: StatResult<f64>| {
                    if n < MIN_PAIRS { Err(Undefined::new(format!("n < {MIN_PAIRS}"))) } else { v }
                };
                let order = [Preference::A, Preference::Tie, Preference::B];
                let confusion = Confusion::with_labels(&truth, &said, &order);
                let tc = tie_confusion(&truth, &said);
                let mut push = |metric: &str, value: StatResult<f64>| -> Option<usize> {
                    let value = few(value);
                    let defined = value.is_ok();
                    rows.push(Row::new(panel, Some("label"), group, Some(stage), metric).set(value).with_n(n, dropped));
                    defined.then(|| rows.len() - 1)
                };
                let agreement = [
                    push("agreement_rate", stats::agreement_rate(&truth, &said)),
                    push("cohen_kappa", confusion.clone().and_then(|c| c.kappa(KappaWeights::Unweighted))),
                    push("cohen_kappa_quadratic", confusion.and_then(|c| c.kappa(KappaWeights::Quadratic))),
                ];
                push("tie_confusion_winner_as_tie", tc.clone().and_then(|t| t.winner_as_tie_rate()));
                push("tie_confusion_tie_as_winner", tc.and_then(|t| t.tie_as_winner_rate()));
                if agreement.iter().any(Option::is_some) {
                    // Categories in the order A, tie, B, as for the point estimates.
                    let rank = |p: &Preference| match p {
                        Preference::A => 0.0,
                        Preference::Tie => 1.0,
                        Preference::B => 2.0,
                    };
                    jobs.push(Job::Paired(PairedJob {
                        x: truth.iter().map(rank).collect(),
                        y: said.iter().map(rank).collect(),
                        correlations: [None; 3],
                        categories: Some((0, 2, agreement)),
                    }));
                }
            }
        }
    }

    fn effort_rows(&self, panel: &str, opts: &ReportOptions, rows: &mut Vec<Row>) {
        let n = self.records.len();
        let mean = |f: &dyn Fn(&ItemRecord) -> Option<f64>| -> (StatResult<f64>, usize) {
            let vals: Vec<f64> = self.records.iter().filter_map(f).collect();
            (stats::mean(&vals).map_err(|_| Undefined::new("no sessions with this value")), vals.len())
        };
        let mut push = |group: Option<&str>, metric: &str, (value, count): (StatResult<f64>, usize)| {
            rows.push(Row::new(panel, None, group, None, metric).set(value).with_n(count, None));
        };
        push(None, "sessions", (Ok(n as f64), n));
        push(None, "turns_per_item", mean(&|r| Some(f64::from(r.effort.turns))));
        push(None, "debate_turns_per_item", mean(&|r| Some(f64::from(r.effort.debate_turns))));
        let rounds = mean(&|r| r.effort.rounds);
        let rounds = if rounds.1 == 0 { (Err(Undefined::new("the protocol recorded no rounds")), 0) } else { rounds };
        push(None, "rounds_per_item", rounds);
        push(None, "calls_per_item", mean(&|r| Some(r.effort.calls as f64)));
        push(None, "input_tokens_per_item", mean(&|r| Some(r.effort.usage.input_tokens as f64)));
        push(None, "output_tokens_per_item", mean(&|r| Some(r.effort.usage.output_tokens as f64)));
        push(None, "tokens_per_item", mean(&|r| Some(r.effort.usage.total() as f64)));
        let total: u64 = self.records.iter().map(|r| r.effort.usage.total()).sum();
        push(None, "tokens_total", (Ok(total as f64), n));
        push(None, "duration_ms_per_item", mean(&|r| r.effort.duration_ms.map(|d| d as f64)));
        let overrides: u32 = self.records.iter().map(|r| r.effort.overrides).sum();
        push(None, "overrides_total", (Ok(f64::from(overrides)), n));
        let (per, all) = match opts.pricing {
            Some(p) => (
                mean(&|r| Some(p.cost_of(&r.effort.usage))),
                (Ok(self.records.iter().map(|r| p.cost_of(&r.effort.usage)).sum::<f64>()), n),
            ),
            None => {
                let none = || (Err(Undefined::new("no prices given (--price-input, --price-output)")), n);
                (none(), none())
            }
        };
        push(None, "cost_per_item", per);
        push(None, "cost_total", all);
        for (g, name) in self.info.groups.iter().enumerate() {
            push(Some(name), "turns_per_item", mean(&|r| r.effort.group_turns.get(g).map(|&t| f64::from(t))));
            push(Some(name), "tokens_per_item", mean(&|r| r.effort.group_tokens.get(g).map(|&t| t as f64)));
        }
    }
}

/// Where a set of agreement rows belongs.
struct Target<'a> {
    panel: &'a str,
    key: &'a str,
    group: Option<&'a str>,
    agent: Option<&'a str>,
    stage: Stage,
}

impl Target<'_> {
    fn row(&self, metric: &str) -> Row {
        Row::new(self.panel, Some(self.key), self.group, Some(self.stage), metric).for_agent(self.agent)
    }
}

/// Correlations with the humans and, on an integer scale, accuracy, gap
/// ratios and κ; their intervals are queued as one job.
fn agreement_rows(
    at: &Target<'_>,
    human: &[Option<f64>],
    judge: &[Option<f64>],
    integer: Option<(i64, i64)>,
    rows: &mut Vec<Row>,
    jobs: &mut Vec<Job>,
) {
    let pairs = match complete_pairs(human, judge) {
        Ok(p) => p,
        Err(_) => return,
    };
    let n = pairs.n();
    let dropped = Some(pairs.dropped);
    let too_few = |n: usize| -> StatResult<()> {
        if n < MIN_PAIRS { Err(Undefined::new(format!("n < {MIN_PAIRS}"))) } else { Ok(()) }
    };
    let (x, y) = (pairs.x, pairs.y);
    let mut job = PairedJob { x: Vec::new(), y: Vec::new(), correlations: [None; 3], categories: None };
    for (slot, kind) in job.correlations.iter_mut().zip(CorrelationKind::ALL) {
        let value = too_few(n).and_then(|()| kind.compute(&x, &y)).map(|c| c.value);
        if value.is_ok() {
            *slot = Some(rows.len());
        }
        rows.push(at.row(kind.name()).set(value).with_n(n, dropped));
    }
    if let Some((lo, hi)) = integer {
        let truth: Vec<i64> = x.iter().map(|&v| to_level(v, lo, hi)).collect();
        let said: Vec<i64> = y.iter().map(|&v| to_level(v, lo, hi)).collect();
        let errors = too_few(n).and_then(|()| scale_errors(&truth, &said));
        let from_errors = |f: &dyn Fn(&stats::ScaleErrors) -> StatResult<f64>| errors.clone().and_then(|e| f(&e));
        let mut push = |metric: &str, value: StatResult<f64>| -> Option<usize> {
            let defined = value.is_ok();
            rows.push(at.row(metric).set(value).with_n(n, dropped));
            defined.then(|| rows.len() - 1)
        };
        let accuracy = push("accuracy", from_errors(&|e| e.accuracy()));
        for gap in 1..=4u32 {
            push(&format!("gap_ratio_{gap}"), from_errors(&|e| e.gap_ratio(gap)));
        }
        push("over_rating_ratio", from_errors(&|e| e.over_rating_ratio()));
        push("under_rating_ratio", from_errors(&|e| e.under_rating_ratio()));
        let levels: Vec<i64> = (lo..=hi).collect();
        let confusion = too_few(n).and_then(|()| Confusion::with_labels(&truth, &said, &levels));
        let kappa = push("cohen_kappa", confusion.clone().and_then(|c| c.kappa(KappaWeights::Unweighted)));
        let quadratic = push("cohen_kappa_quadratic", confusion.and_then(|c| c.kappa(KappaWeights::Quadratic)));
        job.categories = Some((lo, hi, [accuracy, kappa, quadratic]));
    }
    let wanted = job.correlations.iter().chain(job.categories.iter().flat_map(|c| c.2.iter())).any(Option::is_some);
    if wanted {
        job.x = x;
        job.y = y;
        jobs.push(Job::Paired(job));
    }
}

/// Code of a decision in [`Job::Shares`]: 0 for A, 1 for B, 2 for a tie.
fn preference_code(p: Preference) -> f64 {
    match p {
        Preference::A => 0.0,
        Preference::B => 1.0,
        Preference::Tie => 2.0,
    }
}

/// The decision of more than half of the votes, else a tie; none without votes.
pub use crate::stats::raters::majority;
