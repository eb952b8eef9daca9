//! Shared helpers for engine tests: a small panel, a scripted judge, and a
//! runner that collects the events of a session.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use moot::engine::{self, Binding, Bindings, Command, EngineConfig, EngineHandle, Recorder, RunOutcome};
use moot::item::Item;
use moot::panel::{
    AgentSpec, ConsensusRule, ConsensusSettings, Dimension, GenerationSettings, GroupSpec, ModelSettings,
    ModeratorPolicy, ModeratorSettings, Panel, Protocol, Scale,
};
use moot::provider::ChatRequest;
use moot::provider::retry::RetryPolicy;
use moot::provider::scripted::{ScriptedProvider, ScriptedReply};
use moot::session::{Event, EventKind};
use tokio::sync::mpsc;

pub fn agent(name: &str) -> AgentSpec {
    AgentSpec {
        name: name.into(),
        role: format!("{name}'s role"),
        demographics: "adult".into(),
        perspective: "cares about clarity".into(),
        specialty: "reading".into(),
        traits: "direct".into(),
        relationships: "works with the others".into(),
        model: ModelSettings::default(),
    }
}

/// A panel with the given groups of agent names.
pub fn panel(protocol: Protocol, groups: &[(&str, &[&str])]) -> Panel {
    Panel {
        name: "Test panel".into(),
        protocol,
        task: "Judge short answers to questions about a story.".into(),
        scale: Scale { min: 1.0, max: 5.0 },
        dimensions: vec![
            Dimension { key: "grammar".into(), name: "Grammar".into(), description: "Is it well formed?".into() },
            Dimension { key: "relevance".into(), name: "Relevance".into(), description: "Does it answer?".into() },
        ],
        moderator: ModeratorSettings { policy: ModeratorPolicy::RoundRobin, max_turns: 4, model: ModelSettings::default() },
        consensus: ConsensusSettings { rule: ConsensusRule::Range, tolerance: 0.0, max_rounds: 3 },
        generation: GenerationSettings { temperature: 0.0, max_tokens: 200, seed: Some(7) },
        model: ModelSettings::default(),
        aggregator: ModelSettings::default(),
        final_judge: ModelSettings::default(),
        groups: groups
            .iter()
            .map(|(g, names)| GroupSpec {
                name: g.to_string(),
                description: String::new(),
                agents: names.iter().map(|n| agent(n)).collect(),
            })
            .collect(),
        source: None,
    }
}

pub fn item() -> Item {
    Item {
        id: "qa-test".into(),
        content: "Question: Why did the fox run?\nAnswer: Because it was scared of the storm.".into(),
        context: Some("A fox lived by the river. When the storm came, the fox ran to its den.".into()),
        reference: None,
        human: None,
        candidates: None,
    }
}

/// Who a request speaks for, read from its system prompt.
pub fn speaker(req: &ChatRequest) -> String {
    let sys = &req.messages[0].content;
    if sys.starts_with("You moderate") {
        return "moderator".into();
    }
    if sys.starts_with("You write the synthesis") {
        return "aggregator".into();
    }
    if sys.starts_with("You are the final judge") {
        return "final judge".into();
    }
    sys.strip_prefix("You are ").and_then(|s| s.split(',').next()).unwrap_or("?").to_string()
}

/// Whether a request is a debate/discussion turn (it shows the history).
pub fn is_debate(req: &ChatRequest) -> bool {
    req.messages.last().is_some_and(|m| m.content.contains("It is your turn") || m.content.contains("Discussion round"))
}

pub fn evaluation(g: u32, r: u32, overall: u32) -> String {
    format!(
        "My view, briefly.\n```json\n{{\"grammar\": {g}, \"relevance\": {r}, \"overall\": {overall}, \"confidence\": 0.8, \"justification\": \"Scores as given.\"}}\n```"
    )
}

pub fn config(panel: Panel, provider: Arc<ScriptedProvider>) -> EngineConfig {
    let mut c = EngineConfig::new(Arc::new(panel), item(), Bindings::uniform(Binding::new(provider, "scripted")));
    c.retry = RetryPolicy { max_attempts: 2, base_delay: Duration::from_millis(1), max_delay: Duration::from_millis(5) };
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
    pub fn start(config: EngineConfig, writer: Option<moot::session::SessionWriter>) -> Self {
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
        let outcome = tokio::time::timeout(Duration::from_secs(30), self.task).await.expect("engine timed out").unwrap();
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

pub fn turn_agents(events: &[Event], phase: moot::session::event::Phase) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnStarted { agent, phase: p, role, kind, .. }
                if *p == phase
                    && *role == moot::session::event::Role::Agent
                    && *kind == moot::session::event::TurnKind::Speak =>
            {
                Some(agent.clone())
            }
            _ => None,
        })
        .collect()
}
