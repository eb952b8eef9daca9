//! The paper's conditions after the loop: the initial, few-shot and chosen
//! prompts on the test split (or the few-shot one on the held-out split).
//! Resuming, a condition the log scored is not judged again.

use std::sync::Arc;

use super::log::{self, Condition, OptKind, Split};
use super::prompt::JudgePrompt;
use super::{IterationResult, Loop, judge, score};
use crate::item::Item;

impl Loop {
    /// The paper's conditions after the loop: on the test split, the
    /// initial, few-shot and chosen prompts; with no test split, the few-shot
    /// prompt on the held-out split (the others have their held-out S).
    /// Returns the chosen prompt's test S.
    pub(super) async fn conditions(&mut self, chosen: Option<&IterationResult>) -> Option<f64> {
        let initial = JudgePrompt::of(&self.config.panel);
        let few_shot = (self.config.design.few_shot && !self.first_picks.is_empty()).then(|| {
            let shots: Vec<(&Item, f64)> = self
                .first_picks
                .iter()
                .map(|&i| (&self.config.examples[i].item, self.config.examples[i].label))
                .collect();
            initial.with_examples(&shots, &self.config.dimension)
        });
        if self.test.is_empty() {
            if let Some(p) = few_shot {
                let held = self.holdout.clone();
                self.condition(Condition::FewShot, None, Split::Holdout, p, &held, true).await;
            }
            return None;
        }
        let test = self.test.clone();
        let mut scored: Vec<(JudgePrompt, Option<f64>)> = Vec::new();
        let mut conditions = vec![(Condition::Initial, Some(1), initial, false)];
        conditions.extend(few_shot.map(|p| (Condition::FewShot, None, p, true)));
        conditions.extend(chosen.map(|r| (Condition::Chosen, Some(r.iteration), r.prompt.clone(), false)));
        let mut chosen_test = None;
        for (condition, iteration, prompt, show) in conditions {
            // The same prompt is judged once (the chosen one is often the initial one).
            let score = match scored.iter().find(|(p, _)| *p == prompt) {
                Some((_, s)) => {
                    let s = *s;
                    self.rec.emit(OptKind::ConditionScored {
                        condition,
                        iteration,
                        split: Split::Test,
                        objective: self.config.objective.as_str().into(),
                        score: s,
                        error: s.is_none().then(|| "as the same prompt above".into()),
                        failures: 0,
                        prompt: None,
                        rows: Vec::new(),
                    });
                    Some(s)
                }
                None => self.condition(condition, iteration, Split::Test, prompt.clone(), &test, show).await,
            };
            let Some(score) = score else { break };
            scored.push((prompt, score));
            if condition == Condition::Chosen {
                chosen_test = score;
            }
        }
        chosen_test
    }

    /// Judge `idx` with `prompt` and record the condition's S; `None` when a
    /// stop came first (else the S, itself `None` when there is none).
    pub(super) async fn condition(
        &mut self,
        condition: Condition,
        iteration: Option<u32>,
        split: Split,
        prompt: JudgePrompt,
        idx: &[usize],
        show: bool,
    ) -> Option<Option<f64>> {
        let results = match self.logged_condition(condition, split, idx) {
            Some(results) => results,
            None => self.judge_many(Arc::new(prompt.apply(&self.config.panel)), idx).await?,
        };
        let c = &self.config;
        let pairs: Vec<(Option<f64>, f64)> =
            idx.iter().zip(&results).map(|(&i, r)| (r.value, c.examples[i].label)).collect();
        let s = score::score(c.objective, &pairs, &c.panel.scale);
        self.rec.emit(OptKind::ConditionScored {
            condition,
            iteration,
            split,
            objective: c.objective.as_str().into(),
            score: s.as_ref().ok().copied(),
            error: s.as_ref().err().cloned(),
            failures: results.iter().filter(|r| r.value.is_none()).count(),
            prompt: show.then_some(prompt),
            rows: idx
                .iter()
                .zip(&results)
                .map(|(&i, r)| log::ConditionRow {
                    id: c.examples[i].item.id.clone(),
                    judge: r.value,
                    human: c.examples[i].label,
                    error: r.error.clone(),
                })
                .collect(),
        });
        Some(s.ok())
    }

    /// A condition's judgements as the log holds them, when it scored it
    /// on these examples.
    pub(super) fn logged_condition(
        &self,
        condition: Condition,
        split: Split,
        idx: &[usize],
    ) -> Option<Vec<judge::Judgement>> {
        let rows = self.journal.as_ref()?.condition(condition, split)?;
        let same =
            rows.len() == idx.len() && rows.iter().zip(idx).all(|(r, &i)| r.id == self.config.examples[i].item.id);
        same.then(|| {
            rows.into_iter().map(|r| judge::Judgement { value: r.judge, error: r.error, reason: None }).collect()
        })
    }
}
