//! Topical-Chat response ratings (USR's annotations) as UniEval and G-Eval
//! distribute them (`topical_chat.json`): a JSON array with one object per
//! rated response: `source` (the conversation so far, one turn a line),
//! `context` (the fact the response may draw on), `system_id`,
//! `system_output` (the response) and `scores`, the annotators' mean
//! rating of each dimension.

use std::collections::HashMap;

use serde_json::Value;

use super::{DatasetFormat, SourceFile, first_json_object, id_field, is_moot_item, json_entries, text_field};
use crate::item::json::{json_type, scores_from_json};
use crate::item::{Collector, Item, ItemsError, ItemsFile};

pub(super) const FORMAT: DatasetFormat = DatasetFormat {
    name: "topical-chat",
    description: "Topical-Chat response ratings as UniEval and G-Eval distribute them (topical_chat.json: source, context, system_id, system_output, scores)",
    several_files: false,
    detect,
    parse,
};

fn detect(text: &str) -> bool {
    first_json_object(text).is_some_and(|o| {
        !is_moot_item(&o)
            && ["source", "system_output"].iter().all(|k| o.contains_key(*k))
            && o.get("scores")
                .and_then(Value::as_object)
                .is_some_and(|s| s.contains_key("engagingness") || s.contains_key("groundedness"))
    })
}

/// What the judges read beside the response: the conversation, then the fact.
fn render_context(history: &str, fact: Option<&str>) -> String {
    let turns: Vec<&str> = history.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let mut s = String::from("Conversation so far (one turn a line, the speakers alternating):\n");
    s.push_str(&turns.join("\n"));
    if let Some(fact) = fact.map(str::trim).filter(|f| !f.is_empty()) {
        s.push_str("\n\nFact the responder was given:\n");
        s.push_str(fact);
    }
    s
}

fn item_from_entry(v: &Value, dialogues: &mut HashMap<String, usize>) -> Result<Item, String> {
    let obj = v.as_object().ok_or_else(|| format!("expected an object, found {}", json_type(v)))?;
    let history = text_field(obj, "source")?;
    let system = id_field(obj, "system_id")?;
    // The file has no conversation ids: conversations are numbered in the
    // order they first appear (a `doc_id`, if given, wins).
    let dialogue = match obj.get("doc_id") {
        None | Some(Value::Null) => {
            let next = dialogues.len() + 1;
            format!("{:03}", *dialogues.entry(history.clone()).or_insert(next))
        }
        Some(_) => id_field(obj, "doc_id")?,
    };
    let id = format!("{dialogue}/{system}");
    let with_id = |e: String| format!("item \"{id}\": {e}");
    let output = text_field(obj, "system_output").map_err(with_id)?;
    if output.trim().is_empty() {
        return Err(with_id("`system_output` is empty".into()));
    }
    let fact = match obj.get("context") {
        None | Some(Value::Null) => None,
        Some(_) => Some(text_field(obj, "context").map_err(with_id)?),
    };
    let mut item = Item::new(id.clone(), output.trim().to_string());
    item.context = Some(render_context(&history, fact.as_deref()));
    item.human = match obj.get("scores") {
        None | Some(Value::Null) => None,
        Some(s) => Some(scores_from_json(s, "scores").map_err(with_id)?).filter(|s| !s.is_empty()),
    };
    Ok(item)
}

fn parse(files: &[SourceFile], source: &str) -> Result<ItemsFile, ItemsError> {
    let mut collector = Collector::default();
    let mut dialogues = HashMap::new();
    for file in files {
        for (line, entry) in json_entries(&file.text, &file.name)? {
            collector.push(line, entry.and_then(|v| item_from_entry(&v, &mut dialogues)));
        }
    }
    collector.finish(source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversations_are_numbered_and_scores_kept() {
        let text = r#"[
  {"source": "hi , do you like jazz ? \n i do !\n\n", "system_id": "Original Ground Truth", "system_output": "me too .", "context": "jazz was born in new orleans .", "scores": {"understandability": 1.0, "naturalness": 3.0, "coherence": 2.3333333333, "engagingness": 3.0, "groundedness": 0.6666666667, "overall": 4.6666666667}},
  {"source": "hi , do you like jazz ? \n i do !\n\n", "system_id": "Argmax Decoding", "system_output": "i like cats .", "context": "jazz was born in new orleans .", "scores": {"naturalness": 2.0}},
  {"source": "what 's new ?\n\n", "system_id": "Argmax Decoding", "system_output": "not much .", "context": "", "scores": {"naturalness": "2"}},
  {"source": "what 's new ?\n\n", "system_id": "Nucleus Decoding (p = 0.3)", "system_output": "   ", "context": ""}
]"#;
        assert!(detect(text));
        let file = parse(&[SourceFile::new("topical_chat.json", text)], "topical_chat.json").expect("items");
        let ids: Vec<&str> = file.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["001/Original Ground Truth", "001/Argmax Decoding"]);
        let first = &file.items[0];
        assert_eq!(first.content, "me too .");
        let ctx = first.context.as_deref().unwrap();
        assert!(
            ctx.contains("hi , do you like jazz ?\ni do !\n\nFact the responder was given:\njazz was born"),
            "{ctx}"
        );
        assert_eq!(first.human.as_ref().unwrap()["groundedness"], 0.6666666667);
        let msgs: Vec<String> = file.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            [
                "line 4: item \"002/Argmax Decoding\": `scores.naturalness` must be a number, found a string",
                "line 5: item \"002/Nucleus Decoding (p = 0.3)\": `system_output` is empty",
            ]
        );
    }

    #[test]
    fn other_unieval_sets_are_not_taken_for_it() {
        assert!(!detect(
            r#"[{"source": "x", "system_output": "y", "scores": {"naturalness": 3, "informativeness": 2}}]"#
        ));
    }
}
