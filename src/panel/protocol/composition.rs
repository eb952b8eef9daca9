//! A composition written in the panel: `kind = "composition"` and one
//! `[[protocol.stage]]` table per stage (see `panel::composition`). Its
//! roles, screen, consensus check and result rule come from its stages; its
//! own settings are those of the prompts every discussion shares. It has no
//! paper, so nothing it does is a departure from one.

use super::maj_eval::{CLAIMS, FIRST_FEEDBACK, PERSONAS, REASONS, STANCE, TURNS};
use super::*;

pub(super) const SPEC: ProtocolSpec = ProtocolSpec {
    protocol: Protocol::Composition,
    id: "composition",
    title: "A composition of stages written in the panel",
    roles: &[],
    settings: &[
        SettingSpec { paper: Paper::Any, ..PERSONAS },
        SettingSpec { paper: Paper::Any, ..STANCE },
        SettingSpec { paper: Paper::Any, ..TURNS },
        SettingSpec { paper: Paper::Any, ..FIRST_FEEDBACK },
        SettingSpec { paper: Paper::Any, ..HISTORY },
        SettingSpec { paper: Paper::Any, ..REPEATS },
        SettingSpec { paper: Paper::Any, ..QUOTES },
        SettingSpec { paper: Paper::Any, ..REASONS },
        SettingSpec { paper: Paper::Any, ..CLAIMS },
    ],
    results: Results::Scores,
    stage_names: STAGES,
    only_when: &[],
    compose: None,
};
