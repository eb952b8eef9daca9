//! Panels: who judges, on what dimensions and scale, under which protocol.
//!
//! A panel is a TOML file (see `docs/panels.md`). [`Panel::load`] parses and
//! validates it, with errors that name the file, line and field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Judging protocols moot runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    MajEval,
    CollabEval,
}

impl Protocol {
    pub const ALL: [Protocol; 2] = [Protocol::MajEval, Protocol::CollabEval];
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::MajEval => "maj-eval",
            Protocol::CollabEval => "collab-eval",
        }
    }
    /// The protocol named `s` in a panel file (`maj-eval`, `collab-eval`).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// How the next speaker in a debate is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ModeratorPolicy {
    #[default]
    Llm,
    RoundRobin,
    Random,
    Disagreement,
    LeastSpoken,
}

impl ModeratorPolicy {
    pub const ALL: [ModeratorPolicy; 5] = [
        ModeratorPolicy::Llm,
        ModeratorPolicy::RoundRobin,
        ModeratorPolicy::Random,
        ModeratorPolicy::Disagreement,
        ModeratorPolicy::LeastSpoken,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            ModeratorPolicy::Llm => "llm",
            ModeratorPolicy::RoundRobin => "round-robin",
            ModeratorPolicy::Random => "random",
            ModeratorPolicy::Disagreement => "disagreement",
            ModeratorPolicy::LeastSpoken => "least-spoken",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// When a group counts as agreeing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ConsensusRule {
    /// Every agent gives the same score on every dimension and overall.
    Exact,
    /// max − min ≤ tolerance on every dimension and overall.
    #[default]
    Range,
    /// Population standard deviation ≤ tolerance on every dimension and overall.
    Stdev,
}

impl ConsensusRule {
    pub const ALL: [ConsensusRule; 3] = [ConsensusRule::Exact, ConsensusRule::Range, ConsensusRule::Stdev];
    pub fn as_str(self) -> &'static str {
        match self {
            ConsensusRule::Exact => "exact",
            ConsensusRule::Range => "range",
            ConsensusRule::Stdev => "stdev",
        }
    }
    /// The rule named `s` in a panel file (`exact`, `range`, `stdev`).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// The rating scale shared by all dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Scale {
    pub min: f64,
    pub max: f64,
}

impl Default for Scale {
    fn default() -> Self {
        Scale { min: 1.0, max: 5.0 }
    }
}

impl Scale {
    pub fn contains(&self, v: f64) -> bool {
        v >= self.min && v <= self.max
    }
    /// Whether the scale is whole numbers (1–5, 0–10…).
    pub fn is_integer(&self) -> bool {
        self.min.fract() == 0.0 && self.max.fract() == 0.0
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dimension {
    pub key: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
}

impl Dimension {
    /// The display name, falling back to the key.
    pub fn label(&self) -> &str {
        if self.name.is_empty() { &self.key } else { &self.name }
    }
}

/// Provider/model/sampling settings that a panel, role or agent may set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModeratorSettings {
    #[serde(default)]
    pub policy: ModeratorPolicy,
    /// Debate turns per group (MAJ-EVAL).
    #[serde(default = "default_max_turns")]
    pub max_turns: u32,
    #[serde(flatten)]
    pub model: ModelSettings,
}

fn default_max_turns() -> u32 {
    8
}

impl Default for ModeratorSettings {
    fn default() -> Self {
        Self { policy: ModeratorPolicy::default(), max_turns: default_max_turns(), model: ModelSettings::default() }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsensusSettings {
    #[serde(default)]
    pub rule: ConsensusRule,
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
    /// Discussion rounds before the final judge (CollabEval).
    #[serde(default = "default_max_rounds")]
    pub max_rounds: u32,
}

fn default_tolerance() -> f64 {
    1.0
}
fn default_max_rounds() -> u32 {
    3
}

impl Default for ConsensusSettings {
    fn default() -> Self {
        Self { rule: ConsensusRule::default(), tolerance: default_tolerance(), max_rounds: default_max_rounds() }
    }
}

/// Sampling defaults for the whole panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerationSettings {
    #[serde(default = "default_temperature")]
    pub temperature: f32,
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    #[serde(default)]
    pub seed: Option<u64>,
}

fn default_temperature() -> f32 {
    0.7
}
fn default_max_tokens() -> u32 {
    700
}

impl Default for GenerationSettings {
    fn default() -> Self {
        Self { temperature: default_temperature(), max_tokens: default_max_tokens(), seed: None }
    }
}

/// One judge with a persona.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub name: String,
    /// One-line role, e.g. "Primary school teacher".
    #[serde(default)]
    pub role: String,
    #[serde(default)]
    pub demographics: String,
    #[serde(default)]
    pub perspective: String,
    #[serde(default)]
    pub specialty: String,
    #[serde(default)]
    pub traits: String,
    #[serde(default)]
    pub relationships: String,
    #[serde(flatten)]
    pub model: ModelSettings,
}

/// A stakeholder group that debates together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub agents: Vec<AgentSpec>,
}

/// A validated panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Panel {
    pub name: String,
    pub protocol: Protocol,
    /// What is being evaluated and why, shown to every agent.
    pub task: String,
    #[serde(default)]
    pub scale: Scale,
    pub dimensions: Vec<Dimension>,
    #[serde(default)]
    pub moderator: ModeratorSettings,
    #[serde(default)]
    pub consensus: ConsensusSettings,
    #[serde(default)]
    pub generation: GenerationSettings,
    /// Panel-wide provider/model.
    #[serde(flatten)]
    pub model: ModelSettings,
    #[serde(default)]
    pub aggregator: ModelSettings,
    #[serde(default)]
    pub final_judge: ModelSettings,
    pub groups: Vec<GroupSpec>,
    /// Where the panel was loaded from (not part of the file).
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

impl Panel {
    /// Every agent with its group name, in panel order.
    pub fn agents(&self) -> impl Iterator<Item = (&GroupSpec, &AgentSpec)> {
        self.groups.iter().flat_map(|g| g.agents.iter().map(move |a| (g, a)))
    }
    pub fn agent(&self, name: &str) -> Option<(&GroupSpec, &AgentSpec)> {
        self.agents().find(|(_, a)| a.name == name)
    }
    pub fn dimension_keys(&self) -> Vec<String> {
        self.dimensions.iter().map(|d| d.key.clone()).collect()
    }
    /// The panel as recorded in a session (it holds no secrets: keys live in the environment).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
    pub fn source_display(&self) -> String {
        self.source.as_deref().map(Path::display).map(|d| d.to_string()).unwrap_or_else(|| "<panel>".into())
    }
    /// Extra per-dimension descriptions by key.
    pub fn dimension_map(&self) -> BTreeMap<&str, &Dimension> {
        self.dimensions.iter().map(|d| (d.key.as_str(), d)).collect()
    }
}

// ---------------------------------------------------------------------------
// Loading and validation
// ---------------------------------------------------------------------------

/// Names the session log uses for non-agent participants; agents may not take them.
pub const RESERVED_NAMES: &[&str] = &["moderator", "aggregator", "final judge", "human"];

/// The bundled panel used when none is given.
pub const DEFAULT_PANEL: &str = "storybook-qa";

/// Panels compiled into the binary: `(file stem, TOML text)`.
pub const BUNDLED_PANELS: &[(&str, &str)] = &[
    ("storybook-qa", include_str!("../assets/panels/storybook-qa.toml")),
    ("summary-collab", include_str!("../assets/panels/summary-collab.toml")),
];

/// Prefix of [`Panel::source`] for bundled panels (`bundled:storybook-qa`);
/// [`Panel::resolve`] accepts it too.
pub const BUNDLED_PREFIX: &str = "bundled:";

/// Why a panel could not be loaded.
///
/// Positions are 1-based; the column counts characters. Field paths use
/// 0-based indices into arrays, e.g. `groups[1].agents[0].name`.
#[derive(Debug, thiserror::Error)]
pub enum PanelError {
    /// The file could not be read.
    #[error("{}: cannot read panel: {error}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    /// The text is not valid TOML.
    #[error("{file}:{line}:{column}: TOML syntax error: {message}")]
    Syntax { file: String, line: usize, column: usize, message: String },
    /// The TOML is well-formed but is not a valid panel.
    #[error("{file}:{line}:{column}: {}{message}", field_prefix(field))]
    Invalid { file: String, line: usize, column: usize, field: String, message: String },
    /// [`Panel::resolve`] found neither a file nor a bundled panel.
    #[error("no panel file or bundled panel named \"{name}\"; bundled panels: {bundled}")]
    NotFound { name: String, bundled: String },
}

fn field_prefix(field: &str) -> String {
    if field.is_empty() { String::new() } else { format!("{field}: ") }
}

impl PanelError {
    /// `(line, column)` of the problem, when it has one.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            PanelError::Syntax { line, column, .. } | PanelError::Invalid { line, column, .. } => {
                Some((*line, *column))
            }
            _ => None,
        }
    }
    /// The field path of a validation error (`groups[0].agents`), if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            PanelError::Invalid { field, .. } if !field.is_empty() => Some(field),
            _ => None,
        }
    }
}

impl Panel {
    /// Reads and validates a panel file. [`Panel::source`] is set to `path`.
    pub fn load(path: &Path) -> Result<Panel, PanelError> {
        let text =
            std::fs::read_to_string(path).map_err(|error| PanelError::Read { path: path.to_path_buf(), error })?;
        let mut panel = Self::from_toml_str(&text, &path.display().to_string())?;
        panel.source = Some(path.to_path_buf());
        Ok(panel)
    }

    /// Parses and validates panel TOML. `source` names the text in error
    /// messages and becomes [`Panel::source`].
    pub fn from_toml_str(text: &str, source: &str) -> Result<Panel, PanelError> {
        let checker = Checker { text, file: source };
        let root = toml::de::DeTable::parse(text).map_err(|e| checker.syntax(&e))?;
        let mut errors = Vec::new();
        checker.panel(root.get_ref(), &mut errors);
        if let Some(first) = errors.into_iter().min_by_key(|e| e.at) {
            return Err(checker.invalid(first));
        }
        let mut panel = Panel::deserialize(toml::de::Deserializer::from(root)).map_err(|e| {
            let at = e.span().map(|s| s.start).unwrap_or(0);
            checker.invalid(Problem { at, field: String::new(), message: e.message().to_string() })
        })?;
        panel.source = Some(PathBuf::from(source));
        Ok(panel)
    }

    /// A panel compiled into the binary, by file stem (`storybook-qa`).
    /// Its [`Panel::source`] is `bundled:<name>`.
    pub fn bundled(name: &str) -> Option<Panel> {
        let (stem, text) = BUNDLED_PANELS.iter().find(|(stem, _)| *stem == name)?;
        Self::from_toml_str(text, &format!("{BUNDLED_PREFIX}{stem}")).ok()
    }

    /// Names of the bundled panels.
    pub fn bundled_names() -> impl Iterator<Item = &'static str> {
        BUNDLED_PANELS.iter().map(|(stem, _)| *stem)
    }

    /// A panel from a command-line argument: an existing file, or the name of
    /// a bundled panel (`storybook-qa`, `bundled:storybook-qa`,
    /// `storybook-qa.toml`).
    pub fn resolve(arg: &str) -> Result<Panel, PanelError> {
        let path = Path::new(arg);
        if path.is_file() {
            return Self::load(path);
        }
        let name = arg.strip_prefix(BUNDLED_PREFIX).unwrap_or(arg);
        let name = name.strip_suffix(".toml").unwrap_or(name);
        if let Some((stem, text)) = BUNDLED_PANELS.iter().find(|(stem, _)| *stem == name) {
            return Self::from_toml_str(text, &format!("{BUNDLED_PREFIX}{stem}"));
        }
        if arg.contains(std::path::MAIN_SEPARATOR) || arg.contains('/') || path.extension().is_some() {
            return Self::load(path);
        }
        Err(PanelError::NotFound {
            name: arg.to_string(),
            bundled: Self::bundled_names().collect::<Vec<_>>().join(", "),
        })
    }
}

/// 1-based line and character column of byte offset `at` in `text`.
pub(crate) fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// A validation problem before it is given a file and line.
struct Problem {
    at: usize,
    field: String,
    message: String,
}

type Value<'i> = toml::Spanned<toml::de::DeValue<'i>>;
type Table<'i> = toml::de::DeTable<'i>;

const MODEL_KEYS: &[&str] = &["provider", "model", "temperature", "max_tokens"];
const PANEL_KEYS: &[&str] = &[
    "name",
    "protocol",
    "task",
    "scale",
    "dimensions",
    "moderator",
    "consensus",
    "generation",
    "aggregator",
    "final_judge",
    "groups",
    "provider",
    "model",
    "temperature",
    "max_tokens",
];
const SCALE_KEYS: &[&str] = &["min", "max"];
const DIMENSION_KEYS: &[&str] = &["key", "name", "description"];
const MODERATOR_KEYS: &[&str] = &["policy", "max_turns", "provider", "model", "temperature", "max_tokens"];
const CONSENSUS_KEYS: &[&str] = &["rule", "tolerance", "max_rounds"];
const GENERATION_KEYS: &[&str] = &["temperature", "max_tokens", "seed"];
const GROUP_KEYS: &[&str] = &["name", "description", "agents"];
const AGENT_KEYS: &[&str] = &[
    "name",
    "role",
    "demographics",
    "perspective",
    "specialty",
    "traits",
    "relationships",
    "provider",
    "model",
    "temperature",
    "max_tokens",
];

/// Walks the parsed TOML and reports problems with their byte offsets.
struct Checker<'a> {
    text: &'a str,
    file: &'a str,
}

fn join_path(parent: &str, key: &str) -> String {
    if parent.is_empty() { key.to_string() } else { format!("{parent}.{key}") }
}

fn problem(at: usize, field: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem { at, field: field.into(), message: message.into() }
}

fn integer_of(v: &toml::de::DeValue<'_>) -> Option<i128> {
    let i = v.as_integer()?;
    i128::from_str_radix(i.as_str(), i.radix()).ok()
}

fn number_of(v: &toml::de::DeValue<'_>) -> Option<f64> {
    if let Some(i) = integer_of(v) {
        return Some(i as f64);
    }
    v.as_float()?.as_str().replace('_', "").parse::<f64>().ok()
}

/// Whether `s` is letters, digits and underscores, not starting with a digit.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The closest of `candidates` to `word`, if it is close enough to be a likely typo.
fn suggest<'c>(word: &str, candidates: &[&'c str]) -> Option<&'c str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1];
            for (j, cb) in b.iter().enumerate() {
                let cost = usize::from(ca != *cb);
                cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
            }
            prev = cur;
        }
        prev[b.len()]
    }
    candidates
        .iter()
        .map(|c| (distance(word, c), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3) && *d < c.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

impl Checker<'_> {
    fn syntax(&self, e: &toml::de::Error) -> PanelError {
        let (line, column) = line_col(self.text, e.span().map_or(0, |s| s.start));
        PanelError::Syntax { file: self.file.to_string(), line, column, message: e.message().trim_end().to_string() }
    }

    fn invalid(&self, p: Problem) -> PanelError {
        let (line, column) = line_col(self.text, p.at);
        PanelError::Invalid { file: self.file.to_string(), line, column, field: p.field, message: p.message }
    }

    /// Reports keys of `table` that are not in `allowed`.
    fn known_keys(&self, table: &Table<'_>, path: &str, allowed: &[&str], out: &mut Vec<Problem>) {
        for key in table.keys() {
            let name: &str = key.get_ref();
            if allowed.contains(&name) {
                continue;
            }
            let hint = suggest(name, allowed).map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default();
            out.push(problem(
                key.span().start,
                join_path(path, name),
                format!("unknown field{hint}; valid fields here: {}", allowed.join(", ")),
            ));
        }
    }

    /// The table at `table[key]`, if present and a table.
    fn sub_table<'t, 'i>(
        &self,
        table: &'t Table<'i>,
        path: &str,
        key: &str,
        allowed: &[&str],
        out: &mut Vec<Problem>,
    ) -> Option<&'t Table<'i>> {
        let v = table.get(key)?;
        match v.get_ref().as_table() {
            Some(t) => {
                self.known_keys(t, &join_path(path, key), allowed, out);
                Some(t)
            }
            None => {
                out.push(wrong_type(v, &join_path(path, key), "a table"));
                None
            }
        }
    }

    /// A string field; a required one is reported at `table_at` when absent.
    fn string<'t>(
        &self,
        table: &'t Table<'_>,
        table_at: usize,
        path: &str,
        key: &str,
        need: Need,
        out: &mut Vec<Problem>,
    ) -> Option<(&'t str, usize)> {
        let required = need == Need::Required;
        let non_empty = need != Need::Optional;
        let field = join_path(path, key);
        let Some(v) = table.get(key) else {
            if required {
                out.push(problem(table_at, field, "missing required field"));
            }
            return None;
        };
        let Some(s) = v.get_ref().as_str() else {
            out.push(wrong_type(v, &field, "a string"));
            return None;
        };
        if non_empty && s.trim().is_empty() {
            out.push(problem(v.span().start, field, "must not be empty"));
            return None;
        }
        Some((s, v.span().start))
    }

    /// An integer field in `min..=max`.
    fn integer(
        &self,
        table: &Table<'_>,
        path: &str,
        key: &str,
        min: i128,
        max: i128,
        out: &mut Vec<Problem>,
    ) -> Option<i128> {
        let v = table.get(key)?;
        let field = join_path(path, key);
        let Some(i) = integer_of(v.get_ref()) else {
            out.push(wrong_type(v, &field, "an integer"));
            return None;
        };
        if i < min || i > max {
            let what = if i < min { format!("must be at least {min}") } else { format!("must be at most {max}") };
            out.push(problem(v.span().start, field, format!("{what}, found {i}")));
            return None;
        }
        Some(i)
    }

    /// A number (integer or float) field.
    fn number(&self, table: &Table<'_>, path: &str, key: &str, out: &mut Vec<Problem>) -> Option<(f64, usize)> {
        let v = table.get(key)?;
        match number_of(v.get_ref()) {
            Some(n) if n.is_finite() => Some((n, v.span().start)),
            Some(_) => {
                out.push(problem(v.span().start, join_path(path, key), "must be a finite number"));
                None
            }
            None => {
                out.push(wrong_type(v, &join_path(path, key), "a number"));
                None
            }
        }
    }

    /// A temperature in 0–2.
    fn temperature(&self, table: &Table<'_>, path: &str, out: &mut Vec<Problem>) {
        if let Some((t, at)) = self.number(table, path, "temperature", out)
            && !(0.0..=2.0).contains(&t)
        {
            out.push(problem(at, join_path(path, "temperature"), format!("must be between 0 and 2, found {t}")));
        }
    }

    /// `provider`, `model`, `temperature`, `max_tokens`.
    fn model_settings(&self, table: &Table<'_>, table_at: usize, path: &str, out: &mut Vec<Problem>) {
        self.string(table, table_at, path, "provider", Need::NonEmpty, out);
        self.string(table, table_at, path, "model", Need::NonEmpty, out);
        self.temperature(table, path, out);
        self.integer(table, path, "max_tokens", 1, u32::MAX.into(), out);
    }

    /// An enum-like string field checked with `parse`.
    fn choice(&self, table: &Table<'_>, path: &str, key: &str, what: &str, valid: &[&str], out: &mut Vec<Problem>) {
        let Some(v) = table.get(key) else { return };
        let field = join_path(path, key);
        match v.get_ref().as_str() {
            Some(s) if valid.contains(&s) => {}
            Some(s) => {
                let hint = suggest(s, valid).map(|h| format!(" (did you mean \"{h}\"?)")).unwrap_or_default();
                out.push(problem(
                    v.span().start,
                    field,
                    format!("unknown {what} \"{s}\"{hint}; valid: {}", valid.join(", ")),
                ));
            }
            None => out.push(wrong_type(v, &field, "a string")),
        }
    }

    /// Elements of the array `table[key]` that are tables, with their paths.
    fn table_array<'t, 'i>(
        &self,
        table: &'t Table<'i>,
        table_at: usize,
        path: &str,
        key: &str,
        what: &str,
        out: &mut Vec<Problem>,
    ) -> Vec<(&'t Table<'i>, usize, String)> {
        let field = join_path(path, key);
        let Some(v) = table.get(key) else {
            out.push(problem(table_at, field, format!("missing required field: {what}")));
            return Vec::new();
        };
        let Some(array) = v.get_ref().as_array() else {
            out.push(wrong_type(v, &field, "an array of tables"));
            return Vec::new();
        };
        if array.is_empty() {
            out.push(problem(v.span().start, field, format!("must not be empty: {what}")));
            return Vec::new();
        }
        let mut tables = Vec::new();
        for (i, item) in array.iter().enumerate() {
            let item_path = format!("{field}[{i}]");
            match item.get_ref().as_table() {
                Some(t) => tables.push((t, item.span().start, item_path)),
                None => out.push(wrong_type(item, &item_path, "a table")),
            }
        }
        tables
    }

    fn panel(&self, root: &Table<'_>, out: &mut Vec<Problem>) {
        self.known_keys(root, "", PANEL_KEYS, out);
        self.string(root, 0, "", "name", Need::Required, out);
        if root.contains_key("protocol") {
            let valid: Vec<&str> = Protocol::ALL.iter().map(|p| p.as_str()).collect();
            self.choice(root, "", "protocol", "protocol", &valid, out);
        } else {
            out.push(problem(0, "protocol", "missing required field"));
        }
        self.string(root, 0, "", "task", Need::Required, out);
        self.model_settings(root, 0, "", out);

        if let Some(scale) = self.sub_table(root, "", "scale", SCALE_KEYS, out) {
            let min = self.number(scale, "scale", "min", out);
            let max = self.number(scale, "scale", "max", out);
            let (min_v, max_v) = (min.map_or(1.0, |m| m.0), max.map_or(5.0, |m| m.0));
            if min_v >= max_v {
                let at = max.or(min).map_or(0, |m| m.1);
                let field = if max.is_some() { "scale.max" } else { "scale.min" };
                out.push(problem(at, field, format!("scale min ({min_v}) must be less than max ({max_v})")));
            }
        }

        let mut dimension_keys: Vec<(&str, usize)> = Vec::new();
        for (dim, at, path) in self.table_array(root, 0, "", "dimensions", "a panel needs at least one dimension", out)
        {
            self.known_keys(dim, &path, DIMENSION_KEYS, out);
            if let Some((key, key_at)) = self.string(dim, at, &path, "key", Need::Required, out) {
                let field = format!("{path}.key");
                if key == "overall" {
                    out.push(problem(key_at, field, "`overall` is reserved: every evaluation has an overall score"));
                } else if !is_identifier(key) {
                    out.push(problem(
                        key_at,
                        field,
                        format!(
                            "dimension key \"{key}\" must be letters, digits and underscores, not starting with a digit"
                        ),
                    ));
                } else if let Some((_, first)) = dimension_keys.iter().find(|(k, _)| *k == key) {
                    let (line, _) = line_col(self.text, *first);
                    out.push(problem(
                        key_at,
                        field,
                        format!("duplicate dimension key \"{key}\" (first on line {line})"),
                    ));
                } else {
                    dimension_keys.push((key, key_at));
                }
            }
            self.string(dim, at, &path, "name", Need::Optional, out);
            self.string(dim, at, &path, "description", Need::Optional, out);
        }

        if let Some(m) = self.sub_table(root, "", "moderator", MODERATOR_KEYS, out) {
            let valid: Vec<&str> = ModeratorPolicy::ALL.iter().map(|p| p.as_str()).collect();
            self.choice(m, "moderator", "policy", "moderator policy", &valid, out);
            self.integer(m, "moderator", "max_turns", 1, u32::MAX.into(), out);
            let at = root.get("moderator").map_or(0, |v| v.span().start);
            self.model_settings(m, at, "moderator", out);
        }
        if let Some(c) = self.sub_table(root, "", "consensus", CONSENSUS_KEYS, out) {
            let valid: Vec<&str> = ConsensusRule::ALL.iter().map(|r| r.as_str()).collect();
            self.choice(c, "consensus", "rule", "consensus rule", &valid, out);
            if let Some((t, at)) = self.number(c, "consensus", "tolerance", out)
                && t < 0.0
            {
                out.push(problem(at, "consensus.tolerance", format!("must not be negative, found {t}")));
            }
            self.integer(c, "consensus", "max_rounds", 1, u32::MAX.into(), out);
        }
        if let Some(g) = self.sub_table(root, "", "generation", GENERATION_KEYS, out) {
            self.temperature(g, "generation", out);
            self.integer(g, "generation", "max_tokens", 1, u32::MAX.into(), out);
            self.integer(g, "generation", "seed", 0, u64::MAX.into(), out);
        }
        for key in ["aggregator", "final_judge"] {
            if let Some(t) = self.sub_table(root, "", key, MODEL_KEYS, out) {
                let at = root.get(key).map_or(0, |v| v.span().start);
                self.model_settings(t, at, key, out);
            }
        }

        let mut group_names: Vec<(&str, usize)> = Vec::new();
        let mut agent_names: Vec<(&str, usize)> = Vec::new();
        for (group, at, path) in self.table_array(root, 0, "", "groups", "a panel needs at least one group", out) {
            self.known_keys(group, &path, GROUP_KEYS, out);
            if let Some((name, name_at)) = self.string(group, at, &path, "name", Need::Required, out) {
                if let Some((_, first)) = group_names.iter().find(|(n, _)| *n == name) {
                    let (line, _) = line_col(self.text, *first);
                    out.push(problem(
                        name_at,
                        format!("{path}.name"),
                        format!("duplicate group name \"{name}\" (first on line {line})"),
                    ));
                } else {
                    group_names.push((name, name_at));
                }
            }
            self.string(group, at, &path, "description", Need::Optional, out);
            let agents_field = format!("{path}.agents");
            let agents = match group.get("agents") {
                None => {
                    out.push(problem(at, agents_field, "a group needs at least one agent"));
                    continue;
                }
                Some(v) => match v.get_ref().as_array() {
                    None => {
                        out.push(wrong_type(v, &agents_field, "an array of tables"));
                        continue;
                    }
                    Some(a) if a.is_empty() => {
                        out.push(problem(v.span().start, agents_field, "a group needs at least one agent"));
                        continue;
                    }
                    Some(a) => a,
                },
            };
            for (i, agent) in agents.iter().enumerate() {
                let agent_path = format!("{agents_field}[{i}]");
                let Some(t) = agent.get_ref().as_table() else {
                    out.push(wrong_type(agent, &agent_path, "a table"));
                    continue;
                };
                let agent_at = agent.span().start;
                self.known_keys(t, &agent_path, AGENT_KEYS, out);
                if let Some((name, name_at)) = self.string(t, agent_at, &agent_path, "name", Need::Required, out) {
                    if RESERVED_NAMES.iter().any(|r| r.eq_ignore_ascii_case(name.trim())) {
                        out.push(problem(
                            name_at,
                            format!("{agent_path}.name"),
                            format!(
                                "\"{name}\" is reserved for a panel role; choose another agent name (reserved: {})",
                                RESERVED_NAMES.join(", ")
                            ),
                        ));
                    } else if let Some((_, first)) = agent_names.iter().find(|(n, _)| *n == name) {
                        let (line, _) = line_col(self.text, *first);
                        out.push(problem(
                            name_at,
                            format!("{agent_path}.name"),
                            format!("duplicate agent name \"{name}\" (first on line {line}); agent names must be unique in a panel"),
                        ));
                    } else {
                        agent_names.push((name, name_at));
                    }
                }
                for key in ["role", "demographics", "perspective", "specialty", "traits", "relationships"] {
                    self.string(t, agent_at, &agent_path, key, Need::Optional, out);
                }
                self.model_settings(t, agent_at, &agent_path, out);
            }
        }
    }
}

/// How [`Checker::string`] treats a string field.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    /// May be absent or empty.
    Optional,
    /// May be absent, must not be empty when present.
    NonEmpty,
    /// Must be present and not empty.
    Required,
}

fn wrong_type(v: &Value<'_>, field: &str, expected: &str) -> Problem {
    problem(v.span().start, field, format!("expected {expected}, found {}", v.get_ref().type_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters_from_one() {
        let text = "ab\nçé = 1\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 3), (2, 1));
        // "çé" is four bytes: the `=` is the fourth character of line 2.
        assert_eq!(line_col(text, 8), (2, 4));
        // Offsets inside a character or past the end are clamped.
        assert_eq!(line_col(text, 4), (2, 1));
        assert_eq!(line_col(text, 999), (3, 1));
    }

    #[test]
    fn identifiers() {
        for ok in ["grammar", "answer_relevancy", "_x", "q2"] {
            assert!(is_identifier(ok), "{ok}");
        }
        for bad in ["", "2nd", "fact check", "fact-check", "naïve"] {
            assert!(!is_identifier(bad), "{bad}");
        }
    }

    #[test]
    fn suggestions_only_for_near_misses() {
        assert_eq!(suggest("max_turn", MODERATOR_KEYS), Some("max_turns"));
        assert_eq!(suggest("maj_eval", &["maj-eval", "collab-eval"]), Some("maj-eval"));
        assert_eq!(suggest("persona", AGENT_KEYS), None);
        assert_eq!(suggest("zz", &["ab"]), None);
    }

    #[test]
    fn every_enum_parses_its_own_name() {
        for p in Protocol::ALL {
            assert_eq!(Protocol::parse(p.as_str()), Some(p));
        }
        for p in ModeratorPolicy::ALL {
            assert_eq!(ModeratorPolicy::parse(p.as_str()), Some(p));
        }
        for r in ConsensusRule::ALL {
            assert_eq!(ConsensusRule::parse(r.as_str()), Some(r));
        }
        assert_eq!(Protocol::parse("maj_eval"), None);
    }

    #[test]
    fn validation_accepts_exactly_what_serde_accepts_for_the_bundled_panels() {
        for (stem, text) in BUNDLED_PANELS {
            let direct: Panel = toml::from_str(text).unwrap_or_else(|e| panic!("{stem}: {e}"));
            let checked = Panel::from_toml_str(text, stem).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(direct.groups, checked.groups);
            assert_eq!(direct.dimensions, checked.dimensions);
        }
    }
}
