//! Evaluation steps kept between runs of a panel: one small JSON file per
//! (task, dimension definition, provider and model), so that every item of a
//! panel is scored with the same steps and they are written once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::panel::{Dimension, Panel};
use crate::session::event::ModelRef;

/// What is kept for one dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedSteps {
    pub steps: String,
    /// The person who last edited them; `None` when the judge wrote them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
}

pub struct StepsCache {
    dir: PathBuf,
}

impl StepsCache {
    pub fn new(dir: &Path) -> Self {
        Self { dir: dir.to_path_buf() }
    }

    /// Where steps are kept when no folder is given: `steps/` in
    /// `MOOT_CACHE_DIR` when set, else in the platform cache directory.
    pub fn default_dir() -> PathBuf {
        if let Some(dir) = std::env::var_os("MOOT_CACHE_DIR").filter(|d| !d.is_empty()) {
            return PathBuf::from(dir).join("steps");
        }
        directories::ProjectDirs::from("", "", "moot")
            .map(|d| d.cache_dir().join("steps"))
            .unwrap_or_else(|| PathBuf::from(".moot-cache").join("steps"))
    }

    fn path(&self, panel: &Panel, dimension: &Dimension, model: &ModelRef) -> PathBuf {
        let material = serde_json::json!({
            "task": crate::engine::prompts::task_text(panel),
            "scale": [panel.scale.min, panel.scale.max],
            "key": dimension.key,
            "name": dimension.name,
            "description": dimension.description.trim(),
            "provider": model.provider,
            "model": model.model,
        });
        let key = hex::encode(Sha256::digest(material.to_string().as_bytes()));
        self.dir.join(format!("{}.json", &key[..32]))
    }

    /// Held while one session of this process looks up, writes and keeps a
    /// dimension's steps, so that sessions running at once (`moot eval`)
    /// write them once and all use the same.
    pub async fn lock(
        &self,
        panel: &Panel,
        dimension: &Dimension,
        model: &ModelRef,
    ) -> tokio::sync::OwnedMutexGuard<()> {
        static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>> = OnceLock::new();
        let lock = LOCKS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(self.path(panel, dimension, model))
            .or_default()
            .clone();
        lock.lock_owned().await
    }

    pub fn get(&self, panel: &Panel, dimension: &Dimension, model: &ModelRef) -> Option<CachedSteps> {
        let bytes = std::fs::read(self.path(panel, dimension, model)).ok()?;
        serde_json::from_slice::<CachedSteps>(&bytes).ok().filter(|c| !c.steps.trim().is_empty())
    }

    /// Keep `steps`; a failure to write only costs writing them again next time.
    pub fn put(&self, panel: &Panel, dimension: &Dimension, model: &ModelRef, steps: &CachedSteps) {
        let path = self.path(panel, dimension, model);
        let tmp = path.with_extension("tmp");
        let written = std::fs::create_dir_all(&self.dir)
            .and_then(|()| std::fs::write(&tmp, serde_json::to_vec_pretty(steps).unwrap_or_default()))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            tracing::warn!("could not keep evaluation steps in {}: {e}", self.dir.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_kept_per_definition_and_model() {
        let dir = tempfile::tempdir().unwrap();
        let cache = StepsCache::new(dir.path());
        let panel = crate::testkit::panel(crate::panel::Protocol::GEval, &[("Judge", &["Ann"])]);
        let model = ModelRef { provider: "p".into(), model: "m".into() };
        let d = &panel.dimensions[0];
        assert_eq!(cache.get(&panel, d, &model), None);
        let steps = CachedSteps { steps: "1. Read.".into(), author: None };
        cache.put(&panel, d, &model, &steps);
        assert_eq!(cache.get(&panel, d, &model), Some(steps));
        let mut changed = d.clone();
        changed.description = "Something else".into();
        assert_eq!(cache.get(&panel, &changed, &model), None, "a new definition needs new steps");
        let other = ModelRef { provider: "p".into(), model: "other".into() };
        assert_eq!(cache.get(&panel, d, &other), None);
    }
}
