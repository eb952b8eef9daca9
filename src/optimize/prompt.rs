//! The judge prompt as data: the panel text a person tunes (`task` and the
//! `[judge]` rubric, guidance and examples), how it is shown to the rewrite
//! model and read back from its reply, and word-level diffs between versions.

use serde::{Deserialize, Serialize};
use similar::{ChangeTag, TextDiff};

use crate::panel::{JudgeText, Panel};

/// The tunable text of a judge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JudgePrompt {
    pub task: String,
    #[serde(default)]
    pub rubric: String,
    #[serde(default)]
    pub guidance: String,
    #[serde(default)]
    pub examples: String,
}

/// The section headings of [`JudgePrompt::render`], in order.
pub const SECTIONS: [&str; 4] = ["## Task", "## Rubric", "## Guidance", "## Examples"];

impl JudgePrompt {
    /// The panel's current judge text.
    pub fn of(panel: &Panel) -> Self {
        Self {
            task: panel.task.trim().to_string(),
            rubric: panel.judge.rubric.trim().to_string(),
            guidance: panel.judge.guidance.trim().to_string(),
            examples: panel.judge.examples.trim().to_string(),
        }
    }

    /// `panel` with this judge text in place of its own.
    pub fn apply(&self, panel: &Panel) -> Panel {
        let mut p = panel.clone();
        p.task = self.task.clone();
        p.judge =
            JudgeText { rubric: self.rubric.clone(), guidance: self.guidance.clone(), examples: self.examples.clone() };
        p
    }

    /// This prompt with `shots` (an example and its human label each) added
    /// to its examples: the paper's "few-shot prompt" baseline, the initial
    /// prompt plus the examples the sample selection drew.
    pub fn with_examples(&self, shots: &[(&crate::item::Item, f64)], dimension: &str) -> Self {
        use std::fmt::Write;
        let mut examples = self.examples.trim().to_string();
        // Numbered, never named by id: a judge's prompt names no item.
        for (n, (item, label)) in shots.iter().enumerate() {
            if !examples.is_empty() {
                examples.push_str("\n\n");
            }
            let _ = write!(
                examples,
                "Example {} (people's `{dimension}`: {}):",
                n + 1,
                crate::engine::prompts::fmt_num(*label)
            );
            for (name, text) in [("Context", item.context.as_deref()), ("Reference", item.reference.as_deref())] {
                if let Some(t) = text.map(str::trim).filter(|t| !t.is_empty()) {
                    let _ = write!(examples, "\n{name}: {t}");
                }
            }
            let _ = write!(examples, "\nText: {}", item.content.trim());
        }
        Self { examples, ..self.clone() }
    }

    fn parts(&self) -> [&str; 4] {
        [&self.task, &self.rubric, &self.guidance, &self.examples]
    }

    /// The four sections under their headings (empty ones included), as the
    /// rewrite model sees them and as a person edits them.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for (heading, text) in SECTIONS.iter().zip(self.parts()) {
            if !s.is_empty() {
                s.push_str("\n\n");
            }
            s.push_str(heading);
            s.push('\n');
            s.push_str(text.trim());
        }
        s
    }

    /// Read a prompt back from text in the form of [`render`](Self::render):
    /// the headings on their own lines (any case, `#` count free), text before
    /// the first heading ignored. Fails, with the reason, when there is no
    /// task section or it is empty.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parts: [Option<String>; 4] = Default::default();
        let mut current: Option<usize> = None;
        for line in text.lines() {
            let trimmed = line.trim();
            let heading = trimmed.starts_with('#').then(|| trimmed.trim_start_matches('#').trim().to_lowercase());
            if let Some(h) = heading
                && let Some(i) = SECTIONS.iter().position(|s| s.trim_start_matches("## ").eq_ignore_ascii_case(&h))
            {
                if parts[i].is_some() {
                    return Err(format!("the section {} appears twice", SECTIONS[i]));
                }
                parts[i] = Some(String::new());
                current = Some(i);
                continue;
            }
            if let Some(i) = current
                && let Some(p) = parts[i].as_mut()
            {
                p.push_str(line);
                p.push('\n');
            }
        }
        let [task, rubric, guidance, examples] = parts.map(|p| p.map(|t| t.trim().to_string()));
        let task = task.ok_or("the reply has no \"## Task\" section")?;
        if task.is_empty() {
            return Err("the \"## Task\" section is empty".into());
        }
        Ok(Self {
            task,
            rubric: rubric.unwrap_or_default(),
            guidance: guidance.unwrap_or_default(),
            examples: examples.unwrap_or_default(),
        })
    }
}

/// One run of words in a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffPart {
    pub change: Change,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Same,
    Added,
    Removed,
}

/// Word-level diff of two prompts' rendered text, runs of the same kind merged.
pub fn diff(old: &JudgePrompt, new: &JudgePrompt) -> Vec<DiffPart> {
    let (a, b) = (old.render(), new.render());
    let d = TextDiff::from_words(&a, &b);
    let mut out: Vec<DiffPart> = Vec::new();
    for c in d.iter_all_changes() {
        let change = match c.tag() {
            ChangeTag::Equal => Change::Same,
            ChangeTag::Insert => Change::Added,
            ChangeTag::Delete => Change::Removed,
        };
        match out.last_mut() {
            Some(last) if last.change == change => last.text.push_str(c.value()),
            _ => out.push(DiffPart { change, text: c.value().to_string() }),
        }
    }
    out
}

/// Words added and removed between two prompts.
pub fn diff_counts(parts: &[DiffPart]) -> (usize, usize) {
    let words =
        |c: Change| parts.iter().filter(|p| p.change == c).map(|p| p.text.split_whitespace().count()).sum::<usize>();
    (words(Change::Added), words(Change::Removed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt() -> JudgePrompt {
        JudgePrompt {
            task: "Rate the answer.".into(),
            rubric: "1: same meaning.".into(),
            guidance: String::new(),
            examples: "Q: x".into(),
        }
    }

    #[test]
    fn render_and_parse_round_trip() {
        let p = prompt();
        assert_eq!(JudgePrompt::parse(&p.render()).unwrap(), p);
        let chatty = format!("Here is the revision:\n\n{}\n", p.render().replace("## Rubric", "### rubric"));
        assert_eq!(JudgePrompt::parse(&chatty).unwrap(), p);
    }

    #[test]
    fn a_reply_without_a_task_is_a_failure() {
        assert!(JudgePrompt::parse("Just be stricter.").unwrap_err().contains("no \"## Task\""));
        assert!(JudgePrompt::parse("## Task\n\n## Rubric\nx").unwrap_err().contains("empty"));
        assert!(JudgePrompt::parse("## Task\na\n## Task\nb").unwrap_err().contains("twice"));
    }

    #[test]
    fn diff_marks_added_and_removed_words() {
        let old = prompt();
        let mut new = prompt();
        new.task = "Rate the generated answer strictly.".into();
        let parts = diff(&old, &new);
        let added: String =
            parts.iter().filter(|p| p.change == Change::Added).map(|p| p.text.as_str()).collect::<Vec<_>>().join("|");
        assert!(added.contains("generated"), "{parts:?}");
        let (added, removed) = diff_counts(&parts);
        assert!(added >= 2 && removed >= 1, "{parts:?}");
    }
}
