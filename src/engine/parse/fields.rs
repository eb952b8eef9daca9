//! Reading scores out of a JSON object: which key stands for which field
//! (a dimension, the overall score, confidence, justification), values as
//! written, and nested objects and `{"dimension": …, "score": …}` lists.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::json::normalize_key;
use super::{MAX_DEPTH, ParseSpec};

/// What a key in the reply stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    /// A panel dimension, by index.
    Dim(usize),
    /// The overall score; lower numbers are more explicit names.
    Overall(u8),
    Confidence,
    Justification,
}

/// A score as written, before it is checked against the scale.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Raw {
    Number(f64),
    Text(String),
    Unreadable(String),
}

impl Raw {
    /// The score a JSON value holds; `None` for an object that holds no score
    /// itself (it may contain scores deeper down).
    fn from_json(value: &Value) -> Option<Raw> {
        match value {
            Value::Number(n) => Some(n.as_f64().map_or_else(|| Raw::Unreadable(n.to_string()), Raw::Number)),
            Value::String(s) => Some(Raw::Text(s.clone())),
            Value::Object(map) => map
                .iter()
                .find(|(k, v)| matches!(normalize_key(k).as_str(), "score" | "value" | "rating") && !v.is_object())
                .and_then(|(_, v)| Raw::from_json(v)),
            other => Some(Raw::Unreadable(other.to_string())),
        }
    }
}

/// Everything read from one JSON object or from the score lines.
#[derive(Debug, Default)]
pub(super) struct Found {
    pub(super) dims: BTreeMap<usize, Raw>,
    pub(super) overall: Option<Raw>,
    pub(super) confidence: Option<Raw>,
    pub(super) justification: Option<String>,
}

pub(super) struct Parser<'s, 'a> {
    pub(super) spec: &'s ParseSpec<'a>,
    /// Normalized names per dimension (key, then display name).
    forms: Vec<Vec<String>>,
    /// Quoted material with all whitespace removed.
    squashed_material: Vec<String>,
}

impl<'s, 'a> Parser<'s, 'a> {
    pub(super) fn new(spec: &'s ParseSpec<'a>) -> Self {
        let forms = spec
            .dimensions
            .iter()
            .map(|d| {
                let mut forms = vec![normalize_key(&d.key)];
                let name = normalize_key(&d.name);
                if !name.is_empty() && !forms.contains(&name) {
                    forms.push(name);
                }
                forms
            })
            .collect();
        let squashed_material = spec.quoted_material.iter().map(|m| squash(m)).collect();
        Parser { spec, forms, squashed_material }
    }

    pub(super) fn classify(&self, raw_key: &str) -> Option<Field> {
        let key = normalize_key(raw_key);
        if key.is_empty() {
            return None;
        }
        let stem = key.strip_suffix("_score").or_else(|| key.strip_suffix("_rating"));
        for (i, forms) in self.forms.iter().enumerate() {
            if forms.iter().any(|f| *f == key || stem == Some(f.as_str())) {
                return Some(Field::Dim(i));
            }
        }
        match key.as_str() {
            "overall" | "overall_score" | "overall_rating" | "overall_evaluation" | "overall_quality" => {
                Some(Field::Overall(0))
            }
            "score" | "rating" | "final_score" | "final_rating" | "total_score" => Some(Field::Overall(1)),
            "confidence" | "confidence_score" | "confidence_level" | "certainty" => Some(Field::Confidence),
            "justification" | "reason" | "reasoning" | "rationale" | "explanation" => Some(Field::Justification),
            _ => None,
        }
    }

    /// Whether `text` appears in the quoted material (whitespace ignored).
    pub(super) fn is_quoted(&self, text: &str) -> bool {
        let squashed = squash(text);
        !squashed.is_empty() && self.squashed_material.iter().any(|m| m.contains(&squashed))
    }

    pub(super) fn has_dimensions(&self, found: &Found) -> bool {
        !found.dims.is_empty() || (self.spec.dimensions.is_empty() && found.overall.is_some())
    }

    pub(super) fn found_in(&self, map: &Map<String, Value>) -> Found {
        let mut found = Found::default();
        self.collect_object(map, &mut found, 0);
        found
    }

    /// Fields of `map` itself first, then nested objects fill in what is still missing.
    fn collect_object(&self, map: &Map<String, Value>, found: &mut Found, depth: usize) {
        let mut overall: Option<(u8, Raw)> = None;
        let mut containers = Vec::new();
        for (key, value) in map {
            let field = self.classify(key);
            match (field, Raw::from_json(value)) {
                (Some(Field::Dim(i)), Some(raw)) => {
                    found.dims.entry(i).or_insert(raw);
                }
                (Some(Field::Overall(p)), Some(raw)) => {
                    if overall.as_ref().is_none_or(|(q, _)| p < *q) {
                        overall = Some((p, raw));
                    }
                }
                (Some(Field::Confidence), Some(raw)) => {
                    found.confidence.get_or_insert(raw);
                }
                (Some(Field::Justification), _) => {
                    if let Value::String(s) = value
                        && !s.trim().is_empty()
                        && found.justification.is_none()
                    {
                        found.justification = Some(s.clone());
                    }
                }
                _ => containers.push(value),
            }
        }
        if found.overall.is_none() {
            found.overall = overall.map(|(_, raw)| raw);
        }
        if depth >= MAX_DEPTH {
            return;
        }
        for value in containers {
            match value {
                Value::Object(inner) => self.collect_object(inner, found, depth + 1),
                Value::Array(items) => {
                    for item in items {
                        if let Value::Object(inner) = item
                            && !self.collect_named_entry(inner, found)
                        {
                            self.collect_object(inner, found, depth + 1);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// `{"dimension": "Grammar", "score": 4}` style entries of a list.
    fn collect_named_entry(&self, map: &Map<String, Value>, found: &mut Found) -> bool {
        let name = map.iter().find_map(|(k, v)| match (normalize_key(k).as_str(), v) {
            ("dimension" | "name" | "key" | "aspect" | "criterion" | "metric" | "category", Value::String(s)) => {
                Some(s.as_str())
            }
            _ => None,
        });
        let score = map
            .iter()
            .find(|(k, v)| matches!(normalize_key(k).as_str(), "score" | "value" | "rating") && !v.is_object())
            .and_then(|(_, v)| Raw::from_json(v));
        let (Some(name), Some(score)) = (name, score) else {
            return false;
        };
        match self.classify(name) {
            Some(Field::Dim(i)) => {
                found.dims.entry(i).or_insert(score);
                true
            }
            Some(Field::Overall(_)) => {
                found.overall.get_or_insert(score);
                true
            }
            _ => false,
        }
    }
}

fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}
