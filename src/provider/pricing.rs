//! The cost of calls, from prices per million tokens.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::{ChatRequest, Completion, DeltaSender, Provider, ProviderError, Usage};

/// Prices of one provider, per million tokens (any currency; reports use it as is).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Prices {
    pub input_per_million: f64,
    pub output_per_million: f64,
}

impl Prices {
    /// The cost of `usage` at these prices (a batch call's tokens at the batch price).
    pub fn cost(&self, usage: &Usage) -> f64 {
        let (input, output) = usage.billed_tokens();
        (input * self.input_per_million + output * self.output_per_million) / 1_000_000.0
    }
}

/// A provider whose completions carry their cost in [`Usage::cost`].
pub struct PricedProvider {
    inner: Arc<dyn Provider>,
    prices: Prices,
}

impl PricedProvider {
    pub fn new(inner: Arc<dyn Provider>, prices: Prices) -> Self {
        Self { inner, prices }
    }
}

#[async_trait]
impl Provider for PricedProvider {
    delegate!(inner: info, queue_note, read_ahead, context_window, structured_output, pool_status, check_pool, count_tokens);

    async fn stream(
        &self,
        request: &ChatRequest,
        deltas: &DeltaSender,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        let mut completion = self.inner.stream(request, deltas, cancel).await?;
        completion.usage.cost = Some(self.prices.cost(&completion.usage));
        Ok(completion)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_per_million() {
        let p = Prices { input_per_million: 3.0, output_per_million: 15.0 };
        let u = Usage { input_tokens: 1000, output_tokens: 200, ..Usage::default() };
        assert!((p.cost(&u) - (0.003 + 0.003)).abs() < 1e-12);
    }
}
