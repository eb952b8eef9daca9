//! The log file. `tracing` events go to a file, never to the terminal, which
//! the live screen owns. `MOOT_LOG` filters them (`warn` by default; for
//! example `moot=debug` or `info,moot::provider=debug`), `MOOT_LOG_FILE`
//! moves the file from its default place in the platform's state directory.

use std::path::PathBuf;
use std::sync::Mutex;

use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

/// The filter for log events: `target=level` pairs and a bare default level.
pub const LOG_ENV: &str = "MOOT_LOG";
/// Where the log is written instead of the default file.
pub const LOG_FILE_ENV: &str = "MOOT_LOG_FILE";
const DEFAULT_FILTER: &str = "warn";

/// The log file: `MOOT_LOG_FILE`, else `moot.log` in the platform's state
/// directory (`~/.local/state/moot` on Linux) or, where there is none, its
/// local data directory.
pub fn log_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(LOG_FILE_ENV).filter(|p| !p.is_empty()) {
        return Some(path.into());
    }
    let dirs = directories::ProjectDirs::from("", "", "moot")?;
    Some(dirs.state_dir().unwrap_or_else(|| dirs.data_local_dir()).join("moot.log"))
}

/// Sends `tracing` events to the log file. A filter that does not parse is
/// reported on stderr and replaced by the default; a file that cannot be
/// opened leaves logging off (the program works the same without it).
pub fn init() {
    let filter = match std::env::var(LOG_ENV) {
        Ok(spec) => spec.parse::<Targets>().unwrap_or_else(|e| {
            eprintln!("moot: {LOG_ENV}={spec:?} is not a log filter ({e}); logging warnings only");
            default_filter()
        }),
        Err(_) => default_filter(),
    };
    let Some(path) = log_path() else { return };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = std::fs::create_dir_all(dir);
    }
    let Ok(file) = std::fs::OpenOptions::new().create(true).append(true).open(&path) else { return };
    let layer = tracing_subscriber::fmt::layer().with_ansi(false).with_writer(Mutex::new(file)).with_filter(filter);
    let _ = tracing_subscriber::registry().with(layer).try_init();
}

fn default_filter() -> Targets {
    DEFAULT_FILTER.parse().unwrap_or_default()
}
