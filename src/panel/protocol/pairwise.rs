//! What pairwise judging declares: its settings. The panel's agents are the
//! judges; its dimensions are the criteria they compare on.

use super::*;

pub(super) const SPEC: ProtocolSpec = ProtocolSpec {
    protocol: Protocol::Pairwise,
    id: "pairwise",
    title: "Pairwise: judges compare two candidates in both orders",
    roles: &[],
    settings: &[
        VOTES,
        SWAP,
        PAIRING,
        REFERENCE,
        PER_CRITERION,
        CANDIDATE_NAME,
        REPLY_TOKENS,
        PROMPT,
        SAMPLING,
    ],
    results: Results::Pairs,
    stage_names: STAGES,
    only_when: &[],
    compose: Some(compose),
};

pub(crate) const VOTES: SettingSpec = SettingSpec {
        key: "votes",
        kind: SettingKind::Integer { min: 1, max: 25, default: 1 },
        about: "independent verdicts per judge and order; a label needs more than half of them, else tie",
        // MASA votes over "multiple independent runs" without saying how
        // many: 3 is the fewest where a majority means something.
        paper: Paper::Integer(3),
    };

pub(crate) const SWAP: SettingSpec = SettingSpec {
        key: "swap",
        kind: SettingKind::Bool { default: true },
        about: "judge every pair in both orders; a candidate wins only when both orders prefer it",
        paper: Paper::AsDefault,
    };

pub(crate) const PAIRING: SettingSpec = SettingSpec {
        key: "pairing",
        kind: SettingKind::Choice { options: &["reference", "all-pairs"], default: "reference" },
        about: "with three or more candidates: each against the reference (n-1 pairs) or every pair",
        paper: Paper::AsDefault,
    };

pub(crate) const REFERENCE: SettingSpec = SettingSpec {
        key: "reference",
        kind: SettingKind::Text { default: "" },
        about: "the candidate id the others are compared with (default: each item's first candidate)",
        paper: Paper::AsDefault,
    };

pub(crate) const PER_CRITERION: SettingSpec = SettingSpec {
        key: "per_criterion",
        kind: SettingKind::Bool { default: false },
        about: "ask for a label per dimension besides the overall verdict",
        paper: Paper::AsDefault,
    };

pub(crate) const REPLY_TOKENS: SettingSpec = SettingSpec {
        key: "reply_tokens",
        kind: SettingKind::Integer { min: 32, max: 4096, default: 256 },
        about: "reply length of a verdict: a few sentences of reasoning, then the JSON verdict",
        // MASA's evaluators: max_new_tokens 612 (its Table 1).
        paper: Paper::Integer(612),
    };

pub(crate) const PROMPT: SettingSpec = SettingSpec {
        key: "prompt",
        kind: SettingKind::Choice { options: &["baseline", "enhanced"], default: "baseline" },
        about: "the judges' instructions: baseline (the criteria and a word against position bias) or enhanced \
                (operational definitions, facts checked first, invented content sought, step-by-step reasoning, \
                a stated confidence)",
        paper: Paper::Text("enhanced"),
    };

pub(crate) const SAMPLING: SettingSpec = SettingSpec {
        key: "sampling",
        kind: SettingKind::Choice { options: &["panel", "paper"], default: "panel" },
        about: "the judges' sampling: the panel's (temperature and top_p of [generation] or the judge's own) or \
                the paper's evaluators' (temperature 0, top_p 0.1)",
        paper: Paper::Text("paper"),
    };

/// The judges compare the pairs (every order and vote), then the pairs'
/// decisions and the ranking.
fn compose(p: &ProtocolSection) -> Option<Composition> {
    let mut compare = Stage::new(StageKind::Compare);
    for key in [VOTES.key, REPLY_TOKENS.key] {
        compare = compare.with(key, p.integer(key));
    }
    for key in [SWAP.key, PER_CRITERION.key] {
        compare = compare.with(key, p.flag(key));
    }
    for key in [PAIRING.key, PROMPT.key, SAMPLING.key] {
        compare = compare.with(key, p.choice(key));
    }
    for key in [REFERENCE.key, CANDIDATE_NAME.key] {
        compare = compare.with(key, p.text(key));
    }
    Some(Composition::new(vec![compare, Stage::new(StageKind::Aggregate)]))
}
