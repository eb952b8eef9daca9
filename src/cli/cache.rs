//! `moot cache stats|clear`: the on-disk response cache.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use crate::provider::cache::ResponseCache;

#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Number of cached responses and their size.
    Stats {
        /// Cache folder (default: MOOT_CACHE_DIR, else the platform cache directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Remove every cached response.
    Clear {
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

pub fn run(command: CacheCommand) -> anyhow::Result<ExitCode> {
    match command {
        CacheCommand::Stats { dir } => {
            let cache = ResponseCache::new(dir.unwrap_or_else(ResponseCache::default_dir));
            let stats = cache.stats()?;
            println!("{}: {} responses, {}", cache.dir().display(), stats.entries, human_bytes(stats.bytes));
        }
        CacheCommand::Clear { dir } => {
            let cache = ResponseCache::new(dir.unwrap_or_else(ResponseCache::default_dir));
            let removed = cache.clear()?;
            println!(
                "{}: removed {} responses ({})",
                cache.dir().display(),
                removed.entries,
                human_bytes(removed.bytes)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    format!("{value:.1} {unit}")
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn sizes() {
        assert_eq!(human_bytes(10), "10 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 * 1024 * 1024), "3.0 MiB");
    }
}
