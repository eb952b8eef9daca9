//! SAGEval's two verdicts: the evaluator's value and reason for every
//! aspect, and the meta-evaluator's review of them.
//!
//! Both end in one JSON object. A categorical aspect takes one of its
//! labels (the schema's `enum`, so a constrained model cannot write
//! another); a label outside the set, a score outside the scale or a
//! missing aspect makes the reply unreadable, never a value.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::engine::parse::{json_objects, normalize_key};
use crate::engine::prompts::fmt_num;
use crate::engine::verdict::{TOP_LOGPROBS, Verdict};
use crate::engine::weighted::weighted_scores;
use crate::panel::{Dimension, Panel};
use crate::provider::{ChatMessage, Completion};
use crate::session::event::{AspectValue, Evaluation};

/// Longest reason and definition a constrained model may write (keeps a small
/// model's reply within its budget).
const REASON_MAX: u64 = 240;
const DEFINITION_MAX: u64 = 300;

/// A string of at most `max` characters, in a schema.
fn text_schema(max: u64) -> Value {
    json!({"type": "string", "maxLength": max})
}

/// The evaluator's reading of every aspect.
#[derive(Debug, Clone)]
pub(crate) struct Assessed {
    pub evaluation: Evaluation,
    /// Aspect key → the evaluator's reasoning.
    pub reasons: BTreeMap<String, String>,
    /// Aspect key → the turn that judged it.
    pub turns: BTreeMap<String, u64>,
}

impl Assessed {
    /// These values and those of `more` (judged in another turn).
    pub fn with(mut self, more: Assessed, panel: &Panel) -> Assessed {
        self.evaluation = merged(&self.evaluation, &more.evaluation, panel);
        self.reasons.extend(more.reasons);
        self.turns.extend(more.turns);
        self
    }
}

/// The evaluator's verdict: a value and a reason per aspect, on every
/// aspect of the panel or (with `per_aspect`) on one.
pub(crate) struct AspectScores<'a> {
    pub panel: &'a Panel,
    /// The aspects this request judges.
    pub aspects: &'a [Dimension],
    /// With one request per aspect: the evaluator's values read so far, which
    /// the turn records together with its own (so that each turn's
    /// evaluation is the evaluator's whole evaluation up to that aspect).
    pub so_far: Option<&'a Evaluation>,
}

/// The schema of one aspect's value: an integer on the scale, or one of the labels.
fn value_schema(panel: &Panel, d: &Dimension) -> (&'static str, Value) {
    if d.labels.is_empty() {
        ("score", json!({"type": "integer", "minimum": panel.scale.min, "maximum": panel.scale.max}))
    } else {
        ("label", json!({"type": "string", "enum": d.labels}))
    }
}

fn value_hint(panel: &Panel, d: &Dimension) -> String {
    if d.labels.is_empty() {
        format!("\"score\": <{} to {}>", fmt_num(panel.scale.min), fmt_num(panel.scale.max))
    } else {
        format!("\"label\": <one of {}>", d.labels.iter().map(|l| format!("\"{l}\"")).collect::<Vec<_>>().join(", "))
    }
}

/// Read one aspect's value: a score on the scale or a label of the set.
fn read_value(panel: &Panel, d: &Dimension, raw: Option<&Value>) -> Result<AspectValue, String> {
    let Some(raw) = raw else {
        let what = if d.labels.is_empty() { "score" } else { "label" };
        return Err(format!("{}: no {what}", d.key));
    };
    if d.labels.is_empty() {
        let v = match raw {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        }
        .ok_or_else(|| format!("{}: {raw} is not a score", d.key))?;
        if !v.is_finite() || !panel.scale.contains(v) {
            return Err(format!(
                "{}: {} is outside the scale {}–{}",
                d.key,
                fmt_num(v),
                fmt_num(panel.scale.min),
                fmt_num(panel.scale.max)
            ));
        }
        Ok(AspectValue::Score(v))
    } else {
        let s = raw.as_str().unwrap_or_default().trim();
        d.labels
            .iter()
            .find(|l| l.eq_ignore_ascii_case(s))
            .map(|l| AspectValue::Label(l.clone()))
            .ok_or_else(|| format!("{}: {raw} is not one of the labels {}", d.key, d.labels.join(", ")))
    }
}

/// The entry of `key` in an object, matching keys loosely (`Audience engagement`).
fn entry<'m>(map: &'m Map<String, Value>, key: &str) -> Option<&'m Value> {
    map.get(key).or_else(|| map.iter().find(|(k, _)| normalize_key(k) == key).map(|(_, v)| v))
}

fn text(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).map(str::trim).unwrap_or_default().to_string()
}

/// The last JSON object of the reply that has `wanted` (a top-level key) or
/// any of `aspects`' keys.
fn verdict_object(reply: &str, aspects: &[Dimension], wanted: &str) -> Option<Map<String, Value>> {
    json_objects(reply)
        .into_iter()
        .rev()
        .map(|o| o.map)
        .find(|m| m.contains_key(wanted) || aspects.iter().any(|d| entry(m, &d.key).is_some()))
}

/// The mean of an evaluation's scores, as its `overall` (labels have none);
/// none with `overall = false`. An aspect keyed `overall` is rated like the
/// others and is the overall: its score (which `AspectValue::set_in` put
/// there), not a mean, so it is left as it is.
pub(crate) fn mean_overall(ev: &mut Evaluation, panel: &Panel) {
    if panel.rates_overall() {
        return;
    }
    ev.overall = if panel.overall {
        (!ev.scores.is_empty()).then(|| ev.scores.values().sum::<f64>() / ev.scores.len() as f64)
    } else {
        None
    };
}

impl Verdict for AspectScores<'_> {
    type Output = Assessed;
    fn instructions(&self) -> String {
        let lines: Vec<String> = self
            .aspects
            .iter()
            .map(|d| {
                format!("  \"{}\": {{\"reason\": \"<two or three sentences>\", {}}}", d.key, value_hint(self.panel, d))
            })
            .collect();
        let what = if self.aspects.len() == 1 { "the aspect" } else { "every aspect" };
        format!("End your reply with one JSON object that has {what}:\n{{\n{}\n}}", lines.join(",\n"))
    }
    fn schema(&self) -> Option<Value> {
        let mut properties = Map::new();
        for d in self.aspects {
            let (name, value) = value_schema(self.panel, d);
            properties.insert(
                d.key.clone(),
                json!({
                    "type": "object",
                    "properties": {"reason": text_schema(REASON_MAX), name: value},
                    "required": ["reason", name],
                    "additionalProperties": false
                }),
            );
        }
        Some(json!({
            "type": "object",
            "properties": properties,
            "required": self.aspects.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(),
            "additionalProperties": false
        }))
    }
    fn top_logprobs(&self) -> Option<u8> {
        Some(TOP_LOGPROBS)
    }
    fn read(&self, completion: &Completion) -> Result<Assessed, String> {
        let map = verdict_object(&completion.text, self.aspects, "")
            .ok_or("the reply has no JSON object with the aspects' values")?;
        let mut evaluation = Evaluation::default();
        let mut reasons = BTreeMap::new();
        let mut problems = Vec::new();
        let mut lines = Vec::new();
        for d in self.aspects {
            let e = entry(&map, &d.key);
            // `{"reason": …, "score": 4}`, or a bare value.
            let (raw, reason) = match e {
                Some(Value::Object(o)) => {
                    (o.get(if d.labels.is_empty() { "score" } else { "label" }), text(o.get("reason")))
                }
                other => (other, String::new()),
            };
            match read_value(self.panel, d, raw) {
                Ok(v) => v.set_in(&mut evaluation, &d.key),
                Err(e) => problems.push(e),
            }
            if !reason.is_empty() {
                lines.push(format!("{}: {reason}", d.label()));
                reasons.insert(d.key.clone(), reason);
            }
        }
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        mean_overall(&mut evaluation, self.panel);
        evaluation.justification = lines.join("\n");
        let weighted = weigh(completion, self.aspects, self.panel.scale, None);
        evaluation.weighted_scores = (!weighted.is_empty()).then_some(weighted);
        Ok(Assessed { evaluation, reasons, turns: BTreeMap::new() })
    }
    fn repair(&self, error: &str) -> ChatMessage {
        ChatMessage::user(format!(
            "Your values could not be read: {error}. Reply again with only the JSON object, no other text.\n{}",
            self.instructions()
        ))
    }
    fn restore(&self, output: &mut Assessed, recorded: &Evaluation) {
        output.evaluation.weighted_scores = recorded.weighted_scores.clone();
    }
    fn evaluation(&self, output: &Assessed) -> Option<Evaluation> {
        Some(match self.so_far {
            Some(before) => merged(before, &output.evaluation, self.panel),
            None => output.evaluation.clone(),
        })
    }
}

/// `before` with the values of `more` added (one request per aspect): the
/// scores, labels, weighted scores and reasons of both, `overall` the mean
/// of the scores.
pub(crate) fn merged(before: &Evaluation, more: &Evaluation, panel: &Panel) -> Evaluation {
    let mut ev = before.clone();
    ev.scores.extend(more.scores.iter().map(|(k, v)| (k.clone(), *v)));
    // An aspect keyed `overall` (judged in `more`'s turn) is the overall.
    if more.overall.is_some() && panel.rates_overall() {
        ev.overall = more.overall;
    }
    ev.labels.extend(more.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    if let Some(w) = &more.weighted_scores {
        ev.weighted_scores.get_or_insert_with(Default::default).extend(w.iter().map(|(k, v)| (k.clone(), *v)));
    }
    let reasons = [ev.justification.trim(), more.justification.trim()];
    ev.justification = reasons.into_iter().filter(|r| !r.is_empty()).collect::<Vec<_>>().join("\n");
    mean_overall(&mut ev, panel);
    ev
}

/// Probability-weighted scores of the scored aspects, when the completion
/// has log-probabilities: each aspect's `"score"` is looked for between its
/// key and the next aspect's key. Recorded beside the sampled scores, never
/// instead of them.
///
/// `under`: the aspects sit in the object of that key (the review's
/// `"review"`), and the search ends where the object's next sibling key
/// (`"definitions"`, `"new_aspects"`) begins, so that a new aspect's score or
/// a definition naming an aspect is never read as an aspect's score.
fn weigh(
    completion: &Completion,
    aspects: &[Dimension],
    scale: crate::panel::Scale,
    under: Option<&str>,
) -> crate::session::event::Scores {
    let mut out = crate::session::event::Scores::new();
    let Some(tokens) = &completion.logprobs else { return out };
    let mut starts = Vec::with_capacity(tokens.len());
    let mut text = String::new();
    for t in tokens {
        starts.push(text.len());
        text.push_str(&t.token);
    }
    let (begin, finish) = match under {
        Some(key) => {
            let Some(begin) = text.rfind(&format!("\"{key}\"")) else { return out };
            let finish = REVIEW_SIBLINGS
                .iter()
                .filter_map(|k| text[begin..].find(&format!("\"{k}\"")).map(|p| begin + p))
                .min()
                .unwrap_or(text.len());
            (begin, finish)
        }
        None => (0, text.len()),
    };
    let span = &text[begin..finish];
    let at: Vec<(usize, &Dimension)> =
        aspects.iter().filter_map(|d| span.rfind(&format!("\"{}\"", d.key)).map(|p| (begin + p, d))).collect();
    let token_at = |pos: usize| match starts.binary_search(&pos) {
        Ok(i) => i,
        Err(i) => i.saturating_sub(1),
    };
    for &(pos, d) in at.iter().filter(|(_, d)| d.labels.is_empty()) {
        let end = at.iter().map(|(p, _)| *p).filter(|p| *p > pos).min().unwrap_or(finish);
        let (from, to) = (token_at(pos), token_at(end).max(token_at(pos) + 1).min(tokens.len()));
        let found = weighted_scores(&tokens[from..to], &["score".to_string()], scale);
        if let Some(w) = found.get("score") {
            out.insert(d.key.clone(), *w);
        }
    }
    out
}

/// The keys that follow `"review"` in the meta-evaluator's object.
const REVIEW_SIBLINGS: [&str; 2] = ["definitions", "new_aspects"];

/// A new aspect the meta-evaluator proposes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NewAspect {
    pub key: String,
    pub name: String,
    pub definition: String,
    pub score: f64,
    pub reason: String,
}

/// What the meta-evaluator made of an evaluation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Review {
    /// Aspect → (rectified value, reason); kept aspects are absent.
    pub rectified: BTreeMap<String, (AspectValue, String)>,
    /// Aspect → (proposed definition, reason).
    pub definitions: BTreeMap<String, (String, String)>,
    pub new_aspects: Vec<NewAspect>,
    /// The evaluation with the rectified values.
    pub evaluation: Evaluation,
}

/// The meta-evaluator's verdict on one evaluation.
pub(crate) struct ReviewVerdict<'a> {
    pub panel: &'a Panel,
    /// The evaluation under review.
    pub base: &'a Evaluation,
    pub max_new: usize,
}

impl Verdict for ReviewVerdict<'_> {
    type Output = Review;
    fn instructions(&self) -> String {
        let lines: Vec<String> = self
            .panel
            .dimensions
            .iter()
            .map(|d| {
                format!(
                    "    \"{}\": {{\"verdict\": \"keep\" or \"rectify\", {}, \"reason\": \"<why>\"}}",
                    d.key,
                    value_hint(self.panel, d)
                )
            })
            .collect();
        format!(
            "End your reply with one JSON object:\n{{\n  \"review\": {{\n{}\n  }},\n  \"definitions\": [{{\"aspect\": \
             \"<aspect key>\", \"definition\": \"<the better definition>\", \"reason\": \"<why>\"}}],\n  \
             \"new_aspects\": [{{\"key\": \"<snake_case key>\", \"name\": \"<name>\", \"definition\": \"<definition>\", \
             \"score\": <{} to {}>, \"reason\": \"<why>\"}}]\n}}\nUnder \"review\" give the value that should stand: \
             the evaluator's when you keep it. Leave \"definitions\" empty when every definition is adequate; give at \
             most {} new aspects.",
            lines.join(",\n"),
            fmt_num(self.panel.scale.min),
            fmt_num(self.panel.scale.max),
            self.max_new
        )
    }
    fn schema(&self) -> Option<Value> {
        let mut review = Map::new();
        for d in &self.panel.dimensions {
            let (name, value) = value_schema(self.panel, d);
            review.insert(
                d.key.clone(),
                json!({
                    "type": "object",
                    "properties": {"verdict": {"type": "string", "enum": ["keep", "rectify"]}, name: value, "reason": text_schema(REASON_MAX)},
                    "required": ["verdict", name, "reason"],
                    "additionalProperties": false
                }),
            );
        }
        let score = json!({"type": "integer", "minimum": self.panel.scale.min, "maximum": self.panel.scale.max});
        Some(json!({
            "type": "object",
            "properties": {
                "review": {"type": "object", "properties": review, "required": self.panel.dimension_keys(), "additionalProperties": false},
                "definitions": {"type": "array", "maxItems": self.panel.dimensions.len(), "items": {
                    "type": "object",
                    "properties": {"aspect": {"type": "string", "enum": self.panel.dimension_keys()}, "definition": text_schema(DEFINITION_MAX), "reason": text_schema(REASON_MAX)},
                    "required": ["aspect", "definition", "reason"],
                    "additionalProperties": false
                }},
                "new_aspects": {"type": "array", "maxItems": self.max_new, "items": {
                    "type": "object",
                    "properties": {"key": text_schema(40), "name": text_schema(60), "definition": text_schema(DEFINITION_MAX), "score": score, "reason": text_schema(REASON_MAX)},
                    "required": ["key", "name", "definition", "score", "reason"],
                    "additionalProperties": false
                }}
            },
            "required": ["review", "definitions", "new_aspects"],
            "additionalProperties": false
        }))
    }
    /// The meta-evaluator's scores are weighed by their probabilities too.
    fn top_logprobs(&self) -> Option<u8> {
        Some(TOP_LOGPROBS)
    }
    fn read(&self, completion: &Completion) -> Result<Review, String> {
        let map = verdict_object(&completion.text, &self.panel.dimensions, "review")
            .ok_or("the reply has no JSON object with a \"review\" of the aspects")?;
        let weighted = weigh(completion, &self.panel.dimensions, self.panel.scale, Some("review"));
        // The aspects sit under "review", or at the top level.
        let review = match map.get("review") {
            Some(Value::Object(r)) => r,
            _ => &map,
        };
        let mut out = Review { evaluation: self.base.clone(), ..Default::default() };
        let mut problems = Vec::new();
        for d in &self.panel.dimensions {
            // An aspect the review leaves out keeps the evaluator's value.
            let Some(Value::Object(o)) = entry(review, &d.key) else { continue };
            let verdict = text(o.get("verdict")).to_lowercase();
            if verdict == "keep" {
                continue;
            }
            let raw = o.get(if d.labels.is_empty() { "score" } else { "label" });
            if raw.is_none() && verdict.is_empty() {
                continue;
            }
            match read_value(self.panel, d, raw) {
                Ok(v) if Some(&v) == AspectValue::of(self.base, &d.key).as_ref() => {}
                Ok(v) => {
                    v.set_in(&mut out.evaluation, &d.key);
                    // The evaluator's weighted score is not the rectified
                    // value's: the meta-evaluator's own stands in its place,
                    // or, when its reply had no log-probabilities, the
                    // rectified score itself, so that the weighted stage
                    // keeps the aspect.
                    if let AspectValue::Score(score) = &v {
                        let own = weighted.get(&d.key).copied();
                        match (own, out.evaluation.weighted_scores.as_mut()) {
                            (Some(w), Some(all)) => {
                                all.insert(d.key.clone(), w);
                            }
                            (Some(w), None) => {
                                out.evaluation.weighted_scores = Some([(d.key.clone(), w)].into_iter().collect());
                            }
                            (None, Some(all)) => {
                                all.insert(d.key.clone(), *score);
                            }
                            (None, None) => {}
                        }
                    }
                    out.rectified.insert(d.key.clone(), (v, text(o.get("reason"))));
                }
                Err(e) => problems.push(e),
            }
        }
        for p in map.get("definitions").and_then(Value::as_array).into_iter().flatten() {
            let aspect = normalize_key(&text(p.get("aspect")));
            let definition = text(p.get("definition"));
            if definition.is_empty() {
                continue;
            }
            match self.panel.dimensions.iter().find(|d| d.key == aspect) {
                Some(d) if d.description.trim() == definition => {}
                Some(d) => {
                    out.definitions.insert(d.key.clone(), (definition, text(p.get("reason"))));
                }
                None => problems.push(format!("definitions: \"{aspect}\" is not an aspect of the panel")),
            }
        }
        let new = map.get("new_aspects").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        if new.len() > self.max_new {
            problems.push(format!("new_aspects: {} proposed, at most {} allowed", new.len(), self.max_new));
        }
        for p in new.iter().take(self.max_new) {
            let key = normalize_key(&text(p.get("key")).replace(' ', "_"));
            let definition = text(p.get("definition"));
            if key.is_empty() || definition.is_empty() {
                problems.push("new_aspects: each needs a key and a definition".into());
                continue;
            }
            if self.panel.dimensions.iter().any(|d| d.key == key) || out.new_aspects.iter().any(|a| a.key == key) {
                problems.push(format!("new_aspects: \"{key}\" is already an aspect"));
                continue;
            }
            let probe = Dimension {
                key: key.clone(),
                name: String::new(),
                description: String::new(),
                steps: None,
                labels: Vec::new(),
            };
            match read_value(self.panel, &probe, p.get("score")) {
                Ok(AspectValue::Score(score)) => out.new_aspects.push(NewAspect {
                    key,
                    name: text(p.get("name")),
                    definition,
                    score,
                    reason: text(p.get("reason")),
                }),
                Ok(AspectValue::Label(_)) => {}
                Err(e) => problems.push(format!("new_aspects: {e}")),
            }
        }
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        mean_overall(&mut out.evaluation, self.panel);
        Ok(out)
    }
    fn repair(&self, error: &str) -> ChatMessage {
        ChatMessage::user(format!(
            "Your review could not be read: {error}. Reply again with only the JSON object, no other text.\n{}",
            self.instructions()
        ))
    }
    /// The rectified evaluation, with the meta-evaluator's reasons.
    fn restore(&self, output: &mut Review, recorded: &Evaluation) {
        output.evaluation.weighted_scores = recorded.weighted_scores.clone();
    }
    fn evaluation(&self, output: &Review) -> Option<Evaluation> {
        let mut ev = output.evaluation.clone();
        ev.justification =
            output.rectified.iter().map(|(k, (v, why))| format!("{k} → {v}: {why}")).collect::<Vec<_>>().join("\n");
        Some(ev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn survey() -> Panel {
        Panel::bundled("survey-sage").expect("bundled")
    }

    fn reply(text: &str) -> Completion {
        Completion { text: text.into(), ..Default::default() }
    }

    #[test]
    fn the_schemas_allow_only_the_labels_and_a_local_grammar_follows_them() {
        let panel = survey();
        let base = Evaluation::default();
        let scores = AspectScores { panel: &panel, aspects: &panel.dimensions, so_far: None }.schema().unwrap();
        let review = ReviewVerdict { panel: &panel, base: &base, max_new: 3 }.schema().unwrap();
        let labels = json!(["formal", "neutral", "friendly", "playful"]);
        assert_eq!(scores["properties"]["tone"]["properties"]["label"]["enum"], labels);
        assert_eq!(review["properties"]["review"]["properties"]["tone"]["properties"]["label"]["enum"], labels);
        assert_eq!(review["properties"]["new_aspects"]["maxItems"], 3);
        #[cfg(feature = "local")]
        for schema in [scores, review] {
            crate::provider::local::schema_to_gbnf(&schema).expect("moot writes a grammar for the schema");
        }
    }

    #[test]
    fn each_aspects_score_is_weighed_by_its_own_probabilities() {
        use crate::provider::logprobs::{TokenLogprob, TopLogprob};
        let mut panel = survey();
        panel.dimensions.truncate(2);
        let tok = |t: &str, top: &[(&str, f64)]| TokenLogprob {
            token: t.into(),
            logprob: top.iter().find(|(x, _)| *x == t).map_or(-0.1, |(_, p)| p.ln()),
            top: top.iter().map(|(t, p)| TopLogprob { token: (*t).into(), logprob: p.ln() }).collect(),
        };
        let tokens = vec![
            tok("{\"accuracy\": {\"reason\": \"ok\", \"score\": ", &[]),
            tok("4", &[("4", 0.5), ("2", 0.5)]),
            tok("}, \"semantic_diversity\": {\"reason\": \"ok\", \"score\": ", &[]),
            tok("5", &[("5", 0.75), ("1", 0.25)]),
            tok("}}", &[]),
        ];
        let text: String = tokens.iter().map(|t| t.token.as_str()).collect();
        let completion = Completion { text, logprobs: Some(tokens), ..Default::default() };
        let ev = AspectScores { panel: &panel, aspects: &panel.dimensions, so_far: None }
            .read(&completion)
            .unwrap()
            .evaluation;
        assert_eq!(ev.scores["accuracy"], 4.0, "the sampled score stays the score");
        let w = ev.weighted_scores.unwrap();
        assert_eq!((w["accuracy"], w["semantic_diversity"]), (3.0, 4.0));
    }

    #[test]
    fn a_rectified_score_keeps_a_weighted_value_the_meta_evaluators_or_its_own() {
        use crate::provider::logprobs::{TokenLogprob, TopLogprob};
        let mut panel = survey();
        panel.dimensions.truncate(2);
        let mut base = Evaluation::default();
        base.scores.insert("accuracy".into(), 5.0);
        base.scores.insert("semantic_diversity".into(), 4.0);
        base.weighted_scores = Some([("accuracy".into(), 4.8), ("semantic_diversity".into(), 3.9)].into());
        let v = ReviewVerdict { panel: &panel, base: &base, max_new: 1 };
        let text = "{\"review\": {\"accuracy\": {\"verdict\": \"rectify\", \"score\": 3, \"reason\": \"an error\"}, \
                    \"semantic_diversity\": {\"verdict\": \"keep\", \"score\": 4, \"reason\": \"\"}}, \
                    \"definitions\": [{\"aspect\": \"accuracy\", \"definition\": \"Is it right?\", \"reason\": \"x\"}], \
                    \"new_aspects\": [{\"key\": \"accuracy_2\", \"definition\": \"y\", \"score\": 1, \"reason\": \"z\"}]}";
        // Without log-probabilities the rectified score is its own weighted value.
        let r = v.read(&reply(text)).unwrap();
        let w = r.evaluation.weighted_scores.as_ref().unwrap();
        assert_eq!((w["accuracy"], w["semantic_diversity"]), (3.0, 3.9));
        // With them, the meta-evaluator's Σ p(s)·s on its own score token.
        let at = text.find("3, \"reason\": \"an error").unwrap();
        let tokens = vec![
            TokenLogprob { token: text[..at].into(), logprob: -0.1, top: vec![] },
            TokenLogprob {
                token: "3".into(),
                logprob: 0.5f64.ln(),
                top: vec![
                    TopLogprob { token: "3".into(), logprob: 0.5f64.ln() },
                    TopLogprob { token: "2".into(), logprob: 0.5f64.ln() },
                ],
            },
            TokenLogprob { token: text[at + 1..].into(), logprob: -0.1, top: vec![] },
        ];
        let r = v.read(&Completion { text: text.into(), logprobs: Some(tokens), ..Default::default() }).unwrap();
        let w = r.evaluation.weighted_scores.as_ref().unwrap();
        assert_eq!((w["accuracy"], w["semantic_diversity"]), (2.5, 3.9));
        // An evaluation without weighted scores gets none from a rectification without them.
        let plain = Evaluation { weighted_scores: None, ..base.clone() };
        let v = ReviewVerdict { panel: &panel, base: &plain, max_new: 1 };
        assert_eq!(v.read(&reply(text)).unwrap().evaluation.weighted_scores, None);
        assert_eq!(v.top_logprobs(), Some(TOP_LOGPROBS), "the meta-evaluator's scores are weighed too");
    }

    #[test]
    fn bare_values_and_loose_keys_are_read_and_a_missing_aspect_is_not() {
        let panel = survey();
        let v = AspectScores { panel: &panel, aspects: &panel.dimensions, so_far: None };
        let all = "{\"Accuracy\": 4, \"semantic diversity\": 3, \"coherence\": 4, \"relevancy\": 5, \
                   \"audience_understandability\": 4, \"audience_engagement\": 3, \"fairness\": 2, \"tone\": \"Friendly\"}";
        let ev = v.read(&reply(all)).unwrap().evaluation;
        assert_eq!(ev.scores["accuracy"], 4.0);
        assert_eq!(ev.scores["semantic_diversity"], 3.0);
        assert_eq!(ev.labels["tone"], "friendly", "the label is spelled as the panel spells it");
        assert!(!ev.scores.contains_key("tone"));
        let missing = all.replace("\"fairness\": 2, ", "");
        assert!(v.read(&reply(&missing)).unwrap_err().contains("fairness: no score"));
        let off = all.replace("\"fairness\": 2", "\"fairness\": 7");
        assert!(v.read(&reply(&off)).unwrap_err().contains("outside the scale"));
    }

    #[test]
    fn a_review_keeps_what_it_does_not_change_and_refuses_known_keys_as_new_aspects() {
        let panel = survey();
        let mut base = Evaluation::default();
        base.scores.insert("accuracy".into(), 4.0);
        base.labels.insert("tone".into(), "friendly".into());
        let v = ReviewVerdict { panel: &panel, base: &base, max_new: 1 };
        let r = v
            .read(&reply(
                "{\"review\": {\"accuracy\": {\"verdict\": \"rectify\", \"score\": 4, \"reason\": \"same\"}, \
                 \"tone\": {\"verdict\": \"rectify\", \"label\": \"formal\", \"reason\": \"stiff\"}}, \
                 \"definitions\": [], \"new_aspects\": [{\"key\": \"Answer key\", \"definition\": \"Is there one?\", \"score\": 2}]}",
            ))
            .unwrap();
        assert!(!r.rectified.contains_key("accuracy"), "the same value is no rectification");
        assert_eq!(r.rectified["tone"].0, AspectValue::Label("formal".into()));
        assert_eq!(r.new_aspects[0].key, "answer_key");
        let clash = "{\"review\": {}, \"new_aspects\": [{\"key\": \"fairness\", \"definition\": \"x\", \"score\": 2}]}";
        assert!(v.read(&reply(clash)).unwrap_err().contains("already an aspect"));
        let many = "{\"review\": {}, \"new_aspects\": [{\"key\": \"a\", \"definition\": \"x\", \"score\": 2}, \
                    {\"key\": \"b\", \"definition\": \"y\", \"score\": 2}]}";
        assert!(v.read(&reply(many)).unwrap_err().contains("at most 1"));
    }
}
