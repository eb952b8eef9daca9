//! The report's joining and staging, end to end, on fixture session logs:
//! every number is compared with values computed by scipy, scikit-learn and
//! the krippendorff package (tests/fixtures/report/make_fixtures.py).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use moot::report::format::{self, CSV_COLUMNS};
use moot::report::{Report, ReportOptions, build_report, collect_logs, load_human_file, load_records};
use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report")
}

fn expected() -> Value {
    let text = std::fs::read_to_string(fixtures().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn report(bootstrap: usize, seed: u64) -> Report {
    report_on(bootstrap, seed, ReportOptions::default().threads)
}

fn report_on(bootstrap: usize, seed: u64, threads: usize) -> Report {
    let files = collect_logs(&[fixtures().join("run-a"), fixtures().join("run-b")]).unwrap();
    let loaded = load_records(&files, 2);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    let human = load_human_file(&fixtures().join("ratings.csv")).unwrap();
    assert!(human.problems.is_empty(), "{:?}", human.problems);
    let opts = ReportOptions { bootstrap, seed, threads, ..ReportOptions::default() };
    build_report(loaded.records, Some(&human), &opts)
}

/// Dimension, group, agent, stage and metric of a row.
type Key = (Option<String>, Option<String>, Option<String>, Option<String>, String);

fn key_of(dimension: &Value, group: &Value, agent: &Value, stage: &Value, metric: &str) -> Key {
    let s = |v: &Value| v.as_str().map(str::to_string);
    (s(dimension), s(group), s(agent), s(stage), metric.to_string())
}

/// The key of an expected row (rows without `agent` are group or panel rows).
fn expected_key(e: &Value) -> Key {
    key_of(
        &e["dimension"],
        &e["group"],
        e.get("agent").unwrap_or(&Value::Null),
        &e["stage"],
        e["metric"].as_str().unwrap(),
    )
}

#[test]
fn every_statistic_matches_the_reference() {
    let report = report(0, 0);
    let rows: BTreeMap<Key, &moot::report::Row> = report
        .rows
        .iter()
        .map(|r| {
            let stage = r.stage.map(|s| Value::String(s.as_str().into())).unwrap_or(Value::Null);
            let dim = r.dimension.clone().map(Value::String).unwrap_or(Value::Null);
            let group = r.group.clone().map(Value::String).unwrap_or(Value::Null);
            let agent = r.agent.clone().map(Value::String).unwrap_or(Value::Null);
            (key_of(&dim, &group, &agent, &stage, &r.metric), r)
        })
        .collect();
    assert_eq!(rows.len(), report.rows.len(), "row keys are unique");
    let exp = expected();
    let mut checked = 0;
    let mut metrics_checked = std::collections::BTreeSet::new();
    for e in exp["rows"].as_array().unwrap() {
        let metric = e["metric"].as_str().unwrap();
        let key = expected_key(e);
        let row = rows.get(&key).unwrap_or_else(|| panic!("no row for {key:?}"));
        let what = format!("{key:?}");
        assert_eq!(row.n, e["n"].as_u64().map(|n| n as usize), "n of {what}");
        if let Some(d) = e["dropped"].as_u64() {
            assert_eq!(row.dropped, Some(d as usize), "dropped of {what}");
        }
        match (e["value"].as_f64(), e["undefined"].as_str()) {
            (Some(v), _) => {
                let got =
                    row.value.unwrap_or_else(|| panic!("{what}: undefined ({:?}), expected {v}", row.undefined_reason));
                assert!((got - v).abs() < 1e-9, "{what}: {got} vs {v}");
                assert!(row.undefined_reason.is_none());
            }
            (None, reason) => {
                assert_eq!(row.value, None, "{what} should be undefined");
                let got = row.undefined_reason.as_deref().unwrap_or_else(|| panic!("{what}: no reason"));
                // The krippendorff package gives no reason; the others must match.
                if let Some(r) = reason.filter(|r| *r != "undefined") {
                    assert_eq!(got, r, "reason of {what}");
                }
            }
        }
        checked += 1;
        metrics_checked.insert(metric.to_string());
    }
    // Every agreement row the report has is covered by the reference.
    for (key, _) in rows.iter().filter(|(k, _)| metrics_checked.contains(&k.4) && k.0.is_some()) {
        assert!(
            exp["rows"].as_array().unwrap().iter().any(|e| expected_key(e) == *key),
            "row {key:?} has no reference value"
        );
    }
    // Each agent's own rows are among those checked.
    let agent_rows = report.rows.iter().filter(|r| r.agent.is_some()).count();
    assert!(agent_rows > 0);
    assert!(report.rows.iter().filter(|r| r.agent.is_some()).all(
        |r| r.group.is_some() && matches!(r.stage, Some(moot::report::Stage::Initial | moot::report::Stage::Final))
    ));
    assert!(checked > 500, "{checked}");
    for m in [
        "pearson",
        "kendall_tau_b",
        "krippendorff_alpha_ordinal",
        "cohen_kappa_quadratic",
        "gap_ratio_2",
        "tie_confusion_winner_as_tie",
    ] {
        assert!(metrics_checked.contains(m), "{m} not checked");
    }
}

#[test]
fn sessions_duplicates_and_human_sources() {
    let report = report(0, 0);
    let exp = expected();
    assert_eq!(report.panels.len(), 1);
    let p = &report.panels[0];
    assert_eq!(p.name, exp["panel"]);
    assert_eq!(p.sessions as u64, exp["items"].as_u64().unwrap());
    assert_eq!(p.duplicates as u64, exp["duplicates"].as_u64().unwrap());
    for (status, n) in exp["logs"].as_object().unwrap() {
        assert_eq!(p.logs.get(status).copied().unwrap_or(0) as u64, n.as_u64().unwrap(), "{status} logs");
    }
    for (key, sources) in exp["human_sources"].as_object().unwrap() {
        let row =
            report.rows.iter().find(|r| r.metric == "human_ratings" && r.dimension.as_deref() == Some(key)).unwrap();
        let got = row.sources.as_ref().unwrap();
        let want: BTreeMap<String, usize> =
            sources.as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_u64().unwrap() as usize)).collect();
        assert_eq!(got, &want, "sources of {key}");
        assert_eq!(row.value, Some(want.values().sum::<usize>() as f64));
    }
    assert!(report.notes.iter().any(|n| n.contains("1 rated ids match no session")), "{:?}", report.notes);
}

#[test]
fn intervals_are_seeded_and_bracket_the_estimate() {
    let a = report(500, 11);
    let b = report(500, 11);
    assert_eq!(a.rows, b.rows, "the same seed gives the same intervals");
    let c = report(500, 12);
    assert_ne!(a.rows, c.rows, "another seed gives other intervals");
    let with_ci: Vec<_> = a.rows.iter().filter(|r| r.metric == "pearson" && r.value.is_some()).collect();
    assert!(!with_ci.is_empty());
    for r in with_ci {
        let (lo, hi, v) = (r.ci_low.unwrap(), r.ci_high.unwrap(), r.value.unwrap());
        assert!(lo <= hi && lo - 0.2 <= v && v <= hi + 0.2, "{r:?}");
    }
    // Undefined rows never get an interval.
    assert!(a.rows.iter().filter(|r| r.value.is_none()).all(|r| r.ci_low.is_none() && r.ci_high.is_none()));
}

#[test]
fn intervals_do_not_depend_on_the_number_of_threads() {
    let one = report_on(300, 5, 1);
    for threads in [2, 3, 8] {
        assert_eq!(one.rows, report_on(300, 5, threads).rows, "{threads} threads");
    }
}

#[test]
fn agreement_and_agent_rows_carry_intervals() {
    let report = report(400, 3);
    for metric in ["accuracy", "cohen_kappa", "cohen_kappa_quadratic", "agreement_rate", "win_rate", "kendall_tau_b"] {
        let defined: Vec<_> = report.rows.iter().filter(|r| r.metric == metric && r.value.is_some()).collect();
        assert!(!defined.is_empty(), "{metric}");
        for r in defined {
            let (lo, hi, v) = (r.ci_low.unwrap(), r.ci_high.unwrap(), r.value.unwrap());
            assert!(lo <= hi && lo - 0.25 <= v && v <= hi + 0.25, "{r:?}");
            if metric == "accuracy" || metric == "agreement_rate" || metric == "win_rate" {
                assert!((0.0..=1.0).contains(&lo) && (0.0..=1.0).contains(&hi), "{r:?}");
            }
        }
    }
    // Ratios among misses keep no interval.
    assert!(report.rows.iter().filter(|r| r.metric == "gap_ratio_1").all(|r| r.ci_low.is_none()));
    let agent_rows: Vec<_> = report.rows.iter().filter(|r| r.agent.is_some()).collect();
    assert!(agent_rows.iter().any(|r| r.ci_low.is_some()));
    // An agent's own rows: correlations, and the integer scale's statistics.
    assert!(agent_rows.iter().any(|r| r.metric == "accuracy" && r.ci_low.is_some()));
    assert!(agent_rows.iter().all(|r| {
        ["pearson", "spearman", "kendall_tau_b", "accuracy", "cohen_kappa", "cohen_kappa_quadratic"]
            .contains(&r.metric.as_str())
            || r.metric.starts_with("gap_ratio_")
            || r.metric.ends_with("_rating_ratio")
    }));
}

#[test]
fn formats_carry_the_same_rows() {
    let report = report(200, 0);
    let mut json = Vec::new();
    format::write_json(&report, &mut json).unwrap();
    let rows: Vec<Value> = serde_json::from_slice(&json).unwrap();
    assert_eq!(rows.len(), report.rows.len());
    for r in &rows {
        for field in ["dimension", "group", "agent", "stage", "metric", "value", "ci_low", "ci_high", "n"] {
            assert!(r.get(field).is_some(), "{field} missing in {r}");
        }
        if r["value"].is_null() && r["metric"] != "human_ratings" {
            assert!(r["undefined_reason"].is_string(), "{r}");
        }
    }
    let undefined = rows.iter().find(|r| r["dimension"] == "overall" && r["metric"] == "pearson").unwrap();
    assert_eq!(undefined["undefined_reason"], "n < 3");

    let mut csv = Vec::new();
    format::write_csv(&report, &mut csv).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_slice());
    assert_eq!(reader.headers().unwrap().iter().collect::<Vec<_>>(), CSV_COLUMNS);
    assert_eq!(reader.records().count(), report.rows.len());

    let mut table = Vec::new();
    format::write_table(&report, &mut table, moot::cli::headless::Paint { enabled: true }).unwrap();
    let table = String::from_utf8(table).unwrap();
    assert!(table.contains("Fixture panel (maj-eval)"));
    assert!(table.contains("human_adjusted"));
    assert!(table.contains("undefined: n < 3"));
    // The change from initial to final is highlighted in colour.
    assert!(table.contains("\x1b[32m+") || table.contains("\x1b[31m−"), "{table}");
    // Each agent's rows only on request.
    assert!(!table.contains("Each agent against human ratings"));
    let mut with_agents = Vec::new();
    let options = format::TableOptions { agents: true };
    format::write_table_with(&report, &mut with_agents, moot::cli::headless::Paint { enabled: false }, options)
        .unwrap();
    let with_agents = String::from_utf8(with_agents).unwrap();
    let section = with_agents.split("Each agent against human ratings").nth(1).expect("agents section");
    let agent = report.rows.iter().find(|r| r.agent.is_some()).and_then(|r| r.agent.clone()).unwrap();
    assert!(section.contains(&agent), "{section}");
    assert!(section.lines().any(|l| l.contains("final")), "{section}");
}

#[test]
fn the_binary_writes_json_and_charts() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_moot"))
        .arg("report")
        .arg(fixtures().join("run-a"))
        .arg(fixtures().join("run-b").join("f-15.jsonl"))
        .args(["--format", "json", "--bootstrap", "100", "--plot"])
        .arg(dir.path())
        .arg("--human")
        .arg(fixtures().join("ratings.csv"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rows.iter().any(|r| r["agent"].is_string()), "each agent's rows are in the JSON");
    assert!(rows.iter().filter(|r| r["metric"] == "sessions").all(|r| r["agent"].is_null()));
    let sessions = rows.iter().find(|r| r["metric"] == "sessions").unwrap();
    assert_eq!(sessions["value"], 16.0, "15 logs of run-a and one file");
    assert!(err.contains("run-a/f-07.jsonl:52: not JSON at column 2: key must be a string (line skipped)"), "{err}");
    let svgs: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(svgs.iter().any(|f| f.to_string_lossy() == "fixture-panel-clarity-correlation.svg"), "{svgs:?}");
    assert!(svgs.iter().any(|f| f.to_string_lossy().ends_with("-distribution.svg")), "{svgs:?}");
    let svg = std::fs::read_to_string(dir.path().join("fixture-panel-clarity-correlation.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("initial (phase 1)") && svg.contains("Spearman ρ"), "{svg}");
}

#[test]
fn a_folder_without_logs_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_moot")).arg("report").arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session logs"));
}

#[test]
fn a_run_whose_every_session_failed_reports_no_pairable_units_not_a_small_group() {
    // The fixture's first line (the panel, two groups of agents) and a failed ending.
    let log = std::fs::read_to_string(fixtures().join("run-b").join("f-15.jsonl")).unwrap();
    let started = log.lines().next().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("f-15.jsonl"),
        format!(
            "{started}\n{}\n",
            r#"{"seq":1,"t":"2025-03-01T09:15:01Z","type":"session_ended","status":"failed","error":"connection refused"}"#
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_moot"))
        .args(["report", "--bootstrap", "0", "--format", "csv"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let alpha: Vec<&str> = text.lines().filter(|l| l.contains(",krippendorff_alpha_")).collect();
    assert!(!alpha.is_empty(), "{text}");
    for row in alpha {
        assert!(row.contains("no pairable units") && !row.contains("fewer than two agents"), "{row}");
    }
}

#[test]
fn a_log_with_an_unreadable_first_line_is_named_with_its_line_and_field() {
    let broken =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/broken/session-started-without-seed.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_moot"))
        .arg("report")
        .arg(&broken)
        .arg(fixtures().join("run-b").join("f-15.jsonl"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let warning =
        err.lines().find(|l| l.contains("session-started-without-seed.jsonl")).unwrap_or_else(|| panic!("{err}"));
    assert!(
        warning.contains(
            "session-started-without-seed.jsonl:1: session_started.seed: expected a value, found none (the field is required)"
        ),
        "{warning}"
    );
    assert!(!warning.contains("no session_started line"), "{warning}");
}
