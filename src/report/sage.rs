//! SAGEval in a report: what the meta-evaluator changed, per aspect, and the
//! new aspects it proposed, across a run's sessions; and the names of the
//! stages of a `sage-eval` panel (its `initial` stage is the evaluator's
//! values, its `final` stage the rectified ones).

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::build::{Row, Stage};
use super::load::ItemRecord;
use crate::paint::Paint;

/// Row metrics of this section, by aspect (`dimension`).
pub const LOWERED: &str = "sage_lowered";
pub const RAISED: &str = "sage_raised";
pub const RELABELLED: &str = "sage_relabelled";
/// Revisions a person rejected (the evaluator's value stands).
pub const REJECTED: &str = "sage_rejected";
/// Definitions proposed for an aspect.
pub const DEFINITIONS: &str = "sage_definitions";
/// Items for which a new aspect (the row's `dimension`) was proposed.
pub const NEW_ASPECT: &str = "sage_new_aspect";

/// A stage's name for a panel of `protocol`: `evaluator` and `rectified` for SAGEval.
pub fn stage_label(protocol: &str, stage: Stage) -> &'static str {
    crate::session::stages::label(protocol, stage.as_str())
}

fn row(panel: &str, dimension: &str, metric: &str, value: usize, n: usize) -> Row {
    Row {
        panel: panel.to_string(),
        dimension: Some(dimension.to_string()),
        group: None,
        agent: None,
        stage: None,
        metric: metric.to_string(),
        value: Some(value as f64),
        ci_low: None,
        ci_high: None,
        n: Some(n),
        dropped: None,
        undefined_reason: None,
        sources: None,
        system: None,
        raters: None,
        versus: None,
    }
}

/// Counts of the meta-evaluator's changes and proposals over `records` (one
/// panel's sessions); `n` is the number of sessions it reviewed: those of a
/// run whose scores a meta-evaluator reviewed (a `review` stage). Nothing for other runs,
/// nor for one this build does not know (it has no review to count).
pub fn rows(panel: &str, records: &[ItemRecord]) -> Vec<Row> {
    let reviewed: Vec<&ItemRecord> = records.iter().filter(|r| r.panel.reviewed).collect();
    if reviewed.is_empty() {
        return Vec::new();
    }
    let n = reviewed.len();
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut new_aspects: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &reviewed {
        for key in r.panel.keys.iter().filter(|k| *k != "overall") {
            for m in [LOWERED, RAISED, RELABELLED, REJECTED, DEFINITIONS] {
                counts.entry((key.as_str(), m)).or_default();
            }
        }
        for rev in &r.sage.revisions {
            let metric = match rev.direction() {
                Some("lowered") => LOWERED,
                Some("raised") => RAISED,
                Some(_) => RELABELLED,
                None => continue,
            };
            *counts.entry((rev.dimension.as_str(), metric)).or_default() += 1;
            if rev.decision.as_ref().is_some_and(|d| !d.accepted) {
                *counts.entry((rev.dimension.as_str(), REJECTED)).or_default() += 1;
            }
        }
        let mut seen: Vec<&str> = Vec::new();
        for p in &r.sage.proposals {
            match p.kind {
                crate::session::event::ProposalKind::Definition => {
                    *counts.entry((p.key.as_str(), DEFINITIONS)).or_default() += 1;
                }
                crate::session::event::ProposalKind::Aspect if !seen.contains(&p.key.as_str()) => {
                    seen.push(&p.key);
                    *new_aspects.entry(p.key.as_str()).or_default() += 1;
                }
                crate::session::event::ProposalKind::Aspect => {}
            }
        }
    }
    let mut out: Vec<Row> = counts.into_iter().map(|((d, m), v)| row(panel, d, m, v, n)).collect();
    let mut aspects: Vec<(&str, usize)> = new_aspects.into_iter().collect();
    aspects.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    out.extend(aspects.into_iter().map(|(k, v)| row(panel, k, NEW_ASPECT, v, n)));
    out
}

/// The table section: per aspect lowered / raised / relabelled / rejected,
/// then the proposed new aspects with the number of items.
pub fn write_table(rows: &[&Row], keys: &[String], out: &mut impl Write, paint: Paint) -> io::Result<()> {
    let get = |d: &str, m: &str| {
        rows.iter().find(|r| r.dimension.as_deref() == Some(d) && r.metric == m).and_then(|r| r.value).unwrap_or(0.0)
    };
    let Some(n) = rows.iter().find(|r| r.metric.starts_with("sage_")).and_then(|r| r.n) else { return Ok(()) };
    writeln!(out)?;
    writeln!(out, "{}", paint.bold(&format!("SAGE's changes ({n} items reviewed)")))?;
    let w = keys.iter().map(String::len).max().unwrap_or(6).max(6);
    writeln!(
        out,
        "{}",
        paint.dim(&format!(
            "{:<w$} {:>7} {:>6} {:>10} {:>18} {:>11}",
            "aspect", "lowered", "raised", "relabelled", "rejected by human", "definitions"
        ))
    )?;
    for k in keys.iter().filter(|k| *k != "overall") {
        writeln!(
            out,
            "{:<w$} {:>7} {:>6} {:>10} {:>18} {:>11}",
            k,
            get(k, LOWERED),
            get(k, RAISED),
            get(k, RELABELLED),
            get(k, REJECTED),
            get(k, DEFINITIONS)
        )?;
    }
    let proposed: Vec<String> = rows
        .iter()
        .filter(|r| r.metric == NEW_ASPECT)
        .map(|r| format!("{} ({})", r.dimension.as_deref().unwrap_or(""), r.value.unwrap_or(0.0)))
        .collect();
    if !proposed.is_empty() {
        writeln!(out, "new aspects proposed (items): {}", proposed.join(", "))?;
    }
    Ok(())
}
