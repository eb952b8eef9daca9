//! What ChatEval declares: its roles, settings and speaker order.

use super::*;

pub(super) const SPEC: ProtocolSpec = ProtocolSpec {
    protocol: Protocol::ChatEval,
    id: "chat-eval",
    title: "ChatEval: fixed roles debate one by one or all at once",
    roles: &[Role::Summarizer],
    settings: &[
        SettingSpec {
            key: "strategy",
            kind: SettingKind::Choice {
                options: &["one-by-one", "simultaneous", "simultaneous-summarizer"],
                default: "one-by-one",
            },
            about: "one-by-one: a fixed order, each agent sees all that was said; simultaneous: every agent of a round speaks at once, seeing earlier rounds only; simultaneous-summarizer: as simultaneous, agents see a running summary of the rounds",
            paper: Paper::Open(
                "ChatEval proposes and compares all three; paper 000 runs ChatEval's default setup without \
                 naming it; one-by-one, the first",
            ),
        },
        SettingSpec {
            key: "turns",
            kind: SettingKind::Integer { min: 1, max: 20, default: 2 },
            about: "rounds of discussion (with first_round = \"independent\", after the first evaluations)",
            paper: Paper::Open(
                "paper 000 gives no number of rounds for ChatEval; two, each agent speaking twice",
            ),
        },
        SettingSpec {
            key: "first_round",
            kind: SettingKind::Choice { options: &["independent", "debate"], default: "independent" },
            about: "independent: every agent first evaluates on its own, then the rounds of discussion follow; \
                    debate: no separate round: the agents' first words are the discussion's first round",
            paper: Paper::Text("debate"),
        },
        SettingSpec {
            key: "mode",
            kind: SettingKind::Choice { options: &["scores", "pairwise"], default: "scores" },
            about: "scores: rate the item's content; pairwise: say which of the item's two candidates is better \
                    (A, B or tie); the result is the majority of the agents' last verdicts",
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

/// First evaluations (unless the first round is the debate's), then `turns`
/// rounds of discussion one by one in the panel's order, or simultaneous
/// (with a summarizer after each); the means of the last evaluations. In the
/// pairwise mode the same stages give label verdicts on the pair.
fn compose(p: &ProtocolSection) -> Option<Composition> {
    let mut stages = Vec::new();
    if p.is("first_round", "independent") {
        stages.push(Stage::new(StageKind::Evaluate).with("confidence", false));
    }
    let strategy = p.choice("strategy");
    let discuss = Stage::new(StageKind::Discuss).with("rounds", p.integer("turns")).with("stop", "none");
    stages.push(match strategy.as_str() {
        "one-by-one" => discuss.with("shuffle", "none"),
        _ => discuss.with("order", "simultaneous").with("summarizer", strategy == "simultaneous-summarizer"),
    });
    stages.push(Stage::new(StageKind::Aggregate));
    Some(Composition::new(stages))
}
