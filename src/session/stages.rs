//! The stages of a session's scores, defined once for every reader: the view
//! fold, `moot report` and `moot sessions export` all fold a log's events
//! through [`Stages::apply`].
//!
//! For each agent:
//! - **initial** — its phase-1 evaluation, as it gave it;
//! - **final** — its final evaluation after the debate (`final_evaluations`;
//!   the latest evaluation while a log has none), as the agent gave it: a
//!   value a person had set on it is restored to the agent's own (absent if
//!   the agent had none);
//! - **human_adjusted** — the final evaluation with every standing override
//!   of a person applied (before or after `final_evaluations`);
//! - **weighted** — the final evaluation's probability-weighted scores
//!   (Σ p(s)·s over the scale's score tokens), when the provider returned
//!   log-probabilities (G-Eval asks for them): the judge's, never a person's.
//!
//! For each group and for the panel:
//! - **aggregate** — the result as the protocol computed it: the first
//!   `aggregation_completed`, with the values in its `original` restored (no
//!   scores at all when it has `no_result`);
//! - **human_adjusted** — the last `aggregation_completed`, every override applied.
//!
//! Values a person set are listed in `set_by` (dimension → author) for the
//! `human_adjusted` stage; the other stages hold the judges' values only.

use std::collections::{BTreeMap, HashMap};

use super::event::{AspectValue, Evaluation, EventKind, OverrideTarget, Phase, Role, Scores};

/// The stage names, as exported and reported.
pub const INITIAL: &str = "initial";
pub const FINAL: &str = "final";
pub const AGGREGATE: &str = "aggregate";
pub const HUMAN_ADJUSTED: &str = "human_adjusted";
pub const WEIGHTED: &str = "weighted";

/// What a panel of `protocol` calls a stage, as its declaration names its
/// `initial` and `final` stages (SAGEval's hold the evaluator's values and
/// the rectified ones: `evaluator` and `rectified`). The other stages, and
/// every stage of a protocol this build does not know, keep their own names.
pub fn label(protocol: &str, stage: &'static str) -> &'static str {
    let Some(names) = crate::panel::Protocol::parse(protocol).map(|p| p.spec().stage_names) else {
        return stage;
    };
    match stage {
        INITIAL => names.initial,
        FINAL => names.final_,
        _ => stage,
    }
}

/// One agent's stages.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentStages {
    pub name: String,
    pub group: String,
    /// Phase-1 evaluation, the agent's own.
    pub initial: Option<Evaluation>,
    /// Final evaluation, the agent's own values.
    pub final_: Option<Evaluation>,
    /// Final evaluation with the values a person set.
    pub human_adjusted: Option<Evaluation>,
    /// Dimension (or `overall`) → who set that value of `human_adjusted`.
    pub set_by: BTreeMap<String, String>,
    /// The latest evaluation as the agent gave it.
    latest: Option<Evaluation>,
    /// Overrides standing on the latest evaluation: dimension → (agent's own value, value set, author).
    standing: BTreeMap<String, (Option<f64>, f64, String)>,
    has_final: bool,
    /// SAGEval: `overall` is the mean of the scores, and the last person whose
    /// decision changed one of them.
    overall_by: Option<String>,
}

/// The stages of one result (a group's or the panel's).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResultStages {
    /// `None` for the panel-wide result.
    pub group: Option<String>,
    /// The protocol's result (with `overall` as a key), before any human input.
    pub aggregate: Option<Scores>,
    /// The last published result (with `overall` as a key).
    pub human_adjusted: Option<Scores>,
    /// Key → who set (or changed, through an agent's score) that value of `human_adjusted`.
    pub set_by: BTreeMap<String, String>,
    /// Why the result has no scores of the judges.
    pub no_result: Option<String>,
    /// Panel-wide: groups left out of the mean for having no result.
    pub left_out: Vec<String>,
    /// Categorical dimension → the majority label of the first published result (the `aggregate` stage).
    pub aggregate_labels: BTreeMap<String, String>,
    /// Categorical dimension → the majority label of the last published result (`human_adjusted`).
    pub labels: BTreeMap<String, String>,
}

/// Every agent's and result's stages in a session.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Stages {
    /// In `session_started` order.
    pub agents: Vec<AgentStages>,
    /// Groups' results, in the order they were first published.
    pub groups: Vec<ResultStages>,
    /// The panel-wide result.
    pub panel: ResultStages,
    index: HashMap<String, usize>,
    /// Agent turns: turn → (agent index, phase).
    turns: HashMap<u64, (usize, Phase)>,
    /// Every override: (target, dimension, author).
    overrides: Vec<(OverrideTarget, String, String)>,
}

impl Stages {
    pub fn agent(&self, name: &str) -> Option<&AgentStages> {
        self.index.get(name).map(|&i| &self.agents[i])
    }

    pub fn group(&self, name: &str) -> Option<&ResultStages> {
        self.groups.iter().find(|g| g.group.as_deref() == Some(name))
    }

    /// Fold one event.
    pub fn apply(&mut self, kind: &EventKind) {
        match kind {
            EventKind::SessionStarted { agents, .. } => {
                *self = Self::default();
                for a in agents {
                    self.index.insert(a.name.clone(), self.agents.len());
                    self.agents.push(AgentStages {
                        name: a.name.clone(),
                        group: a.group.clone(),
                        ..Default::default()
                    });
                }
            }
            EventKind::TurnStarted { turn, agent, phase, role: Role::Agent, .. } => {
                if let Some(&i) = self.index.get(agent) {
                    self.turns.insert(*turn, (i, *phase));
                }
            }
            EventKind::TurnCompleted { turn, evaluation: Some(ev), .. } => {
                let Some(&(i, phase)) = self.turns.get(turn) else { return };
                let a = &mut self.agents[i];
                if phase == Phase::Initial {
                    a.initial = Some(ev.clone());
                }
                a.latest = Some(ev.clone());
                a.standing.clear();
                // Until the final evaluations are recorded, the latest stands as final.
                if !a.has_final {
                    a.final_ = Some(ev.clone());
                    a.human_adjusted = Some(ev.clone());
                    a.set_by.clear();
                }
            }
            EventKind::FinalEvaluations { evaluations, .. } => {
                for (name, recorded) in evaluations {
                    let Some(&i) = self.index.get(name) else { continue };
                    let a = &mut self.agents[i];
                    let mut own = recorded.clone();
                    a.set_by.clear();
                    for (dim, (was, to, author)) in &a.standing {
                        if recorded.score(dim) == Some(*to) {
                            restore(&mut own, dim, *was);
                            a.set_by.insert(dim.clone(), author.clone());
                        }
                    }
                    if let Some(author) = &a.overall_by {
                        mean_overall(&mut own);
                        if own.overall != recorded.overall {
                            a.set_by.insert("overall".into(), author.clone());
                        }
                    }
                    a.final_ = Some(own);
                    a.human_adjusted = Some(recorded.clone());
                    a.has_final = true;
                }
            }
            EventKind::ScoreOverridden { target, dimension, from, to, author, .. } => {
                self.overrides.push((target.clone(), dimension.clone(), author.clone()));
                let agent = match target {
                    OverrideTarget::Agent { agent } | OverrideTarget::Turn { agent, .. } => agent,
                    OverrideTarget::Final { .. } => return,
                };
                self.stand(agent, dimension, *from, *to, author);
            }
            // A revision by another participant (SAGEval) is part of the agent's evaluation.
            EventKind::EvaluationRevised { agent, dimension, to: AspectValue::Score(to), .. } => {
                let Some(&i) = self.index.get(agent) else { return };
                let a = &mut self.agents[i];
                for ev in [&mut a.latest, &mut a.final_, &mut a.human_adjusted].into_iter().flatten() {
                    ev.set_score(dimension, *to);
                    mean_overall(ev);
                }
            }
            // A person's decision on a revision: a value set by a person, like an override.
            EventKind::RevisionDecided { agent, dimension, value: Some(AspectValue::Score(to)), author, .. } => {
                let target = OverrideTarget::Agent { agent: agent.clone() };
                self.overrides.push((target.clone(), dimension.clone(), author.clone()));
                // The overall, a mean of the scores, moves with them.
                self.overrides.push((target, "overall".into(), author.clone()));
                let from = self.agent(agent).and_then(|a| a.latest.as_ref()).and_then(|ev| ev.score(dimension));
                self.stand(agent, dimension, from, *to, author);
                let Some(&i) = self.index.get(agent) else { return };
                let a = &mut self.agents[i];
                a.overall_by = Some(author.clone());
                if let Some(ev) = a.human_adjusted.as_mut() {
                    let before = ev.overall;
                    mean_overall(ev);
                    if ev.overall != before {
                        a.set_by.insert("overall".into(), author.clone());
                    }
                }
            }
            EventKind::AggregationCompleted {
                group,
                scores,
                overall,
                original,
                no_result,
                left_out,
                labels,
                original_labels,
                ..
            } => {
                let mut published = scores.clone();
                if let Some(o) = overall {
                    published.insert("overall".into(), *o);
                }
                let set_by = self.authors(group.as_deref(), &published, original);
                let slot = match group {
                    Some(g) => match self.groups.iter().position(|r| r.group.as_ref() == Some(g)) {
                        Some(i) => &mut self.groups[i],
                        None => {
                            self.groups.push(ResultStages { group: Some(g.clone()), ..Default::default() });
                            self.groups.last_mut().expect("just pushed")
                        }
                    },
                    None => &mut self.panel,
                };
                if slot.aggregate.is_none() {
                    let mut base = if no_result.is_some() { Scores::new() } else { published.clone() };
                    if no_result.is_none() {
                        base.extend(original.iter().map(|(k, v)| (k.clone(), *v)));
                    }
                    slot.aggregate = Some(base);
                    let mut base = labels.clone();
                    base.extend(original_labels.iter().map(|(k, l)| (k.clone(), l.clone())));
                    slot.aggregate_labels = base;
                }
                slot.human_adjusted = Some(published);
                slot.set_by = set_by;
                slot.no_result = no_result.clone();
                slot.left_out = left_out.clone();
                slot.labels = labels.clone();
            }
            _ => {}
        }
    }

    /// A value a person set on an agent's latest evaluation (`from`: the agent's own).
    fn stand(&mut self, agent: &str, dimension: &str, from: Option<f64>, to: f64, author: &str) {
        let Some(&i) = self.index.get(agent) else { return };
        let a = &mut self.agents[i];
        if a.latest.is_none() {
            return;
        }
        let own = a.standing.get(dimension).map(|s| s.0).unwrap_or(from);
        a.standing.insert(dimension.to_string(), (own, to, author.to_string()));
        if let Some(ev) = a.human_adjusted.as_mut() {
            ev.set_score(dimension, to);
            a.set_by.insert(dimension.to_string(), author.to_string());
        }
    }

    /// Who set each value of a published result that is not the protocol's:
    /// the author of an override of that result, else the authors of the
    /// overrides it was computed from (agents' scores, groups' results).
    fn authors(&self, group: Option<&str>, published: &Scores, original: &Scores) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for key in published.keys() {
            let direct =
                self.overrides.iter().rev().find(|(t, d, _)| {
                    d == key && matches!(t, OverrideTarget::Final { group: g } if g.as_deref() == group)
                });
            if let Some((_, _, author)) = direct {
                out.insert(key.clone(), author.clone());
                continue;
            }
            if !original.contains_key(key) {
                continue;
            }
            let mut who: Vec<&str> = Vec::new();
            for (t, d, author) in &self.overrides {
                let feeds = d == key
                    && match t {
                        OverrideTarget::Agent { agent } | OverrideTarget::Turn { agent, .. } => {
                            group.is_none() || self.agent(agent).is_some_and(|a| Some(a.group.as_str()) == group)
                        }
                        OverrideTarget::Final { group: Some(_) } => group.is_none(),
                        OverrideTarget::Final { group: None } => false,
                    };
                if feeds && !who.contains(&author.as_str()) {
                    who.push(author);
                }
            }
            if !who.is_empty() {
                out.insert(key.clone(), who.join(", "));
            }
        }
        out
    }
}

/// SAGEval's overall: the mean of an evaluation's scores (when it has one).
fn mean_overall(ev: &mut Evaluation) {
    if ev.overall.is_some() && !ev.scores.is_empty() {
        ev.overall = Some(ev.scores.values().sum::<f64>() / ev.scores.len() as f64);
    }
}

/// Put back the agent's own value of a dimension (`None`: it had none).
fn restore(ev: &mut Evaluation, dim: &str, own: Option<f64>) {
    match (dim, own) {
        (_, Some(v)) => ev.set_score(dim, v),
        ("overall", None) => ev.overall = None,
        (_, None) => {
            ev.scores.remove(dim);
        }
    }
}

/// An evaluation's scores with `overall` as a key.
pub fn with_overall(ev: &Evaluation) -> Scores {
    let mut s = ev.scores.clone();
    if let Some(o) = ev.overall {
        s.insert("overall".into(), o);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::event::{AgentInfo, Usage};

    fn started() -> EventKind {
        let agent = |name: &str| AgentInfo {
            name: name.into(),
            group: "Teachers".into(),
            role: String::new(),
            provider: "p".into(),
            model: "m".into(),
        };
        EventKind::SessionStarted {
            schema_version: crate::session::event::SCHEMA_VERSION,
            session_id: "s".into(),
            protocol: "maj-eval".into(),
            panel: serde_json::json!({}),
            item: crate::testkit::item(),
            agents: vec![agent("Ann"), agent("Bea")],
            roles: Default::default(),
            seed: 0,
            moot_version: "0".into(),
            provider_note: None,
            preset: Default::default(),
            departures: Vec::new(),
        }
    }

    fn ev(grammar: f64, overall: f64) -> Evaluation {
        Evaluation { scores: Scores::from([("grammar".into(), grammar)]), overall: Some(overall), ..Default::default() }
    }

    fn turn(turn: u64, agent: &str, phase: Phase, e: Evaluation) -> [EventKind; 2] {
        [
            EventKind::TurnStarted {
                turn,
                agent: agent.into(),
                group: Some("Teachers".into()),
                phase,
                round: None,
                role: Role::Agent,
                kind: Default::default(),
                dimension: None,
                pair: None,
            },
            EventKind::TurnCompleted {
                turn,
                agent: agent.into(),
                text: String::new(),
                evaluation: Some(e),
                parse_error: None,
                usage: Usage::default(),
                latency_ms: 0,
                cached: false,
                done: false,
                truncated: false,
                repeats: None,
                misquotes: Vec::new(),
                misstates: Vec::new(),
                endpoint: None,
            },
        ]
    }

    fn over(agent: &str, dimension: &str, from: f64, to: f64) -> EventKind {
        EventKind::ScoreOverridden {
            target: OverrideTarget::Agent { agent: agent.into() },
            dimension: dimension.into(),
            from: Some(from),
            to,
            reason: None,
            author: "alice".into(),
        }
    }

    fn fold(events: impl IntoIterator<Item = EventKind>) -> Stages {
        let mut s = Stages::default();
        for e in events {
            s.apply(&e);
        }
        s
    }

    #[test]
    fn a_value_set_during_the_debate_is_the_persons_not_the_agents_final() {
        let mut events = vec![started()];
        events.extend(turn(1, "Ann", Phase::Initial, ev(4.0, 4.0)));
        events.extend(turn(2, "Bea", Phase::Initial, ev(2.0, 2.0)));
        // Bea's grammar set to 5 during the debate; she never evaluates again,
        // so the recorded final evaluation carries the person's 5.
        events.push(over("Bea", "grammar", 2.0, 5.0));
        events.push(over("Bea", "grammar", 5.0, 4.0));
        events.push(EventKind::FinalEvaluations {
            group: "Teachers".into(),
            evaluations: [("Ann".to_string(), ev(4.0, 4.0)), ("Bea".to_string(), ev(4.0, 2.0))].into(),
            turns: Default::default(),
        });
        let s = fold(events.clone());
        let bea = s.agent("Bea").unwrap();
        assert_eq!(bea.initial.as_ref().unwrap().scores["grammar"], 2.0);
        assert_eq!(bea.final_.as_ref().unwrap().scores["grammar"], 2.0, "her own value, not the person's");
        assert_eq!(bea.human_adjusted.as_ref().unwrap().scores["grammar"], 4.0);
        assert_eq!(bea.set_by["grammar"], "alice");
        assert!(s.agent("Ann").unwrap().set_by.is_empty());

        // An override after the final evaluations changes only the human-adjusted stage.
        events.push(over("Ann", "overall", 4.0, 1.0));
        let s = fold(events.clone());
        let ann = s.agent("Ann").unwrap();
        assert_eq!(ann.final_.as_ref().unwrap().overall, Some(4.0));
        assert_eq!(ann.human_adjusted.as_ref().unwrap().overall, Some(1.0));
        assert_eq!(ann.set_by["overall"], "alice");

        // A later evaluation of her own replaces a standing override.
        let mut events = vec![started()];
        events.extend(turn(1, "Bea", Phase::Initial, ev(2.0, 2.0)));
        events.push(over("Bea", "grammar", 2.0, 5.0));
        events.extend(turn(2, "Bea", Phase::Debate, ev(3.0, 3.0)));
        let s = fold(events);
        let bea = s.agent("Bea").unwrap();
        assert_eq!(bea.final_.as_ref().unwrap().scores["grammar"], 3.0);
        assert_eq!(bea.human_adjusted.as_ref().unwrap().scores["grammar"], 3.0);
        assert!(bea.set_by.is_empty());
    }

    fn aggregate(group: Option<&str>, grammar: Option<f64>, original: &[(&str, f64)]) -> EventKind {
        EventKind::AggregationCompleted {
            group: group.map(str::to_string),
            feedback: String::new(),
            scores: grammar.map(|g| Scores::from([("grammar".into(), g)])).unwrap_or_default(),
            overall: None,
            original: original.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            method: Some("mean".into()),
            no_result: grammar.is_none().then(|| "no agent produced a readable evaluation".into()),
            left_out: Vec::new(),
            labels: BTreeMap::new(),
            original_labels: BTreeMap::new(),
            ranking: Vec::new(),
        }
    }

    #[test]
    fn results_keep_the_protocols_value_and_name_who_changed_it() {
        let mut events = vec![started()];
        events.extend(turn(1, "Ann", Phase::Initial, ev(4.0, 4.0)));
        events.extend(turn(2, "Bea", Phase::Initial, ev(2.0, 2.0)));
        // Bea's grammar set before aggregation: the published mean is 4, the protocol's 3.
        events.push(over("Bea", "grammar", 2.0, 4.0));
        events.push(aggregate(Some("Teachers"), Some(4.0), &[("grammar", 3.0)]));
        events.push(aggregate(None, Some(4.0), &[("grammar", 3.0)]));
        events.push(EventKind::ScoreOverridden {
            target: OverrideTarget::Final { group: None },
            dimension: "grammar".into(),
            from: Some(4.0),
            to: 2.0,
            reason: None,
            author: "bob".into(),
        });
        events.push(aggregate(None, Some(2.0), &[("grammar", 3.0)]));
        let s = fold(events);
        let g = s.group("Teachers").unwrap();
        assert_eq!(g.aggregate.as_ref().unwrap()["grammar"], 3.0);
        assert_eq!(g.human_adjusted.as_ref().unwrap()["grammar"], 4.0);
        assert_eq!(g.set_by["grammar"], "alice", "through Bea's score");
        assert_eq!(s.panel.aggregate.as_ref().unwrap()["grammar"], 3.0);
        assert_eq!(s.panel.human_adjusted.as_ref().unwrap()["grammar"], 2.0);
        assert_eq!(s.panel.set_by["grammar"], "bob", "set on the result itself");

        // A result without scores stays empty at the aggregate stage.
        let s = fold([started(), aggregate(None, None, &[])]);
        assert_eq!(s.panel.aggregate, Some(Scores::new()));
        assert!(s.panel.no_result.is_some());
    }
}
