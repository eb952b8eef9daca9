//! Everything tests and benchmarks share, compiled only for them (the
//! `testing` feature, which the tests and benches turn on): builders for a
//! small panel, an item and evaluation replies in the form agents are asked
//! for (here), a scripted provider (`scripted`), an HTTP server speaking the
//! providers' APIs (`server`), an engine runner (`engine`), the optimisation
//! tests' judge (`optimize`) and the fuzzing entry points (`fuzz`). The
//! program itself never uses them.

pub mod batch_server;
pub mod engine;
pub mod fuzz;
pub mod optimize;
pub mod scripted;
pub mod server;

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
        item_parts: None,
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
        overall: true,
        moderator: ModeratorSettings {
            policy: ModeratorPolicy::RoundRobin,
            max_turns: 4,
            model: ModelSettings::default(),
        },
        consensus: ConsensusSettings { rule: ConsensusRule::Range, tolerance: 0.0, max_rounds: 3 },
        generation: GenerationSettings { temperature: 0.0, max_tokens: 200, seed: Some(7), top_p: None },
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
        human_raters: Default::default(),
        candidates: None,
        human_labels: Vec::new(),
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

/// Stakeholder roles the scripted persona builder recognises: a word to find
/// in a sentence and the stakeholder it names.
const BUILDER_ROLES: &[(&str, &str)] = &[
    ("teacher", "Teachers"),
    ("parent", "Parents"),
    ("mother", "Parents"),
    ("father", "Parents"),
    ("psycholog", "Researchers"),
    ("researcher", "Researchers"),
    ("linguist", "Researchers"),
    ("therapist", "Speech therapists"),
];

/// A scripted model for the persona builder (tests and benchmarks): a
/// document's stakeholders are the roles of [`BUILDER_ROLES`] its sentences
/// mention, each with up to two perspectives quoting those sentences word for
/// word (a document naming none yields none); consolidation groups
/// stakeholders of the same name and merges perspectives whose text is the
/// same; a persona is named `Judge N`, N after the names already taken.
pub fn builder_reply(req: &crate::provider::ChatRequest) -> String {
    let user = req.messages.iter().rev().find(|m| m.role == crate::provider::ChatRole::User);
    let user = user.map(|m| m.content.as_str()).unwrap_or("");
    if let (Some(start), Some(end)) = (user.find("<<<\n"), user.rfind("\n>>>")) {
        return builder_extract(&user[start + 4..end]);
    }
    if user.contains("Put stakeholders that play the same") {
        return builder_groups(user);
    }
    // "Call this person X (names already used in the panel: A, B)."
    let taken = user
        .lines()
        .find_map(|l| l.split_once("(names already used in the panel: ").map(|(_, rest)| rest.trim_end_matches(").")))
        .map_or(0, |l| if l == "none" { 0 } else { l.split(", ").count() });
    let perspective = user.lines().find_map(|l| l.strip_prefix("Perspective this judge stands for: ")).unwrap_or("");
    serde_json::json!({
        "name": format!("Judge {}", taken + 1),
        "role": "Member of the group",
        "demographics": "An adult written for a test.",
        "perspective": perspective,
        "specialty": "What the group knows.",
        "traits": "Careful.",
        "relationships": "Works with the others.",
    })
    .to_string()
}

fn builder_extract(text: &str) -> String {
    let mut found: Vec<(&str, Vec<&str>)> = Vec::new();
    let prose = text.split("\n\n").filter(|p| !p.starts_with(['#', '*']));
    let sentences = prose.flat_map(|p| p.split_inclusive(['.', '?', '!']));
    for sentence in sentences.map(|s| s.trim()).filter(|s| s.len() > 20) {
        let lower = sentence.to_lowercase();
        if let Some((_, role)) = BUILDER_ROLES.iter().find(|(w, _)| lower.contains(w)) {
            match found.iter_mut().find(|(r, _)| r == role) {
                Some((_, quotes)) if quotes.len() < 2 => quotes.push(sentence),
                Some(_) => {}
                None => found.push((role, vec![sentence])),
            }
        }
    }
    let stakeholders: Vec<serde_json::Value> = found
        .iter()
        .map(|(role, quotes)| {
            let perspectives: Vec<serde_json::Value> = quotes
                .iter()
                .map(|q| {
                    let words: Vec<&str> = q.split_whitespace().take(8).collect();
                    serde_json::json!({"perspective": format!("Cares that {}", words.join(" ")), "evidence": q})
                })
                .collect();
            serde_json::json!({"name": role, "characteristics": format!("{role} named in the document."), "perspectives": perspectives})
        })
        .collect();
    serde_json::json!({ "stakeholders": stakeholders }).to_string()
}

/// A merged perspective and the ids it comes from.
type Merged = (String, Vec<String>);

fn builder_groups(user: &str) -> String {
    // (name, members, [(text, sources)])
    let mut groups: Vec<(String, Vec<String>, Vec<Merged>)> = Vec::new();
    let mut current: Option<usize> = None;
    for line in user.lines() {
        if let Some(rest) = line.strip_prefix("  ") {
            let Some((id, text)) = rest.split_once(' ') else { continue };
            let Some(g) = current else { continue };
            let ps = &mut groups[g].2;
            match ps.iter_mut().find(|(t, _)| t == text) {
                Some((_, sources)) => sources.push(id.to_string()),
                None => ps.push((text.to_string(), vec![id.to_string()])),
            }
        } else if line.starts_with('D')
            && let Some((head, _)) = line.split_once(':')
            && let Some((id, name)) = head.split_once(' ')
        {
            let g = match groups.iter().position(|(n, _, _)| n == name) {
                Some(g) => g,
                None => {
                    groups.push((name.to_string(), Vec::new(), Vec::new()));
                    groups.len() - 1
                }
            };
            groups[g].1.push(id.to_string());
            current = Some(g);
        }
    }
    let groups: Vec<serde_json::Value> = groups
        .into_iter()
        .map(|(name, members, ps)| {
            let ps: Vec<serde_json::Value> =
                ps.into_iter().map(|(t, s)| serde_json::json!({"perspective": t, "sources": s})).collect();
            serde_json::json!({"name": name, "description": format!("{name} from the documents."), "members": members, "perspectives": ps})
        })
        .collect();
    serde_json::json!({ "groups": groups }).to_string()
}

/// The scripted persona builder behind an OpenAI-compatible stream.
pub fn builder_server_reply(r: &crate::testkit::server::RecordedRequest) -> crate::testkit::server::Reply {
    let body = r.body_json().unwrap_or_default();
    let messages = body["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .map(|m| {
                    let text = m["content"].as_str().unwrap_or("").to_string();
                    match m["role"].as_str() {
                        Some("system") => crate::provider::ChatMessage::system(text),
                        Some("assistant") => crate::provider::ChatMessage::assistant(text),
                        _ => crate::provider::ChatMessage { role: crate::provider::ChatRole::User, content: text },
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let reply = builder_reply(&crate::provider::ChatRequest::new(messages));
    let pieces: Vec<String> = reply.as_bytes().chunks(40).map(|c| String::from_utf8_lossy(c).into_owned()).collect();
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    crate::testkit::server::Reply::openai_stream(&refs, Some((300, 120)))
}

/// A plausible judge for end-to-end tests: answers moot's own prompts the way
/// a cooperative model would, streamed in small chunks with `pause` between
/// them. Moderators name the first eligible agent; aggregators write a short
/// synthesis; everyone else returns an evaluation with every requested key
/// (read from the prompt's output format), scored from a hash of the speaker
/// so agents disagree a little.
pub fn judge_reply(
    request: &crate::testkit::server::RecordedRequest,
    pause: std::time::Duration,
) -> crate::testkit::server::Reply {
    let body = request.body_json().unwrap_or_default();
    let messages = body.get("messages").and_then(|m| m.as_array()).cloned().unwrap_or_default();
    let text_of = |i: usize| messages.get(i).and_then(|m| m.get("content")).and_then(|c| c.as_str()).unwrap_or("");
    let system = text_of(0);
    let last = messages.last().and_then(|m| m.get("content")).and_then(|c| c.as_str()).unwrap_or("");
    let reply = if crate::engine::prompts::is_moderator_request(text_of(1)) {
        let eligible = last
            .split("Agents who may speak next: ")
            .nth(1)
            .or_else(|| last.split("Choose exactly one of: ").nth(1))
            .and_then(|s| s.split(".\n").next())
            .and_then(|s| s.split(", ").next())
            .unwrap_or("nobody");
        format!("{{\"next\": \"{eligible}\", \"reason\": \"{eligible} has not answered the others yet.\"}}")
    } else if system.starts_with("You write the synthesis") {
        "The stakeholders agree the answer is clear. They disagree on how well it suits young readers. Overall it is adequate.".to_string()
    } else {
        let name = if system.starts_with("You are the final judge") {
            "The final judge"
        } else {
            crate::engine::prompts::agent_named_in(text_of(1)).unwrap_or("judge")
        };
        let score = 2 + (name.bytes().map(u32::from).sum::<u32>() % 3);
        let mut verdict = serde_json::Map::new();
        // The output form is in the system prompt (agents) or the last message (repairs, the final judge).
        let form = format!("{system}\n{last}");
        for w in form.split('"').collect::<Vec<_>>().windows(2).filter(|w| w[1].starts_with(": <score>")) {
            verdict.insert(w[0].to_string(), serde_json::json!(score));
        }
        verdict.insert("confidence".into(), serde_json::json!(0.7));
        verdict.insert("justification".into(), serde_json::json!(format!("{name} finds it acceptable.")));
        format!("I have read the item carefully. It is mostly fine.\n{}", serde_json::Value::Object(verdict))
    };
    let chars: Vec<char> = reply.chars().collect();
    let chunks: Vec<String> = chars.chunks(24).map(|c| c.iter().collect()).collect();
    let mut out = crate::testkit::server::Reply::sse().event(&crate::testkit::server::openai::role_chunk());
    for c in &chunks {
        out = out.delay(pause).event(&crate::testkit::server::openai::content_chunk(c));
    }
    out.event(&crate::testkit::server::openai::finish_chunk("stop"))
        .event(&crate::testkit::server::openai::usage_chunk(400, 60))
        .event("[DONE]")
}

/// A value that follows `schema` (the subset moot's verdicts use: objects,
/// arrays, strings with an `enum` or a `maxLength`, integers and numbers
/// with bounds). `seed` varies the numbers and the choices among an enum's
/// values, so that judges asked differently answer differently.
pub fn value_for_schema(key: &str, schema: &serde_json::Value, seed: u64) -> serde_json::Value {
    use serde_json::{Value, json};
    let bound = |k: &str| schema.get(k).and_then(Value::as_f64);
    if let Some(options) = schema.get("enum").and_then(Value::as_array).filter(|o| !o.is_empty()) {
        return options[seed as usize % options.len()].clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let props = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
            let fields =
                props.iter().enumerate().map(|(i, (k, p))| (k.clone(), value_for_schema(k, p, seed / 3 + i as u64)));
            let mut object: serde_json::Map<String, Value> = fields.collect();
            // A moderator's reason names the member it chooses.
            if let Some(next) = object.get("next").and_then(Value::as_str).map(str::to_string)
                && let Some(reason) = object.get_mut("reason")
            {
                *reason = json!(format!("{next} has not answered the others yet."));
            }
            Value::Object(object)
        }
        Some("array") => {
            let most = schema.get("maxItems").and_then(Value::as_u64).unwrap_or(1).min(1);
            let item = schema.get("items").cloned().unwrap_or_default();
            Value::Array((0..most).map(|_| value_for_schema(key, &item, seed)).collect())
        }
        Some("integer") => {
            let (lo, hi) = (bound("minimum").unwrap_or(1.0) as i64, bound("maximum").unwrap_or(5.0) as i64);
            json!(lo + (seed as i64).rem_euclid(hi - lo + 1))
        }
        Some("number") => {
            let (lo, hi) = (bound("minimum").unwrap_or(0.0), bound("maximum").unwrap_or(1.0));
            json!(lo + (hi - lo) * ((seed % 5) as f64 + 1.0) / 6.0)
        }
        Some("boolean") => json!(seed.is_multiple_of(2)),
        _ if key == "speech" => {
            json!("I have read the item carefully. The answer is right, but the wording needs care.")
        }
        _ => {
            let text = format!("The {} holds for this item.", key.replace('_', " "));
            let most = schema.get("maxLength").and_then(Value::as_u64).unwrap_or(200) as usize;
            json!(text.chars().take(most).collect::<String>())
        }
    }
}

/// A verdict that follows `schema` as a server constrained to it writes
/// it: one JSON object, its `speech` first when the schema asks for one (as
/// moot's schemas put it), the numbers and choices drawn from `seed`.
pub fn schema_json(schema: &serde_json::Value, seed: u64) -> String {
    let mut verdict = value_for_schema("", schema, seed);
    match verdict.as_object_mut().and_then(|o| o.remove("speech").map(|s| (s, o.is_empty()))) {
        Some((speech, true)) => format!("{{\"speech\": {speech}}}"),
        Some((speech, false)) => format!("{{\"speech\": {speech}, {}", &verdict.to_string()[1..]),
        None => verdict.to_string(),
    }
}

/// What a reply that is not a verdict says (evaluation steps, a summary, a synthesis).
const PROSE_REPLY: &str = "1. Read the text and its source.\n2. Check each claim against the source.\n3. Weigh what matters most to the reader.";

/// A seed drawn from some bytes (FNV-1a).
fn seed_of(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)) >> 7
}

/// The text moot's HTTP providers make of a structured-output server's
/// answer ([`schema_reply`]) to `request`: a verdict's speech, then the rest
/// of its object; a request without a schema gets prose. For scripted
/// providers, so that in-process runs read replies as such a server's.
pub fn structured_text(request: &crate::provider::ChatRequest) -> String {
    use crate::provider::structured::{SpeechSplitter, speech_schema};
    let Some(schema) = &request.response_schema else { return PROSE_REPLY.to_string() };
    // The schema the server is sent: the speech first, where the request wants one.
    let sent = speech_schema(schema, request.max_tokens, request.prose_first)
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_else(|| (**schema).clone());
    let text: String = request.messages.iter().map(|m| m.content.as_str()).collect();
    let mut split = SpeechSplitter::new();
    let mut out = split.push(&schema_json(&sent, seed_of(text.as_bytes())));
    out.push_str(&split.finish());
    out
}

/// A server that answers in structured output, as an OpenAI-compatible one
/// that honours `response_format` does: a request that sends a JSON schema
/// gets one JSON object that follows it (with its `speech` first, when the
/// schema asks for one, as moot's schemas put it), the numbers and choices
/// drawn from a hash of the request; every other request (evaluation steps,
/// a summary, a synthesis) gets a few lines of prose. Streamed in small
/// chunks, with token usage.
pub fn schema_reply(request: &crate::testkit::server::RecordedRequest) -> crate::testkit::server::Reply {
    use crate::testkit::server::{Reply, openai};
    let body = request.body_json().unwrap_or_default();
    let text = match body.pointer("/response_format/json_schema/schema") {
        Some(schema) => schema_json(schema, seed_of(&request.body)),
        None => PROSE_REPLY.to_string(),
    };
    let chars: Vec<char> = text.chars().collect();
    let mut out = Reply::sse().event(&openai::role_chunk());
    for c in chars.chunks(17) {
        out = out.event(&openai::content_chunk(&c.iter().collect::<String>()));
    }
    out.event(&openai::finish_chunk("stop")).event(&openai::usage_chunk(300, 40)).event("[DONE]")
}
