//! `moot sessions export --format html` and `moot report --format html`:
//! text from models and items is shown, never run; people's actions are
//! marked human with their author; long texts fold; the pages need no
//! network; and a headless Chromium (when one is installed) loads them,
//! runs the page's own script and not the transcript's.

use std::path::{Path, PathBuf};
use std::process::Command;

use moot::session::event::SelectedBy;
use moot::session::{EventKind, SessionWriter, read_log};

const SCRIPT: &str = "<script>alert(1)</script>";
const IMG: &str = "\"><img src=x onerror=alert(1)>";
/// Would mark the page if it ran.
const PWN: &str = "<img src=x onerror=\"document.documentElement.dataset.pwned='img'\"><script>window.__pwned=1;document.documentElement.dataset.pwned='script'</script>";

fn moot() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_moot"));
    c.env("NO_COLOR", "1").env("MOOT_SESSIONS_DIR", std::env::temp_dir().join("moot-html-export-none"));
    c
}

/// The two-group example session, with hostile text in a speech, the item
/// and a comment, and people's actions: alice's comment, carol's pick (and
/// bob's veto), dave's pause and resume, demo's override (already in it).
fn hostile_log(dir: &Path) -> PathBuf {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("sessions/examples/maj-eval-two-groups.jsonl");
    let log = read_log(&example).unwrap();
    let path = dir.join("hostile.jsonl");
    let mut w = SessionWriter::create(&path).unwrap();
    let mut seq = 0;
    let mut first_turn = true;
    let mut first_pick = true;
    let mut write = |w: &mut SessionWriter, mut e: moot::session::Event| {
        e.seq = seq;
        seq += 1;
        w.write(&e).unwrap();
    };
    for mut e in log.events {
        match &mut e.kind {
            EventKind::SessionStarted { item, .. } => item.content.push_str(&format!(" {SCRIPT} {IMG}")),
            EventKind::TurnCompleted { text, .. } if first_turn => {
                first_turn = false;
                // Long enough to fold.
                *text = format!("{SCRIPT}\n{IMG}\n{PWN}\n{}{text}", "A long speech. ".repeat(50));
            }
            EventKind::SpeakerSelected { by, reason, agent, .. } if first_pick => {
                first_pick = false;
                *by = SelectedBy::Human;
                *reason = format!("chosen by carol ({agent} vetoed by bob: speaks last this round)");
            }
            EventKind::HumanComment { text, author, .. } => {
                *text = format!("{SCRIPT} {IMG} {PWN}");
                *author = "alice".into();
            }
            EventKind::SessionEnded { .. } => {
                let t = e.t;
                for kind in [EventKind::Paused { author: "dave".into() }, EventKind::Resumed { author: "dave".into() }]
                {
                    write(&mut w, moot::session::Event { seq: 0, t, kind });
                }
            }
            _ => {}
        }
        write(&mut w, e);
    }
    path
}

fn export(log: &Path, out: &Path) -> String {
    let o = moot().args(["sessions", "export"]).arg(log).args(["--format", "html", "--out"]).arg(out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out).unwrap()
}

fn assert_offline(page: &str) {
    assert!(!page.contains("http://") && !page.contains("https://"), "the page refers to the network");
    assert!(!page.contains("<link"), "no linked stylesheet");
    assert_eq!(page.matches("<script").count(), 1, "only the page's own script");
}

#[test]
fn hostile_text_is_shown_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let page = export(&hostile_log(dir.path()), &dir.path().join("s.html"));
    assert!(!page.contains(SCRIPT), "a raw script tag from the log");
    assert!(!page.contains("<img src=x"), "a raw img tag from the log");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(page.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
    assert_offline(&page);
    // Only the page's own script may run: a fresh nonce in the policy.
    assert!(page.contains("script-src &#39;nonce-"), "a Content-Security-Policy with a nonce");
}

#[test]
fn people_are_marked_human_with_their_author_and_long_texts_fold() {
    let dir = tempfile::tempdir().unwrap();
    let page = export(&hostile_log(dir.path()), &dir.path().join("s.html"));
    for who in ["alice", "carol", "bob", "dave", "demo"] {
        assert!(
            page.contains(&format!("<span class=\"badge human\" data-author=\"{who}\">human: {who}</span>")),
            "{who} is marked human"
        );
    }
    assert!(page.contains("class=\"entry human comment\" data-human=\"alice\""));
    assert!(page.contains("class=\"entry human override\" data-human=\"demo\""));
    assert!(page.contains("<span class=\"who\">dave</span> paused"));
    // The item and the long speech fold; the agents, scores and timelines are there.
    assert!(page.contains("<details><summary>item qa-test"));
    assert!(page.contains("<details><summary>reply — &lt;script&gt;"));
    for agent in ["Ann", "Bea", "Cal", "Dee"] {
        assert!(page.contains(&format!("data-agent=\"{agent}\"")), "{agent}'s turns");
    }
    assert!(page.contains("<svg class=\"timeline\" data-key=\"grammar\""));
    assert!(page.contains("consensus reached") || page.contains("no consensus yet"));
    assert!(page.contains("<h3>panel</h3>"));
}

#[test]
fn a_report_page_links_each_item_to_its_session_page() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("run");
    std::fs::create_dir(&runs).unwrap();
    hostile_log(&runs);
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sessions/examples");
    std::fs::copy(examples.join("g-eval.jsonl"), runs.join("g-eval.jsonl")).unwrap();
    let out = dir.path().join("pages");
    let o = moot()
        .arg("report")
        .arg(&runs)
        .args(["--format", "html", "--bootstrap", "50", "--out"])
        .arg(format!("{}/", out.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert_offline(&index);
    assert!(index.contains("<pre class=\"table\">"), "the tables as moot report prints them");
    assert!(index.contains("<h2>Panels</h2>") && index.contains("Storybook QA"));
    let links: Vec<&str> = index.split("<a href=\"").skip(1).map(|s| s.split('"').next().unwrap()).collect();
    assert_eq!(links.len(), 2, "one link per item: {links:?}");
    for l in links {
        assert!(l.starts_with("sessions/") && l.ends_with(".html"), "{l}");
        let page = std::fs::read_to_string(out.join(l)).unwrap();
        assert!(page.contains("<h2>Transcript</h2>"));
        assert!(!page.contains(SCRIPT));
    }
    // Without --out, the page goes to stdout.
    let o = moot().arg("report").arg(&runs).args(["--format", "html", "--bootstrap", "0"]).output().unwrap();
    assert!(o.status.success());
    let page = String::from_utf8(o.stdout).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && !page.contains("<a href="));
}

/// A headless Chromium on PATH, if any.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
        .find(|p| p.is_file())
}

/// The DOM after the page loaded and its scripts ran, and what the browser logged.
fn load_in_browser(browser: &Path, page: &Path, profile: &Path) -> (String, String) {
    let o = Command::new(browser)
        .args([
            "--headless=new",
            "--dump-dom",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn a_headless_browser_shows_the_pages_and_runs_no_script_from_the_log() {
    let Some(browser) = chromium() else {
        println!("skipped: no headless Chromium (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("s.html");
    export(&hostile_log(dir.path()), &page);
    let (dom, log) = load_in_browser(&browser, &page, &dir.path().join("profile"));
    assert!(dom.contains("data-script=\"ran\""), "the page's own script ran:\n{log}");
    assert!(!dom.contains("data-pwned"), "a script or handler from the log ran");
    assert!(!dom.contains("<img src=\"x\""), "an element from the log was created");
    assert!(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the hostile text is shown as text");
    for agent in ["Ann", "Bea", "Cal", "Dee"] {
        assert!(dom.contains(&format!("data-agent=\"{agent}\"")), "{agent}");
    }
    assert!(dom.contains("<b>4.25</b>"), "the panel's grammar score");
    for who in ["alice", "carol", "bob", "dave", "demo"] {
        assert!(dom.contains(&format!("data-author=\"{who}\"")), "{who}'s mark");
    }
    assert!(dom.contains("<svg class=\"timeline\"") && dom.contains("<polyline"), "the score timelines");
    assert!(dom.contains("<details>"), "folds");
    assert!(dom.contains("<button type=\"button\" data-fold=\"open\">"), "the script showed the fold buttons");
    for bad in ["Uncaught", "Refused to", "ERROR:CONSOLE"] {
        assert!(!log.contains(bad), "the browser logged {bad}:\n{log}");
    }
}
