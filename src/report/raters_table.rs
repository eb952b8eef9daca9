//! The "Human raters" section of the table: per dimension, agreement among
//! the items' named raters, each pair's κ, the panel's result against the
//! raters' mean and majority, and leave-one-rater-out correlations.

use std::io::{self, Write};

use super::build::{PanelSummary, Row};
use super::format::{Footnotes, lpad, pad, short_cell};
use crate::paint::Paint;

/// Whether a row belongs to the section.
pub fn is_rater_row(r: &Row) -> bool {
    r.metric.starts_with("raters_")
}

/// Writes the section for one panel's rows (nothing when none are rater rows).
pub(crate) fn write_table(
    panel: &PanelSummary,
    rows: &[&Row],
    out: &mut impl Write,
    paint: Paint,
    notes: &mut Footnotes,
) -> io::Result<()> {
    let rows: Vec<&Row> = rows.iter().copied().filter(|r| is_rater_row(r)).collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{}", paint.bold(&format!("Human raters ({})", panel.raters.join(", "))))?;
    let find = |key: &str, metric: &str, raters: Option<&[String]>| {
        rows.iter()
            .copied()
            .find(|r| r.dimension.as_deref() == Some(key) && r.metric == metric && r.raters.as_deref() == raters)
    };
    let n_of = |r: Option<&Row>| r.and_then(|r| r.n).map(|n| n.to_string()).unwrap_or_default();
    let name_w = panel.raters.iter().map(|r| r.len()).max().unwrap_or(5).max(5);
    let mean_label = "mean of the pairs";
    let pair_w = (name_w * 2 + 1).max(mean_label.len());
    let pair_cell = |a: &str, b: &str| pad(&format!("{} {}", pad(a, name_w), b), pair_w);
    for key in &panel.keys {
        if find(key, "raters_krippendorff_alpha_interval", None).is_none() {
            continue;
        }
        let interval = find(key, "raters_krippendorff_alpha_interval", None);
        let ordinal = find(key, "raters_krippendorff_alpha_ordinal", None);
        writeln!(
            out,
            "{key}: Krippendorff's α among raters: interval {} · ordinal {} (items with two or more raters: {})",
            short_cell(interval, notes),
            short_cell(ordinal, notes),
            n_of(interval)
        )?;

        writeln!(out, "{}", paint.dim(&format!("  {} {} κ quadratic", pair_cell("rater", "rater"), lpad("n", 5))))?;
        for r in
            rows.iter().filter(|r| r.dimension.as_deref() == Some(key) && r.metric == "raters_cohen_kappa_quadratic")
        {
            let pair = r.raters.as_deref().unwrap_or(&[]);
            let line = format!(
                "  {} {} {}",
                pair_cell(pair.first().map_or("", String::as_str), pair.get(1).map_or("", String::as_str)),
                lpad(&n_of(Some(r)), 5),
                short_cell(Some(r), notes)
            );
            writeln!(out, "{}", line.trim_end())?;
        }
        let mean = find(key, "raters_cohen_kappa_quadratic_mean", None);
        writeln!(out, "  {} {} {}", pad(mean_label, pair_w), lpad(&n_of(mean), 5), short_cell(mean, notes))?;

        writeln!(
            out,
            "{}",
            paint.dim(&format!(
                "  {} {} {} {}",
                pad("result against", 26),
                lpad("n", 5),
                pad("pearson", 8),
                "spearman"
            ))
        )?;
        for (label, name) in [("the raters' mean", "raters_mean"), ("the raters' majority", "raters_majority")] {
            let p = find(key, &format!("{name}_pearson"), None);
            let s = find(key, &format!("{name}_spearman"), None);
            writeln!(
                out,
                "  {} {} {} {}",
                pad(label, 26),
                lpad(&n_of(p), 5),
                pad(&short_cell(p, notes), 8),
                short_cell(s, notes)
            )?;
        }

        writeln!(
            out,
            "{}",
            paint.dim(&format!(
                "  {} {} {} {} {} {}",
                pad("held out", name_w.max(17)),
                lpad("n", 5),
                pad("rater r", 8),
                pad("result r", 8),
                pad("rater ρ", 8),
                "result ρ"
            ))
        )?;
        let mut held: Vec<Option<Vec<String>>> = panel.raters.iter().map(|n| Some(vec![n.clone()])).collect();
        held.push(None);
        for who in held {
            let get = |m: &str| find(key, m, who.as_deref());
            let Some(rp) = get("raters_loo_rater_pearson") else { continue };
            let label = match &who {
                Some(w) => w[0].clone(),
                None => "mean over raters".to_string(),
            };
            let line = format!(
                "  {} {} {} {} {} {}",
                pad(&label, name_w.max(17)),
                lpad(&n_of(Some(rp)), 5),
                pad(&short_cell(Some(rp), notes), 8),
                pad(&short_cell(get("raters_loo_judge_pearson"), notes), 8),
                pad(&short_cell(get("raters_loo_rater_spearman"), notes), 8),
                short_cell(get("raters_loo_judge_spearman"), notes)
            );
            writeln!(out, "{}", line.trim_end())?;
        }
    }
    writeln!(
        out,
        "{}",
        paint.dim(
            "result: the panel's aggregate; held out: each rater, and the result, against the mean of the other raters on the items the rater rated (n); the mean row averages the raters whose two values are defined (n raters)"
        )
    )?;
    Ok(())
}
