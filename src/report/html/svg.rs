//! Charts in a page: the score timeline drawn as inline SVG (one line per
//! agent across the session's evaluated turns), and a drawn SVG embedded
//! as an image.

use base64::Engine as _;

use super::layout::score;
use super::markup::Html;

/// Line colours, one per agent in turn (readable on light and dark pages).
const PALETTE: [&str; 8] = ["#1f6fb2", "#d97a1e", "#2e8b57", "#b42318", "#7b4bb7", "#0f8a8a", "#a0522d", "#c2185b"];

/// Past this many points a chart draws lines only, without a marker and
/// tooltip per point.
const MARKERS_UP_TO: usize = 400;

const W: f64 = 720.0;
const H: f64 = 190.0;
const LEFT: f64 = 38.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 26.0;

/// One agent's scores on one dimension: (position of the turn among the
/// session's evaluated turns, from 1; score).
#[derive(Debug, Clone, Default)]
pub struct Series {
    pub name: String,
    pub points: Vec<(usize, f64)>,
}

/// The colour of the `i`th series.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// A score timeline: `turns` evaluated turns on the x axis, the scale
/// `lo..=hi` on the y axis, then a legend. Inline SVG in HTML needs no
/// `xmlns`: the parser puts it in the SVG namespace.
pub fn timeline(h: &mut Html, key: &str, turns: usize, (lo, hi): (f64, f64), series: &[Series]) {
    let (lo, hi) = if hi > lo { (lo, hi) } else { (lo - 1.0, lo + 1.0) };
    let span_x = (turns.max(2) - 1) as f64;
    let x = |t: usize| LEFT + (t.saturating_sub(1) as f64) / span_x * (W - LEFT - RIGHT);
    let y = |v: f64| TOP + (hi - v.clamp(lo, hi)) / (hi - lo) * (H - TOP - BOTTOM);
    let label = format!("{key} scores by evaluated turn");
    h.open(
        "svg",
        &[
            ("class", "timeline"),
            ("data-key", key),
            ("viewBox", &format!("0 0 {W} {H}")),
            ("width", &W.to_string()),
            ("height", &H.to_string()),
            ("role", "img"),
            ("aria-label", &label),
        ],
    );
    h.elem("title", &[], &label);
    // Horizontal grid: every level of a short scale, else five lines.
    let levels: Vec<f64> = if hi - lo <= 10.0 && lo.fract() == 0.0 && hi.fract() == 0.0 {
        (0..=(hi - lo) as usize).map(|i| lo + i as f64).collect()
    } else {
        (0..=4).map(|i| lo + (hi - lo) * i as f64 / 4.0).collect()
    };
    for v in levels {
        let yy = fmt(y(v));
        h.open("line", &[("class", "grid"), ("x1", &fmt(LEFT)), ("x2", &fmt(W - RIGHT)), ("y1", &yy), ("y2", &yy)])
            .close("line");
        h.elem("text", &[("x", &fmt(LEFT - 6.0)), ("y", &fmt(y(v) + 4.0)), ("text-anchor", "end")], &score(v));
    }
    // The x axis: first and last turn.
    let base = fmt(H - 8.0);
    h.elem("text", &[("x", &fmt(LEFT)), ("y", &base)], "turn 1");
    h.elem("text", &[("x", &fmt(W - RIGHT)), ("y", &base), ("text-anchor", "end")], &format!("turn {turns}"));
    let total: usize = series.iter().map(|s| s.points.len()).sum();
    for (i, s) in series.iter().enumerate() {
        if s.points.is_empty() {
            continue;
        }
        let mut pts = String::with_capacity(s.points.len() * 14);
        for &(t, v) in &s.points {
            pts.push_str(&fmt(x(t)));
            pts.push(',');
            pts.push_str(&fmt(y(v)));
            pts.push(' ');
        }
        h.open("g", &[("class", "series"), ("data-agent", &s.name)]);
        h.open(
            "polyline",
            &[("points", pts.trim_end()), ("fill", "none"), ("stroke", colour(i)), ("stroke-width", "2")],
        )
        .close("polyline");
        if total <= MARKERS_UP_TO {
            for &(t, v) in &s.points {
                h.open("circle", &[("cx", &fmt(x(t))), ("cy", &fmt(y(v))), ("r", "3.5"), ("fill", colour(i))]);
                h.elem("title", &[], &format!("{}, turn {t}: {key} {}", s.name, score(v))).close("circle");
            }
        }
        h.close("g");
    }
    h.close("svg");
    h.open("ul", &[("class", "legend")]);
    for (i, s) in series.iter().enumerate().filter(|(_, s)| !s.points.is_empty()) {
        h.open("li", &[]).open("i", &[("style", &format!("background:{}", colour(i)))]).close("i");
        h.text(&s.name).close("li");
    }
    h.close("ul");
}

/// A coordinate with at most one decimal.
fn fmt(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r.fract() == 0.0 { format!("{r:.0}") } else { format!("{r:.1}") }
}

/// A drawn SVG document as an `<img>`: a `data:` URL, so the page stays one
/// file, and the browser treats the picture as an image (no script in it
/// could run, whatever text it holds).
pub fn image(h: &mut Html, alt: &str, svg: &str) {
    let src = format!("data:image/svg+xml;base64,{}", base64::engine::general_purpose::STANDARD.encode(svg));
    h.open("img", &[("class", "chart"), ("alt", alt), ("src", &src)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeline_has_a_line_per_agent_and_its_legend() {
        let mut h = Html::new();
        let s = vec![
            Series { name: "Ann <b>".into(), points: vec![(1, 3.0), (3, 4.0)] },
            Series { name: "Bo".into(), points: vec![(2, 5.0)] },
        ];
        timeline(&mut h, "clarity", 3, (1.0, 5.0), &s);
        let out = h.as_str();
        assert_eq!(out.matches("<polyline").count(), 2);
        assert_eq!(out.matches("<circle").count(), 3);
        assert!(out.contains("points=\"38,87 708,48.5\""), "{out}");
        assert!(out.contains("Ann &lt;b&gt;") && !out.contains("Ann <b>"));
    }

    #[test]
    fn many_points_draw_lines_only() {
        let mut h = Html::new();
        let s = vec![Series { name: "A".into(), points: (1..=1000).map(|t| (t, (t % 5) as f64 + 1.0)).collect() }];
        timeline(&mut h, "overall", 1000, (1.0, 5.0), &s);
        assert_eq!(h.as_str().matches("<circle").count(), 0);
        assert_eq!(h.as_str().matches("<polyline").count(), 1);
    }

    #[test]
    fn an_image_is_a_data_url() {
        let mut h = Html::new();
        image(&mut h, "chart", "<svg><script>alert(1)</script></svg>");
        assert!(h.as_str().starts_with("<img class=\"chart\" alt=\"chart\" src=\"data:image/svg+xml;base64,PHN2Zz48"));
        assert!(!h.as_str().contains("<script"));
    }
}
