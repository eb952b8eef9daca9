//! The start and the end of a run: the splits and clusters, the first
//! event, and the last one with the chosen prompt written as a panel.

use super::log::{self, OptKind, OptRecorder, OptStatus};
use super::prompt::JudgePrompt;
use super::{IterationResult, Loop, OptOutcome, OptimizeConfig, best_of, example_text, output, sample};
use crate::session::event::Role;

/// The training, held-out and test splits (example indices) and the
/// training examples' clusters.
pub(super) type Parts = (Vec<usize>, Vec<usize>, Vec<usize>, Vec<usize>);

pub(super) fn prepare(config: &OptimizeConfig) -> Result<Parts, String> {
    let (train, holdout, test) =
        sample::split_three(config.examples.len(), config.holdout, config.design.test, config.seed);
    let clusters = match &config.design.cluster_by {
        Some(by) if by.values.len() != config.examples.len() => {
            Err(format!("{} values of `{}` for {} examples", by.values.len(), by.field, config.examples.len()))
        }
        Some(by) => Ok(sample::cluster_by_value(&train.iter().map(|&i| by.values[i].clone()).collect::<Vec<_>>())),
        None => {
            let texts: Vec<String> = train.iter().map(|&i| example_text(&config.examples[i].item)).collect();
            sample::cluster(&texts, config.clusters, config.seed)
        }
    }?;
    Ok((train, holdout, test, clusters))
}

/// The first event a run with `config` records (splits and clusters
/// computed as the run computes them).
pub fn opening(config: &OptimizeConfig) -> Result<OptKind, String> {
    let (train, holdout, test, clusters) = prepare(config)?;
    Ok(started_kind(config, &train, &holdout, &test, &clusters))
}

/// The `optimize_started` event of a run with `config`.
pub(super) fn started_kind(
    config: &OptimizeConfig,
    train: &[usize],
    holdout: &[usize],
    test: &[usize],
    clusters: &[usize],
) -> OptKind {
    let c = config;
    let mut models = std::collections::BTreeMap::new();
    let judge = c.panel.agents().next().map_or(&c.bindings.default, |(_, a)| c.bindings.for_agent(&a.name));
    models.insert("judge".to_string(), judge.model_ref());
    for role in Role::OPTIMIZE {
        models.insert(role.as_str().to_string(), c.bindings.for_role(role).model_ref());
    }
    OptKind::OptimizeStarted {
        run_id: c.run_id.clone(),
        schema_version: log::OPTIMIZE_SCHEMA_VERSION,
        moot_version: env!("CARGO_PKG_VERSION").to_string(),
        panel: c.panel_arg.clone(),
        data: c.data.clone(),
        dimension: c.dimension.clone(),
        scale_min: c.panel.scale.min,
        scale_max: c.panel.scale.max,
        objective: c.objective.as_str().to_string(),
        threshold: c.threshold,
        max_iter: c.max_iter,
        seed: c.seed,
        per_cluster: c.per_cluster,
        train: train
            .iter()
            .zip(clusters)
            .map(|(&i, &cluster)| log::ExampleRef { id: c.examples[i].item.id.clone(), cluster })
            .collect(),
        holdout: holdout.iter().map(|&i| c.examples[i].item.id.clone()).collect(),
        models,
        prompt: JudgePrompt::of(&c.panel),
        review: c.review,
        test: test.iter().map(|&i| c.examples[i].item.id.clone()).collect(),
        cluster_by: c.design.cluster_by.as_ref().map(|b| b.field.clone()),
        few_shot: c.design.few_shot,
        preset: c.design.preset.clone(),
        options: c.design.options.clone(),
    }
}

pub(super) fn failed_start(config: &OptimizeConfig, rec: &OptRecorder, error: String) -> OptOutcome {
    rec.emit(OptKind::OptimizeEnded {
        status: OptStatus::Failed,
        reason: "could not start".into(),
        best: None,
        best_holdout: None,
        chosen_by: "best".into(),
        output: None,
        error: Some(error.clone()),
        test: None,
    });
    let _ = config;
    OptOutcome {
        status: OptStatus::Failed,
        reason: "could not start".into(),
        iterations: Vec::new(),
        best: None,
        prompt: None,
        output: None,
        error: Some(error),
        write_error: rec.write_error(),
        test: None,
    }
}

impl Loop {
    /// The result: the iteration a person chose, else the best held-out S.
    pub(super) fn chosen(&self) -> (Option<IterationResult>, &'static str) {
        let chosen = match self.stop {
            Some(Some(i)) => self.results.iter().find(|r| r.iteration == i),
            _ => None,
        };
        let chosen_by = if chosen.is_some() { "human" } else { "best" };
        (chosen.or_else(|| best_of(&self.results)).cloned(), chosen_by)
    }

    pub(super) fn finish(
        self,
        status: OptStatus,
        reason: String,
        error: Option<String>,
        (chosen, chosen_by): (Option<IterationResult>, &'static str),
        test: Option<f64>,
    ) -> OptOutcome {
        let mut error = error;
        let mut output = None;
        if let (Some(r), Some(path)) = (&chosen, &self.config.output) {
            match output::write_panel(&self.config, &r.prompt, r.iteration, r.holdout, path) {
                Ok(p) => output = Some(p),
                Err(e) => error = Some(error.map_or(e.clone(), |prev| format!("{prev}; {e}"))),
            }
        }
        let status = if chosen.is_none() && status == OptStatus::Completed { OptStatus::Failed } else { status };
        let error = if chosen.is_none() && error.is_none() {
            Some("no iteration has a held-out score".to_string())
        } else {
            error
        };
        self.rec.emit(OptKind::OptimizeEnded {
            status,
            reason: reason.clone(),
            best: chosen.as_ref().map(|r| r.iteration),
            best_holdout: chosen.as_ref().and_then(|r| r.holdout),
            chosen_by: chosen_by.into(),
            output: output.as_ref().map(|p| p.display().to_string()),
            error: error.clone(),
            test,
        });
        OptOutcome {
            status,
            reason,
            iterations: self.results,
            best: chosen.as_ref().map(|r| r.iteration),
            prompt: chosen.map(|r| r.prompt),
            output,
            error,
            write_error: self.rec.write_error(),
            test,
        }
    }
}
