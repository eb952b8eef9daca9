//! A provider's `[providers.<name>.repetition]` table: how the embedded
//! model's prose, or a llama.cpp server's, is kept from repeating itself
//! and its prompt (llama.cpp's repetition penalties and DRY sampler; see
//! `docs/local-model.md`, *Repetition*, and `docs/scale.md`). A key left
//! out keeps its default, which differs between the two (see
//! [`Repetition::llama_server`]).

use serde::{Deserialize, Deserializer, Serialize};

use super::number;
use crate::provider::repetition::Repetition;

/// Every key is optional; see [`Self::apply`] for what each sets.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepetitionConfig {
    #[serde(default)]
    pub repeat_last_n: Option<u32>,
    #[serde(default, deserialize_with = "positive")]
    pub repeat_penalty: Option<f64>,
    #[serde(default, deserialize_with = "finite")]
    pub frequency_penalty: Option<f64>,
    #[serde(default, deserialize_with = "finite")]
    pub presence_penalty: Option<f64>,
    #[serde(default, deserialize_with = "non_negative")]
    pub dry_multiplier: Option<f64>,
    #[serde(default, deserialize_with = "at_least_one")]
    pub dry_base: Option<f64>,
    #[serde(default)]
    pub dry_allowed_length: Option<u32>,
    #[serde(default)]
    pub dry_last_n: Option<u32>,
    #[serde(default)]
    pub dry_breakers: Option<Vec<String>>,
}

impl RepetitionConfig {
    /// `base` with the keys this table sets.
    pub fn apply(&self, mut base: Repetition) -> Repetition {
        let int = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
        if let Some(v) = self.repeat_last_n {
            base.repeat_last_n = int(v);
        }
        if let Some(v) = self.repeat_penalty {
            base.repeat_penalty = v as f32;
        }
        if let Some(v) = self.frequency_penalty {
            base.frequency_penalty = v as f32;
        }
        if let Some(v) = self.presence_penalty {
            base.presence_penalty = v as f32;
        }
        if let Some(v) = self.dry_multiplier {
            base.dry_multiplier = v as f32;
        }
        if let Some(v) = self.dry_base {
            base.dry_base = v as f32;
        }
        if let Some(v) = self.dry_allowed_length {
            base.dry_allowed_length = int(v);
        }
        if let Some(v) = self.dry_last_n {
            base.dry_last_n = int(v);
        }
        if let Some(v) = &self.dry_breakers {
            base.dry_breakers = v.clone();
        }
        base
    }
}

fn checked<'de, D: Deserializer<'de>>(d: D, ok: fn(f64) -> bool, what: &str) -> Result<Option<f64>, D::Error> {
    let v = number(d)?;
    if !(v.is_finite() && ok(v)) {
        return Err(serde::de::Error::custom(format!("must be {what}")));
    }
    Ok(Some(v))
}

fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    checked(d, |v| v > 0.0, "a number above 0 (1 leaves logits as they are)")
}

fn finite<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    checked(d, |_| true, "a number")
}

fn non_negative<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    checked(d, |v| v >= 0.0, "a number, 0 or more (0 turns DRY off)")
}

fn at_least_one<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    checked(d, |v| v >= 1.0, "a number, 1 or more")
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;

    #[test]
    fn a_local_provider_takes_a_repetition_table_and_checks_its_values() {
        let text = "[providers.local]\nkind = \"local\"\n[providers.local.repetition]\ndry_multiplier = 0.8\n\
                    dry_allowed_length = 3\ndry_breakers = [\"\\n\"]\nrepeat_penalty = 1\n";
        let c = Config::parse(text, Path::new("moot.toml")).unwrap();
        let r = c.providers["local"].repetition.clone().unwrap();
        assert_eq!(r.dry_multiplier, Some(0.8));
        assert_eq!(r.dry_allowed_length, Some(3));
        assert_eq!(r.repeat_penalty, Some(1.0));
        assert_eq!(r.dry_breakers.as_deref(), Some(&["\n".to_string()][..]));
        for bad in ["dry_base = 0.5", "repeat_penalty = 0", "dry_multiplier = -1", "dry_last_n = -3", "dry = 1"] {
            let text = format!("[providers.local]\nkind = \"local\"\n[providers.local.repetition]\n{bad}\n");
            assert!(Config::parse(&text, Path::new("moot.toml")).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_left_out_keep_their_defaults() {
        use super::RepetitionConfig;
        let base = crate::provider::repetition::Repetition::llama_server();
        let set = RepetitionConfig { dry_multiplier: Some(0.5), ..Default::default() }.apply(base.clone());
        assert_eq!(set.dry_multiplier, 0.5);
        assert_eq!(set.repeat_penalty, base.repeat_penalty);
        assert_eq!(set.dry_breakers, base.dry_breakers);
        assert_eq!(set.dry_allowed_length, base.dry_allowed_length);
    }
}
