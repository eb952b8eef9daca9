//! A configured context window for an HTTP provider (`context_length` in
//! moot.toml): the engine then shortens long discussions to fit it.

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{ChatRequest, Completion, DeltaSender, Provider, ProviderError};

/// A provider whose models hold `context_length` tokens, prompt and reply
/// together. Everything else passes through.
pub struct WindowedProvider {
    inner: Arc<dyn Provider>,
    context_length: u64,
}

impl WindowedProvider {
    pub fn new(inner: Arc<dyn Provider>, context_length: u64) -> Self {
        Self { inner, context_length }
    }
}

#[async_trait]
impl Provider for WindowedProvider {
    delegate!(inner: info, queue_note, read_ahead, structured_output, pool_status, check_pool, count_tokens);

    fn context_window(&self, _model: &str) -> Option<u64> {
        Some(self.context_length)
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        deltas: &DeltaSender,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        self.inner.stream(request, deltas, cancel).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ChatMessage;
    use crate::testkit::scripted::ScriptedProvider;

    #[tokio::test]
    async fn the_configured_window_is_reported_and_counting_passes_through() {
        let inner: Arc<dyn Provider> = Arc::new(ScriptedProvider::new(|_, _| "ok".into()));
        assert_eq!(inner.context_window(""), None, "a provider knows no window by default");
        let p = WindowedProvider::new(inner, 32_768);
        assert_eq!(p.context_window("any"), Some(32_768));
        let messages = [ChatMessage::user("x".repeat(30))];
        assert_eq!(p.count_tokens("", &messages).await.unwrap(), 10 + crate::provider::MESSAGE_OVERHEAD_TOKENS);
    }
}
