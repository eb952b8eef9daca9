//! Which panes each stage of a run brings to the live screen beside the
//! agents' (the one place a stage's panes are registered): a discussion its
//! moderator and its consensus check (or, with a summarizer, the summary),
//! the scoring the evaluation steps and the scores, a meta-evaluator's
//! review the table of its changes. The result and the transcript follow
//! every run's.

use crate::panel::composition::{Stage, StageKind};
use crate::tui::app::Focus;

/// The panes `stage` shows.
pub fn panes(stage: &Stage) -> Vec<Focus> {
    match stage.kind {
        StageKind::Discuss if stage.flag("summarizer") => vec![Focus::Moderator, Focus::Summary],
        StageKind::Discuss => vec![Focus::Moderator, Focus::Consensus],
        // The steps beside the scores they are scored with (a review's layout has its own panes).
        StageKind::Score => vec![Focus::Steps, Focus::Scores],
        // The review's changes, in the consensus pane's place (see `sage::draw_table`).
        StageKind::Review => vec![Focus::Consensus],
        StageKind::Steps
        | StageKind::Evaluate
        | StageKind::Assess
        | StageKind::Judge
        | StageKind::Verify
        | StageKind::Compare
        | StageKind::Aggregate => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::panel::composition::Composition;
    use crate::panel::{Panel, Screen};

    fn side(c: &Composition) -> Vec<Focus> {
        let mut v: Vec<Focus> = Vec::new();
        for f in c.stages.iter().flat_map(panes) {
            if !v.contains(&f) {
                v.push(f);
            }
        }
        v
    }

    #[test]
    fn every_bundled_panel_keeps_the_panes_of_its_screen() {
        for name in Panel::bundled_names() {
            let panel = Panel::bundled(name).unwrap();
            let c = panel.protocol.composition().unwrap();
            let expected = match panel.protocol.screen() {
                Screen::Steps => vec![Focus::Steps, Focus::Scores],
                Screen::Review => vec![Focus::Consensus],
                Screen::Pairs => Vec::new(),
                Screen::Discussion if c.of(StageKind::Discuss).any(|d| d.flag("summarizer")) => {
                    vec![Focus::Moderator, Focus::Summary]
                }
                Screen::Discussion => vec![Focus::Moderator, Focus::Consensus],
            };
            assert_eq!(side(&c), expected, "{name}");
        }
    }

    #[test]
    fn a_run_without_a_discussion_shows_no_moderator() {
        let c = Composition::new(vec![
            Stage::new(StageKind::Evaluate),
            Stage::new(StageKind::Verify),
            Stage::new(StageKind::Aggregate),
        ]);
        assert!(side(&c).is_empty());
    }
}
