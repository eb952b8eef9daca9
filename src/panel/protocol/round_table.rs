//! What the round-table declares: its roles, settings and speaker order.

use super::*;

pub(super) const SPEC: ProtocolSpec = ProtocolSpec {
    protocol: Protocol::RoundTable,
    id: "round-table",
    title: "Round-table: shuffled rounds until all agree; a vote of the last evaluations",
    roles: &[],
    settings: &[
        SettingSpec {
            key: "max_rounds",
            kind: SettingKind::Integer { min: 1, max: 20, default: 3 },
            about: "rounds at most; they stop earlier once all agree",
            paper: Paper::Open("paper 004 gives no round limit for its round-table; three, CollabEval's limit"),
        },
        SettingSpec {
            key: "start",
            kind: SettingKind::Choice { options: &["independent", "sequential"], default: "independent" },
            about: "independent: every agent first evaluates on its own, then the rounds follow; sequential: no \
                    separate round: the first agent of the order assesses alone and each next one reviews the \
                    evaluation before theirs, agreeing or revising",
            paper: Paper::Text("sequential"),
        },
        SettingSpec {
            key: "shuffle",
            kind: SettingKind::Choice { options: &["each-round", "once"], default: "each-round" },
            about: "each-round: a new seeded shuffled order every round; once: one shuffled order per item, kept \
                    for every round",
            paper: Paper::Text("once"),
        },
        SettingSpec {
            key: "result",
            kind: SettingKind::Choice { options: &["confidence-weighted", "majority"], default: "confidence-weighted" },
            about: "confidence-weighted: each agent's last scores weighed by its confidence; majority: per \
                    dimension the score most agents gave (a shared most: the median), a label more than half gave \
                    (else tie)",
            paper: Paper::Text("majority"),
        },
        SettingSpec {
            key: "mode",
            kind: SettingKind::Choice { options: &["scores", "pairwise"], default: "scores" },
            about: "scores: rate the item's content; pairwise: say which of the item's two candidates is better \
                    (A, B or tie), and agree on that label",
            paper: Paper::Any,
        },
        CANDIDATE_NAME,
        HISTORY,
        REPEATS,
        QUOTES,
    ],
    results: Results::ScoresOrPairs,
    stage_names: STAGES,
    only_when: &[],
    compose: Some(compose),
};

/// First evaluations (unless the rounds start in sequence, each agent
/// reviewing the one before), shuffled rounds until all agree, and the
/// result by `result`. In the pairwise
/// mode the same stages give label verdicts on the pair.
fn compose(p: &ProtocolSection) -> Option<Composition> {
    let sequential = p.is("start", "sequential");
    let mut stages = Vec::new();
    if !sequential {
        stages.push(Stage::new(StageKind::Evaluate));
    }
    stages.push(
        Stage::new(StageKind::Discuss)
            .with("rounds", p.integer("max_rounds"))
            .with("shuffle", if p.is("shuffle", "once") { "once" } else { "each-round" })
            .with("talk", if sequential { "review" } else { "discuss" }),
    );
    stages.push(Stage::new(StageKind::Aggregate).with("rule", p.choice("result")));
    Some(Composition::new(stages))
}
