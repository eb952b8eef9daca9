//! The round-table's pairwise mode, as paper 004 ran it beside CollabEval:
//! the agents compare an item's two candidates (A, B or tie) in the
//! round-table's order and start; the rounds end once every agent gives the
//! same label. A group that does not agree takes the vote its `result`
//! names: `majority`, a label more than half of the agents gave (one
//! without a readable verdict counts against every label), otherwise tie;
//! `confidence-weighted`, the label with the most confidence behind it (see
//! [`label_weight`](crate::engine::labels::label_weight)), tie
//! when two share the most. Several groups' results combine by majority.

use futures::future::join_all;

use super::{order, sequential};
use crate::engine::discussion;
use crate::engine::discussion::turns::Ask;
use crate::engine::labels::{self, GroupOutcome, Pair, Talk, Until};
use crate::engine::runtime::Run;
use crate::engine::vote::GroupRule;

pub(super) async fn run(run: &Run) {
    let Some(cands) = run.item().candidates.clone() else { return };
    let Some(pair) = Pair::of(run, &cands) else { return };
    let sequential = sequential(run);
    if !sequential {
        labels::first_verdicts(run, &pair).await;
    }
    let outcomes = join_all(run.panel.groups.iter().map(|g| discuss(run, &pair, &g.name, sequential))).await;
    if run.quit.is_cancelled() {
        return;
    }
    labels::publish_result(run, &pair, &outcomes);
}

async fn discuss(run: &Run, pair: &Pair<'_>, group: &str, sequential: bool) -> GroupOutcome {
    let mut agreed = if sequential { None } else { labels::check(run, group, Some(0)) };
    if agreed.is_none() {
        let ask = if sequential { Ask::Review } else { Ask::Discuss };
        let mut talk = Talk::new(run, group, pair, Until::Agreed, ask);
        discussion::discuss(run, group, &mut talk, order(run, group)).await;
        agreed = talk.agreed;
    }
    run.emit_finals(group);
    let rule = GroupRule::of(&run.panel.protocol);
    if let Some(label) = agreed {
        let note = format!("{group}: every agent agreed: {}.", pair.label_words(Some(label)));
        return GroupOutcome { label: Some(label), method: rule.method(), note };
    }
    let (label, how) = match rule {
        GroupRule::ConfidenceWeighted => {
            (labels::weighted(run, group), "the verdict with the most confidence behind it")
        }
        _ => (labels::majority(run, group), "majority of the last verdicts"),
    };
    let note = match label {
        Some(_) => format!("{group}: no agreement within the rounds; {how}: {}.", pair.label_words(label)),
        None => format!("{group}: no result: no agent gave a readable verdict."),
    };
    GroupOutcome { label, method: rule.method(), note }
}
