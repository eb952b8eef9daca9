//! What CollabEval declares: its roles, settings and speaker order.
//!
//! The final judge is a role of its own, so that a panel can bind it to a
//! stronger model than the evaluators' (`[final_judge]` or
//! `[roles.final_judge]` with `provider` and `model`), as the paper does.
//! `discussion = "debate"` is the paper's own ablation: the same phases and
//! stop rules, with adversarial discussion turns instead of collaborative ones.

use super::*;

pub(super) const SPEC: ProtocolSpec = ProtocolSpec {
    protocol: Protocol::CollabEval,
    id: "collab-eval",
    title: "CollabEval: rounds of discussion, a final judge",
    roles: &[Role::FinalJudge],
    settings: &[
        SettingSpec {
            key: "mode",
            kind: SettingKind::Choice { options: &["scores", "pairwise"], default: "scores" },
            about: "scores: rate the item's content; pairwise: say which of the item's two candidates is better \
                    (A, B or tie), and agree on that label",
            paper: Paper::Any,
        },
        SettingSpec {
            key: "consensus",
            kind: SettingKind::Choice { options: &["panel", "same"], default: "panel" },
            about: "scores mode: when the evaluators agree. panel: the panel's [consensus] rule and tolerance, over \
                    every dimension and overall; same: every evaluator gives the same score (dimensions only; \
                    overall need not agree)",
            paper: Paper::Text("same"),
        },
        SettingSpec {
            key: "scope",
            kind: SettingKind::Choice { options: &["all", "per-criterion"], default: "all" },
            about: "scores mode: all: one discussion until the whole evaluation agrees, one final judgment; \
                    per-criterion: each dimension is discussed to its own consensus, in its own rounds (only the \
                    dimensions still without one are discussed), with its own final judgment",
            paper: Paper::Text("per-criterion"),
        },
        SettingSpec {
            key: "discussion",
            kind: SettingKind::Choice { options: &["collaborate", "debate"], default: "collaborate" },
            about: "how the evaluators talk in a discussion round. collaborate: each says where it agrees and \
                    disagrees with the others and updates its result; debate (the paper's ablation): each defends \
                    its own result, attacks the weaknesses of the others' and concedes only to a convincing argument",
            paper: Paper::AsDefault,
        },
        CANDIDATE_NAME,
        HISTORY,
        REPEATS,
        QUOTES,
    ],
    results: Results::ScoresOrPairs,
    stage_names: STAGES,
    only_when: &[("consensus", "mode", "scores"), ("scope", "mode", "scores")],
    compose: Some(compose),
};

/// First evaluations with confidence; shuffled rounds of collaboration (or
/// of argument: the debate ablation) until consensus or a round that moves
/// nobody; a final judge for a group still apart (per criterion: inside the
/// discussion, for each criterion that does not agree); the means. In the
/// pairwise mode the same stages give label verdicts on the pair, and the
/// consensus is the same label from everyone.
fn compose(p: &ProtocolSection) -> Option<Composition> {
    let pairs = p.compares_pairs();
    let per_criterion = !pairs && p.is("scope", "per-criterion");
    let mut discuss = Stage::new(StageKind::Discuss)
        .with("talk", if p.is("discussion", "debate") { "argue" } else { "collaborate" })
        .with("stop", "consensus-or-unchanged");
    if !pairs {
        discuss = discuss.with("agreement", p.choice("consensus")).with("scope", p.choice("scope"));
    }
    let mut stages = vec![Stage::new(StageKind::Evaluate), discuss];
    if !per_criterion {
        stages.push(Stage::new(StageKind::Judge).when(When::NoConsensus));
    }
    stages.push(Stage::new(StageKind::Aggregate));
    Some(Composition::new(stages))
}
