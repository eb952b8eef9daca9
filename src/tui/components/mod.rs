//! Widgets of the session screen. Each draws one part of the view model into
//! a rectangle; none has side effects beyond caches and scroll bookkeeping.

pub mod agent;
pub mod agent_rows;
pub mod aggregator;
pub mod consensus;
pub mod footer;
pub mod g_eval;
pub mod header;
pub mod moderator;
pub mod pairwise;
pub mod sage;
pub mod stages;
pub mod summary;
pub mod transcript;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols::border;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::theme::Theme;

/// Draw `lines` in `area`, one a row from the top, each cut at the right
/// edge: what a `Paragraph` without wrapping draws. A left-aligned line whose
/// characters each take one column on their own ([`single_cell`]: printable
/// ASCII, and the Latin letters, punctuation, arrows and shapes the screen
/// uses) is written a cell per character, without the grapheme segmentation
/// that other text needs (most of a frame); any other line is drawn by a
/// `Paragraph`.
pub fn draw_lines(buf: &mut Buffer, area: Rect, lines: &[Line]) {
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    for (row, line) in lines.iter().take(area.height as usize).enumerate() {
        let y = area.y + row as u16;
        let simple = matches!(line.alignment, None | Some(ratatui::layout::Alignment::Left))
            && line.spans.iter().all(|s| s.content.chars().all(single_cell));
        if !simple {
            Paragraph::new(line.clone()).render(Rect { y, height: 1, ..area }, buf);
            continue;
        }
        // The row's cells as one slice: no index arithmetic or bounds check per cell.
        let start = buf.index_of(area.x, y);
        let mut cells = buf.content[start..start + usize::from(area.width)].iter_mut();
        'spans: for span in &line.spans {
            let style = line.style.patch(span.style);
            for c in span.content.chars() {
                let Some(cell) = cells.next() else { break 'spans };
                cell.set_char(c).set_style(style);
            }
        }
    }
}

/// Whether `c` is a grapheme of its own one column wide, whatever comes
/// before or after it: printable ASCII, or a character from the Latin-1 and
/// Latin Extended letters, general punctuation, arrows, mathematical
/// operators, box drawing, blocks and geometric shapes, of width one. None
/// of these blocks holds a combining or joining character; zero-width and
/// wide ones are excluded by their width.
pub fn single_cell(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    matches!(c, '\u{a0}'..='\u{24f}' | '\u{2010}'..='\u{2027}' | '\u{2030}'..='\u{205e}' | '\u{2190}'..='\u{25ff}')
        && unicode_width::UnicodeWidthChar::width(c) == Some(1)
}

/// A pane's frame: thick and coloured when focused.
pub fn pane<'a>(title: Line<'a>, focused: bool, theme: &Theme) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_set(if focused { border::THICK } else { border::ROUNDED })
        .border_style(theme.border(focused))
        .title(title)
}

/// A short name for a dimension key: one word → its first four letters,
/// several → their initials.
pub fn abbrev(key: &str) -> String {
    if key == "overall" {
        return "ovr".into();
    }
    let parts: Vec<&str> = key.split(['_', '-', ' ']).filter(|p| !p.is_empty()).collect();
    if parts.len() > 1 {
        parts.iter().filter_map(|p| p.chars().next()).collect::<String>().to_lowercase()
    } else {
        key.chars().take(4).collect::<String>().to_lowercase()
    }
}

/// Cut a string to `n` columns with an ellipsis.
pub fn clip(s: &str, n: usize) -> String {
    use unicode_width::UnicodeWidthStr;
    if s.width() <= n {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if w + cw + 1 > n {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

/// Sparkline characters for values in `min..=max`.
pub fn sparkline(values: &[f64], min: f64, max: f64) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let span = (max - min).max(f64::EPSILON);
    values
        .iter()
        .map(|v| {
            let r = ((v - min) / span).clamp(0.0, 1.0);
            BARS[(r * 7.0).round() as usize]
        })
        .collect()
}

/// `key value` spans for a set of scores.
pub fn score_spans(
    items: &[(String, Option<f64>, Option<f64>)],
    scale: (f64, f64),
    theme: &Theme,
) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    for (i, (label, value, original)) in items.iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(" "));
        }
        spans.push(Span::styled(format!("{label} "), theme.muted()));
        match value {
            Some(v) => {
                spans.push(Span::styled(super::app::fmt_score(*v), theme.score(*v, scale.0, scale.1)));
                if let Some(o) = original {
                    spans.push(Span::styled(format!("(was {})", super::app::fmt_score(*o)), theme.human()));
                }
            }
            None => spans.push(Span::styled("–", theme.muted())),
        }
    }
    spans
}

/// Rows `top..top+height` of `lines`.
pub fn visible<T: Clone>(lines: &[T], top: usize, height: usize) -> Vec<T> {
    lines.iter().skip(top).take(height).cloned().collect()
}

/// Inner area of a bordered block.
pub fn inner(area: Rect) -> Rect {
    Block::default().borders(Borders::ALL).inner(area)
}

/// A plain style helper.
pub fn style_if(cond: bool, yes: Style, no: Style) -> Style {
    if cond { yes } else { no }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Modifier};

    /// `draw_lines` draws what a `Paragraph` draws, styles included.
    #[test]
    fn draw_lines_matches_a_paragraph() {
        let red = Style::default().fg(Color::Red);
        let bold = Style::default().add_modifier(Modifier::BOLD).bg(Color::Blue);
        let lines = vec![
            Line::from(Span::styled("plain ascii words", red)),
            Line::from(vec![Span::styled("two ", red), Span::styled("spans", bold), Span::raw(" and raw")]),
            Line::from(Span::styled("a line longer than the area is wide, cut at the edge", bold)),
            Line::from(Span::styled("wide 你好 and é", red)),
            Line::from(Span::styled("a tab\there", red)),
            Line::from(Span::raw("line style")).patch_style(bold),
            Line::from(vec![Span::styled("▲ 4·5 → ≈ — é", red), Span::raw(" ● █░ ╭─")]).style(bold),
            Line::from(vec![Span::raw("soft\u{ad}hyphen, nbsp\u{a0}and zero\u{200b}width")]),
            Line::from("centred").centered(),
            Line::from(""),
            Line::from(Span::styled("below the area", red)),
        ];
        let area = Rect { x: 2, y: 1, width: 20, height: 10 };
        let mut want = Buffer::empty(Rect { x: 0, y: 0, width: 24, height: 12 });
        let mut got = want.clone();
        Paragraph::new(lines.clone()).render(area, &mut want);
        assert!(lines[6].spans.iter().all(|s| s.content.chars().all(single_cell)), "the symbols take the fast path");
        draw_lines(&mut got, area, &lines);
        assert_eq!(got, want);
    }
}
