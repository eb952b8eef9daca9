//! Saved states of long system prompts: read once, written to a file,
//! loaded in milliseconds by a later request or run, in the cache
//! directory (see *Cache location* in `docs/local-model.md`).

use std::collections::HashSet;
use std::sync::Condvar;

use super::*;

/// Saved key/value states of long system prompts, one file per prompt, named
/// by a hash of the model file's identity and the prompt's tokens.
#[derive(Clone)]
pub(in crate::provider::local) struct PromptStates {
    pub(in crate::provider::local) dir: PathBuf,
    /// The model file (path, size, modification time), moot's version,
    /// whose llama.cpp wrote the state, and whether flash attention was on
    /// (the cache's layout differs).
    pub(in crate::provider::local) model: String,
    /// The states an engine of this process is reading now (see
    /// [`PromptStates::claim`]), shared by all engines.
    pub(in crate::provider::local) reading: Arc<(Mutex<HashSet<PathBuf>>, Condvar)>,
}

/// An engine's claim on the state at a path: while it is held, no other
/// engine of the process reads that system prompt (see
/// [`PromptStates::claim`]).
pub(in crate::provider::local) struct Claim {
    reading: Arc<(Mutex<HashSet<PathBuf>>, Condvar)>,
    path: PathBuf,
}

impl Drop for Claim {
    fn drop(&mut self) {
        let (set, changed) = &*self.reading;
        set.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.path);
        changed.notify_all();
    }
}

impl PromptStates {
    /// States for `model_path`, with or without flash attention, in a
    /// context for `engines` (their layouts differ: a state saved in one
    /// does not load in another).
    pub(in crate::provider::local) fn new(
        dir: PathBuf,
        model_path: &Path,
        (flash_attention, engines): (bool, usize),
    ) -> Option<Self> {
        let meta = std::fs::metadata(model_path).ok()?;
        let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        let model = format!(
            "{} {} {:?} moot {}{} {engines} engines",
            model_path.display(),
            meta.len(),
            modified.map(|d| d.as_nanos()),
            env!("CARGO_PKG_VERSION"),
            if flash_attention { " flash attention" } else { "" }
        );
        Some(Self { dir, model, reading: Arc::default() })
    }

    /// Claims the state at `path` for reading it, first waiting while
    /// another engine of the process holds it: engines that start together
    /// with the same system prompt and no saved state (the first run of a
    /// panel) would each read it, when one can read and save it and the
    /// others load it in milliseconds. Gives up waiting after
    /// [`CLAIM_PATIENCE`] and reads it too.
    pub(in crate::provider::local) fn claim(&self, path: &Path) -> Claim {
        let (set, changed) = &*self.reading;
        let set = set.lock().unwrap_or_else(|p| p.into_inner());
        let (mut set, _) =
            changed.wait_timeout_while(set, CLAIM_PATIENCE, |s| s.contains(path)).unwrap_or_else(|p| p.into_inner());
        set.insert(path.to_path_buf());
        Claim { reading: self.reading.clone(), path: path.to_path_buf() }
    }

    pub(in crate::provider::local) fn path(&self, tokens: &[LlamaToken]) -> PathBuf {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        hash.update(self.model.as_bytes());
        for t in tokens {
            hash.update(t.0.to_le_bytes());
        }
        self.dir.join(format!("{:x}.state", hash.finalize()))
    }

    /// Removes all but the newest [`SAVED_PROMPTS_KEPT`] states.
    pub(in crate::provider::local) fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        let mut states: Vec<(std::time::SystemTime, PathBuf)> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "state"))
            .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
            .collect();
        states.sort_by_key(|s| std::cmp::Reverse(s.0));
        for (_, path) in states.into_iter().skip(SAVED_PROMPTS_KEPT) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// How long an engine waits for another that is reading the same system
/// prompt, to load its saved state rather than read it too (see
/// [`PromptStates::claim`]): far longer than a system prompt takes to read.
pub(in crate::provider::local) const CLAIM_PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

impl ModelContext<'_, '_> {
    /// Loads the saved state of `prefix`, at `path`, into the sequence in
    /// use, replacing what it held. A state that cannot be loaded or holds
    /// other tokens is deleted.
    pub(in crate::provider::local) fn load_state(&mut self, path: &Path, prefix: &[LlamaToken]) -> bool {
        if !path.exists() {
            return false;
        }
        let seq = self.current.seq;
        let mut ctx = self.shared.lock();
        let _ = ctx.kv_cache_seq_rm(seq, None, None);
        self.current.cached.clear();
        match ctx.state_seq_load_file(path, seq, prefix.len()) {
            Ok((tokens, _)) if tokens == prefix => {
                self.current.cached = tokens;
                true
            }
            outcome => {
                tracing::warn!("local model: dropping the saved prompt state {} ({:?})", path.display(), outcome.err());
                let _ = ctx.kv_cache_seq_rm(seq, None, None);
                let _ = std::fs::remove_file(path);
                false
            }
        }
    }

    /// Saves the state of the sequence in use (a system prompt just read)
    /// at `path`: written under a temporary name, then renamed, so that a
    /// reader never sees half a file.
    pub(in crate::provider::local) fn save_state(&self, path: &Path) {
        let Some(states) = &self.states else { return };
        if path.exists() || std::fs::create_dir_all(&states.dir).is_err() {
            return;
        }
        // Unique among processes and among this process's engines.
        let partial = path.with_extension(format!("partial-{}-{:?}", std::process::id(), std::thread::current().id()));
        let saved = self.shared.lock().state_seq_save_file(&partial, self.current.seq, &self.current.cached);
        match saved {
            Ok(_) if std::fs::rename(&partial, path).is_ok() => states.prune(),
            outcome => {
                tracing::warn!(
                    "local model: cannot save the prompt state in {}: {:?}",
                    states.dir.display(),
                    outcome.err()
                );
                let _ = std::fs::remove_file(&partial);
            }
        }
    }
}
