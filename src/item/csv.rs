//! Items in CSV: the columns a header names, and each row read as an item.

use std::collections::BTreeMap;

use super::{Candidate, Collector, Item, ItemsError};

/// What a CSV column holds.
pub(super) enum Column {
    Id,
    Content,
    Context,
    Reference,
    Human(String),
    /// `human_raters.<rater>.<dimension>`.
    Rater(String, String),
    Candidate(String),
    Ignored,
}

impl Column {
    pub(super) fn from_header(name: &str) -> Column {
        let name = name.trim();
        let suffix = |prefix: &str| {
            [".", "_"]
                .iter()
                .find_map(|sep| name.strip_prefix(&format!("{prefix}{sep}")))
                .filter(|rest| !rest.is_empty())
                .map(str::to_string)
        };
        match name {
            "id" => Column::Id,
            "content" => Column::Content,
            "context" => Column::Context,
            "reference" => Column::Reference,
            _ => {
                if let Some(rest) = name.strip_prefix("human_raters.") {
                    match rest.split_once('.') {
                        Some((rater, dim)) if !rater.is_empty() && !dim.is_empty() => {
                            Column::Rater(rater.to_string(), dim.to_string())
                        }
                        _ => Column::Ignored,
                    }
                } else if let Some(dim) = suffix("human") {
                    Column::Human(dim)
                } else if let Some(id) = suffix("candidate") {
                    Column::Candidate(id)
                } else {
                    Column::Ignored
                }
            }
        }
    }
}

pub(super) fn parse_csv(text: &str, source: &str, collector: &mut Collector) -> Result<(), ItemsError> {
    let malformed =
        |line: usize, message: String| ItemsError::Malformed { file: source.to_string(), line, column: 1, message };
    let mut reader = csv::ReaderBuilder::new().flexible(true).has_headers(true).from_reader(text.as_bytes());
    let headers = reader.headers().map_err(|e| malformed(1, format!("cannot read the CSV header: {e}")))?.clone();
    let columns: Vec<Column> = headers.iter().map(Column::from_header).collect();
    for required in ["id", "content"] {
        if !headers.iter().any(|h| h.trim() == required) {
            let found = headers.iter().collect::<Vec<_>>().join(", ");
            return Err(malformed(1, format!("the CSV header has no `{required}` column (columns: {found})")));
        }
    }
    let open_at_end = unclosed_quote(text);
    let mut records = reader.records().peekable();
    while let Some(record) = records.next() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, |p| row_line(text, p));
                if matches!(e.kind(), csv::ErrorKind::Io(_)) {
                    return Err(malformed(line, format!("cannot read CSV: {e}")));
                }
                collector.push(line, Err(format!("malformed CSV row: {e}")));
                continue;
            }
        };
        let line = record.position().map_or(0, |p| row_line(text, p));
        if record.iter().all(|cell| cell.trim().is_empty()) {
            continue;
        }
        // A field left open runs to the end of the file: it is the last row's.
        if let Some(quote_line) = open_at_end.filter(|_| records.peek().is_none()) {
            let message = format!(
                "a quoted field opened on line {quote_line} is never closed: the rest of the file was read into it"
            );
            collector.push(line, Err(message));
            continue;
        }
        let entry = if record.len() != headers.len() {
            Err(format!("row has {} fields, the header has {}", record.len(), headers.len()))
        } else {
            item_from_csv(&columns, &record)
        };
        collector.push(line, entry);
    }
    Ok(())
}

/// The line a row starts on. The `csv` crate gives the position where it
/// began reading the row, before the blank lines it skips.
fn row_line(text: &str, position: &csv::Position) -> usize {
    let rest = text.get(position.byte() as usize..).unwrap_or("");
    let blank = rest.chars().take_while(|c| matches!(c, '\n' | '\r')).filter(|&c| c == '\n').count();
    position.line() as usize + blank
}

/// The line where the quoted field that `text` ends inside opened, if it
/// ends inside one. The `csv` crate reads such a field to the end of the
/// file without complaint, so one stray mark would make the rest of a file
/// one item's cell. Read as the crate reads it: a mark opens a quoted field
/// only at a field's start, a doubled mark inside one is a literal mark,
/// and a mark in an unquoted field is a literal.
pub(super) fn unclosed_quote(text: &str) -> Option<usize> {
    #[derive(Clone, Copy)]
    enum State {
        FieldStart,
        Unquoted,
        Quoted,
        QuoteInQuoted,
    }
    let (mut state, mut line, mut quote_line) = (State::FieldStart, 1, 1);
    for c in text.chars() {
        state = match (state, c) {
            (State::Quoted, '"') => State::QuoteInQuoted,
            (State::Quoted, _) => State::Quoted,
            (State::FieldStart, '"') => {
                quote_line = line;
                State::Quoted
            }
            (State::QuoteInQuoted, '"') => State::Quoted,
            (_, ',' | '\n') => State::FieldStart,
            _ => State::Unquoted,
        };
        if c == '\n' {
            line += 1;
        }
    }
    matches!(state, State::Quoted).then_some(quote_line)
}

pub(super) fn item_from_csv(columns: &[Column], record: &csv::StringRecord) -> Result<Item, String> {
    let (mut id, mut content, mut context, mut reference) = (None, None, None, None);
    let mut human = BTreeMap::new();
    let mut raters: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    let mut candidates = Vec::new();
    let mut bad_score = None;
    for (column, cell) in columns.iter().zip(record.iter()) {
        let present = !cell.trim().is_empty();
        match column {
            Column::Id if present => id = Some(cell.trim().to_string()),
            Column::Content if present => content = Some(cell.to_string()),
            Column::Context if present => context = Some(cell.to_string()),
            Column::Reference if present => reference = Some(cell.to_string()),
            Column::Human(dim) if present => match cell.trim().parse::<f64>() {
                Ok(x) if x.is_finite() => {
                    human.insert(dim.clone(), x);
                }
                _ => {
                    bad_score.get_or_insert_with(|| format!("human score for `{dim}` is not a number: \"{cell}\""));
                }
            },
            Column::Rater(rater, dim) if present => match cell.trim().parse::<f64>() {
                Ok(x) if x.is_finite() => {
                    raters.entry(rater.clone()).or_default().insert(dim.clone(), x);
                }
                _ => {
                    bad_score
                        .get_or_insert_with(|| format!("`human_raters.{rater}.{dim}` is not a number: \"{cell}\""));
                }
            },
            Column::Candidate(cid) if present => candidates.push(Candidate { id: cid.clone(), text: cell.to_string() }),
            _ => {}
        }
    }
    let id = id.ok_or("missing `id`")?;
    let content = content.ok_or_else(|| format!("item \"{id}\": missing `content`"))?;
    if let Some(e) = bad_score {
        return Err(format!("item \"{id}\": {e}"));
    }
    if !human.is_empty() && !raters.is_empty() {
        return Err(format!("item \"{id}\": has both `human` and `human_raters` scores; give one of them"));
    }
    Ok(Item {
        id,
        content,
        context,
        reference,
        human: (!human.is_empty()).then_some(human),
        human_raters: raters,
        candidates: (!candidates.is_empty()).then_some(candidates),
        human_labels: Vec::new(),
    })
}
