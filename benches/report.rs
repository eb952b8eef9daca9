//! `moot report` over many session logs: reading, joining and statistics.
//!
//! The logs are generated once into a temporary folder: the bundled
//! storybook panel (6 agents in 3 groups), phase-1 evaluations, two debate
//! turns per group, final evaluations, aggregates and streamed text, about
//! as a real MAJ-EVAL session writes them. Every agent's score is the human
//! rating of the item plus pseudo-random noise of −1, 0 or +1 (clamped to
//! 1–5), so group and panel means take many distinct values, as in real runs.
//!
//! A second folder holds as many pairwise sessions: the bundled
//! pairwise-summaries panel (two judges), three candidates compared in two
//! pairs, both orders, a verdict per order and judge, each judge's and the
//! panel's decisions, two people's labels; one judge always says A on a
//! tenth of the items (flips), and a reply that cannot be read on another
//! tenth (no result).
//!
//! Size: MOOT_BENCH_LOGS (default 10000). MOOT_BENCH_BOOTSTRAP (default
//! 10000, the default of `moot report`) sets the resamples of the second
//! measurement. Time and peak memory of one report (a child process reading
//! the same folder), without intervals and with them, are printed as
//! `one report …, peak RSS`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::Utc;
use criterion::{Criterion, criterion_group};
use moot::panel::Panel;
use moot::report::{ReportOptions, build_report, collect_logs, load_records};
use moot::session::SessionWriter;
use moot::session::event::{
    AgentInfo, EndStatus, Evaluation, Event, EventKind, Phase, Role, Scores, TurnKind, Usage, UsageTotals,
};

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// splitmix64: a well-mixed pseudo-random number from a counter.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The human rating of dimension `i` of item `index` (1–5).
fn human_rating(index: u64, i: usize) -> f64 {
    (1 + (index + i as u64) % 5) as f64
}

/// An evaluation of item `index`: the human rating of each dimension plus
/// noise of −1, 0 or +1 drawn from `seed`, clamped to 1–5.
fn evaluation(keys: &[String], index: u64, seed: u64) -> Evaluation {
    let mut scores = Scores::new();
    let mut sum = 0.0;
    for (i, k) in keys.iter().enumerate() {
        let noise = (mix(seed.wrapping_mul(1_000_003).wrapping_add(i as u64)) % 3) as f64 - 1.0;
        let v = (human_rating(index, i) + noise).clamp(1.0, 5.0);
        sum += v;
        scores.insert(k.clone(), v);
    }
    Evaluation {
        scores,
        overall: Some((sum / keys.len().max(1) as f64).round()),
        confidence: Some(0.7),
        justification: "The answer follows the story and the wording suits a young child, with one small slip.".into(),
        done: false,
        label: None,
        ..Default::default()
    }
}

fn write_log(path: &Path, panel: &Panel, index: u64) {
    let keys = panel.dimension_keys();
    let mut w = SessionWriter::create(path).unwrap();
    let mut seq = 0;
    let mut emit = |w: &mut SessionWriter, kind: EventKind| {
        w.write(&Event { seq, t: Utc::now(), kind }).unwrap();
        seq += 1;
    };
    let item = moot::item::Item {
        id: format!("item-{index:06}"),
        content: "Question: Why did Mila carry Pebble back to the wall?\nAnswer: So Pebble could find its family."
            .into(),
        context: Some("Mila found a tiny snail on the garden wall after the rain.".into()),
        reference: None,
        human: Some(keys.iter().enumerate().map(|(i, k)| (k.clone(), human_rating(index, i))).collect()),
        human_raters: Default::default(),
        candidates: None,
        human_labels: Vec::new(),
    };
    let agents: Vec<AgentInfo> = panel
        .agents()
        .map(|(g, a)| AgentInfo {
            name: a.name.clone(),
            group: g.name.clone(),
            role: a.role.clone(),
            provider: "openai".into(),
            model: "m".into(),
        })
        .collect();
    emit(
        &mut w,
        EventKind::SessionStarted {
            schema_version: moot::session::event::SCHEMA_VERSION,
            session_id: format!("s-{index}"),
            protocol: "maj-eval".into(),
            panel: panel.to_json(),
            item,
            agents: agents.clone(),
            roles: Default::default(),
            seed: 7,
            moot_version: "0.1.0".into(),
            provider_note: None,
            preset: Default::default(),
            departures: Vec::new(),
        },
    );
    let text = "I read the passage twice. The question is clear and the answer is supported by the story; \
                the wording is simple enough for a five-year-old. ```json {\"grammar\": 4} ```";
    let mut turn = 0;
    let mut totals = UsageTotals::default();
    let mut speak =
        |w: &mut SessionWriter, emit: &mut dyn FnMut(&mut SessionWriter, EventKind), a: &AgentInfo, phase: Phase| {
            turn += 1;
            emit(
                w,
                EventKind::TurnStarted {
                    turn,
                    agent: a.name.clone(),
                    group: Some(a.group.clone()),
                    phase,
                    round: None,
                    role: Role::Agent,
                    kind: TurnKind::Speak,
                    dimension: None,
                    pair: None,
                },
            );
            for chunk in text.as_bytes().chunks(40).take(6) {
                emit(w, EventKind::TurnDelta { turn, text: String::from_utf8_lossy(chunk).into_owned() });
            }
            let usage = Usage { input_tokens: 900, output_tokens: 120, ..Default::default() };
            totals.record(Role::Agent, TurnKind::Speak, &a.name, &usage);
            emit(
                w,
                EventKind::TurnCompleted {
                    turn,
                    agent: a.name.clone(),
                    text: text.into(),
                    evaluation: Some(evaluation(&keys, index, index * 100 + turn)),
                    parse_error: None,
                    usage,
                    latency_ms: 900,
                    cached: false,
                    done: false,
                    truncated: false,
                    repeats: None,
                    misquotes: Vec::new(),
                    misstates: Vec::new(),
                    endpoint: None,
                },
            );
        };
    emit(&mut w, EventKind::PhaseStarted { phase: Phase::Initial, group: None, round: None });
    for a in &agents {
        speak(&mut w, &mut emit, a, Phase::Initial);
    }
    for g in &panel.groups {
        emit(&mut w, EventKind::PhaseStarted { phase: Phase::Debate, group: Some(g.name.clone()), round: None });
        let members: Vec<&AgentInfo> = agents.iter().filter(|a| a.group == g.name).collect();
        for a in members.iter().cycle().take(2) {
            speak(&mut w, &mut emit, a, Phase::Debate);
        }
        emit(
            &mut w,
            EventKind::FinalEvaluations {
                group: g.name.clone(),
                evaluations: members
                    .iter()
                    .enumerate()
                    .map(|(m, a)| (a.name.clone(), evaluation(&keys, index, index * 100 + 50 + m as u64)))
                    .collect(),
                turns: Default::default(),
            },
        );
    }
    for g in panel.groups.iter().map(|g| Some(g.name.clone())).chain([None]) {
        let ev = evaluation(&keys, index, index * 100 + 90);
        emit(
            &mut w,
            EventKind::AggregationCompleted {
                group: g,
                feedback: String::new(),
                scores: ev.scores,
                overall: ev.overall,
                original: Scores::new(),
                method: Some("mean".into()),
                no_result: None,
                left_out: Vec::new(),
                labels: Default::default(),
                original_labels: Default::default(),
                ranking: Vec::new(),
            },
        );
    }
    emit(
        &mut w,
        EventKind::SessionEnded {
            status: EndStatus::Completed,
            error: None,
            reason: None,
            usage: totals,
            duration_ms: 31_000,
        },
    );
}

fn write_pairwise_log(path: &Path, panel: &Panel, index: u64) {
    use moot::session::pairwise::{Flip, Label};
    let mut w = SessionWriter::create(path).unwrap();
    let mut seq = 0;
    let mut emit = |kind: EventKind| {
        w.write(&Event { seq, t: Utc::now(), kind }).unwrap();
        seq += 1;
    };
    let ids = ["sys-lead", "sys-para", "sys-short"];
    let labels = [["A", "sys-lead"], ["tie", "B"], ["sys-para", "A"]][(index % 3) as usize];
    let item = moot::item::Item {
        id: format!("pair-{index:06}"),
        content: String::new(),
        context: Some("The town council voted 7 to 2 on Tuesday to close the Elm Street library branch.".into()),
        reference: None,
        human: None,
        human_raters: Default::default(),
        candidates: Some(
            ids.iter()
                .map(|id| moot::item::Candidate { id: (*id).into(), text: format!("Summary by {id} of the vote.") })
                .collect(),
        ),
        human_labels: labels.iter().map(|s| s.to_string()).collect(),
    };
    let agents: Vec<AgentInfo> = panel
        .agents()
        .map(|(g, a)| AgentInfo {
            name: a.name.clone(),
            group: g.name.clone(),
            role: a.role.clone(),
            provider: "openai".into(),
            model: "m".into(),
        })
        .collect();
    emit(EventKind::SessionStarted {
        schema_version: moot::session::event::SCHEMA_VERSION,
        session_id: format!("p-{index}"),
        protocol: "pairwise".into(),
        panel: panel.to_json(),
        item,
        agents: agents.clone(),
        roles: Default::default(),
        seed: 7,
        moot_version: "0.1.0".into(),
        provider_note: None,
        preset: Default::default(),
        departures: Vec::new(),
    });
    emit(EventKind::PhaseStarted { phase: Phase::Comparison, group: None, round: None });
    let r = mix(index);
    let mut turn = 0;
    let mut totals = UsageTotals::default();
    for (second, pair) in [("sys-para", 0u64), ("sys-short", 1)] {
        for (j, a) in agents.iter().enumerate() {
            let biased = j == 1 && r.is_multiple_of(10);
            let broken = j == 0 && pair == 0 && r % 10 == 1;
            let mut orders = [None, None];
            for swapped in [false, true] {
                turn += 1;
                let pair_ref =
                    moot::session::pairwise::PairRef { first: "sys-lead".into(), second: second.into(), swapped };
                emit(EventKind::TurnStarted {
                    turn,
                    agent: a.name.clone(),
                    group: Some(a.group.clone()),
                    phase: Phase::Comparison,
                    round: Some(1),
                    role: Role::Agent,
                    kind: TurnKind::Speak,
                    dimension: None,
                    pair: Some(pair_ref),
                });
                let label = if biased {
                    Label::A
                } else if (r >> 8).is_multiple_of(4) {
                    Label::Tie
                } else if swapped {
                    Label::B
                } else {
                    Label::A
                };
                let text = format!("The first keeps the vote count. {{\"verdict\": \"{}\"}}", label.as_str());
                for chunk in text.as_bytes().chunks(24) {
                    emit(EventKind::TurnDelta { turn, text: String::from_utf8_lossy(chunk).into_owned() });
                }
                let usage = Usage { input_tokens: 700, output_tokens: 60, ..Default::default() };
                totals.record(Role::Agent, TurnKind::Speak, &a.name, &usage);
                emit(EventKind::TurnCompleted {
                    turn,
                    agent: a.name.clone(),
                    text: text.clone(),
                    evaluation: None,
                    parse_error: broken.then(|| "no verdict".to_string()),
                    usage,
                    latency_ms: 700,
                    cached: false,
                    done: false,
                    truncated: false,
                    repeats: None,
                    misquotes: Vec::new(),
                    misstates: Vec::new(),
                    endpoint: None,
                });
                if !broken {
                    orders[usize::from(swapped)] = Some(label);
                    emit(EventKind::PairVerdict {
                        turn,
                        judge: a.name.clone(),
                        first: "sys-lead".into(),
                        second: second.into(),
                        swapped,
                        vote: 1,
                        label,
                        criteria: Default::default(),
                        confidence: None,
                        reasoning: "The first keeps the vote count.".into(),
                    });
                }
            }
            let (winner, flip) = match (orders[0], orders[1]) {
                (Some(Label::A), Some(Label::B)) => (Some("sys-lead".to_string()), Flip::None),
                (Some(Label::Tie), Some(Label::Tie)) => (None, Flip::None),
                _ => (None, Flip::Opposite),
            };
            emit(EventKind::PairDecided {
                judge: Some(a.name.clone()),
                first: "sys-lead".into(),
                second: second.into(),
                first_order: orders[0],
                swapped_order: orders[1],
                winner: if broken { None } else { winner.clone() },
                flip: (!broken).then_some(flip),
                no_result: broken.then(|| format!("{} gave no readable verdict", a.name)),
            });
        }
        let winner = (!(r >> 8).is_multiple_of(4) && r % 10 > 1).then(|| "sys-lead".to_string());
        emit(EventKind::PairDecided {
            judge: None,
            first: "sys-lead".into(),
            second: second.into(),
            first_order: None,
            swapped_order: None,
            winner,
            flip: None,
            no_result: None,
        });
    }
    emit(EventKind::SessionEnded {
        status: EndStatus::Completed,
        error: None,
        reason: None,
        usage: totals,
        duration_ms: 9_000,
    });
}

fn generate_pairwise(dir: &Path, n: u64) {
    let panel = Panel::bundled("pairwise-summaries").unwrap();
    for i in 0..n {
        write_pairwise_log(&dir.join(format!("pair-{i:06}.jsonl")), &panel, i);
    }
}

fn generate(dir: &Path, n: u64) {
    let panel = Panel::bundled("storybook-qa").unwrap();
    for i in 0..n {
        write_log(&dir.join(format!("item-{i:06}.jsonl")), &panel, i);
    }
}

fn run_report(dir: &Path, bootstrap: usize) -> usize {
    let files = collect_logs(&[dir.to_path_buf()]).unwrap();
    let loaded = load_records(&files, ReportOptions::default().threads);
    let opts = ReportOptions { bootstrap, ..ReportOptions::default() };
    let report = build_report(loaded.records, None, &opts);
    let mut sink = std::io::sink();
    moot::report::format::write_json(&report, &mut sink).unwrap();
    report.rows.len()
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn bench(c: &mut Criterion) {
    let n = env_num("MOOT_BENCH_LOGS", 10_000);
    let bootstrap = env_num("MOOT_BENCH_BOOTSTRAP", ReportOptions::default().bootstrap as u64) as usize;
    let tmp = tempfile::tempdir().unwrap();
    let dir: PathBuf = tmp.path().join("logs");
    std::fs::create_dir_all(&dir).unwrap();
    let started = std::time::Instant::now();
    generate(&dir, n);
    let bytes: u64 =
        std::fs::read_dir(&dir).unwrap().flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum();
    eprintln!("generated {n} logs ({:.0} MB) in {:.1} s", bytes as f64 / 1e6, started.elapsed().as_secs_f64());

    // Time and peak memory of one report, each measured in a fresh process.
    if let Ok(exe) = std::env::current_exe() {
        for resamples in [0, bootstrap] {
            let out = std::process::Command::new(&exe)
                .env("MOOT_BENCH_REPORT_CHILD", &dir)
                .env("MOOT_BENCH_CHILD_BOOTSTRAP", resamples.to_string())
                .output();
            if let Ok(out) = out {
                eprint!("{}", String::from_utf8_lossy(&out.stderr));
            }
        }
    }

    let pairs: PathBuf = tmp.path().join("pairwise");
    std::fs::create_dir_all(&pairs).unwrap();
    let started = std::time::Instant::now();
    generate_pairwise(&pairs, n);
    let bytes: u64 =
        std::fs::read_dir(&pairs).unwrap().flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum();
    eprintln!("generated {n} pairwise logs ({:.0} MB) in {:.1} s", bytes as f64 / 1e6, started.elapsed().as_secs_f64());
    if let Ok(exe) = std::env::current_exe() {
        let out = std::process::Command::new(&exe)
            .env("MOOT_BENCH_REPORT_CHILD", &pairs)
            .env("MOOT_BENCH_CHILD_BOOTSTRAP", bootstrap.to_string())
            .output();
        if let Ok(out) = out {
            eprint!("pairwise: {}", String::from_utf8_lossy(&out.stderr));
        }
    }

    let mut group = c.benchmark_group("report");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.bench_function(format!("{n}_logs_no_bootstrap"), |b| b.iter(|| run_report(&dir, 0)));
    group.bench_function(format!("{n}_logs_bootstrap_{bootstrap}"), |b| b.iter(|| run_report(&dir, bootstrap)));
    group.bench_function(format!("{n}_pairwise_logs_bootstrap_{bootstrap}"), |b| {
        b.iter(|| run_report(&pairs, bootstrap))
    });
    group.finish();
}

criterion_group!(benches, bench);

fn main() {
    if let Some(dir) = std::env::var_os("MOOT_BENCH_REPORT_CHILD") {
        let resamples = env_num("MOOT_BENCH_CHILD_BOOTSTRAP", 0) as usize;
        let started = std::time::Instant::now();
        let rows = run_report(Path::new(&dir), resamples);
        let _ = writeln!(
            std::io::stderr(),
            "one report (bootstrap {resamples}, {} threads): {rows} rows in {:.2} s, peak RSS {} MiB",
            ReportOptions::default().threads,
            started.elapsed().as_secs_f64(),
            peak_rss_kib().map(|k| (k / 1024).to_string()).unwrap_or_else(|| "unknown".into())
        );
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
