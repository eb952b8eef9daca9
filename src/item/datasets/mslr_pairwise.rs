//! MSLR-Cochrane pairwise preferences (allenai/mslr-annotated-dataset,
//! `data/Pairwise/annotated_samples/sampleN - AK - Sheet1.tsv`): one sheet
//! per annotator, one row per pair of generated summaries of a review, the
//! annotator's answer to which of A or B reflects the target summary better.

use std::collections::BTreeMap;

use super::{DatasetFormat, SourceFile, TsvRow, first_line, header_positions, tsv_rows};
use crate::item::{Candidate, Collector, Item, ItemsError, ItemsFile};

pub(super) const FORMAT: DatasetFormat = DatasetFormat {
    name: "mslr-pairwise",
    description: "MSLR-Cochrane pairwise preferences (allenai/mslr-annotated-dataset, data/Pairwise/annotated_samples/*.tsv; a folder merges the annotators)",
    several_files: true,
    detect,
    parse,
};

const LEAD: [&str; 6] = ["review_id", "target", "sys_a", "A", "sys_b", "B"];
/// The answer column's header starts so.
const QUESTION: &str = "Which of A or B";

fn detect(text: &str) -> bool {
    let cells: Vec<&str> = first_line(text).split('\t').map(str::trim).collect();
    cells.starts_with(&LEAD) && cells.iter().any(|c| c.starts_with(QUESTION))
}

/// A person's answer: the winning candidate's side, or a tie; none when the
/// row was left unanswered.
fn verdict(cell: &str) -> Result<Option<Side>, String> {
    let a = cell.trim();
    match a {
        "" => Ok(None),
        "A" | "a" => Ok(Some(Side::A)),
        "B" | "b" => Ok(Some(Side::B)),
        _ if a.starts_with("Neither") => Ok(Some(Side::Neither)),
        _ => Err(format!("unknown answer \"{a}\" (A, B or Neither)")),
    }
}

#[derive(Clone, Copy)]
enum Side {
    A,
    B,
    Neither,
}

struct Pair {
    review: String,
    target: String,
    a: Candidate,
    b: Candidate,
    answer: Option<Side>,
}

fn read_row(row: &TsvRow, at: &[usize], columns: &[(&str, &str)], header_len: usize) -> Result<Pair, String> {
    let cell = |i: usize| row.cells.get(at[i]).map(|s| s.trim());
    if let Some(missing) = (0..at.len()).find(|&i| cell(i).is_none()) {
        return Err(format!(
            "the row has {} cells, the header {}: column {} `{}` is missing (a cut line?)",
            row.cells.len(),
            header_len,
            at[missing] + 1,
            columns[missing].0
        ));
    }
    let get = |i: usize| cell(i).unwrap_or("");
    for i in [0, 2, 4] {
        if get(i).is_empty() {
            return Err(format!("column {} `{}` is empty", at[i] + 1, columns[i].0));
        }
    }
    let (review, sys_a, sys_b) = (get(0), get(2), get(4));
    let id = format!("{review}/{sys_a}-{sys_b}");
    let with_id = |e: String| format!("item \"{id}\": {e}");
    if sys_a == sys_b {
        return Err(with_id(format!("`sys_a` and `sys_b` are the same system ({sys_a})")));
    }
    for i in [3, 5] {
        if get(i).is_empty() {
            return Err(with_id(format!("column {} `{}` (a summary) is empty", at[i] + 1, columns[i].0)));
        }
    }
    let answer = verdict(get(6)).map_err(|e| with_id(format!("column {} (the answer): {e}", at[6] + 1)))?;
    Ok(Pair {
        review: review.to_string(),
        target: get(1).to_string(),
        a: Candidate { id: sys_a.to_string(), text: get(3).to_string() },
        b: Candidate { id: sys_b.to_string(), text: get(5).to_string() },
        answer,
    })
}

fn parse(files: &[SourceFile], source: &str) -> Result<ItemsFile, ItemsError> {
    let mut collector = Collector::default();
    // (review, systems in order) → the item's place among the collector's items.
    let mut seen: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    for file in files {
        let rows = tsv_rows(&file.text);
        let Some((header, rows)) = rows.split_first() else { continue };
        let question = header.cells.iter().find(|h| h.trim().starts_with(QUESTION)).map_or(QUESTION, |h| h.trim());
        let columns: Vec<(&str, &str)> = LEAD.iter().map(|c| (*c, "")).chain([(question, "the answer")]).collect();
        let at = header_positions(&header.cells, &columns, &file.name)?;
        // Messages name the sheet when the source is more than it (a folder, a bundled slice).
        let in_file = |m: String| if file.name != source { format!("{}: {m}", file.name) } else { m };
        let mut own: BTreeMap<(String, String, String), usize> = BTreeMap::new();
        for row in rows {
            let pair = match read_row(row, &at, &columns, header.cells.len()) {
                Ok(p) => p,
                Err(e) => {
                    collector.push(row.line, Err(in_file(e)));
                    continue;
                }
            };
            let mut systems = [pair.a.id.clone(), pair.b.id.clone()];
            systems.sort();
            let [first, second] = systems;
            let key = (pair.review.clone(), first, second);
            if let Some(line) = own.get(&key) {
                let m = format!(
                    "the pair {} of {} again (first on line {line}); a rater judges a pair once",
                    pair_name(&pair),
                    pair.review
                );
                collector.push(row.line, Err(in_file(m)));
                continue;
            }
            own.insert(key.clone(), row.line);
            // The label names the winner by its system id, so sheets that
            // show the pair in either order agree.
            let label = pair.answer.map(|side| match side {
                Side::A => pair.a.id.clone(),
                Side::B => pair.b.id.clone(),
                Side::Neither => "tie".to_string(),
            });
            match seen.get(&key) {
                Some(&pos) => collector.items[pos].human_labels.extend(label),
                None => {
                    let mut item = Item::new(format!("{}/{}", pair.review, pair_name(&pair)), "");
                    item.reference = (!pair.target.is_empty()).then_some(pair.target);
                    item.candidates = Some(vec![pair.a, pair.b]);
                    item.human_labels.extend(label);
                    seen.insert(key, collector.items.len());
                    collector.push(row.line, Ok(item));
                }
            }
        }
    }
    collector.finish(source)
}

fn pair_name(pair: &Pair) -> String {
    format!("{}-{}", pair.a.id, pair.b.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "review_id\ttarget\tsys_a\tA\tsys_b\tB\tWhich of A or B more accurately reflects the content of the target summary? (Choices: A, B, Neither)\tNotes";

    #[test]
    fn sheets_merge_their_verdicts_by_system() {
        let a3 = format!(
            "{HEADER}\t\r\nCD1\tThe target.\tAAA111\tSummary one.\tBBB222\tSummary two.\tB\t\t81\r\nCD2\tT2\tAAA111\tx\tCCC333\ty\t\t\t\r\n"
        );
        // The second sheet shows CD1's pair the other way round.
        let a4 = format!(
            "{HEADER}\nCD1\tThe target.\tBBB222\tSummary two.\tAAA111\tSummary one.\tA\t\nCD2\tT2\tAAA111\tx\tCCC333\ty\tNeither is more accurate (use sparingly)\t\n"
        );
        let files =
            [SourceFile::new("sample2 - A3 - Sheet1.tsv", a3), SourceFile::new("sample3 - A4 - Sheet1.tsv", a4)];
        let file = parse(&files, "pairs").expect("items");
        assert_eq!(file.items.len(), 2, "{:?}", file.skipped);
        let one = &file.items[0];
        assert_eq!(one.id, "CD1/AAA111-BBB222");
        assert_eq!(one.content, "");
        assert_eq!(one.reference.as_deref(), Some("The target."));
        let cands = one.candidates.as_ref().unwrap();
        assert_eq!((cands[0].id.as_str(), cands[1].text.as_str()), ("AAA111", "Summary two."));
        assert_eq!(one.human_labels, ["BBB222", "BBB222"], "both annotators chose the second system");
        assert_eq!(file.items[1].human_labels, ["tie"], "an unanswered row is no verdict");
    }

    #[test]
    fn bad_answers_and_cut_rows_are_reported() {
        let text = format!(
            "{HEADER}\nCD1\tT\tS1\ta\tS2\tb\tC\t\nCD2\tT\tS1\n\tT\tS1\ta\tS2\tb\tA\t\nCD3\tT\tS1\ta\tS1\tb\tA\t\nCD4\tT\tS1\ta\tS2\tb\tA\tfine\n"
        );
        let file = parse(&[SourceFile::new("s - A5 - Sheet1.tsv", text)], "s - A5 - Sheet1.tsv").expect("one good row");
        assert_eq!(file.items.len(), 1);
        let msgs: Vec<String> = file.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs[0],
            "line 2: item \"CD1/S1-S2\": column 7 (the answer): unknown answer \"C\" (A, B or Neither)"
        );
        assert!(
            msgs[1].starts_with("line 3: the row has 3 cells, the header 8: column 4 `A` is missing"),
            "{}",
            msgs[1]
        );
        assert_eq!(msgs[2], "line 4: column 1 `review_id` is empty");
        assert_eq!(msgs[3], "line 5: item \"CD3/S1-S1\": `sys_a` and `sys_b` are the same system (S1)");
    }

    #[test]
    fn detection_needs_the_answer_column() {
        assert!(detect(&format!("{HEADER}\n")));
        assert!(!detect("review_id\ttarget\tsys_a\tA\tsys_b\tB\n"), "the unannotated samples have no answers");
    }
}
