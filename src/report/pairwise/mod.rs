//! The pairwise part of a report: for a `pairwise` panel, each system's
//! wins, losses and ties with bootstrap intervals, the judges' position
//! bias, and agreement with people's labels — for every judge, the panel's
//! decision, and the decision with people's settlements.
//!
//! - [`record`]: what is kept of each session (folded from its log).
//! - [`truth`]: people's labels mapped onto the log's pairs.
//! - [`table`]: the section of the printed table.
//!
//! Rows have `dimension: "pairwise"`; per-system rows carry `system`. Which
//! decision a row is about: `stage: "final"` with `agent` for one judge's
//! decision (its votes and the swap rule), `stage: "aggregate"` for the
//! panel's decision, `stage: "human_adjusted"` for the panel's decision with
//! the pairs a person settled (such rows count them in `sources.human`).
//! Every metric and its method is listed in `docs/report.md`.

mod masa;
mod masa_table;
pub mod record;
pub mod table;
pub mod truth;

use std::collections::{BTreeMap, HashMap};

pub use record::{PairwiseFold, PairwiseRecord};

use super::build::{MIN_PAIRS, ReportOptions, Row, Stage};
use super::human::HumanFile;
use super::load::ItemRecord;
use crate::stats::position::{agreement_with_any, position_bias};
use crate::stats::raters::{bootstrap_ratio, bootstrap_win_rates, leave_one_rater_out, majority, rater_kappa};
use crate::stats::{self, BootstrapCi, Preference, StatResult, Undefined, WinRates, tie_confusion};

/// The `dimension` of every pairwise row.
pub const DIMENSION: &str = "pairwise";

/// Where people's labels on a comparison came from (`sources` of
/// `human_labelled_comparisons`): the item's `human_label(s)`, people's
/// blind verdicts in the log (`pair_labelled`), a `--human` file.
const SOURCE_ITEM: &str = "item";
const SOURCE_SESSION: &str = "session";
const SOURCE_FILE: &str = "file";

/// Why a position bias is undefined when the judges saw each pair in one
/// order (CollabEval's pairwise mode, or `swap = false`).
pub const ONE_ORDER: &str = "no data: judged in one order only";

/// One comparison of one item, with every decision about it.
struct Unit {
    item: usize,
    first: String,
    second: String,
    /// (rater, label in the log's orientation).
    humans: Vec<(usize, Preference)>,
    /// Per judge (index into `judges`): its decision, and its two orders' labels.
    judges: Vec<Option<JudgeCall>>,
    panel: Option<Preference>,
    /// A person's decision, where one was made.
    settled: Option<Preference>,
}

#[derive(Clone, Copy)]
struct JudgeCall {
    outcome: Option<Preference>,
    orders: Option<(Preference, Preference)>,
    /// A label in one order only: the pair was not judged swapped.
    one_order: bool,
}

/// Whose decisions a set of rows is about.
#[derive(Clone, Copy, PartialEq)]
enum Decider {
    Judge(usize),
    Panel,
    Adjusted,
}

fn label_pref(l: crate::session::pairwise::Label) -> Preference {
    match l {
        crate::session::pairwise::Label::A => Preference::A,
        crate::session::pairwise::Label::B => Preference::B,
        crate::session::pairwise::Label::Tie => Preference::Tie,
    }
}

/// The panel's decision on one comparison and the people's majority (none
/// without labels), for comparing two panels on the same comparisons.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub item: String,
    /// The pair as the log has it; decisions are in its orientation.
    pub first: String,
    pub second: String,
    pub decision: Option<Preference>,
    pub truth: Option<Preference>,
}

/// The pairwise rows of one panel's sessions (one per item), or none when
/// no session has pairwise decisions, and the panel's decision on each
/// comparison. Problems with people's labels go to `notes`.
pub fn rows(
    panel: &str,
    records: &[ItemRecord],
    human: Option<&HumanFile>,
    opts: &ReportOptions,
    notes: &mut Vec<String>,
) -> (Vec<Row>, Vec<Judged>) {
    let sessions: Vec<(&ItemRecord, &PairwiseRecord)> =
        records.iter().filter_map(|r| Some((r, r.pairwise.as_ref()?))).collect();
    if sessions.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let mut judges: Vec<(String, Option<String>)> = Vec::new();
    let mut raters: Vec<String> = Vec::new();
    let mut sources: BTreeMap<String, usize> = BTreeMap::new();
    let mut bad_labels = Vec::new();
    let mut units: Vec<Unit> = Vec::new();
    for (item, (rec, pw)) in sessions.iter().enumerate() {
        let file_labels = human.and_then(|h| h.ratings.get(&rec.item_id)).map(|e| &e.pair_labels);
        let file_labels = file_labels.filter(|l| !l.is_empty());
        for c in &pw.pairs {
            let mut judge_calls = vec![None; judges.len()];
            for d in &c.decisions {
                let Some(name) = d.judge.as_deref() else { continue };
                let j = match judges.iter().position(|(n, _)| n == name) {
                    Some(j) => j,
                    None => {
                        let group =
                            rec.agents.iter().find(|a| a.name == name).map(|a| rec.panel.groups[a.group].clone());
                        judges.push((name.to_string(), group));
                        judge_calls.push(None);
                        judges.len() - 1
                    }
                };
                judge_calls[j] = Some(JudgeCall {
                    outcome: record::outcome(d, &c.first, &c.second),
                    orders: d.first_order.zip(d.swapped_order).map(|(f, s)| (label_pref(f), label_pref(s))),
                    one_order: d.first_order.is_some() != d.swapped_order.is_some(),
                });
            }
            let panel_outcome = c.panel.as_ref().and_then(|p| record::outcome(p, &c.first, &c.second));
            let settled =
                c.settled.as_ref().and_then(|s| record::winner_pref(s.winner.as_deref(), &c.first, &c.second));
            // People's labels on this pair: the file's replace the item's;
            // blind verdicts from the log join either (see docs/report.md).
            let mut labelled: Vec<(String, Preference)> = Vec::new();
            let mut rater_of = |name: String| -> usize {
                match raters.iter().position(|r| *r == name) {
                    Some(i) => i,
                    None => {
                        raters.push(name);
                        raters.len() - 1
                    }
                }
            };
            let mut from: Vec<&str> = Vec::new();
            if let Some(list) = file_labels {
                let mut unnamed = 0;
                for l in list {
                    let on_pair = match &l.pair {
                        Some((a, b)) => truth::pair_label_on_pair(&l.label, (a, b), &c.first, &c.second),
                        None => truth::item_label_on_pair(&l.label, &pw.candidates, &c.first, &c.second),
                    };
                    let name = match &l.rater {
                        Some(r) => r.clone(),
                        None => {
                            unnamed += 1;
                            format!("#{unnamed}")
                        }
                    };
                    match on_pair {
                        Ok(Some(p)) => {
                            labelled.retain(|(n, _)| *n != name);
                            labelled.push((name, p));
                        }
                        Ok(None) => {}
                        Err(e) => bad_labels.push(format!(
                            "{} line {}: item {}: {}",
                            human.map_or("", |h| h.source.as_str()),
                            l.line,
                            rec.item_id,
                            e.0
                        )),
                    }
                }
                if !labelled.is_empty() {
                    from.push(SOURCE_FILE);
                }
            } else {
                for (i, l) in pw.human_labels.iter().enumerate() {
                    match truth::item_label_on_pair(l, &pw.candidates, &c.first, &c.second) {
                        Ok(Some(p)) => labelled.push((format!("#{}", i + 1), p)),
                        Ok(None) => {}
                        Err(e) => bad_labels.push(format!("item {}: human_labels[{i}]: {}", rec.item_id, e.0)),
                    }
                }
                if !labelled.is_empty() {
                    from.push(SOURCE_ITEM);
                }
            }
            // People's blind verdicts in the log: each its author's label,
            // unless the file has that rater's label on the pair.
            let mut blind = false;
            for l in pw.blind_labels.iter().filter(|l| {
                (l.first == c.first && l.second == c.second) || (l.first == c.second && l.second == c.first)
            }) {
                if file_labels.is_some() && labelled.iter().any(|(n, _)| *n == l.author) {
                    continue;
                }
                match record::winner_pref(l.winner.as_deref(), &c.first, &c.second) {
                    Some(p) => {
                        labelled.push((l.author.clone(), p));
                        blind = true;
                    }
                    None => bad_labels.push(format!(
                        "item {}: pair_labelled by {}: {} is neither {} nor {}",
                        rec.item_id,
                        l.author,
                        l.winner.as_deref().unwrap_or(""),
                        c.first,
                        c.second
                    )),
                }
            }
            if blind {
                from.push(SOURCE_SESSION);
            }
            for f in from {
                *sources.entry(f.to_string()).or_default() += 1;
            }
            let humans = labelled.into_iter().map(|(n, p)| (rater_of(n), p)).collect();
            units.push(Unit {
                item,
                first: c.first.clone(),
                second: c.second.clone(),
                humans,
                judges: judge_calls,
                panel: panel_outcome,
                settled,
            });
        }
    }
    bad_labels.sort();
    bad_labels.dedup();
    let shown = bad_labels.len().min(5);
    for b in &bad_labels[..shown] {
        notes.push(format!("{b} (label not used)"));
    }
    if bad_labels.len() > shown {
        notes.push(format!("and {} more pairwise labels not used", bad_labels.len() - shown));
    }
    for u in &mut units {
        u.judges.resize(judges.len(), None);
    }

    let ctx = Ctx { panel, units: &units, items: sessions.len(), opts };
    let mut out = Vec::new();
    let any_settled = units.iter().any(|u| u.settled.is_some());
    let mut deciders: Vec<Decider> = vec![Decider::Panel];
    if any_settled {
        deciders.push(Decider::Adjusted);
    }
    deciders.extend((0..judges.len()).map(Decider::Judge));
    for d in deciders {
        let (agent, group) = match d {
            Decider::Judge(j) => (Some(judges[j].0.as_str()), judges[j].1.as_deref()),
            _ => (None, None),
        };
        let at = At { agent, group, stage: stage_of(d) };
        let human_count = units.iter().filter(|u| u.settled.is_some()).count();
        let mark = |mut r: Row| {
            if d == Decider::Adjusted {
                r.sources = Some(BTreeMap::from([
                    ("human".to_string(), human_count),
                    ("panel".to_string(), units.len() - human_count),
                ]));
            }
            r
        };
        let said: Vec<Option<Preference>> = units.iter().map(|u| decision(u, d)).collect();
        out.extend(ctx.win_rows(&at, &said).into_iter().map(mark));
        if units.iter().any(|u| !u.humans.is_empty()) {
            out.extend(ctx.human_rows(&at, &said).into_iter().map(mark));
            out.extend(ctx.masa_rows(&at, &said, d).into_iter().map(mark));
        }
        if let Decider::Judge(j) = d {
            let orders: Vec<Option<(Preference, Preference)>> =
                units.iter().map(|u| u.judges[j].and_then(|c| c.orders)).collect();
            let calls: Vec<JudgeCall> = units.iter().filter_map(|u| u.judges[j]).collect();
            out.extend(ctx.bias_rows(&at, &orders, &calls));
        }
    }
    if !judges.is_empty() {
        let orders: Vec<Option<(Preference, Preference)>> =
            units.iter().flat_map(|u| u.judges.iter().map(|c| c.and_then(|c| c.orders))).collect();
        let calls: Vec<JudgeCall> = units.iter().flat_map(|u| u.judges.iter().flatten().copied()).collect();
        out.extend(ctx.bias_rows(&At { agent: None, group: None, stage: None }, &orders, &calls));
    }
    out.extend(ctx.rater_rows(raters.len(), sources));
    if units.iter().any(|u| !u.humans.is_empty()) {
        out.extend(ctx.consensus_rows());
    }
    let judged = units
        .iter()
        .enumerate()
        .map(|(i, u)| Judged {
            item: sessions[u.item].0.item_id.clone(),
            first: u.first.clone(),
            second: u.second.clone(),
            decision: u.panel,
            truth: majority(&ctx.labels(i)),
        })
        .collect();
    (out, judged)
}

fn stage_of(d: Decider) -> Option<Stage> {
    Some(match d {
        Decider::Judge(_) => Stage::Final,
        Decider::Panel => Stage::Aggregate,
        Decider::Adjusted => Stage::HumanAdjusted,
    })
}

fn decision(u: &Unit, d: Decider) -> Option<Preference> {
    match d {
        Decider::Judge(j) => u.judges.get(j).copied().flatten().and_then(|c| c.outcome),
        Decider::Panel => u.panel,
        Decider::Adjusted => u.settled.or(u.panel),
    }
}

/// Where a set of rows belongs.
struct At<'a> {
    agent: Option<&'a str>,
    group: Option<&'a str>,
    stage: Option<Stage>,
}

struct Ctx<'a> {
    panel: &'a str,
    units: &'a [Unit],
    items: usize,
    opts: &'a ReportOptions,
}

impl Ctx<'_> {
    fn row(&self, at: &At<'_>, metric: &str) -> Row {
        Row::new(self.panel, Some(DIMENSION), at.group, at.stage, metric).for_agent(at.agent)
    }

    fn interval(&self, ci: Option<StatResult<BootstrapCi>>, mut row: Row) -> Row {
        if row.value.is_some()
            && let Some(Ok(ci)) = ci
        {
            row.ci_low = Some(ci.low);
            row.ci_high = Some(ci.high);
        }
        row
    }

    /// Each system's wins, losses and ties over its decided comparisons,
    /// with intervals from resampling items.
    fn win_rows(&self, at: &At<'_>, said: &[Option<Preference>]) -> Vec<Row> {
        let mut systems: Vec<&str> = Vec::new();
        for u in self.units {
            for s in [u.first.as_str(), u.second.as_str()] {
                if !systems.contains(&s) {
                    systems.push(s);
                }
            }
        }
        let mut rows = Vec::new();
        for system in systems {
            let mut per_item = vec![[0u64; 3]; self.items];
            let (mut all, mut undecided) = (0usize, 0usize);
            for (u, s) in self.units.iter().zip(said) {
                let side = if u.first == system {
                    Preference::A
                } else if u.second == system {
                    Preference::B
                } else {
                    continue;
                };
                all += 1;
                let Some(s) = s else {
                    undecided += 1;
                    continue;
                };
                let slot = match s {
                    Preference::Tie => 2,
                    p if *p == side => 0,
                    _ => 1,
                };
                per_item[u.item][slot] += 1;
            }
            let items: Vec<[u64; 3]> = per_item.into_iter().filter(|c| c.iter().sum::<u64>() > 0).collect();
            let sum = |k: usize| items.iter().map(|c| c[k] as usize).sum::<usize>();
            let w = WinRates { a: sum(0), b: sum(1), tie: sum(2) };
            let n = w.n();
            let cis = if self.opts.bootstrap > 0 && n > 0 {
                bootstrap_win_rates(&items, self.opts.bootstrap, self.opts.seed, self.opts.level).ok()
            } else {
                None
            };
            let mut cis = cis.map(|v| v.into_iter().map(Some).collect::<Vec<_>>()).unwrap_or_else(|| vec![None; 4]);
            let no_data = |r: StatResult<f64>| {
                r.map_err(|_| {
                    Undefined::new(if undecided > 0 {
                        format!("no decided comparisons ({undecided} without a result)")
                    } else {
                        "no decided comparisons".to_string()
                    })
                })
            };
            let sys = |mut r: Row| {
                r.system = Some(system.to_string());
                r
            };
            for (metric, count) in [("pairwise_wins", w.a), ("pairwise_losses", w.b), ("pairwise_ties", w.tie)] {
                rows.push(sys(self.row(at, metric).set(Ok(count as f64)).with_n(n, Some(undecided))));
            }
            rows.push(sys(self.row(at, "pairwise_undecided").set(Ok(undecided as f64)).with_n(all, None)));
            let excl = w.a_rate_excluding_ties().map_err(|_| {
                Undefined::new(if n == 0 {
                    "no decided comparisons".into()
                } else {
                    format!("all {n} decided comparisons are ties")
                })
            });
            let rates = [
                ("pairwise_win_rate", no_data(w.a_rate())),
                ("pairwise_loss_rate", no_data(w.b_rate())),
                ("pairwise_tie_rate", no_data(w.tie_rate())),
                ("pairwise_win_rate_excluding_ties", if n == 0 { no_data(excl) } else { excl }),
            ];
            for ((metric, value), ci) in rates.into_iter().zip(cis.iter_mut()) {
                let n_row = if metric.ends_with("excluding_ties") { w.a + w.b } else { n };
                let row = self.row(at, metric).set(value).with_n(n_row, Some(all - n_row));
                rows.push(sys(self.interval(ci.take(), row)));
            }
        }
        rows
    }

    /// Agreement of one decider with the people's labels.
    fn human_rows(&self, at: &At<'_>, said: &[Option<Preference>]) -> Vec<Row> {
        let rated: Vec<usize> = (0..self.units.len()).filter(|&i| !self.units[i].humans.is_empty()).collect();
        let used: Vec<usize> = rated.iter().copied().filter(|&i| said[i].is_some()).collect();
        let n = used.len();
        let dropped = Some(rated.len() - n);
        let truth: Vec<Preference> =
            used.iter().map(|&i| majority(&self.labels(i)).unwrap_or(Preference::Tie)).collect();
        let judge: Vec<Preference> = used.iter().filter_map(|&i| said[i]).collect();
        let few = |v: StatResult<f64>| if n < MIN_PAIRS { Err(Undefined::new(format!("n < {MIN_PAIRS}"))) } else { v };
        let mut rows = Vec::new();
        // Agreement with the majority, with an interval resampling items.
        let mut per_item: HashMap<usize, (u64, u64)> = HashMap::new();
        for (k, &i) in used.iter().enumerate() {
            let e = per_item.entry(self.units[i].item).or_default();
            e.0 += u64::from(truth[k] == judge[k]);
            e.1 += 1;
        }
        let mut items: Vec<(u64, u64)> = per_item.into_values().collect();
        items.sort_unstable();
        let agreement = few(stats::agreement_rate(&truth, &judge));
        let ci = (self.opts.bootstrap > 0 && agreement.is_ok())
            .then(|| bootstrap_ratio(&items, self.opts.bootstrap, self.opts.seed, self.opts.level));
        rows.push(self.interval(ci, self.row(at, "human_majority_agreement").set(agreement).with_n(n, dropped)));
        let raters: Vec<Vec<Preference>> = used.iter().map(|&i| self.labels(i)).collect();
        rows.push(self.row(at, "human_any_agreement").set(few(agreement_with_any(&judge, &raters))).with_n(n, dropped));
        rows.push(self.row(at, "cohen_kappa").set(few(stats::cohen_kappa(&truth, &judge))).with_n(n, dropped));
        let tc = tie_confusion(&truth, &judge);
        let winner_as_tie = tc.clone().and_then(|t| t.winner_as_tie_rate());
        let tie_as_winner = tc.clone().and_then(|t| t.tie_as_winner_rate());
        rows.push(self.row(at, "tie_confusion_winner_as_tie").set(few(winner_as_tie)).with_n(n, dropped));
        rows.push(self.row(at, "tie_confusion_tie_as_winner").set(few(tie_as_winner)).with_n(n, dropped));
        // CollabEval's ratios: the same two errors over all misjudged comparisons.
        let misjudged = tc.as_ref().map_or(0, |t| t.misjudged);
        let gt_win_pred_tie = tc.clone().and_then(|t| t.gt_win_pred_tie_ratio());
        let gt_tie_pred_win = tc.and_then(|t| t.gt_tie_pred_win_ratio());
        rows.push(self.row(at, "gt_win_pred_tie_ratio").set(few(gt_win_pred_tie)).with_n(misjudged, None));
        rows.push(self.row(at, "gt_tie_pred_win_ratio").set(few(gt_tie_pred_win)).with_n(misjudged, None));
        let all_said: Vec<Option<Preference>> = rated.iter().map(|&i| said[i]).collect();
        let all_labels: Vec<Vec<Preference>> = rated.iter().map(|&i| self.labels(i)).collect();
        let loo = leave_one_rater_out(&all_said, &all_labels);
        let cases = loo.as_ref().map_or(0, |l| l.cases);
        let loo_few = |v: StatResult<f64>| {
            if cases > 0 && cases < MIN_PAIRS { Err(Undefined::new(format!("n < {MIN_PAIRS}"))) } else { v }
        };
        let rater_rate = loo_few(loo.clone().and_then(|l| l.rater_rate()));
        let judge_rate = loo_few(loo.and_then(|l| l.judge_rate()));
        rows.push(self.row(at, "loo_rater_agreement").set(rater_rate).with_n(cases, None));
        rows.push(self.row(at, "loo_judge_agreement").set(judge_rate).with_n(cases, None));
        rows
    }

    fn labels(&self, unit: usize) -> Vec<Preference> {
        self.units[unit].humans.iter().map(|(_, p)| *p).collect()
    }

    /// How often a decision changed with the order of the candidates.
    /// `calls`: the decisions of the judges concerned (with or without both
    /// orders).
    fn bias_rows(&self, at: &At<'_>, orders: &[Option<(Preference, Preference)>], calls: &[JudgeCall]) -> Vec<Row> {
        let (first, second): (Vec<Preference>, Vec<Preference>) = orders.iter().flatten().copied().unzip();
        let bias = position_bias(&first, &second);
        let n = first.len();
        let decided = calls.len();
        let dropped = Some(decided.saturating_sub(n));
        let one_order = calls.iter().any(|c| c.one_order);
        let why = |v: StatResult<f64>| {
            v.map_err(|u| {
                Undefined::new(if n == 0 && one_order {
                    // Never 0%: without a swapped order nothing was measured.
                    ONE_ORDER.to_string()
                } else if decided > 0 {
                    format!("{}: the judges saw one order only, or no readable verdict in both", u.reason)
                } else {
                    u.reason
                })
            })
        };
        [
            ("position_bias_rate", bias.clone().and_then(|b| b.rate())),
            ("position_bias_win_tie_rate", bias.clone().and_then(|b| b.win_tie_rate())),
            ("position_bias_opposite_rate", bias.and_then(|b| b.opposite_rate())),
        ]
        .into_iter()
        .map(|(m, v)| {
            Row::new(self.panel, Some(DIMENSION), at.group, None, m).for_agent(at.agent).set(why(v)).with_n(n, dropped)
        })
        .collect()
    }

    /// The people: how many comparisons they labelled, and how much they
    /// agree with each other.
    fn rater_rows(&self, raters: usize, sources: BTreeMap<String, usize>) -> Vec<Row> {
        let at = At { agent: None, group: None, stage: None };
        let labelled = self.units.iter().filter(|u| !u.humans.is_empty()).count();
        let mut count =
            self.row(&at, "human_labelled_comparisons").set(Ok(labelled as f64)).with_n(self.units.len(), None);
        count.sources = Some(sources);
        let units: Vec<Vec<(usize, Preference)>> = self.units.iter().map(|u| u.humans.clone()).collect();
        let kappa = rater_kappa(&units, MIN_PAIRS);
        let pairs = kappa.as_ref().map_or(0, |k| k.pairs);
        vec![
            count,
            self.row(&at, "human_raters").set(Ok(raters as f64)).with_n(labelled, None),
            self.row(&at, "human_rater_kappa").set(kappa.map(|k| k.mean)).with_n(pairs, None),
        ]
    }
}
