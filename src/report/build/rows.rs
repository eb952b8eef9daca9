//! A panel's rows: human ratings per key, agreement of every stage, group
//! and agent with the humans, agreement among the agents, pairwise decisions
//! and effort.

use std::collections::BTreeMap;

use super::binary::{binary_levels, binary_rows};
use super::bootstrap::{Job, PairedJob, preference_code, to_level};
use super::panel::PanelReport;
use super::{MIN_PAIRS, ReportOptions, Row, Stage, majority};
use crate::report::load::ItemRecord;
use crate::stats::{
    self, AlphaLevel, Confusion, CorrelationKind, KappaWeights, Preference, StatResult, Undefined, complete_pairs,
    krippendorff_alpha, scale_errors, tie_confusion, win_rates,
};

impl PanelReport {
    pub(super) fn rows(&mut self, opts: &ReportOptions, rows: &mut Vec<Row>, jobs: &mut Vec<Job>) {
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
            let binary = binary_levels(&human);
            for g in self.groups() {
                let group = self.group_name(g).map(str::to_string);
                for &stage in &stages {
                    let judge: Vec<Option<f64>> =
                        self.records.iter().map(|r| self.stage_value(r, g, stage, k)).collect();
                    let at = Target { panel: &panel, key, group: group.as_deref(), agent: None, stage };
                    agreement_rows(&at, &human, &judge, integer, rows, jobs);
                    if let Some(levels) = binary {
                        binary_rows(&at, &human, &judge, levels, rows, jobs);
                    }
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
                    // On an integer scale, accuracy and the gap ratios too:
                    // CollabEval's single-judge rows are an agent's first scores.
                    agreement_rows(&at, &human, &judge, integer, rows, jobs);
                }
            }
        }

        self.rouge_rows(&panel, rows, jobs);

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
                        // Without sessions there is nobody to count: the
                        // alpha's own reason (no pairable units) says so.
                        if agents.len() < 2 && g.is_some() && !self.records.is_empty() {
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

        self.rater_rows(rows);
        self.label_rows(&panel, rows, jobs);
        self.effort_rows(&panel, opts, rows);
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
                push("tie_confusion_tie_as_winner", tc.clone().and_then(|t| t.tie_as_winner_rate()));
                // CollabEval's ratios: the same two errors over all misjudged comparisons.
                push("gt_win_pred_tie_ratio", tc.clone().and_then(|t| t.gt_win_pred_tie_ratio()));
                push("gt_tie_pred_win_ratio", tc.and_then(|t| t.gt_tie_pred_win_ratio()));
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

    pub(super) fn effort_rows(&self, panel: &str, opts: &ReportOptions, rows: &mut Vec<Row>) {
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
        let first = mean(&|r| r.effort.rounds_with_first);
        let first = if first.1 == 0 {
            (Err(Undefined::new("no run checked its first evaluations for consensus")), 0)
        } else {
            first
        };
        push(None, "rounds_with_first_per_item", first);
        push(None, "calls_per_item", mean(&|r| Some(r.effort.calls as f64)));
        push(None, "input_tokens_per_item", mean(&|r| Some(r.effort.usage.input_tokens as f64)));
        push(None, "output_tokens_per_item", mean(&|r| Some(r.effort.usage.output_tokens as f64)));
        push(None, "tokens_per_item", mean(&|r| Some(r.effort.usage.total() as f64)));
        // Cached prompt tokens: only over the sessions whose server said how
        // many it read from its prefix cache (most servers say nothing).
        let said: Vec<&ItemRecord> =
            self.records.iter().filter(|r| r.effort.usage.cached_input_tokens.is_some()).collect();
        let none_said = || Undefined::new("no server reported cached prompt tokens");
        let cached: u64 = said.iter().filter_map(|r| r.effort.usage.cached_input_tokens).sum();
        let input: u64 = said.iter().map(|r| r.effort.usage.input_tokens).sum();
        let per = if said.is_empty() { Err(none_said()) } else { Ok(cached as f64 / said.len() as f64) };
        push(None, "cached_input_tokens_per_item", (per, said.len()));
        let share = match (said.is_empty(), input) {
            (true, _) => Err(none_said()),
            (false, 0) => Err(Undefined::new("no prompt tokens")),
            (false, input) => Ok(cached as f64 / input as f64),
        };
        push(None, "cached_input_share", (share, said.len()));
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
pub(super) struct Target<'a> {
    pub(super) panel: &'a str,
    pub(super) key: &'a str,
    pub(super) group: Option<&'a str>,
    pub(super) agent: Option<&'a str>,
    pub(super) stage: Stage,
}

impl Target<'_> {
    pub(super) fn row(&self, metric: &str) -> Row {
        Row::new(self.panel, Some(self.key), self.group, Some(self.stage), metric).for_agent(self.agent)
    }
}

/// Correlations with the humans and, on an integer scale, accuracy, gap
/// ratios and κ; their intervals are queued as one job.
pub(super) fn agreement_rows(
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
