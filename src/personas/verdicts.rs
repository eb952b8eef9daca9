//! The builder's three verdicts: stakeholders of a document part, groups,
//! and one persona. Each ends in one JSON object with a schema (so the
//! embedded model can be held to it); a reply without a readable object is
//! an error, answered by one repair request, and never turned into a value.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::state::Persona;
use crate::engine::parse::json_objects;
use crate::engine::verdict::Verdict;
use crate::provider::{ChatMessage, Completion};
use crate::session::event::Evaluation;

/// Longest text a constrained model may write in one field.
const FIELD_MAX: u64 = 400;

fn text(max: u64) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": max})
}

/// The last JSON object of the reply that has `key`.
fn object_with(reply: &str, key: &str) -> Result<Map<String, Value>, String> {
    json_objects(reply)
        .into_iter()
        .rev()
        .map(|o| o.map)
        .find(|m| m.contains_key(key))
        .ok_or_else(|| format!("no JSON object with \"{key}\" in the reply"))
}

/// A non-empty string field of `obj`; `what` names the object in the error.
fn field(obj: &Map<String, Value>, key: &str, what: &str) -> Result<String, String> {
    match obj.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Some(Value::String(_)) => Err(format!("{what}: \"{key}\" is empty")),
        Some(_) => Err(format!("{what}: \"{key}\" is not a string")),
        None => Err(format!("{what}: \"{key}\" is missing")),
    }
}

fn array<'a>(obj: &'a Map<String, Value>, key: &str, what: &str) -> Result<&'a Vec<Value>, String> {
    match obj.get(key) {
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(format!("{what}: \"{key}\" is not a list")),
        None => Err(format!("{what}: \"{key}\" is missing")),
    }
}

fn as_object<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>, String> {
    v.as_object().ok_or_else(|| format!("{what} is not an object"))
}

fn repair_request(error: &str, instructions: &str) -> ChatMessage {
    ChatMessage::user(format!(
        "Your answer could not be read: {error}. Reply again with only the JSON object, no other text.\n{instructions}"
    ))
}

/// A stakeholder as the model wrote it (quotes not yet checked).
#[derive(Debug, Clone, PartialEq)]
pub struct RawStakeholder {
    pub name: String,
    pub characteristics: String,
    /// (perspective, evidence quote)
    pub perspectives: Vec<(String, String)>,
}

/// Who the words before an extraction's object say the text describes,
/// when they begin as its opening asks ("The people this text describes
/// are teachers …") and do not deny it ("are not …", "are none"). An empty
/// list after such words contradicts them: small models named the
/// stakeholders, then answered with an empty list.
fn names_people(text: &str) -> Option<String> {
    let lead = crate::personas::prompts::opening(super::log::Step::Extract)?;
    let rest = text.trim_start().strip_prefix(lead)?;
    let words = rest.split(['.', ',', ';', ':', '\n']).next()?.trim();
    let first = words.split_whitespace().next()?.to_lowercase();
    let denies = ["no", "not", "none", "nobody", "neither", "unclear", "unknown"];
    (!words.is_empty() && !denies.contains(&first.as_str())).then(|| format!("\"{words}\""))
}

/// The stakeholders of one part of a document; an empty list is an answer.
pub struct Stakeholders;

impl Verdict for Stakeholders {
    type Output = Vec<RawStakeholder>;
    fn instructions(&self) -> String {
        "Answer with one JSON object: {\"stakeholders\": [{\"name\": \"...\", \"characteristics\": \"one sentence\", \
\"perspectives\": [{\"perspective\": \"...\", \"evidence\": \"exact quote\"}]}]} (an empty list when nothing is relevant)."
            .into()
    }
    fn schema(&self) -> Option<Value> {
        let perspective = json!({
            "type": "object",
            "properties": {"perspective": text(FIELD_MAX), "evidence": text(FIELD_MAX)},
            "required": ["perspective", "evidence"],
            "additionalProperties": false
        });
        let stakeholder = json!({
            "type": "object",
            "properties": {
                "name": text(80),
                "characteristics": text(FIELD_MAX),
                "perspectives": {"type": "array", "items": perspective, "minItems": 1, "maxItems": 6}
            },
            "required": ["name", "characteristics", "perspectives"],
            "additionalProperties": false
        });
        Some(json!({
            "type": "object",
            "properties": {"stakeholders": {"type": "array", "items": stakeholder, "maxItems": 8}},
            "required": ["stakeholders"],
            "additionalProperties": false
        }))
    }
    fn read(&self, completion: &Completion) -> Result<Vec<RawStakeholder>, String> {
        let obj = object_with(&completion.text, "stakeholders")?;
        let mut out = Vec::new();
        for (i, s) in array(&obj, "stakeholders", "the answer")?.iter().enumerate() {
            let what = format!("stakeholder {}", i + 1);
            let s = as_object(s, &what)?;
            let name = field(s, "name", &what)?;
            let characteristics = field(s, "characteristics", &what)?;
            let mut perspectives = Vec::new();
            for (j, p) in array(s, "perspectives", &what)?.iter().enumerate() {
                let what = format!("{what}, perspective {}", j + 1);
                let p = as_object(p, &what)?;
                perspectives.push((field(p, "perspective", &what)?, field(p, "evidence", &what)?));
            }
            if perspectives.is_empty() {
                return Err(format!("{what} ({name}) has no perspectives"));
            }
            out.push(RawStakeholder { name, characteristics, perspectives });
        }
        if out.is_empty()
            && let Some(named) = names_people(&completion.text)
        {
            return Err(format!(
                "the words before the object name {named}, {EMPTY_AFTER_NAMING}: list them with their \
                 perspectives and quotes"
            ));
        }
        Ok(out)
    }
    fn repair(&self, error: &str) -> ChatMessage {
        repair_request(error, &self.instructions())
    }
    /// After a reply that named the people its text describes and then
    /// listed none of them, the repair must list at least one: the 1.5B
    /// answered that repair with the same empty list (its words no longer
    /// began as the opening asks, so the list stood as "nothing relevant"),
    /// and the sample's teachers and parents dropped out of the build.
    fn repair_schema(&self, error: &str) -> Option<Value> {
        let mut schema = self.schema()?;
        if error.contains(EMPTY_AFTER_NAMING) {
            schema["properties"]["stakeholders"]["minItems"] = json!(1);
        }
        Some(schema)
    }
    fn evaluation(&self, _output: &Self::Output) -> Option<Evaluation> {
        None
    }
}

/// What [`Stakeholders::read`] says of an empty list after words that name people.
const EMPTY_AFTER_NAMING: &str = "but its list of stakeholders is empty";

/// A group as the model wrote it, ids checked.
#[derive(Debug, Clone, PartialEq)]
pub struct RawGroup {
    pub name: String,
    pub description: String,
    pub members: Vec<String>,
    /// (merged perspective, source perspective ids)
    pub perspectives: Vec<(String, Vec<String>)>,
}

/// Groups of stakeholders, using only the ids it was shown.
pub struct Groups<'a> {
    pub stakeholder_ids: &'a BTreeSet<String>,
    pub perspective_ids: &'a BTreeSet<String>,
}

impl Verdict for Groups<'_> {
    type Output = Vec<RawGroup>;
    fn instructions(&self) -> String {
        "Answer with one JSON object: {\"groups\": [{\"name\": \"...\", \"description\": \"one sentence\", \
\"members\": [\"D1.S1\", ...], \"perspectives\": [{\"perspective\": \"...\", \"sources\": [\"D1.S1.P1\", ...]}]}]}."
            .into()
    }
    fn schema(&self) -> Option<Value> {
        // Every list is bounded by what it can hold without repeating
        // itself: no more groups than stakeholders, no more ids than there
        // are. Unbounded, the 1.5B wrote one group again and again until
        // its context was full (13,000 characters in nine minutes).
        let ids = |set: &BTreeSet<String>| json!({"type": "array", "items": {"type": "string", "enum": set}, "minItems": 1, "maxItems": set.len().max(1)});
        let perspective = json!({
            "type": "object",
            "properties": {"perspective": text(FIELD_MAX), "sources": ids(self.perspective_ids)},
            "required": ["perspective", "sources"],
            "additionalProperties": false
        });
        let group = json!({
            "type": "object",
            "properties": {
                "name": text(80),
                "description": text(FIELD_MAX),
                "members": ids(self.stakeholder_ids),
                "perspectives": {
                    "type": "array", "items": perspective, "minItems": 1, "maxItems": self.perspective_ids.len().max(1)
                }
            },
            "required": ["name", "description", "members", "perspectives"],
            "additionalProperties": false
        });
        Some(json!({
            "type": "object",
            "properties": {
                "groups": {"type": "array", "items": group, "minItems": 1, "maxItems": self.stakeholder_ids.len().max(1)}
            },
            "required": ["groups"],
            "additionalProperties": false
        }))
    }
    fn read(&self, completion: &Completion) -> Result<Vec<RawGroup>, String> {
        let obj = object_with(&completion.text, "groups")?;
        let list = array(&obj, "groups", "the answer")?;
        if list.is_empty() {
            return Err("the answer has no groups".into());
        }
        let mut used = BTreeSet::new();
        let mut out = Vec::new();
        for (i, g) in list.iter().enumerate() {
            let what = format!("group {}", i + 1);
            let g = as_object(g, &what)?;
            let name = field(g, "name", &what)?;
            let description = field(g, "description", &what).unwrap_or_default();
            let ids = |v: &Value, known: &BTreeSet<String>, what: &str| -> Result<Vec<String>, String> {
                let list = v.as_array().ok_or_else(|| format!("{what} is not a list"))?;
                list.iter()
                    .map(|x| {
                        let id = x.as_str().ok_or_else(|| format!("{what}: an id is not a string"))?.trim();
                        if known.contains(id) {
                            Ok(id.to_string())
                        } else {
                            Err(format!("{what}: unknown id \"{id}\""))
                        }
                    })
                    .collect()
            };
            let members = match g.get("members") {
                Some(v) => ids(v, self.stakeholder_ids, &format!("{what} ({name}) members"))?,
                None => Vec::new(),
            };
            let mut perspectives = Vec::new();
            for (j, p) in array(g, "perspectives", &what)?.iter().enumerate() {
                let what = format!("{what} ({name}), perspective {}", j + 1);
                let p = as_object(p, &what)?;
                let text = field(p, "perspective", &what)?;
                let listed = ids(p.get("sources").unwrap_or(&Value::Null), self.perspective_ids, &what)?;
                if listed.is_empty() {
                    return Err(format!("{what} has no sources"));
                }
                // A source listed again belongs where it was listed first; a
                // perspective left with none is dropped (its view is kept
                // where the source went).
                let sources: Vec<String> = listed.into_iter().filter(|s| used.insert(s.clone())).collect();
                if !sources.is_empty() {
                    perspectives.push((text, sources));
                }
            }
            if perspectives.is_empty() {
                continue;
            }
            out.push(RawGroup { name, description, members, perspectives });
        }
        Ok(out)
    }
    fn repair(&self, error: &str) -> ChatMessage {
        repair_request(error, &self.instructions())
    }
    fn evaluation(&self, _output: &Self::Output) -> Option<Evaluation> {
        None
    }
}

/// One persona with all its attributes.
pub struct PersonaVerdict;

const PERSONA_KEYS: [&str; 7] = ["name", "role", "demographics", "perspective", "specialty", "traits", "relationships"];

impl Verdict for PersonaVerdict {
    type Output = Persona;
    fn instructions(&self) -> String {
        "Answer with one JSON object: {\"name\": \"...\", \"role\": \"...\", \"demographics\": \"...\", \
\"perspective\": \"...\", \"specialty\": \"...\", \"traits\": \"...\", \"relationships\": \"...\"}."
            .into()
    }
    fn schema(&self) -> Option<Value> {
        let props: Map<String, Value> = PERSONA_KEYS
            .iter()
            .map(|k| ((*k).to_string(), text(if *k == "name" || *k == "role" { 80 } else { FIELD_MAX })))
            .collect();
        Some(json!({"type": "object", "properties": props, "required": PERSONA_KEYS, "additionalProperties": false}))
    }
    fn read(&self, completion: &Completion) -> Result<Persona, String> {
        let obj = object_with(&completion.text, "perspective")?;
        let get = |k: &str| field(&obj, k, "the persona");
        Ok(Persona {
            name: get("name")?,
            role: get("role")?,
            demographics: get("demographics")?,
            perspective: get("perspective")?,
            specialty: get("specialty")?,
            traits: get("traits")?,
            relationships: get("relationships")?,
            edited_by: Default::default(),
        })
    }
    fn repair(&self, error: &str) -> ChatMessage {
        repair_request(error, &self.instructions())
    }
    fn evaluation(&self, _output: &Self::Output) -> Option<Evaluation> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(text: &str) -> Completion {
        Completion { text: text.into(), ..Default::default() }
    }

    #[test]
    fn stakeholders_read_and_empty_list_is_an_answer() {
        let ok = Stakeholders.read(&reply(
            "Here.\n{\"stakeholders\": [{\"name\": \"Teachers\", \"characteristics\": \"Teach.\", \"perspectives\": [{\"perspective\": \"Clear\", \"evidence\": \"q\"}]}]}",
        ));
        assert_eq!(ok.unwrap()[0].perspectives, vec![("Clear".to_string(), "q".to_string())]);
        assert!(Stakeholders.read(&reply("{\"stakeholders\": []}")).unwrap().is_empty());
        assert!(Stakeholders.read(&reply("No JSON at all")).is_err());
        let e = Stakeholders
            .read(&reply("{\"stakeholders\": [{\"name\": \"T\", \"characteristics\": \"c\", \"perspectives\": [{\"perspective\": \"p\"}]}]}"))
            .unwrap_err();
        assert_eq!(e, "stakeholder 1, perspective 1: \"evidence\" is missing");
    }

    #[test]
    fn an_empty_list_after_words_that_name_people_is_read_again() {
        let err = Stakeholders
            .read(&reply("The people this text describes are teachers. They read aloud.\n{\"stakeholders\": []}"))
            .unwrap_err();
        assert!(err.starts_with("the words before the object name \"teachers\""), "{err}");
        // Its repair must list someone; another error's repair keeps the schema as it is.
        let repair = Stakeholders.repair_schema(&err).unwrap();
        assert_eq!(repair["properties"]["stakeholders"]["minItems"], 1);
        assert_eq!(Stakeholders.repair_schema("no JSON object"), Stakeholders.schema());
        for fine in [
            "The people this text describes are not relevant to the task.\n{\"stakeholders\": []}",
            "The people this text describes are none of the roles asked for.\n{\"stakeholders\": []}",
            "{\"stakeholders\": []}",
        ] {
            assert!(Stakeholders.read(&reply(fine)).unwrap().is_empty(), "{fine}");
        }
    }

    #[test]
    fn groups_use_known_ids_once() {
        let s: BTreeSet<String> = ["D1.S1".to_string()].into();
        let p: BTreeSet<String> = ["D1.S1.P1".to_string(), "D1.S1.P2".to_string()].into();
        let v = Groups { stakeholder_ids: &s, perspective_ids: &p };
        let g = v
            .read(&reply("{\"groups\": [{\"name\": \"T\", \"description\": \"d\", \"members\": [\"D1.S1\"], \"perspectives\": [{\"perspective\": \"x\", \"sources\": [\"D1.S1.P1\", \"D1.S1.P2\"]}]}]}"))
            .unwrap();
        assert_eq!(g[0].perspectives[0].1.len(), 2);
        let unknown = v.read(&reply("{\"groups\": [{\"name\": \"T\", \"members\": [], \"perspectives\": [{\"perspective\": \"x\", \"sources\": [\"D9.S1.P1\"]}]}]}"));
        assert!(unknown.unwrap_err().contains("unknown id \"D9.S1.P1\""));
        // A source listed twice stays where it was listed first; the
        // perspective and the group left without one are dropped.
        let twice = v
            .read(&reply("{\"groups\": [{\"name\": \"T\", \"members\": [], \"perspectives\": [{\"perspective\": \"x\", \"sources\": [\"D1.S1.P1\"]}, {\"perspective\": \"y\", \"sources\": [\"D1.S1.P1\", \"D1.S1.P2\"]}]}, {\"name\": \"U\", \"members\": [], \"perspectives\": [{\"perspective\": \"z\", \"sources\": [\"D1.S1.P2\"]}]}]}"))
            .unwrap();
        assert_eq!(twice.len(), 1);
        let kept: Vec<(&str, Vec<String>)> =
            twice[0].perspectives.iter().map(|(t, s)| (t.as_str(), s.clone())).collect();
        assert_eq!(kept, [("x", vec!["D1.S1.P1".to_string()]), ("y", vec!["D1.S1.P2".to_string()])]);
        assert!(v.read(&reply("{\"groups\": []}")).is_err());
        // No more groups than stakeholders, no more ids than there are.
        let schema = v.schema().unwrap();
        assert_eq!(schema["properties"]["groups"]["maxItems"], 1);
        let group = &schema["properties"]["groups"]["items"]["properties"];
        assert_eq!(group["members"]["maxItems"], 1);
        assert_eq!(group["perspectives"]["maxItems"], 2);
        assert_eq!(group["perspectives"]["items"]["properties"]["sources"]["maxItems"], 2);
    }

    #[cfg(feature = "local")]
    #[test]
    fn the_embedded_model_has_a_grammar_for_every_answer() {
        let s: BTreeSet<String> = ["D1.S1".to_string()].into();
        let p: BTreeSet<String> = ["D1.S1.P1".to_string()].into();
        for schema in [Stakeholders.schema(), Groups { stakeholder_ids: &s, perspective_ids: &p }.schema()] {
            let schema = schema.expect("a schema");
            assert!(crate::provider::local::schema_to_gbnf(&schema).is_some(), "{schema}");
        }
    }
}
