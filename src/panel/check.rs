//! Validation of panel TOML, with errors that name the file, line and field.

use super::{ConsensusRule, ModeratorPolicy, PanelError, Protocol, RESERVED_NAMES, SettingKind};
use crate::session::event::Role;

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

/// A validation problem before it is given a file and line.
pub(super) struct Problem {
    pub at: usize,
    pub field: String,
    pub message: String,
}

type Value<'i> = toml::Spanned<toml::de::DeValue<'i>>;
type Table<'i> = toml::de::DeTable<'i>;

const MODEL_KEYS: &[&str] = &["provider", "model", "temperature", "max_tokens"];
const PANEL_KEYS: &[&str] = &[
    "name",
    "protocol",
    "task",
    "judge",
    "scale",
    "dimensions",
    "moderator",
    "consensus",
    "generation",
    "aggregator",
    "final_judge",
    "roles",
    "groups",
    "provider",
    "model",
    "temperature",
    "max_tokens",
];
const JUDGE_KEYS: &[&str] = &["rubric", "guidance", "examples"];
const SCALE_KEYS: &[&str] = &["min", "max"];
const DIMENSION_KEYS: &[&str] = &["key", "name", "description", "steps", "labels"];
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
pub(super) struct Checker<'a> {
    pub text: &'a str,
    pub file: &'a str,
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
    pub(super) fn syntax(&self, e: &toml::de::Error) -> PanelError {
        let (line, column) = line_col(self.text, e.span().map_or(0, |s| s.start));
        PanelError::Syntax { file: self.file.to_string(), line, column, message: e.message().trim_end().to_string() }
    }

    pub(super) fn invalid(&self, p: Problem) -> PanelError {
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

    /// `protocol = "name"`, or a `[protocol]` table: `kind` and the settings
    /// that protocol declares, each of its declared type and range.
    fn protocol(&self, root: &Table<'_>, out: &mut Vec<Problem>) {
        let names = Protocol::names();
        let Some(v) = root.get("protocol") else {
            out.push(problem(0, "protocol", "missing required field"));
            return;
        };
        let Some(table) = v.get_ref().as_table() else {
            self.choice(root, "", "protocol", "protocol", &names, out);
            return;
        };
        let Some(kind) = table.get("kind") else {
            out.push(problem(
                v.span().start,
                "protocol.kind",
                format!("missing required field; one of {}", names.join(", ")),
            ));
            return;
        };
        self.choice(table, "protocol", "kind", "protocol", &names, out);
        let Some(spec) = kind.get_ref().as_str().and_then(Protocol::parse).map(Protocol::spec) else { return };
        let mut allowed = vec!["kind"];
        allowed.extend(spec.settings.iter().map(|s| s.key));
        if spec.settings.is_empty() {
            for key in table.keys() {
                if key.get_ref() != "kind" {
                    out.push(problem(
                        key.span().start,
                        join_path("protocol", key.get_ref()),
                        format!("{} has no settings; only `kind` belongs in [protocol]", spec.id),
                    ));
                }
            }
        } else {
            self.known_keys(table, "protocol", &allowed, out);
        }
        for s in spec.settings {
            match s.kind {
                SettingKind::Integer { min, max, .. } => {
                    self.integer(table, "protocol", s.key, min.into(), max.into(), out);
                }
                SettingKind::Bool { .. } => {
                    if let Some(v) = table.get(s.key)
                        && v.get_ref().as_bool().is_none()
                    {
                        out.push(wrong_type(v, &join_path("protocol", s.key), "true or false"));
                    }
                }
                SettingKind::Text { .. } => {
                    if let Some(v) = table.get(s.key)
                        && v.get_ref().as_str().is_none()
                    {
                        out.push(wrong_type(v, &join_path("protocol", s.key), "a string"));
                    }
                }
                SettingKind::Choice { options, .. } => {
                    if let Some(v) = table.get(s.key) {
                        let field = join_path("protocol", s.key);
                        match v.get_ref().as_str() {
                            Some(name) if options.contains(&name) => {}
                            Some(name) => out.push(problem(
                                v.span().start,
                                field,
                                format!("unknown value \"{name}\"; valid: {}", options.join(", ")),
                            )),
                            None => out.push(wrong_type(v, &field, &format!("one of {}", options.join(", ")))),
                        }
                    }
                }
            }
        }
    }

    /// A categorical dimension's `labels`: two or more distinct, non-empty strings.
    fn labels(&self, dim: &Table<'_>, path: &str, out: &mut Vec<Problem>) {
        let Some(v) = dim.get("labels") else { return };
        let field = join_path(path, "labels");
        let Some(items) = v.get_ref().as_array() else {
            out.push(wrong_type(v, &field, "an array of strings"));
            return;
        };
        let mut seen: Vec<&str> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item.get_ref().as_str().map(str::trim) {
                Some("") => out.push(problem(item.span().start, format!("{field}[{i}]"), "must not be empty")),
                Some(s) if seen.contains(&s) => {
                    out.push(problem(item.span().start, format!("{field}[{i}]"), format!("duplicate label \"{s}\"")))
                }
                Some(s) => seen.push(s),
                None => out.push(wrong_type(item, &format!("{field}[{i}]"), "a string")),
            }
        }
        if items.len() < 2 {
            out.push(problem(v.span().start, field, "a categorical dimension needs at least two labels"));
        }
    }

    /// `[roles.<role>]`: model settings of a role the protocol declares.
    fn roles(&self, root: &Table<'_>, out: &mut Vec<Problem>) {
        let Some(v) = root.get("roles") else { return };
        let Some(table) = v.get_ref().as_table() else {
            out.push(wrong_type(v, "roles", "a table"));
            return;
        };
        let declared: Vec<&str> = match root.get("protocol").map(|p| p.get_ref()) {
            Some(p) => p
                .as_str()
                .or_else(|| p.as_table().and_then(|t| t.get("kind")).and_then(|k| k.get_ref().as_str()))
                .and_then(Protocol::parse)
                .map(|p| p.spec().roles.iter().map(|r| r.as_str()).collect())
                .unwrap_or_default(),
            None => Vec::new(),
        };
        for (key, value) in table.iter() {
            let name: &str = key.get_ref();
            let field = join_path("roles", name);
            // `moot optimize`'s own roles may be bound in any panel.
            let optimize_role = Role::OPTIMIZE.iter().any(|r| r.as_str() == name);
            if !declared.contains(&name) && !optimize_role {
                let valid = if declared.is_empty() { "none".to_string() } else { declared.join(", ") };
                out.push(problem(key.span().start, field, format!("not a role of this protocol; its roles: {valid}")));
                continue;
            }
            match value.get_ref().as_table() {
                Some(t) => {
                    self.known_keys(t, &field, MODEL_KEYS, out);
                    self.model_settings(t, value.span().start, &field, out);
                }
                None => out.push(wrong_type(value, &field, "a table")),
            }
        }
    }

    pub(super) fn panel(&self, root: &Table<'_>, out: &mut Vec<Problem>) {
        self.known_keys(root, "", PANEL_KEYS, out);
        self.string(root, 0, "", "name", Need::Required, out);
        self.protocol(root, out);
        self.roles(root, out);
        self.string(root, 0, "", "task", Need::Required, out);
        if let Some(judge) = self.sub_table(root, "", "judge", JUDGE_KEYS, out) {
            let at = root.get("judge").map_or(0, |v| v.span().start);
            for key in JUDGE_KEYS {
                self.string(judge, at, "judge", key, Need::Optional, out);
            }
        }
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
            self.string(dim, at, &path, "steps", Need::NonEmpty, out);
            self.labels(dim, &path, out);
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
}
