//! Shared helpers for engine tests: a small panel, a scripted judge, and a
//! runner that collects the events of a session.
use std::sync::Arc;
use std::time::Duration;

use crate::engine::{self, Binding, Bindings, Command, EngineConfig, EngineHandle, Recorder, RunOutcome};
use crate::panel::Panel;
use crate::provider::ChatRequest;
use crate::provider::retry::RetryPolicy;
use crate::session::{Event, EventKind};
use crate::testkit::scripted::{ScriptedProvider, ScriptedReply};
use tokio::sync::mpsc;

pub use super::{evaluation, item, panel, speaker};

/// Whether a request is a debate/discussion turn (it shows the history).
pub fn is_debate(req: &ChatRequest) -> bool {
    req.messages.last().is_some_and(|m| m.content.contains("It is your turn") || m.content.contains("Discussion round"))
}

pub fn config(panel: Panel, provider: Arc<ScriptedProvider>) -> EngineConfig {
    let mut c = EngineConfig::new(Arc::new(panel), item(), Bindings::uniform(Binding::new(provider, "scripted")));
    c.retry =
        RetryPolicy { max_attempts: 2, base_delay: Duration::from_millis(1), max_delay: Duration::from_millis(5) };
    c
}

/// A running engine with its event stream.
pub struct Session {
    pub handle: EngineHandle,
    pub events: mpsc::UnboundedReceiver<Event>,
    pub seen: Vec<Event>,
    pub task: tokio::task::JoinHandle<RunOutcome>,
}

impl Session {
    pub fn start(config: EngineConfig, writer: Option<crate::session::SessionWriter>) -> Self {
        let (tx, events) = mpsc::unbounded_channel();
        let rec = Recorder::new(writer, Some(tx));
        let (handle, rx) = EngineHandle::channel();
        let task = tokio::spawn(engine::run(config, rec, rx));
        Self { handle, events, seen: Vec::new(), task }
    }

    pub fn send(&self, c: Command) {
        assert!(self.handle.send(c), "engine gone");
    }

    /// Wait for the first event (after those already seen) matching `pred`.
    pub async fn wait_for(&mut self, pred: impl Fn(&Event) -> bool) -> Event {
        let fut = async {
            loop {
                let e = self.events.recv().await.expect("session ended before the awaited event");
                self.seen.push(e.clone());
                if pred(&e) {
                    return e;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(20), fut).await.expect("timed out waiting for an event")
    }

    /// Run to the end and return every event and the outcome.
    pub async fn finish(mut self) -> (Vec<Event>, RunOutcome) {
        let outcome =
            tokio::time::timeout(Duration::from_secs(30), self.task).await.expect("engine timed out").unwrap();
        while let Ok(e) = self.events.try_recv() {
            self.seen.push(e);
        }
        (self.seen, outcome)
    }
}

pub fn scripted(f: impl Fn(&ChatRequest, usize) -> ScriptedReply + Send + Sync + 'static) -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::new(f))
}

pub fn types(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.type_name()).collect()
}

pub fn author() -> String {
    "tester".into()
}

pub fn turn_agents(events: &[Event], phase: crate::session::event::Phase) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnStarted { agent, phase: p, role, kind, .. }
                if *p == phase
                    && *role == crate::session::event::Role::Agent
                    && *kind == crate::session::event::TurnKind::Speak =>
            {
                Some(agent.clone())
            }
            _ => None,
        })
        .collect()
}
