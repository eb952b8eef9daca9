//! Items to evaluate, read from JSONL, JSON or CSV files (see `docs/items.md`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One candidate output, for pairwise work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub id: String,
    pub text: String,
}

/// One thing to evaluate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub id: String,
    /// The generated text being judged.
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Human ratings by dimension key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human: Option<BTreeMap<String, f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<Vec<Candidate>>,
}
