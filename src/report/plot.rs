//! SVG charts of a report (`--plot DIR`), the figures the papers draw: for
//! each panel and rated dimension, Spearman's ρ with humans before and after
//! the debate per group (MAJ-EVAL's figure 4); for each dimension, how human
//! and judge scores spread over the scale (for a reviewed panel, the
//! evaluator's scores beside the rectified ones: SAGEval's figure 3).

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::build::{Distribution, Report, Stage};

/// Why charts could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{}: drawing failed: {message}", path.display())]
    Draw { path: PathBuf, message: String },
}

/// A file-name-safe form of a name.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-').to_string();
    if out.is_empty() { "panel".into() } else { out }
}

const INITIAL: RGBColor = RGBColor(0x9a, 0xa5, 0xb1);
const FINAL: RGBColor = RGBColor(0x1f, 0x6f, 0xb2);
const HUMAN: RGBColor = RGBColor(0xd9, 0x7a, 0x1e);
const AGGREGATE: RGBColor = RGBColor(0x2e, 0x8b, 0x57);

/// One chart of a report: its file name under `--plot DIR`, its title and
/// the SVG document.
#[derive(Debug, Clone)]
pub struct Chart {
    pub file_name: String,
    pub title: String,
    pub svg: String,
}

/// Write every chart of `report` into `dir` (created if needed); returns the files written.
pub fn write_plots(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|error| PlotError::Io { path: dir.to_path_buf(), error })?;
    let mut written = Vec::new();
    for c in charts(report)? {
        let path = dir.join(&c.file_name);
        std::fs::write(&path, c.svg).map_err(|error| PlotError::Io { path: path.clone(), error })?;
        written.push(path);
    }
    Ok(written)
}

/// Every chart of `report`, drawn in memory (the files of `--plot`, the
/// figures of the HTML report).
pub fn charts(report: &Report) -> Result<Vec<Chart>, PlotError> {
    let mut out = Vec::new();
    for panel in &report.panels {
        let groups: Vec<Option<&str>> =
            std::iter::once(None).chain(panel.groups.iter().map(|g| Some(g.as_str()))).collect();
        for key in &panel.keys {
            let value = |g: Option<&str>, stage: Stage| {
                report
                    .rows
                    .iter()
                    .find(|r| {
                        r.panel == panel.name
                            && r.dimension.as_deref() == Some(key.as_str())
                            && r.group.as_deref() == g
                            && r.agent.is_none()
                            && r.stage == Some(stage)
                            && r.metric == "spearman"
                    })
                    .and_then(|r| r.value)
            };
            let points: Vec<(String, Option<f64>, Option<f64>)> = groups
                .iter()
                .map(|g| (g.unwrap_or("all agents").to_string(), value(*g, Stage::Initial), value(*g, Stage::Final)))
                .collect();
            if points.iter().all(|(_, a, b)| a.is_none() && b.is_none()) {
                continue;
            }
            let file_name = format!("{}-{}-correlation.svg", slug(&panel.name), slug(key));
            let title = format!("{} — {key}: Spearman ρ with humans", panel.name);
            let svg = correlation_chart(&title, &points)
                .map_err(|message| PlotError::Draw { path: PathBuf::from(&file_name), message })?;
            out.push(Chart { file_name, title, svg });
        }
    }
    for d in &report.distributions {
        if d.human.iter().chain(&d.initial).chain(&d.final_).chain(&d.aggregate).all(|&c| c == 0) {
            continue;
        }
        let file_name = format!("{}-{}-distribution.svg", slug(&d.panel), slug(&d.key));
        let title = format!("{} — {}: score distribution", d.panel, d.key);
        let svg = distribution_chart(&title, d)
            .map_err(|message| PlotError::Draw { path: PathBuf::from(&file_name), message })?;
        out.push(Chart { file_name, title, svg });
    }
    Ok(out)
}

fn correlation_chart(title: &str, points: &[(String, Option<f64>, Option<f64>)]) -> Result<String, String> {
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, (160 + 120 * points.len() as u32, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let n = points.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), -1.0f64..1.0f64)
        .map_err(|e| e.to_string())?;
    let labels: Vec<String> = points.iter().map(|p| p.0.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("Spearman ρ")
        .draw()
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(LineSeries::new([(-0.5, 0.0), (n as f64 - 0.5, 0.0)], BLACK.mix(0.3)))
        .map_err(|e| e.to_string())?;
    for (i, (_, a, b)) in points.iter().enumerate() {
        let x = i as f64;
        if let (Some(a), Some(b)) = (a, b) {
            chart.draw_series(LineSeries::new([(x, *a), (x, *b)], FINAL.stroke_width(2))).map_err(|e| e.to_string())?;
        }
    }
    chart
        .draw_series(
            points.iter().enumerate().filter_map(|(i, p)| p.1.map(|v| Circle::new((i as f64, v), 6, INITIAL.filled()))),
        )
        .map_err(|e| e.to_string())?
        .label("initial (phase 1)")
        .legend(|(x, y)| Circle::new((x, y), 5, INITIAL.filled()));
    chart
        .draw_series(
            points.iter().enumerate().filter_map(|(i, p)| p.2.map(|v| Circle::new((i as f64, v), 6, FINAL.filled()))),
        )
        .map_err(|e| e.to_string())?
        .label("final (after debate)")
        .legend(|(x, y)| Circle::new((x, y), 5, FINAL.filled()));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    drop(chart);
    drop(root);
    Ok(svg)
}

fn distribution_chart(title: &str, d: &Distribution) -> Result<String, String> {
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, (720, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let nb = d.bins.len();
    let series: [(&str, &Vec<usize>, RGBColor); 3] = if d.reviewed {
        [
            ("human", &d.human, HUMAN),
            ("evaluator", &d.initial, INITIAL),
            ("rectified (meta-evaluator)", &d.final_, FINAL),
        ]
    } else {
        [
            ("human", &d.human, HUMAN),
            ("final (mean of agents)", &d.final_, FINAL),
            ("aggregate", &d.aggregate, AGGREGATE),
        ]
    };
    let top = series.iter().flat_map(|s| s.1.iter()).copied().max().unwrap_or(1).max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(-0.5f64..(nb as f64 - 0.5), 0f64..(top as f64 * 1.1))
        .map_err(|e| e.to_string())?;
    let bins = d.bins.clone();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(nb)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                bins.get(i as usize)
                    .map(|b| if b.fract() == 0.0 { format!("{b:.0}") } else { format!("{b:.2}") })
                    .unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("items")
        .draw()
        .map_err(|e| e.to_string())?;
    let width = 0.8 / series.len() as f64;
    for (si, (label, counts, color)) in series.iter().enumerate() {
        let color = *color;
        chart
            .draw_series(counts.iter().enumerate().map(|(b, &c)| {
                let x0 = b as f64 - 0.4 + width * si as f64;
                Rectangle::new([(x0, 0.0), (x0 + width * 0.95, c as f64)], color.filled())
            }))
            .map_err(|e| e.to_string())?
            .label(*label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    drop(chart);
    drop(root);
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("Storybook QA"), "storybook-qa");
        assert_eq!(slug("a/b  c"), "a-b-c");
        assert_eq!(slug("!!"), "panel");
    }
}
