//! The "Binary human values" section of the table: per dimension whose
//! human values have two levels, each stage's (and ROUGE-L's) ROC AUC and,
//! where the judge's values are the same two levels, MASA's detection
//! metrics.

use std::io::{self, Write};

use super::build::{PanelSummary, Row, Stage};
use super::format::{Footnotes, lpad, pad, short_cell, value_cell};
use crate::paint::Paint;

/// Writes the section for one panel's rows (nothing without `roc_auc` rows).
pub(crate) fn write_table(
    panel: &PanelSummary,
    rows: &[&Row],
    out: &mut impl Write,
    paint: Paint,
    notes: &mut Footnotes,
) -> io::Result<()> {
    let auc: Vec<&Row> = rows.iter().copied().filter(|r| r.metric == "roc_auc" && r.agent.is_none()).collect();
    if auc.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        paint.bold(
            "Binary human values (the higher value positive): ROC AUC of the scores; where the judge gives the same two \
             values, detection as MASA reports it (accuracy; precision, sensitivity, F1 macro-averaged over the two \
             classes; specificity of the positive class)"
        )
    )?;
    let dim_w = panel.keys.iter().map(|k| k.len()).max().unwrap_or(9).max(9);
    let group_w = panel.groups.iter().map(|g| g.len()).max().unwrap_or(10).max(10);
    writeln!(
        out,
        "{}",
        paint.dim(&format!(
            "{} {} {} {} {} {} {} {} {} {}",
            pad("dimension", dim_w),
            pad("group", group_w),
            pad("stage", 14),
            lpad("n", 5),
            pad("roc auc", 22),
            pad("accuracy", 8),
            pad("precision", 9),
            pad("sensitiv.", 9),
            pad("specific.", 9),
            "F1"
        ))
    )?;
    let find = |r: &Row, metric: &str| {
        rows.iter().copied().find(|x| {
            x.metric == metric
                && x.agent.is_none()
                && x.dimension == r.dimension
                && x.group == r.group
                && x.stage == r.stage
        })
    };
    let mut last_dim: Option<&str> = None;
    for r in auc {
        let dim = r.dimension.as_deref().unwrap_or("");
        let group = r.group.as_deref().unwrap_or(if r.stage == Some(Stage::RougeL) { "" } else { "all agents" });
        let stage = r.stage.map_or("", |s| super::sage::stage_label(&panel.protocol, s));
        let cell = |m: &str, w: usize, notes: &mut Footnotes| pad(&short_cell(find(r, m), notes), w);
        let line = format!(
            "{} {} {} {} {} {} {} {} {} {}",
            pad(if last_dim == Some(dim) { "" } else { dim }, dim_w),
            pad(group, group_w),
            pad(stage, 14),
            lpad(&r.n.map(|n| n.to_string()).unwrap_or_default(), 5),
            pad(&value_cell(Some(r), notes), 22),
            cell("detection_accuracy", 8, notes),
            cell("detection_precision", 9, notes),
            cell("detection_sensitivity", 9, notes),
            cell("detection_specificity", 9, notes),
            short_cell(find(r, "detection_f1"), notes),
        );
        writeln!(out, "{}", line.trim_end())?;
        last_dim = Some(dim);
    }
    Ok(())
}
