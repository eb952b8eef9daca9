//! A discussion of a pair by labels (the pairwise modes): the members'
//! turns end with a label verdict (A, B or tie), a group agrees when every
//! member gives the same label, and the stage's `stop`, `talk`, `order`
//! and `summarizer` mean what they mean for scores.

use super::super::journey::Journey;
use super::talk_to_end;
use crate::engine::discussion::turns::Ask;
use crate::engine::labels::{self, Pair, Talk, Until};
use crate::engine::runtime::Run;
use crate::engine::stages::compare::prompts::render_pair;
use crate::panel::composition::Stage;

pub(super) async fn run(run: &Run, stage: &Stage, group: &str, journey: &Journey, pair: &Pair<'_>) {
    let stops = stage.stops_on_consensus();
    let until = match stage.choice("stop").as_str() {
        "none" => Until::AllRounds,
        "consensus" => Until::Agreed,
        _ => Until::AgreedOrStill,
    };
    let ask = if stage.is("talk", "review") { Ask::Review } else { Ask::Discuss };
    // A talk that stops on agreement does not begin when the first verdicts agree.
    let mut agreed = if stops && journey.evaluated() { labels::check(run, group, Some(0)).is_some() } else { false };
    if !agreed {
        let mut talk = Talk::new(run, group, pair, until, ask);
        talk.summarized = stage.flag("summarizer");
        let subject = render_pair(run.item(), &pair.noun, &pair.a.text, &pair.b.text);
        talk_to_end(run, stage, group, &mut talk, &subject).await;
        agreed = talk.agreed.is_some();
    }
    journey.record_finals(run, group);
    if stops {
        let mut path = journey.group(group);
        path.settled = true;
        path.agreed = Some(agreed);
    }
}
