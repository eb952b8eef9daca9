//! The page of one session, built from its folded view
//! ([`SessionView::from_events`]): the header, the item, the result, each
//! agent's stages, the score timelines, consensus, revisions, pairwise
//! comparisons, then the whole transcript in log order.

mod sections;
mod transcript;

use super::layout::{self, folded, human_mark, meta_list, score, text_block};
use super::markup::Html;
use crate::session::fold::{AggregateView, SessionView, thousands};
use crate::session::stages::{self, with_overall};

/// The whole page of a session.
pub fn session_page(v: &SessionView) -> String {
    let mut h = Html::new();
    body(&mut h, v);
    layout::page(&title(v), &h)
}

/// The page's title: `moot session ID — panel, item`.
pub fn title(v: &SessionView) -> String {
    let mut t = format!("moot session {}", if v.session_id.is_empty() { "(no id)" } else { &v.session_id });
    let panel = v.panel.as_ref().map(|p| p.name.as_str()).unwrap_or("");
    let item = v.item.as_ref().map(|i| i.id.as_str()).unwrap_or("");
    if !panel.is_empty() || !item.is_empty() {
        t.push_str(&format!(" — {panel}, item {item}"));
    }
    t
}

/// The page's content, without the shell (the report's index reuses it).
pub fn body(h: &mut Html, v: &SessionView) {
    header(h, v);
    item(h, v);
    result(h, v);
    stages_table(h, v);
    sections::timelines(h, v);
    sections::consensus(h, v);
    sections::revisions(h, v);
    sections::pairwise(h, v);
    transcript::transcript(h, v);
}

/// Milliseconds as `850 ms`, `12.3 s`, `4 min 05 s`.
pub fn duration(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms} ms"),
        1000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} min {:02} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

fn status(v: &SessionView) -> String {
    let mut s = if v.state.is_ended() { v.state.label().to_string() } else { "incomplete: the log has no end".into() };
    if let Some(e) = &v.end_error {
        s.push_str(&format!(" — {e}"));
    }
    if let Some(r) = &v.end_reason {
        s.push_str(&format!(" ({r})"));
    }
    s
}

fn header(h: &mut Html, v: &SessionView) {
    let u = &v.usage.total;
    let tokens = format!(
        "{} in, {} out, {} calls{}",
        thousands(u.input_tokens),
        thousands(u.output_tokens),
        thousands(v.usage.calls),
        if u.estimated { " (some counts estimated)" } else { "" }
    );
    let roles: Vec<String> = v.roles.iter().map(|(r, m)| format!("{r}: {}/{}", m.provider, m.model)).collect();
    meta_list(
        h,
        &[
            ("panel", v.panel.as_ref().map(|p| p.name.clone()).unwrap_or_else(|| "(not recorded)".into())),
            ("protocol", v.protocol.clone()),
            ("method", crate::panel::Panel::method_line(v.panel.as_ref(), v.preset, &v.departures)),
            ("item", v.item.as_ref().map(|i| i.id.clone()).unwrap_or_default()),
            ("status", status(v)),
            ("started", v.started.map(|t| t.to_rfc3339()).unwrap_or_default()),
            ("duration", duration(v.elapsed_ms())),
            ("tokens", tokens),
            ("cost", u.cost.map(|c| format!("{c:.4}")).unwrap_or_else(|| "no prices configured".into())),
            ("roles", roles.join("; ")),
            ("seed", v.seed.to_string()),
            ("moot", format!("{} (log schema {})", v.moot_version, v.schema_version)),
            ("provider", v.provider_note.clone().unwrap_or_default()),
        ],
    );
    h.elem("h2", &[], "Agents");
    let header: Vec<String> =
        ["agent", "group", "role", "provider", "model", "turns", "tokens"].iter().map(|s| s.to_string()).collect();
    let rows: Vec<Vec<String>> = v
        .agents
        .iter()
        .map(|a| {
            vec![
                a.info.name.clone(),
                a.info.group.clone(),
                a.info.role.clone(),
                a.info.provider.clone(),
                a.info.model.clone(),
                a.turns.len().to_string(),
                a.usage.total().to_string(),
            ]
        })
        .collect();
    layout::table(h, "agents", &header, &rows);
}

fn item(h: &mut Html, v: &SessionView) {
    let Some(item) = &v.item else { return };
    h.elem("h2", &[], "Item");
    folded(h, &format!("item {} ({} characters)", item.id, item.content.chars().count()), &item.content);
    if let Some(c) = &item.context {
        folded(h, "context", c);
    }
    if let Some(r) = &item.reference {
        folded(h, "reference", r);
    }
    for c in item.candidates.iter().flatten() {
        folded(h, &format!("candidate {}", c.id), &c.text);
    }
    if let Some(human) = &item.human {
        h.open("div", &[]).text("human ratings in the item: ");
        layout::score_line(h, human.iter().map(|(k, x)| (k.clone(), score(*x))));
        h.close("div");
    }
}

fn result(h: &mut Html, v: &SessionView) {
    h.elem("h2", &[], "Result");
    match &v.aggregate {
        Some(a) => aggregate(h, v, "panel", a, &v.stages.panel.set_by),
        None => {
            h.elem("p", &[], "No panel-wide result in this log.");
        }
    }
    for g in &v.groups {
        if let Some(a) = &g.aggregate {
            let set_by = v.stages.group(&g.name).map(|r| r.set_by.clone()).unwrap_or_default();
            aggregate(h, v, &format!("group {}", g.name), a, &set_by);
        }
    }
}

fn aggregate(
    h: &mut Html,
    v: &SessionView,
    whose: &str,
    a: &AggregateView,
    set_by: &std::collections::BTreeMap<String, String>,
) {
    h.open("div", &[("class", "result"), ("data-result", whose)]).elem("h3", &[], whose);
    if let Some(why) = &a.no_result {
        h.elem("p", &[("class", "error")], &format!("no result: {why}"));
    }
    let mut pairs: Vec<(String, String)> = Vec::new();
    for k in v.score_keys() {
        if let Some(x) = a.score(&k) {
            pairs.push((k.clone(), score(x)));
        } else if let Some(l) = a.labels.get(&k) {
            pairs.push((k.clone(), l.clone()));
        }
    }
    layout::score_line(h, pairs);
    for (k, from) in &a.original {
        let to = a.score(k).map(score).unwrap_or_default();
        h.open("div", &[("class", "entry human")]).text(&format!("{k}: {} → {to} ", score(*from)));
        human_mark(h, set_by.get(k).map(String::as_str).unwrap_or("a person"));
        h.close("div");
    }
    for (k, from) in &a.original_labels {
        h.open("div", &[("class", "entry human")])
            .text(&format!("{k}: {from} → {} ", a.labels.get(k).cloned().unwrap_or_default()));
        human_mark(h, set_by.get(k).map(String::as_str).unwrap_or("a person"));
        h.close("div");
    }
    if let Some(m) = &a.method {
        h.elem("p", &[("class", "what")], &format!("method: {m}"));
    }
    if !a.left_out.is_empty() {
        h.elem("p", &[], &format!("left out for having no result: {}", a.left_out.join(", ")));
    }
    if !a.ranking.is_empty() {
        let header: Vec<String> = ["candidate", "wins", "losses", "ties", "decided by"].map(String::from).to_vec();
        let rows: Vec<Vec<String>> = a
            .ranking
            .iter()
            .map(|r| {
                vec![
                    r.candidate.clone(),
                    r.wins.to_string(),
                    r.losses.to_string(),
                    r.ties.to_string(),
                    if r.human { "people too".into() } else { "the panel".into() },
                ]
            })
            .collect();
        layout::table(h, "ranking", &header, &rows);
    }
    if !a.feedback.is_empty() {
        text_block(h, "feedback", &a.feedback);
    }
    h.close("div");
}

/// Each agent's initial, final and human-adjusted scores ([`crate::session::stages`]).
fn stages_table(h: &mut Html, v: &SessionView) {
    if v.stages.agents.iter().all(|a| a.initial.is_none() && a.final_.is_none()) {
        return;
    }
    h.elem("h2", &[], "Scores by stage");
    let keys = v.score_keys();
    let mut header: Vec<String> = vec!["agent".into(), "group".into(), "stage".into()];
    header.extend(keys.iter().cloned());
    header.push("set by (human)".into());
    let mut rows = Vec::new();
    for a in &v.stages.agents {
        for (stage, ev, set_by) in [
            (stages::label(&v.protocol, stages::INITIAL), &a.initial, None),
            (stages::label(&v.protocol, stages::FINAL), &a.final_, None),
            (stages::HUMAN_ADJUSTED, &a.human_adjusted, Some(&a.set_by)),
        ] {
            let Some(ev) = ev else { continue };
            if set_by.is_some_and(|s| s.is_empty()) {
                continue;
            }
            let scores = with_overall(ev);
            let mut row = vec![a.name.clone(), a.group.clone(), stage.to_string()];
            row.extend(keys.iter().map(|k| match (scores.get(k), ev.labels.get(k)) {
                (Some(x), _) => score(*x),
                (None, Some(l)) => l.clone(),
                (None, None) => String::new(),
            }));
            row.push(
                set_by
                    .map(|s| s.iter().map(|(k, w)| format!("{k}={w}")).collect::<Vec<_>>().join(", "))
                    .unwrap_or_default(),
            );
            rows.push(row);
        }
    }
    layout::table(h, "stages", &header, &rows);
}
