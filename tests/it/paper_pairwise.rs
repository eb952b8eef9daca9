//! MASA pairwise under its paper preset: the judges' instructions (baseline
//! or enhanced), their sampling (temperature 0, top_p 0.1, 612 reply tokens)
//! and their votes (three per order), against the scripted judge; the
//! panel-wide `[generation] top_p`; and the bundled paper panel.

use crate::support;

use moot::item::ItemsFile;
use moot::panel::{Panel, Protocol, ProtocolSection, SettingValue};
use moot::provider::ChatRequest;
use moot::session::EventKind;
use moot::session::event::{EndStatus, Phase};
use moot::testkit::scripted::ScriptedReply;
use support::*;

fn verdict(_: &ChatRequest, _: usize) -> ScriptedReply {
    ScriptedReply::Text(
        "Facts first: both hold. {\"verdict\": \"A\", \"confidence\": \"medium\", \"reasoning\": \"Closer.\"}".into(),
    )
}

fn text(req: &ChatRequest) -> String {
    req.messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n")
}

/// Runs `panel` on the bundled pair-01 (two candidates); returns the
/// comparison requests and the number of comparison turns.
async fn run(panel: Panel) -> (Vec<ChatRequest>, usize) {
    let provider = scripted(verdict);
    let mut c = config(panel, provider.clone());
    c.item = ItemsFile::bundled("pairwise-summaries").unwrap().get("pair-01").unwrap().clone();
    let (events, outcome) = Session::start(c, None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let turns =
        events.iter().filter(|e| matches!(&e.kind, EventKind::TurnStarted { phase: Phase::Comparison, .. })).count();
    (provider.requests(), turns)
}

fn pairwise(preset: ProtocolSection) -> Panel {
    let mut p = panel(Protocol::Pairwise, &[("Judges", &["Ann"])]);
    p.protocol = preset;
    p.generation.temperature = 0.4;
    p
}

#[tokio::test]
async fn the_paper_preset_judges_with_masas_prompt_sampling_and_votes() {
    let (requests, turns) = run(pairwise(ProtocolSection::paper(Protocol::Pairwise))).await;
    assert_eq!(turns, 6, "one pair, two orders, three votes each");
    for r in &requests {
        assert_eq!(r.temperature, Some(0.0));
        assert_eq!(r.top_p, Some(0.1));
        assert_eq!(r.max_tokens, 612);
        let t = text(r);
        assert!(t.contains("1. Facts first") && t.contains("How sure you are"), "{t}");
        assert!(t.contains("To check:"), "operational definitions: {t}");
    }
}

#[tokio::test]
async fn the_moot_preset_keeps_the_panels_sampling_one_vote_and_the_baseline_prompt() {
    let (requests, turns) = run(pairwise(ProtocolSection::new(Protocol::Pairwise))).await;
    assert_eq!(turns, 2);
    for r in &requests {
        assert_eq!(r.temperature, Some(0.4));
        assert_eq!(r.top_p, None);
        assert_eq!(r.max_tokens, 256);
        assert!(!text(r).contains("Facts first"));
    }
}

#[tokio::test]
async fn a_setting_the_panel_gives_wins_over_the_paper_preset() {
    let mut p = pairwise(ProtocolSection::paper(Protocol::Pairwise));
    p.protocol.settings.insert("prompt".into(), SettingValue::Text("baseline".into()));
    p.protocol.settings.insert("votes".into(), SettingValue::Integer(1));
    let departures: Vec<String> = p.departures().into_iter().map(|d| d.setting).collect();
    assert_eq!(departures, ["votes", "prompt"]);
    let (requests, turns) = run(p).await;
    assert_eq!(turns, 2);
    assert!(requests.iter().all(|r| !text(r).contains("Facts first") && r.top_p == Some(0.1)));
}

#[tokio::test]
async fn the_panels_top_p_reaches_every_request() {
    let mut p = pairwise(ProtocolSection::new(Protocol::Pairwise));
    p.generation.top_p = Some(0.5);
    let (requests, _) = run(p).await;
    assert!(!requests.is_empty());
    assert!(requests.iter().all(|r| r.top_p == Some(0.5)));
}

#[test]
fn generation_top_p_is_read_and_checked() {
    let panel = |top_p: &str| {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/panels/pairwise-summaries.toml"),
        )
        .unwrap()
        .replace("[generation]\n", &format!("[generation]\ntop_p = {top_p}\n"));
        Panel::from_toml_str(&text, "test.toml")
    };
    assert_eq!(panel("0.1").expect("valid").generation.top_p, Some(0.1));
    for bad in ["0", "1.5", "-0.2"] {
        let e = panel(bad).expect_err(bad).to_string();
        assert!(e.contains("top_p"), "{e}");
    }
}

#[test]
fn the_bundled_paper_panel_runs_the_preset_without_departures() {
    let p = Panel::resolve("pairwise-summaries-paper").expect("bundled");
    assert_eq!(p.protocol.preset, moot::panel::Preset::Paper);
    assert!(p.departures().is_empty(), "{:?}", p.departures());
    assert!(p.protocol.is("prompt", "enhanced") && p.protocol.is("sampling", "paper"));
    assert_eq!(p.protocol.integer("votes"), 3);
    // Three votes at temperature 0: the warning says they may be copies.
    assert!(p.warnings().iter().any(|w| w.contains("temperature 0")), "{:?}", p.warnings());
    assert!(ItemsFile::bundled("pairwise-summaries-paper").is_some());
}
