//! Reading the builder's documents: PDF, Markdown and plain text, split into
//! paragraphs, with reference lists and related-work sections left out where
//! their headings say what they are.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Why a document could not be read. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum DocError {
    #[error("{path}: no such file")]
    Missing { path: PathBuf },
    #[error("{path}: cannot read: {error}")]
    Read { path: PathBuf, error: std::io::Error },
    #[error("{path}: not a readable PDF: {reason}")]
    Pdf { path: PathBuf, reason: String },
    #[error("{path}: not UTF-8 text (a PDF needs the .pdf extension)")]
    NotText { path: PathBuf },
    #[error("{path}: no text to read{hint}")]
    Empty { path: PathBuf, hint: &'static str },
}

/// What kind of file a document is, from its extension (and, for PDF, its header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocKind {
    Pdf,
    Markdown,
    Text,
}

/// One paragraph of a document, numbered from 1 in reading order (skipped
/// sections keep their numbers, so a paragraph's number is its place in the file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Paragraph {
    pub number: usize,
    pub text: String,
}

/// A document as the builder reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// Short name used in prompts, logs and panel comments (the file name).
    pub name: String,
    pub path: PathBuf,
    pub kind: DocKind,
    /// Paragraphs kept for extraction.
    pub paragraphs: Vec<Paragraph>,
    /// Headings of the sections left out, with how many paragraphs each held.
    pub skipped: Vec<(String, usize)>,
}

impl Document {
    /// The kept text, paragraphs separated by blank lines.
    pub fn text(&self) -> String {
        self.paragraphs.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("\n\n")
    }

    pub fn chars(&self) -> usize {
        self.paragraphs.iter().map(|p| p.text.chars().count()).sum()
    }

    pub fn paragraph(&self, number: usize) -> Option<&Paragraph> {
        self.paragraphs.iter().find(|p| p.number == number)
    }
}

/// A run of consecutive paragraphs sent to the model in one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk<'a> {
    /// 1-based, within its document.
    pub index: usize,
    pub paragraphs: &'a [Paragraph],
}

impl Chunk<'_> {
    pub fn text(&self) -> String {
        self.paragraphs.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("\n\n")
    }
}

/// Read a document from disk.
pub fn read_document(path: &Path) -> Result<Document, DocError> {
    if !path.exists() {
        return Err(DocError::Missing { path: path.to_path_buf() });
    }
    let bytes = std::fs::read(path).map_err(|error| DocError::Read { path: path.to_path_buf(), error })?;
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let kind = if ext == "pdf" || bytes.starts_with(b"%PDF-") {
        DocKind::Pdf
    } else if ext == "md" || ext == "markdown" {
        DocKind::Markdown
    } else {
        DocKind::Text
    };
    let text = match kind {
        DocKind::Pdf => pdf_text(&bytes).map_err(|reason| DocError::Pdf { path: path.to_path_buf(), reason })?,
        _ => String::from_utf8(bytes).map_err(|_| DocError::NotText { path: path.to_path_buf() })?,
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string());
    let doc = from_text(&name, path, kind, &text);
    if doc.paragraphs.is_empty() {
        let hint = if kind == DocKind::Pdf { " (a scanned PDF holds images, not text)" } else { "" };
        return Err(DocError::Empty { path: path.to_path_buf(), hint });
    }
    Ok(doc)
}

/// The text of a PDF. The extractor may panic on malformed files; that is
/// reported as an unreadable document, never a crash.
pub fn pdf_text(bytes: &[u8]) -> Result<String, String> {
    let owned = bytes.to_vec();
    match std::panic::catch_unwind(move || pdf_extract::extract_text_from_mem(&owned)) {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the PDF could not be parsed".into()),
    }
}

/// Headings that open a section the builder leaves out: reference lists and
/// surveys of other work say little about the stakeholders themselves.
const SKIPPED_HEADINGS: &[&str] = &[
    "references",
    "reference",
    "bibliography",
    "works cited",
    "literature cited",
    "related work",
    "related works",
    "background and related work",
    "related work and background",
    "acknowledgements",
    "acknowledgments",
    "acknowledgement",
    "acknowledgment",
];

/// A heading's words without numbering, markup or trailing punctuation:
/// `## 2. Related Work` → `related work`.
fn heading_words(line: &str) -> String {
    let t = line.trim().trim_start_matches('#').trim();
    let t = t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ' ' || c == '\t');
    let t = t.trim_matches(|c: char| c == '*' || c == '_' || c == ':' || c == '.' || c.is_whitespace());
    t.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Whether a paragraph is a heading: a Markdown heading, or one short line
/// without a final full stop (PDF and plain text).
fn is_heading(par: &str, kind: DocKind) -> bool {
    let t = par.trim();
    if t.starts_with('#') {
        return true;
    }
    if kind == DocKind::Markdown {
        return false;
    }
    !t.contains('\n') && t.chars().count() <= 60 && !t.ends_with(['.', '?', '!', ',', ';', '"', '”'])
}

/// Split text into paragraphs (blank lines between them), join the lines of
/// each (undoing end-of-line hyphenation) and leave out the sections whose
/// heading is in [`SKIPPED_HEADINGS`] up to the next heading.
pub fn from_text(name: &str, path: &Path, kind: DocKind, text: &str) -> Document {
    let text = text.replace("\r\n", "\n").replace('\u{c}', "\n\n");
    let mut paragraphs = Vec::new();
    let mut skipped: Vec<(String, usize)> = Vec::new();
    let mut skipping = false;
    let mut number = 0;
    for raw in text.split("\n\n") {
        let raw = raw.trim_matches('\n');
        if raw.trim().is_empty() {
            continue;
        }
        number += 1;
        // A skipped heading on the first line of a paragraph (PDF text often
        // has no blank line after "References") skips the paragraph too.
        let first = raw.trim().lines().next().unwrap_or("");
        if raw.trim().contains('\n')
            && is_heading(first, kind)
            && SKIPPED_HEADINGS.contains(&heading_words(first).as_str())
        {
            skipping = true;
            skipped.push((first.trim().trim_start_matches('#').trim().to_string(), 1));
            continue;
        }
        if is_heading(raw, kind) {
            let words = heading_words(raw);
            if SKIPPED_HEADINGS.contains(&words.as_str()) {
                skipping = true;
                skipped.push((raw.trim().trim_start_matches('#').trim().to_string(), 0));
                continue;
            }
            if raw.trim().starts_with('#') || kind != DocKind::Markdown {
                skipping = false;
            }
        }
        if skipping {
            if let Some(last) = skipped.last_mut() {
                last.1 += 1;
            }
            continue;
        }
        let joined = join_lines(raw);
        if !joined.is_empty() {
            paragraphs.push(Paragraph { number, text: joined });
        }
    }
    Document { name: name.to_string(), path: path.to_path_buf(), kind, paragraphs, skipped }
}

/// One paragraph's lines as one line: a line ending in a hyphen after a
/// letter joins the next without a space.
fn join_lines(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for line in raw.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if out.ends_with('-') && out.chars().rev().nth(1).is_some_and(char::is_alphabetic) {
            out.pop();
        } else if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(line);
    }
    out
}

/// Consecutive paragraphs of at most `max_chars` characters together (a
/// longer paragraph is a chunk of its own).
pub fn chunks(doc: &Document, max_chars: usize) -> Vec<Chunk<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut size = 0;
    for (i, p) in doc.paragraphs.iter().enumerate() {
        let len = p.text.len() + 2;
        if i > start && size + len > max_chars {
            out.push(Chunk { index: out.len() + 1, paragraphs: &doc.paragraphs[start..i] });
            start = i;
            size = 0;
        }
        size += len;
    }
    if start < doc.paragraphs.len() {
        out.push(Chunk { index: out.len() + 1, paragraphs: &doc.paragraphs[start..] });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(kind: DocKind, text: &str) -> Document {
        from_text("d", Path::new("d"), kind, text)
    }

    #[test]
    fn markdown_references_and_related_work_are_left_out() {
        let d = doc(
            DocKind::Markdown,
            "# Study\n\nTeachers said\nthey ask why-ques-\ntions.\n\n## 2 Related Work\n\nOthers found X.\n\nAnd Y.\n\n## Findings\n\nParents worry.\n\n## References\n\nSmith (2020).",
        );
        let texts: Vec<&str> = d.paragraphs.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["# Study", "Teachers said they ask why-questions.", "## Findings", "Parents worry."]);
        assert_eq!(d.skipped, vec![("2 Related Work".to_string(), 2), ("References".to_string(), 1)]);
        assert_eq!(d.paragraphs[3].number, 7);
    }

    #[test]
    fn plain_text_headings_are_short_lines() {
        let d = doc(DocKind::Text, "Intro line.\n\nREFERENCES\n\nA. B. 2020. Title.\n\nAppendix\n\nKept.");
        let texts: Vec<&str> = d.paragraphs.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["Intro line.", "Appendix", "Kept."]);
    }

    #[test]
    fn a_heading_on_the_first_line_of_a_paragraph_counts() {
        let d =
            doc(DocKind::Text, "Findings here.\n\nReferences\nSmith, A. 2020. Title.\nJones, B. 2021.\n\nMore refs.");
        let texts: Vec<&str> = d.paragraphs.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["Findings here."]);
        assert_eq!(d.skipped, vec![("References".to_string(), 2)]);
    }

    #[test]
    fn chunks_hold_whole_paragraphs() {
        let d = doc(DocKind::Text, "aaaa aaaa.\n\nbbbb bbbb.\n\ncccc cccc.");
        let c = chunks(&d, 25);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].paragraphs.len(), 2);
        assert_eq!(c[1].index, 2);
        assert_eq!(chunks(&d, 1).len(), 3);
    }

    #[test]
    fn a_missing_file_is_named() {
        let e = read_document(Path::new("/nonexistent/teachers.pdf")).unwrap_err();
        assert_eq!(e.to_string(), "/nonexistent/teachers.pdf: no such file");
    }
}
