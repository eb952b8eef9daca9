//! The fault-injecting handler of the soak's test server.
//!
//! Each request's fate is drawn from a hash of the seed, the request body
//! and how many times this server has seen that body: the same session
//! asked the same thing gets the same faults, so an uninterrupted run of an
//! item makes the same requests as every other run of it, and the requests
//! a killed run makes beyond those are the cost of the kills. A request is
//! faulted on its first two sends at most; the third and later are
//! answered, so the four attempts moot makes always reach an answer and
//! every run of an item debates the same way.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use moot::testkit::judge_reply;
use moot::testkit::server::{RecordedRequest, Reply, openai};

/// What a request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fault {
    /// A valid verdict (or moderator pick, or synthesis), streamed in small chunks.
    Normal,
    /// HTTP 429 with `Retry-After: 1`.
    RateLimited,
    /// HTTP 500.
    ServerError,
    /// The stream stops after a few chunks and the connection closes.
    Cut,
    /// A 200 stream whose chunk is not JSON.
    Garbage,
    /// A valid reply whose tokens come slowly.
    Slow,
}

impl Fault {
    pub fn name(self) -> &'static str {
        match self {
            Fault::Normal => "normal",
            Fault::RateLimited => "429 + Retry-After",
            Fault::ServerError => "500",
            Fault::Cut => "stream cut",
            Fault::Garbage => "garbage chunk",
            Fault::Slow => "slow tokens",
        }
    }
}

/// The share of first and second sends each fault gets; the rest are normal.
const MIX: [(Fault, f64); 5] = [
    (Fault::RateLimited, 0.04),
    (Fault::ServerError, 0.05),
    (Fault::Cut, 0.06),
    (Fault::Garbage, 0.03),
    (Fault::Slow, 0.05),
];

/// Pause between streamed chunks of a normal and of a slow reply.
const NORMAL_PAUSE: Duration = Duration::from_millis(4);
const SLOW_PAUSE: Duration = Duration::from_millis(40);

/// Faults drawn so far, by kind (shared by every server of a soak).
pub type Counts = Arc<Mutex<HashMap<Fault, u64>>>;

/// A handler for `TestServer::with_handler`.
pub fn handler(seed: u64, counts: Counts) -> impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static {
    let seen: Mutex<HashMap<u64, u32>> = Mutex::new(HashMap::new());
    move |request| {
        let key = hash(&(seed, &request.body));
        let sends = {
            let mut seen = seen.lock().unwrap();
            let n = seen.entry(key).or_insert(0);
            *n += 1;
            *n
        };
        let fault = if sends > 2 { Fault::Normal } else { draw(hash(&(key, sends))) };
        *counts.lock().unwrap().entry(fault).or_insert(0) += 1;
        reply(fault, request)
    }
}

fn draw(h: u64) -> Fault {
    let mut u = (h >> 11) as f64 / (1u64 << 53) as f64;
    for (fault, share) in MIX {
        if u < share {
            return fault;
        }
        u -= share;
    }
    Fault::Normal
}

fn reply(fault: Fault, request: &RecordedRequest) -> Reply {
    match fault {
        Fault::Normal => judge_reply(request, NORMAL_PAUSE),
        Fault::Slow => judge_reply(request, SLOW_PAUSE),
        Fault::RateLimited => Reply::json(
            429,
            &serde_json::json!({"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}),
        )
        .header("retry-after", "1"),
        Fault::ServerError => Reply::json(
            500,
            &serde_json::json!({"error": {"message": "The server had an error", "type": "server_error"}}),
        ),
        Fault::Cut => Reply::sse()
            .event(&openai::role_chunk())
            .delay(NORMAL_PAUSE)
            .event(&openai::content_chunk("I have read the item"))
            .delay(NORMAL_PAUSE)
            .write("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" caref")
            .cut(),
        Fault::Garbage => {
            Reply::sse().event(&openai::role_chunk()).event("<html>502 Bad Gateway</html>").event("[DONE]")
        }
    }
}

fn hash(v: &impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}
