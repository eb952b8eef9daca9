//! A small scriptable HTTP/1.1 server on 127.0.0.1, for tests and benchmarks.
//!
//! [`TestServer`] listens on an ephemeral port and answers each request with
//! the next queued [`Reply`] (or with a handler function once the queue is
//! empty). A reply chooses its status, headers and body framing, and writes
//! its body as a sequence of writes and pauses, so a test can split SSE
//! frames at exact byte offsets, stall a stream, cut the connection before the
//! body is complete, or never answer at all. Every request is recorded
//! (method, path, headers, body) so tests can assert on what a client sent.
//!
//! `GET /props` (llama.cpp's settings, which an `openai` provider asks for
//! once) is answered apart: 404 as most servers do, or what
//! [`TestServer::serve_props`] set; it is neither queued, recorded nor
//! counted, so that scripts and counts concern the chat calls alone
//! ([`TestServer::props_asked`] counts it).
//!
//! Each connection serves one request and is closed afterwards
//! (`connection: close`). Request bodies must carry a `content-length`.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use moot::testkit::server::{Reply, TestServer};
//! let server = TestServer::start().await?;
//! server.push(Reply::openai_stream(&["Hel", "lo"], Some((5, 2))));
//! // … point a client at server.base_url() …
//! let requests = server.wait_for_requests(1).await;
//! assert_eq!(requests[0].path, "/v1/chat/completions");
//! # Ok(()) }
//! ```
//!
//! The server stops when the [`TestServer`] is dropped; connections still
//! open (streams left hanging) are closed then.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Largest request head (request line and headers) accepted.
const MAX_HEAD: usize = 64 * 1024;

/// Builds the reply for a request when no scripted reply is queued.
pub type Handler = Arc<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>;

/// A request as the server received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    pub method: String,
    /// Path and query, as sent on the request line.
    pub path: String,
    /// Header names in lower case, values as sent, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When the whole request had been read.
    pub received_at: Instant,
}

impl RecordedRequest {
    /// The first value of a header (name compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON.
    pub fn body_json(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_slice(&self.body)
    }
}

/// How the body length is conveyed to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `transfer-encoding: chunked`; each write is one HTTP chunk.
    Chunked,
    /// `content-length` of all writes together.
    Length,
    /// No length: the body ends when the connection closes.
    Eof,
}

/// What happens after the last body step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Complete the body and close the connection.
    Finish,
    /// Close the connection without completing the body (no final chunk, or
    /// fewer bytes than `content-length`).
    Cut,
    /// Keep the connection open, sending nothing more, until the client
    /// closes it or the server is dropped.
    Hang,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Write(Vec<u8>),
    Sleep(Duration),
}

/// A scripted answer to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    steps: Vec<Step>,
    framing: Framing,
    ending: Ending,
    /// Read the request, then answer nothing at all.
    silent: bool,
}

impl Reply {
    /// An empty reply with this status (`content-length` framing).
    pub fn status(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            steps: Vec::new(),
            framing: Framing::Length,
            ending: Ending::Finish,
            silent: false,
        }
    }

    /// A `200 text/event-stream` reply with chunked framing; add events with
    /// [`Reply::event`] or raw bytes with [`Reply::write`].
    pub fn sse() -> Self {
        Self::status(200)
            .header("content-type", "text/event-stream")
            .header("cache-control", "no-cache")
            .framing(Framing::Chunked)
    }

    /// A JSON body with this status.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Self::status(status).header("content-type", "application/json").write(body.to_string())
    }

    /// A plain-text body with this status.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Self::status(status).header("content-type", "text/plain; charset=utf-8").write(body.into())
    }

    /// Accept the connection and read the request, but never answer.
    pub fn silent() -> Self {
        Self { silent: true, ..Self::status(200) }
    }

    /// An OpenAI-style chat completion stream: a role chunk, one chunk per
    /// delta, a `stop` chunk, a usage chunk when `usage` is
    /// `Some((prompt_tokens, completion_tokens))`, then `[DONE]`. Each event
    /// is one write.
    pub fn openai_stream(deltas: &[&str], usage: Option<(u64, u64)>) -> Self {
        openai::events(deltas, usage).iter().fold(Self::sse(), |reply, data| reply.event(data))
    }

    /// Add a response header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Choose the body framing.
    pub fn framing(mut self, framing: Framing) -> Self {
        self.framing = framing;
        self
    }

    /// Append one write of raw body bytes.
    pub fn write(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.steps.push(Step::Write(bytes.into()));
        self
    }

    /// Append `bytes` as several writes, split at the given byte offsets
    /// (ascending; offsets outside the bytes are ignored).
    pub fn write_split(mut self, bytes: impl AsRef<[u8]>, offsets: &[usize]) -> Self {
        let bytes = bytes.as_ref();
        let mut start = 0;
        for &cut in offsets {
            if cut > start && cut < bytes.len() {
                self.steps.push(Step::Write(bytes[start..cut].to_vec()));
                start = cut;
            }
        }
        self.steps.push(Step::Write(bytes[start..].to_vec()));
        self
    }

    /// Append one SSE event with this data as one write (`data: …` lines and a
    /// blank line; newlines in `data` become separate `data:` lines).
    pub fn event(self, data: &str) -> Self {
        self.write(sse_frame(data))
    }

    /// Pause before the next step.
    pub fn delay(mut self, pause: Duration) -> Self {
        self.steps.push(Step::Sleep(pause));
        self
    }

    /// Close the connection without completing the body.
    pub fn cut(mut self) -> Self {
        self.ending = Ending::Cut;
        self
    }

    /// Keep the connection open after the last step.
    pub fn hang(mut self) -> Self {
        self.ending = Ending::Hang;
        self
    }
}

/// One SSE frame carrying `data`.
pub fn sse_frame(data: &str) -> String {
    let mut frame = String::with_capacity(data.len() + 8);
    for line in data.split('\n') {
        frame.push_str("data: ");
        frame.push_str(line);
        frame.push('\n');
    }
    frame.push('\n');
    frame
}

/// Builders for OpenAI-style chat completion stream chunks.
pub mod openai {
    use serde_json::json;

    /// A chunk carrying one content delta.
    pub fn content_chunk(content: &str) -> String {
        chunk(json!({"content": content}), None)
    }

    /// The first chunk of a stream: the assistant role, empty content.
    pub fn role_chunk() -> String {
        chunk(json!({"role": "assistant", "content": ""}), None)
    }

    /// A chunk with an empty delta and this finish reason.
    pub fn finish_chunk(reason: &str) -> String {
        chunk(json!({}), Some(reason))
    }

    /// The final usage chunk (no choices).
    pub fn usage_chunk(prompt_tokens: u64, completion_tokens: u64) -> String {
        json!({
            "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0, "model": "test-model",
            "choices": [],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })
        .to_string()
    }

    /// A streamed reply in pieces, each carrying its log-probabilities as a
    /// server sends them when asked (`top_logprobs`): a piece with
    /// alternatives (token, probability) is a score token, its own
    /// log-probability its probability among them; the others have none.
    pub fn logprob_reply(pieces: &[(&str, &[(&str, f64)])]) -> super::Reply {
        let mut reply = super::Reply::sse().event(&role_chunk());
        for (text, top) in pieces {
            let alternatives: Vec<serde_json::Value> =
                top.iter().map(|(t, p)| json!({"token": t, "logprob": p.ln()})).collect();
            let logprob = top.iter().find(|(t, _)| t == text).map_or(-0.01, |(_, p)| p.ln());
            let chunk = json!({
                "id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null,
                             "logprobs": {"content": [{"token": text, "logprob": logprob, "top_logprobs": alternatives}]}}],
            });
            reply = reply.event(&chunk.to_string());
        }
        reply.event(&finish_chunk("stop")).event("[DONE]")
    }

    /// A chunk reporting an error inside the stream.
    pub fn error_chunk(message: &str, kind: &str) -> String {
        json!({"error": {"message": message, "type": kind}}).to_string()
    }

    /// The data of every event of a complete stream, `[DONE]` included.
    pub fn events(deltas: &[&str], usage: Option<(u64, u64)>) -> Vec<String> {
        let mut events = vec![role_chunk()];
        events.extend(deltas.iter().map(|d| content_chunk(d)));
        events.push(finish_chunk("stop"));
        if let Some((prompt, completion)) = usage {
            events.push(usage_chunk(prompt, completion));
        }
        events.push("[DONE]".to_owned());
        events
    }

    /// A complete stream body as SSE text.
    pub fn stream_body(deltas: &[&str], usage: Option<(u64, u64)>) -> String {
        events(deltas, usage).iter().map(|e| super::sse_frame(e)).collect()
    }

    fn chunk(delta: serde_json::Value, finish_reason: Option<&str>) -> String {
        json!({
            "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0, "model": "test-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            "usage": null,
        })
        .to_string()
    }
}

struct State {
    queue: VecDeque<Reply>,
    handler: Option<Handler>,
    requests: Vec<RecordedRequest>,
    /// What `GET /props` answers (none: 404).
    props: Option<serde_json::Value>,
    props_asked: usize,
}

struct Shared {
    state: Mutex<State>,
    count: watch::Sender<usize>,
    /// Requests being answered now, and the most at once so far.
    open: std::sync::atomic::AtomicUsize,
    max_open: std::sync::atomic::AtomicUsize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the state usable.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A running test server; stops when dropped.
pub struct TestServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl TestServer {
    /// Bind 127.0.0.1 on an ephemeral port and start serving (needs a Tokio runtime).
    pub async fn start() -> std::io::Result<Self> {
        // A deep accept queue: benchmarks open hundreds of connections at once, and
        // a short queue (128 by default) drops SYNs that the client resends only after 1 s.
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)))?;
        let listener: TcpListener = socket.listen(4096)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                handler: None,
                requests: Vec::new(),
                props: None,
                props_asked: 0,
            }),
            count: watch::Sender::new(0),
            open: Default::default(),
            max_open: Default::default(),
        });
        let shutdown = CancellationToken::new();
        tokio::spawn(accept_loop(listener, Arc::clone(&shared), shutdown.clone()));
        Ok(Self { addr, shared, shutdown })
    }

    /// Start a server that answers every request with `handler` (queued
    /// replies still go first).
    pub async fn with_handler(
        handler: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        let server = Self::start().await?;
        server.set_handler(handler);
        Ok(server)
    }

    /// Answer requests with `handler` once the queue of replies is empty.
    /// Without a handler such requests get `500 no reply scripted`.
    pub fn set_handler(&self, handler: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static) {
        self.shared.lock().handler = Some(Arc::new(handler));
    }

    /// Answer `GET /props` with `props`, as llama.cpp's server answers it.
    pub fn serve_props(&self, props: serde_json::Value) {
        self.shared.lock().props = Some(props);
    }

    /// How many times `GET /props` was asked.
    pub fn props_asked(&self) -> usize {
        self.shared.lock().props_asked
    }

    /// Queue a reply for the next request.
    pub fn push(&self, reply: Reply) {
        self.shared.lock().queue.push_back(reply);
    }

    /// Queue several replies, answered in order.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.lock().queue.extend(replies);
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL of an OpenAI-compatible API.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// Every request received so far, in order of arrival.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Drop the recorded requests (long benchmarks would otherwise keep every
    /// body in memory); [`TestServer::request_count`] keeps counting.
    pub fn forget_requests(&self) {
        self.shared.lock().requests = Vec::new();
    }

    /// Number of requests received so far.
    pub fn request_count(&self) -> usize {
        *self.shared.count.borrow()
    }

    /// The most requests that were being answered at the same time so far.
    pub fn max_concurrent(&self) -> usize {
        self.shared.max_open.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Wait until at least `n` requests have been received and return them
    /// all. Wrap it in a timeout: it waits as long as it takes.
    pub async fn wait_for_requests(&self, n: usize) -> Vec<RecordedRequest> {
        let mut rx = self.shared.count.subscribe();
        // The sender lives as long as `self`, so this cannot fail.
        let _ = rx.wait_for(|count| *count >= n).await;
        self.requests()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, shutdown: CancellationToken) {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(serve(stream, Arc::clone(&shared), shutdown.clone()));
                }
                // Out of descriptors or similar: back off briefly and go on.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
    }
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>, shutdown: CancellationToken) {
    let _ = stream.set_nodelay(true);
    let request = tokio::select! {
        _ = shutdown.cancelled() => return,
        request = read_request(&mut stream) => request,
    };
    let request = match request {
        Ok(Some(request)) => request,
        Ok(None) => return,
        Err(reason) => {
            let _ = write_reply(&mut stream, &Reply::text(400, reason), &shutdown, &mut || {}).await;
            return;
        }
    };
    if request.method == "GET" && request.path == "/props" {
        let props = {
            let mut state = shared.lock();
            state.props_asked += 1;
            state.props.clone()
        };
        let reply = match props {
            Some(p) => Reply::json(200, &p),
            None => Reply::text(404, "File Not Found"),
        };
        let _ = write_reply(&mut stream, &reply, &shutdown, &mut || {}).await;
        return;
    }
    let reply = {
        let mut state = shared.lock();
        let queued = state.queue.pop_front();
        let handler = state.handler.clone();
        state.requests.push(request.clone());
        drop(state);
        shared.count.send_modify(|count| *count += 1);
        match (queued, handler) {
            (Some(reply), _) => reply,
            (None, Some(handler)) => handler(&request),
            (None, None) => Reply::text(500, "no reply scripted"),
        }
    };
    use std::sync::atomic::Ordering::SeqCst;
    let now_open = shared.open.fetch_add(1, SeqCst) + 1;
    shared.max_open.fetch_max(now_open, SeqCst);
    // A request counts as open until its last body bytes are about to be sent:
    // a client cannot have finished reading it before then.
    let mut close = Some(|| {
        shared.open.fetch_sub(1, SeqCst);
    });
    if reply.silent {
        wait_for_close(&mut stream, &shutdown).await;
    } else {
        let _ = write_reply(&mut stream, &reply, &shutdown, &mut || {
            if let Some(f) = close.take() {
                f()
            }
        })
        .await;
    }
    if let Some(f) = close.take() {
        f();
    }
}

/// Read one request; `Ok(None)` when the client closed before sending one.
async fn read_request(stream: &mut TcpStream) -> Result<Option<RecordedRequest>, String> {
    let mut buf = Vec::with_capacity(4096);
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD {
            return Err("request head too large".into());
        }
        let mut chunk = [0u8; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) if buf.is_empty() => return Ok(None),
            Ok(0) | Err(_) => return Err("connection closed inside the request head".into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
        return Err("bad request line".into());
    };
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    if headers.iter().any(|(n, v)| n == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked")) {
        return Err("chunked request bodies are not supported".into());
    }
    let length = match headers.iter().find(|(n, _)| n == "content-length") {
        Some((_, v)) => v.parse::<usize>().map_err(|_| "bad content-length".to_owned())?,
        None => 0,
    };
    let mut body = buf.split_off(head_end + 4);
    while body.len() < length {
        let mut chunk = vec![0u8; (length - body.len()).min(64 * 1024)];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err("connection closed inside the request body".into()),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    body.truncate(length);
    Ok(Some(RecordedRequest {
        method: method.to_owned(),
        path: path.to_owned(),
        headers,
        body,
        received_at: Instant::now(),
    }))
}

async fn write_reply(
    stream: &mut TcpStream,
    reply: &Reply,
    shutdown: &CancellationToken,
    before_last_write: &mut (dyn FnMut() + Send),
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason_phrase(reply.status));
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    match reply.framing {
        Framing::Chunked => head.push_str("transfer-encoding: chunked\r\n"),
        Framing::Length => {
            let total: usize = reply.steps.iter().map(|s| if let Step::Write(b) = s { b.len() } else { 0 }).sum();
            head.push_str(&format!("content-length: {total}\r\n"));
        }
        Framing::Eof => {}
    }
    head.push_str("connection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.flush().await?;

    let last_write = reply.steps.iter().rposition(|s| matches!(s, Step::Write(_)));
    for (i, step) in reply.steps.iter().enumerate() {
        if Some(i) == last_write {
            before_last_write();
        }
        match step {
            Step::Write(bytes) if bytes.is_empty() => {}
            Step::Write(bytes) => {
                if reply.framing == Framing::Chunked {
                    let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
                    frame.extend_from_slice(bytes);
                    frame.extend_from_slice(b"\r\n");
                    stream.write_all(&frame).await?;
                } else {
                    stream.write_all(bytes).await?;
                }
                stream.flush().await?;
            }
            Step::Sleep(pause) => {
                tokio::select! {
                    _ = shutdown.cancelled() => return Ok(()),
                    _ = tokio::time::sleep(*pause) => {}
                }
            }
        }
    }
    match reply.ending {
        Ending::Finish => {
            if reply.framing == Framing::Chunked {
                stream.write_all(b"0\r\n\r\n").await?;
            }
            stream.shutdown().await?;
        }
        Ending::Cut => {
            stream.shutdown().await?;
        }
        Ending::Hang => wait_for_close(stream, shutdown).await,
    }
    Ok(())
}

/// Hold the connection until the client closes it or the server stops.
async fn wait_for_close(stream: &mut TcpStream, shutdown: &CancellationToken) {
    let mut sink = [0u8; 1024];
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            read = stream.read(&mut sink) => match read {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
        }
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_split_covers_all_bytes() {
        let reply = Reply::sse().write_split("abcdef", &[0, 2, 2, 5, 9]);
        let writes: Vec<_> =
            reply.steps.iter().filter_map(|s| if let Step::Write(b) = s { Some(b.clone()) } else { None }).collect();
        assert_eq!(writes, vec![b"ab".to_vec(), b"cde".to_vec(), b"f".to_vec()]);
    }

    #[test]
    fn sse_frame_splits_lines() {
        assert_eq!(sse_frame("a\nb"), "data: a\ndata: b\n\n");
    }

    #[test]
    fn openai_stream_body_ends_with_done() {
        let body = openai::stream_body(&["x"], Some((1, 1)));
        assert!(body.ends_with("data: [DONE]\n\n"));
        assert!(body.contains("\"prompt_tokens\":1"));
    }
}
