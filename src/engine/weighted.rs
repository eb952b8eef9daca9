//! Probability-weighted scores (G-Eval's Σ p(s)·s).
//!
//! For a reply that contains `"clarity": 4`, the alternatives a provider
//! returns at the position of `4` (see [`crate::provider::logprobs`]) say how
//! sure the model was: [`weighted_scores`] turns them into Σ p(s)·s over the
//! scale's score tokens, with the probabilities renormalised over those
//! tokens (mass on tokens that are not scores is left out). The result is
//! recorded beside the sampled score, never instead of it.

use std::collections::BTreeMap;

use crate::panel::Scale;
use crate::provider::logprobs::TokenLogprob;

/// Probability-weighted score per dimension key (`overall` included when
/// asked), for keys whose score can be found in the tokens and whose score
/// token has at least one alternative that is a score on `scale`.
///
/// Only whole-number scales have score tokens; others give an empty map.
pub fn weighted_scores(tokens: &[TokenLogprob], keys: &[String], scale: Scale) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    if tokens.is_empty() || scale.min.fract() != 0.0 || scale.max.fract() != 0.0 || scale.max < scale.min {
        return out;
    }
    let mut text = String::new();
    let mut starts = Vec::with_capacity(tokens.len());
    for t in tokens {
        starts.push(text.len());
        text.push_str(&t.token);
    }
    for key in keys {
        let Some(pos) = score_position(&text, key) else { continue };
        // The token whose span covers the first digit of the score.
        let index = match starts.binary_search(&pos) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let token = &tokens[index];
        // The digit must start this token (after optional spaces), or the
        // alternatives are alternatives to something else.
        let offset = pos - starts[index];
        if !token.token[..offset.min(token.token.len())].trim().is_empty() {
            continue;
        }
        if let Some(score) = weighted(token, scale) {
            out.insert(key.clone(), score);
        }
    }
    out
}

/// Σ p(s)·s / Σ p(s) over the alternatives (and the sampled token) that are scores.
fn weighted(token: &TokenLogprob, scale: Scale) -> Option<f64> {
    let mut seen: BTreeMap<i64, f64> = BTreeMap::new();
    let candidates = std::iter::once((token.token.as_str(), token.logprob))
        .chain(token.top.iter().map(|a| (a.token.as_str(), a.logprob)));
    for (text, logprob) in candidates {
        let Ok(value) = text.trim().parse::<i64>() else { continue };
        if !scale.contains(value as f64) || !logprob.is_finite() {
            continue;
        }
        // The same token may be listed twice (sampled and among the top); count it once.
        seen.entry(value).or_insert(logprob.exp());
    }
    let mass: f64 = seen.values().sum();
    (mass > 0.0).then(|| seen.iter().map(|(s, p)| *s as f64 * p).sum::<f64>() / mass)
}

/// Byte offset of the first digit of the score given for `key` in a JSON-ish
/// reply: `"key": 4` (the last occurrence, as later text restates the verdict).
fn score_position(text: &str, key: &str) -> Option<usize> {
    let needle = format!("\"{key}\"");
    let mut found = None;
    let mut from = 0;
    while let Some(rel) = text[from..].find(&needle) {
        let after = from + rel + needle.len();
        let rest = &text[after..];
        let trimmed = rest.trim_start();
        if let Some(value) = trimmed.strip_prefix(':') {
            let value_trimmed = value.trim_start();
            if value_trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                found = Some(text.len() - value_trimmed.len());
            }
        }
        from = after;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::logprobs::TopLogprob;

    fn tok(token: &str, logprob: f64, top: &[(&str, f64)]) -> TokenLogprob {
        TokenLogprob {
            token: token.into(),
            logprob,
            top: top.iter().map(|(t, l)| TopLogprob { token: (*t).into(), logprob: *l }).collect(),
        }
    }

    fn keys(k: &[&str]) -> Vec<String> {
        k.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn weights_the_score_token_alternatives() {
        let p = |x: f64| x.ln();
        let tokens = vec![
            tok("{\"", 0.0, &[]),
            tok("clarity", 0.0, &[]),
            tok("\":", 0.0, &[]),
            tok(" 4", p(0.6), &[(" 4", p(0.6)), (" 5", p(0.3)), (" 3", p(0.05)), (" x", p(0.05))]),
            tok(", \"", 0.0, &[]),
            tok("overall", 0.0, &[]),
            tok("\": ", 0.0, &[]),
            tok("2", p(0.5), &[("2", p(0.5)), ("9", p(0.5))]),
            tok("}", 0.0, &[]),
        ];
        let scale = Scale { min: 1.0, max: 5.0 };
        let w = weighted_scores(&tokens, &keys(&["clarity", "overall", "missing"]), scale);
        let expected = (4.0 * 0.6 + 5.0 * 0.3 + 3.0 * 0.05) / 0.95;
        assert!((w["clarity"] - expected).abs() < 1e-9, "{w:?}");
        // 9 is off the scale: all the mass left is on 2.
        assert!((w["overall"] - 2.0).abs() < 1e-9);
        assert!(!w.contains_key("missing"));
    }

    #[test]
    fn non_integer_scales_and_text_without_json_give_nothing() {
        let tokens = vec![tok("Clarity: 4", 0.0, &[])];
        assert!(weighted_scores(&tokens, &keys(&["clarity"]), Scale { min: 1.0, max: 5.0 }).is_empty());
        let tokens = vec![tok("\"clarity\": ", 0.0, &[]), tok("4", 0.0, &[])];
        assert!(weighted_scores(&tokens, &keys(&["clarity"]), Scale { min: 0.0, max: 0.5 }).is_empty());
        assert_eq!(weighted_scores(&tokens, &keys(&["clarity"]), Scale { min: 1.0, max: 5.0 })["clarity"], 4.0);
    }

    #[test]
    fn a_score_inside_a_longer_token_is_skipped() {
        // The digit is in the middle of a token: its alternatives are not score alternatives.
        let tokens = vec![tok("\"clarity", 0.0, &[]), tok("\": 4", 0.0, &[("\": 5", -0.1)])];
        assert!(weighted_scores(&tokens, &keys(&["clarity"]), Scale { min: 1.0, max: 5.0 }).is_empty());
    }
}
