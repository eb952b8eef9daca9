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

use crate::session::event::Role;

/// The catalogue: each protocol's variant and the file that declares it
/// (its [`ProtocolSpec`] as `SPEC`). A new protocol is one line here, its
/// declaration file, and its runner (one line in the engine's
/// `protocols/mod.rs`).
macro_rules! catalogue {
    ($($variant:ident => $module:ident),* $(,)?) => {
        $(mod $module;)*

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
}

/// How a protocol orders its speakers (what the screens show about the next one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeakerOrder {
    /// A moderator (an LLM or a policy) picks each next speaker.
    Moderated,
    /// Rounds in a seeded shuffled order.
    ShuffledRounds,
    /// Nobody takes the floor: each judge works alone.
    Independent,
    /// Rounds in a fixed order, or all at once, as a setting says (ChatEval).
    Rounds,
}

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
    pub order: SpeakerOrder,
    /// Judges follow per-dimension evaluation steps (shown, editable before scoring).
    pub uses_steps: bool,
    /// A group's result weighs each agent's scores (and labels) by its confidence.
    pub confidence_weighted: bool,
}

impl Protocol {
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
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SettingValue {
    Bool(bool),
    Integer(i64),
    Text(String),
}

/// The panel's protocol and its settings: `protocol = "maj-eval"`, or a
/// `[protocol]` table with `kind` and the protocol's settings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "ProtocolFile")]
pub struct ProtocolSection {
    pub kind: Protocol,
    /// Settings given in the panel; the others take their declared defaults.
    pub settings: BTreeMap<String, SettingValue>,
}

impl ProtocolSection {
    pub fn new(kind: Protocol) -> Self {
        Self { kind, settings: BTreeMap::new() }
    }
    pub fn spec(&self) -> &'static ProtocolSpec {
        self.kind.spec()
    }
    /// Whether the protocol compares an item's candidates in pairs (A, B or
    /// tie) rather than rating its content: `pairwise`, and CollabEval in
    /// its pairwise mode.
    pub fn compares_pairs(&self) -> bool {
        match self.kind {
            Protocol::Pairwise => true,
            Protocol::CollabEval => self.choice("mode") == "pairwise",
            _ => false,
        }
    }
    /// An integer setting, or its default. Panics on a key the protocol does
    /// not declare as an integer (a programming error, not bad input).
    pub fn integer(&self, key: &str) -> i64 {
        match (self.spec().setting(key).map(|s| s.kind), self.settings.get(key)) {
            (Some(SettingKind::Integer { .. }), Some(SettingValue::Integer(v))) => *v,
            (Some(SettingKind::Integer { default, .. }), _) => default,
            _ => panic!("{} declares no integer setting `{key}`", self.kind.as_str()),
        }
    }
    /// A choice setting, or its default (panics like [`Self::integer`]).
    pub fn choice(&self, key: &str) -> &str {
        match (self.spec().setting(key).map(|s| s.kind), self.settings.get(key)) {
            (Some(SettingKind::Choice { .. }), Some(SettingValue::Text(v))) => v,
            (Some(SettingKind::Choice { default, .. }), _) => default,
            _ => panic!("{} declares no choice setting `{key}`", self.kind.as_str()),
        }
    }
    /// A text setting, or its default (panics like [`Self::integer`]).
    pub fn text(&self, key: &str) -> &str {
        match (self.spec().setting(key).map(|s| s.kind), self.settings.get(key)) {
            (Some(SettingKind::Text { .. }), Some(SettingValue::Text(v))) => v,
            (Some(SettingKind::Text { default }), _) => default,
            _ => panic!("{} declares no text setting `{key}`", self.kind.as_str()),
        }
    }
    /// A boolean setting, or its default (panics like [`Self::integer`]).
    pub fn flag(&self, key: &str) -> bool {
        match (self.spec().setting(key).map(|s| s.kind), self.settings.get(key)) {
            (Some(SettingKind::Bool { .. }), Some(SettingValue::Bool(v))) => *v,
            (Some(SettingKind::Bool { default }), _) => default,
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
        #[serde(flatten)]
        settings: BTreeMap<String, SettingValue>,
    },
}

impl Serialize for ProtocolSection {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.settings.is_empty() {
            SectionRepr::Name(self.kind).serialize(s)
        } else {
            SectionRepr::Table { kind: self.kind, settings: self.settings.clone() }.serialize(s)
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
        Ok(Self { kind: file.kind, settings })
    }
}

/// `protocol` as written: a name, or a table of `kind` and settings of any
/// type. Which settings the protocol takes, and of which types, is checked
/// once `kind` is known, whatever the order of the keys (in `panel::check`).
pub(crate) struct ProtocolFile {
    pub kind: Protocol,
    /// Each setting's value, or what serde calls a value of another type
    /// (`floating point `1.5``).
    pub settings: BTreeMap<String, Result<SettingValue, String>>,
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
                Ok(ProtocolFile { kind, settings: BTreeMap::new() })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ProtocolFile, A::Error> {
                let mut kind = None;
                let mut settings = BTreeMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "kind" {
                        kind = Some(map.next_value()?);
                    } else {
                        settings.insert(key, map.next_value::<Setting>()?.0);
                    }
                }
                let kind = kind.ok_or_else(|| {
                    de::Error::custom(format!("missing field `kind`; one of {}", Protocol::names().join(", ")))
                })?;
                Ok(ProtocolFile { kind, settings })
            }
        }
        d.deserialize_any(Section)
    }
}

/// A setting's value of any type: a [`SettingValue`], or what serde calls another value.
struct Setting(Result<SettingValue, String>);

impl<'de> Deserialize<'de> for Setting {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Any;
        impl<'de> Visitor<'de> for Any {
            type Value = Setting;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Setting, E> {
                Ok(Setting(Ok(SettingValue::Bool(v))))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Setting, E> {
                Ok(Setting(Ok(SettingValue::Integer(v))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Setting, E> {
                Ok(Setting(
                    i64::try_from(v).map(SettingValue::Integer).map_err(|_| Unexpected::Unsigned(v).to_string()),
                ))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Setting, E> {
                Ok(Setting(Err(Unexpected::Float(v).to_string())))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Setting, E> {
                Ok(Setting(Ok(SettingValue::Text(v.to_string()))))
            }
            // Arrays and tables are read through (not skipped, which
            // `serde_ignored` would report as unknown keys).
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Setting, A::Error> {
                while seq.next_element::<serde_json::Value>()?.is_some() {}
                Ok(Setting(Err(Unexpected::Seq.to_string())))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Setting, A::Error> {
                while map.next_entry::<String, serde_json::Value>()?.is_some() {}
                Ok(Setting(Err(Unexpected::Map.to_string())))
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
