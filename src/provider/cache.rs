//! A content-addressed, on-disk cache of model responses.
//!
//! The key is the SHA-256 of everything that determines a reply: provider
//! kind, base URL, model, the messages, `max_tokens`, temperature, seed and
//! response schema. An entry keeps the streamed deltas, so a hit replays the
//! stream (quickly, still delta by delta, so screens show it streaming) and
//! returns the stored completion marked `cached`. Only complete, successful
//! replies are stored; entries are written to a temporary file and renamed,
//! so a crash never leaves half an entry.
//!
//! Layout: `<dir>/<first two hex digits>/<key>.json`. The default folder is
//! `MOOT_CACHE_DIR`, else `responses/` in the platform cache directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::logprobs::TokenLogprob;
use super::{ChatMessage, ChatRequest, Completion, DeltaSender, Provider, ProviderError, ProviderInfo, Usage};

/// Format version of entries and keys; bump to invalidate old entries.
const VERSION: u32 = 1;

/// Errors of cache maintenance (`moot cache stats|clear`).
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct CacheError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Size of a cache folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct CacheStats {
    pub entries: u64,
    pub bytes: u64,
}

/// The stored form of one reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Entry {
    version: u32,
    deltas: Vec<String>,
    text: String,
    usage: Usage,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    logprobs: Option<Vec<TokenLogprob>>,
}

#[derive(Serialize)]
struct KeyMaterial<'a> {
    version: u32,
    kind: &'a str,
    base_url: Option<&'a str>,
    model: &'a str,
    messages: &'a [ChatMessage],
    max_tokens: u32,
    temperature: Option<f32>,
    /// Absent when not asked, so that keys of earlier requests still match.
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f32>,
    seed: Option<u64>,
    response_schema: Option<&'a serde_json::Value>,
    /// Absent when not asked, so that keys of earlier requests still match.
    #[serde(skip_serializing_if = "Option::is_none")]
    top_logprobs: Option<u8>,
}

/// The response cache in one folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseCache {
    dir: PathBuf,
}

impl ResponseCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The folder used when none is given: `MOOT_CACHE_DIR`, else
    /// `responses/` in the platform cache directory, else `./.moot-cache`.
    pub fn default_dir() -> PathBuf {
        if let Some(dir) = std::env::var_os("MOOT_CACHE_DIR").filter(|d| !d.is_empty()) {
            return PathBuf::from(dir);
        }
        directories::ProjectDirs::from("", "", "moot")
            .map(|d| d.cache_dir().join("responses"))
            .unwrap_or_else(|| PathBuf::from(".moot-cache"))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of `request` sent to the provider described by `info`.
    pub fn key(info: &ProviderInfo, request: &ChatRequest) -> String {
        let model = if request.model.is_empty() { info.model.as_str() } else { request.model.as_str() };
        let material = KeyMaterial {
            version: VERSION,
            kind: &info.kind,
            base_url: info.base_url.as_deref().map(|u| u.trim_end_matches('/')),
            model,
            messages: &request.messages,
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            top_p: request.top_p,
            seed: request.seed,
            response_schema: request.response_schema.as_deref(),
            top_logprobs: request.top_logprobs,
        };
        // Serialising plain data to a Vec cannot fail; an empty key would only miss.
        let bytes = serde_json::to_vec(&material).unwrap_or_default();
        hex::encode(Sha256::digest(&bytes))
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(&key[..2]).join(format!("{key}.json"))
    }

    async fn load(&self, key: &str) -> Option<Entry> {
        let bytes = tokio::fs::read(self.path(key)).await.ok()?;
        serde_json::from_slice::<Entry>(&bytes).ok().filter(|e| e.version == VERSION)
    }

    async fn store(&self, key: &str, entry: &Entry) -> std::io::Result<()> {
        let path = self.path(key);
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let bytes = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
        tokio::fs::write(&tmp, bytes).await?;
        tokio::fs::rename(&tmp, &path).await
    }

    /// Count entries and bytes (a missing folder is an empty cache).
    pub fn stats(&self) -> Result<CacheStats, CacheError> {
        let mut stats = CacheStats::default();
        visit(&self.dir, &mut |path, meta| {
            if path.extension().is_some_and(|e| e == "json") {
                stats.entries += 1;
                stats.bytes += meta.len();
            }
            Ok(())
        })?;
        Ok(stats)
    }

    /// Remove every entry; returns what was removed.
    pub fn clear(&self) -> Result<CacheStats, CacheError> {
        let stats = self.stats()?;
        match std::fs::remove_dir_all(&self.dir) {
            Ok(()) => Ok(stats),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(stats),
            Err(source) => Err(CacheError { path: self.dir.clone(), source }),
        }
    }
}

fn visit(dir: &Path, f: &mut dyn FnMut(&Path, &std::fs::Metadata) -> Result<(), CacheError>) -> Result<(), CacheError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(CacheError { path: dir.to_owned(), source }),
    };
    for entry in entries {
        let entry = entry.map_err(|source| CacheError { path: dir.to_owned(), source })?;
        let path = entry.path();
        let meta = entry.metadata().map_err(|source| CacheError { path: path.clone(), source })?;
        if meta.is_dir() {
            visit(&path, f)?;
        } else {
            f(&path, &meta)?;
        }
    }
    Ok(())
}

/// A provider that answers from the [`ResponseCache`] when it can and stores
/// what the inner provider streams.
pub struct CachedProvider {
    inner: Arc<dyn Provider>,
    cache: ResponseCache,
}

impl CachedProvider {
    pub fn new(inner: Arc<dyn Provider>, cache: ResponseCache) -> Self {
        Self { inner, cache }
    }
}

#[async_trait]
impl Provider for CachedProvider {
    delegate!(inner: info, queue_note, read_ahead, context_window, structured_output, pool_status, check_pool, count_tokens);

    async fn stream(
        &self,
        request: &ChatRequest,
        deltas: &DeltaSender,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        let key = ResponseCache::key(&self.inner.info(), request);
        if let Some(entry) = self.cache.load(&key).await {
            for delta in entry.deltas {
                if cancel.is_cancelled() {
                    return Err(ProviderError::Cancelled);
                }
                let _ = deltas.send(delta);
                // Let the consumer see the stream arrive piece by piece.
                tokio::task::yield_now().await;
            }
            return Ok(Completion {
                text: entry.text,
                usage: entry.usage,
                finish_reason: entry.finish_reason,
                cached: true,
                logprobs: entry.logprobs,
                endpoint: None,
            });
        }
        // Tee the deltas: forward them as they come and keep them for the entry.
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        let mut kept = Vec::new();
        let call = async {
            let result = self.inner.stream(request, &tx, cancel).await;
            drop(tx);
            result
        };
        let forward = async {
            while let Some(delta) = rx.recv().await {
                let _ = deltas.send(delta.clone());
                kept.push(delta);
            }
        };
        let (result, ()) = tokio::join!(call, forward);
        let completion = result?;
        let entry = Entry {
            version: VERSION,
            deltas: kept,
            text: completion.text.clone(),
            usage: completion.usage,
            finish_reason: completion.finish_reason.clone(),
            logprobs: completion.logprobs.clone(),
        };
        if let Err(e) = self.cache.store(&key, &entry).await {
            tracing::warn!("cannot write the response cache in {}: {e}", self.cache.dir().display());
        }
        Ok(completion)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::scripted::ScriptedProvider;

    fn info() -> ProviderInfo {
        ProviderInfo {
            name: "x".into(),
            kind: "openai".into(),
            model: "m".into(),
            base_url: Some("http://h/v1".into()),
        }
    }

    #[test]
    fn key_depends_on_what_shapes_the_reply() {
        let base = ChatRequest::new(vec![ChatMessage::user("hi")]);
        let k = ResponseCache::key(&info(), &base);
        assert_eq!(k.len(), 64);
        assert_eq!(k, ResponseCache::key(&info(), &base.clone()));
        // An empty model means the provider's default: the same request.
        assert_eq!(k, ResponseCache::key(&info(), &ChatRequest { model: "m".into(), ..base.clone() }));
        let variants = [
            ChatRequest { model: "other".into(), ..base.clone() },
            ChatRequest { seed: Some(1), ..base.clone() },
            ChatRequest { temperature: Some(0.5), ..base.clone() },
            ChatRequest { top_p: Some(0.1), ..base.clone() },
            ChatRequest { max_tokens: 7, ..base.clone() },
            ChatRequest { messages: vec![ChatMessage::user("hi!")], ..base.clone() },
        ];
        for v in &variants {
            assert_ne!(k, ResponseCache::key(&info(), v), "{v:?}");
        }
        let other_url = ProviderInfo { base_url: Some("http://other/v1".into()), ..info() };
        assert_ne!(k, ResponseCache::key(&other_url, &base));
        let other_kind = ProviderInfo { kind: "anthropic".into(), ..info() };
        assert_ne!(k, ResponseCache::key(&other_kind, &base));
    }

    #[tokio::test]
    async fn a_hit_replays_the_stream_and_stats_and_clear_work() {
        let dir = tempfile::tempdir().unwrap();
        let scripted = Arc::new(ScriptedProvider::new(|_, i| format!("reply {i}").into()).with_chunk(2));
        let cache = ResponseCache::new(dir.path().join("c"));
        let provider = CachedProvider::new(scripted.clone(), cache.clone());
        let request = ChatRequest::new(vec![ChatMessage::user("hi")]);
        let cancel = CancellationToken::new();

        let (tx, mut rx) = mpsc::unbounded_channel();
        let first = provider.stream(&request, &tx, &cancel).await.unwrap();
        assert!(!first.cached);
        let mut streamed = Vec::new();
        while let Ok(d) = rx.try_recv() {
            streamed.push(d);
        }
        assert_eq!(streamed.concat(), "reply 0");

        let second = provider.stream(&request, &tx, &cancel).await.unwrap();
        assert!(second.cached);
        assert_eq!(second.text, "reply 0");
        assert_eq!(second.usage, first.usage);
        let mut replayed = Vec::new();
        while let Ok(d) = rx.try_recv() {
            replayed.push(d);
        }
        assert_eq!(replayed, streamed);
        assert_eq!(scripted.calls(), 1);

        let stats = cache.stats().unwrap();
        assert_eq!(stats.entries, 1);
        assert!(stats.bytes > 0);
        assert_eq!(cache.clear().unwrap().entries, 1);
        assert_eq!(cache.stats().unwrap(), CacheStats::default());
        let third = provider.stream(&request, &tx, &cancel).await.unwrap();
        assert!(!third.cached);
        assert_eq!(scripted.calls(), 2);
    }

    #[tokio::test]
    async fn failures_are_not_stored() {
        let dir = tempfile::tempdir().unwrap();
        let scripted = Arc::new(ScriptedProvider::new(|_, i| {
            if i == 0 {
                crate::testkit::scripted::ScriptedReply::Fail(ProviderError::Incomplete("cut".into()))
            } else {
                "ok".into()
            }
        }));
        let provider = CachedProvider::new(scripted.clone(), ResponseCache::new(dir.path()));
        let request = ChatRequest::new(vec![ChatMessage::user("hi")]);
        let (tx, _rx) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        assert!(provider.stream(&request, &tx, &cancel).await.is_err());
        assert_eq!(provider.stream(&request, &tx, &cancel).await.unwrap().text, "ok");
        assert!(provider.stream(&request, &tx, &cancel).await.unwrap().cached);
        assert_eq!(scripted.calls(), 2);
    }
}
