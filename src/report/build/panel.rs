//! One panel's sessions joined with human ratings: one session per item,
//! the human value of each key and its source, stage values and score
//! distributions.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Distribution, PanelSummary, Stage};
use crate::report::human::HumanFile;
use crate::report::load::{AgentScores, ItemRecord, PanelInfo, Vals};
use crate::session::run_folder::LogState;
use crate::stats::Preference;

/// Human values of one item, with the source of each.
pub(super) struct Truth {
    pub(super) vals: Vec<Option<f64>>,
    /// Which source each value came from.
    pub(super) from: Vec<Option<&'static str>>,
    pub(super) label: Option<Preference>,
}

const SOURCE_ITEM: &str = "item";
const SOURCE_SESSION: &str = "session";
const SOURCE_FILE: &str = "file";
/// One panel's sessions, joined with human ratings.
pub(super) struct PanelReport {
    pub(super) info: Arc<PanelInfo>,
    pub(super) records: Vec<ItemRecord>,
    pub(super) truth: Vec<Truth>,
    pub(super) summary: PanelSummary,
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
    pub(super) fn new(
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
        for r in records.iter_mut() {
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
                // Named raters of the file replace the item's: their mean is the value.
                if !entry.raters.is_empty() {
                    r.human_raters =
                        entry.raters.iter().map(|(name, s)| (name.clone(), info.vals_of_scores(s, None))).collect();
                    for k in 0..info.keys.len() {
                        let given: Vec<f64> = r.human_raters.iter().filter_map(|(_, v)| v[k]).collect();
                        if !given.is_empty() {
                            vals[k] = Some(given.iter().sum::<f64>() / given.len() as f64);
                            from[k] = Some(SOURCE_FILE);
                        }
                    }
                }
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
            models: info.models.clone(),
            logs,
            sessions: records.len(),
            duplicates,
            rated_items,
            human_sources: sources,
            unrated_keys,
            rater_items: records.iter().filter(|r| !r.human_raters.is_empty()).count(),
            raters: Vec::new(),
        };
        let mut panel = PanelReport { info, records, truth, summary };
        panel.summary.raters = panel.rater_names();
        panel
    }

    /// A stage's value of key `k` for one session: for a group (or all agents) the mean
    /// of the agents' scores at initial/final, else the protocol's result.
    pub(super) fn stage_value(&self, r: &ItemRecord, group: Option<usize>, stage: Stage, k: usize) -> Option<f64> {
        let from_agents = |pick: fn(&AgentScores) -> Option<&Vals>| {
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
            Stage::RougeL => r.rouge_l,
        }
    }

    pub(super) fn distributions(&self) -> Vec<Distribution> {
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
                reviewed: self.info.reviewed,
            })
            .collect()
    }

    pub(super) fn groups(&self) -> Vec<Option<usize>> {
        std::iter::once(None).chain((0..self.info.groups.len()).map(Some)).collect()
    }

    pub(super) fn group_name(&self, g: Option<usize>) -> Option<&str> {
        g.map(|g| self.info.groups[g].as_str())
    }

    /// The agents of the panel's sessions with their group index, in order of first appearance.
    pub(super) fn agents(&self) -> Vec<(String, usize)> {
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
}
