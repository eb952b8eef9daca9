//! The stages every protocol is composed of, and the runner that takes a
//! run through a [`Composition`]: each stage in its order; a run of stages
//! that work on each group apart (discuss, judge, verify) goes group by
//! group side by side, each group skipping a stage whose `when` does not
//! hold for it. A person's stop skips to the aggregate; quitting ends there.
//!
//! A stage is one folder (or file) here: its runner, its prompts and what
//! it records. Its declaration (name, settings, roles) is in
//! `panel::composition::stages`; [`run`] is the one place that dispatches
//! on a stage's kind.

mod aggregate;
mod assess;
pub(crate) mod compare;
mod discuss;
mod evaluate;
mod journey;
mod judge;
mod review;
mod score;
mod steps;
mod verify;

use futures::future::join_all;

pub use steps::{CachedSteps, REVIEW_AUTHOR, StepsCache};

use super::runtime::Run;
use crate::engine::labels::{self, Pair};
use crate::panel::composition::{Composition, Reach, Stage, StageKind, When};
use journey::Journey;

/// Run the panel's protocol to its end: the stages its declaration builds
/// from its settings, or those the panel wrote.
pub(crate) async fn run_protocol(run: &Run) {
    match &run.composition {
        Some(composition) => self::run(run, composition).await,
        None => run.fail(format!("{} has no stages for this run", run.panel.protocol.kind.as_str())),
    }
}

/// Take the run through `composition`'s stages.
pub(crate) async fn run(run: &Run, composition: &Composition) {
    let journey = Journey::default();
    let mut assessed = Vec::new();
    let mut compared = None;
    // A run that discusses a pair of candidates (the pairwise modes of the
    // discussions) asks every stage for label verdicts on it.
    let cands = run.item().candidates.clone().unwrap_or_default();
    let by_labels = run.panel.protocol.compares_pairs() && !composition.has(StageKind::Compare);
    let pair = if by_labels {
        match Pair::of(run, &cands) {
            Some(pair) => Some(pair),
            // The engine refuses such an item before the run starts.
            None => return,
        }
    } else {
        None
    };
    let pair = pair.as_ref();
    let stages = &composition.stages;
    let mut i = 0;
    while i < stages.len() {
        let stage = &stages[i];
        if run.quit.is_cancelled() {
            return;
        }
        if stage.kind == StageKind::Aggregate {
            // Pairs compared are decided pair by pair; a comparison that
            // could not start (the run has failed) has nothing to decide.
            match (&compared, composition.has(StageKind::Compare)) {
                (Some(compared), _) => compare::decide(run, compared),
                (None, true) => {}
                (None, false) => aggregate::run(run, stage, &journey, pair).await,
            }
            i += 1;
            continue;
        }
        if run.stop.is_cancelled() {
            i += 1;
            continue;
        }
        if stage.spec().reach == Reach::Group {
            let end = stages[i..].iter().position(|s| s.spec().reach != Reach::Group).map_or(stages.len(), |n| i + n);
            let segment = &stages[i..end];
            join_all(run.panel.groups.iter().map(|g| per_group(run, segment, &g.name, &journey, pair))).await;
            i = end;
            continue;
        }
        match stage.kind {
            StageKind::Steps => steps::run(run, stage).await,
            StageKind::Evaluate => {
                evaluate::run(run, stage, pair).await;
                journey.set_evaluated();
                journey.scores_moved(run);
            }
            StageKind::Score => {
                if let Some(how) = score::run(run, stage).await {
                    journey.set_account(how);
                }
                journey.set_evaluated();
                journey.scores_moved(run);
            }
            StageKind::Assess => {
                assessed = assess::run(run, stage).await;
                journey.set_evaluated();
                journey.scores_moved(run);
            }
            StageKind::Review => {
                if let Some(how) = review::run(run, stage, &assessed).await {
                    journey.set_account(how);
                }
                journey.scores_moved(run);
            }
            StageKind::Compare => compared = compare::run(run, stage).await,
            StageKind::Discuss | StageKind::Judge | StageKind::Verify | StageKind::Aggregate => {
                unreachable!("group stages and the aggregate are run above")
            }
        }
        i += 1;
    }
}

/// One group through a run of group stages.
async fn per_group(run: &Run, stages: &[Stage], group: &str, journey: &Journey, pair: Option<&Pair<'_>>) {
    for stage in stages {
        if run.stop.is_cancelled() {
            return;
        }
        if !holds(run, stage.when, group, journey, pair.is_some()) {
            continue;
        }
        match stage.kind {
            StageKind::Discuss => discuss::run(run, stage, group, journey, pair).await,
            StageKind::Judge => judge::run(run, group, journey, pair).await,
            StageKind::Verify => verify::run(run, group, journey).await,
            StageKind::Steps
            | StageKind::Evaluate
            | StageKind::Score
            | StageKind::Assess
            | StageKind::Review
            | StageKind::Compare
            | StageKind::Aggregate => {
                unreachable!("panel stages are run one at a time")
            }
        }
    }
}

/// Whether `when` holds for `group`: its latest consensus check (made now,
/// by the panel's rule, or on labels the same label from everyone, where
/// none was).
fn holds(run: &Run, when: When, group: &str, journey: &Journey, by_labels: bool) -> bool {
    if when == When::Always {
        return true;
    }
    let known = journey.group(group).agreed;
    let agreed = match known {
        Some(a) => a,
        None => {
            let a =
                if by_labels { labels::check(run, group, None).is_some() } else { run.check_consensus(group, None) };
            journey.group(group).agreed = Some(a);
            a
        }
    };
    match when {
        When::NoConsensus => !agreed,
        When::Consensus => agreed,
        When::Always => true,
    }
}
