//! Turning what was read into scores: numbers, fractions (`4/5`, `4 out of 5`)
//! and percentages checked against the scale, the overall score (or the mean
//! of the dimensions), and confidence in 0–1.

use super::EPS;
use super::fields::{Found, Parser, Raw};
use crate::panel::{OVERALL, Scale};
use crate::session::event::Scores;

impl Parser<'_, '_> {
    /// The dimension scores and the overall. A dimension keyed `overall` is
    /// the overall (an `overall_quality` or `score` field fills it where the
    /// reply has no `overall` key) and leaves the scores; else the overall
    /// is the reply's, or the mean of the dimensions, where the panel asks
    /// for one ([`ParseSpec::overall`]), and none where it does not.
    pub(super) fn assemble(&self, found: &Found) -> Result<(Scores, Option<f64>), String> {
        let mut errors = Vec::new();
        let mut missing = Vec::new();
        let mut scores = Scores::new();
        let rated = self.spec.dimensions.iter().any(|d| d.key == OVERALL);
        for (i, dimension) in self.spec.dimensions.iter().enumerate() {
            let raw = found.dims.get(&i).or(if dimension.key == OVERALL { found.overall.as_ref() } else { None });
            match raw {
                Some(raw) => match self.to_score(&dimension.key, raw) {
                    Ok(v) => {
                        scores.insert(dimension.key.clone(), v);
                    }
                    Err(e) => errors.push(e),
                },
                None => missing.push(dimension.key.as_str()),
            }
        }
        if rated {
            if !missing.is_empty() {
                errors.push(format!("missing scores for {}", missing.join(", ")));
            }
            if !errors.is_empty() {
                return Err(errors.join("; "));
            }
            let overall = scores.remove(OVERALL);
            return Ok((scores, overall));
        }
        let overall = match found.overall.as_ref().filter(|_| self.spec.overall) {
            Some(raw) => match self.to_score("overall", raw) {
                Ok(v) => Some(v),
                Err(e) => {
                    errors.push(e);
                    None
                }
            },
            None => None,
        };
        if !missing.is_empty() {
            errors.push(format!("missing scores for {}", missing.join(", ")));
        }
        if !errors.is_empty() {
            return Err(errors.join("; "));
        }
        match overall {
            Some(v) => Ok((scores, Some(v))),
            None if scores.is_empty() => Err(self.no_scores()),
            None if !self.spec.overall => Ok((scores, None)),
            None => {
                let mean = scores.values().sum::<f64>() / scores.len() as f64;
                Ok((scores, Some(mean)))
            }
        }
    }

    fn to_score(&self, key: &str, raw: &Raw) -> Result<f64, String> {
        let scale = self.spec.scale;
        let range = scale_text(scale);
        let (value, shown) = match raw {
            Raw::Number(v) => (*v, v.to_string()),
            Raw::Text(text) => {
                let text = text.trim();
                let Some(n) = leading_number(text) else {
                    return Err(format!("{key}: could not read a score from {text:?}"));
                };
                if n.percent {
                    return Err(format!("{key} = {text} is a percentage, not a score on the scale {range}"));
                }
                match n.denominator {
                    Some(d) if (d - scale.max).abs() > EPS => {
                        return Err(format!(
                            "{key} = {}/{d} is not on the scale {range} (give a number, or x/{})",
                            n.value, scale.max
                        ));
                    }
                    Some(d) => (n.value, format!("{}/{d}", n.value)),
                    None => (n.value, n.value.to_string()),
                }
            }
            Raw::Unreadable(text) => {
                return Err(format!("{key}: could not read a score from {text}"));
            }
        };
        if !value.is_finite() || value < scale.min - EPS || value > scale.max + EPS {
            return Err(format!("{key} = {shown} is outside the scale {range}"));
        }
        Ok(value.clamp(scale.min, scale.max))
    }

    pub(super) fn no_scores(&self) -> String {
        let mut keys: Vec<&str> = self.spec.dimensions.iter().map(|d| d.key.as_str()).collect();
        let example = keys.first().map_or(OVERALL, |k| k).to_string();
        if self.spec.overall && !keys.contains(&OVERALL) {
            keys.push(OVERALL);
        }
        keys.extend(["confidence", "justification"]);
        format!(
            "no scores found: expected a JSON object with the keys {} (or lines like `{example}: {}`)",
            keys.join(", "),
            self.spec.scale.max
        )
    }
}

fn scale_text(scale: Scale) -> String {
    format!("{}–{}", scale.min, scale.max)
}

/// A number at the start of a text, with an optional `/d`, `out of d` or `%`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Number {
    value: f64,
    denominator: Option<f64>,
    percent: bool,
}

fn read_decimal(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'-' | b'+')) {
        i += 1;
    }
    let mut digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    s[..i].parse::<f64>().ok().map(|v| (v, i))
}

pub(super) fn leading_number(text: &str) -> Option<Number> {
    let s = text.trim_start();
    let (value, len) = read_decimal(s)?;
    let rest = s[len..].trim_start();
    let denominator = if let Some(after) = rest.strip_prefix('/') {
        read_decimal(after.trim_start()).map(|(d, _)| d)
    } else if rest.get(..6).is_some_and(|w| w.eq_ignore_ascii_case("out of")) {
        read_decimal(rest[6..].trim_start()).map(|(d, _)| d)
    } else {
        None
    };
    Some(Number { value, denominator, percent: denominator.is_none() && rest.starts_with('%') })
}

/// Confidence in 0–1: a fraction, a percentage (`80%`, or a bare number in
/// 1–100 read as a percentage) or `x/d`. Anything else is ignored (`None`).
pub(super) fn to_confidence(raw: &Raw) -> Option<f64> {
    let n = match raw {
        Raw::Number(v) => Number { value: *v, denominator: None, percent: false },
        Raw::Text(text) => leading_number(text)?,
        Raw::Unreadable(_) => return None,
    };
    let c = if n.percent {
        n.value / 100.0
    } else if let Some(d) = n.denominator {
        if d <= 0.0 {
            return None;
        }
        n.value / d
    } else if (0.0..=1.0).contains(&n.value) {
        n.value
    } else if n.value > 1.0 && n.value <= 100.0 {
        n.value / 100.0
    } else {
        return None;
    };
    (c.is_finite() && (0.0..=1.0).contains(&c)).then_some(c)
}
