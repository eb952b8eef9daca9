//! Soak: kill and resume. Runs live debates headless against a
//! fault-injecting local server, kills each `moot` process with SIGKILL at
//! random moments, resumes it until the session ends, then reads every
//! final log and counts what the kills cost.
//!
//! ```sh
//! cargo build --bin moot --example soak      # the driver and the binary it kills
//! target/debug/examples/soak --sessions 200 --seed 1
//! ```
//!
//! `--moot PATH` kills another binary (a release build, say).
//!
//! Each session runs the bundled `storybook-qa` panel (three groups of
//! three, a moderated debate per group, an aggregator) on one of its ten
//! items, as `moot run storybook-qa --id ITEM --headless --provider openai`
//! against its own `TestServer` (see `faults.rs` for the mix). The first
//! process of a session is always set to be killed (it may end first); a resumed one is killed again
//! with probability 1/2, at most `--max-kills` times. A kill lands after a
//! uniform random delay up to the item's uninterrupted duration. An
//! uninterrupted run of each item first gives the baseline: its requests,
//! its turns and its result.
//!
//! With `--rerun` (or when the binary has no `--resume`), a killed session
//! starts over in a fresh log instead, which exercises everything but the
//! resume itself.

mod faults;
mod tally;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use moot::testkit::server::TestServer;
use rand::{Rng, SeedableRng, rngs::StdRng};

use tally::LogTally;

const ITEMS: [&str; 10] = ["qa-01", "qa-02", "qa-03", "qa-04", "qa-05", "qa-06", "qa-07", "qa-08", "qa-09", "qa-10"];

#[derive(Parser, Debug, Clone)]
#[command(about = "Kill and resume live sessions against a fault-injecting server; count what is lost.")]
struct Args {
    /// Sessions to run to their end.
    #[arg(long, default_value_t = 200)]
    sessions: usize,
    /// Seed of the faults, the kill times and the order of items.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Sessions running at once.
    #[arg(long, default_value_t = 2)]
    lanes: usize,
    /// Most kills per session.
    #[arg(long, default_value_t = 4)]
    max_kills: u32,
    /// The moot binary (default: the one built beside this example).
    #[arg(long)]
    moot: Option<PathBuf>,
    /// Start a killed session over instead of resuming it.
    #[arg(long)]
    rerun: bool,
    /// Keep the session folders here (default: a temporary folder, removed).
    #[arg(long)]
    keep: Option<PathBuf>,
}

/// One item's uninterrupted run.
#[derive(Debug, Clone)]
struct Baseline {
    requests: usize,
    duration: Duration,
    tally: LogTally,
}

/// One session's run through its kills.
#[derive(Debug, Default)]
struct Outcome {
    item: usize,
    kills: u32,
    attempts: u32,
    requests: usize,
    panics: u32,
    /// Attempts that exited with an error before the session ended.
    errors: Vec<String>,
    tally: Option<LogTally>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let moot = match &args.moot {
        Some(p) => p.clone(),
        None => std::env::current_exe()?.parent().and_then(Path::parent).map(|d| d.join("moot")).unwrap(),
    };
    anyhow::ensure!(moot.is_file(), "no moot binary at {}; build it or pass --moot", moot.display());
    let help = std::process::Command::new(&moot).args(["run", "--help"]).output()?;
    let resume = !args.rerun && String::from_utf8_lossy(&help.stdout).contains("--resume");
    let tmp = tempfile::tempdir()?;
    let root = args.keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&root)?;
    let counts: faults::Counts = Arc::default();
    let started = Instant::now();
    eprintln!("soak: {} sessions, seed {}, {} at once, {}", args.sessions, args.seed, args.lanes, moot.display());
    eprintln!("soak: a killed session {}", if resume { "is resumed (--resume)" } else { "starts over (no --resume)" });

    let mut baselines = Vec::new();
    for item in ITEMS {
        let dir = root.join(format!("baseline-{item}"));
        let b = baseline(&moot, &dir, item, args.seed, faults::Counts::default()).await?;
        eprintln!(
            "soak: baseline {item}: {} requests, {} turns, {:.1} s",
            b.requests,
            b.tally.turns(),
            b.duration.as_secs_f64()
        );
        anyhow::ensure!(
            b.tally.ended.as_deref() == Some("completed"),
            "the uninterrupted run of {item} did not complete"
        );
        baselines.push(b);
    }
    // The same item run again uninterrupted makes the same requests: the
    // extra requests of a killed session are the kills' cost, not chance.
    let again = baseline(&moot, &root.join("baseline-again"), ITEMS[0], args.seed, faults::Counts::default()).await?;
    anyhow::ensure!(
        again.requests == baselines[0].requests && again.tally.results == baselines[0].tally.results,
        "two uninterrupted runs of {} differ: {} and {} requests",
        ITEMS[0],
        baselines[0].requests,
        again.requests
    );
    let baselines = Arc::new(baselines);

    let next = Arc::new(AtomicUsize::new(0));
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let mut lanes = Vec::new();
    for _ in 0..args.lanes.max(1) {
        let (next, outcomes, baselines, counts) = (next.clone(), outcomes.clone(), baselines.clone(), counts.clone());
        let (moot, root, args) = (moot.clone(), root.clone(), args.clone());
        lanes.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= args.sessions {
                    break;
                }
                let o = session(&moot, &root, i, &args, resume, &baselines, counts.clone()).await;
                let o = o.unwrap_or_else(|e| Outcome { errors: vec![format!("{e:#}")], ..Outcome::default() });
                let done = outcomes.lock().unwrap().len() + 1;
                if done % 10 == 0 {
                    eprintln!("soak: {done}/{} sessions, {:.0} s", args.sessions, started.elapsed().as_secs_f64());
                }
                outcomes.lock().unwrap().push(o);
            }
        }));
    }
    for l in lanes {
        l.await?;
    }
    let outcomes = std::mem::take(&mut *outcomes.lock().unwrap());
    print_report(&args, resume, &outcomes, &baselines, &counts, started.elapsed());
    Ok(())
}

fn command(moot: &Path, dir: &Path, server: &TestServer) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(moot);
    c.current_dir(dir)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env("NO_COLOR", "1")
        .env("MOOT_USER", "soak")
        .env("MOOT_SKIP_LOCAL_MODEL", "1")
        .env("MOOT_CACHE_DIR", dir.join("cache"))
        .env("MOOT_SESSIONS_DIR", dir.join("sessions"))
        .env("OPENAI_BASE_URL", server.base_url())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .kill_on_drop(true);
    c
}

fn start_args(item: &str, out: &Path) -> Vec<String> {
    let mut a: Vec<String> =
        ["run", "storybook-qa", "--id", item, "--headless", "--provider", "openai"].map(String::from).to_vec();
    a.extend(["--model", "judge-model", "--no-cache", "--out"].map(String::from));
    a.push(out.display().to_string());
    a
}

fn log_in(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).find(|p| p.extension().is_some_and(|x| x == "jsonl"))
}

async fn baseline(moot: &Path, dir: &Path, item: &str, seed: u64, counts: faults::Counts) -> anyhow::Result<Baseline> {
    std::fs::create_dir_all(dir)?;
    let server = TestServer::with_handler(faults::handler(seed ^ item_key(item), counts)).await?;
    let out = dir.join("sessions");
    let t = Instant::now();
    let run = command(moot, dir, &server).args(start_args(item, &out)).stderr(Stdio::piped()).output().await?;
    anyhow::ensure!(run.status.success(), "{item}: {}", String::from_utf8_lossy(&run.stderr));
    let log = log_in(&out).ok_or_else(|| anyhow::anyhow!("{item}: no log in {}", out.display()))?;
    Ok(Baseline { requests: server.request_count(), duration: t.elapsed(), tally: LogTally::read(&log)? })
}

fn item_key(item: &str) -> u64 {
    item.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

async fn session(
    moot: &Path,
    root: &Path,
    i: usize,
    args: &Args,
    resume: bool,
    baselines: &[Baseline],
    counts: faults::Counts,
) -> anyhow::Result<Outcome> {
    let mut rng = StdRng::seed_from_u64(args.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i as u64);
    let item = i % ITEMS.len();
    let dir = root.join(format!("session-{i:03}"));
    let out = dir.join("sessions");
    std::fs::create_dir_all(&dir)?;
    let server = TestServer::with_handler(faults::handler(args.seed ^ item_key(ITEMS[item]), counts)).await?;
    let mut o = Outcome { item, ..Outcome::default() };
    let window = baselines[item].duration;
    loop {
        o.attempts += 1;
        let mut log = log_in(&out);
        // Killed before its first line was written: nothing to resume.
        if let Some(l) = log.take_if(|l| moot::session::read_log(l).is_ok_and(|r| r.events.is_empty())) {
            std::fs::remove_file(l)?;
        }
        let argv = match (&log, resume) {
            (Some(log), true) => {
                vec!["run".to_string(), "--resume".into(), log.display().to_string(), "--headless".into()]
            }
            (Some(log), false) => {
                let aside = dir.join("aside");
                std::fs::create_dir_all(&aside)?;
                std::fs::rename(log, aside.join(format!("attempt-{}.jsonl", o.attempts)))?;
                start_args(ITEMS[item], &out)
            }
            (None, _) => start_args(ITEMS[item], &out),
        };
        let stderr_path = dir.join(format!("attempt-{}.stderr", o.attempts));
        let mut child =
            command(moot, &dir, &server).args(&argv).stderr(std::fs::File::create(&stderr_path)?).spawn()?;
        let kill = o.kills < args.max_kills && (o.kills == 0 || rng.random_bool(0.5));
        let delay = window.mul_f64(rng.random_range(0.02..1.0));
        let status = if kill {
            tokio::select! {
                s = child.wait() => Some(s?),
                _ = tokio::time::sleep(delay) => None,
            }
        } else {
            Some(child.wait().await?)
        };
        let status = match status {
            Some(s) => s,
            None => {
                child.start_kill()?;
                child.wait().await?;
                o.kills += 1;
                note_panic(&stderr_path, &mut o);
                continue;
            }
        };
        note_panic(&stderr_path, &mut o);
        let tally = log_in(&out).map(|l| LogTally::read(&l)).transpose()?;
        if tally.as_ref().is_some_and(|t| t.ended.is_some()) {
            o.tally = tally;
            break;
        }
        let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        o.errors.push(format!("attempt {} exited with {status}: {}", o.attempts, last_line(&err)));
        if o.attempts > args.max_kills + 3 {
            break;
        }
    }
    o.requests = server.request_count();
    if args.keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(o)
}

fn note_panic(stderr: &Path, o: &mut Outcome) {
    if std::fs::read_to_string(stderr).is_ok_and(|e| e.contains("panicked")) {
        o.panics += 1;
    }
}

fn last_line(s: &str) -> &str {
    s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("")
}

fn print_report(
    args: &Args,
    resume: bool,
    outcomes: &[Outcome],
    baselines: &[Baseline],
    counts: &faults::Counts,
    wall: Duration,
) {
    let mut completed = 0;
    let (mut lost, mut duplicated, mut extra_turns, mut unresolved, mut seq_faults) = (0, 0, 0, 0, 0);
    let (mut abandoned, mut not_redone, mut different, mut unreadable) = (0, 0, 0, 0);
    let (mut kills, mut panics, mut requests, mut base_requests) = (0, 0, 0usize, 0usize);
    let mut errors: Vec<&String> = Vec::new();
    for o in outcomes {
        kills += o.kills;
        panics += o.panics;
        requests += o.requests;
        base_requests += baselines[o.item].requests;
        errors.extend(&o.errors);
        let Some(t) = &o.tally else { continue };
        let b = &baselines[o.item].tally;
        if t.ended.as_deref() == Some("completed") {
            completed += 1;
        }
        let (l, x) = t.against(b);
        lost += l;
        extra_turns += x;
        duplicated += t.completed_twice;
        unresolved += t.unresolved;
        seq_faults += t.seq_faults;
        abandoned += t.abandoned;
        not_redone += t.abandoned_not_redone;
        unreadable += t.problems.len();
        if t.results != b.results {
            different += 1;
        }
    }
    let mut by_fault: Vec<(faults::Fault, u64)> = counts.lock().unwrap().iter().map(|(f, n)| (*f, *n)).collect();
    by_fault.sort();
    println!("soak: kill and resume ({})", if resume { "moot run --resume" } else { "killed sessions start over" });
    println!("  sessions                     {} (seed {}, {} at once)", outcomes.len(), args.seed, args.lanes);
    println!("  completed                    {completed}");
    println!("  kills (SIGKILL)              {kills}");
    println!("  turns lost                   {}", lost + unresolved + not_redone);
    println!("    completed turns missing vs. an uninterrupted run   {lost}");
    println!("    started, never resolved                            {unresolved}");
    println!("    abandoned, never asked again                       {not_redone}");
    println!("  turns duplicated             {}", duplicated + extra_turns);
    println!("    a turn number completed twice                      {duplicated}");
    println!("    completed turns beyond an uninterrupted run        {extra_turns}");
    println!("  turns abandoned and redone   {}", abandoned - not_redone);
    println!("  results differing from the uninterrupted run         {different}");
    println!("  seq repeats or gaps          {seq_faults}");
    println!("  lines the reader refused     {unreadable}");
    println!("  panics                       {panics}");
    println!(
        "  server requests              {requests} ({base_requests} for the same sessions uninterrupted: {} extra)",
        requests as i64 - base_requests as i64
    );
    println!(
        "  faults served                {}",
        by_fault.iter().map(|(f, n)| format!("{} {n}", f.name())).collect::<Vec<_>>().join(", ")
    );
    println!("  wall time                    {:.0} s", wall.as_secs_f64());
    if !errors.is_empty() {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for e in &errors {
            *seen.entry(e.split_once(": ").map_or(e.as_str(), |(_, r)| r)).or_insert(0) += 1;
        }
        println!("  attempts that ended in an error: {}", errors.len());
        for (e, n) in seen {
            println!("    {n} × {e}");
        }
    }
}
