//! The session page's sections over the whole run: score timelines,
//! consensus checks per group, a meta-evaluator's revisions and proposals
//! (SAGEval), pairwise comparisons.

use super::super::layout::{self, human_mark, score, text_block};
use super::super::markup::Html;
use super::super::svg::{self, Series};
use crate::session::fold::{SessionView, TurnState, consensus_check, consensus_words};
use crate::session::pairwise::{ComparisonView, DecisionView, Label};

/// One chart per scored key: each agent's score at each evaluated turn.
pub fn timelines(h: &mut Html, v: &SessionView) {
    let keys = v.score_keys();
    let names: Vec<&str> = v.agents.iter().map(|a| a.info.name.as_str()).collect();
    let mut series: Vec<Vec<Series>> = keys
        .iter()
        .map(|_| names.iter().map(|n| Series { name: n.to_string(), points: Vec::new() }).collect())
        .collect();
    let mut position = 0;
    for t in &v.turns {
        let Some(ev) = t.evaluation.as_ref().filter(|_| t.state == TurnState::Completed) else { continue };
        if v.pairwise.hides_turn(t.id) {
            continue;
        }
        let Some(a) = names.iter().position(|n| *n == t.agent) else { continue };
        let scored: Vec<(usize, f64)> =
            keys.iter().enumerate().filter_map(|(k, key)| ev.score(key).map(|x| (k, x))).collect();
        if scored.is_empty() {
            continue;
        }
        position += 1;
        for (k, x) in scored {
            series[k][a].points.push((position, x));
        }
    }
    if position == 0 {
        return;
    }
    let scale = v.panel.as_ref().map(|p| (p.scale.min, p.scale.max));
    h.elem("h2", &[], "Score timelines");
    h.elem("p", &[("class", "what")], "Each agent's scores at each evaluated turn of the session, in order.");
    h.open("div", &[("class", "plots")]);
    for (key, s) in keys.iter().zip(&series) {
        if s.iter().all(|s| s.points.is_empty()) {
            continue;
        }
        let range = scale.unwrap_or_else(|| {
            let all = s.iter().flat_map(|s| s.points.iter().map(|p| p.1));
            all.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)))
        });
        h.open("figure", &[("class", "plot")]).elem("figcaption", &[], key);
        svg::timeline(h, key, position, range, s);
        h.close("figure");
    }
    h.close("div");
}

/// Every consensus check, per group.
pub fn consensus(h: &mut Html, v: &SessionView) {
    if v.groups.iter().all(|g| g.consensus.is_empty()) {
        return;
    }
    let check = consensus_check(&v.protocol, v.panel.as_ref());
    h.elem("h2", &[], "Consensus");
    for g in v.groups.iter().filter(|g| !g.consensus.is_empty()) {
        h.elem("h3", &[], &format!("group {}", g.name));
        let keys: Vec<String> = {
            let mut k: Vec<String> = g.consensus.iter().flat_map(|c| c.spread.keys().cloned()).collect();
            k.sort();
            k.dedup();
            k
        };
        let mut header: Vec<String> = vec!["round".into(), "check".into()];
        header.extend(keys.iter().map(|k| format!("spread {k}")));
        let rows: Vec<Vec<String>> = g
            .consensus
            .iter()
            .map(|c| {
                let mut row = vec![
                    match c.round {
                        Some(0) => "first evaluations".into(),
                        Some(r) => r.to_string(),
                        None => String::new(),
                    },
                    consensus_words(check, c.reached, &c.rule),
                ];
                row.extend(keys.iter().map(|k| c.spread.get(k).map(|x| score(*x)).unwrap_or_default()));
                row
            })
            .collect();
        layout::table(h, "consensus", &header, &rows);
    }
}

/// A meta-evaluator's revisions and proposals, with people's decisions.
pub fn revisions(h: &mut Html, v: &SessionView) {
    if v.sage.is_empty() {
        return;
    }
    h.elem("h2", &[], "Revisions");
    h.open("table", &[("class", "revisions")]).open("tr", &[]);
    for c in ["by", "agent", "dimension", "from", "to", "reason", "decision"] {
        h.elem("th", &[], c);
    }
    h.close("tr");
    for r in &v.sage.revisions {
        h.open("tr", &[]);
        let from = r.from.as_ref().map(ToString::to_string).unwrap_or_else(|| "none".into());
        for c in [&r.by, &r.agent, &r.dimension, &from, &r.to.to_string()] {
            h.elem("td", &[], c);
        }
        h.open("td", &[]);
        text_block(h, "reason", &r.reason);
        h.close("td").open("td", &[]);
        match &r.decision {
            Some(d) => {
                h.text(if d.accepted { "accepted " } else { "rejected " });
                human_mark(h, &d.author);
            }
            None => {
                h.text("undecided");
            }
        }
        h.close("td").close("tr");
    }
    h.close("table");
    if v.sage.proposals.is_empty() {
        return;
    }
    h.elem("h3", &[], "Proposals");
    for p in &v.sage.proposals {
        let human = p.adopted.is_some();
        h.open("div", &[("class", if human { "entry human" } else { "entry" })]);
        h.elem("span", &[("class", "who")], &p.by).text(&format!(" proposes {} {} ", p.kind.as_str(), p.key));
        if let Some(s) = p.score {
            h.text(&format!("(scored {}) ", score(s)));
        }
        if let Some((path, author)) = &p.adopted {
            h.text(&format!("adopted into {path} "));
            human_mark(h, author);
        }
        text_block(h, "definition", &p.definition);
        text_block(h, "reason", &p.reason);
        h.close("div");
    }
}

fn label(l: Option<Label>) -> String {
    l.map(|l| l.as_str().to_string()).unwrap_or_else(|| "—".into())
}

fn decision_row(d: &DecisionView) -> Vec<String> {
    vec![
        d.judge.clone().unwrap_or_else(|| "panel".into()),
        label(d.first_order),
        label(d.swapped_order),
        d.winner.clone().unwrap_or_else(|| "tie".into()),
        d.flip.map(|f| f.describe().to_string()).unwrap_or_default(),
        d.no_result.clone().unwrap_or_default(),
    ]
}

/// Pairwise comparisons: each order's verdicts, each judge's decision, the
/// panel's, and people's settlements, votes and labels.
pub fn pairwise(h: &mut Html, v: &SessionView) {
    if v.pairwise.comparisons.is_empty() {
        return;
    }
    h.elem("h2", &[], "Pairwise comparisons");
    for c in &v.pairwise.comparisons {
        comparison(h, v, c);
    }
}

fn comparison(h: &mut Html, v: &SessionView, c: &ComparisonView) {
    h.open("section", &[("class", "pair")]);
    if !v.pairwise.revealed(c) {
        h.elem("h3", &[], "a blind pair");
        h.elem("p", &[], "Blind run: the names and verdicts stay hidden until a person labels the pair or abstains.");
        h.close("section");
        return;
    }
    h.elem("h3", &[], &format!("{} vs {}", c.first, c.second));
    if !c.verdicts.is_empty() {
        h.open("table", &[("class", "verdicts")]).open("tr", &[]);
        for col in ["judge", "order shown", "vote", "verdict", "criteria", "confidence", "reasoning"] {
            h.elem("th", &[], col);
        }
        h.close("tr");
        for vd in &c.verdicts {
            let order = if vd.swapped { format!("{} first", c.second) } else { format!("{} first", c.first) };
            let criteria: Vec<String> = vd.criteria.iter().map(|(k, l)| format!("{k}: {}", l.as_str())).collect();
            h.open("tr", &[]);
            for cell in [
                vd.judge.clone(),
                order,
                vd.vote.to_string(),
                vd.label.as_str().to_string(),
                criteria.join(", "),
                vd.confidence.map(|x| x.to_string()).unwrap_or_default(),
            ] {
                h.elem("td", &[], &cell);
            }
            h.open("td", &[]);
            text_block(h, "reasoning", &vd.reasoning);
            h.close("td").close("tr");
        }
        h.close("table");
    }
    let header: Vec<String> =
        ["judge", "first order", "swapped order", "preferred", "orders", "no result"].map(String::from).to_vec();
    let rows: Vec<Vec<String>> = c.decisions.iter().chain(c.panel.as_ref()).map(decision_row).collect();
    if !rows.is_empty() {
        layout::table(h, "decisions", &header, &rows);
    }
    let preferred = |w: &Option<String>| w.clone().map(|w| format!("{w} preferred")).unwrap_or_else(|| "tie".into());
    if let Some(s) = &c.settled {
        h.open("div", &[("class", "entry human")]).text(&format!("settled: {} ", preferred(&s.winner)));
        human_mark(h, &s.author);
        h.close("div");
    }
    for p in &c.votes {
        h.open("div", &[("class", "entry human")]).text(&format!("voted: {} ", preferred(&p.winner)));
        human_mark(h, &p.author);
        h.close("div");
    }
    if let Some(a) = &c.abstained {
        h.open("div", &[("class", "entry human")]).text("abstained: the panel's decision stands ");
        human_mark(h, a);
        h.close("div");
    }
    if let Some(l) = &c.label {
        h.open("div", &[("class", "entry human")]).text(&format!("labelled blind: {} ", preferred(&l.winner)));
        human_mark(h, &l.author);
        h.close("div");
    }
    h.close("section");
}
