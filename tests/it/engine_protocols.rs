//! Protocol runs against a scripted provider: phase order, debate rules,
//! moderator behaviour, human commands and the session log.

use crate::support;

use std::time::Duration;

use moot::engine::Command;
use moot::panel::{ModeratorPolicy, Protocol};
use moot::provider::ProviderError;
use moot::session::event::{EndStatus, OverrideTarget, Phase, Role, SelectedBy, TurnKind};
use moot::session::{EventKind, SessionView, SessionWriter, parse_log, read_log};
use moot::testkit::scripted::{ScriptedProvider, ScriptedReply};
use support::*;

/// Each agent keeps its own fixed scores; nobody finishes.
fn stubborn(req: &moot::provider::ChatRequest, _: usize) -> ScriptedReply {
    match speaker(req).as_str() {
        "aggregator" => "They agree on grammar and disagree on relevance.".into(),
        "moderator" => "{\"next\": \"Bea\", \"reason\": \"Bea disagrees most.\"}".into(),
        "Ann" => evaluation(4, 4, 4).into(),
        "Bea" => evaluation(2, 3, 2).into(),
        "Cal" => evaluation(5, 5, 5).into(),
        _ => evaluation(3, 3, 3).into(),
    }
}

#[tokio::test]
async fn maj_eval_runs_phases_in_order_and_respects_max_turns() {
    let provider = scripted(stubborn);
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"]), ("Parents", &["Cal", "Dee"])]);
    let (events, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);

    // Sequence numbers are gapless and the log is framed by start and end.
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64);
    }
    assert_eq!(events.first().unwrap().kind.type_name(), "session_started");
    assert_eq!(events.last().unwrap().kind.type_name(), "session_ended");

    // Phase order: initial, then the debates, then aggregation.
    let phases: Vec<(Phase, Option<String>)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PhaseStarted { phase, group, .. } => Some((*phase, group.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(phases[0], (Phase::Initial, None));
    assert!(phases[1..3].iter().all(|(p, g)| *p == Phase::Debate && g.is_some()));
    assert_eq!(phases[3], (Phase::Aggregation, None));

    // Every agent evaluated first, once.
    let mut initial = turn_agents(&events, Phase::Initial);
    initial.sort();
    assert_eq!(initial, ["Ann", "Bea", "Cal", "Dee"]);

    // Nobody finishes, so each group debates exactly max_turns turns.
    let view = SessionView::from_events(&events);
    for g in &view.groups {
        assert_eq!(g.debate_turns, 4, "group {}", g.name);
    }
    // Round-robin alternates within a group.
    let teachers: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SpeakerSelected { group, agent, by, .. } if group == "Teachers" => {
                assert_eq!(*by, SelectedBy::Policy);
                Some(agent.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(teachers, ["Ann", "Bea", "Ann", "Bea"]);

    // Group means and the panel-wide mean of group means, with the synthesis.
    let panel_agg = view.aggregate.as_ref().expect("panel-wide aggregate");
    assert_eq!(view.group("Teachers").unwrap().aggregate.as_ref().unwrap().scores["grammar"], 3.0);
    assert_eq!(view.group("Parents").unwrap().aggregate.as_ref().unwrap().scores["grammar"], 4.0);
    assert_eq!(panel_agg.scores["grammar"], 3.5);
    assert!(panel_agg.feedback.contains("agree on grammar"));
    assert_eq!(outcome.result.unwrap()["grammar"], 3.5);

    // Usage is counted per role.
    assert!(outcome.usage.by_role["agent"].output_tokens > 0);
    assert!(outcome.usage.by_role["aggregator"].output_tokens > 0);
    assert_eq!(outcome.usage.calls as usize, provider.calls());
}

#[tokio::test]
async fn no_more_comments_finishes_an_agent_exactly_once() {
    // Ann finishes on her first debate turn; Bea never does.
    let provider = scripted(|req, _| match speaker(req).as_str() {
        "Ann" if is_debate(req) => format!("I stand by my view. NO MORE COMMENTS\n{}", evaluation(4, 4, 4)).into(),
        "aggregator" => "Synthesis.".into(),
        _ => stubborn(req, 0),
    });
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]);
    let (events, outcome) = Session::start(config(p, provider), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed);
    let debate = turn_agents(&events, Phase::Debate);
    assert_eq!(debate.iter().filter(|a| *a == "Ann").count(), 1, "{debate:?}");
    assert_eq!(debate.len(), 4, "Bea keeps the floor until max_turns: {debate:?}");
    let view = SessionView::from_events(&events);
    assert!(view.agent("Ann").unwrap().progress.finished);
    assert!(!view.agent("Bea").unwrap().progress.finished);
}

#[tokio::test]
async fn debate_ends_when_everyone_is_done() {
    let provider = scripted(|req, _| match speaker(req).as_str() {
        "aggregator" => "Synthesis.".into(),
        _ if is_debate(req) => format!("Agreed. NO MORE COMMENTS\n{}", evaluation(3, 3, 3)).into(),
        _ => evaluation(3, 3, 3).into(),
    });
    let mut p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea", "Cal"])]);
    p.moderator.max_turns = 10;
    let (events, _) = Session::start(config(p, provider), None).finish().await;
    assert_eq!(turn_agents(&events, Phase::Debate).len(), 3);
}

#[tokio::test]
async fn no_more_comments_inside_the_item_does_not_finish_an_agent() {
    // The agent quotes the item, which itself contains the phrase.
    let provider = scripted(|req, _| match speaker(req).as_str() {
        "aggregator" => "Synthesis.".into(),
        "Ann" if is_debate(req) => {
            format!("The fox shouted \"no more comments!\" in the story, which is odd.\n{}", evaluation(4, 4, 4)).into()
        }
        _ => stubborn(req, 0),
    });
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]);
    let mut c = config(p, provider);
    c.item.content = "Question: What did the fox shout?\nAnswer: The fox shouted \"no more comments!\"".into();
    let (events, _) = Session::start(c, None).finish().await;
    let debate = turn_agents(&events, Phase::Debate);
    assert_eq!(debate.iter().filter(|a| *a == "Ann").count(), 2, "{debate:?}");
}

#[tokio::test]
async fn llm_moderator_is_reasked_once_then_falls_back_to_disagreement() {
    let provider = scripted(|req, _| match speaker(req).as_str() {
        "moderator" => "Someone should speak, I think.".into(),
        _ => stubborn(req, 0),
    });
    let mut p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea", "Cal"])]);
    p.moderator.policy = ModeratorPolicy::Llm;
    p.moderator.max_turns = 1;
    let (events, _) = Session::start(config(p, provider.clone()), None).finish().await;
    let moderator_calls = provider.requests().iter().filter(|r| speaker(r) == "moderator").count();
    assert_eq!(moderator_calls, 2, "one ask and one re-ask");
    let retry = provider.requests().into_iter().filter(|r| speaker(r) == "moderator").nth(1).unwrap();
    assert!(retry.messages.last().unwrap().content.contains("could not be used"));
    let sel = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::SpeakerSelected { by, raw, fallback, .. } => Some((*by, raw.clone(), fallback.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(sel.0, SelectedBy::Policy);
    assert_eq!(sel.2.as_deref(), Some("disagreement"));
    assert!(sel.1.unwrap().contains("Someone should speak"));
}

#[tokio::test]
async fn llm_moderator_pick_is_used() {
    let provider = scripted(stubborn);
    let mut p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea", "Cal"])]);
    p.moderator.policy = ModeratorPolicy::Llm;
    p.moderator.max_turns = 1;
    let (events, _) = Session::start(config(p, provider), None).finish().await;
    let (agent, by, reason) = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::SpeakerSelected { agent, by, reason, .. } => Some((agent.clone(), *by, reason.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!((agent.as_str(), by), ("Bea", SelectedBy::Moderator));
    assert!(reason.contains("disagrees most"));
    assert_eq!(turn_agents(&events, Phase::Debate), ["Bea"]);
}

/// While a speech streams, the run hints the start of the group's next
/// request to the provider: the discussion with the speech so far.
#[tokio::test]
async fn a_streaming_speech_is_hinted_as_the_start_of_the_next_request() {
    let provider = scripted(|req, _| match speaker(req).as_str() {
        "moderator" => "{\"next\": \"Bea\", \"reason\": \"Bea has not answered.\"}".into(),
        "aggregator" => "Done.".into(),
        name => {
            format!("{name} here: the answer never says where the fox went, which matters.\n{}", evaluation(3, 3, 3))
                .into()
        }
    });
    let mut p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea", "Cal"])]);
    p.moderator.policy = ModeratorPolicy::Llm;
    p.moderator.max_turns = 3;
    let (_, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let hints = provider.read_aheads();
    assert_eq!(hints.len(), 3, "one hint per debate speech (the initial evaluations have none)");
    let requests = provider.requests();
    // Every speech but the last is followed by the group's next requests.
    for hint in &hints[..2] {
        let so_far = hint[1].content.trim_end();
        let speech = so_far.rsplit_once("] ").map(|(_, s)| s).unwrap_or_default();
        assert!(speech.contains("where the fox went"), "the speech: {so_far}");
        assert!(
            speech.contains("My view, briefly.\n  (")
                && speech.ends_with("'s scores now: grammar 3, relevance 3, overall 3 (confidence 0.80)"),
            "its prose and the scores streamed so far, not its JSON: {speech}"
        );
        let continued =
            requests.iter().filter(|r| r.messages[0] == hint[0] && r.messages[1].content.starts_with(so_far));
        assert!(continued.count() >= 2, "the moderator's and the next speaker's requests start with the hint");
    }
}

#[tokio::test]
async fn an_llm_moderator_does_not_give_the_floor_back_to_who_just_spoke() {
    // The moderator names Bea every time, as small models do.
    let provider = scripted(stubborn);
    let mut p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea", "Cal"])]);
    p.moderator.policy = ModeratorPolicy::Llm;
    p.moderator.max_turns = 4;
    let (events, _) = Session::start(config(p, provider), None).finish().await;
    let speakers = turn_agents(&events, Phase::Debate);
    assert_eq!(speakers.len(), 4, "{speakers:?}");
    assert_eq!(speakers[0], "Bea");
    assert!(speakers.windows(2).all(|w| w[0] != w[1]), "someone spoke twice in a row: {speakers:?}");
    assert_eq!(speakers.iter().filter(|s| *s == "Bea").count(), 2, "Bea again whenever she may: {speakers:?}");
}

#[tokio::test]
async fn unreadable_reply_gets_one_repair_then_the_previous_evaluation_stands() {
    let provider = scripted(|req, _| match speaker(req).as_str() {
        "Ann" if is_debate(req) || req.messages.len() > 3 => "I have thoughts but no numbers.".into(),
        _ => stubborn(req, 0),
    });
    let mut p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]);
    p.moderator.max_turns = 1;
    let (events, outcome) = Session::start(config(p, provider), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed);
    let ann_turns: Vec<(TurnKind, bool)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnStarted { agent, kind, phase, .. } if agent == "Ann" && *phase == Phase::Debate => {
                Some((*kind, true))
            }
            _ => None,
        })
        .collect();
    assert_eq!(ann_turns.iter().map(|t| t.0).collect::<Vec<_>>(), [TurnKind::Speak, TurnKind::Repair]);
    let errors = events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::TurnCompleted { agent, evaluation: None, parse_error: Some(_), .. } if agent == "Ann"))
        .count();
    assert_eq!(errors, 2, "both replies are kept with their parse error");
    let view = SessionView::from_events(&events);
    assert_eq!(view.stages.agent("Ann").unwrap().final_.as_ref().unwrap().scores["grammar"], 4.0);
    assert!(outcome.usage.by_role["repair"].output_tokens > 0, "repair requests are counted apart");
}

#[tokio::test]
async fn collab_eval_stops_early_on_initial_consensus() {
    let provider = scripted(|_, _| evaluation(4, 4, 4).into());
    let p = panel(Protocol::CollabEval, &[("Evaluators", &["Ann", "Bea", "Cal"])]);
    let (events, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed);
    assert_eq!(provider.calls(), 3, "three initial evaluations and nothing else");
    assert!(
        !events.iter().any(|e| matches!(
            &e.kind,
            EventKind::PhaseStarted { phase: Phase::Discussion | Phase::FinalJudgment, .. }
        ))
    );
    let view = SessionView::from_events(&events);
    assert_eq!(view.aggregate.as_ref().unwrap().method.as_deref(), Some("consensus"));
    assert_eq!(view.aggregate.as_ref().unwrap().overall, Some(4.0));
}

#[tokio::test]
async fn collab_eval_goes_to_the_final_judge_when_nothing_changes() {
    let provider = scripted(|req, _| match speaker(req).as_str() {
        "final judge" => evaluation(3, 2, 3).into(),
        _ => stubborn(req, 0),
    });
    let p = panel(Protocol::CollabEval, &[("Evaluators", &["Ann", "Bea", "Cal"])]);
    let (events, outcome) = Session::start(config(p, provider), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed);
    let rounds =
        events.iter().filter(|e| matches!(&e.kind, EventKind::PhaseStarted { phase: Phase::Discussion, .. })).count();
    assert_eq!(rounds, 1, "results did not change in round 1, so no round 2");
    let view = SessionView::from_events(&events);
    let agg = view.aggregate.as_ref().unwrap();
    assert_eq!(agg.method.as_deref(), Some("final_judge"));
    assert_eq!((agg.scores["relevance"], agg.overall), (2.0, Some(3.0)));
}

#[tokio::test]
async fn collab_eval_uses_every_round_then_the_final_judge() {
    // Ann changes her mind every round, so results keep changing without consensus.
    let provider = scripted(|req, _| {
        let round = req
            .messages
            .last()
            .unwrap()
            .content
            .split("Discussion round ")
            .nth(1)
            .and_then(|s| s[..1].parse::<u32>().ok());
        match (speaker(req).as_str(), round) {
            ("Ann", Some(r)) => evaluation(1 + r % 2, 3, 3).into(),
            ("final judge", _) => evaluation(3, 3, 3).into(),
            _ => stubborn(req, 0),
        }
    });
    let p = panel(Protocol::CollabEval, &[("Evaluators", &["Ann", "Bea", "Cal"])]);
    let (events, _) = Session::start(config(p, provider), None).finish().await;
    let rounds =
        events.iter().filter(|e| matches!(&e.kind, EventKind::PhaseStarted { phase: Phase::Discussion, .. })).count();
    assert_eq!(rounds, 3);
    assert!(events.iter().any(|e| matches!(&e.kind, EventKind::PhaseStarted { phase: Phase::FinalJudgment, .. })));
}

#[tokio::test]
async fn collab_eval_round_order_is_seeded() {
    async fn order(seed: u64) -> Vec<String> {
        let p = panel(Protocol::CollabEval, &[("Evaluators", &["Ann", "Bea", "Cal", "Dee", "Eve"])]);
        let mut c = config(p, scripted(stubborn));
        c.seed = seed;
        let (events, _) = Session::start(c, None).finish().await;
        turn_agents(&events, Phase::Discussion)
    }
    let a = order(1).await;
    assert_eq!(a.len(), 5);
    assert_eq!(a, order(1).await, "same seed, same order");
    let mut differs = false;
    for seed in 2..8 {
        differs |= order(seed).await != a;
    }
    assert!(differs, "other seeds give other orders");
}

#[tokio::test]
async fn a_comment_reaches_every_later_prompt() {
    let provider = std::sync::Arc::new(ScriptedProvider::new(stubborn).with_delay(Duration::from_millis(15)));
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"]), ("Parents", &["Cal", "Dee"])]);
    let mut s = Session::start(config(p, provider.clone()), None);
    s.wait_for(|e| matches!(&e.kind, EventKind::TurnStarted { phase: Phase::Debate, .. })).await;
    let sent_at = provider.calls();
    s.send(Command::Comment { text: "Please consider the age of the readers.".into(), author: author(), group: None });
    let (events, _) = s.finish().await;
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::HumanComment { text, .. } if text.contains("age of the readers")))
    );
    let later: Vec<_> = provider.requests().into_iter().skip(sent_at).filter(|r| speaker(r) != "aggregator").collect();
    assert!(later.len() >= 4, "several turns after the comment");
    for r in &later {
        assert!(
            r.messages
                .iter()
                .any(|m| m.content.contains("[HUMAN MODERATOR tester] Please consider the age of the readers.")),
            "{} did not see the comment",
            speaker(r)
        );
    }
}

#[tokio::test]
async fn overrides_change_the_result_and_keep_the_original() {
    let provider = scripted(stubborn);
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]);
    let mut c = config(p, provider);
    c.linger = true;
    let mut s = Session::start(c, None);
    // An agent's score before aggregation, then the final result after it.
    s.wait_for(|e| matches!(&e.kind, EventKind::PhaseStarted { phase: Phase::Debate, .. })).await;
    s.send(Command::Override {
        target: OverrideTarget::Agent { agent: "Bea".into() },
        dimension: "grammar".into(),
        value: 4.0,
        reason: Some("misread".into()),
        author: author(),
    });
    s.wait_for(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })).await;
    s.send(Command::Override {
        target: OverrideTarget::Final { group: None },
        dimension: "overall".into(),
        value: 5.0,
        reason: None,
        author: author(),
    });
    s.wait_for(
        |e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, method: Some(m), .. } if m == "override"),
    )
    .await;
    s.send(Command::Quit { author: author() });
    let (events, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "quitting after the result is not a stop");

    let overrides: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ScoreOverridden { from, to, .. } => Some((*from, *to)),
            _ => None,
        })
        .collect();
    // Bea's grammar was 2, so the group's grammar mean is (4 + 4) / 2 = 4, not 3.
    assert_eq!(overrides[0], (Some(2.0), 4.0));
    let view = SessionView::from_events(&events);
    let agg = view.aggregate.as_ref().unwrap();
    assert_eq!(agg.scores["grammar"], 4.0);
    assert_eq!(agg.overall, Some(5.0));
    assert_eq!(agg.original["overall"], 3.0, "the computed value stays on record");
    assert_eq!(overrides[1], (Some(3.0), 5.0));
    assert_eq!(outcome.result.unwrap()["overall"], 5.0);
}

#[tokio::test]
async fn invalid_commands_are_rejected_with_a_reason() {
    let provider = std::sync::Arc::new(ScriptedProvider::new(stubborn).with_delay(Duration::from_millis(5)));
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]);
    let s = Session::start(config(p, provider), None);
    s.send(Command::PickSpeaker { agent: "Zed".into(), author: author() });
    s.send(Command::Override {
        target: OverrideTarget::Final { group: None },
        dimension: "grammar".into(),
        value: 9.0,
        reason: None,
        author: author(),
    });
    s.send(Command::Override {
        target: OverrideTarget::Final { group: None },
        dimension: "spelling".into(),
        value: 3.0,
        reason: None,
        author: author(),
    });
    let (events, _) = s.finish().await;
    let reasons: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CommandRejected { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(reasons[0].contains("Zed") && reasons[0].contains("Ann, Bea"));
    assert!(reasons[1].contains("outside the scale 1–5"));
    assert!(reasons[2].contains("unknown dimension \"spelling\""));
}

#[tokio::test]
async fn a_human_pick_chooses_the_next_speaker() {
    let provider = std::sync::Arc::new(ScriptedProvider::new(stubborn).with_delay(Duration::from_millis(5)));
    let mut p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea", "Cal"])]);
    p.moderator.max_turns = 2;
    let s = Session::start(config(p, provider), None);
    s.send(Command::PickSpeaker { agent: "Cal".into(), author: author() });
    let (events, _) = s.finish().await;
    let first = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::SpeakerSelected { agent, by, .. } => Some((agent.clone(), *by)),
            _ => None,
        })
        .unwrap();
    assert_eq!(first, ("Cal".to_string(), SelectedBy::Human));
    assert_eq!(turn_agents(&events, Phase::Debate)[0], "Cal");
}

#[tokio::test]
async fn a_veto_skips_the_moderators_pick() {
    let provider = scripted(stubborn);
    let mut p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea", "Cal"])]);
    p.moderator.max_turns = 1;
    let s = Session::start(config(p, provider), None);
    s.send(Command::VetoSpeaker { agent: "Ann".into(), author: author() });
    let (events, _) = s.finish().await;
    // Round-robin would start with Ann.
    assert_eq!(turn_agents(&events, Phase::Debate), ["Bea"]);
}

#[tokio::test]
async fn pause_step_and_resume() {
    let provider = std::sync::Arc::new(ScriptedProvider::new(stubborn).with_delay(Duration::from_millis(5)));
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]);
    let mut s = Session::start(config(p, provider.clone()), None);
    s.wait_for(|e| matches!(&e.kind, EventKind::TurnCompleted { .. })).await;
    s.send(Command::Pause { author: author() });
    s.wait_for(|e| matches!(&e.kind, EventKind::Paused { .. })).await;
    // Let everything in flight finish, then nothing more may start.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let calls_paused = provider.calls();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(provider.calls(), calls_paused, "nothing starts while paused");
    s.send(Command::Step { author: author() });
    s.wait_for(|e| matches!(&e.kind, EventKind::TurnCompleted { .. })).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(provider.calls(), calls_paused + 1, "a step runs exactly one turn");
    s.send(Command::Resume { author: author() });
    let (events, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Completed);
    assert!(types(&events).contains(&"stepped"));
    assert!(types(&events).contains(&"resumed"));
}

#[tokio::test]
async fn stop_cancels_the_turn_in_flight_and_still_aggregates() {
    // Debate turns hang for a long time; everything else answers at once.
    let slow = scripted(|req, i| match speaker(req).as_str() {
        "aggregator" => "Synthesis of what exists.".into(),
        _ if is_debate(req) => ScriptedReply::Slow(evaluation(1, 1, 1), Duration::from_secs(30)),
        _ => stubborn(req, i),
    });
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]);
    let mut s = Session::start(config(p, slow), None);
    let started = std::time::Instant::now();
    s.wait_for(|e| matches!(&e.kind, EventKind::TurnStarted { phase: Phase::Debate, role: Role::Agent, .. })).await;
    s.send(Command::Stop { author: author() });
    let (events, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Stopped);
    assert_eq!(outcome.reason.as_deref(), Some("stopped by tester"));
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::TurnFailed { error, will_retry: false, .. } if error == "cancelled"))
    );
    assert!(events.iter().any(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })));
    assert_eq!(turn_agents(&events, Phase::Debate).len(), 1, "no debate turn after the stop");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_dead_provider_fails_the_session_with_a_clear_error() {
    let provider = scripted(|_, _| ScriptedReply::Fail(ProviderError::Connect("connection refused".into())));
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]);
    let (events, outcome) = Session::start(config(p, provider), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Failed);
    assert!(outcome.error.unwrap().contains("first evaluation failed"));
    let retried = events.iter().filter(|e| matches!(&e.kind, EventKind::TurnFailed { will_retry: true, .. })).count();
    assert_eq!(retried, 2, "each agent's call was retried once before giving up");
}

#[tokio::test]
async fn an_unauthorised_key_fails_fast_naming_the_agent() {
    let provider = scripted(|_, _| {
        ScriptedReply::Fail(ProviderError::Http { status: 401, body: "invalid api key".into(), retry_after: None })
    });
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann"])]);
    let (_, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Failed);
    let err = outcome.error.unwrap();
    assert!(err.starts_with("Ann: HTTP 401"), "{err}");
    assert_eq!(provider.calls(), 1, "a 401 is not retried, and nothing else is tried");
}

#[tokio::test]
async fn session_log_round_trips_and_every_prefix_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]);
    let mut c = config(p, scripted(stubborn));
    c.panel = std::sync::Arc::new({
        let mut p = (*c.panel).clone();
        p.moderator.max_turns = 2;
        p
    });
    let s = Session::start(c, Some(SessionWriter::create(&path).unwrap()));
    let (events, _) = s.finish().await;

    let loaded = read_log(&path).unwrap();
    assert!(loaded.problems.is_empty() && loaded.partial_tail.is_none());
    assert_eq!(loaded.events, events, "what observers saw is exactly what was written");

    let live = SessionView::from_events(&events);
    let replayed = SessionView::from_events(&loaded.events);
    assert_eq!(format!("{:?}", live.aggregate), format!("{:?}", replayed.aggregate));

    let bytes = std::fs::read(&path).unwrap();
    for cut in 0..=bytes.len() {
        let log = parse_log(&bytes[..cut]);
        let complete_lines = bytes[..cut].iter().filter(|&&b| b == b'\n').count();
        assert_eq!(log.events.len(), complete_lines, "cut at {cut}");
        assert!(log.problems.is_empty(), "cut at {cut}: {:?}", log.problems);
        let _ = SessionView::from_events(&log.events);
    }
}

#[test]
fn a_queued_call_shows_as_queued_until_its_text_arrives() {
    use moot::session::Event;
    use moot::session::fold::AgentState;
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann"])]);
    let t = chrono::Utc::now();
    let ev = |seq, kind| Event { seq, t, kind };
    let mut view = SessionView::new();
    let started = moot::engine::describe_session(&config(p, scripted(stubborn)));
    view.apply(&ev(0, started));
    view.apply(&ev(
        1,
        EventKind::TurnStarted {
            turn: 1,
            agent: "Ann".into(),
            group: Some("Teachers".into()),
            phase: Phase::Initial,
            round: None,
            role: Role::Agent,
            kind: TurnKind::Speak,
            dimension: None,
            pair: None,
        },
    ));
    view.apply(&ev(2, EventKind::Waiting { turn: 1, reason: "waiting for the local model (1 call(s) ahead)".into() }));
    assert_eq!(view.agent("Ann").unwrap().state, AgentState::Queued);
    assert!(view.waiting[&1].contains("local model"));
    view.apply(&ev(3, EventKind::TurnDelta { turn: 1, text: "Hi".into() }));
    assert_eq!(view.agent("Ann").unwrap().state, AgentState::Speaking);
    assert!(view.waiting.is_empty());
}

#[tokio::test]
async fn collab_eval_without_any_readable_evaluation_fails_with_the_turns_named() {
    let provider = scripted(|_, _| "It reads well; I have nothing to score.".into());
    let p = panel(Protocol::CollabEval, &[("Teachers", &["Ann", "Bea"])]);
    let (events, outcome) = Session::start(config(p, provider), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Failed);
    let error = outcome.error.expect("a reason");
    assert!(error.starts_with("no agent produced a readable evaluation: "), "{error}");
    assert!(error.contains("replies without scores; see turns 1–"), "{error}");
    assert_eq!(outcome.result, None, "an empty result is no result");
    let view = SessionView::from_events(&events);
    let group = view.group("Teachers").unwrap().aggregate.as_ref().unwrap();
    assert!(group.scores.is_empty());
    assert!(group.no_result.as_deref().is_some_and(|r| r.starts_with("no agent of Teachers")), "{group:?}");
    assert!(group.feedback.contains("no readable evaluation"), "{}", group.feedback);
    assert_eq!(view.aggregate.as_ref().unwrap().no_result.as_deref(), Some(error.as_str()));
}

#[tokio::test]
async fn a_group_without_a_result_is_left_out_of_the_panel_mean() {
    // The Parents never give scores; the Teachers do.
    let provider = scripted(|req, _| match speaker(req).as_str() {
        "Cal" | "Dee" => "A fine answer, I would say.".into(),
        _ => stubborn(req, 0),
    });
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"]), ("Parents", &["Cal", "Dee"])]);
    let (events, outcome) = Session::start(config(p, provider), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let view = SessionView::from_events(&events);
    let parents = view.group("Parents").unwrap().aggregate.as_ref().unwrap();
    assert!(parents.scores.is_empty() && parents.overall.is_none());
    assert!(parents.no_result.as_deref().is_some_and(|r| r.contains("no agent of Parents")), "{parents:?}");
    let panel = view.aggregate.as_ref().unwrap();
    assert_eq!(panel.no_result, None);
    assert_eq!(panel.left_out, ["Parents"]);
    assert_eq!(panel.scores["grammar"], 3.0, "the Teachers' mean alone");
}

/// CollabEval's round order for a seed, from a run without human commands.
async fn collab_round_one(seed: u64) -> Vec<String> {
    let p = panel(Protocol::CollabEval, &[("Evaluators", &["Ann", "Bea", "Cal"])]);
    let mut c = config(p, scripted(stubborn));
    c.seed = seed;
    let (events, _) = Session::start(c, None).finish().await;
    turn_agents(&events, Phase::Discussion)
}

fn rejected(events: &[moot::session::Event], command: &str) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CommandRejected { command: c, reason, .. } if c == command => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn collab_eval_a_veto_moves_the_next_speaker_behind_the_others() {
    let order = collab_round_one(11).await;
    let p = panel(Protocol::CollabEval, &[("Evaluators", &["Ann", "Bea", "Cal"])]);
    let mut c = config(p, scripted(stubborn));
    c.seed = 11;
    let s = Session::start(c, None);
    s.send(Command::VetoSpeaker { agent: order[0].clone(), author: author() });
    let (events, _) = s.finish().await;
    let expected = [order[1].clone(), order[2].clone(), order[0].clone()];
    assert_eq!(turn_agents(&events, Phase::Discussion), expected);
    let first_reason = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::SpeakerSelected { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .unwrap();
    assert!(first_reason.contains("vetoed by"), "{first_reason}");
    assert!(rejected(&events, "veto").is_empty());
}

#[tokio::test]
async fn collab_eval_refuses_a_veto_of_the_last_speaker_of_a_round() {
    let order = collab_round_one(11).await;
    let p = panel(Protocol::CollabEval, &[("Evaluators", &["Ann", "Bea", "Cal"])]);
    let mut c = config(p, scripted(stubborn));
    c.seed = 11;
    let s = Session::start(c, None);
    s.send(Command::VetoSpeaker { agent: order[2].clone(), author: author() });
    let (events, _) = s.finish().await;
    assert_eq!(turn_agents(&events, Phase::Discussion), order, "the order is unchanged");
    let reasons = rejected(&events, "veto");
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].contains("already the last"), "{reasons:?}");
}

#[tokio::test]
async fn collab_eval_refuses_a_pick_of_who_already_spoke_this_round() {
    let provider = std::sync::Arc::new(ScriptedProvider::new(stubborn).with_delay(Duration::from_millis(40)));
    let p = panel(Protocol::CollabEval, &[("Evaluators", &["Ann", "Bea", "Cal"])]);
    let mut s = Session::start(config(p, provider), None);
    let first = s.wait_for(|e| matches!(&e.kind, EventKind::TurnStarted { phase: Phase::Discussion, .. })).await;
    let EventKind::TurnStarted { agent, turn, .. } = first.kind else { unreachable!() };
    s.wait_for(|e| matches!(&e.kind, EventKind::TurnCompleted { turn: t, .. } if *t == turn)).await;
    s.send(Command::Pause { author: author() });
    s.send(Command::PickSpeaker { agent: agent.clone(), author: author() });
    s.send(Command::Resume { author: author() });
    let (events, _) = s.finish().await;
    let reasons = rejected(&events, "speaker");
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].contains(&agent) && reasons[0].contains("already spoken in round 1"), "{reasons:?}");
    assert_eq!(turn_agents(&events, Phase::Discussion).iter().filter(|a| **a == agent).count(), 1);
}

#[tokio::test]
async fn maj_eval_refuses_a_veto_that_cannot_apply() {
    let provider = scripted(stubborn);
    let mut p = panel(Protocol::MajEval, &[("Solo", &["Ann"])]);
    p.moderator.max_turns = 1;
    let s = Session::start(config(p, provider), None);
    s.send(Command::VetoSpeaker { agent: "Ann".into(), author: author() });
    let (events, _) = s.finish().await;
    assert_eq!(turn_agents(&events, Phase::Debate), ["Ann"]);
    let reasons = rejected(&events, "veto");
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].contains("only member"), "{reasons:?}");
}

#[tokio::test]
async fn an_item_with_candidates_and_no_content_fails_with_its_reason() {
    let mut c = config(
        panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]),
        scripted(|_, _| ScriptedReply::Text(evaluation(4, 4, 4))),
    );
    c.item.content = String::new();
    let (_, outcome) = Session::start(c, None).finish().await;
    assert_eq!(outcome.status, EndStatus::Failed);
    assert!(outcome.error.as_deref().is_some_and(|e| e.contains("no `content` to judge")), "{:?}", outcome.error);
}
