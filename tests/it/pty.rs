//! The binary in a real pseudo-terminal (80×24), its output kept by a
//! terminal emulator, for the tests that drive a screen.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

/// The binary running in an 80×24 pseudo-terminal, its output fed to a
/// terminal emulator.
pub(crate) struct Moot {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    parser: Arc<Mutex<vt100::Parser>>,
    /// Feeds the program's output to the parser until the terminal closes.
    reader: std::thread::JoinHandle<()>,
}

impl Moot {
    pub(crate) fn spawn(cmd: CommandBuilder) -> Self {
        let pair =
            native_pty_system().openpty(PtySize { rows: 24, cols: 80, pixel_width: 0, pixel_height: 0 }).unwrap();
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let parser = Arc::new(Mutex::new(vt100::Parser::new(24, 80, 0)));
        let p2 = parser.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                p2.lock().unwrap().process(&buf[..n]);
            }
        });
        Self { child, writer, parser, reader }
    }

    pub(crate) fn screen(&self) -> Screen {
        Screen { parser: self.parser.clone() }
    }

    /// What the screen shows now.
    pub(crate) fn text(&self) -> String {
        self.screen().text()
    }

    /// Wait (up to 30 s) until the screen shows `what`.
    pub(crate) fn wait_for(&self, what: &str) {
        self.screen().wait_for(what, Duration::from_secs(30));
    }

    /// The process id of the program.
    pub(crate) fn pid(&self) -> u32 {
        self.child.process_id().expect("a pid")
    }

    pub(crate) fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// The exit status, once the process has ended and everything it wrote
    /// is on the screen (panics after `timeout`).
    pub(crate) fn wait_exit(&mut self, timeout: Duration) -> portable_pty::ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                while !self.reader.is_finished() {
                    assert!(Instant::now() < deadline, "moot's output never ended; screen:\n{}", self.screen().text());
                    std::thread::sleep(Duration::from_millis(10));
                }
                return s;
            }
            assert!(Instant::now() < deadline, "moot did not exit; screen:\n{}", self.screen().text());
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

pub(crate) struct Screen {
    parser: Arc<Mutex<vt100::Parser>>,
}

impl Screen {
    /// Whether the program is drawing on the alternate (full) screen.
    pub(crate) fn alternate(&self) -> bool {
        self.parser.lock().unwrap().screen().alternate_screen()
    }

    pub(crate) fn text(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }
    pub(crate) fn wait_for(&self, what: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.text().contains(what) {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("\"{what}\" never appeared on the screen:\n{}", self.text());
    }
}
