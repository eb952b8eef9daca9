//! ChatEval's pairwise mode, as papers 000 and 004 ran ChatEval beside their
//! own methods: the agents compare an item's two candidates and discuss
//! which is better (A, B or tie) under the panel's strategy and
//! `first_round`; the rounds always run to `turns` (ChatEval does not stop on
//! agreement). A group's result is the majority of its agents' last labels
//! (more than half, otherwise tie); several groups' results combine by the
//! same rule.

use futures::future::join_all;

use super::{Strategy, discuss, independent_first, plan};
use crate::engine::discussion::turns::Ask;
use crate::engine::labels::{self, GroupOutcome, Pair, Talk, Until};
use crate::engine::runtime::Run;
use crate::engine::stages::compare::prompts::render_pair;

pub(super) async fn run(run: &Run) {
    let Some(cands) = run.item().candidates.clone() else { return };
    let Some(pair) = Pair::of(run, &cands) else { return };
    if independent_first(run) {
        labels::first_verdicts(run, &pair).await;
    }
    let (strategy, turns) = plan(run);
    let subject = render_pair(run.item(), &pair.noun, &pair.a.text, &pair.b.text);
    let groups = run.panel.groups.iter().map(|g| {
        let (pair, subject) = (&pair, &subject);
        async move {
            let mut talk = Talk::new(run, &g.name, pair, Until::AllRounds, Ask::Discuss);
            talk.summarized = strategy == Strategy::SimultaneousSummarizer;
            discuss(run, &g.name, strategy, turns, &mut talk, subject).await;
            let label = labels::majority(run, &g.name);
            let note = match label {
                Some(_) => format!("{}: majority of each agent's last verdict: {}.", g.name, pair.label_words(label)),
                None => format!("{}: no result: no agent gave a readable verdict.", g.name),
            };
            GroupOutcome { label, method: "majority", note }
        }
    });
    let outcomes = join_all(groups).await;
    if run.quit.is_cancelled() {
        return;
    }
    labels::publish_result(run, &pair, &outcomes);
}
