//! What MAJ-EVAL declares: its roles, settings and speaker order.
//!
//! Each setting's `moot` default suits small local models and speed; its
//! paper value is what MAJ-EVAL's paper does (see `docs/papers.md`).

use super::*;

pub(super) const SPEC: ProtocolSpec = ProtocolSpec {
    protocol: Protocol::MajEval,
    id: "maj-eval",
    title: "MAJ-EVAL: moderated group debate",
    roles: &[Role::Moderator, Role::Aggregator],
    settings: &[
        PERSONAS,
        STANCE,
        TURNS,
        FIRST_FEEDBACK,
        AGGREGATION,
        HISTORY,
        REPEATS,
        QUOTES,
        REASONS,
        CLAIMS,
    ],
    results: Results::Scores,
    stage_names: STAGES,
    only_when: &[],
    compose: Some(compose),
};

pub(super) const PERSONAS: SettingSpec = SettingSpec {
        key: "personas",
        kind: SettingKind::Choice { options: &["own", "roster"], default: "roster" },
        about: "own: each agent's instructions carry its own persona alone, and nobody sees the others' \
                personas; roster: one system prompt for the whole panel, and each group's members with their \
                personas in the discussion every member reads (a model that keeps prompt states reads it once)",
        paper: Paper::Text("own"),
    };

pub(super) const STANCE: SettingSpec = SettingSpec {
        key: "stance",
        kind: SettingKind::Choice { options: &["own-view", "persuadable"], default: "persuadable" },
        about: "own-view: agents keep to their own perspective, need not agree and do not echo the others; \
                persuadable: agents are told to change a score when an argument persuades them",
        paper: Paper::Text("own-view"),
    };

pub(super) const TURNS: SettingSpec = SettingSpec {
        key: "turns",
        kind: SettingKind::Choice { options: &["free", "answer-last"], default: "answer-last" },
        about: "free: a debate turn agrees, disagrees or adds nuance as the speaker sees fit, at any length; \
                answer-last: it begins \"<last speaker>, I …\", answers that speaker, in two to four sentences",
        paper: Paper::Text("free"),
    };

pub(super) const REASONS: SettingSpec = SettingSpec {
        key: "reasons",
        kind: SettingKind::Choice { options: &["checked", "as-given"], default: "checked" },
        about: "checked: an LLM moderator's reason is checked against its scores table (who spoke last, scores \
                said to differ, members of the group); one that claims what the table does not show is asked \
                again once with the correction, then replaced by the disagreement policy's choice; as-given: \
                the moderator's choice stands whatever its reason says",
        paper: Paper::Text("as-given"),
    };

pub(super) const CLAIMS: SettingSpec = SettingSpec {
        key: "claims",
        kind: SettingKind::Choice { options: &["checked", "as-given"], default: "checked" },
        about: "checked: a synthesis that gives a member, a group or the panel a score the results do not show \
                (a group's result as one member's score) is written again once with the correction, and kept \
                marked if it still does; as-given: the synthesis stands as written",
        paper: Paper::Text("as-given"),
    };

pub(super) const FIRST_FEEDBACK: SettingSpec = SettingSpec {
        key: "first_feedback",
        kind: SettingKind::Choice { options: &["full", "brief"], default: "brief" },
        about: "full: a first evaluation is several sentences of feedback, then the scores; brief: the scores \
                at once, with a one-sentence justification (they show sooner)",
        paper: Paper::Text("full"),
    };

pub(super) const AGGREGATION: SettingSpec = SettingSpec {
        key: "aggregation",
        kind: SettingKind::Choice { options: &["per-group", "panel"], default: "panel" },
        about: "per-group: an aggregator reads each group's whole debate and its members' final feedback and \
                writes that group's synthesis, and the panel's result is made of the groups'; panel: one \
                synthesis of every member's final evaluation, without the debates",
        paper: Paper::Text("per-group"),
    };

/// Independent first evaluations, a moderated debate per group, the means
/// and the aggregator's synthesis (per group, or of the panel's finals).
fn compose(p: &ProtocolSection) -> Option<Composition> {
    let synthesis = if p.is("aggregation", "per-group") { "per-group" } else { "panel" };
    Some(Composition::new(vec![
        Stage::new(StageKind::Evaluate),
        Stage::new(StageKind::Discuss).with("order", "moderated").with("talk", "debate").with("stop", "none"),
        Stage::new(StageKind::Aggregate).with("synthesis", synthesis),
    ]))
}
