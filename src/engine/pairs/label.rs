//! The label verdict of a pairwise comparison: `A`, `B` or `tie`, optionally
//! one per criterion, with a confidence and the reasoning.

use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use crate::engine::verdict::Verdict;
use crate::provider::{ChatMessage, Completion};
use crate::session::event::Evaluation;

pub use crate::session::pairwise::{Confidence, ConfidenceLevel, Label};

/// Read a confidence as a judge wrote it: `low`, `medium`, `high` or a
/// number from 0 to 1 (as a number or a string).
pub fn read_confidence(v: &Value) -> Result<Confidence, String> {
    match v {
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "low" => Ok(Confidence::Level(ConfidenceLevel::Low)),
            "medium" | "med" => Ok(Confidence::Level(ConfidenceLevel::Medium)),
            "high" => Ok(Confidence::Level(ConfidenceLevel::High)),
            other => other
                .parse::<f64>()
                .ok()
                .filter(|x| (0.0..=1.0).contains(x))
                .map(Confidence::Value)
                .ok_or_else(|| format!("confidence \"{s}\" is not low, medium, high or a number from 0 to 1")),
        },
        Value::Number(n) => n
            .as_f64()
            .filter(|x| (0.0..=1.0).contains(x))
            .map(Confidence::Value)
            .ok_or_else(|| format!("confidence {n} is not from 0 to 1")),
        other => Err(format!("confidence {other} is not low, medium, high or a number from 0 to 1")),
    }
}

/// One readable pairwise verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct PairVerdict {
    pub label: Label,
    /// Per-criterion labels, in the order of the panel's criteria; only those the judge gave.
    pub criteria: Vec<(String, Label)>,
    pub confidence: Option<Confidence>,
    pub reasoning: Option<String>,
}

/// The verdict a pairwise judge's turn asks for. One is made per run and
/// asked for in every turn: its instructions and schema are built once.
pub struct LabelVerdict<'a> {
    /// Criterion keys (the panel's dimensions); empty for one overall label.
    pub criteria: &'a [String],
    instructions: OnceLock<String>,
    schema: OnceLock<Arc<Value>>,
}

impl<'a> LabelVerdict<'a> {
    pub const fn new(criteria: &'a [String]) -> Self {
        Self { criteria, instructions: OnceLock::new(), schema: OnceLock::new() }
    }

    pub fn example(&self) -> String {
        let mut fields = vec![r#""verdict": "A" | "B" | "tie""#.to_string()];
        if !self.criteria.is_empty() {
            let per: Vec<String> = self.criteria.iter().map(|c| format!(r#""{c}": "A" | "B" | "tie""#)).collect();
            fields.push(format!(r#""criteria": {{{}}}"#, per.join(", ")));
        }
        fields.push(r#""confidence": "low" | "medium" | "high""#.to_string());
        fields.push(r#""reasoning": "<one or two sentences>""#.to_string());
        format!("{{{}}}", fields.join(", "))
    }

    /// Read the last JSON object in `text` that carries a `verdict`.
    pub fn read_text(&self, text: &str) -> Result<PairVerdict, String> {
        let object = last_verdict_object(text).ok_or_else(|| "no JSON object with a \"verdict\" field".to_string())?;
        let raw = object.get("verdict").expect("the object was chosen for its verdict");
        let label = raw
            .as_str()
            .and_then(Label::parse)
            .ok_or_else(|| format!("verdict {raw} is not \"A\", \"B\" or \"tie\""))?;
        let mut criteria = Vec::new();
        if let Some(given) = object.get("criteria").and_then(Value::as_object) {
            for key in self.criteria {
                if let Some(v) = given.get(key) {
                    let l = v
                        .as_str()
                        .and_then(Label::parse)
                        .ok_or_else(|| format!("criterion \"{key}\": {v} is not \"A\", \"B\" or \"tie\""))?;
                    criteria.push((key.clone(), l));
                }
            }
        }
        let confidence = match object.get("confidence") {
            None | Some(Value::Null) => None,
            Some(v) => Some(read_confidence(v)?),
        };
        let reasoning = object.get("reasoning").and_then(Value::as_str).map(str::to_string);
        Ok(PairVerdict { label, criteria, confidence, reasoning })
    }
}

fn last_verdict_object(text: &str) -> Option<serde_json::Map<String, Value>> {
    let starts: Vec<usize> = text.match_indices('{').map(|(i, _)| i).collect();
    for &i in starts.iter().rev() {
        let mut stream = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
        if let Some(Ok(Value::Object(map))) = stream.next()
            && map.contains_key("verdict")
        {
            return Some(map);
        }
    }
    None
}

impl Verdict for LabelVerdict<'_> {
    type Output = PairVerdict;
    fn instructions(&self) -> String {
        let built = || format!("End your reply with your verdict as one JSON object: {}", self.example());
        self.instructions.get_or_init(built).clone()
    }
    fn shared_schema(&self) -> Option<Arc<Value>> {
        Some(self.schema.get_or_init(|| Arc::new(self.schema().expect("a label verdict has a schema"))).clone())
    }
    fn schema(&self) -> Option<Value> {
        let label = json!({"type": "string", "enum": ["A", "B", "tie"]});
        let mut properties = serde_json::Map::new();
        properties.insert("verdict".into(), label.clone());
        if !self.criteria.is_empty() {
            let per: serde_json::Map<String, Value> =
                self.criteria.iter().map(|c| (c.clone(), label.clone())).collect();
            properties.insert(
                "criteria".into(),
                json!({"type": "object", "properties": per, "required": self.criteria, "additionalProperties": false}),
            );
        }
        properties.insert("confidence".into(), json!({"type": "string", "enum": ["low", "medium", "high"]}));
        properties.insert("reasoning".into(), json!({"type": "string"}));
        Some(json!({
            "type": "object",
            "properties": properties,
            "required": ["verdict", "confidence", "reasoning"],
            "additionalProperties": false
        }))
    }
    fn read(&self, completion: &Completion) -> Result<PairVerdict, String> {
        self.read_text(&completion.text)
    }
    fn repair(&self, error: &str) -> ChatMessage {
        ChatMessage::user(format!(
            "Your verdict could not be read: {error}. Reply again with only the JSON object, no other text.\n{}",
            self.instructions()
        ))
    }
    fn evaluation(&self, _output: &PairVerdict) -> Option<Evaluation> {
        // A label is not a score; comparisons are recorded by their own events.
        None
    }
}

/// The label verdict of an evaluator who discusses it (CollabEval's
/// pairwise mode): the same request and reading as [`LabelVerdict`], and the
/// label becomes the evaluator's latest evaluation, which the discussion
/// shows the others and the consensus compares.
pub struct DiscussedLabel<'a>(pub LabelVerdict<'a>);

impl DiscussedLabel<'_> {
    /// The evaluation a verdict stands for: its label, a numeric confidence
    /// as given (a level is kept in words, never turned into a number), and
    /// the reasoning.
    pub fn to_evaluation(v: &PairVerdict) -> Evaluation {
        let (confidence, level) = match v.confidence {
            Some(Confidence::Value(x)) => (Some(x), None),
            Some(c @ Confidence::Level(_)) => (None, Some(c)),
            None => (None, None),
        };
        let reasoning = v.reasoning.as_deref().unwrap_or_default().trim();
        let justification = match level {
            Some(c) if reasoning.is_empty() => format!("(confidence {c})"),
            Some(c) => format!("(confidence {c}) {reasoning}"),
            None => reasoning.to_string(),
        };
        Evaluation {
            label: Some(v.label.as_str().to_string()),
            confidence,
            justification,
            labels: v.criteria.iter().map(|(k, l)| (k.clone(), l.as_str().to_string())).collect(),
            ..Evaluation::default()
        }
    }
}

impl Verdict for DiscussedLabel<'_> {
    type Output = PairVerdict;
    fn instructions(&self) -> String {
        self.0.instructions()
    }
    fn schema(&self) -> Option<Value> {
        self.0.schema()
    }
    fn shared_schema(&self) -> Option<Arc<Value>> {
        self.0.shared_schema()
    }
    fn read(&self, completion: &Completion) -> Result<PairVerdict, String> {
        self.0.read(completion)
    }
    fn repair(&self, error: &str) -> ChatMessage {
        self.0.repair(error)
    }
    fn evaluation(&self, output: &PairVerdict) -> Option<Evaluation> {
        Some(Self::to_evaluation(output))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crit() -> Vec<String> {
        vec!["coherence".into(), "consistency".into()]
    }

    #[test]
    fn reads_the_last_verdict_object() {
        let keys = crit();
        let v = LabelVerdict::new(&keys);
        let text = "Summary A quotes {\"verdict\": \"B\"} from the source.\nMy verdict: {\"verdict\": \"a\", \"criteria\": {\"coherence\": \"tie\", \"consistency\": \"A\"}, \"confidence\": 0.8, \"reasoning\": \"A keeps the facts.\"}";
        let got = v.read_text(text).unwrap();
        assert_eq!(got.label, Label::A);
        assert_eq!(got.criteria, vec![("coherence".into(), Label::Tie), ("consistency".into(), Label::A)]);
        assert_eq!(got.confidence, Some(Confidence::Value(0.8)));
        assert_eq!(got.reasoning.as_deref(), Some("A keeps the facts."));
    }

    #[test]
    fn unreadable_replies_are_errors_not_labels() {
        let v = LabelVerdict::new(&[]);
        assert!(v.read_text("I prefer A.").unwrap_err().contains("no JSON object"));
        assert!(v.read_text(r#"{"verdict": "C"}"#).unwrap_err().contains("not \"A\""));
        assert!(v.read_text(r#"{"verdict": "A", "confidence": 3}"#).unwrap_err().contains("confidence"));
        assert!(v.read_text(r#"{"verdict": "A", "confidence": "sure"}"#).is_err());
    }

    #[test]
    fn labels_read_common_spellings() {
        assert_eq!(Label::parse(" Summary B "), Some(Label::B));
        assert_eq!(Label::parse("TIE"), Some(Label::Tie));
        assert_eq!(Label::parse("draw"), Some(Label::Tie));
        assert_eq!(Label::parse("AB"), None);
        assert_eq!(Label::A.swapped(), Label::B);
    }

    #[test]
    fn schema_requires_every_criterion() {
        let keys = crit();
        let s = LabelVerdict::new(&keys).schema().unwrap();
        assert_eq!(s["properties"]["criteria"]["required"], json!(["coherence", "consistency"]));
        assert_eq!(s["properties"]["verdict"]["enum"], json!(["A", "B", "tie"]));
        #[cfg(feature = "local")]
        assert!(crate::provider::local::schema_to_gbnf(&s).is_some(), "the embedded model has a grammar for {s}");
    }
}
