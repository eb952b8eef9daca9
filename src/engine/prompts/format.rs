//! Numbers and scores as text, in prompts and on screen.

use std::fmt::Write;

use crate::panel::Panel;
use crate::session::event::Evaluation;

pub(super) fn clip(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} […]", &text[..end])
}

/// `grammar 4, answer_relevancy 3, overall 3.5 (confidence 0.8)`.
pub fn format_scores(panel: &Panel, ev: &Evaluation) -> String {
    let mut s = String::new();
    if let Some(label) = &ev.label {
        let _ = write!(s, "verdict {label}");
        if ev.scores.is_empty() && ev.overall.is_none() {
            if let Some(c) = ev.confidence {
                let _ = write!(s, " (confidence {c:.2})");
            }
            return s;
        }
        s.push_str(", ");
    }
    for d in &panel.dimensions {
        if let Some(v) = ev.scores.get(&d.key) {
            let _ = write!(s, "{} {}, ", d.key, fmt_num(*v));
        }
    }
    match ev.overall {
        Some(o) => {
            let _ = write!(s, "overall {}", fmt_num(o));
        }
        None => {
            s.truncate(s.trim_end_matches(", ").len());
        }
    }
    if let Some(c) = ev.confidence {
        let _ = write!(s, " (confidence {c:.2})");
    }
    s
}

/// A number without a useless `.0`.
pub fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.2}").trim_end_matches('0').to_string() }
}

/// A number with at most one decimal: `4`, `4.3`.
pub fn one_decimal(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_string)
}

/// `1 turn`, `3 turns`.
pub fn turns(n: u32) -> String {
    if n == 1 { "1 turn".to_string() } else { format!("{n} turns") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_respects_char_boundaries() {
        let s = "é".repeat(10);
        assert!(clip(&s, 5).starts_with("éé"));
    }

    #[test]
    fn numbers_print_compactly() {
        assert_eq!(fmt_num(4.0), "4");
        assert_eq!(fmt_num(3.5), "3.5");
        assert_eq!(fmt_num(3.25), "3.25");
    }
}
