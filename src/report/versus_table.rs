//! The "Against other panels" section of the table: a panel's
//! `agreement_difference` rows (this panel minus another on the items both
//! judged), with their paired intervals.

use std::io::{self, Write};

use super::build::Row;
use super::format::{Footnotes, lpad, pad, value_cell};
use crate::paint::Paint;

/// Writes the section for one panel's rows (nothing without difference rows).
pub(crate) fn write_table(rows: &[&Row], out: &mut impl Write, paint: Paint, notes: &mut Footnotes) -> io::Result<()> {
    let rows: Vec<&Row> = rows.iter().copied().filter(|r| r.versus.is_some()).collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        paint.bold(
            "Against other panels on the same items (this panel minus the other; paired bootstrap: items resampled \
             jointly)"
        )
    )?;
    let other_w = rows.iter().filter_map(|r| r.versus.as_deref()).map(str::len).max().unwrap_or(5).max(5);
    let dim_w = rows.iter().filter_map(|r| r.dimension.as_deref()).map(str::len).max().unwrap_or(9).max(9);
    writeln!(
        out,
        "{}",
        paint.dim(&format!(
            "{} {} {} {} {}",
            pad("versus", other_w),
            pad("dimension", dim_w),
            lpad("n", 5),
            pad("difference", 22),
            "of"
        ))
    )?;
    for r in rows {
        let dim = r.dimension.as_deref().unwrap_or("");
        let what = if dim == super::pairwise::DIMENSION {
            "agreement with the raters' majority"
        } else {
            "Spearman ρ of the aggregate with the humans"
        };
        let line = format!(
            "{} {} {} {} {what}",
            pad(r.versus.as_deref().unwrap_or(""), other_w),
            pad(dim, dim_w),
            lpad(&r.n.map(|n| n.to_string()).unwrap_or_default(), 5),
            pad(&value_cell(Some(r), notes), 22),
        );
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}
