//! What a meta-evaluator changed and proposed (SAGEval), folded from the
//! `evaluation_revised`, `definition_proposed`, `aspect_proposed`,
//! `revision_decided` and `proposal_adopted` events.

use super::event::{AspectValue, EventKind, ProposalKind};

/// A person's decision on a revision.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub accepted: bool,
    pub author: String,
}

/// One revised value of an agent's evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct RevisionView {
    pub by: String,
    pub turn: u64,
    pub agent: String,
    pub agent_turn: Option<u64>,
    pub dimension: String,
    pub from: Option<AspectValue>,
    pub to: AspectValue,
    pub reason: String,
    /// The latest decision of a person, if any.
    pub decision: Option<Decision>,
}

impl RevisionView {
    /// The value that stands: the revised one unless a person rejected it.
    pub fn standing(&self) -> Option<&AspectValue> {
        match &self.decision {
            Some(d) if !d.accepted => self.from.as_ref(),
            _ => Some(&self.to),
        }
    }
    /// `lowered`, `raised` or `relabelled` (`None` when no score moved).
    pub fn direction(&self) -> Option<&'static str> {
        match (self.from.as_ref().and_then(AspectValue::score), self.to.score()) {
            (Some(a), Some(b)) if b < a => Some("lowered"),
            (Some(a), Some(b)) if b > a => Some("raised"),
            (_, None) => Some("relabelled"),
            _ => None,
        }
    }
}

/// A proposed definition or new aspect.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposalView {
    pub kind: ProposalKind,
    pub by: String,
    pub turn: u64,
    pub key: String,
    pub name: String,
    pub definition: String,
    /// The proposer's score of the item on a new aspect.
    pub score: Option<f64>,
    pub reason: String,
    /// The panel file it was adopted into, and by whom.
    pub adopted: Option<(String, String)>,
}

/// Every revision and proposal of a session, in log order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SageView {
    pub revisions: Vec<RevisionView>,
    pub proposals: Vec<ProposalView>,
}

impl SageView {
    pub fn is_empty(&self) -> bool {
        self.revisions.is_empty() && self.proposals.is_empty()
    }

    /// The latest revision of an agent's dimension.
    pub fn revision(&self, agent: &str, dimension: &str) -> Option<&RevisionView> {
        self.revisions.iter().rev().find(|r| r.agent == agent && r.dimension == dimension)
    }

    pub fn proposal(&self, kind: ProposalKind, key: &str) -> Option<&ProposalView> {
        self.proposals.iter().rev().find(|p| p.kind == kind && p.key == key)
    }

    /// Fold one event; others are ignored.
    pub fn apply(&mut self, kind: &EventKind) {
        match kind {
            EventKind::SessionStarted { .. } => *self = Self::default(),
            EventKind::EvaluationRevised { by, turn, agent, agent_turn, dimension, from, to, reason } => {
                self.revisions.retain(|r| !(r.agent == *agent && r.dimension == *dimension));
                self.revisions.push(RevisionView {
                    by: by.clone(),
                    turn: *turn,
                    agent: agent.clone(),
                    agent_turn: *agent_turn,
                    dimension: dimension.clone(),
                    from: from.clone(),
                    to: to.clone(),
                    reason: reason.clone(),
                    decision: None,
                });
            }
            EventKind::DefinitionProposed { by, turn, dimension, definition, reason } => {
                self.proposals.push(ProposalView {
                    kind: ProposalKind::Definition,
                    by: by.clone(),
                    turn: *turn,
                    key: dimension.clone(),
                    name: String::new(),
                    definition: definition.clone(),
                    score: None,
                    reason: reason.clone(),
                    adopted: None,
                });
            }
            EventKind::AspectProposed { by, turn, key, name, definition, score, reason } => {
                self.proposals.push(ProposalView {
                    kind: ProposalKind::Aspect,
                    by: by.clone(),
                    turn: *turn,
                    key: key.clone(),
                    name: name.clone(),
                    definition: definition.clone(),
                    score: Some(*score),
                    reason: reason.clone(),
                    adopted: None,
                });
            }
            EventKind::RevisionDecided { agent, dimension, accepted, author, .. } => {
                if let Some(r) =
                    self.revisions.iter_mut().rev().find(|r| r.agent == *agent && r.dimension == *dimension)
                {
                    r.decision = Some(Decision { accepted: *accepted, author: author.clone() });
                }
            }
            EventKind::ProposalAdopted { proposal, key, path, author } => {
                if let Some(p) = self.proposals.iter_mut().rev().find(|p| p.kind == *proposal && p.key == *key) {
                    p.adopted = Some((path.clone(), author.clone()));
                }
            }
            _ => {}
        }
    }
}

impl super::fold::SessionView {
    /// The agents' values and the transcript line of a SAGEval event.
    pub(super) fn apply_sage(&mut self, kind: &EventKind) {
        use super::fold::TimelineEntry;
        let (agent, dimension, value, human_from) = match kind {
            EventKind::EvaluationRevised { agent, dimension, to, .. } => (agent, dimension, Some(to), None),
            EventKind::RevisionDecided { agent, dimension, value, accepted, .. } => {
                // A rejection changes the value: the revised one is shown beside it.
                let own = self.sage.revision(agent, dimension).and_then(|r| r.to.score()).filter(|_| !accepted);
                (agent, dimension, value.as_ref(), Some(own))
            }
            _ => {
                if let Some(text) = note(kind) {
                    self.timeline
                        .push(TimelineEntry::Note { text, human: matches!(kind, EventKind::ProposalAdopted { .. }) });
                }
                return;
            }
        };
        // An aspect keyed `overall` is the overall itself, not a mean.
        let rated = self.panel.as_ref().is_some_and(|p| p.rates_overall());
        if let Some(a) = self.agents.iter_mut().find(|a| a.info.name == *agent)
            && let (Some(ev), Some(v)) = (a.progress.latest.as_mut(), value)
        {
            v.set_in(ev, dimension);
            // SAGEval's overall is the mean of the aspects' scores.
            if !rated && ev.overall.is_some() && !ev.scores.is_empty() {
                ev.overall = Some(ev.scores.values().sum::<f64>() / ev.scores.len() as f64);
            }
            if let Some(Some(own)) = human_from {
                a.overridden.entry(dimension.clone()).or_insert(own);
            }
        }
        if let Some(text) = note(kind) {
            self.timeline.push(TimelineEntry::Note { text, human: human_from.is_some() });
        }
    }
}

fn show(v: Option<&AspectValue>) -> String {
    v.map_or_else(|| "none".to_string(), ToString::to_string)
}

/// One transcript line for a SAGEval event.
pub fn note(kind: &EventKind) -> Option<String> {
    Some(match kind {
        EventKind::EvaluationRevised { by, agent, dimension, from, to, reason, .. } => {
            format!("↻ {by} revised {agent}'s {dimension}: {} → {to} — {reason}", show(from.as_ref()))
        }
        EventKind::DefinitionProposed { by, dimension, definition, .. } => {
            format!("✎ {by} proposes a definition of {dimension}: {definition}")
        }
        EventKind::AspectProposed { by, key, definition, score, .. } => {
            let s = AspectValue::Score(*score);
            format!("+ {by} proposes a new aspect {key} (scored {s}): {definition}")
        }
        EventKind::RevisionDecided { agent, dimension, accepted, value, author } => {
            let what = if *accepted { "accepted" } else { "rejected" };
            format!("✓ {author} {what} the revision of {agent}'s {dimension}; {} stands", show(value.as_ref()))
        }
        EventKind::ProposalAdopted { proposal, key, path, author } => {
            format!("✓ {author} adopted the proposed {} {key} into {path}", proposal.as_str())
        }
        _ => return None,
    })
}
