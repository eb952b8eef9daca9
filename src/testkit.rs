//! Builders shared by tests and benchmarks: a small panel, an item and
//! evaluation replies in the form agents are asked for. Not used by the
//! program itself.

use crate::item::Item;
use crate::panel::{
    AgentSpec, ConsensusRule, ConsensusSettings, Dimension, GenerationSettings, GroupSpec, ModelSettings,
    ModeratorPolicy, ModeratorSettings, Panel, Protocol, Scale,
};

/// An agent with every persona attribute filled in.
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

/// A two-dimension panel (grammar, relevance on 1–5) with the given groups of
/// agent names, round-robin moderation, 4 debate turns and exact consensus.
pub fn panel(protocol: Protocol, groups: &[(&str, &[&str])]) -> Panel {
    Panel {
        name: "Test panel".into(),
        protocol: crate::panel::ProtocolSection::new(protocol),
        task: "Judge short answers to questions about a story.".into(),
        judge: Default::default(),
        scale: Scale { min: 1.0, max: 5.0 },
        dimensions: vec![
            Dimension {
                key: "grammar".into(),
                name: "Grammar".into(),
                description: "Is it well formed?".into(),
                steps: None,
                labels: Vec::new(),
            },
            Dimension {
                key: "relevance".into(),
                name: "Relevance".into(),
                description: "Does it answer?".into(),
                steps: None,
                labels: Vec::new(),
            },
        ],
        moderator: ModeratorSettings {
            policy: ModeratorPolicy::RoundRobin,
            max_turns: 4,
            model: ModelSettings::default(),
        },
        consensus: ConsensusSettings { rule: ConsensusRule::Range, tolerance: 0.0, max_rounds: 3 },
        generation: GenerationSettings { temperature: 0.0, max_tokens: 200, seed: Some(7) },
        model: ModelSettings::default(),
        aggregator: ModelSettings::default(),
        final_judge: ModelSettings::default(),
        roles: Default::default(),
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

/// A short question–answer item with a story as context.
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

/// A reply with a fenced JSON evaluation for [`panel`]'s dimensions.
pub fn evaluation(grammar: u32, relevance: u32, overall: u32) -> String {
    format!(
        "My view, briefly.\n```json\n{{\"grammar\": {grammar}, \"relevance\": {relevance}, \"overall\": {overall}, \"confidence\": 0.8, \"justification\": \"Scores as given.\"}}\n```"
    )
}

/// Who a request speaks for, read from its prompts: an agent's name,
/// or `moderator`, `aggregator`, `final judge`.
pub fn speaker(req: &crate::provider::ChatRequest) -> String {
    let sys = req.messages.first().map(|m| m.content.as_str()).unwrap_or("");
    let user = req.messages.get(2).map(|m| m.content.as_str()).unwrap_or("");
    if crate::engine::prompts::is_moderator_request(user) {
        return "moderator".into();
    }
    if sys.starts_with("You write the synthesis") {
        return "aggregator".into();
    }
    if sys.starts_with("You are the final judge") {
        return "final judge".into();
    }
    crate::engine::prompts::agent_named_in(user).unwrap_or("?").to_string()
}
