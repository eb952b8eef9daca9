//! The collector with a batch API of its own making: gathering, delivery,
//! an earlier run's batch, a batch the server no longer knows.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::api::{BatchApi, Line, LineResult, Remote, RemoteState, Submitted};
use super::store::{BatchRecord, RecordState};
use super::*;
use crate::provider::{ChatMessage, ChatRequest, Completion, DeltaSender, ProviderError, ProviderInfo, Usage};

const MAX_BYTES: usize = 190_000_000;

/// A batch API that answers each line with its custom id, ends a batch at
/// the first look, and says "no such batch" for ids in `unknown`.
#[derive(Default)]
struct FakeApi {
    submitted: Mutex<Vec<Vec<String>>>,
    unknown: Mutex<Vec<String>>,
}

#[async_trait]
impl BatchApi for FakeApi {
    fn kind(&self) -> &'static str {
        "openai"
    }
    fn endpoint(&self) -> &str {
        "http://fake/v1"
    }
    fn body(&self, request: &ChatRequest) -> Result<(String, bool), ProviderError> {
        Ok((serde_json::json!({"model": "m", "text": request.messages[0].content}).to_string(), false))
    }
    fn one_model_per_batch(&self) -> bool {
        true
    }
    fn max_bytes(&self) -> usize {
        MAX_BYTES
    }
    async fn submit(&self, lines: &[Line], _key: &str) -> Result<Submitted, ProviderError> {
        let mut s = self.submitted.lock().unwrap();
        s.push(lines.iter().map(|l| l.custom_id.clone()).collect());
        Ok(Submitted { id: format!("b{}", s.len()), input_file: None })
    }
    async fn status(&self, id: &str) -> Result<Remote, ProviderError> {
        if self.unknown.lock().unwrap().iter().any(|u| u == id) {
            return Err(ProviderError::Http { status: 404, body: "no such batch".into(), retry_after: None });
        }
        Ok(Remote { state: RemoteState::Ended, results: vec![id.to_string()], counts: None })
    }
    async fn results(&self, remote: &Remote) -> Result<HashMap<String, LineResult>, ProviderError> {
        let s = self.submitted.lock().unwrap();
        let at: usize = remote.results[0][1..].parse().unwrap();
        Ok(s[at - 1].iter().map(|id| (id.clone(), LineResult::Reply(id.clone()))).collect())
    }
    fn completion(&self, reply: &str, _structured: bool) -> Result<Completion, ProviderError> {
        let usage = Usage { input_tokens: 10, output_tokens: 2, ..Usage::default() };
        Ok(Completion { text: format!("reply {reply}"), usage, ..Completion::default() })
    }
}

/// A live provider that must not be called.
struct NoLive;

#[async_trait]
impl Provider for NoLive {
    fn info(&self) -> ProviderInfo {
        ProviderInfo { name: "fake".into(), kind: "openai".into(), model: "m".into(), base_url: None }
    }
    async fn stream(
        &self,
        _: &ChatRequest,
        _: &DeltaSender,
        _: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        panic!("a batched call went live")
    }
}

fn settings() -> BatchSettings {
    BatchSettings {
        all: true,
        poll: Duration::from_millis(1),
        gather: Duration::from_millis(20),
        ..BatchSettings::default()
    }
}

fn request(item: &str, text: &str) -> ChatRequest {
    let mut r = ChatRequest::new(vec![ChatMessage::user(text)]);
    r.batch = Some(Arc::new(BatchTag { item: item.into(), turn: "A|initial".into() }));
    r
}

async fn call(p: &Arc<dyn Provider>, r: &ChatRequest) -> Completion {
    let (tx, _rx) = mpsc::unbounded_channel();
    tokio::time::timeout(Duration::from_secs(10), p.stream(r, &tx, &CancellationToken::new()))
        .await
        .expect("answered")
        .expect("a reply")
}

#[tokio::test]
async fn requests_gather_into_one_batch_and_a_reply_is_kept() {
    let api = Arc::new(FakeApi::default());
    let batcher = Batcher::new(settings(), None).unwrap();
    let p = batcher.wrap("fake", Arc::new(NoLive), api.clone());
    let (a, b) = (request("i1", "one"), request("i2", "two"));
    let (ra, rb) = tokio::join!(call(&p, &a), call(&p, &b));
    assert_eq!(api.submitted.lock().unwrap().len(), 1, "one batch for both");
    assert!(ra.text.starts_with("reply i1-") && rb.text.starts_with("reply i2-"), "{} / {}", ra.text, rb.text);
    assert_eq!((ra.usage.batch_input_tokens, ra.usage.batch_output_tokens), (Some(10), Some(2)));
    assert_eq!(ra.endpoint.as_deref(), Some("batch b1"));
    // The same request again (another identical call) is answered from the reply kept.
    assert_eq!(call(&p, &a).await.text, ra.text);
    assert_eq!(api.submitted.lock().unwrap().len(), 1);
    let status = batcher.status();
    assert_eq!((status.submitted, status.requests, status.done, status.answered), (1, 2, 1, 3));
}

#[tokio::test]
async fn an_earlier_runs_batch_is_collected_and_a_forgotten_one_submitted_again() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("batches.json");
    let api = Arc::new(FakeApi::default());
    let r = request("i1", "one");
    let (body, _) = api.body(&r).unwrap();
    let id = custom_id(r.batch.as_ref().unwrap(), &body);
    // An earlier run submitted b1 with this request.
    api.submitted.lock().unwrap().push(vec![id.clone()]);
    let record = BatchRecord {
        key: None,
        id: "b1".into(),
        provider: "fake".into(),
        kind: "openai".into(),
        endpoint: "http://fake/v1".into(),
        submitted: chrono::Utc::now(),
        state: RecordState::Submitted,
        ended: None,
        input_file: None,
        results: Vec::new(),
        counts: None,
        requests: vec![id.clone()],
        not_run: Vec::new(),
        note: None,
    };
    Store::open(&file).unwrap().add(record.clone()).unwrap();
    let batcher = Batcher::new(settings(), Some(&file)).unwrap();
    let p = batcher.wrap("fake", Arc::new(NoLive), api.clone());
    assert_eq!(call(&p, &r).await.endpoint.as_deref(), Some("batch b1"));
    assert_eq!(api.submitted.lock().unwrap().len(), 1, "nothing submitted again");
    assert_eq!(batcher.status().resumed, 1);
    assert_eq!(batcher.records()[0].state, RecordState::Ended);

    // A run whose earlier batch the server no longer knows submits its requests again.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("batches.json");
    Store::open(&file).unwrap().add(BatchRecord { id: "gone".into(), ..record }).unwrap();
    api.unknown.lock().unwrap().push("gone".into());
    let batcher = Batcher::new(settings(), Some(&file)).unwrap();
    let p = batcher.wrap("fake", Arc::new(NoLive), api.clone());
    assert_eq!(call(&p, &r).await.endpoint.as_deref(), Some("batch b2"));
    let records = batcher.records();
    assert_eq!(records[0].state, RecordState::Failed);
    assert!(records[0].note.as_deref().is_some_and(|n| n.contains("1 submitted again")), "{records:?}");
    assert_eq!(batcher.status().resubmitted, 1);
}

#[test]
fn batches_are_cut_to_the_vendors_size_limit_in_order() {
    let line = |i: usize, size: usize| Line { custom_id: format!("c{i}"), model: "m".into(), body: "x".repeat(size) };
    let lines: Vec<Line> = (0..7).map(|i| line(i, 1_000)).collect();
    let each = 1_000 + 2 + super::collector::LINE_OVERHEAD;
    let runs = super::collector::split_by_size(lines, 3 * each);
    let ids: Vec<Vec<&str>> = runs.iter().map(|r| r.iter().map(|l| l.custom_id.as_str()).collect()).collect();
    assert_eq!(ids, [vec!["c0", "c1", "c2"], vec!["c3", "c4", "c5"], vec!["c6"]]);
    // A line larger than the limit goes alone; nothing is lost.
    let runs = super::collector::split_by_size(vec![line(0, 10), line(1, 5_000), line(2, 10)], 1_000);
    assert_eq!(runs.iter().map(Vec::len).collect::<Vec<_>>(), [1, 1, 1]);
    assert!(super::collector::split_by_size(Vec::new(), 10).is_empty());
}
