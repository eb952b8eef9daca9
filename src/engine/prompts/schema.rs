//! JSON schemas of a score and of an evaluation, for backends that constrain their output.

use serde_json::json;

use crate::panel::Panel;

/// JSON schema of one score on the panel's scale.
pub fn score_schema(scale: &crate::panel::Scale) -> serde_json::Value {
    let kind = if scale.is_integer() { "integer" } else { "number" };
    json!({"type": kind, "minimum": scale.min, "maximum": scale.max})
}

/// Longest justification an evaluation's schema allows, in characters: one
/// sentence. The words before the evaluation carry the reasoning; a longer
/// field repeated them and took half of a small model's reply.
pub const JUSTIFICATION_MAX: u64 = 200;

/// JSON schema of an evaluation, for backends that constrain their output.
pub fn evaluation_schema(panel: &Panel) -> serde_json::Value {
    let mut props = serde_json::Map::new();
    let mut required = Vec::new();
    let score = score_schema(&panel.scale);
    for d in &panel.dimensions {
        props.insert(d.key.clone(), score.clone());
        required.push(json!(d.key));
    }
    // An overall beside the dimensions, unless the panel has none or rates
    // it as a dimension (then it is that dimension's property, once).
    if panel.asks_overall() {
        props.insert("overall".into(), score);
        required.push(json!("overall"));
    }
    props.insert("confidence".into(), json!({"type": "number", "minimum": 0.0, "maximum": 1.0}));
    props.insert("justification".into(), json!({"type": "string", "maxLength": JUSTIFICATION_MAX}));
    required.extend([json!("confidence"), json!("justification")]);
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}
