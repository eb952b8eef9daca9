//! SummEval, in two of its published forms:
//!
//! - `summeval`: the JSON array that G-Eval (nlpyang/geval, `data/summeval.json`)
//!   and UniEval distribute: one object per summary with `doc_id`,
//!   `system_id`, `source`, `reference`, `system_output` and `scores`, the
//!   experts' mean rating of each dimension.
//! - `summeval-annotations`: SummEval's own `model_annotations.aligned.jsonl`
//!   (Yale-LILY/SummEval), one JSON object a line with `id`, `model_id`,
//!   `decoded`, `expert_annotations` (three experts' ratings, kept apart),
//!   `turker_annotations`, `references`, `filepath`, and `text` (the
//!   article) once SummEval's `pair_data.py` has added it
//!   (`model_annotations.aligned.paired.jsonl`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{DatasetFormat, SourceFile, first_json_object, id_field, is_moot_item, json_entries, text_field};
use crate::item::json::{json_type, scores_from_json};
use crate::item::{Collector, Item, ItemsError, ItemsFile};

pub(super) const FORMAT: DatasetFormat = DatasetFormat {
    name: "summeval",
    description: "SummEval as G-Eval and UniEval distribute it (data/summeval.json: doc_id, system_id, source, reference, system_output, scores)",
    several_files: false,
    detect,
    parse,
};

pub(super) const ANNOTATIONS: DatasetFormat = DatasetFormat {
    name: "summeval-annotations",
    description: "SummEval's model_annotations.aligned[.paired].jsonl: each expert's ratings kept apart (human_raters expert_1..3)",
    several_files: false,
    detect: detect_annotations,
    parse: parse_annotations,
};

fn detect(text: &str) -> bool {
    first_json_object(text).is_some_and(|o| {
        !is_moot_item(&o)
            && ["doc_id", "system_id", "system_output"].iter().all(|k| o.contains_key(*k))
            && o.get("scores")
                .and_then(Value::as_object)
                .is_some_and(|s| s.contains_key("relevance") || s.contains_key("consistency"))
    })
}

fn detect_annotations(text: &str) -> bool {
    first_json_object(text).is_some_and(|o| {
        !is_moot_item(&o) && ["decoded", "expert_annotations", "model_id"].iter().all(|k| o.contains_key(*k))
    })
}

fn item_from_geval(v: &Value) -> Result<Item, String> {
    let obj = v.as_object().ok_or_else(|| format!("expected an object, found {}", json_type(v)))?;
    let id = format!("{}/{}", id_field(obj, "doc_id")?, id_field(obj, "system_id")?);
    let with_id = |e: String| format!("item \"{id}\": {e}");
    let output = text_field(obj, "system_output").map_err(with_id)?;
    if output.trim().is_empty() {
        return Err(with_id("`system_output` is empty".into()));
    }
    let mut item = Item::new(id.clone(), output);
    item.context = Some(text_field(obj, "source").map_err(with_id)?).filter(|s| !s.trim().is_empty());
    item.reference = match obj.get("reference") {
        None | Some(Value::Null) => None,
        Some(_) => Some(text_field(obj, "reference").map_err(with_id)?).filter(|s| !s.trim().is_empty()),
    };
    item.human = match obj.get("scores") {
        None | Some(Value::Null) => None,
        Some(s) => Some(scores_from_json(s, "scores").map_err(with_id)?).filter(|s| !s.is_empty()),
    };
    Ok(item)
}

fn parse(files: &[SourceFile], source: &str) -> Result<ItemsFile, ItemsError> {
    let mut collector = Collector::default();
    for file in files {
        for (line, entry) in json_entries(&file.text, &file.name)? {
            collector.push(line, entry.and_then(|v| item_from_geval(&v)));
        }
    }
    collector.finish(source)
}

fn item_from_annotations(v: &Value) -> Result<Item, String> {
    let obj = v.as_object().ok_or_else(|| format!("expected an object, found {}", json_type(v)))?;
    let id = format!("{}/{}", id_field(obj, "id")?, id_field(obj, "model_id")?);
    let with_id = |e: String| format!("item \"{id}\": {e}");
    let decoded = text_field(obj, "decoded").map_err(with_id)?;
    if decoded.trim().is_empty() {
        return Err(with_id("`decoded` is empty".into()));
    }
    let mut item = Item::new(id.clone(), decoded);
    // Only the paired file (pair_data.py) carries the article.
    item.context = match obj.get("text") {
        None | Some(Value::Null) => None,
        Some(_) => Some(text_field(obj, "text").map_err(with_id)?).filter(|s| !s.trim().is_empty()),
    };
    // The first reference is the original highlights; the other ten were
    // written by crowd workers.
    item.reference = match obj.get("references") {
        None | Some(Value::Null) => None,
        Some(Value::Array(refs)) => match refs.first() {
            None => None,
            Some(Value::String(s)) => Some(s.clone()).filter(|s| !s.trim().is_empty()),
            Some(other) => {
                return Err(with_id(format!("`references[0]` must be a string, found {}", json_type(other))));
            }
        },
        Some(other) => return Err(with_id(format!("`references` must be an array, found {}", json_type(other)))),
    };
    let experts = match obj.get("expert_annotations") {
        Some(Value::Array(list)) => list,
        None | Some(Value::Null) => return Err(with_id("missing `expert_annotations`".into())),
        Some(other) => {
            return Err(with_id(format!("`expert_annotations` must be an array, found {}", json_type(other))));
        }
    };
    let mut raters = BTreeMap::new();
    for (i, e) in experts.iter().enumerate() {
        let scores = scores_from_json(e, &format!("expert_annotations[{i}]")).map_err(with_id)?;
        if !scores.is_empty() {
            raters.insert(format!("expert_{}", i + 1), scores);
        }
    }
    item.human_raters = raters;
    Ok(item)
}

fn parse_annotations(files: &[SourceFile], source: &str) -> Result<ItemsFile, ItemsError> {
    let mut collector = Collector::default();
    for file in files {
        for (line, entry) in json_entries(&file.text, &file.name)? {
            collector.push(line, entry.and_then(|v| item_from_annotations(&v)));
        }
    }
    collector.finish(source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geval_file_maps_scores_to_human() {
        let text = r#"[
    {
        "doc_id": "dm-test-1",
        "system_id": "M11",
        "source": "The article.",
        "reference": "The highlights.",
        "system_output": "The summary.",
        "scores": {"coherence": 1.3333333333333333, "consistency": 1.0, "fluency": 3.0, "relevance": 1.6666666666666667, "overall": 1.75}
    },
    {"doc_id": "dm-test-1", "system_id": "M8", "source": "The article.", "system_output": "", "scores": {}},
    {"doc_id": "dm-test-1", "system_id": "M9", "source": "The article.", "system_output": "x", "scores": {"coherence": "high"}},
    {"system_id": "M9", "source": "The article.", "system_output": "x"}
]"#;
        assert!(detect(text));
        let file = parse(&[SourceFile::new("summeval.json", text)], "summeval.json").expect("items");
        let item = &file.items[0];
        assert_eq!(item.id, "dm-test-1/M11");
        assert_eq!(
            (item.context.as_deref(), item.reference.as_deref()),
            (Some("The article."), Some("The highlights."))
        );
        let h = item.human.as_ref().unwrap();
        assert!((h["coherence"] - 4.0 / 3.0).abs() < 1e-12);
        assert_eq!(h["overall"], 1.75);
        let msgs: Vec<String> = file.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            [
                "line 10: item \"dm-test-1/M8\": `system_output` is empty",
                "line 11: item \"dm-test-1/M9\": `scores.coherence` must be a number, found a string",
                "line 12: missing `doc_id`",
            ]
        );
    }

    #[test]
    fn annotations_keep_each_expert() {
        let line = r#"{"id": "dm-test-1", "model_id": "M11", "decoded": "The summary.", "expert_annotations": [{"coherence": 2, "consistency": 1, "fluency": 4, "relevance": 2}, {"coherence": 1, "consistency": 1, "fluency": 3, "relevance": 2}, {"coherence": 1, "consistency": 1, "fluency": 2, "relevance": 1}], "turker_annotations": [{"coherence": 5, "consistency": 5, "fluency": 5, "relevance": 5}], "references": ["The highlights.", "A crowd summary."], "filepath": "cnndm/dailymail/stories/1.story", "text": "The article."}"#;
        assert!(detect_annotations(line) && !detect(line));
        let text = format!(
            "{line}\n{{\"id\": \"dm-test-2\", \"model_id\": \"M1\", \"decoded\": \"x\", \"expert_annotations\": [{{\"fluency\": \"good\"}}]}}\n"
        );
        let file = parse_annotations(&[SourceFile::new("a.jsonl", text)], "a.jsonl").expect("items");
        let item = &file.items[0];
        assert_eq!(item.id, "dm-test-1/M11");
        assert_eq!(item.reference.as_deref(), Some("The highlights."));
        assert_eq!(item.context.as_deref(), Some("The article."));
        assert_eq!(item.human_raters.keys().collect::<Vec<_>>(), ["expert_1", "expert_2", "expert_3"]);
        assert_eq!(item.human_raters["expert_1"]["fluency"], 4.0);
        assert_eq!(item.human_value("fluency"), Some(3.0), "the mean of the experts, not of the crowd");
        assert_eq!(
            file.skipped[0].to_string(),
            "line 2: item \"dm-test-2/M1\": `expert_annotations[0].fluency` must be a number, found a string"
        );
    }

    #[test]
    fn moot_items_are_not_taken_for_summeval() {
        assert!(!detect(
            r#"[{"id": "a", "content": "x", "doc_id": 1, "system_id": "s", "system_output": "y", "scores": {"relevance": 1}}]"#
        ));
        assert!(!detect_annotations(
            r#"{"id": "a", "content": "x", "decoded": "y", "model_id": "m", "expert_annotations": []}"#
        ));
    }
}
