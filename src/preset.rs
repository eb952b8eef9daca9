//! Which defaults a protocol's settings took in a run, and where a run
//! departs from its protocol's paper: a panel resolves them, a session log
//! records them.

use serde::{Deserialize, Serialize};

/// Which defaults a protocol's settings took in a run (`[protocol] preset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// moot's defaults, tuned for small local models and speed; the run's
    /// header and log list where they depart from the paper.
    #[default]
    Moot,
    /// Every setting as the protocol's paper specifies it.
    Paper,
}

impl Preset {
    pub fn as_str(self) -> &'static str {
        match self {
            Preset::Moot => "moot",
            Preset::Paper => "paper",
        }
    }
}

/// A setting whose value in a run is not the one its protocol's paper
/// specifies (values as a panel file writes them: `"window"`, `14`, `true`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Departure {
    /// The `[protocol]` setting, or a panel field such as `consensus.rule`.
    pub setting: String,
    /// Its value in the run.
    pub value: String,
    /// The paper's.
    pub paper: String,
}

impl std::fmt::Display for Departure {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{} = {} (paper: {})", self.setting, self.value, self.paper)
    }
}

/// The run header's line on its preset: `preset paper: as the paper
/// specifies`, or the preset and every setting that departs from the paper.
pub fn preset_line(preset: Preset, departures: &[Departure]) -> String {
    if departures.is_empty() {
        return format!("preset {}: every setting as the paper specifies", preset.as_str());
    }
    let list: Vec<String> = departures.iter().map(Departure::to_string).collect();
    format!("preset {}; departs from the paper: {}", preset.as_str(), list.join(", "))
}
