//! Token log-probabilities.
//!
//! Servers that speak the OpenAI API return, when asked (`logprobs: true`,
//! `top_logprobs: N`), the log-probability of every generated token and of
//! the N most likely alternatives at that position; the embedded model
//! computes the same from its logits ([`top_of_logits`]). The engine weighs
//! a reply's scores by them (see `engine::weighted`).

use serde::{Deserialize, Serialize};

/// One generated token and its most likely alternatives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    pub token: String,
    /// Natural log of the token's probability.
    pub logprob: f64,
    /// The most likely tokens at this position (the sampled one usually among them).
    /// (`top_logprobs` in OpenAI-compatible replies.)
    #[serde(default, alias = "top_logprobs", skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<TopLogprob>,
}

/// A choice's `logprobs` as OpenAI-compatible servers send them, streamed
/// or whole: one entry a generated token, its alternatives under
/// `top_logprobs` (other fields, such as `bytes`, are not read).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ChoiceLogprobs {
    #[serde(default)]
    pub content: Option<Vec<TokenLogprob>>,
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
}
