//! One provider's collector: requests gather in a queue, go up as a batch
//! when none has joined for [`BatchSettings::gather`] (or the batch is
//! full), and a watcher per batch polls it, fetches its results and hands
//! each waiting call its reply.
//!
//! [`BatchSettings::gather`]: super::BatchSettings::gather

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::Utc;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::Shared;
use super::api::{BatchApi, Line, LineResult, Remote, RemoteState, batch_key};
use super::store::{BatchRecord, RecordState};

/// Attempts at submitting a batch, or at fetching its results, when the
/// server's answer says another may succeed.
const ATTEMPTS: u32 = 3;
/// Failed looks in a row at a pending batch before its calls are asked live.
const POLL_ERRORS: u32 = 8;

/// What a waiting call is handed.
#[derive(Debug, Clone)]
pub(super) enum Delivery {
    /// The batch's id and the reply (JSON text).
    Reply(String, String),
    /// No reply will come from a batch; why (the call is asked live next).
    Failed(String),
}

/// What became of a request handed to the collector.
pub(super) enum Enqueued {
    /// Send it live (batching is off for this provider, or it was asked live before).
    Live,
    /// Its reply is here already: the batch's id and the reply.
    Ready(String, String),
    /// Wait for it.
    Wait(oneshot::Receiver<Delivery>),
}

#[derive(Default)]
struct Inner {
    /// Requests waiting to be submitted.
    queue: Vec<Line>,
    /// Their custom ids, and those of requests being submitted.
    queued: HashSet<String>,
    /// Calls waiting, by custom id.
    waiters: HashMap<String, Vec<oneshot::Sender<Delivery>>>,
    /// Custom id → the batch being watched for it.
    watched: HashMap<String, String>,
    /// Replies received, by custom id: the batch and the reply.
    replies: HashMap<String, (String, String)>,
    /// The requests not answered yet, by custom id (to submit them again).
    lines: HashMap<String, Line>,
    /// Custom ids to ask live from now on.
    live: HashSet<String>,
    last_arrival: Option<Instant>,
    gathering: bool,
    /// The server refused a batch outright: every call goes live.
    disabled: bool,
}

pub(super) struct Collector {
    name: String,
    api: Arc<dyn BatchApi>,
    shared: Arc<Shared>,
    inner: Mutex<Inner>,
}

impl Collector {
    pub(super) fn new(name: String, api: Arc<dyn BatchApi>, shared: Arc<Shared>) -> Self {
        Self { name, api, shared, inner: Mutex::default() }
    }

    pub(super) fn api(&self) -> &Arc<dyn BatchApi> {
        &self.api
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ask request `id` live from now on (its batch reply could not be read).
    pub(super) fn go_live(&self, id: &str) {
        self.lock().live.insert(id.to_string());
        self.shared.status(|s| s.asked_live += 1);
    }

    /// Hand a request to the collector.
    pub(super) fn enqueue(self: &Arc<Self>, line: Line) -> Enqueued {
        let settings = self.shared.settings;
        let mut g = self.lock();
        let id = line.custom_id.clone();
        if g.disabled || g.live.contains(&id) {
            return Enqueued::Live;
        }
        if let Some((batch, reply)) = g.replies.get(&id) {
            self.shared.status(|s| s.answered += 1);
            return Enqueued::Ready(batch.clone(), reply.clone());
        }
        let (tx, rx) = oneshot::channel();
        g.waiters.entry(id.clone()).or_default().push(tx);
        g.lines.insert(id.clone(), line.clone());
        if g.watched.contains_key(&id) || g.queued.contains(&id) {
            return Enqueued::Wait(rx);
        }
        // A batch an earlier invocation was submitting when it stopped: ask
        // the server whether it took it before submitting it again.
        if let Some(record) =
            self.shared.store.find(&self.name, self.api.endpoint(), &id).filter(|r| r.state == RecordState::Submitting)
        {
            for r in &record.requests {
                g.watched.insert(r.clone(), String::new());
            }
            drop(g);
            let me = self.clone();
            tokio::spawn(async move { me.adopt(record).await });
            return Enqueued::Wait(rx);
        }
        // A batch an earlier invocation submitted: watch it rather than submit again.
        if let Some(record) = self.shared.store.find(&self.name, self.api.endpoint(), &id) {
            let over = record.state == RecordState::Ended;
            self.follow(&mut g, record.id, record.requests, over);
            self.shared.status(|s| s.resumed += 1);
            return Enqueued::Wait(rx);
        }
        if self.shared.store.unrun(&self.name, self.api.endpoint(), &id) > settings.resubmit {
            g.waiters.remove(&id);
            g.live.insert(id);
            self.shared.status(|s| s.asked_live += 1);
            return Enqueued::Live;
        }
        self.push(&mut g, line);
        Enqueued::Wait(rx)
    }

    /// Put a line in the queue and make sure a gatherer runs.
    fn push(self: &Arc<Self>, g: &mut Inner, line: Line) {
        g.queued.insert(line.custom_id.clone());
        g.queue.push(line);
        g.last_arrival = Some(Instant::now());
        self.shared.status(|s| s.queued += 1);
        if !g.gathering {
            g.gathering = true;
            let me = self.clone();
            tokio::spawn(async move { me.gather().await });
        }
    }

    /// Submit the queue once it has been quiet long enough or is full, until it is empty.
    async fn gather(self: Arc<Self>) {
        let settings = self.shared.settings;
        loop {
            let due = {
                let g = self.lock();
                let full = g.queue.len() >= settings.max_requests;
                g.last_arrival.map(|t| t + settings.gather).filter(|due| !full && *due > Instant::now())
            };
            if let Some(due) = due {
                tokio::time::sleep_until(due).await;
                continue;
            }
            let lines = {
                let mut g = self.lock();
                let take = g.queue.len().min(settings.max_requests.max(1));
                let taken: Vec<Line> = g.queue.drain(..take).collect();
                self.shared.status(|s| s.queued = s.queued.saturating_sub(taken.len()));
                // Calls stopped meanwhile (Ctrl-C) need no batch.
                let (waited, dropped): (Vec<Line>, Vec<Line>) =
                    taken.into_iter().partition(|l| waits(&g, &l.custom_id));
                for l in &dropped {
                    g.queued.remove(&l.custom_id);
                }
                if waited.is_empty() && g.queue.is_empty() {
                    g.gathering = false;
                    return;
                }
                waited
            };
            for group in self.groups(lines) {
                self.submit(group).await;
            }
        }
    }

    /// The lines split into batches the API takes (one model each for
    /// OpenAI; none larger than its size limit).
    fn groups(&self, lines: Vec<Line>) -> Vec<Vec<Line>> {
        let groups = if !self.api.one_model_per_batch() {
            if lines.is_empty() { Vec::new() } else { vec![lines] }
        } else {
            let mut by_model: BTreeMap<String, Vec<Line>> = BTreeMap::new();
            for l in lines {
                by_model.entry(l.model.clone()).or_default().push(l);
            }
            by_model.into_values().collect()
        };
        let max = self.api.max_bytes();
        groups.into_iter().flat_map(|g| split_by_size(g, max)).collect()
    }

    /// Submit `lines` as one batch. Its record is written first (state
    /// `submitting`, with the batch's mark), and a failed attempt that may
    /// have reached the server asks it for the mark before trying again, so
    /// that no batch is submitted twice.
    async fn submit(self: &Arc<Self>, lines: Vec<Line>) {
        let key = batch_key(&lines);
        let ids: Vec<String> = lines.iter().map(|l| l.custom_id.clone()).collect();
        let intent = BatchRecord {
            id: String::new(),
            key: Some(key.clone()),
            provider: self.name.clone(),
            kind: self.api.kind().to_string(),
            endpoint: self.api.endpoint().to_string(),
            submitted: Utc::now(),
            state: RecordState::Submitting,
            ended: None,
            input_file: None,
            results: Vec::new(),
            counts: None,
            requests: ids.clone(),
            not_run: Vec::new(),
            note: None,
        };
        if let Err(e) = self.shared.store.intend(intent) {
            self.shared.note(format!("{e}; a resumed run will not find the batch being submitted"));
        }
        let mut attempt = 1;
        let result = loop {
            match self.api.submit(&lines, &key).await {
                Err(e) if e.is_retryable() && attempt < ATTEMPTS => {
                    tokio::time::sleep(self.shared.settings.poll * attempt).await;
                    if let Ok(Some(taken)) = self.api.find(&key).await {
                        break Ok(taken);
                    }
                    attempt += 1;
                }
                other => break other,
            }
        };
        match result {
            Ok(submitted) => {
                if let Err(e) = self.shared.store.confirm(&key, &submitted.id, submitted.input_file) {
                    self.shared.note(format!("{e}; a resumed run will not find batch {}", submitted.id));
                }
                self.shared.status(|s| {
                    s.submitted += 1;
                    s.requests += ids.len();
                });
                self.follow(&mut self.lock(), submitted.id, ids, false);
            }
            Err(e) => {
                let _ = self.shared.store.withdraw(&key);
                let why = format!("{}: a batch could not be submitted ({e})", self.name);
                if !e.is_retryable() {
                    self.lock().disabled = true;
                    self.shared.note(format!("{why}; its calls run live from now on"));
                }
                let failed: Vec<(String, String)> = ids.into_iter().map(|id| (id, why.clone())).collect();
                self.fail(failed);
            }
        }
    }

    /// Watch batch `id`, which holds requests `ids` (no longer queued), in a
    /// task of its own; `over`: known to be over already. Under the lock
    /// `g`, so that a request of the batch that comes meanwhile waits for it.
    fn follow(self: &Arc<Self>, g: &mut Inner, id: String, ids: Vec<String>, over: bool) {
        for r in &ids {
            g.queued.remove(r);
            g.watched.insert(r.clone(), id.clone());
        }
        self.shared.status(|s| s.pending += 1);
        let me = self.clone();
        tokio::spawn(async move { me.watch(id, ids, over).await });
    }

    /// A batch an earlier invocation was submitting when it stopped: the
    /// server took it (found by its mark) and it is watched as one submitted
    /// then, or it did not and the requests waiting for it are queued again.
    async fn adopt(self: Arc<Self>, record: BatchRecord) {
        let key = record.key.clone().unwrap_or_default();
        if let Ok(Some(taken)) = self.api.find(&key).await {
            if let Err(e) = self.shared.store.confirm(&key, &taken.id, taken.input_file) {
                self.shared.note(format!("{e}; a resumed run will not find batch {}", taken.id));
            }
            self.shared.status(|s| s.resumed += 1);
            self.follow(&mut self.lock(), taken.id, record.requests, false);
            return;
        }
        let _ = self.shared.store.withdraw(&key);
        let mut g = self.lock();
        for id in &record.requests {
            if g.watched.get(id).is_some_and(String::is_empty) {
                g.watched.remove(id);
                if waits(&g, id)
                    && let Some(line) = g.lines.get(id).cloned()
                {
                    self.push(&mut g, line);
                }
            }
        }
    }

    /// Watch batch `id` until it is over (`over`: known to be already),
    /// then hand out its results.
    async fn watch(self: Arc<Self>, batch: String, ids: Vec<String>, over: bool) {
        let poll = self.shared.settings.poll;
        let mut wait = poll;
        let mut errors = 0;
        let mut first = over;
        let remote = loop {
            if !first {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(poll * 10);
            }
            first = false;
            if !self.anyone_waits(&ids) {
                // The run was stopped: the batch is left for a later --resume.
                self.unwatch(&ids);
                self.shared.status(|s| s.pending = s.pending.saturating_sub(1));
                return;
            }
            match self.api.status(&batch).await {
                Ok(remote) if remote.state.is_over() => break remote,
                Ok(remote) => {
                    errors = 0;
                    let _ = self.shared.store.update(&batch, |r| r.counts = remote.counts.clone());
                }
                // The server does not know the batch (another account, deleted): not run.
                Err(e) if !e.is_retryable() => {
                    let why = format!("its state could not be read ({e})");
                    let gone = Remote { state: RemoteState::Failed(why), results: Vec::new(), counts: None };
                    self.finish(&batch, &ids, gone, HashMap::new());
                    return;
                }
                Err(e) => {
                    errors += 1;
                    if errors >= POLL_ERRORS {
                        let why = format!("batch {batch}: its state could not be read ({e})");
                        self.give_up(&batch, &ids, why);
                        return;
                    }
                }
            }
        };
        let mut attempt = 1;
        let results = loop {
            match self.api.results(&remote).await {
                Err(e) if e.is_retryable() && attempt < ATTEMPTS => {
                    tokio::time::sleep(poll * attempt).await;
                    attempt += 1;
                }
                other => break other,
            }
        };
        match results {
            Ok(results) => self.finish(&batch, &ids, remote, results),
            Err(e) => self.give_up(&batch, &ids, format!("batch {batch}: its results could not be read ({e})")),
        }
    }

    fn anyone_waits(&self, ids: &[String]) -> bool {
        let g = self.lock();
        ids.iter().any(|id| waits(&g, id))
    }

    fn unwatch(&self, ids: &[String]) {
        let mut g = self.lock();
        for id in ids {
            g.watched.remove(id);
            g.waiters.remove(id);
        }
    }

    /// No reply will come from batch `batch`: its calls go live.
    fn give_up(&self, batch: &str, ids: &[String], why: String) {
        self.unwatch_keep_waiters(ids);
        self.shared.status(|s| s.pending = s.pending.saturating_sub(1));
        self.shared.note(format!("{}: {why}; its calls are asked live", self.name));
        let _ = self.shared.store.update(batch, |r| r.note = Some(why.clone()));
        self.fail(ids.iter().map(|id| (id.clone(), why.clone())).collect());
    }

    fn unwatch_keep_waiters(&self, ids: &[String]) {
        let mut g = self.lock();
        for id in ids {
            g.watched.remove(id);
        }
    }

    /// Hand out the results of a batch that is over.
    fn finish(self: &Arc<Self>, batch: &str, ids: &[String], remote: Remote, results: HashMap<String, LineResult>) {
        let state = match &remote.state {
            RemoteState::Expired => RecordState::Expired,
            RemoteState::Cancelled => RecordState::Cancelled,
            RemoteState::Failed(_) => RecordState::Failed,
            RemoteState::Ended | RemoteState::Pending => RecordState::Ended,
        };
        let mut not_run = Vec::new();
        let mut live = Vec::new();
        let mut answered = 0;
        {
            let mut g = self.lock();
            for id in ids {
                g.watched.remove(id);
                match results.get(id) {
                    Some(LineResult::Reply(reply)) => {
                        g.replies.insert(id.clone(), (batch.to_string(), reply.clone()));
                        g.lines.remove(id);
                        for tx in g.waiters.remove(id).unwrap_or_default() {
                            answered += usize::from(tx.send(Delivery::Reply(batch.to_string(), reply.clone())).is_ok());
                        }
                    }
                    Some(LineResult::Error(why)) => live.push((id.clone(), format!("batch {batch}: {why}"))),
                    Some(LineResult::NotRun(_)) => not_run.push(id.clone()),
                    None if state.is_dead() => not_run.push(id.clone()),
                    None => live.push((id.clone(), format!("batch {batch} ended without a result for this request"))),
                }
            }
        }
        let why_dead = match &remote.state {
            RemoteState::Failed(why) => format!("failed ({why})"),
            _ => state.as_str().to_string(),
        };
        let update = |r: &mut BatchRecord| {
            r.state = state;
            r.ended = Some(Utc::now());
            r.results = remote.results.clone();
            r.counts = remote.counts.clone();
            r.not_run = not_run.clone();
        };
        if let Err(e) = self.shared.store.update(batch, update) {
            self.shared.note(e.to_string());
        }
        // Requests the batch did not run: once more in a new batch, then live.
        let mut again = 0;
        {
            let mut g = self.lock();
            for id in &not_run {
                let unrun = self.shared.store.unrun(&self.name, self.api.endpoint(), id);
                match g.lines.get(id).cloned() {
                    Some(line) if unrun <= self.shared.settings.resubmit && waits(&g, id) => {
                        self.push(&mut g, line);
                        again += 1;
                    }
                    Some(_) => live.push((id.clone(), format!("batch {batch} {why_dead} before running this request"))),
                    None => {}
                }
            }
        }
        if !not_run.is_empty() {
            let note = format!("{why_dead}: {} requests not run, {again} submitted again", not_run.len());
            let _ = self.shared.store.update(batch, |r| r.note = Some(note));
        }
        self.shared.status(|s| {
            s.pending = s.pending.saturating_sub(1);
            s.done += 1;
            s.answered += answered;
            s.resubmitted += again;
        });
        self.fail(live);
    }

    /// These calls get no reply from a batch: each is told why and asked live next.
    fn fail(&self, failed: Vec<(String, String)>) {
        if failed.is_empty() {
            return;
        }
        let mut g = self.lock();
        let mut told = 0;
        for (id, why) in failed {
            g.queued.remove(&id);
            g.live.insert(id.clone());
            g.lines.remove(&id);
            for tx in g.waiters.remove(&id).unwrap_or_default() {
                told += usize::from(tx.send(Delivery::Failed(why.clone())).is_ok());
            }
        }
        self.shared.status(|s| s.asked_live += told);
    }
}

/// Whether a call still waits for request `id`.
fn waits(g: &Inner, id: &str) -> bool {
    g.waiters.get(id).is_some_and(|w| w.iter().any(|tx| !tx.is_closed()))
}

/// Bytes a line takes in a batch beside its body: its id and the wrapper
/// around them (`{"custom_id":…,"method":"POST","url":…,"body":…}`), with
/// room to spare.
pub(super) const LINE_OVERHEAD: usize = 128;

/// `lines` cut, in order, into runs of at most `max` bytes each (a line
/// larger than `max` alone goes in a run of its own: the server says
/// whether it takes it).
pub(super) fn split_by_size(lines: Vec<Line>, max: usize) -> Vec<Vec<Line>> {
    let mut out: Vec<Vec<Line>> = Vec::new();
    let mut bytes = 0;
    for line in lines {
        let size = line.body.len() + line.custom_id.len() + LINE_OVERHEAD;
        match out.last_mut() {
            Some(run) if bytes + size <= max => {
                bytes += size;
                run.push(line);
            }
            _ => {
                bytes = size;
                out.push(vec![line]);
            }
        }
    }
    out
}
