//! MT-Bench human judgments (lmsys; FastChat's `llm_judge` distributes
//! `human_judgments.json`, the Hugging Face dataset
//! `lmsys/mt_bench_human_judgments` the same votes as its `human` split):
//! one vote per object, with `question_id`, `model_a`, `model_b`, `winner`
//! (`model_a`, `model_b`, `tie`, `tie (bothbad)`), `judge` (`expert_0`,
//! `author_2`, …), `conversation_a` and `conversation_b` (lists of
//! `{role, content}`) and `turn` (1 or 2). A JSON array, or one object a line.
//!
//! Votes on the same question, turn and pair of models (in either order, as
//! FastChat's `compute_agreement.py` pairs them) make one pairwise item.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{DatasetFormat, SourceFile, first_json_object, id_field, is_moot_item, json_entries, text_field};
use crate::item::json::json_type;
use crate::item::{Candidate, Collector, Item, ItemsError, ItemsFile};

pub(super) const FORMAT: DatasetFormat = DatasetFormat {
    name: "mt-bench",
    description: "MT-Bench human judgments (FastChat human_judgments.json, or lmsys/mt_bench_human_judgments as JSON/JSONL)",
    several_files: false,
    detect,
    parse,
};

fn detect(text: &str) -> bool {
    first_json_object(text).is_some_and(|o| {
        !is_moot_item(&o)
            && ["question_id", "model_a", "model_b", "winner", "conversation_a"].iter().all(|k| o.contains_key(*k))
    })
}

/// The questions and one model's answers up to `turn`, from its conversation.
fn turns(obj: &serde_json::Map<String, Value>, key: &str, turn: usize) -> Result<(Vec<String>, Vec<String>), String> {
    let list = match obj.get(key) {
        Some(Value::Array(list)) => list,
        None | Some(Value::Null) => return Err(format!("missing `{key}`")),
        Some(other) => return Err(format!("`{key}` must be an array of messages, found {}", json_type(other))),
    };
    let (mut questions, mut answers) = (Vec::new(), Vec::new());
    for (i, m) in list.iter().enumerate() {
        let m = m.as_object().ok_or_else(|| format!("`{key}[{i}]` must be an object, found {}", json_type(m)))?;
        let role = text_field(m, "role").map_err(|e| format!("`{key}[{i}]`: {e}"))?;
        let content = text_field(m, "content").map_err(|e| format!("`{key}[{i}]`: {e}"))?;
        match role.as_str() {
            "user" => questions.push(content),
            "assistant" => answers.push(content),
            _ => {}
        }
    }
    if questions.len() < turn || answers.len() < turn {
        return Err(format!(
            "`{key}` has {} questions and {} answers; turn {turn} needs {turn} of each",
            questions.len(),
            answers.len()
        ));
    }
    questions.truncate(turn);
    answers.truncate(turn);
    Ok((questions, answers))
}

const ORDINAL: [&str; 2] = ["first", "second"];

/// The context: the user's question, or both questions for the second turn.
fn render_questions(questions: &[String]) -> String {
    if questions.len() == 1 {
        return questions[0].trim().to_string();
    }
    questions
        .iter()
        .zip(ORDINAL)
        .map(|(q, n)| format!("The user's {n} question:\n{}", q.trim()))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A candidate: the answer, or both answers for the second turn.
fn render_answers(answers: &[String]) -> String {
    if answers.len() == 1 {
        return answers[0].trim().to_string();
    }
    answers
        .iter()
        .zip(ORDINAL)
        .map(|(a, n)| format!("Answer to the {n} question:\n{}", a.trim()))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// One vote: the item it is about (with the models in name order) and the
/// label it gives.
struct Vote {
    key: (String, usize, String, String),
    id: String,
    context: String,
    candidates: [Candidate; 2],
    label: String,
}

fn read_vote(v: &Value) -> Result<Vote, String> {
    let obj = v.as_object().ok_or_else(|| format!("expected an object, found {}", json_type(v)))?;
    let question = id_field(obj, "question_id")?;
    let (model_a, model_b) = (text_field(obj, "model_a")?, text_field(obj, "model_b")?);
    let turn = match obj.get("turn") {
        None | Some(Value::Null) => 1,
        Some(Value::Number(n)) if n.as_u64().is_some_and(|t| (1..=2).contains(&t)) => n.as_u64().unwrap_or(1) as usize,
        Some(other) => return Err(format!("`turn` must be 1 or 2, found {other}")),
    };
    let (first, second) = if model_a <= model_b { (&model_a, &model_b) } else { (&model_b, &model_a) };
    let id = format!("q{question}/t{turn}/{first}-vs-{second}");
    let with_id = |e: String| format!("item \"{id}\": {e}");
    if model_a == model_b {
        return Err(with_id(format!("`model_a` and `model_b` are the same model ({model_a})")));
    }
    let winner = text_field(obj, "winner").map_err(with_id)?;
    let label = match winner.trim() {
        "model_a" => model_a.clone(),
        "model_b" => model_b.clone(),
        w if w.starts_with("tie") => "tie".to_string(),
        w => return Err(with_id(format!("`winner`: \"{w}\" is not model_a, model_b or a tie"))),
    };
    let (questions, answers_a) = turns(obj, "conversation_a", turn).map_err(with_id)?;
    let (_, answers_b) = turns(obj, "conversation_b", turn).map_err(with_id)?;
    let a = Candidate { id: model_a.clone(), text: render_answers(&answers_a) };
    let b = Candidate { id: model_b.clone(), text: render_answers(&answers_b) };
    let candidates = if model_a <= model_b { [a, b] } else { [b, a] };
    Ok(Vote {
        key: (question, turn, first.clone(), second.clone()),
        id,
        context: render_questions(&questions),
        candidates,
        label,
    })
}

fn parse(files: &[SourceFile], source: &str) -> Result<ItemsFile, ItemsError> {
    let mut collector = Collector::default();
    let mut seen: BTreeMap<(String, usize, String, String), usize> = BTreeMap::new();
    for file in files {
        for (line, entry) in json_entries(&file.text, &file.name)? {
            let vote = match entry.and_then(|v| read_vote(&v)) {
                Ok(v) => v,
                Err(e) => {
                    collector.push(line, Err(e));
                    continue;
                }
            };
            match seen.get(&vote.key) {
                Some(&pos) => collector.items[pos].human_labels.push(vote.label),
                None => {
                    let mut item = Item::new(vote.id, "");
                    item.context = Some(vote.context);
                    item.candidates = Some(vote.candidates.into());
                    item.human_labels.push(vote.label);
                    seen.insert(vote.key, collector.items.len());
                    collector.push(line, Ok(item));
                }
            }
        }
    }
    collector.finish(source)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation(q1: &str, a1: &str, q2: &str, a2: &str) -> String {
        format!(
            r#"[{{"role": "user", "content": "{q1}"}}, {{"role": "assistant", "content": "{a1}"}}, {{"role": "user", "content": "{q2}"}}, {{"role": "assistant", "content": "{a2}"}}]"#
        )
    }

    fn vote(q: u32, a: &str, b: &str, winner: &str, judge: &str, turn: u32) -> String {
        format!(
            r#"{{"question_id": {q}, "model_a": "{a}", "model_b": "{b}", "winner": "{winner}", "judge": "{judge}", "conversation_a": {}, "conversation_b": {}, "turn": {turn}}}"#,
            conversation("Q1", &format!("{a} one"), "Q2", &format!("{a} two")),
            conversation("Q1", &format!("{b} one"), "Q2", &format!("{b} two")),
        )
    }

    #[test]
    fn votes_on_a_pair_merge_in_either_order() {
        let text = [
            vote(81, "gpt-4", "alpaca-13b", "model_a", "expert_0", 1),
            vote(81, "alpaca-13b", "gpt-4", "model_a", "author_2", 1),
            vote(81, "gpt-4", "alpaca-13b", "tie (bothbad)", "expert_3", 2),
            vote(82, "gpt-4", "alpaca-13b", "model_c", "expert_0", 1),
            vote(83, "gpt-4", "gpt-4", "tie", "expert_0", 1),
        ]
        .join("\n");
        assert!(detect(&text));
        let file = parse(&[SourceFile::new("human.jsonl", text)], "human.jsonl").expect("items");
        let ids: Vec<&str> = file.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["q81/t1/alpaca-13b-vs-gpt-4", "q81/t2/alpaca-13b-vs-gpt-4"]);
        let one = &file.items[0];
        assert_eq!(one.human_labels, ["gpt-4", "alpaca-13b"], "one label per vote, by model name");
        assert_eq!(one.context.as_deref(), Some("Q1"));
        let c = one.candidates.as_ref().unwrap();
        assert_eq!((c[0].id.as_str(), c[0].text.as_str()), ("alpaca-13b", "alpaca-13b one"));
        let two = &file.items[1];
        assert_eq!(two.human_labels, ["tie"]);
        assert_eq!(two.context.as_deref(), Some("The user's first question:\nQ1\n\nThe user's second question:\nQ2"));
        let c = two.candidates.as_ref().unwrap();
        assert_eq!(c[1].text, "Answer to the first question:\ngpt-4 one\n\nAnswer to the second question:\ngpt-4 two");
        let msgs: Vec<String> = file.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            [
                "line 4: item \"q82/t1/alpaca-13b-vs-gpt-4\": `winner`: \"model_c\" is not model_a, model_b or a tie",
                "line 5: item \"q83/t1/gpt-4-vs-gpt-4\": `model_a` and `model_b` are the same model (gpt-4)",
            ]
        );
    }

    #[test]
    fn a_short_conversation_is_reported() {
        let text = r#"[{"question_id": 1, "model_a": "a", "model_b": "b", "winner": "model_a", "judge": "expert_1", "turn": 2,
  "conversation_a": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}],
  "conversation_b": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "B"}]}]"#;
        let err = parse(&[SourceFile::new("h.json", text)], "h.json").expect_err("no usable item");
        assert!(
            err.to_string().contains(
                "line 1: item \"q1/t2/a-vs-b\": `conversation_a` has 1 questions and 1 answers; turn 2 needs 2 of each"
            ),
            "{err}"
        );
    }
}
