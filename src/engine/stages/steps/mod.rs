//! `steps`: evaluation steps for every dimension, written once per panel
//! (or given in the panel, or kept from an earlier run in the steps
//! cache), by the first member; with `review = true` a live run pauses
//! after them so a person can read and edit them before scoring.

mod cache;
pub(super) mod prompts;

use futures::future::join_all;
use std::collections::BTreeMap;

pub use cache::{CachedSteps, StepsCache};

use crate::engine::command::Command;
use crate::engine::runtime::{Run, Spoken, TurnSpec};
use crate::engine::trim::Prompt;
use crate::engine::verdict::Text;
use crate::panel::composition::Stage;
use crate::provider::ProviderError;
use crate::session::event::{EventKind, Phase, Role, StepsSource};

/// The author of the pause that `review` asks for.
pub const REVIEW_AUTHOR: &str = crate::engine::command::STEPS_REVIEW_AUTHOR;

/// Reply length of a steps turn at most.
const STEPS_TOKENS: u32 = 320;

pub(super) async fn run(run: &Run, stage: &Stage) {
    write_steps(run).await;
    if !run.stop.is_cancelled() && stage.flag("review") && run.config.linger {
        run.apply_command(Command::Pause { author: REVIEW_AUTHOR.into() });
    }
}

/// Steps for every dimension: the panel's, the cache's, or a judge's.
pub(crate) async fn write_steps(run: &Run) {
    run.emit(EventKind::PhaseStarted { phase: Phase::Steps, group: None, round: None });
    let (name, group, spec) = {
        let st = run.state();
        let a = &st.agents[0];
        (a.name.clone(), a.group.clone(), a.spec.clone())
    };
    let binding = run.config.bindings.for_agent(&name).clone();
    let model = steps_model(run);
    let cache = run.config.steps_cache.as_deref().map(StepsCache::new);
    let (temperature, max_tokens) = run.agent_sampling(&spec);
    let text = Text { what: "the numbered evaluation steps" };
    let calls = run.panel.dimensions.iter().map(|d| {
        let (name, group, binding, cache, model, text) = (&name, &group, &binding, &cache, &model, &text);
        async move {
            if let Some(steps) = &d.steps {
                return Ok((steps.trim().to_string(), StepsSource::Panel, None, None));
            }
            let _held = match cache {
                Some(c) => Some(c.lock(&run.panel, d, model).await),
                None => None,
            };
            if let Some(hit) = cache.as_ref().and_then(|c| c.get(&run.panel, d, model)) {
                return Ok((hit.steps, StepsSource::Cache, hit.author, None));
            }
            if !run.gate().await {
                return Err(None);
            }
            let turn = TurnSpec {
                participant: name,
                group: Some(group),
                phase: Phase::Steps,
                round: None,
                role: Role::Agent,
                binding,
                sampling: (temperature, max_tokens.min(STEPS_TOKENS)),
                cancel: &run.stop,
                dimension: Some(&d.key),
                pair: None,
            };
            let messages = Prompt::fixed(prompts::steps_messages(&run.panel, d));
            match run.verdict_turn(text, turn, messages, None).await {
                Spoken::Evaluated { evaluation: steps, turn, .. } => {
                    if let Some(c) = cache {
                        c.put(&run.panel, d, model, &CachedSteps { steps: steps.clone(), author: None });
                    }
                    Ok((steps, StepsSource::Generated, None, Some(turn)))
                }
                Spoken::Unparsed { .. } => Err(Some(format!("{name} wrote no evaluation steps for {}", d.key))),
                Spoken::Failed(ProviderError::Cancelled) => Err(None),
                Spoken::Failed(e) => Err(Some(format!("{name}: evaluation steps for {}: {e}", d.key))),
            }
        }
    });
    let results = join_all(calls).await;
    for (d, result) in run.panel.dimensions.iter().zip(results) {
        match result {
            Ok((steps, source, author, turn)) => {
                run.state().steps.insert(d.key.clone(), steps.clone());
                run.emit(EventKind::EvaluationSteps { dimension: d.key.clone(), steps, source, author, turn });
            }
            Err(Some(why)) => run.fail(why),
            Err(None) => {}
        }
    }
}

/// The model that writes the steps, the first judge's: part of the key
/// they are kept under.
fn steps_model(run: &Run) -> crate::session::event::ModelRef {
    let name = run.state().agents[0].name.clone();
    run.config.bindings.for_agent(&name).model_ref()
}

/// From here on the steps are fixed: a person's edits are kept for the next runs.
pub(crate) fn start_scoring(run: &Run) -> BTreeMap<String, String> {
    let (steps, edited) = {
        let mut st = run.state();
        st.scoring = true;
        (st.steps.clone(), std::mem::take(&mut st.steps_edited))
    };
    if let Some(cache) = run.config.steps_cache.as_deref().map(StepsCache::new) {
        let model = steps_model(run);
        for (key, author) in edited {
            if let (Some(d), Some(s)) = (run.panel.dimensions.iter().find(|d| d.key == key), steps.get(&key)) {
                cache.put(&run.panel, d, &model, &CachedSteps { steps: s.clone(), author: Some(author) });
            }
        }
    }
    steps
}
