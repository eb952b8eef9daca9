//! Token log-probabilities and probability-weighted scores.
//!
//! Servers that speak the OpenAI API return, when asked (`logprobs: true`,
//! `top_logprobs: N`), the log-probability of every generated token and of
//! the N most likely alternatives at that position. For a reply that contains
//! `"clarity": 4`, the alternatives at the position of `4` say how sure the
//! model was: [`weighted_scores`] turns them into Σ p(s)·s over the scale's
//! score tokens, with the probabilities renormalised over those tokens (mass
//! on tokens that are not scores is left out). The result is recorded beside
//! the sampled score, never instead of it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::panel::Scale;

/// One generated token and its most likely alternatives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    pub token: String,
    /// Natural log of the token's probability.
    pub logprob: f64,
    /// The most likely tokens at this position (the sampled one usually among them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<TopLogprob>,
}

/// An alternative token at one position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopLogprob {
    pub token: String,
    pub logprob: f64,
}

/// From a model's raw next-token logits: the log-probability of token
/// `chosen`, and the `k` most likely tokens with theirs (most likely first).
pub fn top_of_logits(logits: &[f32], chosen: i32, k: usize) -> (f64, Vec<(i32, f64)>) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if !max.is_finite() {
        return (f64::NEG_INFINITY, Vec::new());
    }
    let sum: f64 = logits.iter().map(|&l| f64::from(l - max).exp()).sum();
    let log_z = f64::from(max) + sum.ln();
    let logprob = |i: usize| f64::from(logits[i]) - log_z;
    let mut best: Vec<usize> = Vec::with_capacity(k + 1);
    for i in (0..logits.len()).take_while(|_| k > 0) {
        if best.len() < k || logits[i] > logits[best[best.len() - 1]] {
            let at = best.partition_point(|&j| logits[j] >= logits[i]);
            best.insert(at, i);
            best.truncate(k);
        }
    }
    let chosen_lp = usize::try_from(chosen).ok().filter(|&c| c < logits.len()).map_or(f64::NEG_INFINITY, logprob);
    (chosen_lp, best.into_iter().map(|i| (i as i32, logprob(i))).collect())
}

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

    #[test]
    fn top_of_logits_is_a_normalised_best_first_list() {
        let logits = [0.0f32, 2.0, 1.0, 2.0f32.ln() + 2.0, -5.0];
        let (chosen, best) = top_of_logits(&logits, 2, 3);
        let ids: Vec<i32> = best.iter().map(|b| b.0).collect();
        assert_eq!(ids, vec![3, 1, 2]);
        let z: f64 = logits.iter().map(|&l| f64::from(l).exp()).sum();
        assert!((chosen - (1.0f64.exp() / z).ln()).abs() < 1e-9);
        assert!((best[0].1 - best[1].1 - 2.0f64.ln()).abs() < 1e-6, "token 3 is twice as likely as token 1");
        assert_eq!(top_of_logits(&logits, 99, 0), (f64::NEG_INFINITY, vec![]));
    }

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
