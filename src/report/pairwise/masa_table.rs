//! MASA's agreement splits in the printed table: per decider, agreement
//! with every rater and with at least k raters, and for each judge the
//! agreement with the majority where its verdict changed under the swap and
//! where it did not; then the raters among themselves.

use std::io::{self, Write};

use super::super::build::Row;
use super::super::format::{Footnotes, lpad, pad, short_cell};
use super::table::find;
use crate::paint::Paint;

/// Writes the section (nothing without `human_all_agreement` rows).
pub(super) fn write_table(
    rows: &[&Row],
    deciders: &[String],
    out: &mut impl Write,
    paint: Paint,
    notes: &mut Footnotes,
) -> io::Result<()> {
    if !rows.iter().any(|r| r.metric == "human_all_agreement") {
        return Ok(());
    }
    let most = (1..)
        .take_while(|k| rows.iter().any(|r| r.metric == format!("human_agreement_at_least_{k}")))
        .last()
        .unwrap_or(0);
    let who_w = deciders.iter().map(|s| s.len()).max().unwrap_or(10).max(10);
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        paint.bold(
            "As MASA reports it: agreement with every rater, with at least k raters, and with the majority where the \
             judge's verdict changed under the swap (biased) or not"
        )
    )?;
    let mut header = format!("{} {} {}", pad("decided by", who_w), lpad("n", 5), pad("all", 7));
    for k in 1..=most {
        header.push_str(&format!(" {}", pad(&format!("≥{k}"), 7)));
    }
    header.push_str(&format!(" {} {}", pad("biased", 7), pad("consistent", 10)));
    writeln!(out, "{}", paint.dim(&header))?;
    for who in deciders {
        let Some(all) = find(rows, who, None, "human_all_agreement") else { continue };
        let cell = |m: &str, w: usize, notes: &mut Footnotes| pad(&short_cell(find(rows, who, None, m), notes), w);
        let mut line =
            format!("{} {} {}", pad(who, who_w), lpad(&all.n.map(|n| n.to_string()).unwrap_or_default(), 5), {
                pad(&short_cell(Some(all), notes), 7)
            });
        for k in 1..=most {
            line.push_str(&format!(" {}", cell(&format!("human_agreement_at_least_{k}"), 7, notes)));
        }
        line.push_str(&format!(
            " {} {}",
            cell("human_majority_agreement_position_biased", 7, notes),
            cell("human_majority_agreement_position_consistent", 10, notes)
        ));
        writeln!(out, "{}", line.trim_end())?;
    }
    let people = rows.iter().copied().filter(|r| r.agent.is_none() && r.stage.is_none());
    let mut parts = Vec::new();
    for r in people {
        if r.metric == "human_unanimous_share" {
            parts.insert(0, format!("all raters agree {} (n {})", short_cell(Some(r), notes), r.n.unwrap_or(0)));
        } else if let Some(k) = r.metric.strip_prefix("human_consensus_at_least_") {
            parts.push(format!("≥{k} agree {} (n {})", short_cell(Some(r), notes), r.n.unwrap_or(0)));
        }
    }
    if !parts.is_empty() {
        writeln!(out, "raters among themselves: {}", parts.join(" · "))?;
    }
    Ok(())
}
