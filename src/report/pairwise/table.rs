//! The pairwise section of the printed report: win rates per system (the
//! panel's decision, then each judge's), position bias, and agreement with
//! people's labels, each with its method in the heading.

use std::io::{self, Write};

use super::super::build::{Report, Row, Stage};
use super::super::format::{Footnotes, lpad, pad, short_cell, value_cell};
use crate::paint::Paint;

/// Who made the decisions of a row, as the table names them.
fn decider(r: &Row) -> String {
    match (r.agent.as_deref(), r.stage) {
        (Some(a), _) => a.to_string(),
        (None, Some(Stage::HumanAdjusted)) => "panel + people".to_string(),
        (None, Some(Stage::Aggregate)) => "panel".to_string(),
        _ => "all judges".to_string(),
    }
}

fn count(rows: &[&Row], who: &str, system: Option<&str>, metric: &str) -> Option<f64> {
    find(rows, who, system, metric).and_then(|r| r.value)
}

pub(super) fn find<'a>(rows: &[&'a Row], who: &str, system: Option<&str>, metric: &str) -> Option<&'a Row> {
    rows.iter().copied().find(|r| r.metric == metric && r.system.as_deref() == system && decider(r) == who)
}

/// Writes the section for one panel's pairwise rows.
pub(crate) fn write_table(
    report: &Report,
    rows: &[&Row],
    out: &mut impl Write,
    paint: Paint,
    notes: &mut Footnotes,
) -> io::Result<()> {
    let mut deciders: Vec<String> = Vec::new();
    let mut systems: Vec<&str> = Vec::new();
    for r in rows {
        let d = decider(r);
        if r.stage.is_some() && !deciders.contains(&d) {
            deciders.push(d);
        }
        if let Some(s) = r.system.as_deref()
            && !systems.contains(&s)
        {
            systems.push(s);
        }
    }
    let intervals = if report.bootstrap > 0 {
        format!(
            "{:.0}% percentile bootstrap intervals resampling items, {} resamples, seed {}",
            report.level * 100.0,
            report.bootstrap,
            report.seed
        )
    } else {
        "no intervals (--bootstrap 0)".to_string()
    };
    writeln!(out)?;
    writeln!(out, "{}", paint.bold(&format!("Pairwise win rates (share of decided comparisons; {intervals})")))?;
    let sys_w = systems.iter().map(|s| s.len()).max().unwrap_or(6).max(6);
    let who_w = deciders.iter().map(|s| s.len()).max().unwrap_or(10).max(10);
    writeln!(
        out,
        "{}",
        paint.dim(&format!(
            "{} {} {} {} {} {} {}",
            pad("decided by", who_w),
            pad("system", sys_w),
            pad("W-L-T", 9),
            lpad("undecided", 9),
            pad("win rate", 22),
            pad("tie rate", 22),
            pad("win rate excl. ties", 22)
        ))
    )?;
    for who in &deciders {
        let mut first = true;
        for s in &systems {
            let Some(win) = find(rows, who, Some(s), "pairwise_win_rate") else { continue };
            let c = |m: &str| count(rows, who, Some(s), m).map_or("—".into(), |v| format!("{v:.0}"));
            let wlt = format!("{}-{}-{}", c("pairwise_wins"), c("pairwise_losses"), c("pairwise_ties"));
            let line = format!(
                "{} {} {} {} {} {} {}",
                pad(if first { who } else { "" }, who_w),
                pad(s, sys_w),
                pad(&wlt, 9),
                lpad(&c("pairwise_undecided"), 9),
                pad(&value_cell(Some(win), notes), 22),
                pad(&value_cell(find(rows, who, Some(s), "pairwise_tie_rate"), notes), 22),
                pad(&value_cell(find(rows, who, Some(s), "pairwise_win_rate_excluding_ties"), notes), 22),
            );
            writeln!(out, "{}", line.trim_end())?;
            first = false;
        }
    }
    writeln!(
        out,
        "{}",
        paint.dim(
            "a comparison without a result (no readable verdict) counts in `undecided`, never as a win, loss or tie; \
             `panel + people`: pairs a person settled use the person's decision"
        )
    )?;

    // Position bias.
    let bias: Vec<&Row> = rows.iter().copied().filter(|r| r.metric == "position_bias_rate").collect();
    if !bias.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{}",
            paint.bold(
                "Position bias (share of comparisons judged in both orders whose decision changes with the order)"
            )
        )?;
        writeln!(
            out,
            "{}",
            paint.dim(&format!(
                "{} {} {} {} {}",
                pad("judge", who_w),
                lpad("n", 5),
                pad("changed", 9),
                pad("win↔tie", 9),
                pad("A↔B", 9)
            ))
        )?;
        for r in bias {
            let who = decider(r);
            let line = format!(
                "{} {} {} {} {}",
                pad(&who, who_w),
                lpad(&r.n.map(|n| n.to_string()).unwrap_or_default(), 5),
                pad(&short_cell(Some(r), notes), 9),
                pad(&short_cell(find(rows, &who, None, "position_bias_win_tie_rate"), notes), 9),
                pad(&short_cell(find(rows, &who, None, "position_bias_opposite_rate"), notes), 9),
            );
            writeln!(out, "{}", line.trim_end())?;
        }
    }

    // People.
    let labelled = find(rows, "all judges", None, "human_labelled_comparisons");
    let has_humans = labelled.and_then(|r| r.value).is_some_and(|v| v > 0.0);
    writeln!(out)?;
    if !has_humans {
        writeln!(
            out,
            "{}",
            paint.yellow(
                "no human labels joined: add `human_label`/`human_labels` to the items, label pairs blind \
                 (moot run --blind), or pass --human FILE (see docs/report.md)"
            )
        )?;
        return Ok(());
    }
    let l = labelled.expect("checked above");
    let sources: Vec<String> = l.sources.iter().flatten().map(|(k, v)| format!("{k} {v}")).collect();
    let raters = find(rows, "all judges", None, "human_raters").and_then(|r| r.value).unwrap_or(0.0);
    writeln!(
        out,
        "human labels: {:.0} of {} comparisons labelled by {raters:.0} raters (from: {}); κ between raters (Cohen's, mean over rater pairs): {}",
        l.value.unwrap_or(0.0),
        l.n.unwrap_or(0),
        sources.join(", "),
        value_cell(find(rows, "all judges", None, "human_rater_kappa"), notes)
    )?;
    writeln!(
        out,
        "{}",
        paint.bold(
            "Agreement with people (majority of the raters, more than half else tie; leave-one-rater-out: the held-out rater and the judge against the others' majority)"
        )
    )?;
    writeln!(
        out,
        "{}",
        paint.dim(&format!(
            "{} {} {} {} {} {} {} {} {}",
            pad("decided by", who_w),
            lpad("n", 5),
            pad("majority", 22),
            pad("≥1 rater", 8),
            pad("κ", 8),
            pad("win→tie", 8),
            pad("tie→win", 8),
            pad("LOO rater", 9),
            pad("LOO judge", 9),
        ))
    )?;
    for who in &deciders {
        let Some(m) = find(rows, who, None, "human_majority_agreement") else { continue };
        let cell = |metric: &str, notes: &mut Footnotes| short_cell(find(rows, who, None, metric), notes);
        let line = format!(
            "{} {} {} {} {} {} {} {} {}",
            pad(who, who_w),
            lpad(&m.n.map(|n| n.to_string()).unwrap_or_default(), 5),
            pad(&value_cell(Some(m), notes), 22),
            pad(&cell("human_any_agreement", notes), 8),
            pad(&cell("cohen_kappa", notes), 8),
            pad(&cell("tie_confusion_winner_as_tie", notes), 8),
            pad(&cell("tie_confusion_tie_as_winner", notes), 8),
            pad(&cell("loo_rater_agreement", notes), 9),
            pad(&cell("loo_judge_agreement", notes), 9),
        );
        writeln!(out, "{}", line.trim_end())?;
    }
    writeln!(
        out,
        "{}",
        paint.dim(
            "win→tie: share of comparisons where people have a winner and the decision is a tie; tie→win: the reverse"
        )
    )?;
    super::masa_table::write_table(rows, &deciders, out, paint, notes)?;
    Ok(())
}
