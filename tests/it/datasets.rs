//! Public datasets read from their own files (docs/datasets.md): each
//! bundled slice against its source rows, checked by hand; malformed input;
//! detection beside moot's own formats; and `moot eval` then `moot report`
//! on every bundled set with the binary against a local server.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use moot::item::datasets::{self, BUNDLED_DATASETS};
use moot::item::{self, Item, ItemsError, ItemsFile};
use moot::panel::Panel;
use moot::session::run_folder::Manifest;
use moot::testkit::server::{RecordedRequest, Reply, TestServer};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn bundled(name: &str) -> ItemsFile {
    item::resolve_items(name).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn get<'a>(file: &'a ItemsFile, id: &str) -> &'a Item {
    file.get(id).unwrap_or_else(|e| panic!("{e}"))
}

fn ids(file: &ItemsFile) -> Vec<&str> {
    file.items.iter().map(|i| i.id.as_str()).collect()
}

// MSLR's system ids, as the sheets' ExpID column has them.
const JB6Z8F: &str = "01G9RKHTAQVPR038VTDCJB6Z8F";
const PX7SGV: &str = "01G4NE2DDS5G6Q047M97PX7SGV";
const VNCH8M: &str = "01G8WPZRN2E3EHA2WENHVNCH8M";
const AQ85CE: &str = "01G9JE4STYHQ2136MCATAQ85CE";

// ---------------------------------------------------------------------------
// Each bundled slice against its source rows
// ---------------------------------------------------------------------------

#[test]
fn mslr_sheets_merge_into_items_with_two_raters() {
    let file = bundled("mslr-cochrane");
    assert_eq!(file.source, "bundled:mslr-cochrane");
    assert_eq!(file.items.len(), 12, "{:?}", file.skipped);
    assert!(file.skipped.is_empty());
    let both: Vec<&str> = file.items.iter().filter(|i| i.human_raters.len() == 2).map(|i| i.id.as_str()).collect();
    assert_eq!(
        both,
        [
            format!("CD000972/{JB6Z8F}"),
            format!("CD002282/{PX7SGV}"),
            format!("CD004787/{PX7SGV}"),
            format!("CD008216/{VNCH8M}")
        ]
    );
    let only = |rater: &str| file.items.iter().filter(|i| i.human_raters.keys().eq([rater])).count();
    assert_eq!((only("A1"), only("A2")), (4, 4));
    assert!(file.items.iter().all(|i| i.human.is_none()), "the raters are not averaged");

    // CD002282, by hand from both sheets' rows. A1: fluent; population
    // "N/A: No population in generated summary" (0); intervention partly (1);
    // outcome "Other / uncertain" (none); both effect directions N/A (the
    // same: 1); target strength "N/A: No claim" (none) against "0: Not enough
    // evidence" (a difference: 0). A2: population yes, intervention partly,
    // outcome uncertain; directions both N/A; strengths both 0.
    let item = get(&file, &format!("CD002282/{PX7SGV}"));
    assert!(
        item.content.starts_with("There is insufficient evidence to support or refute the use of glass ionomer"),
        "{}",
        item.content
    );
    assert!(
        item.reference.as_deref().is_some_and(|r| r.starts_with("It is difficult to draw any conclusions")),
        "{:?}",
        item.reference
    );
    let a1 = &item.human_raters["A1"];
    assert_eq!((a1["fluency"], a1["population"], a1["intervention"], a1.get("outcome")), (2.0, 0.0, 1.0, None));
    assert_eq!((a1["pio_consistency"], a1["effect_direction"], a1["evidence_strength"]), (0.5, 1.0, 0.0));
    let a2 = &item.human_raters["A2"];
    assert_eq!((a2["population"], a2["intervention"], a2.get("outcome")), (2.0, 1.0, None));
    assert_eq!((a2["pio_consistency"], a2["effect_direction"], a2["evidence_strength"]), (1.5, 1.0, 1.0));
    assert_eq!(item.human_value("pio_consistency"), Some(1.0), "the mean of the two raters");

    // CD000972: "0: No effect" against "N/A" is a difference; A2's outcome
    // "N/A: No outcome in generated summary" counts 0.
    let item = get(&file, &format!("CD000972/{JB6Z8F}"));
    assert_eq!(item.human_raters["A1"]["pio_consistency"], 0.0, "intervention 0, the others uncertain");
    assert_eq!(item.human_raters["A1"]["effect_direction"], 0.0);
    let a2 = &item.human_raters["A2"];
    assert!((a2["pio_consistency"] - 1.0 / 3.0).abs() < 1e-12, "{a2:?}");
    assert_eq!(a2["evidence_strength"], 0.0, "a weak claim against not enough evidence");

    // A1 only: both directions negative agree; a weak claim against a moderate one does not.
    let s = &get(&file, &format!("CD001815/{VNCH8M}")).human_raters["A1"];
    assert_eq!((s["effect_direction"], s["evidence_strength"], s["pio_consistency"]), (1.0, 0.0, 2.0));
    assert_eq!(get(&file, &format!("CD001261/{VNCH8M}")).human_raters["A1"]["fluency"], 1.0);
    // A2 only, nearly every answer "Other / uncertain": fluency, and the two
    // comparisons where one side answered (a difference), nothing else.
    let s = &get(&file, &format!("CD005568/{AQ85CE}")).human_raters["A2"];
    assert_eq!(s.keys().map(String::as_str).collect::<Vec<_>>(), ["effect_direction", "evidence_strength", "fluency"]);
    assert_eq!((s["effect_direction"], s["evidence_strength"]), (0.0, 0.0));
}

#[test]
fn mslr_reads_the_folder_and_one_sheet_as_they_ship() {
    let dir = root().join("assets/datasets/mslr");
    // The folder also holds README.md and LICENSE: they are no sheets.
    let folder = item::load_items(&dir).expect("the folder");
    let slice = bundled("mslr-cochrane");
    assert_eq!(folder.items, slice.items);
    assert_eq!(folder.source, dir.display().to_string());
    let one = item::load_items(&dir.join("Data for MSLR Annotation - Cochrane Subtask - A2.tsv")).expect("one sheet");
    assert_eq!(one.items.len(), 8);
    assert!(one.items.iter().all(|i| i.human_raters.keys().eq(["A2"])));
    // By name and by path, with --format or without.
    let named = item::resolve_items_as(dir.to_str().unwrap(), Some("mslr")).expect("--format mslr");
    assert_eq!(named.items, slice.items);
}

#[test]
fn mslr_pairwise_sheets_give_one_label_per_answer() {
    let file = bundled("mslr-pairwise");
    assert_eq!(file.items.len(), 10, "{:?}", file.skipped);
    let labels: usize = file.items.iter().map(|i| i.human_labels.len()).sum();
    assert_eq!(labels, 13, "17 rows, 4 of them unanswered");
    assert!(file.items.iter().all(|i| i.content.is_empty() && i.reference.is_some()));
    // A4 shows VNCH8M first and answers A; A5 shows the same pair and answers Neither.
    let pair = get(&file, "CD007771/VNCH8M-AQ85CE");
    assert_eq!(pair.human_labels, ["VNCH8M", "tie"]);
    let c = pair.candidates.as_ref().unwrap();
    assert_eq!((c[0].id.as_str(), c[1].id.as_str()), ("VNCH8M", "AQ85CE"));
    assert!(c[1].text.starts_with("Alfacalcidol is effective"), "{}", c[1].text);
    // A3 and A5 both chose B; A4 and A5 left CD001024 unanswered.
    assert_eq!(get(&file, "CD002760/JB6Z8F-SPNXTA").human_labels, ["SPNXTA", "SPNXTA"]);
    assert_eq!(get(&file, "CD001024/PX7SGV-VNCH8M").human_labels, ["VNCH8M"]);
    assert_eq!(get(&file, "CD004571/PX7SGV-8FWF5T").human_labels, ["PX7SGV"]);
}

#[test]
fn summeval_files_agree_with_each_other() {
    let means = bundled("summeval");
    let experts = bundled("summeval-experts");
    assert_eq!(ids(&means), ids(&experts));
    assert_eq!(means.items.len(), 10);
    assert_eq!(means.items[0].id, "moot-doc-1/M8");
    for (m, e) in means.items.iter().zip(&experts.items) {
        assert_eq!(e.human_raters.keys().collect::<Vec<_>>(), ["expert_1", "expert_2", "expert_3"], "{}", e.id);
        assert_eq!((&m.content, &m.context, &m.reference), (&e.content, &e.context, &e.reference), "{}", m.id);
        for dim in ["coherence", "consistency", "fluency", "relevance"] {
            let (a, b) = (m.human_value(dim).unwrap(), e.human_value(dim).unwrap());
            assert!((a - b).abs() < 1e-9, "{} {dim}: {a} vs {b}", m.id);
        }
    }
    // moot-doc-1/M11: experts' coherence 3, 3, 2.
    let m11 = get(&means, "moot-doc-1/M11");
    assert!((m11.human.as_ref().unwrap()["coherence"] - 8.0 / 3.0).abs() < 1e-12);
    assert_eq!(get(&experts, "moot-doc-1/M11").human_raters["expert_3"]["coherence"], 2.0);
    assert!(m11.context.as_deref().is_some_and(|c| c.starts_with("The library in Harwick")));
}

#[test]
fn topical_chat_mt_bench_and_stsb_slices() {
    let tc = bundled("topical-chat");
    assert_eq!(tc.items.len(), 10);
    assert_eq!(tc.items[5].id, "002/Original Ground Truth");
    let first = &tc.items[0];
    assert!(first.context.as_deref().is_some_and(|c| c.contains("Fact the responder was given:\nemperor penguins")));
    assert!((first.human.as_ref().unwrap()["naturalness"] - 8.0 / 3.0).abs() < 1e-9);

    let mt = bundled("mt-bench");
    assert_eq!(mt.items.len(), 10, "15 votes on 10 pairs");
    let labels: usize = mt.items.iter().map(|i| i.human_labels.len()).sum();
    assert_eq!(labels, 15);
    // The second vote shows the pair the other way round and picks model_b: alpha again.
    let pair = get(&mt, "q1001/t1/model-alpha-vs-model-beta");
    assert_eq!(pair.human_labels, ["model-alpha", "model-alpha"]);
    assert_eq!(get(&mt, "q1002/t2/model-alpha-vs-model-gamma").human_labels, ["tie"], "tie (bothbad) is a tie");
    let second = get(&mt, "q1001/t2/model-alpha-vs-model-beta");
    assert!(second.context.as_deref().is_some_and(|c| c.contains("second question:\nNow rewrite the note")));
    let c = second.candidates.as_ref().unwrap();
    assert!(c[0].text.starts_with("Answer to the first question:\nHello neighbours!"), "{}", c[0].text);

    let sts = bundled("stsb");
    assert_eq!(sts.items.len(), 10);
    assert_eq!(sts.items[0].content, "Sentence 1: A man is slicing an onion.\nSentence 2: A man is cutting an onion.");
    assert_eq!(sts.items[0].human.as_ref().unwrap()["similarity"], 4.8);
    assert_eq!(get(&sts, "9").human.as_ref().unwrap()["similarity"], 4.2);
}

#[test]
fn every_bundled_slice_has_its_panel_and_the_panels_dimensions() {
    for b in BUNDLED_DATASETS {
        let file = bundled(b.name);
        // summeval-experts is judged by the summeval panel.
        let panel_name = if b.name == "summeval-experts" { "summeval" } else { b.name };
        let panel = Panel::bundled(panel_name).unwrap_or_else(|| panic!("no bundled panel {panel_name}"));
        let pairwise = file.items.iter().all(|i| i.candidates.as_ref().is_some_and(|c| c.len() == 2));
        if pairwise {
            assert!(file.items.iter().any(|i| !i.human_labels.is_empty()), "{}", b.name);
            continue;
        }
        for key in panel.dimension_keys() {
            let rated = file.items.iter().filter(|i| i.human_value(&key).is_some()).count();
            assert!(rated >= file.items.len() / 2, "{}: {key} rated on {rated} items", b.name);
            for i in &file.items {
                if let Some(v) = i.human_value(&key) {
                    assert!(panel.scale.contains(v), "{}: {} {key} = {v} is off the panel's scale", b.name, i.id);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Malformed input, detection, --format
// ---------------------------------------------------------------------------

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn sheet(name: &str) -> String {
    std::fs::read_to_string(root().join("assets/datasets/mslr").join(name)).unwrap()
}

const A1: &str = "Data for MSLR Annotation - Cochrane Subtask - A1.tsv";
const A2: &str = "Data for MSLR Annotation - Cochrane Subtask - A2.tsv";

#[test]
fn a_damaged_sheet_keeps_its_good_rows_and_names_file_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let mut lines: Vec<String> = sheet(A1).lines().map(str::to_string).collect();
    // Line 3: an answer that is none of the sheet's; line 5: cut short; line 7: no ExpID.
    lines[2] = lines[2].replacen("2: Yes--there are no errors that impact comprehension of the summary", "Yes", 1);
    lines[4] = lines[4].split('\t').take(6).collect::<Vec<_>>().join("\t");
    lines[6] = lines[6].split_once('\t').map(|(_, rest)| format!("\t{rest}")).unwrap();
    std::fs::write(tmp.path().join(A1), lines.join("\n")).unwrap();
    std::fs::write(tmp.path().join(A2), sheet(A2)).unwrap();
    let file = item::load_items(tmp.path()).expect("the good rows");
    assert_eq!(file.items.len(), 12 - 1, "CD002282 and CD008216 keep A2's ratings; CD001261 loses its only row");
    let msgs: Vec<String> = file.skipped.iter().map(ToString::to_string).collect();
    let path = tmp.path().join(A1).display().to_string();
    assert_eq!(msgs.len(), 3, "{msgs:?}");
    assert_eq!(
        msgs[0],
        format!("line 3: {path}: item \"CD002282/{PX7SGV}\": column 5 (fluency): unknown answer \"Yes\"")
    );
    assert!(
        msgs[1].starts_with(&format!(
            "line 5: {path}: the row has 6 cells, the header 15: column 7 `Is the *intervention* in the generated summary"
        )),
        "{}",
        msgs[1]
    );
    assert_eq!(msgs[2], format!("line 7: {path}: column 1 `ExpID` is empty"));
    assert!(get(&file, &format!("CD002282/{PX7SGV}")).human_raters.keys().eq(["A2"]));

    // A sheet without one of the question columns cannot be read at all.
    let header = sheet(A1).lines().next().unwrap().replace("Is the *outcome*", "Is the outcome");
    let bad = write(tmp.path(), "h - A9.tsv", &format!("{header}\n"));
    let err = item::load_items_as(&bad, Some("mslr")).expect_err("no outcome column");
    assert!(
        err.to_string().starts_with(&format!(
            "{}:1:1: the header has no column `Is the *outcome* in the generated summary the same as the outcome in the target summary?` (outcome)",
            bad.display()
        )),
        "{err}"
    );
}

#[test]
fn malformed_json_datasets_name_line_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("assets/datasets/mt-bench/human_judgments.json")).unwrap();
    let bad = text.replacen("\"winner\": \"tie (bothbad)\"", "\"winner\": \"both\"", 1);
    let path = write(tmp.path(), "human_judgments.json", &bad);
    let file = item::load_items(&path).expect("the other votes");
    assert_eq!(file.skipped.len(), 1);
    let line =
        bad[..bad.find("\"winner\": \"both\"").unwrap()].rfind("\n    {").map(|at| bad[..at].lines().count() + 1);
    assert_eq!(Some(file.skipped[0].line), line, "the line the vote starts on");
    assert!(file.skipped[0].message.contains("`winner`: \"both\" is not model_a, model_b or a tie"));
    assert_eq!(file.items.len(), 9, "the pair's only vote is gone");

    // Cut short: the whole file is unreadable, with its line and column.
    let cut = write(tmp.path(), "summeval.json", &text[..text.len() / 2]);
    let err = item::load_items_as(&cut, Some("summeval")).expect_err("cut");
    assert!(matches!(err, ItemsError::Malformed { .. }), "{err}");
    assert!(err.to_string().starts_with(&format!("{}:", cut.display())), "{err}");

    let text = std::fs::read_to_string(root().join("assets/datasets/summeval/model_annotations.aligned.paired.jsonl"))
        .unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[3] = lines[3].replacen("\"coherence\": 2", "\"coherence\": \"two\"", 1);
    lines[6] = lines[6][..lines[6].len() / 2].to_string();
    let path = write(tmp.path(), "model_annotations.aligned.paired.jsonl", &lines.join("\n"));
    let file = item::load_items(&path).expect("eight good lines");
    let msgs: Vec<String> = file.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(file.items.len(), 8, "{msgs:?}");
    assert!(
        msgs[0].starts_with("line 4: item \"moot-doc-1/M17\": `expert_annotations[0].coherence` must be a number"),
        "{msgs:?}"
    );
    assert!(msgs[1].starts_with("line 7: invalid JSON at column "), "{msgs:?}");
}

#[test]
fn detection_finds_each_format_and_leaves_moot_files_alone() {
    for b in BUNDLED_DATASETS {
        for (name, text) in b.files {
            assert_eq!(datasets::detect(text).map(|f| f.name), Some(b.format), "{name}");
        }
    }
    // moot's own items, bundled and in the test fixtures, are never taken for a dataset.
    for dir in ["assets/items", "tests/fixtures/items", "tests/fixtures/eval"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap().flatten() {
            let Ok(text) = std::fs::read_to_string(entry.path()) else { continue };
            assert!(datasets::detect(&text).is_none(), "{} taken for a dataset", entry.path().display());
        }
    }
    // A file named .txt is read by its content, or by --format.
    let tmp = tempfile::tempdir().unwrap();
    let tsv = std::fs::read_to_string(root().join("assets/datasets/stsb/dev.tsv")).unwrap();
    let txt = write(tmp.path(), "pairs.txt", &tsv);
    assert_eq!(item::load_items(&txt).expect("recognised").items.len(), 10);
    // --format jsonl on a dataset reads it as moot's own JSONL (and finds no items).
    let err = item::load_items_as(&txt, Some("jsonl")).expect_err("not moot's JSONL");
    assert!(err.to_string().contains("no usable items"), "{err}");
    // A moot CSV with an STS-like column is still a moot CSV.
    let csv = write(tmp.path(), "mine.csv", "id,content,human.similarity\na,Sentence 1: x,3\n");
    assert_eq!(item::load_items(&csv).expect("moot csv").items[0].human.as_ref().unwrap()["similarity"], 3.0);
}

#[test]
fn format_names_and_folders_are_checked() {
    let err = item::resolve_items_as("mslr-cochrane", Some("nope")).expect_err("unknown");
    assert_eq!(
        err.to_string(),
        "unknown format \"nope\"; known formats: jsonl, json, csv, mslr, mslr-pairwise, summeval, \
         summeval-annotations, topical-chat, mt-bench, stsb"
    );
    let err = item::resolve_items_as("mslr-cochrane", Some("stsb")).expect_err("wrong format");
    assert!(err.to_string().contains("the bundled slice mslr-cochrane is in the mslr format, not stsb"), "{err}");
    let err = item::resolve_items_as("storybook-qa", Some("mslr")).expect_err("JSONL");
    assert!(err.to_string().contains("the bundled items storybook-qa are moot's own JSONL"), "{err}");
    assert_eq!(item::resolve_items_as("storybook-qa", Some("jsonl")).expect("JSONL").items.len(), 10);

    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(A1), sheet(A1)).unwrap();
    std::fs::copy(root().join("assets/datasets/stsb/dev.tsv"), tmp.path().join("dev.tsv")).unwrap();
    let err = item::load_items(tmp.path()).expect_err("two formats");
    assert!(err.to_string().contains("the folder mixes formats"), "{err}");
    // With --format, the folder's files of that format are read.
    assert_eq!(item::load_items_as(tmp.path(), Some("mslr")).expect("the sheet").items.len(), 8);
    let err = item::load_items_as(tmp.path(), Some("mt-bench")).expect_err("none");
    assert!(err.to_string().contains("no file in the folder is in the mt-bench format"), "{err}");
    std::fs::copy(root().join("assets/datasets/stsb/dev.tsv"), tmp.path().join("dev2.tsv")).unwrap();
    let err = item::load_items_as(tmp.path(), Some("stsb")).expect_err("stsb reads one file");
    assert!(err.to_string().contains("the stsb format reads one file, and the folder has 2"), "{err}");
}

#[test]
fn eval_help_documents_format() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_moot")).args(["eval", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--format <NAME>"), "{help}");
    for name in datasets::names() {
        assert!(help.contains(name), "--help names {name}");
    }
}

// ---------------------------------------------------------------------------
// `moot eval` then `moot report` on every bundled set
// ---------------------------------------------------------------------------

/// Every panel's keys, each scored 1 (on every bundled panel's scale), or a
/// pairwise verdict.
fn reply(req: &RecordedRequest) -> Reply {
    let body = req.body_text();
    if body.contains("your verdict") {
        return Reply::openai_stream(
            &["Compared. {\"verdict\": \"A\", \"confidence\": \"high\", \"reasoning\": \"A is closer.\"}"],
            Some((90, 20)),
        );
    }
    let keys = [
        "fluency",
        "pio_consistency",
        "effect_direction",
        "evidence_strength",
        "coherence",
        "consistency",
        "relevance",
        "naturalness",
        "engagingness",
        "groundedness",
        "similarity",
    ];
    let scores: Vec<String> = keys.iter().map(|k| format!("\"{k}\": 1")).collect();
    let text = format!(
        "Short view.\n```json\n{{{}, \"overall\": 1, \"confidence\": 0.7, \"justification\": \"As scored.\"}}\n```\nNO MORE COMMENTS",
        scores.join(", ")
    );
    Reply::openai_stream(&[&text], Some((120, 30)))
}

fn moot(base_url: &str, args: &[&str]) -> Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_moot"));
    cmd.args(args)
        .env("OPENAI_BASE_URL", base_url)
        .env_remove("OPENAI_API_KEY")
        .env("MOOT_PROGRESS_SECS", "1")
        .env("NO_COLOR", "1")
        .env("MOOT_CACHE_DIR", std::env::temp_dir().join(format!("moot-test-cache-ds-{}", std::process::id())));
    cmd.output().expect("moot runs")
}

async fn run(base_url: &str, args: Vec<String>) -> Output {
    let url = base_url.to_string();
    let task = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        moot(&url, &args)
    });
    tokio::time::timeout(Duration::from_secs(240), task).await.expect("moot timed out").expect("moot runs")
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bundled_set_runs_end_to_end_and_reports_its_people() {
    let srv = TestServer::with_handler(reply).await.expect("test server");
    let tmp = tempfile::tempdir().unwrap();
    for (panel, data) in [
        ("mslr-cochrane", "mslr-cochrane"),
        ("mslr-pairwise", "mslr-pairwise"),
        ("summeval", "summeval"),
        ("summeval", "summeval-experts"),
        ("topical-chat", "topical-chat"),
        ("mt-bench", "mt-bench"),
        ("stsb", "stsb"),
    ] {
        let out = tmp.path().join(data);
        let mut args: Vec<String> =
            ["eval", panel, "--data", data, "--provider", "openai", "--concurrency", "6"].map(String::from).to_vec();
        if panel == "mslr-cochrane" {
            args.extend(["--moderator", "round-robin"].map(String::from));
        }
        args.extend(["--out".to_string(), out.display().to_string()]);
        let o = run(&srv.base_url(), args).await;
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{data}: {err}");
        let m = Manifest::load(&out).unwrap().expect("run.json");
        let expected = bundled(data).items.len();
        assert_eq!((m.counts.items, m.counts.completed, m.counts.bad_items), (expected, expected, 0), "{data}");

        let report = ["report", out.to_str().unwrap(), "--bootstrap", "0"].map(String::from).to_vec();
        let o = run(&srv.base_url(), report).await;
        let (table, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{data} report: {err}");
        match data {
            "mslr-cochrane" => {
                assert!(table.contains("Human raters (A1, A2)"), "{table}");
                assert!(table.contains("12 items rated by named raters (human_raters)"), "{table}");
            }
            "summeval-experts" => assert!(table.contains("Human raters (expert_1, expert_2, expert_3)"), "{table}"),
            _ => assert!(!table.contains("Human raters ("), "{data}: no named raters:\n{table}"),
        }
        if matches!(data, "mslr-pairwise" | "mt-bench") {
            let o = run(
                &srv.base_url(),
                ["report", out.to_str().unwrap(), "--format", "json", "--bootstrap", "0"].map(String::from).to_vec(),
            )
            .await;
            let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
            let labelled = rows
                .iter()
                .find(|r| r["metric"] == "human_labelled_comparisons")
                .unwrap_or_else(|| panic!("{data}: no human_labelled_comparisons row"));
            assert!(labelled["value"].as_f64().is_some_and(|v| v >= 8.0), "{data}: {labelled}");
        }
    }
}

/// A folder in the working directory named like a bundled set (a run
/// folder `moot eval … --out summeval` leaves) is read as the folder; when
/// it holds no dataset, the message says how to ask for the bundled set.
#[test]
fn a_folder_named_like_a_bundled_set_says_how_to_reach_the_set() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("summeval")).unwrap();
    std::fs::write(dir.path().join("summeval").join("run.json"), "{}").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_moot"))
        .current_dir(dir.path())
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9")
        .args(["eval", "summeval", "--data", "summeval", "--provider", "openai"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("write bundled:summeval"), "{err}");
}
