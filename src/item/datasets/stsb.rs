//! The STS Benchmark (STS-B): sentence pairs with a similarity from 0 to 5,
//! in either of its two distributions:
//!
//! - GLUE's `STS-B/{train,dev,test}.tsv`: a header `index genre filename
//!   year old_index source1 source2 sentence1 sentence2 score` (the test
//!   split has no `score`);
//! - the original `sts-{train,dev,test}.csv`: tab-separated despite the
//!   name, no header, the columns genre, file, year, id, score, sentence 1,
//!   sentence 2 (some lines carry further columns with their sources).
//!
//! Quotes are text in both (the files are read as tab-separated lines).

use super::{DatasetFormat, SourceFile, first_line, header_positions, tsv_rows};
use crate::item::{Collector, Item, ItemsError, ItemsFile};

pub(super) const FORMAT: DatasetFormat = DatasetFormat {
    name: "stsb",
    description: "STS Benchmark sentence pairs: GLUE's STS-B/*.tsv, or the original sts-*.csv (tab-separated, no header)",
    several_files: false,
    detect,
    parse,
};

const GLUE_LEAD: [&str; 4] = ["index", "genre", "filename", "year"];

fn is_glue(text: &str) -> bool {
    let cells: Vec<&str> = first_line(text).split('\t').map(str::trim).collect();
    cells.starts_with(&GLUE_LEAD) && cells.contains(&"sentence1") && cells.contains(&"sentence2")
}

/// The original files: a genre such as `main-captions`, and a score where
/// the fifth column is.
fn is_original(text: &str) -> bool {
    let cells: Vec<&str> = first_line(text).split('\t').collect();
    cells.len() >= 7 && cells[0].trim().starts_with("main-") && cells[4].trim().parse::<f64>().is_ok()
}

fn detect(text: &str) -> bool {
    is_glue(text) || is_original(text)
}

/// The pair as the judges read it.
pub fn render_pair(first: &str, second: &str) -> String {
    format!("Sentence 1: {}\nSentence 2: {}", first.trim(), second.trim())
}

fn score(cell: &str, column: usize) -> Result<f64, String> {
    match cell.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (0.0..=5.0).contains(&x) => Ok(x),
        Ok(x) => Err(format!("column {column} (score): {x} is outside 0–5")),
        Err(_) => Err(format!("column {column} (score): \"{}\" is not a number", cell.trim())),
    }
}

fn item(id: String, first: &str, second: &str, similarity: Option<f64>, at: (usize, usize)) -> Result<Item, String> {
    for (text, column) in [(first, at.0), (second, at.1)] {
        if text.trim().is_empty() {
            return Err(format!("item \"{id}\": column {column} (a sentence) is empty"));
        }
    }
    let mut item = Item::new(id, render_pair(first, second));
    item.human = similarity.map(|s| [("similarity".to_string(), s)].into());
    Ok(item)
}

fn cut(cells: usize, wanted: usize, name: &str) -> String {
    format!("the row has {cells} cells; column {wanted} ({name}) is missing (a cut line?)")
}

fn parse_glue(file: &SourceFile, collector: &mut Collector) -> Result<(), ItemsError> {
    let rows = tsv_rows(&file.text);
    let Some((header, rows)) = rows.split_first() else { return Ok(()) };
    let at = header_positions(&header.cells, &[("index", ""), ("sentence1", ""), ("sentence2", "")], &file.name)?;
    let score_at = header.cells.iter().position(|h| h.trim() == "score");
    for row in rows {
        let cell = |i: usize| row.cells.get(i).map(String::as_str);
        let entry = (|| {
            let index = cell(at[0])
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| format!("column {} `index` is empty", at[0] + 1))?;
            let first = cell(at[1]).ok_or_else(|| cut(row.cells.len(), at[1] + 1, "sentence1"))?;
            let second = cell(at[2]).ok_or_else(|| cut(row.cells.len(), at[2] + 1, "sentence2"))?;
            let similarity = match score_at {
                None => None,
                Some(s) => {
                    let c = cell(s).ok_or_else(|| cut(row.cells.len(), s + 1, "score"))?;
                    Some(score(c, s + 1).map_err(|e| format!("item \"{index}\": {e}"))?)
                }
            };
            item(index.to_string(), first, second, similarity, (at[1] + 1, at[2] + 1))
        })();
        collector.push(row.line, entry);
    }
    Ok(())
}

fn parse_original(file: &SourceFile, collector: &mut Collector) {
    for row in tsv_rows(&file.text) {
        let c = &row.cells;
        let entry = if c.len() < 7 {
            Err(cut(
                c.len(),
                c.len() + 1,
                ["genre", "file", "year", "id", "score", "sentence 1", "sentence 2"][c.len()],
            ))
        } else {
            let id = format!("{}-{}-{}", c[1].trim(), c[2].trim(), c[3].trim());
            score(&c[4], 5)
                .map_err(|e| format!("item \"{id}\": {e}"))
                .and_then(|s| item(id, &c[5], &c[6], Some(s), (6, 7)))
        };
        collector.push(row.line, entry);
    }
}

fn parse(files: &[SourceFile], source: &str) -> Result<ItemsFile, ItemsError> {
    let mut collector = Collector::default();
    for file in files {
        if is_glue(&file.text) {
            parse_glue(file, &mut collector)?;
        } else {
            parse_original(file, &mut collector);
        }
    }
    collector.finish(source)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GLUE: &str = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore";

    #[test]
    fn glue_rows_become_pairs() {
        let text = format!(
            "{GLUE}\r\n0\tmain-captions\tMSRvid\t2012test\t0000\tnone\tnone\tA cat sits.\tA cat is sitting.\t4.750\r\n1\tmain-news\theadlines\t2013\t0001\tnone\tnone\t\"Quoted\" start.\tOther.\t6\r\n2\tmain-news\theadlines\t2013\t0002\tnone\tnone\tCut\r\n3\tmain-forums\tanswers-forums\t2015\t0003\tnone\tnone\tA.\tB.\tabout 2\r\n"
        );
        assert!(detect(&text));
        let file = parse(&[SourceFile::new("dev.tsv", text)], "dev.tsv").expect("items");
        assert_eq!(file.items.len(), 1);
        assert_eq!(file.items[0].id, "0");
        assert_eq!(file.items[0].content, "Sentence 1: A cat sits.\nSentence 2: A cat is sitting.");
        assert_eq!(file.items[0].human.as_ref().unwrap()["similarity"], 4.75);
        let msgs: Vec<String> = file.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            [
                "line 3: item \"1\": column 10 (score): 6 is outside 0–5",
                "line 4: the row has 8 cells; column 9 (sentence2) is missing (a cut line?)",
                "line 5: item \"3\": column 10 (score): \"about 2\" is not a number",
            ]
        );
        // The test split has no scores.
        let test = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\n0\tmain-news\th\t2016\t0\tnone\tnone\tOne.\tTwo.\n";
        let file = parse(&[SourceFile::new("test.tsv", test)], "test.tsv").expect("items");
        assert_eq!(file.items[0].human, None);
    }

    #[test]
    fn original_rows_become_pairs() {
        let text = "main-captions\tMSRvid\t2012test\t0001\t5.000\tA plane is taking off.\tAn air plane is taking off.\n\
                    main-news\theadlines\t2013\t0002\t1.4\t\"Quoted\" news.\tOther news.\tsource-a\tsource-b\n\
                    main-forums\tdeft-forum\t2014\t0003\t2.0\n";
        assert!(detect(text) && !is_glue(text));
        let file = parse(&[SourceFile::new("sts-dev.csv", text)], "sts-dev.csv").expect("items");
        assert_eq!(file.items.len(), 2);
        assert_eq!(file.items[0].id, "MSRvid-2012test-0001");
        assert_eq!(file.items[1].content, "Sentence 1: \"Quoted\" news.\nSentence 2: Other news.");
        assert_eq!(
            file.skipped[0].to_string(),
            "line 3: the row has 5 cells; column 6 (sentence 1) is missing (a cut line?)"
        );
    }

    #[test]
    fn moot_csv_is_not_taken_for_sts() {
        assert!(!detect("id,content,human.similarity\na,x,3\n"));
        assert!(!detect("id\tcontent\n"));
    }
}
