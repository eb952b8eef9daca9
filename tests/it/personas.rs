//! The persona builder with a scripted model: stakeholders per document,
//! nothing from an irrelevant document, invented quotes flagged, duplicates
//! merged, unreadable answers recorded as failures, and a written panel that
//! loads and runs. Also PDF reading and building from a log.

use crate::support;

use std::path::Path;
use std::sync::Arc;

use moot::panel::{Panel, Protocol};
use moot::personas::docs::{DocKind, from_text, read_document};
use moot::personas::log::{BuildEvent, BuildEventKind, BuildLog, BuildStatus, Step, read_log};
use moot::personas::panel::{PanelOptions, render, write};
use moot::personas::state::{BuildState, Decision};
use moot::personas::{Ctx, Document, Model, Options, build};
use moot::provider::ChatRequest;
use moot::provider::retry::RetryPolicy;
use moot::session::event::EndStatus;
use moot::testkit::scripted::{ScriptedProvider, ScriptedReply};
use support::*;

const TEACHERS: &str = "# Teachers\n\nWritten for the moot tests.\n\nA teacher said: \"Short questions keep the class listening.\"\n\nTeachers check who followed the plot with simple who questions.";
const PARENTS: &str =
    "# Parents\n\nWritten for the moot tests.\n\nParents want bedtime questions to feel like part of the story.";
const WEATHER: &str =
    "# Weather log\n\nWritten for the moot tests.\n\nIt rained on Tuesday. The wind turned north in the evening.";

fn doc(name: &str, text: &str) -> Document {
    from_text(name, Path::new(name), DocKind::Markdown, text)
}

fn user_text(req: &ChatRequest) -> &str {
    &req.messages.last().unwrap().content
}

/// A model that reads each document as the test expects: the weather log
/// has nothing relevant; the parents' stakeholder quotes one real and one
/// invented sentence; consolidation merges the two teacher perspectives.
fn model(req: &ChatRequest, _call: usize) -> ScriptedReply {
    let user = user_text(req);
    if user.contains("Document: teachers.md") {
        return r#"Two views.
{"stakeholders": [{"name": "Teachers", "characteristics": "Class teachers who read aloud.",
  "perspectives": [
    {"perspective": "Questions must be short", "evidence": "Short questions keep the class listening."},
    {"perspective": "Questions check the plot", "evidence": "Teachers check who followed the plot with simple who questions."}]}]}"#
            .into();
    }
    if user.contains("Document: parents.md") {
        return r#"{"stakeholders": [{"name": "Parents", "characteristics": "Parents reading at home.",
  "perspectives": [
    {"perspective": "Questions should be fun", "evidence": "Parents want bedtime questions to feel like part of the story"},
    {"perspective": "Questions must teach colours", "evidence": "Every question should teach the colours of the rainbow."}]}]}"#
            .into();
    }
    if user.contains("Document: weather.md") {
        return r#"{"stakeholders": []}"#.into();
    }
    if user.contains("Put stakeholders that play the same") {
        return r#"{"groups": [
  {"name": "Teachers", "description": "Teachers.", "members": ["D1.S1"],
   "perspectives": [{"perspective": "Short questions that check the plot", "sources": ["D1.S1.P1", "D1.S1.P2"]}]},
  {"name": "Parents", "description": "Parents.", "members": ["D2.S1"],
   "perspectives": [{"perspective": "Fun at bedtime", "sources": ["D2.S1.P1"]},
                    {"perspective": "Colours", "sources": ["D2.S1.P2"]}]}]}"#
            .into();
    }
    moot::testkit::builder_reply(req).into()
}

fn ctx(provider: Arc<ScriptedProvider>, log: Arc<BuildLog>) -> Ctx {
    let mut m = Model::new(provider, "scripted");
    m.retry = RetryPolicy { max_attempts: 2, base_delay: Default::default(), max_delay: Default::default() };
    Ctx::new("Judge QA pairs for shared reading with children aged 4-8.", m, log)
}

async fn run_build(
    provider: Arc<ScriptedProvider>,
    docs: &[Document],
    options: &Options,
) -> (Vec<BuildEvent>, BuildState, Result<(), String>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let log = Arc::new(BuildLog::new(None, Some(tx)).unwrap());
    let c = ctx(provider, log);
    let result = build(&c, docs, options).await;
    drop(c);
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    let state = BuildState::from_events(&events);
    (events, state, result)
}

fn three_docs() -> Vec<Document> {
    vec![doc("teachers.md", TEACHERS), doc("parents.md", PARENTS), doc("weather.md", WEATHER)]
}

#[tokio::test]
async fn stakeholders_per_document_quotes_checked_duplicates_merged() {
    let provider = scripted(model);
    let (events, state, result) = run_build(provider.clone(), &three_docs(), &Options::default()).await;
    assert_eq!(result, Ok(()));
    assert_eq!(state.status, Some(BuildStatus::Completed));
    // One extraction per document, each recorded, the weather log with nothing.
    let per_doc: Vec<(usize, usize)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            BuildEventKind::StakeholdersExtracted { doc, stakeholders, .. } => Some((*doc, stakeholders.len())),
            _ => None,
        })
        .collect();
    assert_eq!(per_doc, [(0, 1), (1, 1), (2, 0)]);
    let names: Vec<&str> = state.stakeholders.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["Teachers", "Parents"]);
    // Real quotes are found (the parents' one without its final full stop), the invented one is not.
    let found: Vec<(&str, bool)> =
        state.stakeholders.iter().flat_map(|s| &s.perspectives).map(|p| (p.id.as_str(), p.check.found)).collect();
    assert_eq!(found, [("D1.S1.P1", true), ("D1.S1.P2", true), ("D2.S1.P1", true), ("D2.S1.P2", false)]);
    assert_eq!(state.unverified(), 1);
    let teachers_quote = &state.stakeholders[0].perspectives[0].check;
    assert_eq!(teachers_quote.paragraph, Some(3));
    assert!(state.left_out.is_empty());
    // The two teacher perspectives became one; the parents' two stay apart.
    assert_eq!(state.groups.len(), 2);
    assert_eq!(state.groups[0].perspectives.len(), 1);
    assert_eq!(state.groups[0].perspectives[0].sources, ["D1.S1.P1", "D1.S1.P2"]);
    assert_eq!(state.groups[1].perspectives.len(), 2);
    // One persona per consolidated perspective, each with a name of its own.
    let personas: Vec<&str> = state.personas.values().map(|p| p.name.as_str()).collect();
    assert_eq!(personas, ["Judge 1", "Judge 2", "Judge 3"]);
    // 3 extractions + consolidation + 3 personas.
    assert_eq!(provider.calls(), 7);
    assert!(state.usage.total() > 0);
    assert!(state.estimate.calls >= 5 && state.estimate.input_tokens > 0);
    // The stream reached the log as deltas before each call completed.
    assert!(events.iter().any(|e| matches!(e.kind, BuildEventKind::CallDelta { .. })));
    // Extraction requests carry the schema (the local model is held to it).
    let first = &provider.requests()[0];
    assert!(first.response_schema.as_ref().unwrap()["properties"]["stakeholders"].is_object());
}

#[tokio::test]
async fn the_written_panel_flags_invented_evidence_loads_and_runs() {
    let provider = scripted(model);
    let (_, state, result) = run_build(provider, &three_docs(), &Options::default()).await;
    assert_eq!(result, Ok(()));
    let template = panel(Protocol::MajEval, &[("x", &["y"])]);
    let options = PanelOptions {
        name: "Reading panel".into(),
        protocol: Protocol::MajEval,
        template: Some(template),
        simple_roles: false,
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("panels/reading.toml");
    let r = write(&state, &options, &path).unwrap();
    assert_eq!((r.groups, r.agents), (2, 3));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("# Evidence D2.S1.P2 (parents.md, NOT FOUND in parents.md): \"Every question should teach"),
        "{text}"
    );
    assert!(text.contains("# Evidence D1.S1.P1 (teachers.md, paragraph 3, found)"), "{text}");
    let loaded = Panel::load(&path).unwrap();
    assert_eq!(loaded.name, "Reading panel");
    assert_eq!(loaded.groups.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(), ["Teachers", "Parents"]);
    assert_eq!(loaded.groups[0].agents[0].perspective, "Short questions that check the plot");
    assert_eq!(loaded.dimension_keys(), ["grammar", "relevance"]);
    assert_eq!(loaded.task, "Judge QA pairs for shared reading with children aged 4-8.");

    // The panel runs: every agent judges, the debate ends, the session completes.
    let judge = scripted(|req, _| {
        if moot::engine::prompts::is_moderator_request(&req.messages.last().unwrap().content) {
            return "Next speaker: Judge 1".into();
        }
        format!("{}\nNO MORE COMMENTS", evaluation(4, 4, 4)).into()
    });
    let (events, outcome) = Session::start(config(loaded, judge), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let agents: std::collections::BTreeSet<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            moot::session::EventKind::TurnCompleted { agent, evaluation: Some(_), .. } => Some(agent.clone()),
            _ => None,
        })
        .collect();
    assert!(["Judge 1", "Judge 2", "Judge 3"].iter().all(|a| agents.contains(*a)), "{agents:?}");
}

#[tokio::test]
async fn simple_roles_and_other_protocols_load_too() {
    let (_, state, _) = run_build(scripted(model), &three_docs(), &Options::default()).await;
    for protocol in [Protocol::MajEval, Protocol::CollabEval, Protocol::GEval, Protocol::SageEval] {
        let options = PanelOptions { name: "P".into(), protocol, template: None, simple_roles: true };
        let r = render(&state, &options).unwrap_or_else(|e| panic!("{protocol:?}: {e}"));
        let p = Panel::from_toml_str(&r.text, "x").unwrap();
        assert_eq!(p.protocol.kind, protocol);
        assert_eq!(p.dimension_keys(), ["quality"]);
        let a = &p.groups[0].agents[0];
        assert_eq!((a.role.as_str(), a.demographics.as_str(), a.traits.as_str()), ("Member of the group", "", ""));
    }
}

#[tokio::test]
async fn nothing_relevant_anywhere_is_a_failure_with_a_reason() {
    let provider = scripted(model);
    let (_, state, result) = run_build(provider.clone(), &[doc("weather.md", WEATHER)], &Options::default()).await;
    let error = result.unwrap_err();
    assert_eq!(error, "no stakeholders relevant to the task were found in 1 document");
    assert_eq!(state.status, Some(BuildStatus::Failed));
    assert_eq!(state.error.as_deref(), Some(error.as_str()));
    assert_eq!(provider.calls(), 1, "no consolidation without stakeholders");
    assert!(
        render(
            &state,
            &PanelOptions { name: "P".into(), protocol: Protocol::MajEval, template: None, simple_roles: false }
        )
        .is_err()
    );
}

#[tokio::test]
async fn an_unreadable_answer_is_repaired_once_then_recorded_as_a_failure() {
    // The teachers' document answers prose twice; the parents' document answers after one repair.
    let provider = scripted(|req, _| {
        let user = user_text(req);
        let repairing = user.starts_with("Your answer could not be read");
        let first = &req.messages[1].content;
        if first.contains("Document: teachers.md") {
            return "I think teachers care about short questions.".into();
        }
        if first.contains("Document: parents.md") && !repairing {
            return "Parents, mostly.".into();
        }
        if first.contains("Put stakeholders that play the same") {
            return r#"{"groups": [{"name": "Parents", "description": "Parents.", "members": ["D2.S1"],
              "perspectives": [{"perspective": "Fun at bedtime", "sources": ["D2.S1.P1", "D2.S1.P2"]}]}]}"#
                .into();
        }
        model(&ChatRequest::new(vec![req.messages[0].clone(), req.messages[1].clone()]), 0)
    });
    let docs = [doc("teachers.md", TEACHERS), doc("parents.md", PARENTS)];
    let (events, state, result) = run_build(provider.clone(), &docs, &Options::default()).await;
    assert_eq!(result, Ok(()), "one readable document is enough");
    let failures: Vec<&(Step, String, String)> = state.failures.iter().collect();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].0, Step::Extract);
    assert_eq!(failures[0].1, "teachers.md");
    assert!(failures[0].2.starts_with("the answer stayed unreadable: no JSON object"), "{}", failures[0].2);
    // Nothing was invented for the teachers: only the parents' stakeholder exists.
    assert_eq!(state.stakeholders.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["D2.S1"]);
    let parse_errors =
        events.iter().filter(|e| matches!(&e.kind, BuildEventKind::CallCompleted { parse_error: Some(_), .. })).count();
    assert_eq!(parse_errors, 3);
}

/// An extraction that names the people its text describes, then lists
/// none, is asked again with a schema that wants at least one of them;
/// the other requests keep the verdict's own schema.
#[tokio::test]
async fn an_empty_list_after_naming_people_is_asked_again_for_at_least_one() {
    let provider = scripted(|req, _| {
        let first = &req.messages[1].content;
        let repairing = user_text(req).starts_with("Your answer could not be read");
        if first.contains("Document: teachers.md") && !repairing {
            return "The people this text describes are teachers who read aloud.\n{\"stakeholders\": []}".into();
        }
        model(&ChatRequest::new(vec![req.messages[0].clone(), req.messages[1].clone()]), 0)
    });
    let docs = [doc("teachers.md", TEACHERS), doc("parents.md", PARENTS)];
    let (_, state, result) = run_build(provider.clone(), &docs, &Options::default()).await;
    assert_eq!(result, Ok(()));
    assert!(state.failures.is_empty(), "{:?}", state.failures);
    assert!(state.stakeholders.iter().any(|s| s.id == "D1.S1"), "the teachers were listed on the repair");
    let requests = provider.requests();
    let min_items =
        |r: &ChatRequest| r.response_schema.as_ref().unwrap()["properties"]["stakeholders"]["minItems"].clone();
    let repair = requests
        .iter()
        .find(|r| user_text(r).starts_with("Your answer could not be read"))
        .expect("the repair request");
    assert_eq!(min_items(repair), 1, "the repair must list someone");
    let firsts: Vec<&ChatRequest> = requests.iter().filter(|r| user_text(r).contains("Document: ")).collect();
    assert_eq!(firsts.len(), 2);
    assert!(firsts.iter().all(|r| min_items(r).is_null()), "a first extraction may answer with an empty list");
}

#[tokio::test]
async fn a_cap_limits_personas_and_decisions_replay_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("b.build.jsonl");
    let log = Arc::new(BuildLog::new(Some(&log_path), None).unwrap());
    let c = ctx(scripted(model), log.clone());
    let options = Options { max_per_group: Some(1), author: "tester".into(), ..Options::default() };
    build(&c, &three_docs(), &options).await.unwrap();
    // A review: the teachers' group perspective is rejected, the parents' group renamed.
    log.emit(BuildEventKind::Decided { decision: Decision::Reject { target: "G1.P1".into() }, author: "ana".into() });
    log.emit(BuildEventKind::Decided {
        decision: Decision::RenameGroup { group: "G2".into(), name: "Families".into() },
        author: "ana".into(),
    });
    log.emit(BuildEventKind::Decided {
        decision: Decision::EditPersona {
            perspective: "G2.P1".into(),
            field: "traits".into(),
            value: "Playful.".into(),
        },
        author: "ana".into(),
    });
    drop(c);
    drop(log);
    let events = read_log(&log_path).unwrap();
    assert_eq!(events.first().unwrap().kind.type_name(), "build_started");
    assert!(events.windows(2).all(|w| w[1].seq == w[0].seq + 1));
    let state = BuildState::from_events(&events);
    assert_eq!(state.personas.len(), 2, "one persona per group under the cap");
    assert_eq!(state.caps.get("G2"), Some(&1));
    let r = render(
        &state,
        &PanelOptions { name: "P".into(), protocol: Protocol::MajEval, template: None, simple_roles: false },
    )
    .unwrap();
    let p = Panel::from_toml_str(&r.text, "x").unwrap();
    assert_eq!(p.groups.len(), 1);
    assert_eq!(p.groups[0].name, "Families");
    assert_eq!(p.groups[0].agents.len(), 1);
    assert_eq!(p.groups[0].agents[0].traits, "Playful.");
    assert!(r.text.contains("# traits edited by ana"), "{}", r.text);
}

#[test]
fn a_pdf_is_read_with_its_references_left_out_and_quotes_found_in_it() {
    let d = read_document(Path::new("tests/fixtures/personas/interviews.pdf")).unwrap();
    assert_eq!(d.kind, DocKind::Pdf);
    let text = d.text();
    assert!(text.contains("Speech therapists asked for questions"), "{text}");
    assert!(!text.contains("An invented entry"), "references left out: {text}");
    let idx = moot::personas::verify::Index::new(&d);
    let c = idx.check("a question must be short enough to ask without losing the class at the page turn");
    assert!(c.found, "{c:?}");
    assert!(!idx.check("children love long questions about colours").found);
}

#[test]
fn missing_and_unreadable_documents_are_named() {
    let e = read_document(Path::new("studies/nowhere.md")).unwrap_err();
    assert_eq!(e.to_string(), "studies/nowhere.md: no such file");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("broken.pdf");
    std::fs::write(&bad, b"%PDF-1.4\nthis is not a pdf").unwrap();
    let e = read_document(&bad).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}: not a readable PDF", bad.display())), "{e}");
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "\n\n").unwrap();
    assert_eq!(read_document(&empty).unwrap_err().to_string(), format!("{}: no text to read", empty.display()));
}

#[tokio::test]
async fn perspectives_no_group_took_up_are_kept_and_members_are_listed_once() {
    let provider = scripted(|req, call| {
        if user_text(req).contains("Put stakeholders that play the same") {
            return r#"{"groups": [{"name": "Parents", "description": "Parents.", "members": ["D2.S1", "D2.S1"],
              "perspectives": [{"perspective": "Fun at bedtime", "sources": ["D2.S1.P1"]}]}]}"#
                .into();
        }
        model(req, call)
    });
    let (_, state, result) = run_build(provider, &three_docs(), &Options::default()).await;
    assert_eq!(result, Ok(()));
    // Nothing is left out: the parents' forgotten view joins their group,
    // and the teachers, in no group, become a group of their own.
    assert!(state.left_out.is_empty(), "{:?}", state.left_out);
    assert_eq!(state.groups[0].members, ["D2.S1"]);
    let sources =
        |g: usize| -> Vec<String> { state.groups[g].perspectives.iter().map(|p| p.sources.join("+")).collect() };
    assert_eq!(sources(0), ["D2.S1.P1", "D2.S1.P2"]);
    assert_eq!(state.groups.len(), 2);
    assert_eq!(state.groups[1].members, ["D1.S1"]);
    assert_eq!(sources(1), ["D1.S1.P1", "D1.S1.P2"]);
}
