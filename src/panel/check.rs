//! Reading a panel file, with errors that name the file, line, column and field.
//!
//! serde does the checking: the panel types' `Deserialize` (with the
//! `deserialize_with` functions and [`one_of`] below) rejects wrong types and
//! bad values, `serde_path_to_error` names the field that failed and
//! `serde_ignored` the keys that no field takes. What serde cannot express,
//! the rules between fields (unique names, a protocol's settings and roles,
//! scale min below max), is checked after reading ([`Rules`]). Every problem
//! is placed in the text by the spans of the parsed TOML.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, Error as _, Unexpected, Visitor};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::composition::{Composition, Stage, StageFile};
use super::{
    AgentFile, ConsensusSettings, Dimension, GenerationSettings, GroupSpec, JudgeText, ModelSettings, ModeratorFile,
    Panel, PanelError, PanelFile, ProtocolFile, RESERVED_NAMES, Scale, SettingKind, SettingSpec, SettingValue,
};
use crate::roles::Role;

/// 1-based line and character column of byte offset `at` in `text`.
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
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

/// Reads and checks panel TOML; `file` names it in errors.
///
/// One problem is reported, the first in the text of those found: serde
/// stops at the first value it rejects, and the rules between fields are
/// checked only once everything has been read. A missing field gives way to
/// an unknown key in the same table, which is likely its misspelling.
pub(super) fn parse(text: &str, file: &str) -> Result<Panel, PanelError> {
    let root = DeTable::parse(text).map_err(|e| {
        let (line, column) = line_col(text, e.span().map_or(0, |s| s.start));
        PanelError::Syntax { file: file.to_string(), line, column, message: e.message().trim_end().to_string() }
    })?;
    let mut unknown = Vec::new();
    let read: Result<PanelFile, _> = serde_path_to_error::deserialize(serde_ignored::Deserializer::new(
        toml::de::Deserializer::from(root.clone()),
        &mut |path: serde_ignored::Path| unknown.push(FieldPath::ignored(&path)),
    ));
    let source = Source { text, root: Spanned::new(root.span(), DeValue::Table(root.into_inner())) };
    let mut rules = Rules { source: &source, problems: unknown.iter().map(|p| source.unknown_field(p)).collect() };
    let read = match read {
        Ok(panel) => {
            rules.panel(&panel);
            Some(panel)
        }
        Err(e) => {
            rules.problems.push(source.rejected(&e));
            None
        }
    };
    let mut problems = rules.problems;
    let misspelt: Vec<String> =
        problems.iter().filter(|p| p.kind == Kind::Unknown).map(|p| p.table().to_string()).collect();
    problems.retain(|p| p.kind != Kind::Missing || !misspelt.iter().any(|t| t == p.table()));
    let problem = match (problems.into_iter().min_by_key(|p| p.at), read) {
        (Some(problem), _) => problem,
        (None, Some(panel)) => match Panel::try_from(panel) {
            Ok(panel) => return Ok(panel),
            // `Rules::roles` has refused what `try_from` refuses.
            Err(message) => Problem::new(0, FieldPath::default(), message),
        },
        (None, None) => unreachable!("what serde cannot read is a problem, and only gives way to another"),
    };
    let (line, column) = line_col(text, problem.at);
    Err(PanelError::Invalid { file: file.to_string(), line, column, field: problem.field, message: problem.message })
}

/// A problem before it is given a line and column: `at` is a byte offset.
struct Problem {
    at: usize,
    field: String,
    message: String,
    kind: Kind,
}

#[derive(PartialEq)]
enum Kind {
    /// A required field is not there.
    Missing,
    /// A key that no field takes.
    Unknown,
    Other,
}

impl Problem {
    fn new(at: usize, field: FieldPath, message: impl Into<String>) -> Self {
        Problem { at, field: field.to_string(), message: message.into(), kind: Kind::Other }
    }
    /// The table of the field: `groups[0]` for `groups[0].name`.
    fn table(&self) -> &str {
        self.field.rsplit_once('.').map_or("", |(table, _)| table)
    }
}

// ---------------------------------------------------------------------------
// Field paths and where they are in the text
// ---------------------------------------------------------------------------

/// A field's place in the panel: `groups[1].agents[0].name`.
#[derive(Clone, Default)]
struct FieldPath(Vec<Step>);

#[derive(Clone)]
enum Step {
    Key(String),
    Index(usize),
}

impl FieldPath {
    fn key(&self, key: &str) -> Self {
        let mut p = self.clone();
        p.0.push(Step::Key(key.to_string()));
        p
    }
    fn index(&self, index: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Step::Index(index));
        p
    }
    fn from_error(path: &serde_path_to_error::Path) -> Self {
        use serde_path_to_error::Segment;
        FieldPath(
            path.iter()
                .filter_map(|s| match s {
                    Segment::Seq { index } => Some(Step::Index(*index)),
                    Segment::Map { key } | Segment::Enum { variant: key } => Some(Step::Key(key.clone())),
                    Segment::Unknown => None,
                })
                .collect(),
        )
    }
    fn ignored(path: &serde_ignored::Path) -> Self {
        use serde_ignored::Path;
        match path {
            Path::Root => FieldPath::default(),
            Path::Seq { parent, index } => Self::ignored(parent).index(*index),
            Path::Map { parent, key } => Self::ignored(parent).key(key),
            Path::Some { parent } | Path::NewtypeStruct { parent } | Path::NewtypeVariant { parent } => {
                Self::ignored(parent)
            }
        }
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                Step::Key(key) if i == 0 => f.write_str(key)?,
                Step::Key(key) => write!(f, ".{key}")?,
                Step::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// The text and its parsed TOML, whose spans place the problems.
struct Source<'i> {
    text: &'i str,
    root: Spanned<DeValue<'i>>,
}

impl Source<'_> {
    /// The value at `path`, or the nearest table on the way that the file
    /// has: a missing field is reported where its table starts.
    fn nearest(&self, path: &FieldPath) -> (&Spanned<DeValue<'_>>, bool) {
        let mut value = &self.root;
        for step in &path.0 {
            let next = match step {
                Step::Key(key) => value.get_ref().get(key.as_str()),
                Step::Index(index) => value.get_ref().get(*index),
            };
            match next {
                Some(next) => value = next,
                None => return (value, false),
            }
        }
        (value, true)
    }
    fn has(&self, path: &FieldPath) -> bool {
        self.nearest(path).1
    }
    /// Where the value at `path` starts (or the nearest table, see [`Self::nearest`]).
    fn at(&self, path: &FieldPath) -> usize {
        self.nearest(path).0.span().start
    }
    /// Where the key of the field at `path` starts.
    fn key_at(&self, path: &FieldPath) -> usize {
        let mut parent = path.clone();
        let key_start = match parent.0.pop() {
            Some(Step::Key(key)) => match self.nearest(&parent) {
                (table, true) => {
                    table.get_ref().as_table().and_then(|t| t.get_key_value(key.as_str())).map(|(k, _)| k.span().start)
                }
                _ => None,
            },
            _ => None,
        };
        key_start.unwrap_or_else(|| self.at(path))
    }
    fn line(&self, path: &FieldPath) -> usize {
        line_col(self.text, self.at(path)).0
    }

    /// The date-time at `path`, if that is what the file has there. toml
    /// hands a date-time to serde as a table of one private key.
    fn datetime(&self, path: &FieldPath) -> Option<String> {
        match self.nearest(path) {
            (value, true) => value.get_ref().as_datetime().map(|d| format!("datetime `{d}`")),
            _ => None,
        }
    }

    /// What the file has at `path`, as serde's message calls it (`found`).
    fn found(&self, path: &FieldPath, found: &str) -> String {
        self.datetime(path).unwrap_or_else(|| plain_type(found).to_string())
    }

    /// A key no field takes, reported by `serde_ignored`.
    fn unknown_field(&self, path: &FieldPath) -> Problem {
        let mut table = path.clone();
        let key = match table.0.pop() {
            Some(Step::Key(key)) => key,
            _ => String::new(),
        };
        if let Some(datetime) = self.datetime(&table) {
            return Problem::new(self.at(&table), table, format!("invalid type: {datetime}, expected a table"));
        }
        let message = unknown_field(&key, fields_at(&table));
        Problem { kind: Kind::Unknown, ..Problem::new(self.key_at(path), path.clone(), message) }
    }

    /// The value serde refused, at the field `serde_path_to_error` names.
    fn rejected(&self, e: &serde_path_to_error::Error<toml::de::Error>) -> Problem {
        let path = FieldPath::from_error(e.path());
        let at = e.inner().span().map_or_else(|| self.at(&path), |s| s.start);
        let message = e.inner().message();
        if let Some((found, expected)) =
            message.strip_prefix("invalid type: ").and_then(|m| m.rsplit_once(", expected "))
        {
            let message = format!("invalid type: {}, expected {}", self.found(&path, found), plain_type(expected));
            return Problem::new(at, path, message);
        }
        // serde reports a missing field on its table: name the field itself.
        match message.strip_prefix("missing field `").and_then(|m| m.split_once('`')) {
            Some(_) if self.datetime(&path).is_some() => {
                let message = format!("invalid type: {}, expected a table", self.found(&path, ""));
                Problem::new(at, path, message)
            }
            Some((name, rest)) => Problem {
                kind: Kind::Missing,
                ..Problem::new(at, path.key(name), format!("missing required field{rest}"))
            },
            None => Problem::new(at, path, message),
        }
    }
}

/// The fields of the table at `path` (indices aside), for the message about
/// an unknown key there: each table's type and the fields serde gives it.
fn fields_at(path: &FieldPath) -> &'static [&'static str] {
    let keys: Vec<&str> = path
        .0
        .iter()
        .filter_map(|s| match s {
            Step::Key(key) => Some(key.as_str()),
            Step::Index(_) => None,
        })
        .collect();
    match keys.as_slice() {
        [] => fields_of::<PanelFile>(),
        ["judge"] => fields_of::<JudgeText>(),
        ["scale"] => fields_of::<Scale>(),
        ["dimensions"] => fields_of::<Dimension>(),
        ["moderator"] => fields_of::<ModeratorFile>(),
        ["consensus"] => fields_of::<ConsensusSettings>(),
        ["generation"] => fields_of::<GenerationSettings>(),
        ["aggregator" | "final_judge"] | ["roles", _] => fields_of::<ModelSettings>(),
        ["groups"] => fields_of::<GroupSpec>(),
        ["groups", "agents"] => fields_of::<AgentFile>(),
        _ => &[],
    }
}

/// The fields of the struct `T` reads, in order: derived `Deserialize` names
/// them to `deserialize_struct`, which this deserializer records.
fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
    struct Fields<'a>(&'a mut &'static [&'static str]);
    impl<'de> Deserializer<'de> for Fields<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(Self::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(Self::Error::custom("fields recorded"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Fields(&mut fields));
    fields
}

/// serde's name of a type in TOML's words: a map or a struct is a table, a sequence an array.
fn plain_type(serde: &str) -> &str {
    match serde {
        "map" => "table",
        "a map" => "a table",
        "sequence" => "array",
        "a sequence" => "an array",
        other if other.starts_with("struct ") => "a table",
        other => other,
    }
}

/// The closest of `candidates` to `word`, if it is close enough to be a likely typo.
fn suggest<'c>(word: &str, candidates: &[&'c str]) -> Option<&'c str> {
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(word, c), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3) && *d < c.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn unknown_field(key: &str, valid: &[&str]) -> String {
    let hint = suggest(key, valid).map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default();
    if valid.is_empty() {
        format!("unknown field{hint}")
    } else {
        format!("unknown field{hint}; valid fields here: {}", valid.join(", "))
    }
}

pub(super) fn unknown_name(what: &str, given: &str, valid: &[&str]) -> String {
    let hint = suggest(given, valid).map(|s| format!(" (did you mean \"{s}\"?)")).unwrap_or_default();
    format!("unknown {what} \"{given}\"{hint}; valid: {}", valid.join(", "))
}

// ---------------------------------------------------------------------------
// Values, checked by serde as they are read
// ---------------------------------------------------------------------------

/// One of `all` by its name: `what` names the kind in the error.
pub(super) fn one_of<'de, D: Deserializer<'de>, T: Copy>(
    d: D,
    what: &str,
    all: &[T],
    name: fn(T) -> &'static str,
) -> Result<T, D::Error> {
    let given = String::deserialize(d)?;
    all.iter().copied().find(|v| name(*v) == given).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|v| name(*v)).collect();
        D::Error::custom(unknown_name(what, &given, &names))
    })
}

/// A string with more than white space in it.
pub(super) fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    if s.trim().is_empty() {
        return Err(D::Error::custom("must not be empty"));
    }
    Ok(s)
}

pub(super) fn some_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(d).map(Some)
}

/// An integer in `min..=max`.
fn whole<'de, D, T>(d: D, min: T, max: T) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Copy + fmt::Display + Into<i128> + TryFrom<i128>,
{
    struct Whole;
    impl Visitor<'_> for Whole {
        type Value = i128;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an integer")
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<i128, E> {
            Ok(v.into())
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<i128, E> {
            Ok(v.into())
        }
        fn visit_i128<E: de::Error>(self, v: i128) -> Result<i128, E> {
            Ok(v)
        }
        fn visit_u128<E: de::Error>(self, v: u128) -> Result<i128, E> {
            Ok(i128::try_from(v).unwrap_or(i128::MAX))
        }
    }
    let v = d.deserialize_any(Whole)?;
    if v < min.into() {
        return Err(D::Error::custom(format!("must be at least {min}, found {v}")));
    }
    T::try_from(v).map_err(|_| D::Error::custom(format!("must be at most {max}, found {v}")))
}

/// An integer or a float, finite.
fn number<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    struct Number;
    impl Visitor<'_> for Number {
        type Value = f64;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a number")
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
            Ok(v)
        }
    }
    let v = d.deserialize_any(Number)?;
    if !v.is_finite() {
        return Err(D::Error::custom("must be a finite number"));
    }
    Ok(v)
}

/// A count of turns, rounds or tokens: at least 1.
pub(super) fn count<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    whole(d, 1, u32::MAX)
}

pub(super) fn some_count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    count(d).map(Some)
}

/// `generation.seed`: any integer from 0.
pub(super) fn seed<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    whole(d, 0, u64::MAX).map(Some)
}

/// An end of the scale.
pub(super) fn finite<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    number(d)
}

/// `consensus.tolerance`: a number from 0.
pub(super) fn tolerance<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let t = number(d)?;
    if t < 0.0 {
        return Err(D::Error::custom(format!("must not be negative, found {t}")));
    }
    Ok(t)
}

/// A sampling temperature, 0–2.
pub(super) fn temperature<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
    let t = number(d)?;
    if !(0.0..=2.0).contains(&t) {
        return Err(D::Error::custom(format!("must be between 0 and 2, found {t}")));
    }
    Ok(t as f32)
}

pub(super) fn some_temperature<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f32>, D::Error> {
    temperature(d).map(Some)
}

// ---------------------------------------------------------------------------
// Rules between fields, checked after reading
// ---------------------------------------------------------------------------

struct Rules<'s> {
    source: &'s Source<'s>,
    problems: Vec<Problem>,
}

/// Whether `s` is letters, digits and underscores, not starting with a digit.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Rules<'_> {
    /// A problem with the value at `path`.
    fn value(&mut self, path: &FieldPath, message: impl Into<String>) {
        self.problems.push(Problem::new(self.source.at(path), path.clone(), message));
    }

    /// A problem with the key at `path`.
    fn key(&mut self, path: &FieldPath, message: impl Into<String>) {
        self.problems.push(Problem::new(self.source.key_at(path), path.clone(), message));
    }

    /// An array at `path` that needs an element, left out or empty.
    fn needs_one(&mut self, path: &FieldPath, why: &str) {
        if self.source.has(path) {
            self.value(path, format!("must not be empty: {why}"));
        } else {
            let missing = Problem::new(self.source.at(path), path.clone(), format!("missing required field: {why}"));
            self.problems.push(Problem { kind: Kind::Missing, ..missing });
        }
    }

    fn panel(&mut self, panel: &PanelFile) {
        let root = FieldPath::default();
        self.protocol(&panel.protocol, &root.key("protocol"));
        self.roles(panel, &root.key("roles"));
        if panel.scale.min >= panel.scale.max {
            let message = format!("scale min ({}) must be less than max ({})", panel.scale.min, panel.scale.max);
            self.value(&root.key("scale").key("max"), message);
        }
        self.dimensions(&panel.dimensions, &root.key("dimensions"));
        self.groups(&panel.groups, &root.key("groups"));
    }

    /// The settings of `[protocol]`: those its protocol declares, each of
    /// its type and range; a composition's stages, each with its own.
    fn protocol(&mut self, section: &ProtocolFile, path: &FieldPath) {
        let spec = section.kind.spec();
        let mut valid = vec!["kind", "preset"];
        if section.kind.takes_stages() {
            valid.push("stage");
        }
        valid.extend(spec.settings.iter().map(|s| s.key));
        let no_settings = format!("{} has no settings; only `kind` and `preset` belong in [protocol]", spec.id);
        self.settings(spec.settings, &section.settings, path, &valid, &no_settings);
        let stages = path.key("stage");
        if !section.kind.takes_stages() {
            if !section.stages.is_empty() {
                let message = format!(
                    "{} is a bundled protocol; stages belong to a composition (`kind = \"composition\"`)",
                    spec.id
                );
                self.key(&stages, message);
            }
            return;
        }
        if section.stages.is_empty() {
            return self.needs_one(&stages, "a composition needs its stages, one `[[protocol.stage]]` table each");
        }
        let before = self.problems.len();
        for (i, stage) in section.stages.iter().enumerate() {
            let spec = stage.kind.spec();
            let mut valid = vec!["kind", "when"];
            valid.extend(spec.settings.iter().map(|s| s.key));
            let none = format!("stage `{}` has no settings; only `kind` and `when`", spec.id);
            self.settings(spec.settings, &stage.settings, &stages.index(i), &valid, &none);
        }
        if self.problems.len() > before {
            return;
        }
        let written: Vec<Stage> = section.stages.iter().map(StageFile::readable).collect();
        for problem in Composition::new(written).problems() {
            let at = stages.index(problem.stage.min(section.stages.len() - 1));
            let field = at.key(problem.field);
            if self.source.has(&field) { self.value(&field, problem.message) } else { self.value(&at, problem.message) }
        }
    }

    /// Settings of a table that declares them (`[protocol]`, a stage): each
    /// one declared, of its type and in its range.
    fn settings(
        &mut self,
        specs: &[SettingSpec],
        settings: &BTreeMap<String, Result<SettingValue, String>>,
        path: &FieldPath,
        valid: &[&str],
        no_settings: &str,
    ) {
        for (key, value) in settings {
            let field = path.key(key);
            let Some(setting) = specs.iter().find(|s| s.key == key) else {
                if specs.is_empty() {
                    self.key(&field, no_settings.to_string());
                } else {
                    self.key(&field, unknown_field(key, valid));
                }
                continue;
            };
            let found = match value {
                Ok(SettingValue::Bool(b)) => Unexpected::Bool(*b).to_string(),
                Ok(SettingValue::Integer(i)) => Unexpected::Signed(*i).to_string(),
                Ok(SettingValue::Text(s)) => Unexpected::Str(s).to_string(),
                Err(found) => self.source.found(&field, found),
            };
            let wrong = |expected: &str| Some(format!("invalid type: {found}, expected {expected}"));
            let problem = match (setting.kind, value) {
                (SettingKind::Integer { min, .. }, Ok(SettingValue::Integer(v))) if *v < min => {
                    Some(format!("must be at least {min}, found {v}"))
                }
                (SettingKind::Integer { max, .. }, Ok(SettingValue::Integer(v))) if *v > max => {
                    Some(format!("must be at most {max}, found {v}"))
                }
                (SettingKind::Choice { options, .. }, Ok(SettingValue::Text(s))) if !options.contains(&s.as_str()) => {
                    Some(unknown_name("value", s, options))
                }
                (SettingKind::Integer { .. }, Ok(SettingValue::Integer(_)))
                | (SettingKind::Bool { .. }, Ok(SettingValue::Bool(_)))
                | (SettingKind::Text { .. } | SettingKind::Choice { .. }, Ok(SettingValue::Text(_))) => None,
                (SettingKind::Integer { .. }, _) => wrong("an integer"),
                (SettingKind::Bool { .. }, _) => wrong("true or false"),
                (SettingKind::Text { .. }, _) => wrong("a string"),
                (SettingKind::Choice { options, .. }, _) => wrong(&format!("one of {}", options.join(", "))),
            };
            if let Some(message) = problem {
                self.value(&field, message);
            }
        }
    }

    /// `[roles.<role>]`: a role of the panel's protocol, or one of `moot optimize`'s.
    fn roles(&mut self, panel: &PanelFile, path: &FieldPath) {
        let declared = if panel.protocol.kind.takes_stages() {
            Composition::new(panel.protocol.stages.iter().map(StageFile::readable).collect()).roles()
        } else {
            panel.protocol.kind.spec().roles.to_vec()
        };
        for name in panel.roles.keys() {
            let role = Role::ALL.into_iter().find(|r| r.as_str() == name);
            if role.is_some_and(|r| declared.contains(&r) || Role::OPTIMIZE.contains(&r)) {
                continue;
            }
            let valid = if declared.is_empty() {
                "none".to_string()
            } else {
                declared.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ")
            };
            self.key(&path.key(name), format!("not a role of this protocol; its roles: {valid}"));
        }
    }

    fn dimensions(&mut self, dimensions: &[Dimension], path: &FieldPath) {
        if dimensions.is_empty() {
            self.needs_one(path, "a panel needs at least one dimension");
        }
        let mut keys: HashMap<&str, FieldPath> = HashMap::new();
        for (i, dim) in dimensions.iter().enumerate() {
            let at = path.index(i);
            let key = at.key("key");
            if !is_identifier(&dim.key) {
                self.value(
                    &key,
                    format!(
                        "dimension key \"{}\" must be letters, digits and underscores, not starting with a digit",
                        dim.key
                    ),
                );
            } else if let Some(first) = keys.get(dim.key.as_str()) {
                let message =
                    format!("duplicate dimension key \"{}\" (first on line {})", dim.key, self.source.line(first));
                self.value(&key, message);
            } else {
                keys.insert(&dim.key, key);
            }
            // A categorical dimension: two or more distinct, non-empty labels.
            let labels = at.key("labels");
            if !self.source.has(&labels) {
                continue;
            }
            let mut seen: Vec<&str> = Vec::new();
            for (j, label) in dim.labels.iter().enumerate() {
                match label.trim() {
                    "" => self.value(&labels.index(j), "must not be empty"),
                    s if seen.contains(&s) => self.value(&labels.index(j), format!("duplicate label \"{s}\"")),
                    s => seen.push(s),
                }
            }
            if dim.labels.len() < 2 {
                self.value(&labels, "a categorical dimension needs at least two labels");
            }
        }
    }

    fn groups(&mut self, groups: &[GroupSpec], path: &FieldPath) {
        if groups.is_empty() {
            self.needs_one(path, "a panel needs at least one group");
        }
        let mut group_names: HashMap<&str, FieldPath> = HashMap::new();
        let mut agent_names: HashMap<&str, FieldPath> = HashMap::new();
        for (g, group) in groups.iter().enumerate() {
            let at = path.index(g);
            let name = at.key("name");
            if let Some(first) = group_names.get(group.name.as_str()) {
                let message =
                    format!("duplicate group name \"{}\" (first on line {})", group.name, self.source.line(first));
                self.value(&name, message);
            } else {
                group_names.insert(&group.name, name);
            }
            let agents = at.key("agents");
            if group.agents.is_empty() {
                self.value(&agents, "a group needs at least one agent");
            }
            for (a, agent) in group.agents.iter().enumerate() {
                let name = agents.index(a).key("name");
                if RESERVED_NAMES.iter().any(|r| r.eq_ignore_ascii_case(agent.name.trim())) {
                    let message = format!(
                        "\"{}\" is reserved for a panel role; choose another agent name (reserved: {})",
                        agent.name,
                        RESERVED_NAMES.join(", ")
                    );
                    self.value(&name, message);
                } else if let Some(first) = agent_names.get(agent.name.as_str()) {
                    let message = format!(
                        "duplicate agent name \"{}\" (first on line {}); agent names must be unique in a panel",
                        agent.name,
                        self.source.line(first)
                    );
                    self.value(&name, message);
                } else {
                    agent_names.insert(&agent.name, name);
                }
            }
        }
    }
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
        let moderator = fields_of::<ModeratorFile>();
        assert_eq!(suggest("max_turn", moderator), Some("max_turns"));
        assert_eq!(suggest("maj_eval", &["maj-eval", "collab-eval"]), Some("maj-eval"));
        assert_eq!(suggest("persona", fields_of::<AgentFile>()), None);
        assert_eq!(suggest("zz", &["ab"]), None);
    }

    #[test]
    fn the_fields_of_a_table_are_those_serde_reads() {
        assert_eq!(fields_of::<ModelSettings>(), ["provider", "model", "temperature", "max_tokens"]);
        assert_eq!(fields_of::<ModeratorFile>(), fields_of::<super::super::ModeratorSettings>());
        let agent = FieldPath::default().key("groups").index(2).key("agents").index(0);
        assert_eq!(agent.to_string(), "groups[2].agents[0]");
        assert_eq!(fields_at(&agent)[..2], ["name", "role"]);
        assert!(fields_at(&FieldPath::default().key("protocol")).is_empty());
    }

    #[test]
    fn serde_words_become_toml_words() {
        assert_eq!(plain_type("struct Scale"), "a table");
        assert_eq!(plain_type("map"), "table");
        assert_eq!(plain_type("a sequence"), "an array");
        assert_eq!(plain_type("string \"x\""), "string \"x\"");
    }
}
