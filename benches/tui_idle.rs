//! Idle cost of the screen: the real binary in a pseudo-terminal, showing a
//! finished session (a replay played to its end) and then paused, measured
//! from the kernel's CPU accounting of the process over 10 s.
//! Target: under 1% of one core.
//!
//! `cargo bench --bench tui_idle` (Linux: reads /proc).

use std::io::Read;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc/PID/stat");
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th fields.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn main() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/sessions/examples/maj-eval-two-groups.jsonl");
    let pty = native_pty_system();
    let pair = pty.openpty(PtySize { rows: 60, cols: 200, pixel_width: 0, pixel_height: 0 }).expect("open a pty");
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_moot"));
    cmd.args(["replay", example, "--speed", "32"]);
    cmd.env("TERM", "xterm-256color");
    let mut child = pair.slave.spawn_command(cmd).expect("start moot");
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().expect("pty reader");
    // Keep the terminal drained, as a real one would be, and keep what it shows.
    let screen = std::sync::Arc::new(std::sync::Mutex::new(vt100::Parser::new(60, 200, 0)));
    let shown = screen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 16384];
        while let Ok(n @ 1..) = reader.read(&mut buf) {
            shown.lock().unwrap().process(&buf[..n]);
        }
    });
    let pid = child.process_id().expect("pid");
    // Let the replay reach its end (a few seconds at ×32) and settle.
    std::thread::sleep(Duration::from_secs(6));
    let text = screen.lock().unwrap().screen().contents();
    assert!(text.contains("REPLAY") && text.contains("DONE"), "the finished replay is not on screen:\n{text}");
    let ticks_per_second = 100.0; // USER_HZ on Linux
    let start_ticks = cpu_ticks(pid);
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(10));
    let used = (cpu_ticks(pid) - start_ticks) as f64 / ticks_per_second;
    let share = used / started.elapsed().as_secs_f64() * 100.0;
    let _ = child.kill();
    println!("tui_idle/finished_session_open: {share:.2}% of one core over 10 s (target < 1%)");
    if share >= 1.0 {
        eprintln!("idle CPU above target");
        std::process::exit(1);
    }
}
