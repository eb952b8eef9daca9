//! MSLR-Cochrane facet annotations (allenai/mslr-annotated-dataset,
//! `data/Annotations/Data for MSLR Annotation - Cochrane Subtask - A1.tsv`
//! and `- A2.tsv`): one sheet per annotator, one row per generated summary,
//! the answers as the sheet's text ("2: Yes", "(+1): Positive effect", …).
//!
//! The answers map to numbers by the dataset's own answer key (its README
//! and `scripts/1_reorg_data.py`); the dimensions moot emits and how each
//! is made are in docs/datasets.md.

use std::collections::BTreeMap;

use super::{DatasetFormat, SourceFile, TsvRow, first_line, header_positions, rater_of, tsv_rows};
use crate::item::{Collector, Item, ItemsError, ItemsFile};

pub(super) const FORMAT: DatasetFormat = DatasetFormat {
    name: "mslr",
    description: "MSLR-Cochrane facet annotations (allenai/mslr-annotated-dataset, data/Annotations/*.tsv; a folder merges the annotators)",
    several_files: true,
    detect,
    parse,
};

const EXP_ID: &str = "ExpID";
const REVIEW_ID: &str = "ReviewID";
const TARGET: &str = "Target Summary";
const GENERATED: &str = "Generated Summary";
const FLUENCY: &str = "Is the generated summary fluent?";
const POPULATION: &str =
    "Is the *population* in the generated summary the same as the population in the target summary?";
const INTERVENTION: &str =
    "Is the *intervention* in the generated summary the same as the intervention in the target summary?";
const OUTCOME: &str = "Is the *outcome* in the generated summary the same as the outcome in the target summary?";
const ED_TARGET: &str = "What is the effect direction in the *target* summary?";
const ED_GENERATED: &str = "What is the effect direction in the *generated* summary?";
const STRENGTH_TARGET: &str = "What is the strength of the claim made in the *target* summary?";
const STRENGTH_GENERATED: &str = "What is the strength of the claim made in the *generated* summary?";

/// The columns read, with the short name messages use.
const COLUMNS: [(&str, &str); 12] = [
    (EXP_ID, ""),
    (REVIEW_ID, ""),
    (TARGET, ""),
    (GENERATED, ""),
    (FLUENCY, "fluency"),
    (POPULATION, "population"),
    (INTERVENTION, "intervention"),
    (OUTCOME, "outcome"),
    (ED_TARGET, "ed_target"),
    (ED_GENERATED, "ed_generated"),
    (STRENGTH_TARGET, "strength_target"),
    (STRENGTH_GENERATED, "strength_generated"),
];

fn detect(text: &str) -> bool {
    let cells: Vec<&str> = first_line(text).split('\t').map(str::trim).collect();
    cells.starts_with(&[EXP_ID, REVIEW_ID]) && cells.contains(&GENERATED) && cells.contains(&FLUENCY)
}

/// Which question a cell answers, for its answer key.
#[derive(Clone, Copy)]
enum Question {
    Fluency,
    /// Population, intervention or outcome.
    Facet,
    Direction,
    Strength,
}

/// An answer's number, none when the sheet holds no usable answer, or an
/// error for text that is no answer to the question.
fn answer(q: Question, cell: &str) -> Result<Option<i64>, String> {
    let a = cell.trim();
    if a.is_empty() || a.starts_with("Other / uncertain") {
        return Ok(None);
    }
    let lead = |n: &str| a.starts_with(&format!("{n}:"));
    let found = match q {
        Question::Fluency | Question::Facet => {
            if lead("2") {
                Some(2)
            } else if lead("1") {
                Some(1)
            } else if lead("0") {
                Some(0)
            } else if matches!(q, Question::Facet) && a.starts_with("N/A") {
                // "N/A: No population in generated summary": the facet is
                // missing, so it is not the target's (0), as the dataset's
                // analysis notebook counts it.
                Some(0)
            } else {
                None
            }
        }
        // The answer key's codes: (+1) → 2, 0 → 1, (-1) → 0, N/A → -1.
        Question::Direction => {
            if a.starts_with("(+1)") {
                Some(2)
            } else if lead("0") {
                Some(1)
            } else if a.starts_with("(-1)") {
                Some(0)
            } else if a.starts_with("N/A") {
                Some(-1)
            } else {
                None
            }
        }
        Question::Strength => {
            // "N/A: No claim …" is not in the answer key: no answer.
            if a.starts_with("N/A") {
                return Ok(None);
            }
            (0..=3).rev().find(|n| lead(&n.to_string()))
        }
    };
    found.map(Some).ok_or_else(|| format!("unknown answer \"{a}\""))
}

/// `ed_agree` / `strength_agree` as the dataset's script makes them: none
/// when both answers are missing, else 1 when they are the same, 0 when not
/// (one missing answer counts as a difference).
fn agree(target: Option<i64>, generated: Option<i64>) -> Option<f64> {
    if target.is_none() && generated.is_none() {
        return None;
    }
    Some(if target == generated { 1.0 } else { 0.0 })
}

/// One row: the item it rates and the rater's scores.
struct Rated {
    id: String,
    target: String,
    generated: String,
    scores: BTreeMap<String, f64>,
}

fn read_row(row: &TsvRow, at: &[usize], header_len: usize) -> Result<Rated, String> {
    let cell = |i: usize| row.cells.get(at[i]).map(String::as_str);
    if let Some(missing) = (0..COLUMNS.len()).find(|&i| cell(i).is_none()) {
        let (name, short) = COLUMNS[missing];
        let short = if short.is_empty() { String::new() } else { format!(" ({short})") };
        return Err(format!(
            "the row has {} cells, the header {}: column {} `{name}`{short} is missing (a cut line?)",
            row.cells.len(),
            header_len,
            at[missing] + 1
        ));
    }
    let get = |i: usize| cell(i).unwrap_or("").trim();
    let (exp, review) = (get(0), get(1));
    for (i, v) in [(0, exp), (1, review)] {
        if v.is_empty() {
            return Err(format!("column {} `{}` is empty", at[i] + 1, COLUMNS[i].0));
        }
    }
    let id = format!("{review}/{exp}");
    let with_id = |e: String| format!("item \"{id}\": {e}");
    if get(3).is_empty() {
        return Err(with_id(format!("column {} `{GENERATED}` is empty", at[3] + 1)));
    }
    let mut answers = [None; 8];
    let questions = [
        Question::Fluency,
        Question::Facet,
        Question::Facet,
        Question::Facet,
        Question::Direction,
        Question::Direction,
        Question::Strength,
        Question::Strength,
    ];
    for (k, q) in questions.into_iter().enumerate() {
        let i = k + 4;
        answers[k] = answer(q, get(i)).map_err(|e| with_id(format!("column {} ({}): {e}", at[i] + 1, COLUMNS[i].1)))?;
    }
    let [fluency, population, intervention, outcome, ed_t, ed_g, st_t, st_g] = answers;
    let mut scores = BTreeMap::new();
    for (key, v) in
        [("fluency", fluency), ("population", population), ("intervention", intervention), ("outcome", outcome)]
    {
        if let Some(v) = v {
            scores.insert(key.to_string(), v as f64);
        }
    }
    let pio: Vec<f64> = [population, intervention, outcome].into_iter().flatten().map(|v| v as f64).collect();
    if !pio.is_empty() {
        scores.insert("pio_consistency".into(), pio.iter().sum::<f64>() / pio.len() as f64);
    }
    if let Some(v) = agree(ed_t, ed_g) {
        scores.insert("effect_direction".into(), v);
    }
    if let Some(v) = agree(st_t, st_g) {
        scores.insert("evidence_strength".into(), v);
    }
    // MAJ-EVAL's "overall quality": the four dimensions on the 0-2 scale
    // (an agreement counts 2), averaged; only where the rater gave all four.
    let four = ["fluency", "pio_consistency", "effect_direction", "evidence_strength"];
    if four.iter().all(|k| scores.contains_key(*k)) {
        let sum = scores["fluency"]
            + scores["pio_consistency"]
            + 2.0 * scores["effect_direction"]
            + 2.0 * scores["evidence_strength"];
        scores.insert("overall".into(), sum / 4.0);
    }
    Ok(Rated { id, target: get(2).to_string(), generated: get(3).to_string(), scores })
}

fn parse(files: &[SourceFile], source: &str) -> Result<ItemsFile, ItemsError> {
    let mut collector = Collector::default();
    // Item id → its place among the collector's items.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for file in files {
        let rows = tsv_rows(&file.text);
        let Some((header, rows)) = rows.split_first() else { continue };
        let at = header_positions(&header.cells, &COLUMNS, &file.name)?;
        let rater = rater_of(file);
        // Messages name the sheet when the source is more than it (a folder, a bundled slice).
        let in_file = |m: String| if file.name != source { format!("{}: {m}", file.name) } else { m };
        // Ids this file has rated, with their line: a rater rates an item once.
        let mut own: BTreeMap<String, usize> = BTreeMap::new();
        for row in rows {
            let rated = match read_row(row, &at, header.cells.len()) {
                Ok(r) => r,
                Err(e) => {
                    collector.push(row.line, Err(in_file(e)));
                    continue;
                }
            };
            if let Some(first) = own.get(&rated.id) {
                let m = format!("item \"{}\" again (first on line {first}); a rater rates an item once", rated.id);
                collector.push(row.line, Err(in_file(m)));
                continue;
            }
            own.insert(rated.id.clone(), row.line);
            match seen.get(&rated.id) {
                Some(&pos) => {
                    let item = &mut collector.items[pos];
                    if !rated.scores.is_empty() {
                        item.human_raters.insert(rater.clone(), rated.scores);
                    }
                }
                None => {
                    let mut item = Item::new(rated.id.clone(), rated.generated);
                    item.reference = (!rated.target.is_empty()).then_some(rated.target);
                    if !rated.scores.is_empty() {
                        item.human_raters.insert(rater.clone(), rated.scores);
                    }
                    seen.insert(rated.id, collector.items.len());
                    collector.push(row.line, Ok(item));
                }
            }
        }
    }
    collector.finish(source)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "ExpID\tReviewID\tTarget Summary\tGenerated Summary\tIs the generated summary fluent?\tIs the *population* in the generated summary the same as the population in the target summary?\tIs the *intervention* in the generated summary the same as the intervention in the target summary?\tIs the *outcome* in the generated summary the same as the outcome in the target summary?\tComments about PIO agreement (optional)\tWhat is the effect direction in the *target* summary?\tWhat is the effect direction in the *generated* summary?\tComments about effect directions (optional)\tWhat is the strength of the claim made in the *target* summary?\tWhat is the strength of the claim made in the *generated* summary?\tComments about strength of claim (optional)";

    fn row(exp: &str, review: &str, answers: [&str; 8]) -> String {
        let [f, p, i, o, edt, edg, st, sg] = answers;
        format!(
            "{exp}\t{review}\tThe target.\tThe generated.\t{f}\t{p}\t{i}\t{o}\t\"a\" note\t{edt}\t{edg}\t\t{st}\t{sg}\t"
        )
    }

    const GOOD: [&str; 8] = [
        "2: Yes--there are no errors that impact comprehension of the summary",
        "2: Yes",
        "1: Partially",
        "N/A: No outcome in generated summary",
        "(+1): Positive effect",
        "(+1): Positive effect",
        "2: Moderate claim",
        "0: Not enough evidence (there is insufficient evidence to draw a conclusion)",
    ];

    #[test]
    fn answers_map_by_the_answer_key() {
        let text = format!("{HEADER}\r\n{}\r\n", row("E1", "CD1", GOOD));
        let file = parse(&[SourceFile::new("x - A1.tsv", text)], "x - A1.tsv").expect("items");
        let item = &file.items[0];
        assert_eq!(item.id, "CD1/E1");
        assert_eq!(item.content, "The generated.");
        assert_eq!(item.reference.as_deref(), Some("The target."));
        let s = &item.human_raters["A1"];
        assert_eq!(s["fluency"], 2.0);
        assert_eq!((s["population"], s["intervention"], s["outcome"]), (2.0, 1.0, 0.0));
        assert_eq!(s["pio_consistency"], 1.0);
        assert_eq!(s["effect_direction"], 1.0);
        assert_eq!(s["evidence_strength"], 0.0);
        assert_eq!(s["overall"], (2.0 + 1.0 + 2.0 + 0.0) / 4.0, "the four on the 0-2 scale, averaged");
        assert_eq!(item.human, None);
    }

    #[test]
    fn agreement_follows_the_dataset_script() {
        assert_eq!(agree(None, None), None);
        assert_eq!(agree(Some(-1), Some(-1)), Some(1.0), "both N/A agree");
        assert_eq!(agree(Some(2), None), Some(0.0), "one missing answer is a difference");
        assert_eq!(
            answer(Question::Direction, "N/A: no effect direction is specified in the generated summary"),
            Ok(Some(-1))
        );
        assert_eq!(answer(Question::Strength, "N/A: No claim (there is no claim in the target summary)"), Ok(None));
        assert_eq!(answer(Question::Facet, "Other / uncertain (please comment)"), Ok(None));
        assert_eq!(answer(Question::Fluency, "Maybe"), Err("unknown answer \"Maybe\"".into()));
    }

    #[test]
    fn bad_rows_are_skipped_with_file_line_and_column() {
        let mut bad = GOOD;
        bad[0] = "Fine";
        let text = format!(
            "{HEADER}\n{}\n{}\nE3\tCD3\tcut\n{}\n{}\n",
            row("E1", "CD1", GOOD),
            row("E2", "CD2", bad),
            row("", "CD4", GOOD),
            row("E1", "CD1", GOOD)
        );
        let file = parse(&[SourceFile::new("s - A2.tsv", text)], "s - A2.tsv").expect("one good row");
        assert_eq!(file.items.len(), 1);
        let msgs: Vec<String> = file.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(msgs[0], "line 3: item \"CD2/E2\": column 5 (fluency): unknown answer \"Fine\"");
        assert!(
            msgs[1].starts_with("line 4: the row has 3 cells, the header 15: column 4 `Generated Summary`"),
            "{}",
            msgs[1]
        );
        assert_eq!(msgs[2], "line 5: column 1 `ExpID` is empty");
        assert_eq!(msgs[3], "line 6: item \"CD1/E1\" again (first on line 2); a rater rates an item once");

        let err = parse(&[SourceFile::new("h.tsv", "ExpID\tReviewID\tGenerated Summary\n")], "h.tsv").unwrap_err();
        assert!(err.to_string().starts_with("h.tsv:1:1: the header has no column `Target Summary`"), "{err}");
    }

    #[test]
    fn two_sheets_merge_into_two_raters() {
        let a1 = format!("{HEADER}\n{}\n{}\n", row("E1", "CD1", GOOD), row("E2", "CD2", GOOD));
        let mut other = GOOD;
        other[0] = "1: Somewhat--there are some grammatical or lexical errors but I can understand the meaning";
        let a2 = format!("{HEADER}\n{}\n{}\n", row("E3", "CD3", other), row("E1", "CD1", other));
        let files = [SourceFile::new("d/x - A1.tsv", a1), SourceFile::new("d/x - A2.tsv", a2)];
        let file = parse(&files, "d").expect("items");
        let ids: Vec<&str> = file.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["CD1/E1", "CD2/E2", "CD3/E3"]);
        let both = &file.items[0].human_raters;
        assert_eq!((both["A1"]["fluency"], both["A2"]["fluency"]), (2.0, 1.0));
        assert_eq!(file.items[0].human_value("fluency"), Some(1.5));
        assert_eq!(file.items[2].human_raters.keys().collect::<Vec<_>>(), ["A2"]);
    }

    #[test]
    fn detection_needs_the_sheet_header() {
        assert!(detect(&format!("{HEADER}\n")));
        assert!(!detect("id\tcontent\n"));
        assert!(!detect("ExpID,ReviewID,Generated Summary\n"));
    }
}
