//! Reading session logs into per-item numbers.
//!
//! Each log is read line by line and folded into an [`ItemRecord`] that keeps
//! only what a report needs (scores per agent and stage, aggregates, human
//! ratings, effort), so thousands of logs fit in little memory. Streamed
//! text (`turn_delta` lines) is skipped without being parsed. The stages
//! (initial, final, aggregate, human-adjusted) are those of
//! [`crate::session::stages`], the same as the view and `sessions export`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use crate::session::event::{Evaluation, EventKind, Phase, Role, Scores, TurnKind, Usage};
use crate::session::run_folder::{self, LogState, Pricing};
use crate::session::{LogProblem, Stages};
use crate::stats::Preference;

/// One value per key of [`PanelInfo::keys`] (`None` = no value).
pub type Vals = Box<[Option<f64>]>;

/// What a report needs to know about the panel a session ran.
#[derive(Debug, Clone, PartialEq)]
pub struct PanelInfo {
    pub name: String,
    pub protocol: String,
    /// The panel compares candidates in pairs (the `pairwise` protocol, or
    /// CollabEval's pairwise mode): its results are decisions, not scores.
    pub pairwise: bool,
    /// A meta-evaluator reviewed the scores (a `review` stage: SAGEval's).
    pub reviewed: bool,
    /// Dimension keys in panel order, then `overall`.
    pub keys: Vec<String>,
    /// Group names in panel order.
    pub groups: Vec<String>,
    /// Scale bounds, when the panel records them.
    pub scale: Option<(f64, f64)>,
    /// The models the agents talked to (`provider/model`), in order of
    /// first appearance: runs of one panel with other models are another panel.
    pub models: Vec<String>,
}

impl PanelInfo {
    /// Index of a key (dimension or `overall`).
    pub fn key_index(&self, key: &str) -> Option<usize> {
        self.keys.iter().position(|k| k == key)
    }
    /// Whether the scale is whole numbers.
    pub fn integer_scale(&self) -> Option<(i64, i64)> {
        let (lo, hi) = self.scale?;
        (lo.fract() == 0.0 && hi.fract() == 0.0 && lo < hi && hi - lo <= 100.0).then_some((lo as i64, hi as i64))
    }
    fn empty_vals(&self) -> Vals {
        vec![None; self.keys.len()].into_boxed_slice()
    }
    /// Values of an evaluation, by key.
    pub fn vals_of(&self, ev: &Evaluation) -> Vals {
        self.keys.iter().map(|k| ev.score(k).filter(|v| v.is_finite())).collect()
    }
    /// Values of a score map (with `overall` as a key), by key.
    pub fn vals_of_scores(&self, scores: &Scores, overall: Option<f64>) -> Vals {
        self.keys
            .iter()
            .map(|k| if k == "overall" { overall.or_else(|| scores.get(k).copied()) } else { scores.get(k).copied() })
            .map(|v| v.filter(|x| x.is_finite()))
            .collect()
    }
}

/// One agent's scores in one session.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentScores {
    pub name: String,
    /// Index into [`PanelInfo::groups`].
    pub group: usize,
    /// Phase-1 evaluation.
    pub initial: Option<Vals>,
    /// Final evaluation after the debate, the agent's own values.
    pub final_: Option<Vals>,
    pub initial_label: Option<Preference>,
    pub final_label: Option<Preference>,
    /// The final evaluation's probability-weighted scores, when it has them.
    pub weighted: Option<Vals>,
}

/// Turns, tokens and time of one session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effort {
    /// Agent turns (initial evaluations included, repairs not).
    pub turns: u32,
    /// Agent turns after phase 1.
    pub debate_turns: u32,
    /// Discussion rounds (mean over the groups that had rounds), if any.
    pub rounds: Option<f64>,
    /// Rounds as CollabEval counts them: the first evaluations are round 1
    /// and each discussion round adds one, so a group settled by its first
    /// evaluations took one round (mean over every group); only for a run
    /// whose first evaluations were checked for consensus and that talks
    /// in rounds (not a moderated debate).
    pub rounds_with_first: Option<f64>,
    /// Model calls.
    pub calls: u64,
    pub usage: Usage,
    pub duration_ms: Option<u64>,
    /// Human score overrides.
    pub overrides: u32,
    /// Agent turns per group (index as [`PanelInfo::groups`]).
    pub group_turns: Vec<u32>,
    /// Tokens of agent turns per group.
    pub group_tokens: Vec<u64>,
}

/// The numbers of one session log.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemRecord {
    pub source: PathBuf,
    pub session_id: String,
    pub item_id: String,
    pub panel: Arc<PanelInfo>,
    pub status: LogState,
    pub started: Option<DateTime<Utc>>,
    pub agents: Vec<AgentScores>,
    /// Per group: the protocol's result as first published, before human overrides.
    pub group_aggregate: Vec<Option<Vals>>,
    /// Per group: the result with every override applied.
    pub group_adjusted: Vec<Option<Vals>>,
    /// Panel-wide result before overrides.
    pub aggregate: Option<Vals>,
    /// Panel-wide result with overrides.
    pub adjusted: Option<Vals>,
    /// Ratings in the item's `human` field; for an item with several
    /// raters (`human_raters`), per key the mean of the raters who gave one.
    pub human_item: Vals,
    /// Each rater's ratings of the item (`human_raters`), by rater name.
    pub human_raters: Vec<(String, Vals)>,
    /// Ratings entered during the session (`human_rating` events; later ones win per key).
    pub human_session: Vals,
    pub effort: Effort,
    /// Lines that were not valid events (skipped), and an unterminated
    /// last line (ignored; [`LogProblem::is_torn`]).
    pub bad_lines: Vec<LogProblem>,
    /// What a meta-evaluator changed and proposed (SAGEval).
    pub sage: crate::session::sage::SageView,
    /// Pairwise sessions: the candidates, human labels and decisions.
    pub pairwise: Option<super::pairwise::PairwiseRecord>,
    /// ROUGE-L F1 of the item's content against its `reference`, where the
    /// item has one (a lexical baseline beside the judges).
    pub rouge_l: Option<f64>,
}

/// Per key, the mean of the raters who gave a value (none where nobody did).
fn raters_mean(info: &PanelInfo, raters: &[(String, Vals)]) -> Vals {
    (0..info.keys.len())
        .map(|k| {
            let vals: Vec<f64> = raters.iter().filter_map(|(_, v)| v[k]).collect();
            (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
        })
        .collect()
}

/// Shares one [`PanelInfo`] among the sessions of the same panel.
#[derive(Debug, Default)]
pub struct PanelCache {
    known: Mutex<Vec<Arc<PanelInfo>>>,
}

impl PanelCache {
    pub fn intern(&self, info: PanelInfo) -> Arc<PanelInfo> {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = known.iter().find(|p| ***p == info) {
            return p.clone();
        }
        let p = Arc::new(info);
        known.push(p.clone());
        p
    }
}

/// Why a log could not be used at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{}: not a session log (no session_started line)", path.display())]
    NotASession { path: PathBuf },
    /// The log's `session_started` line is there but cannot be read.
    #[error("{problem}")]
    BadStart { problem: Box<LogProblem> },
}

/// Session log files named by `paths`: files as given, folders' `*.jsonl`
/// files (not recursive: `attempts/` of a run folder is left out), sorted.
pub fn collect_logs(paths: &[PathBuf]) -> Result<Vec<PathBuf>, LoadError> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|error| LoadError::Io { path: p.clone(), error })?;
        if meta.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|error| LoadError::Io { path: p.clone(), error })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "jsonl") && f.is_file())
                .collect();
            files.sort();
            out.extend(files);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// The prices recorded in a run folder: its `run.json`'s, or, for a
/// sharded run, the prices its shards' manifests agree on. Shards that
/// recorded different prices give none, with a note saying which.
pub fn folder_pricing(dir: &Path) -> Result<Option<Pricing>, String> {
    if let Some(m) = run_folder::Manifest::load(dir).ok().flatten() {
        return Ok(m.pricing);
    }
    let mut found: Vec<(String, Pricing)> = Vec::new();
    for (shard, path) in run_folder::shard_manifests(dir) {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if let Some(p) = run_folder::Manifest::load_named(dir, &name).ok().flatten().and_then(|m| m.pricing) {
            found.push((format!("shard {shard}"), p));
        }
    }
    let Some((first_name, first)) = found.first().cloned() else { return Ok(None) };
    match found.iter().find(|(_, p)| *p != first) {
        None => Ok(Some(first)),
        Some((other, p)) => Err(format!(
            "{}: the shards were priced differently ({first_name}: {} in / {} out per million tokens; {other}: {} / {}); no cost is given — pass --price-input and --price-output",
            dir.display(),
            first.input_per_mtok,
            first.output_per_mtok,
            p.input_per_mtok,
            p.output_per_mtok
        )),
    }
}

/// Whether a line is a `turn_delta` event, judged from its start (the
/// writer puts `seq`, `t` and `type` first); other lines are parsed.
fn is_delta(line: &[u8]) -> bool {
    const TAG: &[u8] = b"\"type\":\"turn_delta\"";
    let head = &line[..line.len().min(96)];
    head.windows(TAG.len()).any(|w| w == TAG)
}

struct TurnInfo {
    group: Option<usize>,
    role: Role,
}

/// Fold a log's bytes into a record.
pub fn read_record(path: &Path, bytes: &[u8], cache: &PanelCache) -> Result<ItemRecord, LoadError> {
    let mut rec: Option<ItemRecord> = None;
    let mut turns: HashMap<u64, TurnInfo> = HashMap::new();
    let mut agent_index: HashMap<String, usize> = HashMap::new();
    let mut group_rounds: Vec<u32> = Vec::new();
    // Whether the first evaluations were checked for consensus (round 0),
    // and whether a moderated debate (turns, not rounds) followed.
    let mut first_checked = false;
    let mut debated = false;
    let mut running_usage = Usage::default();
    let mut running_calls = 0u64;
    let mut ended_usage: Option<(Usage, u64)> = None;
    let mut bad_lines = Vec::new();
    let mut stages = Stages::default();
    let mut sage = crate::session::sage::SageView::default();
    let mut pairwise = super::pairwise::PairwiseFold::default();
    // The last line may be cut by a crash: only complete lines count.
    let (complete, torn) = crate::session::reader::lines(bytes);
    // The first `session_started` line that could not be read.
    let mut bad_start: Option<LogProblem> = None;
    for (number, line) in complete {
        if is_delta(line) {
            continue;
        }
        let event = match crate::session::parse_event(path, number, line) {
            Ok(e) => e,
            Err(problem) => {
                if rec.is_none() && bad_start.is_none() && problem.event_type.as_deref() == Some("session_started") {
                    bad_start = Some(problem.clone());
                }
                bad_lines.push(problem);
                continue;
            }
        };
        stages.apply(&event.kind);
        sage.apply(&event.kind);
        pairwise.apply(&event.kind);
        if let EventKind::SessionStarted { session_id, protocol, panel, item, agents, .. } = &event.kind {
            let info = panel_info(panel, protocol, agents);
            let info = cache.intern(info);
            agent_index.clear();
            let mut list = Vec::new();
            for a in agents {
                let group = info.groups.iter().position(|g| *g == a.group).unwrap_or(0);
                agent_index.insert(a.name.clone(), list.len());
                list.push(AgentScores {
                    name: a.name.clone(),
                    group,
                    initial: None,
                    final_: None,
                    initial_label: None,
                    final_label: None,
                    weighted: None,
                });
            }
            let human_raters: Vec<(String, Vals)> =
                item.human_raters.iter().map(|(name, s)| (name.clone(), info.vals_of_scores(s, None))).collect();
            let human_item = match &item.human {
                Some(h) => info.vals_of_scores(h, None),
                None => raters_mean(&info, &human_raters),
            };
            let ng = info.groups.len();
            group_rounds = vec![0; ng];
            rec = Some(ItemRecord {
                source: path.to_path_buf(),
                session_id: session_id.clone(),
                item_id: item.id.clone(),
                status: LogState::Incomplete,
                started: Some(event.t),
                agents: list,
                group_aggregate: vec![None; ng],
                group_adjusted: vec![None; ng],
                aggregate: None,
                adjusted: None,
                human_session: info.empty_vals(),
                human_item,
                human_raters,
                effort: Effort { group_turns: vec![0; ng], group_tokens: vec![0; ng], ..Effort::default() },
                bad_lines: Vec::new(),
                sage: Default::default(),
                pairwise: None,
                rouge_l: item.reference.as_deref().map(|r| crate::stats::rouge::rouge_l_f1(r, &item.content)),
                panel: info,
            });
            continue;
        }
        let Some(r) = rec.as_mut() else { continue };
        let group_of = |name: &str| r.panel.groups.iter().position(|g| g == name);
        match &event.kind {
            EventKind::TurnStarted { turn, agent, group, phase, role, kind, .. } => {
                let agent_i = agent_index.get(agent).copied().filter(|_| *role == Role::Agent);
                let group_i = group.as_deref().and_then(group_of).or_else(|| agent_i.map(|i| r.agents[i].group));
                if *role == Role::Agent && *kind == TurnKind::Speak {
                    r.effort.turns += 1;
                    if *phase != Phase::Initial {
                        r.effort.debate_turns += 1;
                    }
                    if let Some(g) = group_i {
                        r.effort.group_turns[g] += 1;
                    }
                }
                turns.insert(*turn, TurnInfo { group: group_i, role: *role });
            }
            EventKind::TurnCompleted { turn, usage, .. } => {
                running_usage.add(usage);
                running_calls += 1;
                let Some(t) = turns.get(turn) else { continue };
                if t.role == Role::Agent
                    && let Some(g) = t.group
                {
                    r.effort.group_tokens[g] += usage.total();
                }
            }
            EventKind::PhaseStarted { group: Some(g), round: Some(round), phase, .. } if *phase != Phase::Initial => {
                if let Some(g) = group_of(g) {
                    group_rounds[g] = group_rounds[g].max(*round);
                }
            }
            EventKind::ConsensusChecked { round: Some(0), .. } => first_checked = true,
            EventKind::PhaseStarted { phase: Phase::Debate, .. } => debated = true,
            EventKind::ScoreOverridden { .. } => r.effort.overrides += 1,
            EventKind::HumanRating { scores, .. } => {
                let vals = r.panel.vals_of_scores(scores, None);
                for (slot, v) in r.human_session.iter_mut().zip(vals.iter()) {
                    if v.is_some() {
                        *slot = *v;
                    }
                }
            }
            EventKind::SessionEnded { status, usage, duration_ms, .. } => {
                r.status = (*status).into();
                r.effort.duration_ms = Some(*duration_ms);
                ended_usage = Some((usage.total, usage.calls));
            }
            _ => {}
        }
    }
    let mut r = rec.ok_or_else(|| match bad_start {
        Some(problem) => LoadError::BadStart { problem: Box::new(problem) },
        None => LoadError::NotASession { path: path.to_path_buf() },
    })?;
    apply_stages(&mut r, &stages);
    r.sage = sage;
    r.pairwise = pairwise.finish();
    let (usage, calls) = ended_usage.unwrap_or((running_usage, running_calls));
    r.effort.usage = usage;
    r.effort.calls = calls;
    let with_rounds: Vec<f64> = group_rounds.iter().filter(|&&n| n > 0).map(|&n| f64::from(n)).collect();
    r.effort.rounds = (!with_rounds.is_empty()).then(|| with_rounds.iter().sum::<f64>() / with_rounds.len() as f64);
    r.effort.rounds_with_first = (first_checked && !debated && !group_rounds.is_empty())
        .then(|| group_rounds.iter().map(|&n| f64::from(n) + 1.0).sum::<f64>() / group_rounds.len() as f64);
    bad_lines.extend(torn.map(|(number, rest)| LogProblem::torn(path, number, rest.len())));
    r.bad_lines = bad_lines;
    Ok(r)
}

/// The stages of every agent and result, as [`Stages`] defines them, by key.
fn apply_stages(r: &mut ItemRecord, stages: &Stages) {
    let panel = r.panel.clone();
    let label = |ev: &Evaluation| ev.label.as_deref().and_then(|l| l.parse::<Preference>().ok());
    for (a, s) in r.agents.iter_mut().zip(&stages.agents) {
        a.initial = s.initial.as_ref().map(|e| panel.vals_of(e));
        a.initial_label = s.initial.as_ref().and_then(label);
        a.final_ = s.final_.as_ref().map(|e| panel.vals_of(e));
        a.final_label = s.final_.as_ref().and_then(label);
        a.weighted = s.final_.as_ref().and_then(|e| e.weighted_scores.as_ref()).map(|w| panel.vals_of_scores(w, None));
    }
    let vals = |s: &Option<Scores>| s.as_ref().map(|s| panel.vals_of_scores(s, None));
    for (i, g) in panel.groups.iter().enumerate() {
        if let Some(res) = stages.group(g) {
            r.group_aggregate[i] = vals(&res.aggregate);
            r.group_adjusted[i] = vals(&res.human_adjusted);
        }
    }
    r.aggregate = vals(&stages.panel.aggregate);
    r.adjusted = vals(&stages.panel.human_adjusted);
}

fn panel_info(panel: &serde_json::Value, protocol: &str, agents: &[crate::session::event::AgentInfo]) -> PanelInfo {
    let name = panel.get("name").and_then(|v| v.as_str()).unwrap_or("(unnamed panel)").to_string();
    let mut keys: Vec<String> = panel
        .get("dimensions")
        .and_then(|d| d.as_array())
        .map(|dims| dims.iter().filter_map(|d| d.get("key").and_then(|k| k.as_str()).map(str::to_string)).collect())
        .unwrap_or_default();
    // `overall` last, where the panel has one: asked beside the dimensions
    // (unless `overall = false`) or rated as a dimension keyed `overall`.
    let rated = keys.iter().any(|k| k == "overall");
    keys.retain(|k| k != "overall");
    if rated || panel.get("overall").and_then(|v| v.as_bool()) != Some(false) {
        keys.push("overall".into());
    }
    let mut groups: Vec<String> = panel
        .get("groups")
        .and_then(|g| g.as_array())
        .map(|gs| gs.iter().filter_map(|g| g.get("name").and_then(|n| n.as_str()).map(str::to_string)).collect())
        .unwrap_or_default();
    for a in agents {
        if !groups.contains(&a.group) {
            groups.push(a.group.clone());
        }
    }
    let scale = panel.get("scale").and_then(|s| Some((s.get("min")?.as_f64()?, s.get("max")?.as_f64()?)));
    let pairwise = super::pairwise::record::compares_pairs(protocol, panel);
    let reviewed = reviews(protocol, panel);
    let mut models: Vec<String> = Vec::new();
    for a in agents {
        let m = format!("{}/{}", a.provider, a.model);
        if !models.contains(&m) {
            models.push(m);
        }
    }
    PanelInfo { name, protocol: protocol.to_string(), pairwise, reviewed, keys, groups, scale, models }
}

/// Whether a session's run had a meta-evaluator review its scores: from its
/// recorded panel's stages, else its protocol's by name; a protocol this
/// build does not know has no review to read.
fn reviews(protocol: &str, panel: &serde_json::Value) -> bool {
    use serde::Deserialize;
    let section = panel
        .get("protocol")
        .and_then(|p| crate::panel::ProtocolSection::deserialize(p).ok())
        .or_else(|| crate::panel::Protocol::parse(protocol).map(crate::panel::ProtocolSection::new));
    section.is_some_and(|s| s.results() == crate::panel::Results::ReviewedScores)
}

/// Logs read, and what could not be read.
#[derive(Debug, Default)]
pub struct Loaded {
    pub records: Vec<ItemRecord>,
    /// One message per file that could not be used.
    pub problems: Vec<String>,
}

/// Read every log, on several threads.
pub fn load_records(files: &[PathBuf], threads: usize) -> Loaded {
    let cache = PanelCache::default();
    let threads = threads.clamp(1, 64).min(files.len().max(1));
    let chunk = files.len().div_ceil(threads).max(1);
    let parts: Vec<Loaded> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|part| {
                let cache = &cache;
                s.spawn(move || {
                    let mut out = Loaded::default();
                    for f in part {
                        match std::fs::read(f) {
                            Ok(bytes) => match read_record(f, &bytes, cache) {
                                Ok(r) => out.records.push(r),
                                Err(e) => out.problems.push(e.to_string()),
                            },
                            Err(e) => out.problems.push(format!("{}: {e}", f.display())),
                        }
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| Loaded {
                    records: Vec::new(),
                    problems: vec!["a reading thread stopped abnormally; some logs were not read".into()],
                })
            })
            .collect()
    });
    let mut all = Loaded::default();
    for p in parts {
        all.records.extend(p.records);
        all.problems.extend(p.problems);
    }
    all
}
