//! Exporting a 5,000-turn session as an HTML page (target: under 1 s), and
//! opening that page in a browser (target: under 2 s).
//!
//! The session is synthetic, written through the session writer: the
//! bundled storybook panel with 12 agents in 3 groups, 5,000 debate turns
//! with scores and a 690-character speech each (long enough to fold), a
//! moderator's pick before every turn, a consensus check every 12 turns, a
//! person's comment every 500, the groups' and the panel's results.
//!
//! Criterion measures the export as `moot sessions export --format html`
//! does it (read the log, fold it, write the page) and the page alone.
//! Then, when a headless Chromium is on PATH, the page is opened three
//! times: the time from navigation to the page's `load` event, read from
//! the page (`performance.now()` in a load handler), and the wall time of
//! the whole headless run beside that of an empty page (browser start-up).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use chrono::{Duration, TimeZone, Utc};
use criterion::{Criterion, criterion_group};
use moot::report::html::session_page;
use moot::session::event::{
    AgentInfo, EndStatus, Evaluation, Event, EventKind, Phase, Role, SelectedBy, TurnKind, Usage, UsageTotals,
};
use moot::session::{SessionView, SessionWriter, read_log};

const AGENTS: usize = 12;
const TURNS: u64 = 5_000;

fn write_session(path: &Path) {
    let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().expect("valid time");
    let mut w = SessionWriter::create(path).expect("log file");
    let mut seq = 0;
    let mut emit = |kind: EventKind| {
        w.write(&Event { seq, t: t0 + Duration::milliseconds(seq as i64 * 10), kind }).expect("write");
        seq += 1;
    };
    let panel = moot::panel::Panel::bundled("storybook-qa").expect("bundled panel");
    let groups = ["Teachers", "Parents", "Researchers"];
    let infos: Vec<AgentInfo> = (0..AGENTS)
        .map(|i| AgentInfo {
            name: format!("Agent {i}"),
            group: groups[i % 3].into(),
            role: "reader".into(),
            provider: "bench".into(),
            model: "m".into(),
        })
        .collect();
    emit(EventKind::SessionStarted {
        schema_version: moot::session::event::SCHEMA_VERSION,
        session_id: "bench-html".into(),
        protocol: "maj-eval".into(),
        panel: panel.to_json(),
        item: moot::item::Item::new("b", "Why was the fox afraid? — Because of the storm."),
        agents: infos.clone(),
        roles: BTreeMap::new(),
        seed: 1,
        moot_version: "bench".into(),
        provider_note: None,
        preset: Default::default(),
        departures: Vec::new(),
    });
    emit(EventKind::PhaseStarted { phase: Phase::Debate, group: None, round: Some(1) });
    let text = "The answer names the storm but not why the fox was afraid, which is what the question asks; \
                a young reader would need the link spelled out. "
        .repeat(5);
    let keys = panel.dimension_keys();
    for turn in 0..TURNS {
        let a = &infos[(turn as usize) % AGENTS];
        let group = a.group.clone();
        emit(EventKind::SpeakerSelected {
            group: group.clone(),
            agent: a.name.clone(),
            by: SelectedBy::Moderator,
            reason: format!("{} has not answered the last point", a.name),
            raw: None,
            fallback: None,
            reason_replaced: None,
        });
        emit(EventKind::TurnStarted {
            turn,
            agent: a.name.clone(),
            group: Some(group.clone()),
            phase: Phase::Debate,
            round: Some(1),
            role: Role::Agent,
            kind: TurnKind::Speak,
            dimension: None,
            pair: None,
        });
        let mut ev = Evaluation { overall: Some(3.0 + (turn % 3) as f64), confidence: Some(0.7), ..Default::default() };
        for (i, k) in keys.iter().enumerate() {
            ev.scores.insert(k.clone(), 1.0 + ((turn + i as u64) % 5) as f64);
        }
        emit(EventKind::TurnCompleted {
            turn,
            agent: a.name.clone(),
            text: text.clone(),
            evaluation: Some(ev.clone()),
            parse_error: None,
            usage: Usage { input_tokens: 900, output_tokens: 160, ..Default::default() },
            latency_ms: 1200,
            cached: false,
            done: false,
            truncated: false,
            repeats: None,
            misquotes: Vec::new(),
            misstates: Vec::new(),
            endpoint: None,
        });
        if turn % 12 == 11 {
            let scores = infos.iter().filter(|i| i.group == group).map(|i| (i.name.clone(), ev.scores.clone()));
            emit(EventKind::ConsensusChecked {
                group: Some(group.clone()),
                round: Some(1),
                scores: scores.collect(),
                spread: keys.iter().map(|k| (k.clone(), 2.0)).collect(),
                reached: false,
                rule: "range ≤ 1".into(),
                labels: BTreeMap::new(),
            });
        }
        if turn % 500 == 499 {
            emit(EventKind::HumanComment { text: "Keep to the question.".into(), author: "lead".into(), group: None });
        }
    }
    let scores: BTreeMap<String, f64> = keys.iter().map(|k| (k.clone(), 3.5)).collect();
    for g in groups.iter().map(|g| Some(g.to_string())).chain([None]) {
        emit(EventKind::AggregationCompleted {
            group: g,
            feedback: "The groups split on relevance.".into(),
            scores: scores.clone(),
            overall: Some(3.5),
            method: None,
            no_result: None,
            left_out: Vec::new(),
            labels: BTreeMap::new(),
            ranking: Vec::new(),
            original: BTreeMap::new(),
            original_labels: BTreeMap::new(),
        });
    }
    emit(EventKind::SessionEnded {
        status: EndStatus::Completed,
        error: None,
        reason: None,
        usage: UsageTotals::default(),
        duration_ms: 6_000_000,
    });
}

fn export(path: &Path) -> String {
    let log = read_log(path).expect("read");
    session_page(&SessionView::from_events(&log.events))
}

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("moot-bench-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let log = dir.join("session.jsonl");
    write_session(&log);
    let events = read_log(&log).expect("read").events;
    let page = export(&log);
    println!(
        "session: {} events, log {:.1} MB, page {:.1} MB",
        events.len(),
        std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0) as f64 / 1e6,
        page.len() as f64 / 1e6
    );
    let mut g = c.benchmark_group("html");
    g.sample_size(10);
    g.bench_function("export_5000_turns_read_fold_render", |b| b.iter(|| export(&log)));
    let view = SessionView::from_events(&events);
    g.bench_function("page_5000_turns_render_only", |b| b.iter(|| session_page(&view)));
    g.finish();
    open_in_browser(&dir, &page);
    let _ = std::fs::remove_dir_all(&dir);
}

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

/// The page's DOM after a headless load, and the wall time of the run.
fn dump(browser: &Path, page: &Path, profile: &Path) -> (String, f64) {
    let start = Instant::now();
    let o = Command::new(browser)
        .args(["--headless=new", "--dump-dom", "--disable-gpu", "--no-sandbox", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("browser runs");
    (String::from_utf8_lossy(&o.stdout).into_owned(), start.elapsed().as_secs_f64())
}

fn open_in_browser(dir: &Path, page: &str) {
    let Some(browser) = chromium() else {
        println!("browser: skipped, no headless Chromium (apt-get install chromium)");
        return;
    };
    // The page with one more script under its own nonce: the time of its load event.
    let nonce = page.split("<script nonce=\"").nth(1).and_then(|s| s.split('"').next()).expect("nonce");
    let timed = page.replace(
        "</body>",
        &format!(
            "<script nonce=\"{nonce}\">addEventListener('load', () => {{ document.documentElement.dataset.loadMs = performance.now().toFixed(0); }});</script></body>"
        ),
    );
    let timed_path = dir.join("timed.html");
    std::fs::write(&timed_path, timed).expect("write page");
    let empty = dir.join("empty.html");
    std::fs::write(&empty, "<!DOCTYPE html><title>empty</title>").expect("write page");
    let profile = dir.join("profile");
    dump(&browser, &empty, &profile); // first start-up fills the profile
    for run in 1..=3 {
        let (dom, wall) = dump(&browser, &timed_path, &profile);
        let load = dom.split("data-load-ms=\"").nth(1).and_then(|s| s.split('"').next()).unwrap_or("?");
        let (_, empty_wall) = dump(&browser, &empty, &profile);
        println!(
            "browser run {run}: load event at {load} ms; headless run {wall:.2} s (an empty page: {empty_wall:.2} s)"
        );
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
