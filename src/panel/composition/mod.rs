//! Compositions: a judging method as a list of stages.
//!
//! Every protocol moot runs is a composition: the seven bundled ones are
//! built from their `[protocol]` settings (each declaration's `compose`),
//! and a panel can write its own with `kind = "composition"` and one
//! `[[protocol.stage]]` table per stage, in the order they run. A stage
//! that works on each group apart can run only when a condition holds for
//! that group (`when`): `no-consensus` ("judge if still no consensus"), or
//! `consensus`.
//!
//! The stages and their settings are declared in [`stages`]; the engine's
//! `stages` folder runs them. [`Composition::problems`] holds the rules
//! between stages that the panel checker reports.

pub mod stages;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use stages::{Reach, StageKind, StageSpec};

use super::protocol::{SettingSpec, SettingValue};
use crate::roles::Role;

/// When a stage that works on each group runs for a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum When {
    #[default]
    Always,
    /// The group's latest consensus check found no consensus (a group whose
    /// consensus was never checked is checked first, by the panel's rule).
    NoConsensus,
    /// The group's latest consensus check found consensus.
    Consensus,
}

impl<'de> Deserialize<'de> for When {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::check::one_of(d, "condition", &[When::Always, When::NoConsensus, When::Consensus], When::as_str)
    }
}

impl<'de> Deserialize<'de> for StageKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let all: Vec<StageKind> = stages::ALL.iter().map(|s| s.kind).collect();
        super::check::one_of(d, "stage", &all, StageKind::as_str)
    }
}

impl When {
    pub fn as_str(self) -> &'static str {
        match self {
            When::Always => "always",
            When::NoConsensus => "no-consensus",
            When::Consensus => "consensus",
        }
    }
    fn is_always(&self) -> bool {
        *self == When::Always
    }
}

/// One stage of a composition and its settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stage {
    pub kind: StageKind,
    #[serde(skip_serializing_if = "When::is_always")]
    pub when: When,
    /// Settings given; the others take the stage's defaults.
    #[serde(flatten)]
    pub settings: BTreeMap<String, SettingValue>,
}

/// A stage's setting in a run: the one given, else its declared default.
fn resolved(spec: &SettingSpec, given: Option<&SettingValue>) -> SettingValue {
    given.cloned().unwrap_or_else(|| spec.default_value())
}

impl Stage {
    pub fn new(kind: StageKind) -> Self {
        Stage { kind, when: When::Always, settings: BTreeMap::new() }
    }
    /// The stage with `key` set to `value` (building a bundled composition).
    pub fn with(mut self, key: &str, value: impl Into<SettingValue>) -> Self {
        debug_assert!(self.spec().setting(key).is_some(), "{} declares no setting `{key}`", self.kind.as_str());
        self.settings.insert(key.to_string(), value.into());
        self
    }
    pub fn when(mut self, when: When) -> Self {
        self.when = when;
        self
    }
    pub fn spec(&self) -> &'static StageSpec {
        self.kind.spec()
    }
    fn value(&self, key: &str) -> SettingValue {
        match self.spec().setting(key) {
            Some(spec) => resolved(spec, self.settings.get(key)),
            None => panic!("{} declares no setting `{key}`", self.kind.as_str()),
        }
    }
    /// An integer setting (panics on a key the stage does not declare as
    /// one: a programming error, not bad input).
    pub fn integer(&self, key: &str) -> i64 {
        match self.value(key) {
            SettingValue::Integer(v) => v,
            other => panic!("{}: `{key}` is {other}, not an integer", self.kind.as_str()),
        }
    }
    /// Whether a choice setting is `option`.
    pub fn is(&self, key: &str, option: &str) -> bool {
        matches!(self.value(key), SettingValue::Text(v) if v == option)
    }
    /// A choice setting's value.
    pub fn choice(&self, key: &str) -> String {
        match self.value(key) {
            SettingValue::Text(v) => v,
            other => panic!("{}: `{key}` is {other}, not a choice", self.kind.as_str()),
        }
    }
    /// A boolean setting.
    pub fn flag(&self, key: &str) -> bool {
        match self.value(key) {
            SettingValue::Bool(v) => v,
            other => panic!("{}: `{key}` is {other}, not true or false", self.kind.as_str()),
        }
    }
    /// The roles the stage calls besides the members.
    pub fn roles(&self) -> Vec<Role> {
        match self.kind {
            StageKind::Discuss => {
                let mut roles = Vec::new();
                if self.is("order", "moderated") {
                    roles.push(Role::Moderator);
                }
                if self.flag("summarizer") {
                    roles.push(Role::Summarizer);
                }
                if self.is("scope", "per-criterion") {
                    roles.push(Role::FinalJudge);
                }
                roles
            }
            StageKind::Judge => vec![Role::FinalJudge],
            StageKind::Verify => vec![Role::Verifier],
            StageKind::Review => vec![Role::MetaEvaluator],
            StageKind::Aggregate if !self.is("synthesis", "none") => vec![Role::Aggregator],
            _ => Vec::new(),
        }
    }
    /// The stage as the run's header names it: `discuss (talk "argue",
    /// order "rounds") if no-consensus`, with the settings that are not
    /// the stage's defaults.
    pub fn outline(&self) -> String {
        let mut s = self.kind.as_str().to_string();
        let given: Vec<String> = self
            .settings
            .iter()
            .filter(|(k, v)| self.spec().setting(k).is_none_or(|spec| spec.default_value() != **v))
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        if !given.is_empty() {
            s.push_str(&format!(" ({})", given.join(", ")));
        }
        if self.when != When::Always {
            s.push_str(&format!(" if {}", self.when.as_str()));
        }
        s
    }
    /// A setting's value as plain text (`3`, `true`, `all-pairs`).
    pub fn plain(&self, key: &str) -> String {
        match self.value(key) {
            SettingValue::Text(t) => t,
            other => other.to_string(),
        }
    }
    /// A text or choice setting's value (panics like [`Self::integer`]).
    pub fn text(&self, key: &str) -> String {
        self.choice(key)
    }
    /// Whether the stage checks a group's consensus and ends on it.
    pub fn stops_on_consensus(&self) -> bool {
        self.kind == StageKind::Discuss && !self.is("stop", "none")
    }
}

impl From<i64> for SettingValue {
    fn from(v: i64) -> Self {
        SettingValue::Integer(v)
    }
}
impl From<bool> for SettingValue {
    fn from(v: bool) -> Self {
        SettingValue::Bool(v)
    }
}
impl From<&str> for SettingValue {
    fn from(v: &str) -> Self {
        SettingValue::Text(v.to_string())
    }
}
impl From<String> for SettingValue {
    fn from(v: String) -> Self {
        SettingValue::Text(v)
    }
}

/// A method as stages, in the order they run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Composition {
    pub stages: Vec<Stage>,
}

/// A rule between stages that a composition breaks: which stage (its index)
/// and field, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct StageProblem {
    pub stage: usize,
    /// The stage's field the problem is in (`when`, `order`), or `kind`.
    pub field: &'static str,
    pub message: String,
}

impl Composition {
    pub fn new(stages: Vec<Stage>) -> Self {
        Composition { stages }
    }
    /// The stages of `kind`.
    pub fn of(&self, kind: StageKind) -> impl Iterator<Item = &Stage> {
        self.stages.iter().filter(move |s| s.kind == kind)
    }
    pub fn has(&self, kind: StageKind) -> bool {
        self.of(kind).next().is_some()
    }
    /// The roles the stages call besides the members, each once.
    pub fn roles(&self) -> Vec<Role> {
        let mut out: Vec<Role> = Vec::new();
        for r in self.stages.iter().flat_map(Stage::roles) {
            if !out.contains(&r) {
                out.push(r);
            }
        }
        out
    }
    /// The aggregate stage (a checked composition has one, last).
    pub fn aggregate(&self) -> Option<&Stage> {
        self.stages.last().filter(|s| s.kind == StageKind::Aggregate)
    }
    /// The first discussion, whose order the screen shows.
    pub fn discussion(&self) -> Option<&Stage> {
        self.of(StageKind::Discuss).next()
    }

    /// The stages in order, as the run's header shows them.
    pub fn outline(&self) -> String {
        self.stages.iter().map(Stage::outline).collect::<Vec<_>>().join(" → ")
    }

    /// What breaks the rules between stages, in stage order: one aggregate,
    /// last; scores before anything that reads them; `score` after `steps`;
    /// settings that only mean something beside others.
    pub fn problems(&self) -> Vec<StageProblem> {
        let mut out = Vec::new();
        let mut say = |stage: usize, field: &'static str, message: String| {
            out.push(StageProblem { stage, field, message });
        };
        if self.stages.is_empty() {
            say(0, "kind", "a composition needs at least one stage, and its last is `aggregate`".into());
            return out;
        }
        let last = self.stages.len() - 1;
        if let Some(at) = self.stages.iter().position(|s| s.kind == StageKind::Compare)
            && self.stages.len() != 2
        {
            say(
                at,
                "kind",
                "`compare` judges pairs of candidates, not scores: a composition with it is `compare` then \
                 `aggregate`, and nothing else"
                    .into(),
            );
            return out;
        }
        // Whether the members have scores by a stage: an evaluation, a
        // scoring, or a discussion (each turn ends with the speaker's scores).
        let mut scored = false;
        let mut steps = false;
        let mut assessed = false;
        for (i, s) in self.stages.iter().enumerate() {
            if s.when != When::Always && s.spec().reach == Reach::Panel {
                say(
                    i,
                    "when",
                    format!(
                        "`{}` runs once for the panel; only discuss, judge and verify take `when`",
                        s.kind.as_str()
                    ),
                );
            }
            match s.kind {
                StageKind::Aggregate if i != last => {
                    say(i, "kind", "`aggregate` is the last stage, and there is only one".into())
                }
                StageKind::Steps if steps => say(i, "kind", "the evaluation steps are written once".into()),
                StageKind::Steps => steps = true,
                StageKind::Score | StageKind::Assess if !steps => say(
                    i,
                    "kind",
                    format!("`{}` follows the evaluation steps: put a `steps` stage before it", s.kind.as_str()),
                ),
                StageKind::Evaluate | StageKind::Score | StageKind::Assess if scored => say(
                    i,
                    "kind",
                    "the members already have scores here: a first evaluation (`evaluate`, `score` or `assess`) \
                     comes once, before any discussion"
                        .into(),
                ),
                StageKind::Review if !assessed => say(
                    i,
                    "kind",
                    "`review` reads each member's reasons per dimension: put an `assess` stage before it".into(),
                ),
                StageKind::Aggregate if self.has(StageKind::Compare) => {}
                StageKind::Judge | StageKind::Verify | StageKind::Aggregate if !scored => say(
                    i,
                    "kind",
                    format!(
                        "`{}` reads the members' scores: put `evaluate`, `score`, `assess` or `discuss` before it",
                        s.kind.as_str()
                    ),
                ),
                StageKind::Discuss => discuss_problems(i, s, scored, &mut say),
                _ => {}
            }
            if matches!(s.kind, StageKind::Evaluate | StageKind::Score | StageKind::Assess | StageKind::Discuss) {
                scored = true;
            }
            if s.kind == StageKind::Assess {
                assessed = true;
            }
        }
        if steps && !self.has(StageKind::Score) && !self.has(StageKind::Assess) {
            say(
                0,
                "kind",
                "evaluation steps are written for a `score` or `assess` stage: add one after `steps`".into(),
            );
        }
        if self.stages[last].kind != StageKind::Aggregate {
            say(last, "kind", "the last stage of a composition is `aggregate`".into());
        }
        out.sort_by_key(|p| p.stage);
        out
    }
}

/// The rules of one discussion's settings.
fn discuss_problems(i: usize, s: &Stage, scored: bool, say: &mut impl FnMut(usize, &'static str, String)) {
    let order = s.choice("order");
    let given = |key: &str| s.settings.contains_key(key);
    if s.flag("summarizer") && order != "simultaneous" {
        say(i, "summarizer", "a summarizer follows simultaneous rounds: set `order = \"simultaneous\"`".into());
    }
    if order == "moderated" && (given("rounds") || given("shuffle")) {
        let key = if given("rounds") { "rounds" } else { "shuffle" };
        say(
            i,
            key,
            format!("a moderated discussion has no rounds (its length is [moderator] max_turns); remove `{key}`"),
        );
    }
    if s.is("stop", "none") && (given("agreement") || given("scope")) {
        let key = if given("agreement") { "agreement" } else { "scope" };
        say(i, key, format!("`{key}` says when a discussion stops on consensus, and `stop = \"none\"` never does"));
    }
    if s.is("scope", "per-criterion") {
        let talk = s.choice("talk");
        if order != "rounds" || !matches!(talk.as_str(), "collaborate" | "argue") {
            say(
                i,
                "scope",
                "per-criterion discussions are rounds of `collaborate` or `argue` turns: set `order = \"rounds\"` \
                 and one of those `talk`s"
                    .into(),
            );
        }
    }
    if s.is("talk", "review") && scored {
        say(i, "talk", "review turns open a discussion without first evaluations: put no `evaluate` before it".into());
    }
    if !scored && !matches!(s.choice("talk").as_str(), "discuss" | "review") {
        say(
            i,
            "talk",
            "a discussion with nobody's scores yet opens with `discuss` or `review` turns; put `evaluate` before \
             the others"
                .into(),
        );
    }
}

impl StageSpec {
    pub fn setting(&self, key: &str) -> Option<&SettingSpec> {
        self.settings.iter().find(|s| s.key == key)
    }
}

/// A `[[protocol.stage]]` table as written: `kind`, `when`, and settings of
/// any type, checked against the stage's declaration by `panel::check`.
pub(crate) struct StageFile {
    pub kind: StageKind,
    pub when: When,
    pub settings: BTreeMap<String, Result<SettingValue, String>>,
}

impl<'de> Deserialize<'de> for StageFile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, MapAccess, Visitor};
        struct Table;
        impl<'de> Visitor<'de> for Table {
            type Value = StageFile;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a stage table with `kind`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StageFile, A::Error> {
                let mut kind = None;
                let mut when = When::Always;
                let mut settings = BTreeMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "kind" => kind = Some(map.next_value()?),
                        "when" => when = map.next_value()?,
                        _ => {
                            settings.insert(key, map.next_value::<crate::panel::protocol::AnySetting>()?.0);
                        }
                    }
                }
                let kind = kind.ok_or_else(|| {
                    de::Error::custom(format!("missing field `kind`; one of {}", StageKind::names().join(", ")))
                })?;
                Ok(StageFile { kind, when, settings })
            }
        }
        d.deserialize_map(Table)
    }
}

impl StageFile {
    /// The stage with the settings of a readable type (the checker's view
    /// of what the others mean together, once it has named the rest).
    pub(crate) fn readable(&self) -> Stage {
        let settings = self.settings.iter().filter_map(|(k, v)| Some((k.clone(), v.clone().ok()?))).collect();
        Stage { kind: self.kind, when: self.when, settings }
    }
    /// The stage, once its settings are checked (`panel::check` has
    /// reported any of the wrong type).
    pub fn stage(self) -> Result<Stage, String> {
        let kind = self.kind;
        let settings = self
            .settings
            .into_iter()
            .map(|(key, value)| {
                value
                    .map(|v| (key.clone(), v))
                    .map_err(|found| format!("stage `{}` setting `{key}`: invalid type: {found}", kind.as_str()))
            })
            .collect::<Result<_, _>>()?;
        Ok(Stage { kind, when: self.when, settings })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(stages: Vec<Stage>) -> Vec<String> {
        Composition::new(stages)
            .problems()
            .into_iter()
            .map(|p| format!("{} {}: {}", p.stage, p.field, p.message))
            .collect()
    }

    #[test]
    fn a_composition_ends_with_one_aggregate_and_reads_scores_only_once_there_are_some() {
        use StageKind::*;
        assert!(problems(vec![Stage::new(Evaluate), Stage::new(Discuss), Stage::new(Aggregate)]).is_empty());
        let p = problems(vec![Stage::new(Evaluate), Stage::new(Discuss)]);
        assert_eq!(p, ["1 kind: the last stage of a composition is `aggregate`"]);
        let p = problems(vec![Stage::new(Judge), Stage::new(Aggregate)]);
        assert!(p[0].starts_with("0 kind: `judge` reads the members' scores"), "{p:?}");
        let p = problems(vec![Stage::new(Score), Stage::new(Aggregate)]);
        assert!(p[0].contains("put a `steps` stage before it"), "{p:?}");
        let p = problems(vec![Stage::new(Evaluate).when(When::NoConsensus), Stage::new(Aggregate)]);
        assert!(p[0].starts_with("0 when: `evaluate` runs once for the panel"), "{p:?}");
    }

    #[test]
    fn discussion_settings_that_mean_nothing_together_are_named() {
        use StageKind::*;
        let d = Stage::new(Discuss).with("order", "moderated").with("rounds", 3);
        let p = problems(vec![Stage::new(Evaluate), d, Stage::new(Aggregate)]);
        assert!(p[0].starts_with("1 rounds: a moderated discussion has no rounds"), "{p:?}");
        let d = Stage::new(Discuss).with("summarizer", true);
        let p = problems(vec![Stage::new(Evaluate), d, Stage::new(Aggregate)]);
        assert!(p[0].starts_with("1 summarizer:"), "{p:?}");
        let d = Stage::new(Discuss).with("talk", "debate");
        let p = problems(vec![d, Stage::new(Aggregate)]);
        assert!(p[0].starts_with("0 talk: a discussion with nobody's scores yet"), "{p:?}");
    }

    #[test]
    fn roles_come_from_the_stages() {
        use StageKind::*;
        let c = Composition::new(vec![
            Stage::new(Evaluate),
            Stage::new(Discuss).with("order", "moderated"),
            Stage::new(Judge).when(When::NoConsensus),
            Stage::new(Verify),
            Stage::new(Aggregate).with("synthesis", "panel"),
        ]);
        assert_eq!(c.roles(), [Role::Moderator, Role::FinalJudge, Role::Verifier, Role::Aggregator]);
    }
}
