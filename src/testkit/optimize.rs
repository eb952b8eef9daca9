//! Shared pieces of the optimisation tests: the bundled answer-judge panel
//! and labelled examples, and a scripted judge whose agreement with the
//! people depends on one sentence in its prompt.
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::engine::{Binding, Bindings};
use crate::optimize::{Example, JudgePrompt, Objective, OptimizeConfig};
use crate::panel::Panel;
use crate::provider::ChatRequest;
use crate::provider::retry::RetryPolicy;
use crate::testkit::scripted::{ScriptedProvider, ScriptedReply};

/// The sentence whose presence in the judge's prompt makes it agree with the people.
pub const PHRASE: &str = "A correct answer in other words still matches.";

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn panel() -> Panel {
    Panel::load(&root().join("assets/panels/answer-judge.toml")).expect("bundled panel loads")
}

pub fn examples() -> Vec<Example> {
    let file = crate::item::resolve_items(root().join("assets/items/answer-judge-labelled.jsonl").to_str().unwrap())
        .expect("bundled items load");
    assert!(file.skipped.is_empty());
    file.items
        .into_iter()
        .map(|item| {
            let label = item.human.as_ref().unwrap()["match"];
            Example { item, label }
        })
        .collect()
}

pub fn request_text(req: &ChatRequest) -> String {
    req.messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n")
}

pub fn is_feedback(text: &str) -> bool {
    text.starts_with("You study where an automatic judge")
}

pub fn is_rewrite(text: &str) -> bool {
    text.starts_with("You revise the instructions")
}

/// The judge: the human label when the phrase is in its prompt, the label
/// turned around otherwise. Feedback says what is missing; the rewrites add
/// the phrase, then take it out again, then add it.
pub fn provider(examples: &[Example]) -> Arc<ScriptedProvider> {
    let labels: BTreeMap<String, f64> = examples.iter().map(|e| (e.item.content.clone(), e.label)).collect();
    let rewrites = AtomicUsize::new(0);
    Arc::new(ScriptedProvider::new(move |req, _| {
        let text = request_text(req);
        if is_feedback(&text) {
            return "The judge marks answers wrong when they use other words than the reference.".into();
        }
        if is_rewrite(&text) {
            let n = rewrites.fetch_add(1, Ordering::SeqCst);
            let base = JudgePrompt::of(&panel());
            let mut p = base.clone();
            if n.is_multiple_of(2) {
                p.guidance = PHRASE.into();
            }
            return ScriptedReply::Text(format!("Here is the revision.\n\n{}", p.render()));
        }
        let label = labels
            .iter()
            .filter(|(content, _)| text.contains(content.as_str()))
            .max_by_key(|(content, _)| content.len())
            .map(|(_, l)| *l);
        let Some(label) = label else {
            return "I cannot find the item.".into();
        };
        let score = if text.contains(PHRASE) { label } else { 1.0 - label };
        ScriptedReply::Text(format!("The answer is judged. {{\"match\": {score}}}"))
    }))
}

pub fn config(provider: Arc<dyn crate::provider::Provider>, max_iter: u32, review: bool) -> OptimizeConfig {
    let examples = examples();
    OptimizeConfig {
        run_id: "test".into(),
        panel: Arc::new(panel()),
        panel_arg: "assets/panels/answer-judge.toml".into(),
        data: "assets/items/answer-judge-labelled.jsonl".into(),
        examples,
        dimension: "match".into(),
        objective: Objective::Agreement,
        threshold: 1.01,
        max_iter,
        holdout: 0.3,
        clusters: 3,
        per_cluster: 2,
        seed: 11,
        bindings: Bindings::uniform(Binding::new(provider, "scripted")),
        retry: RetryPolicy {
            max_attempts: 1,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        },
        concurrency: 4,
        review,
        author: "tester".into(),
        output: None,
        design: Default::default(),
    }
}
