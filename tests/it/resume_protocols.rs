//! Resuming interrupted sessions, protocol by protocol: each runs once to
//! its end, then its log is cut after every event (and once more with a
//! torn last line), as a kill would leave it; each cut log is resumed, and
//! the resumed session must end with the result of the uninterrupted one,
//! with no turn recorded twice.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use moot::engine::journal::Journal;
use moot::engine::{self, Binding, Bindings, Command, EngineConfig};
use moot::panel::{ModeratorPolicy, Panel, Protocol, SettingValue};
use moot::provider::ChatRequest;
use moot::provider::openai::{OpenAiConfig, OpenAiProvider};
use moot::session::event::{OverrideTarget, Phase, TurnKind};
use moot::session::{Event, EventKind, SessionWriter, parse_log};
use moot::testkit::scripted::ScriptedReply;
use moot::testkit::server::{Reply, TestServer, openai};

fn text(req: &ChatRequest) -> String {
    req.messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n")
}

fn is_steps(req: &ChatRequest) -> bool {
    req.messages.len() == 2 && req.messages[1].content.contains("evaluation steps")
}

/// Answers each request by what it asks, never by when it comes.
fn judge(req: &ChatRequest, _: usize) -> ScriptedReply {
    let all = text(req);
    if is_steps(req) {
        return "1. Read the answer.\n2. Check it against the story.\n3. Score.".into();
    }
    if req.messages[0].content.contains("You are the meta-evaluator") {
        return "Relevance is generous.\n{\"review\": {\"grammar\": {\"verdict\": \"keep\", \"score\": 4, \"reason\": \"\"}, \
                \"relevance\": {\"verdict\": \"rectify\", \"score\": 3, \"reason\": \"Half the why.\"}}, \
                \"definitions\": [], \"new_aspects\": []}"
            .into();
    }
    if all.contains("--- SUMMARY A ---") {
        let a = all.split("--- SUMMARY A ---\n").nth(1).and_then(|s| s.lines().next()).unwrap_or("");
        let label = if a.starts_with("The council") { "A" } else { "B" };
        return format!(
            "They differ. {{\"verdict\": \"{label}\", \"confidence\": \"high\", \"reasoning\": \"As said.\"}}"
        )
        .into();
    }
    if let Some(rest) = all.rsplit("Quality to judge — ").next().filter(|_| all.contains("Quality to judge — ")) {
        return if rest.starts_with("Grammar") {
            "Clear.\n{\"grammar\": 4}"
        } else {
            "It answers.\n{\"relevance\": 2}"
        }
        .into();
    }
    if req.messages[0].content.contains("evaluator") && all.contains("\"reason\"") && all.contains("\"score\"") {
        return "Fine.\n{\"grammar\": {\"reason\": \"No errors.\", \"score\": 4}, \
                \"relevance\": {\"reason\": \"It answers.\", \"score\": 5}}"
            .into();
    }
    match speaker(req).as_str() {
        "aggregator" => "Teachers and parents differ on relevance.".into(),
        "moderator" => {
            let next = if all.contains("Dee") { "Dee" } else { "Bea" };
            format!("{{\"next\": \"{next}\", \"reason\": \"{next} has said least.\"}}").into()
        }
        "Ann" => evaluation(4, 4, 4).into(),
        "Bea" => evaluation(2, 3, 2).into(),
        "Cal" => evaluation(5, 5, 5).into(),
        "Dee" => evaluation(3, 2, 3).into(),
        _ => evaluation(3, 3, 3).into(),
    }
}

/// As [`judge`], but Cal has nothing more to say after his first
/// evaluation: he never speaks again, so a person's override of his score
/// stands in the result.
fn judge_cal_done(req: &ChatRequest, call: usize) -> ScriptedReply {
    match speaker(req).as_str() {
        "Cal" => format!("NO MORE COMMENTS. {}", evaluation(5, 5, 5)).into(),
        _ => judge(req, call),
    }
}

const GROUPS: &[(&str, &[&str])] = &[("Teachers", &["Ann", "Bea"]), ("Parents", &["Cal", "Dee"])];

fn with(mut p: Panel, settings: &[(&str, SettingValue)]) -> Panel {
    for (k, v) in settings {
        p.protocol.settings.insert((*k).into(), v.clone());
    }
    p
}

fn pair_item() -> moot::item::Item {
    let mut it = item();
    it.id = "pair-x".into();
    it.content = String::new();
    it.context = Some("The town council voted 7 to 2 on Tuesday to close the Elm Street branch.".into());
    it.candidates = Some(vec![
        moot::item::Candidate { id: "sys-a".into(), text: "The council voted 7-2 to close the branch.".into() },
        moot::item::Candidate { id: "sys-b".into(), text: "A library is closing.".into() },
    ]);
    it
}

/// Every protocol's configuration, built afresh for each run; each reply
/// takes `delay` (time for a person's commands to land mid-run).
fn case(name: &str, delay: Duration) -> EngineConfig {
    let p = match name {
        "maj-eval" | "maj-eval-person" => panel(Protocol::MajEval, GROUPS),
        "maj-eval-llm" => {
            let mut p = panel(Protocol::MajEval, GROUPS);
            p.moderator.policy = ModeratorPolicy::Llm;
            p
        }
        "collab-eval" => panel(Protocol::CollabEval, &[("Panel", &["Ann", "Bea", "Cal"])]),
        "g-eval" => with(panel(Protocol::GEval, &[("Judge", &["Ann"])]), &[("samples", SettingValue::Integer(2))]),
        "sage-eval" => panel(Protocol::SageEval, &[("Evaluator", &["Ann"])]),
        "chat-eval" => with(
            panel(Protocol::ChatEval, &[("Readers", &["Ann", "Bea", "Cal"])]),
            &[("turns", SettingValue::Integer(2))],
        ),
        "round-table" => panel(Protocol::RoundTable, &[("Readers", &["Ann", "Bea", "Cal"])]),
        "pairwise" => panel(Protocol::Pairwise, &[("Judges", &["Ann", "Bea"])]),
        other => panic!("no case {other}"),
    };
    let responder = if name == "maj-eval-person" { judge_cal_done } else { judge };
    let provider = moot::testkit::scripted::ScriptedProvider::new(responder).with_delay(delay).with_chunk(4096);
    let mut c = config(p, Arc::new(provider));
    if name == "pairwise" {
        c.item = pair_item();
    }
    c
}

/// Whether a person acts in a whole run: as the debates begin, a comment,
/// a veto, a pick, a pause, a resume and an override of Cal's score.
#[derive(Clone, Copy, PartialEq)]
enum Person {
    Away,
    Present,
}

/// Run a case to its end, with the person's actions when `Present`; its log's events.
async fn whole(name: &str, path: &Path, person: Person) -> Vec<Event> {
    let delay = if person == Person::Away { Duration::ZERO } else { Duration::from_millis(15) };
    let mut s = Session::start(case(name, delay), Some(SessionWriter::create(path).unwrap()));
    if person == Person::Present {
        s.wait_for(|e| matches!(&e.kind, EventKind::PhaseStarted { phase: Phase::Debate, .. })).await;
        let author = author();
        s.send(Command::Comment { text: "Mind the young readers".into(), author: author.clone(), group: None });
        s.send(Command::VetoSpeaker { agent: "Ann".into(), author: author.clone() });
        s.send(Command::PickSpeaker { agent: "Dee".into(), author: author.clone() });
        s.send(Command::Pause { author: author.clone() });
        s.send(Command::Resume { author: author.clone() });
        s.send(Command::Override {
            target: OverrideTarget::Agent { agent: "Cal".into() },
            dimension: "grammar".into(),
            value: 2.0,
            reason: Some("too kind".into()),
            author,
        });
    }
    let (_, outcome) = s.finish().await;
    assert!(outcome.error.is_none(), "{name}: {:?}", outcome.error);
    parse_log(&std::fs::read(path).unwrap()).events
}

/// Resume the log `bytes` (written at `path`) to its end; the log's events then.
async fn resumed(name: &str, bytes: &[u8], path: &Path) -> Vec<Event> {
    resumed_with(case(name, Duration::ZERO), bytes, path).await
}

/// Resume the log `bytes` (written at `path`) as `config` to its end; the log's events then.
async fn resumed_with(config: EngineConfig, bytes: &[u8], path: &Path) -> Vec<Event> {
    std::fs::write(path, bytes).unwrap();
    let journal = Arc::new(Journal::new(parse_log(bytes).events).unwrap());
    journal.unpause_at_end(&author());
    let started = engine::resume(config, journal, path).unwrap();
    let engine::Started { mut events, handle, task, .. } = started;
    let drain = async { while events.recv().await.is_some() {} };
    let (outcome, ()) = tokio::time::timeout(Duration::from_secs(20), async { tokio::join!(task, drain) })
        .await
        .unwrap_or_else(|_| panic!("{}: the resumed run did not end", path.display()));
    drop(handle);
    outcome.unwrap();
    parse_log(&std::fs::read(path).unwrap()).events
}

/// What must not change: every result (groups' and the panel's, as last
/// published), the final evaluations, the pairs' decisions and the end
/// (without its duration: the tokens and calls of the whole session).
fn result(events: &[Event]) -> serde_json::Value {
    let mut results = std::collections::BTreeMap::new();
    let mut rest = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::AggregationCompleted { group, .. } => {
                results.insert(group.clone().unwrap_or_default(), serde_json::to_value(&e.kind).unwrap());
            }
            // Which turn an evaluation came from is left out: a turn asked
            // again after an interruption has a number of its own.
            EventKind::FinalEvaluations { group, evaluations, .. } => {
                rest.push(serde_json::json!({ "group": group, "evaluations": evaluations }))
            }
            EventKind::PairDecided { .. } => rest.push(serde_json::to_value(&e.kind).unwrap()),
            EventKind::SessionEnded { .. } => {
                let mut v = serde_json::to_value(&e.kind).unwrap();
                v.as_object_mut().unwrap().remove("duration_ms");
                rest.push(v);
            }
            _ => {}
        }
    }
    rest.sort_by_key(|v| v.to_string());
    serde_json::json!({ "results": results, "rest": rest })
}

/// The log is one session: numbered without gaps, ended once, no turn
/// started or completed twice, as many completed turns as the whole run's.
fn check_record(name: &str, cut: &str, events: &[Event], completed: usize) {
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64, "{name} {cut}: seq");
    }
    let ends = events.iter().filter(|e| matches!(e.kind, EventKind::SessionEnded { .. })).count();
    assert_eq!(ends, 1, "{name} {cut}: one session_ended");
    let mut started = std::collections::HashSet::new();
    let mut done = std::collections::HashSet::new();
    for e in events {
        match &e.kind {
            EventKind::TurnStarted { turn, .. } => assert!(started.insert(*turn), "{name} {cut}: turn {turn} twice"),
            EventKind::TurnCompleted { turn, .. } => {
                assert!(done.insert(*turn), "{name} {cut}: turn {turn} completed twice")
            }
            _ => {}
        }
    }
    assert_eq!(done.len(), completed, "{name} {cut}: completed turns");
}

/// Whether a person caused this event (the actions `whole` takes).
fn by_a_person(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::HumanComment { .. }
            | EventKind::SpeakerRequested { .. }
            | EventKind::Paused { .. }
            | EventKind::Resumed { .. }
            | EventKind::ScoreOverridden { .. }
    )
}

/// Cut the log of a whole run after every event, resume each cut, and
/// compare with the whole run. With a person's actions, a log cut before
/// the first of them must end as a run without them, one cut after the
/// last of them as the whole run; a cut among them is checked for its
/// record only (the person would have to act again).
async fn every_cut(name: &str, person: Person) {
    let dir = tempfile::tempdir().unwrap();
    let whole_log = whole(name, &dir.path().join("whole.jsonl"), person).await;
    let bytes = std::fs::read(dir.path().join("whole.jsonl")).unwrap();
    let expected = result(&whole_log);
    let alone = match person {
        Person::Away => expected.clone(),
        Person::Present => result(&whole(name, &dir.path().join("alone.jsonl"), Person::Away).await),
    };
    let acts: Vec<usize> = whole_log.iter().enumerate().filter(|(_, e)| by_a_person(&e.kind)).map(|(i, _)| i).collect();
    let (first, last) = match acts.as_slice() {
        [] => (usize::MAX, 0),
        [first, .., last] => (*first, *last),
        [one] => (*one, *one),
    };
    if person == Person::Present {
        assert_eq!(acts.len(), 6, "{name}: the person's actions are in the log");
        assert_ne!(alone, expected, "{name}: the person's actions change the result");
    }
    let completed = whole_log.iter().filter(|e| matches!(e.kind, EventKind::TurnCompleted { .. })).count();
    let ends: Vec<usize> = bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1).collect();
    assert_eq!(ends.len(), whole_log.len());
    // After every event but the last (`session_ended`), and torn in the middle of the next line.
    for (k, &end) in ends.iter().enumerate().take(ends.len() - 1) {
        let next = ends[k + 1];
        for (cut, upto) in [(format!("after event {k}"), end), (format!("torn after event {k}"), (end + next) / 2)] {
            let path = dir.path().join(format!("cut-{k}-{}.jsonl", upto - end));
            let log = resumed(name, &bytes[..upto], &path).await;
            check_record(name, &cut, &log, completed);
            assert!(
                log[..=k].iter().zip(&whole_log).all(|(a, b)| a == b),
                "{name} {cut}: the log's first lines were changed"
            );
            if k >= last {
                assert_eq!(result(&log), expected, "{name} {cut}: the result differs from the uninterrupted run's");
            } else if k < first {
                assert_eq!(result(&log), alone, "{name} {cut}: the result differs from a run without the person");
            }
        }
    }
}

#[tokio::test]
async fn maj_eval_with_a_persons_commands_resumes_at_every_event() {
    every_cut("maj-eval-person", Person::Present).await;
}

#[tokio::test]
async fn maj_eval_with_the_llm_moderator_resumes_at_every_event() {
    every_cut("maj-eval-llm", Person::Away).await;
}

#[tokio::test]
async fn collab_eval_resumes_at_every_event() {
    every_cut("collab-eval", Person::Away).await;
}

#[tokio::test]
async fn g_eval_resumes_at_every_event() {
    every_cut("g-eval", Person::Away).await;
}

#[tokio::test]
async fn sage_eval_resumes_at_every_event() {
    every_cut("sage-eval", Person::Away).await;
}

#[tokio::test]
async fn chat_eval_resumes_at_every_event() {
    every_cut("chat-eval", Person::Away).await;
}

#[tokio::test]
async fn round_table_resumes_at_every_event() {
    every_cut("round-table", Person::Away).await;
}

#[tokio::test]
async fn pairwise_resumes_at_every_event() {
    every_cut("pairwise", Person::Away).await;
}

/// A streamed G-Eval score whose score token carries `top_logprobs`, as an
/// OpenAI-compatible server sends it when asked.
fn weighted_reply(key: &str) -> Reply {
    let tok = |t: &str, top: serde_json::Value| {
        let logprob = if t == "4" { 0.6f64.ln() } else { -0.2 };
        serde_json::json!({"token": t, "logprob": logprob, "top_logprobs": top})
    };
    let chunk = |content: &str, lp: Vec<serde_json::Value>| {
        serde_json::json!({
            "id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null,
                         "logprobs": {"content": lp}}],
        })
        .to_string()
    };
    let top = serde_json::json!([
        {"token": "4", "logprob": (0.6f64).ln()},
        {"token": "3", "logprob": (0.3f64).ln()},
        {"token": "x", "logprob": (0.1f64).ln()}
    ]);
    Reply::sse()
        .event(&openai::role_chunk())
        .event(&chunk("Good enough.\n", vec![tok("Good enough.\n", serde_json::json!([]))]))
        .event(&chunk(&format!("{{\"{key}\": "), vec![tok(&format!("{{\"{key}\": "), serde_json::json!([]))]))
        .event(&chunk("4", vec![tok("4", top)]))
        .event(&chunk("}", vec![tok("}", serde_json::json!([]))]))
        .event(&openai::finish_chunk("stop"))
        .event("[DONE]")
}

/// G-Eval against a server that returns log-probabilities, five draws
/// asked for: one draw with weights is enough. The replies the log answers
/// carry no log-probabilities, so a resumed run takes the weighted scores
/// the log recorded: it makes no draw the uninterrupted run did not make,
/// and ends with its result.
#[tokio::test]
async fn weighted_scores_recorded_in_the_log_stand_after_resuming() {
    let server = TestServer::start().await.expect("bind 127.0.0.1");
    server.set_handler(|r| {
        let body = r.body_text();
        if body.to_lowercase().contains("write the evaluation steps") {
            return Reply::openai_stream(&["1. Read."], None);
        }
        weighted_reply(if body.contains("Quality to judge — Grammar") { "grammar" } else { "relevance" })
    });
    let config = || {
        let openai = OpenAiConfig {
            name: "test".into(),
            base_url: server.base_url(),
            model: "m".into(),
            ..OpenAiConfig::default()
        };
        let provider = Arc::new(OpenAiProvider::new(openai).unwrap());
        let p = with(panel(Protocol::GEval, &[("Judge", &["Ann"])]), &[("samples", SettingValue::Integer(5))]);
        let mut c = EngineConfig::new(Arc::new(p), item(), Bindings::uniform(Binding::new(provider, "m")));
        c.retry.max_attempts = 1;
        c
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("whole.jsonl");
    let (_, outcome) = Session::start(config(), Some(SessionWriter::create(&path).unwrap())).finish().await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let bytes = std::fs::read(&path).unwrap();
    let whole_log = parse_log(&bytes).events;
    let asked = server.request_count();
    assert_eq!(asked, 2 + 2, "steps and one weighted draw per dimension");

    // Cut after the first score: the other dimension's draw is all that is left to ask.
    let scored = |e: &Event| matches!(&e.kind, EventKind::TurnCompleted { evaluation: Some(ev), .. } if ev.weighted_scores.is_some());
    let k = whole_log.iter().position(scored).unwrap();
    let end = bytes.split_inclusive(|b| *b == b'\n').take(k + 1).map(<[u8]>::len).sum();
    let log = resumed_with(config(), &bytes[..end], &dir.path().join("cut.jsonl")).await;
    assert_eq!(server.request_count() - asked, 1, "one more draw, not four more");
    assert_eq!(result(&log), result(&whole_log));
}

/// A log of version 1 (`sessions/examples/maj-eval-two-groups.jsonl`), cut
/// in the middle of its debates: its panel is read back from the log, the
/// run goes on in it, and every turn is started and completed once.
#[tokio::test]
async fn a_version_1_log_cut_mid_debate_resumes_from_its_recorded_panel() {
    let example = include_bytes!("../../sessions/examples/maj-eval-two-groups.jsonl");
    let events = parse_log(example).events;
    let k = events.iter().position(|e| matches!(e.kind, EventKind::HumanComment { .. })).unwrap() + 2;
    let end = example.split_inclusive(|b| *b == b'\n').take(k).map(<[u8]>::len).sum();
    let recorded = Journal::new(events[..k].to_vec()).unwrap().recorded().unwrap();
    assert_eq!(recorded.panel.groups.len(), 2, "the panel is read back from the log");
    let mut c = config(recorded.panel, scripted(judge));
    c.item = recorded.item;
    c.seed = recorded.seed;
    let dir = tempfile::tempdir().unwrap();
    let log = resumed_with(c, &example[..end], &dir.path().join("cut.jsonl")).await;
    assert_eq!(&log[..k], &events[..k], "the old lines stay");
    let completed = log.iter().filter(|e| matches!(e.kind, EventKind::TurnCompleted { .. })).count();
    check_record("maj-eval-two-groups", "mid-debate", &log, completed);
    let Some(EventKind::SessionEnded { status, .. }) = log.last().map(|e| &e.kind) else { panic!("no end") };
    assert_eq!(*status, moot::session::event::EndStatus::Completed);
    assert!(log[k..].iter().any(|e| matches!(e.kind, EventKind::TurnAbandoned { .. })), "a turn was streaming");
}

/// A session resumed, cut again after the turn asked again completed, and
/// resumed once more: the turn abandoned the first time is answered by its
/// redo in the log, not asked a third time, and the session ends as the
/// whole run did.
#[tokio::test]
async fn a_session_resumed_twice_asks_an_abandoned_turn_once_more_only() {
    let name = "maj-eval-llm";
    let dir = tempfile::tempdir().unwrap();
    let whole_log = whole(name, &dir.path().join("whole.jsonl"), Person::Away).await;
    let bytes = std::fs::read(dir.path().join("whole.jsonl")).unwrap();
    let completed = whole_log.iter().filter(|e| matches!(e.kind, EventKind::TurnCompleted { .. })).count();
    // First cut: right after a debate turn started.
    let k = whole_log
        .iter()
        .position(|e| matches!(&e.kind, EventKind::TurnStarted { phase: Phase::Debate, kind: TurnKind::Speak, .. }))
        .unwrap();
    let end = bytes.split_inclusive(|b| *b == b'\n').take(k + 1).map(<[u8]>::len).sum();
    let once = resumed(name, &bytes[..end], &dir.path().join("once.jsonl")).await;
    let abandoned = once.iter().position(|e| matches!(e.kind, EventKind::TurnAbandoned { .. })).unwrap();
    // Second cut: right after the turn asked again completed.
    let redone =
        abandoned + once[abandoned..].iter().position(|e| matches!(e.kind, EventKind::TurnCompleted { .. })).unwrap();
    let once_bytes = std::fs::read(dir.path().join("once.jsonl")).unwrap();
    let end = once_bytes.split_inclusive(|b| *b == b'\n').take(redone + 1).map(<[u8]>::len).sum();
    let twice = resumed(name, &once_bytes[..end], &dir.path().join("twice.jsonl")).await;
    check_record(name, "resumed twice", &twice, completed);
    assert_eq!(twice.iter().filter(|e| matches!(e.kind, EventKind::TurnAbandoned { .. })).count(), 1);
    assert_eq!(result(&twice), result(&whole_log));
}
