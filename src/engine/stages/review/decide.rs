//! A person's decisions on SAGEval's changes: accepting or rejecting a
//! rectified value, and adopting a proposed definition or aspect into a new
//! panel file.

use crate::engine::review::Proposal;
use crate::engine::runtime::Run;
use crate::engine::stages::assess::verdicts::mean_overall;
use crate::panel::composition::StageKind;
use crate::panel::{Dimension, adopt};
use crate::session::event::{EventKind, ProposalKind};

impl Run {
    fn refuse_unless_sage(&self, command: &str, author: &str) -> bool {
        if self.panel.protocol.composition().is_some_and(|c| c.has(StageKind::Review)) {
            return false;
        }
        let protocol = self.panel.protocol.kind.as_str();
        self.reject(command, format!("{protocol} has no meta-evaluator, so nothing to {command}"), author);
        true
    }

    /// Accept or reject the meta-evaluator's revision of `dimension` (of
    /// `agent`'s evaluation; needed only when several were revised).
    pub(crate) fn decide_revision(&self, dimension: String, agent: Option<String>, accept: bool, author: String) {
        let command = if accept { "accept" } else { "reject" };
        if self.refuse_unless_sage(command, &author) {
            return;
        }
        let (revision, value) = {
            let mut st = self.state();
            let matching: Vec<_> = st
                .sage
                .revisions
                .iter()
                .filter(|r| r.dimension == dimension && agent.as_ref().is_none_or(|a| *a == r.agent))
                .cloned()
                .collect();
            let revision = match matching.as_slice() {
                [one] => one.clone(),
                [] => {
                    let revised: Vec<String> = st.sage.revisions.iter().map(|r| r.dimension.clone()).collect();
                    drop(st);
                    let why = if revised.is_empty() {
                        "the meta-evaluator has revised nothing (yet)".to_string()
                    } else {
                        format!("no revision of \"{dimension}\"; revised: {}", revised.join(", "))
                    };
                    return self.reject(command, why, &author);
                }
                many => {
                    let agents: Vec<&str> = many.iter().map(|r| r.agent.as_str()).collect();
                    let why = format!("{dimension} was revised for {}; name the agent", agents.join(", "));
                    drop(st);
                    return self.reject(command, why, &author);
                }
            };
            let value = if accept { Some(revision.to.clone()) } else { revision.from.clone() };
            if let Some(i) = st.agent_index(&revision.agent)
                && let Some(ev) = st.agents[i].progress.latest.as_mut()
            {
                match &value {
                    Some(v) => v.set_in(ev, &dimension),
                    None if dimension == crate::panel::OVERALL => ev.overall = None,
                    None => {
                        ev.scores.remove(&dimension);
                        ev.labels.remove(&dimension);
                    }
                }
                mean_overall(ev, &self.panel);
            }
            (revision, value)
        };
        self.emit(EventKind::RevisionDecided { agent: revision.agent, dimension, accepted: accept, value, author });
        let published = !self.state().aggregates.is_empty();
        if published {
            self.reemit_aggregates();
        }
    }

    /// Adopt a proposed definition or new aspect into this session's new
    /// panel file (written beside the panel's own, never over an existing file).
    pub(crate) fn adopt_proposal(&self, key: String, author: String) {
        if self.refuse_unless_sage("adopt", &author) {
            return;
        }
        let (proposal, adopted, file) = {
            let st = self.state();
            let Some(p) = st.sage.proposals.iter().rev().find(|p| p.key == key).cloned() else {
                let keys: Vec<&str> = st.sage.proposals.iter().map(|p| p.key.as_str()).collect();
                let why = if keys.is_empty() {
                    "the meta-evaluator has proposed nothing (yet)".to_string()
                } else {
                    format!("no proposal for \"{key}\"; proposed: {}", keys.join(", "))
                };
                drop(st);
                return self.reject("adopt", why, &author);
            };
            if st.sage.adopted.contains(&(p.kind, p.key.clone())) {
                let path = st.sage.panel_file.as_ref().map(|f| f.display().to_string()).unwrap_or_default();
                drop(st);
                return self.reject("adopt", format!("{key} is already adopted into {path}"), &author);
            }
            let mut adopted: Vec<Proposal> = st
                .sage
                .adopted
                .iter()
                .filter_map(|(k, key)| st.sage.proposals.iter().rev().find(|p| p.kind == *k && p.key == *key).cloned())
                .collect();
            adopted.push(p.clone());
            (p, adopted, st.sage.panel_file.clone())
        };
        let mut panel = (*self.panel).clone();
        let mut changes = Vec::new();
        for p in &adopted {
            match p.kind {
                ProposalKind::Definition => {
                    if let Some(d) = panel.dimensions.iter_mut().find(|d| d.key == p.key) {
                        d.description = p.definition.clone();
                        changes
                            .push(adopt::Change::Definition { key: p.key.clone(), description: p.definition.clone() });
                    }
                }
                ProposalKind::Aspect => {
                    let d = Dimension {
                        key: p.key.clone(),
                        name: p.name.clone(),
                        description: p.definition.clone(),
                        steps: None,
                        labels: Vec::new(),
                    };
                    panel.dimensions.push(d.clone());
                    changes.push(adopt::Change::Dimension(d));
                }
            }
        }
        let note = format!(
            "Written by moot from {} in session {}: {}.",
            self.panel.source_display(),
            self.config.session_id,
            adopted.iter().map(|p| format!("{} {}", p.kind.as_str(), p.key)).collect::<Vec<_>>().join(", ")
        );
        let path = file.unwrap_or_else(|| adopt::new_panel_path(&self.panel));
        // The panel's own text with the changes made in place (its comments
        // stay); a panel with no text to edit is written out whole.
        let text = match adopt::source_text(&self.panel) {
            Some(original) => adopt::edit_toml(&original, &changes, &note),
            None => adopt::to_toml(&panel, &note),
        };
        if let Err(e) = text.and_then(|t| adopt::write_panel(&panel, &t, &path)) {
            return self.reject("adopt", e, &author);
        }
        {
            let mut st = self.state();
            st.sage.adopted.push((proposal.kind, proposal.key.clone()));
            st.sage.panel_file = Some(path.clone());
        }
        self.emit(EventKind::ProposalAdopted {
            proposal: proposal.kind,
            key: proposal.key,
            path: path.display().to_string(),
            author,
        });
    }
}
