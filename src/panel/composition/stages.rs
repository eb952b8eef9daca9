//! What each stage declares: its name, what it does, and its settings (the
//! keys of a `[[protocol.stage]]` table besides `kind` and `when`, with their
//! types and defaults). The panel checker, `moot providers` and the docs read
//! these declarations; the engine's `stages` folder runs them.

use crate::panel::protocol::pairwise::{
    PAIRING, PER_CRITERION, PROMPT, REFERENCE, REPLY_TOKENS, SAMPLING, SWAP, VOTES,
};
use crate::panel::protocol::{CANDIDATE_NAME, Paper, SettingKind, SettingSpec};

/// The stages a composition is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StageKind {
    Steps,
    Evaluate,
    Score,
    Assess,
    Review,
    Discuss,
    Judge,
    Verify,
    Compare,
    Aggregate,
}

/// Whether a stage works on each group apart (and may take a `when`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Once for the whole panel.
    Panel,
    /// For each group, the groups side by side.
    Group,
}

/// What a stage declares.
#[derive(Debug)]
pub struct StageSpec {
    pub kind: StageKind,
    /// The name in panel files (`discuss`).
    pub id: &'static str,
    pub about: &'static str,
    pub reach: Reach,
    pub settings: &'static [SettingSpec],
}

/// A stage's setting: moot's own, never a paper's departure.
const fn setting(key: &'static str, kind: SettingKind, about: &'static str) -> SettingSpec {
    SettingSpec { key, kind, about, paper: Paper::Any }
}

const fn choice(options: &'static [&'static str], default: &'static str) -> SettingKind {
    SettingKind::Choice { options, default }
}

pub const STEPS: StageSpec = StageSpec {
    kind: StageKind::Steps,
    id: "steps",
    about: "the first judge writes numbered evaluation steps for each dimension without `steps` in the panel \
            (kept in the steps cache for later runs); a person can read and edit them before scoring",
    reach: Reach::Panel,
    settings: &[setting(
        "review",
        SettingKind::Bool { default: false },
        "pause after the steps are written so a person can read and edit them (live runs); resume to score",
    )],
};

pub const EVALUATE: StageSpec = StageSpec {
    kind: StageKind::Evaluate,
    id: "evaluate",
    about: "every member evaluates the item on its own, at once, before anyone has seen another's scores",
    reach: Reach::Panel,
    settings: &[setting(
        "confidence",
        SettingKind::Bool { default: true },
        "ask each member how confident it is (0–1) beside its scores",
    )],
};

pub const SCORE: StageSpec = StageSpec {
    kind: StageKind::Score,
    id: "score",
    about: "every member scores each dimension in its own call, following the dimension's evaluation steps \
            (a `steps` stage comes first); the score is weighted by its probabilities where the provider \
            returns them, else averaged over `samples` replies",
    reach: Reach::Panel,
    settings: &[
        setting(
            "samples",
            SettingKind::Integer { min: 1, max: 100, default: 1 },
            "replies drawn per member and dimension when no log-probabilities come back; their scores are averaged",
        ),
        setting(
            "reply",
            choice(&["reason-first", "score-first"], "reason-first"),
            "reason-first: a sentence or two of reasoning, then the score; score-first: the score alone",
        ),
        setting(
            "sample_temperature",
            choice(&["judge", "1"], "judge"),
            "judge: each draw at the member's own temperature; 1: at temperature 1",
        ),
        setting(
            "score",
            choice(&["drawn", "weighted"], "drawn"),
            "drawn: the result takes the mean of the drawn scores; weighted: the probability-weighted score \
             where the provider returned log-probabilities",
        ),
        setting(
            "reply_tokens",
            SettingKind::Integer { min: 1, max: 4096, default: 96 },
            "the reply length of a scoring call",
        ),
    ],
};

pub const ASSESS: StageSpec = StageSpec {
    kind: StageKind::Assess,
    id: "assess",
    about: "every member judges every dimension following its evaluation steps (a `steps` stage comes first), \
            with its reasoning for each: a score, or a label for a dimension with `labels`; in one request, or \
            one request per dimension in turn (SAGEval's evaluator)",
    reach: Reach::Panel,
    settings: &[setting(
        "per_aspect",
        SettingKind::Bool { default: false },
        "each dimension in a request of its own, one after the other, instead of every dimension in one request",
    )],
};

pub const REVIEW: StageSpec = StageSpec {
    kind: StageKind::Review,
    id: "review",
    about: "a meta-evaluator reviews each member's assessment (an `assess` stage comes first): it rectifies the \
            values it disagrees with, proposes better definitions and new aspects; a live run pauses for a person \
            to accept or reject each change (SAGEval's SAGE)",
    reach: Reach::Panel,
    settings: &[setting(
        "max_new_aspects",
        SettingKind::Integer { min: 0, max: 10, default: 3 },
        "new aspects the meta-evaluator may propose per item",
    )],
};

pub const DISCUSS: StageSpec = StageSpec {
    kind: StageKind::Discuss,
    id: "discuss",
    about: "each group's members talk in turn, each turn ending with the speaker's scores; who speaks next, \
            what a turn asks for and when the talk ends are its settings",
    reach: Reach::Group,
    settings: &[
        setting(
            "order",
            choice(&["moderated", "rounds", "simultaneous"], "rounds"),
            "moderated: a moderator (the panel's [moderator] policy) picks each next speaker, for up to [moderator] \
             max_turns turns; rounds: every member once a round; simultaneous: every member of a round at once, \
             each seeing only earlier rounds",
        ),
        setting(
            "rounds",
            SettingKind::Integer { min: 0, max: 50, default: 0 },
            "rounds at most (order rounds or simultaneous); 0: the panel's [consensus] max_rounds",
        ),
        setting(
            "shuffle",
            choice(&["each-round", "once", "none"], "each-round"),
            "the order of a round: a new seeded shuffle every round, one shuffle kept for every round, or the \
             panel's order",
        ),
        setting(
            "talk",
            choice(&["debate", "collaborate", "argue", "discuss", "review"], "discuss"),
            "what a turn asks for: debate, answer the others from the speaker's perspective (MAJ-EVAL's turns); \
             collaborate, build on the others' points and reconcile (CollabEval's); argue, defend one's own scores \
             and attack the others' (CollabEval's debate ablation); discuss, weigh what was said and give one's \
             scores (ChatEval's); review, agree with or revise the evaluation before one's own (a round-table \
             started in sequence)",
        ),
        setting(
            "stop",
            choice(&["none", "consensus", "consensus-or-unchanged"], "consensus"),
            "none: the talk goes on until the turns or rounds run out (a debate also ends when every member has \
             said NO MORE COMMENTS); consensus: it is checked before the first round and after each, and ends the \
             talk when reached; consensus-or-unchanged: it also ends after a round that moved nobody's scores",
        ),
        setting(
            "agreement",
            choice(&["panel", "same"], "panel"),
            "what consensus means: the panel's [consensus] rule and tolerance, or the same score from everyone on \
             every dimension",
        ),
        setting(
            "scope",
            choice(&["all", "per-criterion"], "all"),
            "all: the whole evaluation must agree at once; per-criterion: each dimension is talked over until it \
             agrees on its own, and a final judge decides each one that does not",
        ),
        setting(
            "summarizer",
            SettingKind::Bool { default: false },
            "after each simultaneous round a summarizer rewrites a running summary, which the members read \
             instead of the whole discussion",
        ),
    ],
};

pub const JUDGE: StageSpec = StageSpec {
    kind: StageKind::Judge,
    id: "judge",
    about: "a final judge reads the group's whole discussion and gives the group's decisive evaluation",
    reach: Reach::Group,
    settings: &[],
};

pub const VERIFY: StageSpec = StageSpec {
    kind: StageKind::Verify,
    id: "verify",
    about: "a verifier reads each member's latest evaluation with its reasons and confirms or corrects each \
            score; the verified evaluation becomes the member's final one",
    reach: Reach::Group,
    settings: &[],
};

/// A pairwise setting as the `compare` stage takes it: moot's own, no paper's.
const fn any(spec: SettingSpec) -> SettingSpec {
    SettingSpec { paper: Paper::Any, ..spec }
}

pub const COMPARE: StageSpec = StageSpec {
    kind: StageKind::Compare,
    id: "compare",
    about: "every member judges each pair of the item's candidates (A, B or tie), in both orders and several \
            votes as set, with bias controls; the aggregate then decides each pair by the swap rule and the \
            members' majority, and ranks the candidates",
    reach: Reach::Panel,
    settings: &[
        any(VOTES),
        any(SWAP),
        any(PAIRING),
        any(REFERENCE),
        any(PER_CRITERION),
        CANDIDATE_NAME,
        any(REPLY_TOKENS),
        any(PROMPT),
        any(SAMPLING),
    ],
};

pub const AGGREGATE: StageSpec = StageSpec {
    kind: StageKind::Aggregate,
    id: "aggregate",
    about: "each group's result from its members' final evaluations (a final judge's decides its group), the \
            panel's from the groups'; optionally an aggregator's written synthesis",
    reach: Reach::Panel,
    settings: &[
        setting(
            "rule",
            choice(&["mean", "majority", "confidence-weighted"], "mean"),
            "mean; majority: per dimension the score most members gave (a shared most: the median); \
             confidence-weighted: each member's scores weighed by its confidence",
        ),
        setting(
            "synthesis",
            choice(&["none", "panel", "per-group"], "none"),
            "none: no written synthesis; panel: an aggregator writes one from every member's final evaluation; \
             per-group: one per group from its whole discussion, the panel's made of the groups'",
        ),
    ],
};

/// Every stage, in the order the docs list them.
pub const ALL: &[&StageSpec] =
    &[&STEPS, &EVALUATE, &SCORE, &ASSESS, &REVIEW, &DISCUSS, &JUDGE, &VERIFY, &COMPARE, &AGGREGATE];

impl StageKind {
    pub fn spec(self) -> &'static StageSpec {
        match self {
            StageKind::Steps => &STEPS,
            StageKind::Evaluate => &EVALUATE,
            StageKind::Score => &SCORE,
            StageKind::Assess => &ASSESS,
            StageKind::Review => &REVIEW,
            StageKind::Discuss => &DISCUSS,
            StageKind::Judge => &JUDGE,
            StageKind::Verify => &VERIFY,
            StageKind::Compare => &COMPARE,
            StageKind::Aggregate => &AGGREGATE,
        }
    }
    pub fn as_str(self) -> &'static str {
        self.spec().id
    }
    pub fn names() -> Vec<&'static str> {
        ALL.iter().map(|s| s.id).collect()
    }
}
