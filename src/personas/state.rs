//! What a build has found and what people decided about it, built only by
//! applying the log's events ([`BuildState::apply`]): a live build, a
//! review and a replayed log all go through the same fold.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::log::{BuildEvent, BuildEventKind, BuildStatus, DocInfo, Estimate, Step};
use super::verify::QuoteCheck;
use crate::session::event::Usage;

/// One perspective of an extracted stakeholder, with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Perspective {
    /// `D1.S2.P1`: document, stakeholder, perspective.
    pub id: String,
    pub text: String,
    /// The quote the model gave as evidence, as it gave it.
    pub evidence: String,
    /// Whether the quote is in the document, and where.
    pub check: QuoteCheck,
}

/// A stakeholder named in a document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stakeholder {
    /// `D1.S2`.
    pub id: String,
    /// Index of its document.
    pub doc: usize,
    pub name: String,
    pub characteristics: String,
    pub perspectives: Vec<Perspective>,
}

/// A perspective of a consolidated group: one persona each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupPerspective {
    /// `G1.P2`.
    pub id: String,
    pub text: String,
    /// The extracted perspectives it merges (`D1.S2.P1`, …).
    pub sources: Vec<String>,
}

/// Stakeholders that consolidation put together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// `G1`.
    pub id: String,
    pub name: String,
    pub description: String,
    /// Stakeholder ids.
    pub members: Vec<String>,
    pub perspectives: Vec<GroupPerspective>,
}

/// The five attributes of a judge, plus its name and one-line role.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Persona {
    pub name: String,
    pub role: String,
    pub demographics: String,
    pub perspective: String,
    pub specialty: String,
    pub traits: String,
    pub relationships: String,
    /// Fields a person changed, with who changed them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub edited_by: BTreeMap<String, String>,
}

/// The persona fields a person may edit, in display order.
pub const PERSONA_FIELDS: [&str; 7] =
    ["name", "role", "demographics", "perspective", "specialty", "traits", "relationships"];

impl Persona {
    pub fn field(&self, key: &str) -> Option<&str> {
        Some(match key {
            "name" => &self.name,
            "role" => &self.role,
            "demographics" => &self.demographics,
            "perspective" => &self.perspective,
            "specialty" => &self.specialty,
            "traits" => &self.traits,
            "relationships" => &self.relationships,
            _ => return None,
        })
    }
    pub fn field_mut(&mut self, key: &str) -> Option<&mut String> {
        Some(match key {
            "name" => &mut self.name,
            "role" => &mut self.role,
            "demographics" => &mut self.demographics,
            "perspective" => &mut self.perspective,
            "specialty" => &mut self.specialty,
            "traits" => &mut self.traits,
            "relationships" => &mut self.relationships,
            _ => return None,
        })
    }
}

/// A person's choice during review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Decision {
    /// Take back a rejection (a stakeholder, a perspective, a group).
    Accept {
        target: String,
    },
    /// Leave a stakeholder, an extracted or group perspective, or a group out of the panel.
    Reject {
        target: String,
    },
    /// New wording: a stakeholder's name, a perspective's text.
    Edit {
        target: String,
        text: String,
    },
    RenameGroup {
        group: String,
        name: String,
    },
    /// Move every member and perspective of `from` into `into`.
    MergeGroups {
        into: String,
        from: String,
    },
    /// Move these perspectives of `group` into a new group called `name`.
    SplitGroup {
        group: String,
        perspectives: Vec<String>,
        name: String,
    },
    /// At most `max` personas for the group (its first perspectives); none: no cap.
    CapGroup {
        group: String,
        max: Option<usize>,
    },
    EditPersona {
        perspective: String,
        field: String,
        value: String,
    },
}

/// One model call as the screen shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallView {
    pub call: u64,
    pub step: Step,
    pub about: String,
    pub text: String,
    pub usage: Option<Usage>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct BuildState {
    pub build_id: String,
    pub task: String,
    pub provider: String,
    pub model: String,
    pub estimate: Estimate,
    pub documents: Vec<DocInfo>,
    pub stakeholders: Vec<Stakeholder>,
    pub groups: Vec<Group>,
    /// Group perspective id → its persona (the latest written).
    pub personas: BTreeMap<String, Persona>,
    pub rejected: BTreeSet<String>,
    pub caps: BTreeMap<String, usize>,
    pub usage: Usage,
    pub by_step: BTreeMap<Step, Usage>,
    pub calls: Vec<CallView>,
    /// Steps whose answer stayed unreadable or whose call failed: (step, about, error).
    pub failures: Vec<(Step, String, String)>,
    pub status: Option<BuildStatus>,
    pub error: Option<String>,
    pub panels: Vec<PathBuf>,
    pub decisions: Vec<(Decision, String)>,
    /// Stakeholders, perspectives and groups whose wording or name a person set, with who set it.
    pub edited: BTreeMap<String, String>,
    /// Extracted perspectives consolidation put in no group.
    pub left_out: Vec<String>,
    /// The next event's sequence number.
    pub next_seq: u64,
    groups_made: usize,
}

impl BuildState {
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a BuildEvent>) -> Self {
        let mut s = Self::default();
        for e in events {
            s.apply(e);
        }
        s
    }

    pub fn apply(&mut self, event: &BuildEvent) {
        self.next_seq = self.next_seq.max(event.seq + 1);
        match &event.kind {
            BuildEventKind::BuildStarted { build_id, task, provider, model, estimate, .. } => {
                self.build_id = build_id.clone();
                self.task = task.clone();
                self.provider = provider.clone();
                self.model = model.clone();
                self.estimate = *estimate;
            }
            BuildEventKind::DocumentRead { doc, info } => {
                if self.documents.len() <= *doc {
                    self.documents.resize(*doc + 1, info.clone());
                }
                self.documents[*doc] = info.clone();
            }
            BuildEventKind::CallStarted { call, step, about } => self.calls.push(CallView {
                call: *call,
                step: *step,
                about: about.clone(),
                text: String::new(),
                usage: None,
                error: None,
            }),
            BuildEventKind::CallDelta { call, text } => {
                if let Some(c) = self.call_mut(*call) {
                    c.text.push_str(text);
                }
            }
            BuildEventKind::CallCompleted { call, text, usage, parse_error, .. } => {
                let step = self.call_mut(*call).map(|c| {
                    c.text = text.clone();
                    c.usage = Some(*usage);
                    c.error = parse_error.clone();
                    c.step
                });
                self.usage.add(usage);
                if let Some(step) = step {
                    self.by_step.entry(step).or_default().add(usage);
                }
            }
            BuildEventKind::CallFailed { call, error, will_retry, .. } => {
                if let Some(c) = self.call_mut(*call) {
                    c.text.clear();
                    if !will_retry {
                        c.error = Some(error.clone());
                    }
                }
            }
            BuildEventKind::StakeholdersExtracted { stakeholders, .. } => {
                self.stakeholders.extend(stakeholders.iter().cloned());
            }
            BuildEventKind::StepFailed { step, about, error } => {
                self.failures.push((*step, about.clone(), error.clone()));
            }
            BuildEventKind::GroupsFormed { groups, left_out } => {
                self.left_out = left_out.clone();
                self.groups = groups.clone();
                self.groups_made = groups.len();
                self.personas.clear();
            }
            BuildEventKind::PersonaWritten { perspective, persona } => {
                self.personas.insert(perspective.clone(), persona.clone());
            }
            BuildEventKind::Decided { decision, author } => {
                self.decide(decision, author);
                self.decisions.push((decision.clone(), author.clone()));
            }
            BuildEventKind::PanelWritten { path, .. } => self.panels.push(path.clone()),
            BuildEventKind::BuildEnded { status, error, .. } => {
                self.status = Some(*status);
                self.error = error.clone();
            }
        }
    }

    fn call_mut(&mut self, call: u64) -> Option<&mut CallView> {
        self.calls.iter_mut().rev().find(|c| c.call == call)
    }

    fn decide(&mut self, decision: &Decision, author: &str) {
        match decision {
            Decision::Accept { target } => {
                self.rejected.remove(target);
            }
            Decision::Reject { target } => {
                self.rejected.insert(target.clone());
            }
            Decision::Edit { target, text } => {
                self.edited.insert(target.clone(), author.to_string());
                if let Some(s) = self.stakeholders.iter_mut().find(|s| &s.id == target) {
                    s.name = text.clone();
                } else if let Some(p) =
                    self.stakeholders.iter_mut().flat_map(|s| s.perspectives.iter_mut()).find(|p| &p.id == target)
                {
                    p.text = text.clone();
                } else if let Some(p) =
                    self.groups.iter_mut().flat_map(|g| g.perspectives.iter_mut()).find(|p| &p.id == target)
                {
                    p.text = text.clone();
                }
            }
            Decision::RenameGroup { group, name } => {
                self.edited.insert(group.clone(), author.to_string());
                if let Some(g) = self.groups.iter_mut().find(|g| &g.id == group) {
                    g.name = name.clone();
                }
            }
            Decision::MergeGroups { into, from } => {
                let Some(pos) = self.groups.iter().position(|g| &g.id == from) else { return };
                if !self.groups.iter().any(|g| &g.id == into) || into == from {
                    return;
                }
                let moved = self.groups.remove(pos);
                let target = self.groups.iter_mut().find(|g| &g.id == into).expect("checked above");
                for m in moved.members {
                    if !target.members.contains(&m) {
                        target.members.push(m);
                    }
                }
                target.perspectives.extend(moved.perspectives);
            }
            Decision::SplitGroup { group, perspectives, name } => {
                let Some(g) = self.groups.iter_mut().find(|g| &g.id == group) else { return };
                let (moved, kept): (Vec<_>, Vec<_>) =
                    g.perspectives.drain(..).partition(|p| perspectives.contains(&p.id));
                g.perspectives = kept;
                if moved.is_empty() {
                    return;
                }
                let members = members_of(&self.stakeholders, &moved);
                self.groups_made += 1;
                self.groups.push(Group {
                    id: format!("G{}", self.groups_made),
                    name: name.clone(),
                    description: String::new(),
                    members,
                    perspectives: moved,
                });
            }
            Decision::CapGroup { group, max } => match max {
                Some(m) => {
                    self.caps.insert(group.clone(), *m);
                }
                None => {
                    self.caps.remove(group);
                }
            },
            Decision::EditPersona { perspective, field, value } => {
                if let Some(p) = self.personas.get_mut(perspective)
                    && let Some(f) = p.field_mut(field)
                {
                    *f = value.clone();
                    p.edited_by.insert(field.clone(), author.to_string());
                }
            }
        }
    }

    pub fn stakeholder(&self, id: &str) -> Option<&Stakeholder> {
        self.stakeholders.iter().find(|s| s.id == id)
    }

    /// An extracted perspective and its stakeholder.
    pub fn source(&self, id: &str) -> Option<(&Stakeholder, &Perspective)> {
        self.stakeholders.iter().find_map(|s| s.perspectives.iter().find(|p| p.id == id).map(|p| (s, p)))
    }

    /// Whether an extracted perspective still counts: neither it nor its stakeholder rejected.
    pub fn source_kept(&self, id: &str) -> bool {
        self.source(id).is_some_and(|(s, p)| !self.rejected.contains(&s.id) && !self.rejected.contains(&p.id))
    }

    /// Whether a group perspective goes into the panel, cap aside: the group
    /// and it not rejected, and at least one of its sources kept.
    pub fn perspective_kept(&self, group: &Group, p: &GroupPerspective) -> bool {
        !self.rejected.contains(&group.id)
            && !self.rejected.contains(&p.id)
            && p.sources.iter().any(|s| self.source_kept(s))
    }

    /// The groups and perspectives that go into the panel, caps applied.
    pub fn chosen(&self) -> Vec<(&Group, Vec<&GroupPerspective>)> {
        self.groups
            .iter()
            .map(|g| {
                let mut kept: Vec<&GroupPerspective> =
                    g.perspectives.iter().filter(|p| self.perspective_kept(g, p)).collect();
                if let Some(&cap) = self.caps.get(&g.id) {
                    kept.truncate(cap);
                }
                (g, kept)
            })
            .filter(|(_, ps)| !ps.is_empty())
            .collect()
    }

    /// Quotes that were not found in their documents, among all extracted perspectives.
    pub fn unverified(&self) -> usize {
        self.stakeholders.iter().flat_map(|s| &s.perspectives).filter(|p| !p.check.found).count()
    }
}

/// The stakeholders whose perspectives are among `ps`' sources, in order.
fn members_of(stakeholders: &[Stakeholder], ps: &[GroupPerspective]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for src in ps.iter().flat_map(|p| &p.sources) {
        if let Some(s) = stakeholders.iter().find(|s| s.perspectives.iter().any(|p| &p.id == src))
            && !out.contains(&s.id)
        {
            out.push(s.id.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::personas::log::BuildEventKind;

    fn p(id: &str, found: bool) -> Perspective {
        Perspective {
            id: id.into(),
            text: format!("text {id}"),
            evidence: "q".into(),
            check: QuoteCheck { found, similarity: if found { 1.0 } else { 0.2 }, paragraph: None, span: None },
        }
    }

    fn state() -> BuildState {
        let mut s = BuildState::default();
        let ev = |seq, kind| BuildEvent { seq, t: chrono::Utc::now(), kind };
        s.apply(&ev(
            0,
            BuildEventKind::StakeholdersExtracted {
                doc: 0,
                chunk: 1,
                stakeholders: vec![
                    Stakeholder {
                        id: "D1.S1".into(),
                        doc: 0,
                        name: "Teachers".into(),
                        characteristics: "c".into(),
                        perspectives: vec![p("D1.S1.P1", true), p("D1.S1.P2", false)],
                    },
                    Stakeholder {
                        id: "D1.S2".into(),
                        doc: 0,
                        name: "Parents".into(),
                        characteristics: "c".into(),
                        perspectives: vec![p("D1.S2.P1", true)],
                    },
                ],
            },
        ));
        let gp = |id: &str, sources: &[&str]| GroupPerspective {
            id: id.into(),
            text: id.into(),
            sources: sources.iter().map(|s| s.to_string()).collect(),
        };
        s.apply(&ev(
            1,
            BuildEventKind::GroupsFormed {
                left_out: Vec::new(),
                groups: vec![
                    Group {
                        id: "G1".into(),
                        name: "Teachers".into(),
                        description: String::new(),
                        members: vec!["D1.S1".into()],
                        perspectives: vec![gp("G1.P1", &["D1.S1.P1"]), gp("G1.P2", &["D1.S1.P2"])],
                    },
                    Group {
                        id: "G2".into(),
                        name: "Parents".into(),
                        description: String::new(),
                        members: vec!["D1.S2".into()],
                        perspectives: vec![gp("G2.P1", &["D1.S2.P1"])],
                    },
                ],
            },
        ));
        s
    }

    fn decide(s: &mut BuildState, d: Decision) {
        let seq = s.next_seq;
        s.apply(&BuildEvent {
            seq,
            t: chrono::Utc::now(),
            kind: BuildEventKind::Decided { decision: d, author: "a".into() },
        });
    }

    fn chosen(s: &BuildState) -> Vec<(String, Vec<String>)> {
        s.chosen().into_iter().map(|(g, ps)| (g.name.clone(), ps.iter().map(|p| p.id.clone()).collect())).collect()
    }

    #[test]
    fn rejecting_a_stakeholder_drops_what_rests_on_it_and_accept_brings_it_back() {
        let mut s = state();
        assert_eq!(s.unverified(), 1);
        decide(&mut s, Decision::Reject { target: "D1.S1".into() });
        assert_eq!(chosen(&s), [("Parents".to_string(), vec!["G2.P1".to_string()])]);
        decide(&mut s, Decision::Accept { target: "D1.S1".into() });
        decide(&mut s, Decision::Reject { target: "D1.S1.P2".into() });
        assert_eq!(chosen(&s)[0], ("Teachers".to_string(), vec!["G1.P1".to_string()]));
    }

    #[test]
    fn merge_and_split_move_perspectives_and_members() {
        let mut s = state();
        decide(&mut s, Decision::MergeGroups { into: "G1".into(), from: "G2".into() });
        assert_eq!(s.groups.len(), 1);
        assert_eq!(s.groups[0].members, ["D1.S1", "D1.S2"]);
        assert_eq!(s.groups[0].perspectives.len(), 3);
        decide(
            &mut s,
            Decision::SplitGroup { group: "G1".into(), perspectives: vec!["G2.P1".into()], name: "Families".into() },
        );
        assert_eq!(s.groups.len(), 2);
        assert_eq!((s.groups[1].id.as_str(), s.groups[1].name.as_str()), ("G3", "Families"));
        assert_eq!(s.groups[1].members, ["D1.S2"]);
        // Merging a group into itself or into none changes nothing.
        decide(&mut s, Decision::MergeGroups { into: "G1".into(), from: "G1".into() });
        decide(&mut s, Decision::MergeGroups { into: "G9".into(), from: "G1".into() });
        assert_eq!(s.groups.len(), 2);
        decide(&mut s, Decision::CapGroup { group: "G1".into(), max: Some(1) });
        assert_eq!(chosen(&s)[0].1, ["G1.P1"]);
        decide(&mut s, Decision::CapGroup { group: "G1".into(), max: None });
        assert_eq!(chosen(&s)[0].1.len(), 2);
    }
}
