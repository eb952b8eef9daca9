//! MAJ-EVAL under its paper preset, against a scripted provider: each point
//! where moot's defaults depart from the paper, and the paper's behaviour
//! that `preset = "paper"` restores.

use crate::support;

use moot::panel::{Panel, Preset, Protocol, ProtocolSection, SettingValue};
use moot::provider::ChatRequest;
use moot::session::EventKind;
use moot::session::event::{EndStatus, Phase};
use moot::testkit::scripted::ScriptedReply;
use support::*;

/// A two-group panel whose members have personas of their own.
fn maj_panel(preset: Preset) -> Panel {
    let mut p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"]), ("Parents", &["Cal", "Dee"])]);
    p.protocol = ProtocolSection { preset, ..ProtocolSection::new(Protocol::MajEval) };
    for g in &mut p.groups {
        for a in &mut g.agents {
            a.perspective = format!("{}-PERSPECTIVE", a.name.to_uppercase());
            a.specialty = format!("{}-SPECIALTY", a.name.to_uppercase());
        }
    }
    p
}

/// First evaluations are feedback, then scores; speeches say who spoke;
/// nobody finishes, so every group debates to its last turn.
fn reply(req: &ChatRequest, _: usize) -> ScriptedReply {
    let who = speaker(req);
    match who.as_str() {
        "aggregator" => "Agreement: the answer is clear. Disagreement: its tone. Overall: adequate.".into(),
        "moderator" => "{\"next\": \"Ann\", \"reason\": \"Ann has not answered.\"}".into(),
        name if is_debate(req) => format!("{name} SPEECH about the den.\n{}", evaluation(4, 3, 4)).into(),
        name => format!(
            "{name} FEEDBACK: the question checks the story, and the answer names the storm.\n{}",
            evaluation(4, 3, 4)
        )
        .into(),
    }
}

async fn run_maj(p: Panel) -> (Vec<moot::session::Event>, Vec<ChatRequest>) {
    let provider = scripted(reply);
    let (events, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    (events, provider.requests())
}

fn requests_of<'r>(requests: &'r [ChatRequest], who: &str) -> Vec<&'r ChatRequest> {
    requests.iter().filter(|r| speaker(r) == who).collect()
}

fn all_text(r: &ChatRequest) -> String {
    r.messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn under_the_paper_preset_each_agent_has_its_own_persona_and_sees_nobody_elses() {
    let (events, requests) = run_maj(maj_panel(Preset::Paper)).await;
    for r in requests_of(&requests, "Ann") {
        let text = all_text(r);
        assert!(r.messages[0].content.contains("ANN-PERSPECTIVE"), "Ann's own persona is in her instructions");
        assert!(r.messages[0].content.contains("ANN-SPECIALTY"));
        for other in ["BEA", "CAL", "DEE"] {
            assert!(!text.contains(&format!("{other}-PERSPECTIVE")), "Ann saw {other}'s persona: {text}");
            assert!(!text.contains(&format!("{other}-SPECIALTY")));
        }
        assert!(!r.messages[0].content.contains("moderate"), "nothing of the moderator's in an agent's prompt");
    }
    let bea = requests_of(&requests, "Bea");
    assert!(bea[0].messages[0].content.contains("BEA-PERSPECTIVE"));
    assert_ne!(requests_of(&requests, "Ann")[0].messages[0].content, bea[0].messages[0].content);
    // The log says which preset ran and that nothing departs from the paper.
    match &events[0].kind {
        EventKind::SessionStarted { preset, departures, .. } => {
            assert_eq!(*preset, Preset::Paper);
            assert!(departures.is_empty(), "{departures:?}");
        }
        other => panic!("{other:?}"),
    }

    // moot's defaults: one shared system prompt, and every member's persona in the group's roster.
    let (events, requests) = run_maj(maj_panel(Preset::Moot)).await;
    let ann = requests_of(&requests, "Ann");
    let debate = ann.iter().find(|r| is_debate(r)).expect("Ann spoke in the debate");
    assert!(all_text(debate).contains("BEA-PERSPECTIVE"), "the roster shows the others' personas");
    assert_eq!(ann[0].messages[0].content, requests_of(&requests, "Bea")[0].messages[0].content);
    match &events[0].kind {
        EventKind::SessionStarted { preset, departures, .. } => {
            assert_eq!(*preset, Preset::Moot);
            let names: Vec<&str> = departures.iter().map(|d| d.setting.as_str()).collect();
            assert_eq!(
                names,
                [
                    "personas",
                    "stance",
                    "turns",
                    "first_feedback",
                    "aggregation",
                    "history",
                    "repeats",
                    "quotes",
                    "reasons",
                    "claims"
                ]
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn under_the_paper_preset_agents_keep_their_own_view_and_speak_freely() {
    let (_, requests) = run_maj(maj_panel(Preset::Paper)).await;
    let debate: Vec<&ChatRequest> = requests.iter().filter(|r| is_debate(r)).collect();
    assert!(!debate.is_empty());
    for r in &debate {
        let text = all_text(r);
        assert!(!text.contains("Change a score when an argument persuades you"), "{text}");
        assert!(text.contains("do not take over another member's views or scores"), "{text}");
        assert!(r.opening.is_none(), "a free turn is not given its first words: {:?}", r.opening);
        assert!(!text.contains("two to four sentences"), "no length cap");
        assert!(text.contains("agree, disagree or add nuance"), "{text}");
    }
    // moot's defaults: persuadable, and each turn answers the last speaker in a few sentences.
    let (_, requests) = run_maj(maj_panel(Preset::Moot)).await;
    let debate: Vec<&ChatRequest> = requests.iter().filter(|r| is_debate(r)).collect();
    assert!(debate.iter().all(|r| all_text(r).contains("Change a score when an argument persuades you")));
    assert!(debate.iter().all(|r| r.opening.as_deref().is_some_and(|o| o.ends_with(", I"))));
    assert!(debate.iter().all(|r| all_text(r).contains("two to four sentences")));
}

#[tokio::test]
async fn under_the_paper_preset_a_first_evaluation_is_feedback_that_later_speakers_read() {
    let (_, requests) = run_maj(maj_panel(Preset::Paper)).await;
    let first = requests.iter().find(|r| speaker(r) == "Ann" && !is_debate(r)).unwrap();
    assert!(first.prose_first, "the feedback comes before the scores");
    assert!(all_text(first).contains("several sentences"), "{}", all_text(first));
    let debate = requests.iter().find(|r| is_debate(r) && speaker(r) == "Bea").unwrap();
    assert!(all_text(debate).contains("Ann FEEDBACK: the question checks the story"), "{}", all_text(debate));
    // The feedback is given its first words, the item's first part, and asked for them.
    let opening = first.opening.as_deref().expect("the feedback's opening words");
    assert_eq!(opening, "The content");
    assert!(all_text(first).contains(&format!("Begin with \"{opening}\"")), "{}", all_text(first));

    let (_, requests) = run_maj(maj_panel(Preset::Moot)).await;
    let first = requests.iter().find(|r| speaker(r) == "Ann" && !is_debate(r)).unwrap();
    assert!(!first.prose_first, "moot's default: the scores at once");
    assert!(first.opening.is_none(), "scores at once have no opening words");
}

#[tokio::test]
async fn under_the_paper_preset_each_group_gets_a_synthesis_of_its_whole_debate() {
    let (events, requests) = run_maj(maj_panel(Preset::Paper)).await;
    let aggregator = requests_of(&requests, "aggregator");
    assert_eq!(aggregator.len(), 2, "one synthesis per group");
    let teachers = aggregator.iter().find(|r| all_text(r).contains("\"Teachers\" stakeholder group")).unwrap();
    let text = all_text(teachers);
    assert!(text.contains("Ann SPEECH about the den") && text.contains("Bea FEEDBACK"), "the whole debate: {text}");
    assert!(!text.contains("Cal SPEECH"), "only the group's own debate");
    assert!(text.contains("The group's average scores: grammar 4, overall 4, relevance 3"), "{text}");
    assert!(text.contains("Each member's final feedback"));
    let results: Vec<(Option<String>, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AggregationCompleted { group, feedback, .. } => Some((group.clone(), feedback.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3);
    for (group, feedback) in &results[..2] {
        assert!(group.is_some() && feedback.starts_with("Agreement:"), "{group:?}: {feedback}");
    }
    for r in &aggregator {
        assert_eq!(r.opening.as_deref(), Some("Agreement:"));
        assert_eq!(r.sections, ["Agreement:", "Disagreement:", "Overall:"], "the synthesis's paragraphs are headed");
    }
    let (panel, feedback) = &results[2];
    assert!(panel.is_none() && feedback.contains("Teachers: Agreement:") && feedback.contains("Parents: "));

    // moot's defaults: one synthesis of the final evaluations, no debate in it.
    let (_, requests) = run_maj(maj_panel(Preset::Moot)).await;
    let aggregator = requests_of(&requests, "aggregator");
    assert_eq!(aggregator.len(), 1);
    let text = all_text(aggregator[0]);
    assert!(!text.contains("SPEECH"));
    // It is told what the groups' results show, as sentences.
    for line in [
        "- Teachers: grammar 4, relevance 3, overall 4; its members give the same scores.\n",
        "- Parents: grammar 4, relevance 3, overall 4; its members give the same scores.\n",
        "- The groups' results are the same.\n",
        "- The panel's result: grammar 4, relevance 3, overall 4.\n",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
}

#[tokio::test]
async fn under_the_paper_preset_a_speaker_sees_the_whole_debate_from_the_first_evaluations() {
    let mut p = maj_panel(Preset::Paper);
    p.moderator.max_turns = 16;
    let (_, requests) = run_maj(p.clone()).await;
    let last = requests.iter().rev().find(|r| is_debate(r) && speaker(r) == "Ann").unwrap();
    let text = all_text(last);
    assert!(text.contains("Bea FEEDBACK"), "the first evaluations are still shown after 16 turns: {text}");
    assert!(!text.contains("earlier contributions not shown"));

    // A panel that sets `history` itself wins over the preset.
    p.protocol.settings.insert("history".into(), SettingValue::Text("window".into()));
    let (events, requests) = run_maj(p).await;
    let last = requests.iter().rev().find(|r| is_debate(r) && speaker(r) == "Ann").unwrap();
    assert!(all_text(last).contains("earlier contributions not shown"), "{}", all_text(last));
    match &events[0].kind {
        EventKind::SessionStarted { departures, .. } => {
            assert_eq!(
                departures.iter().map(ToString::to_string).collect::<Vec<_>>(),
                ["history = \"window\" (paper: \"whole\")"]
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(events.iter().any(|e| matches!(e.kind, EventKind::PhaseStarted { phase: Phase::Aggregation, .. })));
}
