//! The protocols a panel may name, and what each one declares.
//!
//! A protocol declares its roles (who takes part besides the panel's agents;
//! each role can be bound to its own provider and model in the panel) and its
//! settings (the keys of the panel's `[protocol]` table, with their types and
//! defaults). The panel checker, the provider registry, `moot providers`, the
//! session log and the screens read these declarations; nothing else lists
//! protocols or roles.

use std::collections::BTreeMap;

use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Unexpected, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::composition::{Composition, Stage, StageFile, StageKind, When};
pub use crate::preset::{Departure, Preset};
use crate::roles::Role;

/// The catalogue: each protocol's variant and the file that declares it
/// (its [`ProtocolSpec`] as `SPEC`). A new protocol is one line here, its
/// declaration file, and its runner (one line in the engine's
/// `protocols/mod.rs`).
macro_rules! catalogue {
    ($($variant:ident => $module:ident),* $(,)?) => {
        $(pub(crate) mod $module;)*

        /// Judging protocols moot runs.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum Protocol {
            $($variant),*
        }

        impl Protocol {
            pub const ALL: &'static [Protocol] = &[$(Protocol::$variant),*];

            /// What the protocol declares.
            pub fn spec(self) -> &'static ProtocolSpec {
                match self {
                    $(Protocol::$variant => &$module::SPEC),*
                }
            }
        }
    };
}

catalogue! {
    MajEval => maj_eval,
    CollabEval => collab_eval,
    GEval => g_eval,
    SageEval => sage_eval,
    ChatEval => chat_eval,
    RoundTable => round_table,
    Pairwise => pairwise,
    Composition => composition,
}

/// How a run's speakers take the floor, as the screens show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpeakingOrder {
    /// A moderator picks each next speaker, for up to `[moderator] max_turns` turns.
    Moderated,
    /// Nobody takes the floor.
    Independent,
    /// Rounds, up to `rounds` of them (`None`: the panel's `[consensus]
    /// max_rounds`); `how` they go, in words ("shuffled rounds").
    Rounds { rounds: Option<u32>, how: String },
}

/// What the live screen shows of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// The agents' panes beside a moderator pane and the consensus check
    /// (the summary in its place where the run has a summarizer), the
    /// result and the transcript.
    Discussion,
    /// The agents' panes beside their evaluation steps and the scores
    /// table, the result and the transcript.
    Steps,
    /// The evaluators and the meta-evaluator side by side, the changes it
    /// proposes below (each accepted or rejected by a person), the
    /// consensus pane, the result and the transcript.
    Review,
    /// The pair's candidates and the judges' verdicts, the result (open for
    /// a person to settle) and the transcript.
    Pairs,
}

/// What the protocol's consensus check means, on the screen and in the
/// headless transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsensusCheck {
    /// The protocol checks no consensus.
    None,
    /// The check only reports how far apart a group's scores are: the
    /// discussion goes on until every member is done or the turns run out.
    Reports,
    /// Reaching consensus ends the group's discussion.
    Stops,
}

/// What a run's results are, as the reports read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Results {
    /// Scores (and labels) per dimension.
    Scores,
    /// Scores, and a meta-evaluator's review of them: its changes (each
    /// accepted or rejected) and the new aspects it proposes.
    ReviewedScores,
    /// A decision per pair of an item's candidates (A, B or tie).
    Pairs,
    /// Scores, or a decision per pair when the run's `mode` setting is
    /// `pairwise`.
    ScoresOrPairs,
}

/// What exports and reports call the `initial` and `final` stages of an
/// agent's scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageNames {
    pub initial: &'static str,
    pub final_: &'static str,
}

/// The stages' own names, for a protocol whose stages are what they say.
pub(super) const STAGES: StageNames = StageNames { initial: "initial", final_: "final" };

/// The type and default of one `[protocol]` setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SettingKind {
    Integer {
        min: i64,
        max: i64,
        default: i64,
    },
    Bool {
        default: bool,
    },
    /// One of a fixed set of names.
    Choice {
        options: &'static [&'static str],
        default: &'static str,
    },
    /// Free text (a name); empty means "not set".
    Text {
        default: &'static str,
    },
}

/// One key a protocol accepts in the panel's `[protocol]` table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SettingSpec {
    pub key: &'static str,
    pub kind: SettingKind,
    pub about: &'static str,
    /// What the protocol's paper does for this setting (the `paper` preset's value).
    pub paper: Paper,
}

/// What a protocol's paper says of one setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Paper {
    /// The setting's default is what the paper does (or the setting is
    /// moot's own, and its default leaves the method as the paper has it).
    AsDefault,
    /// The paper leaves the value open; the default is moot's choice, for
    /// the reason given (listed in `docs/papers.md`).
    Open(&'static str),
    /// A setting of moot's own that leaves the paper's method as it is
    /// whatever its value (what the candidates are called): never a departure.
    Any,
    /// The paper's value, which the default departs from.
    Integer(i64),
    Bool(bool),
    /// A choice's or a text's value.
    Text(&'static str),
}

impl Preset {
    pub const ALL: [Preset; 2] = [Preset::Moot, Preset::Paper];
    /// The preset named `s` in a panel file.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

fn departure(setting: &str, value: &SettingValue, paper: &SettingValue) -> Departure {
    Departure { setting: setting.to_string(), value: value.to_string(), paper: paper.to_string() }
}

/// `history`, which protocols with a discussion declare: how much of it
/// each prompt shows (read by `engine::prompts::history_window`).
pub(super) const HISTORY: SettingSpec = SettingSpec {
    key: "history",
    kind: SettingKind::Choice { options: &["whole", "window"], default: "window" },
    about: "whole: every prompt shows the whole discussion, shortened only when it does not fit the model's \
            context (by the rule in docs/panels.md, recorded in the log); window: the latest 14 contributions only",
    paper: Paper::Text("whole"),
};

/// `repeats`, which protocols with a discussion declare: what becomes of a
/// speech that repeats an earlier one (read by `engine::discussion`; the
/// rule is `engine::repeats`).
pub(super) const REPEATS: SettingSpec = SettingSpec {
    key: "repeats",
    kind: SettingKind::Choice { options: &["redraw", "keep"], default: "redraw" },
    about: "redraw: a speech that repeats an earlier one of its group (eight words or more, half of its four-word \
            runs in one earlier contribution) is asked for once more, with a note and another seed, and kept \
            marked if it still repeats; keep: it is kept as said, marked",
    paper: Paper::Text("keep"),
};

/// `quotes`, which protocols with a discussion declare: what becomes of a
/// speech that quotes words nothing it was shown contains (read by
/// `engine::discussion`; the rule is `engine::quotes`).
pub(super) const QUOTES: SettingSpec = SettingSpec {
    key: "quotes",
    kind: SettingKind::Choice { options: &["redraw", "keep"], default: "redraw" },
    about: "redraw: a speech that puts in quotation marks four words or more that neither the item, nor its \
            request, nor an earlier contribution of its group contains (a wording it proposes aside) is asked for once more, with a note \
            naming the quotation, and kept marked if it still misquotes; keep: it is kept as said, marked",
    paper: Paper::Text("keep"),
};

/// `candidate_name`, which protocols with a pairwise mode declare.
pub(crate) const CANDIDATE_NAME: SettingSpec = SettingSpec {
    key: "candidate_name",
    kind: SettingKind::Text { default: "Summary" },
    about: "what the agents call two candidates they compare: \"Summary A\" and \"Summary B\"",
    paper: Paper::Any,
};

impl SettingSpec {
    /// The setting's declared default.
    pub fn default_value(&self) -> SettingValue {
        match self.kind {
            SettingKind::Integer { default, .. } => SettingValue::Integer(default),
            SettingKind::Bool { default } => SettingValue::Bool(default),
            SettingKind::Choice { default, .. } | SettingKind::Text { default } => {
                SettingValue::Text(default.to_string())
            }
        }
    }
    /// The paper's value of the setting.
    pub fn paper_value(&self) -> SettingValue {
        match self.paper {
            Paper::AsDefault | Paper::Open(_) | Paper::Any => self.default_value(),
            Paper::Integer(v) => SettingValue::Integer(v),
            Paper::Bool(v) => SettingValue::Bool(v),
            Paper::Text(v) => SettingValue::Text(v.to_string()),
        }
    }
}

/// What a protocol declares.
#[derive(Debug)]
pub struct ProtocolSpec {
    pub protocol: Protocol,
    /// The name in panel files and session logs (`maj-eval`).
    pub id: &'static str,
    pub title: &'static str,
    /// Roles besides the agents, each bindable in the panel.
    pub roles: &'static [Role],
    pub settings: &'static [SettingSpec],
    /// What its results are (scores, pairwise decisions, reviewed scores).
    pub results: Results,
    /// What exports and reports call its `initial` and `final` stages.
    pub stage_names: StageNames,
    /// Settings that only apply when another setting has a value, as
    /// `(setting, other, value)`: a run where they do not apply never lists
    /// them as departures (CollabEval's consensus rule in its pairwise mode).
    pub only_when: &'static [(&'static str, &'static str, &'static str)],
    /// The protocol as stages, built from a run's settings; `None` where the
    /// run is not (yet) a composition (its own runner in the engine). A
    /// written composition's stages are the panel's own.
    pub compose: Option<fn(&ProtocolSection) -> Option<Composition>>,
}

impl Protocol {
    /// Whether a panel writes the run's stages (`[[protocol.stage]]`)
    /// rather than a bundled protocol building them from its settings.
    pub fn takes_stages(self) -> bool {
        self == Protocol::Composition
    }
    pub fn as_str(self) -> &'static str {
        self.spec().id
    }
    /// The protocol named `s` in a panel file (`maj-eval`, `collab-eval`, …).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|p| p.as_str() == s)
    }
    /// The names of every protocol.
    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|p| p.as_str()).collect()
    }
}

impl<'de> Deserialize<'de> for Protocol {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::check::one_of(d, "protocol", Self::ALL, |p| p.as_str())
    }
}

impl ProtocolSpec {
    pub fn setting(&self, key: &str) -> Option<&SettingSpec> {
        self.settings.iter().find(|s| s.key == key)
    }
}

/// A value of a `[protocol]` setting, as checked against its [`SettingKind`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SettingValue {
    Bool(bool),
    Integer(i64),
    Text(String),
}

impl fmt::Display for SettingValue {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            SettingValue::Bool(b) => write!(f, "{b}"),
            SettingValue::Integer(i) => write!(f, "{i}"),
            SettingValue::Text(t) => write!(f, "{t:?}"),
        }
    }
}

/// The panel's protocol and its settings: `protocol = "maj-eval"`, or a
/// `[protocol]` table with `kind` and the protocol's settings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "ProtocolFile")]
pub struct ProtocolSection {
    pub kind: Protocol,
    /// Which defaults the settings the panel does not give take.
    pub preset: Preset,
    /// Settings given in the panel; the others take the preset's values.
    pub settings: BTreeMap<String, SettingValue>,
    /// A written composition's stages (`[[protocol.stage]]`), in order;
    /// empty for the bundled protocols.
    pub stages: Vec<Stage>,
}

impl ProtocolSection {
    pub fn new(kind: Protocol) -> Self {
        Self { kind, preset: Preset::Moot, settings: BTreeMap::new(), stages: Vec::new() }
    }
    /// The run as stages: a written composition's, or those a bundled
    /// protocol builds from its settings; `None` for a run that its
    /// protocol's own runner makes (SAGEval, pairwise judging and the
    /// discussions' pairwise modes).
    pub fn composition(&self) -> Option<Composition> {
        if self.kind == Protocol::Composition {
            return Some(Composition::new(self.stages.clone()));
        }
        self.spec().compose.and_then(|compose| compose(self))
    }
    /// The roles a run calls besides the agents: its stages', or those its protocol declares.
    pub fn roles(&self) -> Vec<Role> {
        match self.kind {
            Protocol::Composition => self.composition().map(|c| c.roles()).unwrap_or_default(),
            _ => self.spec().roles.to_vec(),
        }
    }
    /// What the live screen shows of the run: the pairs with a comparison,
    /// the review with a meta-evaluator, the steps with evaluation steps,
    /// else the discussion.
    pub fn screen(&self) -> Screen {
        let c = self.composition().unwrap_or_default();
        if c.has(StageKind::Compare) {
            Screen::Pairs
        } else if c.has(StageKind::Review) {
            Screen::Review
        } else if c.has(StageKind::Steps) {
            Screen::Steps
        } else {
            Screen::Discussion
        }
    }
    /// What the run's results are, as the reports read them.
    pub fn results(&self) -> Results {
        let c = self.composition().unwrap_or_default();
        if c.has(StageKind::Compare) {
            Results::Pairs
        } else if c.has(StageKind::Review) {
            Results::ReviewedScores
        } else {
            Results::Scores
        }
    }
    /// Whether a person can watch a run blind (`moot run --blind`): one that compares pairs.
    pub fn blind(&self) -> bool {
        self.composition().is_some_and(|c| c.has(StageKind::Compare))
    }
    /// A setting of the run's comparison of pairs: its `compare` stage's,
    /// else the protocol's own (the pairwise modes declare
    /// `candidate_name`), else `None`.
    pub fn pairs_option(&self, key: &str) -> Option<String> {
        let compare = self.composition().and_then(|c| c.of(StageKind::Compare).next().cloned());
        match compare {
            Some(stage) if stage.spec().setting(key).is_some() => Some(stage.plain(key)),
            _ => self.option(key),
        }
    }
    /// Whether judges follow evaluation steps (shown, editable before scoring).
    pub fn uses_steps(&self) -> bool {
        self.composition().is_some_and(|c| c.has(StageKind::Steps))
    }
    /// What the run's consensus check means: a discussion that stops on
    /// consensus ends on it; a debate only reports it.
    pub fn consensus_check(&self) -> ConsensusCheck {
        let c = self.composition().unwrap_or_default();
        if c.stages.iter().any(Stage::stops_on_consensus) {
            ConsensusCheck::Stops
        } else if c.of(StageKind::Discuss).any(|d| d.is("talk", "debate")) {
            ConsensusCheck::Reports
        } else {
            ConsensusCheck::None
        }
    }
    /// How the run's speakers take the floor (the moderator pane, and
    /// whether a person may pick or veto one): its first discussion's order.
    pub fn speaking_order(&self) -> SpeakingOrder {
        let discussion = self.composition().and_then(|c| c.discussion().cloned());
        match discussion {
            None => SpeakingOrder::Independent,
            Some(d) if d.is("order", "moderated") => SpeakingOrder::Moderated,
            Some(d) => {
                let how = match (d.choice("order").as_str(), d.choice("shuffle").as_str(), d.flag("summarizer")) {
                    ("simultaneous", _, true) => "simultaneous summarizer",
                    ("simultaneous", _, false) => "simultaneous",
                    (_, "none", _) => "one by one",
                    _ => "shuffled rounds",
                };
                let rounds = u32::try_from(d.integer("rounds")).ok().filter(|r| *r > 0);
                SpeakingOrder::Rounds { rounds, how: how.into() }
            }
        }
    }
    /// The `rule` of the run's aggregate stage (`mean`, `majority`, `confidence-weighted`).
    pub fn aggregate_rule(&self) -> Option<String> {
        let c = self.composition()?;
        Some(c.aggregate()?.choice("rule"))
    }
    /// The section of `kind` under the `paper` preset.
    pub fn paper(kind: Protocol) -> Self {
        Self { preset: Preset::Paper, ..Self::new(kind) }
    }
    /// A setting's value in this run: the panel's, else the preset's.
    fn value(&self, key: &str) -> Option<SettingValue> {
        let spec = self.spec().setting(key)?;
        Some(match (self.settings.get(key), self.preset) {
            (Some(v), _) => v.clone(),
            (None, Preset::Paper) => spec.paper_value(),
            (None, Preset::Moot) => spec.default_value(),
        })
    }
    /// Whether `key` applies in this run (see [`ProtocolSpec::only_when`]).
    fn applies(&self, key: &str) -> bool {
        self.spec()
            .only_when
            .iter()
            .filter(|(setting, ..)| *setting == key)
            .all(|(_, other, value)| self.option(other).is_some_and(|v| v == *value))
    }
    /// The settings whose value in this run is not the paper's, in the
    /// protocol's order of settings.
    pub fn departures(&self) -> Vec<Departure> {
        self.spec()
            .settings
            .iter()
            .filter(|s| s.paper != Paper::Any && self.applies(s.key))
            .filter_map(|s| {
                let value = self.value(s.key)?;
                let paper = s.paper_value();
                (value != paper).then(|| departure(s.key, &value, &paper))
            })
            .collect()
    }
    pub fn spec(&self) -> &'static ProtocolSpec {
        self.kind.spec()
    }
    /// Whether the protocol compares an item's candidates in pairs (A, B or
    /// tie) rather than rating its content: as its [`Results`] declare, in
    /// this run's `mode`.
    pub fn compares_pairs(&self) -> bool {
        if self.kind.takes_stages() {
            return self.stages.iter().any(|s| s.kind == StageKind::Compare);
        }
        match self.spec().results {
            Results::Pairs => true,
            Results::ScoresOrPairs => self.is("mode", "pairwise"),
            Results::Scores | Results::ReviewedScores => false,
        }
    }
    /// An integer setting, or its default. Panics on a key the protocol does
    /// not declare as an integer (a programming error, not bad input).
    pub fn integer(&self, key: &str) -> i64 {
        match (self.spec().setting(key).map(|s| s.kind), self.value(key)) {
            (Some(SettingKind::Integer { .. }), Some(SettingValue::Integer(v))) => v,
            _ => panic!("{} declares no integer setting `{key}`", self.kind.as_str()),
        }
    }
    /// A choice setting, or its preset's value (panics like [`Self::integer`]).
    pub fn choice(&self, key: &str) -> String {
        match (self.spec().setting(key).map(|s| s.kind), self.value(key)) {
            (Some(SettingKind::Choice { .. }), Some(SettingValue::Text(v))) => v,
            _ => panic!("{} declares no choice setting `{key}`", self.kind.as_str()),
        }
    }
    /// A choice setting's value when the protocol declares it (the prompts
    /// and stages several protocols share ask this of any panel).
    pub fn option(&self, key: &str) -> Option<String> {
        self.text_value(key).map(str::to_string)
    }
    /// A text or choice setting's value in this run, when the protocol
    /// declares it, without copying it (prompts ask this on every turn).
    fn text_value(&self, key: &str) -> Option<&str> {
        let spec = self.spec().setting(key)?;
        match (self.settings.get(key), self.preset, spec.paper, spec.kind) {
            (Some(SettingValue::Text(v)), ..) => Some(v),
            (Some(_), ..) => None,
            (None, Preset::Paper, Paper::Text(v), _) => Some(v),
            (None, _, _, SettingKind::Choice { default, .. } | SettingKind::Text { default }) => Some(default),
            (None, ..) => None,
        }
    }
    /// Whether the protocol declares the choice setting `key` and it is
    /// `option` in this run.
    pub fn has(&self, key: &str, option: &str) -> bool {
        self.text_value(key) == Some(option)
    }
    /// Whether a choice setting is `option` in this run (panics like [`Self::integer`]).
    pub fn is(&self, key: &str, option: &str) -> bool {
        match self.spec().setting(key).map(|s| s.kind) {
            Some(SettingKind::Choice { .. }) => self.text_value(key) == Some(option),
            _ => panic!("{} declares no choice setting `{key}`", self.kind.as_str()),
        }
    }
    /// A text setting, or its preset's value (panics like [`Self::integer`]).
    pub fn text(&self, key: &str) -> String {
        match (self.spec().setting(key).map(|s| s.kind), self.value(key)) {
            (Some(SettingKind::Text { .. }), Some(SettingValue::Text(v))) => v,
            _ => panic!("{} declares no text setting `{key}`", self.kind.as_str()),
        }
    }
    /// A boolean setting, or its preset's value (panics like [`Self::integer`]).
    pub fn flag(&self, key: &str) -> bool {
        match (self.spec().setting(key).map(|s| s.kind), self.value(key)) {
            (Some(SettingKind::Bool { .. }), Some(SettingValue::Bool(v))) => v,
            _ => panic!("{} declares no boolean setting `{key}`", self.kind.as_str()),
        }
    }
}

impl PartialEq<Protocol> for ProtocolSection {
    fn eq(&self, other: &Protocol) -> bool {
        self.kind == *other
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum SectionRepr {
    Name(Protocol),
    Table {
        kind: Protocol,
        #[serde(skip_serializing_if = "is_moot")]
        preset: Preset,
        #[serde(flatten)]
        settings: BTreeMap<String, SettingValue>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        stage: Vec<Stage>,
    },
}

fn is_moot(p: &Preset) -> bool {
    *p == Preset::Moot
}

impl Serialize for ProtocolSection {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.settings.is_empty() && self.preset == Preset::Moot && self.stages.is_empty() {
            SectionRepr::Name(self.kind).serialize(s)
        } else {
            SectionRepr::Table {
                kind: self.kind,
                preset: self.preset,
                settings: self.settings.clone(),
                stage: self.stages.clone(),
            }
            .serialize(s)
        }
    }
}

impl TryFrom<ProtocolFile> for ProtocolSection {
    type Error = String;
    fn try_from(file: ProtocolFile) -> Result<Self, String> {
        let settings = file
            .settings
            .into_iter()
            .map(|(key, value)| match value {
                Ok(value) => Ok((key, value)),
                Err(found) => Err(format!(
                    "protocol setting `{key}`: invalid type: {found}, expected true or false, an integer or a string"
                )),
            })
            .collect::<Result<_, _>>()?;
        let stages = file.stages.into_iter().map(StageFile::stage).collect::<Result<_, _>>()?;
        Ok(Self { kind: file.kind, preset: file.preset, settings, stages })
    }
}

/// `protocol` as written: a name, or a table of `kind` and settings of any
/// type. Which settings the protocol takes, and of which types, is checked
/// once `kind` is known, whatever the order of the keys (in `panel::check`).
pub(crate) struct ProtocolFile {
    pub kind: Protocol,
    pub preset: Preset,
    /// Each setting's value, or what serde calls a value of another type
    /// (`floating point `1.5``).
    pub settings: BTreeMap<String, Result<SettingValue, String>>,
    /// A composition's `[[protocol.stage]]` tables.
    pub stages: Vec<StageFile>,
}

impl<'de> Deserialize<'de> for ProtocolFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Section;
        impl<'de> Visitor<'de> for Section {
            type Value = ProtocolFile;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a protocol name or a [protocol] table")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ProtocolFile, E> {
                let kind = Protocol::deserialize(de::value::StrDeserializer::new(v))?;
                Ok(ProtocolFile { kind, preset: Preset::Moot, settings: BTreeMap::new(), stages: Vec::new() })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ProtocolFile, A::Error> {
                let mut kind = None;
                let mut preset = Preset::Moot;
                let mut settings = BTreeMap::new();
                let mut stages = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "stage" {
                        stages = map.next_value()?;
                    } else if key == "kind" {
                        kind = Some(map.next_value()?);
                    } else if key == "preset" {
                        let name: String = map.next_value()?;
                        preset = Preset::parse(&name).ok_or_else(|| {
                            let names: Vec<&str> = Preset::ALL.iter().map(|p| p.as_str()).collect();
                            de::Error::custom(super::check::unknown_name("preset", &name, &names))
                        })?;
                    } else {
                        settings.insert(key, map.next_value::<AnySetting>()?.0);
                    }
                }
                let kind = kind.ok_or_else(|| {
                    de::Error::custom(format!("missing field `kind`; one of {}", Protocol::names().join(", ")))
                })?;
                Ok(ProtocolFile { kind, preset, settings, stages })
            }
        }
        d.deserialize_any(Section)
    }
}

/// A setting's value of any type: a [`SettingValue`], or what serde calls another value.
pub(crate) struct AnySetting(pub Result<SettingValue, String>);

impl<'de> Deserialize<'de> for AnySetting {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Any;
        impl<'de> Visitor<'de> for Any {
            type Value = AnySetting;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<AnySetting, E> {
                Ok(AnySetting(Ok(SettingValue::Bool(v))))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<AnySetting, E> {
                Ok(AnySetting(Ok(SettingValue::Integer(v))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<AnySetting, E> {
                Ok(AnySetting(
                    i64::try_from(v).map(SettingValue::Integer).map_err(|_| Unexpected::Unsigned(v).to_string()),
                ))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<AnySetting, E> {
                Ok(AnySetting(Err(Unexpected::Float(v).to_string())))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<AnySetting, E> {
                Ok(AnySetting(Ok(SettingValue::Text(v.to_string()))))
            }
            // Arrays and tables are read through (not skipped, which
            // `serde_ignored` would report as unknown keys).
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AnySetting, A::Error> {
                while seq.next_element::<serde_json::Value>()?.is_some() {}
                Ok(AnySetting(Err(Unexpected::Seq.to_string())))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnySetting, A::Error> {
                while map.next_entry::<String, serde_json::Value>()?.is_some() {}
                Ok(AnySetting(Err(Unexpected::Map.to_string())))
            }
        }
        d.deserialize_any(Any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protocol_parses_its_own_name_and_declares_itself() {
        for p in Protocol::ALL {
            assert_eq!(Protocol::parse(p.as_str()), Some(*p));
            assert_eq!(p.spec().protocol, *p);
        }
        assert_eq!(Protocol::parse("maj_eval"), None);
    }

    #[test]
    fn the_paper_preset_takes_the_papers_values_and_a_given_setting_still_wins() {
        let moot = ProtocolSection::new(Protocol::GEval);
        assert_eq!(moot.integer("samples"), 1);
        let departures = moot.departures();
        let listed: Vec<String> = departures.iter().map(ToString::to_string).collect();
        assert_eq!(
            listed,
            [
                "samples = 1 (paper: 20)",
                "reply = \"reason-first\" (paper: \"score-first\")",
                "sample_temperature = \"judge\" (paper: \"1\")",
                "score = \"drawn\" (paper: \"weighted\")"
            ]
        );
        let mut paper = ProtocolSection::paper(Protocol::GEval);
        assert_eq!(paper.integer("samples"), 20);
        assert!(paper.departures().is_empty());
        paper.settings.insert("samples".into(), SettingValue::Integer(5));
        assert_eq!(paper.integer("samples"), 5, "the panel's own value wins over the preset's");
        assert_eq!(paper.departures()[0].to_string(), "samples = 5 (paper: 20)");
        // The preset is written with the section and read back.
        let json = serde_json::to_value(&paper).unwrap();
        assert_eq!(json, serde_json::json!({"kind": "g-eval", "preset": "paper", "samples": 5}));
        let back: ProtocolSection = serde_json::from_value(json).unwrap();
        assert_eq!(back, paper);
        let bare: ProtocolSection =
            serde_json::from_value(serde_json::json!({"kind": "g-eval", "preset": "paper"})).unwrap();
        assert_eq!(bare.preset, Preset::Paper);
        let wrong = serde_json::from_value::<ProtocolSection>(serde_json::json!({"kind": "g-eval", "preset": "papr"}));
        assert!(wrong.unwrap_err().to_string().contains("paper"), "an unknown preset names the known ones");
    }

    #[test]
    fn a_setting_that_does_not_apply_in_the_runs_mode_is_no_departure() {
        let mut collab = ProtocolSection::new(Protocol::CollabEval);
        let listed = |s: &ProtocolSection| s.departures().into_iter().map(|d| d.setting).collect::<Vec<_>>();
        assert_eq!(listed(&collab), ["consensus", "scope", "history", "repeats", "quotes"]);
        collab.settings.insert("mode".into(), SettingValue::Text("pairwise".into()));
        assert_eq!(
            listed(&collab),
            ["history", "repeats", "quotes"],
            "the consensus rule of the scores mode does not apply to pairs"
        );
        let chat = ProtocolSection::paper(Protocol::ChatEval);
        assert!(listed(&chat).is_empty());
    }

    #[test]
    fn a_section_is_a_name_without_settings_and_a_table_with_them() {
        let plain = ProtocolSection::new(Protocol::MajEval);
        assert_eq!(serde_json::to_value(&plain).unwrap(), serde_json::json!("maj-eval"));
        let mut g = ProtocolSection::new(Protocol::GEval);
        assert_eq!(g.integer("samples"), 1);
        assert!(!g.flag("review_steps"));
        g.settings.insert("samples".into(), SettingValue::Integer(20));
        let json = serde_json::to_value(&g).unwrap();
        assert_eq!(json, serde_json::json!({"kind": "g-eval", "samples": 20}));
        let back: ProtocolSection = serde_json::from_value(json).unwrap();
        assert_eq!(back.integer("samples"), 20);
        let old: ProtocolSection = serde_json::from_value(serde_json::json!("collab-eval")).unwrap();
        assert_eq!(old, Protocol::CollabEval);
    }
}
