//! Compositions written in a panel file: the bundled two (CollabEval's
//! debate ablation, and G-Eval judges each followed by a verifier with the
//! majority of three), run by the binary headless and in a real terminal
//! against a local OpenAI-compatible server; a written composition's checks
//! (file, line, field); and its log read back by `sessions show`, `replay`'s
//! reader and `report`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use moot::panel::composition::{StageKind, When};
use moot::panel::{Panel, Protocol, ProtocolSection, SettingValue};
use moot::session::event::{EndStatus, Phase, Role};
use moot::session::{EventKind, SessionView, read_log};
use moot::testkit::server::{RecordedRequest, Reply, TestServer};

fn moot() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_moot"));
    c.env_remove("OPENAI_API_KEY").env_remove("ANTHROPIC_API_KEY").env("NO_COLOR", "1").env("MOOT_USER", "tester");
    c
}

async fn run_to_end(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run moot")).await.unwrap()
}

/// `moot run PANEL ARGS --headless` against `server` (as the `openai`
/// provider), its log in `out`; the transcript printed, after checking the
/// run succeeded.
async fn headless(server: &TestServer, panel: &std::ffi::OsStr, args: &[&std::ffi::OsStr], out: &Path) -> String {
    let mut cmd = moot();
    cmd.env("OPENAI_BASE_URL", server.base_url()).arg("run").arg(panel).args(args);
    cmd.args(["--headless", "--provider", "openai", "--model", "judge", "--out"]).arg(out);
    let output = run_to_end(cmd).await;
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

fn log_in(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a session log")
}

fn text_of(body: &serde_json::Value, i: usize) -> String {
    body["messages"][i]["content"].as_str().unwrap_or_default().to_string()
}

/// The judges of `summary-geval-verified` and the verifier. Coherence:
/// Evaluator 4, Checker 2, Reader 2 (a majority of 2); the verifier
/// corrects Reader's 2 to 4, so the verified majority is 4. Every other
/// dimension is 3 from everyone, and the verifier keeps it.
fn verified_reply(r: &RecordedRequest) -> Reply {
    let body = r.body_json().unwrap_or_default();
    let n = body["messages"].as_array().map_or(0, Vec::len);
    let system = text_of(&body, 0);
    let last = text_of(&body, n.saturating_sub(1));
    let text = if last.contains("write the evaluation steps") {
        "1. Read the summary and the source.\n2. Compare them.\n3. Score.".to_string()
    } else if system.starts_with("You check another evaluator's work") {
        let coherence = if last.contains("Checker's evaluation") { 2 } else { 4 };
        let changed = if last.contains("Reader's evaluation") { "changed coherence to 4" } else { "kept every score" };
        format!(
            "I checked the scores against the summary.\n{{\"coherence\": {coherence}, \"consistency\": 3, \"fluency\": 3, \
             \"relevance\": 3, \"overall\": 3, \"confidence\": 0.8, \"justification\": \"I {changed}.\"}}"
        )
    } else {
        let dimension = ["coherence", "consistency", "fluency", "relevance"]
            .into_iter()
            .find(|d| last.to_lowercase().contains(&format!("quality to judge — {d}")))
            .unwrap_or("coherence");
        let score = match (dimension, last.contains("You are Evaluator")) {
            ("coherence", true) => 4,
            ("coherence", false) => 2,
            _ => 3,
        };
        format!("The summary reads as it should.\n{{\"{dimension}\": {score}}}")
    };
    Reply::openai_stream(&[&text], Some((40, 20)))
}

#[tokio::test(flavor = "multi_thread")]
async fn g_eval_judges_with_a_verifier_run_headless_and_the_verified_majority_is_the_result() {
    let server = TestServer::with_handler(verified_reply).await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let stdout = headless(&server, "summary-geval-verified".as_ref(), &[], out.path()).await;
    assert!(stdout.contains("no paper; stages: steps → score → verify → aggregate (rule \"majority\")"), "{stdout}");

    let log = log_in(out.path());
    let events = read_log(&log).unwrap().events;
    let phases: Vec<Phase> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PhaseStarted { phase, .. } => Some(*phase),
            _ => None,
        })
        .collect();
    assert_eq!(phases, [Phase::Steps, Phase::Scoring, Phase::Verification, Phase::Aggregation]);
    let verifications: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnStarted { role: Role::Verifier, agent, .. } => Some(agent.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(verifications, ["verifier (Evaluator)", "verifier (Checker)", "verifier (Reader)"]);
    let result = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::AggregationCompleted { group: None, scores, method, feedback, .. } => {
                Some((scores.clone(), method.clone(), feedback.clone()))
            }
            _ => None,
        })
        .expect("the panel's result");
    assert_eq!(result.0.get("coherence"), Some(&4.0), "the judges gave 4, 2, 2; verified 4, 2, 4: {result:?}");
    assert_eq!(result.0.get("fluency"), Some(&3.0));
    assert_eq!(result.1.as_deref(), Some("majority"));
    assert!(result.2.contains("a verifier checked 3 and corrected 1"), "{}", result.2);
    let finals = events.iter().rev().find_map(|e| match &e.kind {
        EventKind::FinalEvaluations { evaluations, .. } => Some(evaluations.clone()),
        _ => None,
    });
    assert_eq!(finals.unwrap()["Reader"].scores["coherence"], 4.0, "the verified evaluation is the final one");
    let ended = events.last().unwrap();
    assert!(matches!(&ended.kind, EventKind::SessionEnded { status: EndStatus::Completed, .. }), "{ended:?}");

    // The log reads back: the session view has the composition's panel, `sessions show` prints it.
    let view = SessionView::from_events(&events);
    assert!(view.panel.as_ref().is_some_and(|p| p.protocol.kind == Protocol::Composition));
    let shown = run_to_end({
        let mut c = moot();
        c.args(["sessions", "show"]).arg(&log);
        c
    })
    .await;
    let shown_out = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{shown_out}{}", String::from_utf8_lossy(&shown.stderr));
    assert!(shown_out.contains("no paper; stages: steps → score → verify"), "{shown_out}");
}

/// CollabEval's debate ablation: every evaluator gives each criterion the
/// same score except Tomasz on consistency (2 against 4), who is moved by
/// nobody; the final judge settles consistency at 3.
fn debate_reply(r: &RecordedRequest) -> Reply {
    let body = r.body_json().unwrap_or_default();
    let n = body["messages"].as_array().map_or(0, Vec::len);
    let system = text_of(&body, 0);
    let last = text_of(&body, n.saturating_sub(1));
    let text = if system.starts_with("You are the final judge") || last.contains("final judge") {
        "Weighing the arguments, consistency is a 3.\n{\"consistency\": 3, \"justification\": \"Mostly supported.\"}"
            .to_string()
    } else {
        let speaker = moot::engine::prompts::agent_named_in(&last).unwrap_or_default();
        let consistency = if speaker == "Tomasz" { 2 } else { 4 };
        let words = if speaker == "Tomasz" { "Tomasz, holding firm." } else { "My view." };
        format!(
            "{words}\n{{\"coherence\": 4, \"consistency\": {consistency}, \"fluency\": 4, \"relevance\": 4, \"overall\": \
             4, \"confidence\": 0.7, \"justification\": \"Reads well.\"}}"
        )
    };
    Reply::openai_stream(&[&text], Some((40, 20)))
}

#[test]
fn the_bundled_debate_ablation_is_the_stages_collab_eval_builds_for_its_paper_preset_with_debate() {
    let written = Panel::bundled("summary-collab-debate").expect("the bundled panel reads");
    assert_eq!(written.protocol.kind, Protocol::Composition);
    let mut paper = ProtocolSection::paper(Protocol::CollabEval);
    paper.settings.insert("discussion".into(), SettingValue::Text("debate".into()));
    let built = paper.composition().expect("collab-eval's scores mode is a composition");
    assert_eq!(written.protocol.composition().unwrap(), built);
    let discuss = built.discussion().unwrap();
    assert!(discuss.is("talk", "argue") && discuss.is("scope", "per-criterion") && discuss.is("agreement", "same"));
    // Without the ablation the same preset collaborates, and judges per criterion inside the discussion.
    let collaborating = ProtocolSection::paper(Protocol::CollabEval).composition().unwrap();
    assert!(collaborating.discussion().unwrap().is("talk", "collaborate"));
    assert!(!collaborating.has(StageKind::Judge));
    // Scope "all": a judge when a group is still apart.
    let moot_collab = ProtocolSection::new(Protocol::CollabEval).composition().unwrap();
    assert_eq!(moot_collab.of(StageKind::Judge).next().map(|s| s.when), Some(When::NoConsensus));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_debate_ablation_runs_headless_and_judges_the_criterion_that_stays_apart() {
    let server = TestServer::with_handler(debate_reply).await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let stdout = headless(&server, "summary-collab-debate".as_ref(), &[], out.path()).await;
    assert!(stdout.contains("talk \"argue\""), "the header lists the stages: {stdout}");
    let events = read_log(&log_in(out.path())).unwrap().events;
    // The turns of the discussion asked the evaluators to argue (the ablation's request).
    let argued = server
        .requests()
        .iter()
        .filter(|r| {
            let body = r.body_json().unwrap_or_default();
            let n = body["messages"].as_array().map_or(0, Vec::len);
            text_of(&body, n.saturating_sub(1)).contains("Discussion round")
        })
        .count();
    assert!(argued >= 3, "a round of discussion: {argued} requests");
    let criteria = events.iter().filter(|e| matches!(e.kind, EventKind::CriteriaChecked { .. })).count();
    assert!(criteria >= 2, "each criterion is checked on its own");
    let result = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::AggregationCompleted { group: None, scores, method, .. } => {
                Some((scores.clone(), method.clone()))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(result.0.get("coherence"), Some(&4.0), "{result:?}");
    assert_eq!(result.0.get("consistency"), Some(&3.0), "the final judge settled it: {result:?}");
    assert_eq!(result.1.as_deref(), Some("per_criterion"));
}

/// A panel whose `[protocol]` is the composition `stages`, written after
/// everything else.
fn written(stages: &str) -> String {
    let base = moot::panel::BUNDLED_PANELS.iter().find(|(s, _)| *s == "summary-geval-verified").unwrap().1;
    let start = base.find("# The evaluation steps per dimension").unwrap();
    let end = base.find("[scale]").unwrap();
    let roles = base.find("\n[roles.verifier]").unwrap() + 1;
    let groups = base.find("[[groups]]").unwrap();
    format!("{}{}{}\n{stages}", &base[..start], &base[end..roles], &base[groups..])
}

fn problem(stages: &str) -> String {
    let text = written(stages);
    Panel::from_toml_str(&text, "panel.toml").expect_err("the panel is refused").to_string()
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn a_written_composition_is_checked_with_its_file_line_and_field() {
    let ok = written("[[protocol.stage]]\nkind = \"evaluate\"\n\n[[protocol.stage]]\nkind = \"aggregate\"\n");
    let panel = Panel::from_toml_str(&ok, "panel.toml").unwrap();
    assert_eq!(panel.protocol.stages.len(), 2);

    let stages = "[[protocol.stage]]\nkind = \"score\"\n\n[[protocol.stage]]\nkind = \"aggregate\"\n";
    let line = line_of(&written(stages), "kind = \"score\"");
    assert_eq!(
        problem(stages),
        format!(
            "panel.toml:{line}:8: protocol.stage[0].kind: `score` follows the evaluation steps: put a `steps` stage \
             before it"
        )
    );

    let stages = "[[protocol.stage]]\nkind = \"evaluate\"\n\n[[protocol.stage]]\nkind = \"discuss\"\ntlak = \"argue\"\n\
                  \n[[protocol.stage]]\nkind = \"aggregate\"\n";
    let message = problem(stages);
    let line = line_of(&written(stages), "tlak");
    assert!(
        message
            .starts_with(&format!("panel.toml:{line}:1: protocol.stage[1].tlak: unknown field (did you mean `talk`?)")),
        "{message}"
    );

    let stages = "[[protocol.stage]]\nkind = \"evaluate\"\nconfidence = \"yes\"\n\n[[protocol.stage]]\nkind = \
                  \"aggregate\"\n";
    let line = line_of(&written(stages), "confidence = \"yes\"");
    assert_eq!(
        problem(stages),
        format!(
            "panel.toml:{line}:14: protocol.stage[0].confidence: invalid type: string \"yes\", expected true or false"
        )
    );

    let stages = "[[protocol.stage]]\nkind = \"evaluate\"\n\n[[protocol.stage]]\nkind = \"discuss\"\norder = \
                  \"moderated\"\nrounds = 3\n\n[[protocol.stage]]\nkind = \"aggregate\"\n";
    let message = problem(stages);
    assert!(message.contains("protocol.stage[1].rounds: a moderated discussion has no rounds"), "{message}");

    let stages =
        "[[protocol.stage]]\nkind = \"evaluate\"\n\n[[protocol.stage]]\nkind = \"judge\"\nwhen = \"no-consensus\"\n";
    let message = problem(stages);
    assert!(message.contains("protocol.stage[1].kind: the last stage of a composition is `aggregate`"), "{message}");

    let stages = "[[protocol.stage]]\nkind = \"evaluate\"\n\n[[protocol.stage]]\nkind = \"discus\"\n";
    let message = problem(stages);
    assert!(
        message.contains("protocol.stage[1].kind: unknown stage \"discus\" (did you mean \"discuss\"?)"),
        "{message}"
    );

    let stages = "[[protocol.stage]]\nkind = \"evaluate\"\nwhen = \"no-consensus\"\n\n[[protocol.stage]]\nkind = \
                  \"aggregate\"\n";
    let message = problem(stages);
    assert!(message.contains("protocol.stage[0].when: `evaluate` runs once for the panel"), "{message}");

    // A composition needs stages; a bundled protocol takes none.
    let none = written("").replace("kind = \"composition\"", "kind = \"composition\"\n");
    let message = Panel::from_toml_str(&none, "panel.toml").unwrap_err().to_string();
    assert!(message.contains("protocol.stage: missing required field: a composition needs its stages"), "{message}");
    let bundled =
        written("[[protocol.stage]]\nkind = \"evaluate\"\n").replace("kind = \"composition\"", "kind = \"g-eval\"");
    let message = Panel::from_toml_str(&bundled, "panel.toml").unwrap_err().to_string();
    assert!(message.contains("g-eval is a bundled protocol; stages belong to a composition"), "{message}");

    // A role the stages do not call.
    let text = written("[[protocol.stage]]\nkind = \"evaluate\"\n\n[[protocol.stage]]\nkind = \"aggregate\"\n")
        .replace("[[groups]]", "[roles.verifier]\ntemperature = 0.2\n\n[[groups]]");
    let message = Panel::from_toml_str(&text, "panel.toml").unwrap_err().to_string();
    assert!(message.contains("roles.verifier: not a role of this protocol"), "{message}");
}

#[test]
fn a_composition_is_written_to_the_log_and_read_back_the_same() {
    let panel = Panel::bundled("summary-geval-verified").unwrap();
    let json = panel.to_json();
    assert_eq!(json["protocol"]["kind"], "composition");
    assert_eq!(json["protocol"]["stage"][3]["rule"], "majority");
    let back: Panel = serde_json::from_value(json).unwrap();
    assert_eq!(back.protocol, panel.protocol);
    assert_eq!(back.protocol.roles(), [Role::Verifier]);
    assert!(back.protocol.uses_steps());
}

/// `moot run PANEL` against `server` in an 80×24 pseudo-terminal, until
/// the panel's result is in its log; then `q` and `y` leave, and the log is
/// returned.
async fn live(server: &TestServer, panel: &str, wait_for: &str) -> Vec<moot::session::Event> {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sessions");
    let mut cmd = portable_pty::CommandBuilder::new(env!("CARGO_BIN_EXE_moot"));
    cmd.args(["run", panel, "--provider", "openai", "--model", "judge", "--out"]);
    cmd.arg(&out);
    cmd.cwd(tmp.path());
    cmd.env("OPENAI_BASE_URL", server.base_url());
    cmd.env("OPENAI_API_KEY", "sk-test");
    cmd.env("TERM", "xterm-256color");
    let mut term = crate::tui_pty::Moot::spawn(cmd);
    let screen = term.screen();
    screen.wait_for(wait_for, Duration::from_secs(30));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let events = loop {
        let done = std::fs::read_dir(&out).ok().and_then(|mut d| d.next()).map(|e| e.unwrap().path()).and_then(|p| {
            let events = read_log(&p).ok()?.events;
            events
                .iter()
                .any(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. }))
                .then_some(events)
        });
        if let Some(events) = done {
            break events;
        }
        assert!(std::time::Instant::now() < deadline, "no result; screen:\n{}", screen.text());
        std::thread::sleep(Duration::from_millis(50));
    };
    screen.wait_for("DONE", Duration::from_secs(10));
    term.send("q");
    std::thread::sleep(Duration::from_millis(200));
    term.send("y");
    let status = term.wait_exit(Duration::from_secs(15));
    assert!(status.success(), "exit status {status:?}");
    events
}

/// The bundled compositions in a real terminal: each runs to its result
/// (the verifier's turns; the final judge of the debate ablation), and `q`
/// then `y` leaves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g_eval_judges_with_a_verifier_run_live_in_a_terminal() {
    let server = TestServer::with_handler(verified_reply).await.unwrap();
    let events = live(&server, "summary-geval-verified", "Judges").await;
    assert!(events.iter().any(|e| matches!(&e.kind, EventKind::TurnStarted { role: Role::Verifier, .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_debate_ablation_runs_live_in_a_terminal() {
    let server = TestServer::with_handler(debate_reply).await.unwrap();
    let events = live(&server, "summary-collab-debate", "Reviewers").await;
    assert!(events.iter().any(|e| matches!(&e.kind, EventKind::TurnStarted { role: Role::FinalJudge, .. })));
}

/// `moot eval` runs the composition over a dataset, and `moot report` reads
/// its run folder: agreement with the items' human ratings, per stage.
#[tokio::test(flavor = "multi_thread")]
async fn a_composition_runs_over_a_dataset_and_its_run_is_reported() {
    let server = TestServer::with_handler(verified_reply).await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut cmd = moot();
    cmd.env("OPENAI_BASE_URL", server.base_url())
        .args(["eval", "summary-geval-verified", "--data", "summary-geval-verified", "--limit", "3"])
        .args(["--provider", "openai", "--model", "judge", "--out"])
        .arg(out.path());
    let output = run_to_end(cmd).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stdout:\n{}\nstderr:\n{stderr}", String::from_utf8_lossy(&output.stdout));
    let mut cmd = moot();
    cmd.args(["report", "--bootstrap", "0", "--format", "json"]).arg(out.path());
    let report = run_to_end(cmd).await;
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(report.status.success(), "{text}{}", String::from_utf8_lossy(&report.stderr));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let rendered = json.to_string();
    assert!(rendered.contains("coherence"), "{rendered}");
    assert!(rendered.contains("\"items\":3") || rendered.contains("\"n\":3"), "three items reported: {rendered}");
}

/// A judge that always prefers the summary shown first: every pair flips
/// under the swap rule, so every pair is a tie.
fn first_shown(_: &RecordedRequest) -> Reply {
    Reply::openai_stream(
        &["The first reads better. {\"verdict\": \"A\", \"confidence\": \"high\", \"reasoning\": \"Clearer.\"}"],
        Some((30, 10)),
    )
}

/// Pairwise judging written as stages: `compare` (with its settings in the
/// stage) then `aggregate`; the pairs are judged in both orders and decided
/// by the swap rule, as the bundled `pairwise` protocol does.
#[tokio::test(flavor = "multi_thread")]
async fn a_written_comparison_judges_both_orders_and_decides_by_the_swap_rule() {
    let base = moot::panel::BUNDLED_PANELS.iter().find(|(s, _)| *s == "pairwise-summaries").unwrap().1;
    let start = base.find("[protocol]").unwrap();
    let end = base.find("[scale]").unwrap();
    let text = format!(
        "{}[protocol]\nkind = \"composition\"\n\n[[protocol.stage]]\nkind = \"compare\"\nvotes = 1\nswap = true\n\
         pairing = \"all-pairs\"\n\n[[protocol.stage]]\nkind = \"aggregate\"\n\n{}",
        &base[..start],
        &base[end..]
    );
    let panel = Panel::from_toml_str(&text, "pairs.toml").unwrap();
    assert!(panel.protocol.compares_pairs());
    assert!(panel.protocol.blind(), "a comparison can be watched blind");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pairs.toml");
    std::fs::write(&file, &text).unwrap();
    let items = moot::item::BUNDLED_ITEMS.iter().find(|(s, _)| *s == "pairwise-summaries").unwrap().1;
    let items_file = dir.path().join("pairs.jsonl");
    std::fs::write(&items_file, items).unwrap();
    let server = TestServer::with_handler(first_shown).await.unwrap();
    let args = ["--item".as_ref(), items_file.as_os_str()];
    let stdout = headless(&server, file.as_os_str(), &args, &dir.path().join("out")).await;
    assert!(stdout.contains("no paper; stages: compare"), "{stdout}");
    let events = read_log(&log_in(&dir.path().join("out"))).unwrap().events;
    let verdicts = events.iter().filter(|e| matches!(e.kind, EventKind::PairVerdict { .. })).count();
    let item = moot::item::load_items(&items_file).unwrap().items[0].clone();
    let n = item.candidates.as_ref().map_or(0, Vec::len);
    let judges = panel.agents().count();
    assert_eq!(verdicts, judges * n * (n - 1) / 2 * 2, "every judge, every pair (all-pairs), both orders");
    let decided: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PairDecided { judge: None, winner, flip, .. } => Some((winner.clone(), *flip)),
            _ => None,
        })
        .collect();
    assert_eq!(decided.len(), n * (n - 1) / 2);
    assert!(decided.iter().all(|(w, _)| w.is_none()), "a judge who always picks the first shown ties every pair");
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::AggregationCompleted { method: Some(m), .. } if m == "pairwise"))
    );
}

/// SAGEval's stages written in a panel: the meta-evaluator's review runs,
/// its changes are recorded, and the report counts them as SAGEval's.
#[tokio::test(flavor = "multi_thread")]
async fn a_written_review_is_recorded_and_reported_as_sagevals() {
    let base = moot::panel::BUNDLED_PANELS.iter().find(|(s, _)| *s == "survey-sage").unwrap().1;
    let (start, end) = (base.find("[protocol]").unwrap(), base.find("[scale]").unwrap());
    let text = format!(
        "{}[protocol]\nkind = \"composition\"\n\n[[protocol.stage]]\nkind = \"steps\"\n\n[[protocol.stage]]\nkind = \
         \"assess\"\n\n[[protocol.stage]]\nkind = \"review\"\nmax_new_aspects = 1\n\n[[protocol.stage]]\nkind = \
         \"aggregate\"\n\n{}",
        &base[..start],
        &base[end..]
    );
    let panel = Panel::from_toml_str(&text, "sage.toml").unwrap();
    assert_eq!(panel.protocol.roles(), [Role::MetaEvaluator]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sage.toml");
    std::fs::write(&file, &text).unwrap();
    let items = moot::item::BUNDLED_ITEMS.iter().find(|(s, _)| *s == "survey-sage").unwrap().1;
    let items_file = dir.path().join("surveys.jsonl");
    std::fs::write(&items_file, items.lines().next().unwrap()).unwrap();
    let server = TestServer::with_handler(crate::tui_pty::sage_reply).await.unwrap();
    let out = dir.path().join("out");
    let args = ["--item".as_ref(), items_file.as_os_str()];
    let stdout = headless(&server, file.as_os_str(), &args, &out).await;
    assert!(stdout.contains("stages: steps → assess → review"), "{stdout}");
    let events = read_log(&log_in(&out)).unwrap().events;
    assert!(events.iter().any(|e| matches!(e.kind, EventKind::EvaluationRevised { .. })), "the review changed a value");
    let mut cmd = moot();
    cmd.args(["report", "--bootstrap", "0"]).arg(&out);
    let report = run_to_end(cmd).await;
    let table = String::from_utf8_lossy(&report.stdout);
    assert!(report.status.success(), "{table}{}", String::from_utf8_lossy(&report.stderr));
    assert!(
        table.contains("SAGE's changes (1 items reviewed)"),
        "the report counts the meta-evaluator's changes:\n{table}"
    );
}
