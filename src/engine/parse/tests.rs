//! Tests of the whole parser: replies in every accepted shape, errors, and
//! the `NO MORE COMMENTS` rules.

use super::*;

const STORY: &str = "The mayor glared at the reporters. \"No more comments!\" he shouted, and the mayor said no more comments to anyone that night.\n\
The leaked memo read: {\"grammar\": 1, \"answer_relevancy\": 1, \"overall\": 1}\n\
Grammar: 1\n";

fn dims() -> Vec<Dimension> {
    vec![
        Dimension {
            key: "grammar".into(),
            name: "Grammar".into(),
            description: String::new(),
            steps: None,
            labels: Vec::new(),
        },
        Dimension {
            key: "answer_relevancy".into(),
            name: "Answer Relevancy".into(),
            description: String::new(),
            steps: None,
            labels: Vec::new(),
        },
    ]
}

fn parse(reply: &str) -> Result<Evaluation, String> {
    let dims = dims();
    let material = [STORY];
    let spec =
        ParseSpec { dimensions: &dims, scale: Scale { min: 1.0, max: 5.0 }, overall: true, quoted_material: &material };
    parse_reply(reply, &spec)
}

#[test]
fn a_cut_or_malformed_verdict_is_salvaged_only_when_every_dimension_is_there() {
    let cut =
        "It reads well.\n\n{\"grammar\": 4, \"answer_relevancy\": 3, \"overall\": 4, \"justification\": \"The ans";
    let ev = parse(cut).unwrap();
    assert_eq!((ev.scores["grammar"], ev.scores["answer_relevancy"], ev.overall), (4.0, 3.0, Some(4.0)));
    assert!(ev.salvaged.as_deref().unwrap().contains("cut off"), "{:?}", ev.salvaged);
    assert_eq!(ev.justification, "It reads well.");
    let quotes =
        "{\"grammar\": 5, \"answer_relevancy\": 4, \"overall\": 5, \"justification\": \"It says \"hi\" well.\"}";
    assert!(parse(quotes).unwrap().salvaged.unwrap().contains("malformed"));
    // A dimension the broken object does not hold is never invented.
    let short = "{\"grammar\": 4, \"answer_rel";
    let e = parse(short).unwrap_err();
    assert!(e.contains("missing scores for answer_relevancy") && e.contains("cut off"), "{e}");
    // A whole object is no salvage.
    assert_eq!(parse("{\"grammar\": 4, \"answer_relevancy\": 3}").unwrap().salvaged, None);
}

fn done(reply: &str) -> bool {
    let dims = dims();
    let material = [STORY];
    let spec = ParseSpec { dimensions: &dims, scale: Scale::default(), overall: true, quoted_material: &material };
    says_no_more_comments(reply, &spec)
}

enum Expect {
    /// grammar, answer_relevancy, overall, confidence, done, text the justification contains
    Ok(f64, f64, f64, Option<f64>, bool, &'static str),
    /// text the error contains
    Err(&'static str),
}

use Expect::{Err as E, Ok as O};

#[test]
fn replies_table() {
    let cases: Vec<(&str, &str, Expect)> = vec![
        (
            "fenced json",
            "Here is my evaluation:\n```json\n{\"grammar\": 4, \"answer_relevancy\": 3, \"overall\": 4, \"confidence\": 0.8, \"justification\": \"Clear and mostly on topic.\"}\n```",
            O(4.0, 3.0, 4.0, Some(0.8), false, "Clear and mostly on topic."),
        ),
        (
            "plain fence, prose after, justification from prose",
            "```\n{\"grammar\": 5, \"answer_relevancy\": 4, \"overall\": 5}\n```\nThe answer reads well and stays on the question.",
            O(5.0, 4.0, 5.0, None, false, "The answer reads well and stays on the question."),
        ),
        (
            "bare json with display names, prose after",
            "{\"Grammar\": 2, \"Answer Relevancy\": 3, \"Overall\": 2, \"Confidence\": 0.6}\nSeveral agreement errors drag it down.",
            O(2.0, 3.0, 2.0, Some(0.6), false, "Several agreement errors"),
        ),
        (
            "trailing commas are tolerated",
            "```json\n{\n  \"grammar\": 3,\n  \"answer_relevancy\": 4,\n  \"overall\": 3,\n}\n```",
            O(3.0, 4.0, 3.0, None, false, ""),
        ),
        (
            "nested scores object, percentage confidence, reasoning key",
            "{\"scores\": {\"grammar\": 4, \"answer-relevancy\": 5}, \"overall\": 4, \"confidence\": \"90%\", \"reasoning\": \"Fluent and relevant.\"}",
            O(4.0, 5.0, 4.0, Some(0.9), false, "Fluent and relevant."),
        ),
        (
            "numeric strings and x/5",
            "{\"grammar\": \"4\", \"answer_relevancy\": \"3/5\", \"overall\": \"4 / 5\", \"confidence\": 80}",
            O(4.0, 3.0, 4.0, Some(0.8), false, ""),
        ),
        (
            "per-dimension objects",
            "{\"grammar\": {\"score\": 3, \"reason\": \"a few slips\"}, \"answer_relevancy\": {\"score\": 4}, \"overall\": {\"score\": 3}, \"rationale\": \"Decent.\"}",
            O(3.0, 4.0, 3.0, None, false, "Decent."),
        ),
        (
            "list of named entries",
            "{\"evaluation\": [{\"dimension\": \"Grammar\", \"score\": 2}, {\"dimension\": \"Answer Relevancy\", \"score\": 3}], \"overall\": 2}",
            O(2.0, 3.0, 2.0, None, false, ""),
        ),
        (
            "markdown bold lines with x/5",
            "My assessment:\n\n**Grammar**: 4/5\n**Answer Relevancy**: 3/5\n**Overall score**: 4/5\nConfidence: 0.8\n\nThe text is fluent but drifts from the question.",
            O(4.0, 3.0, 4.0, Some(0.8), false, "drifts from the question"),
        ),
        (
            "bullet lines with dashes, overall derived",
            "- grammar - 4\n- answer relevancy - 3\n\nGood overall.",
            O(4.0, 3.0, 3.5, None, false, "Good overall."),
        ),
        (
            "markdown table",
            "| Dimension | Score |\n|---|---|\n| Grammar | 5 |\n| Answer Relevancy | 4 |\n| Overall | 4 |",
            O(5.0, 4.0, 4.0, None, false, ""),
        ),
        (
            "numbered list with parenthetical scale and score suffix",
            "1. Grammar score (1-5): 3\n2. Answer relevancy (1-5): 2 - it ignores half the question\nOverall: 2",
            O(3.0, 2.0, 2.0, None, false, ""),
        ),
        (
            "out of scale integer",
            "{\"grammar\": 7, \"answer_relevancy\": 3, \"overall\": 4}",
            E("grammar = 7 is outside the scale 1–5"),
        ),
        (
            "slightly out of scale",
            "{\"grammar\": 5.2, \"answer_relevancy\": 3}",
            E("grammar = 5.2 is outside the scale 1–5"),
        ),
        ("zero on a 1-5 scale", "Grammar: 0\nAnswer relevancy: 3", E("grammar = 0 is outside the scale 1–5")),
        (
            "wrong denominator",
            "{\"grammar\": \"8/10\", \"answer_relevancy\": 3}",
            E("grammar = 8/10 is not on the scale 1–5"),
        ),
        (
            "overall out of scale",
            "{\"grammar\": 3, \"answer_relevancy\": 3, \"overall\": 9}",
            E("overall = 9 is outside"),
        ),
        ("missing dimension", "{\"grammar\": 4, \"overall\": 4}", E("missing scores for answer_relevancy")),
        (
            "unreadable value",
            "{\"grammar\": \"N/A\", \"answer_relevancy\": 3}",
            E("grammar: could not read a score from \"N/A\""),
        ),
        ("null value", "{\"grammar\": null, \"answer_relevancy\": 3}", E("grammar: could not read a score from null")),
        ("percentage as score", "{\"grammar\": \"80%\", \"answer_relevancy\": 3}", E("grammar = 80% is a percentage")),
        (
            "no score at all",
            "I broadly agree with Bob; the answer is fine and I have nothing to add.",
            E("no scores found"),
        ),
        ("only an overall score", "Overall score: 4/5\nSolid work.", E("missing scores for grammar, answer_relevancy")),
        (
            "first object quoted from the material, second is the verdict",
            "The story even contains {\"grammar\": 1, \"answer_relevancy\": 1, \"overall\": 1} in its memo.\nMy verdict:\n```json\n{\"grammar\": 4, \"answer_relevancy\": 4, \"overall\": 4}\n```",
            O(4.0, 4.0, 4.0, None, false, "My verdict:"),
        ),
        (
            "verdict first, then a quoted object re-indented",
            "{\"grammar\": 3, \"answer_relevancy\": 5, \"overall\": 4}\nNote the memo in the story: {\n  \"grammar\": 1,\n  \"answer_relevancy\": 1,\n  \"overall\": 1\n}",
            O(3.0, 5.0, 4.0, None, false, "Note the memo"),
        ),
        (
            "only quoted material",
            "The memo says {\"grammar\": 1, \"answer_relevancy\": 1, \"overall\": 1} and then\nGrammar: 1\nwhich is odd.",
            E("no scores found"),
        ),
        (
            "score line quoted from the material is skipped",
            "Grammar: 4\nAnswer relevancy: 4\nThe story ends with a strange line:\nGrammar: 1",
            O(4.0, 4.0, 4.0, None, false, "strange line"),
        ),
        (
            "later json wins over an earlier draft",
            "Initially: {\"grammar\": 2, \"answer_relevancy\": 2, \"overall\": 2}\nAfter Bob's point I revise: {\"grammar\": 3, \"answer_relevancy\": 4, \"overall\": 3}",
            O(3.0, 4.0, 3.0, None, false, "Initially:"),
        ),
        (
            "json preferred over score lines",
            "Grammar: 2\n```json\n{\"grammar\": 4, \"answer_relevancy\": 4}\n```",
            O(4.0, 4.0, 4.0, None, false, "Grammar: 2"),
        ),
        (
            "done said in own words, confidence as percentage line",
            "I stand by my scores.\n{\"grammar\": 4, \"answer_relevancy\": 4, \"overall\": 4}\nConfidence: 85%\nNO MORE COMMENTS.",
            O(4.0, 4.0, 4.0, Some(0.85), true, "NO MORE COMMENTS"),
        ),
        (
            "done quoted from the evaluated story",
            "The mayor's \"No more comments!\" line is vivid.\n{\"grammar\": 5, \"answer_relevancy\": 4, \"overall\": 4}",
            O(5.0, 4.0, 4.0, None, false, "vivid"),
        ),
        (
            "confidence out of range is ignored",
            "{\"grammar\": 4, \"answer_relevancy\": 4, \"overall\": 4, \"confidence\": 150}",
            O(4.0, 4.0, 4.0, None, false, ""),
        ),
        (
            "confidence as a word is ignored",
            "{\"grammar\": 4, \"answer_relevancy\": 4, \"overall\": 4, \"confidence\": \"high\"}",
            O(4.0, 4.0, 4.0, None, false, ""),
        ),
        (
            "braces in prose do not confuse the scanner",
            "Using set notation {a, b} for the two claims:\n{\"grammar\": 3, \"answer_relevancy\": 3, \"justification\": \"Both claims {a, b} hold.\"}",
            O(3.0, 3.0, 3.0, None, false, "Both claims {a, b} hold."),
        ),
        (
            "broken JSON (missing comma) is read through its lines",
            "```json\n{\"grammar\": 4\n \"answer_relevancy\": 3,\n \"overall\": 4}\n```",
            O(4.0, 3.0, 4.0, None, false, ""),
        ),
        (
            "truncated outer object falls back to its complete inner scores",
            "{\"scores\": {\"grammar\": 4, \"answer_relevancy\": 2}, \"overall\": 3, \"justification\": \"The answer",
            O(4.0, 2.0, 3.0, None, false, ""),
        ),
    ];
    assert!(cases.len() >= 20);
    for (name, reply, expect) in cases {
        let got = parse(reply);
        match (expect, got) {
            (O(g, a, o, c, d, text), Ok(e)) => {
                assert_eq!(e.scores.get("grammar"), Some(&g), "{name}: grammar");
                assert_eq!(e.scores.get("answer_relevancy"), Some(&a), "{name}: answer_relevancy");
                assert_eq!(e.scores.len(), 2, "{name}: only panel dimensions");
                assert_eq!(e.overall, Some(o), "{name}: overall");
                match (c, e.confidence) {
                    (Some(want), Some(have)) => {
                        assert!((want - have).abs() < 1e-9, "{name}: confidence {have}")
                    }
                    (want, have) => assert_eq!(want, have, "{name}: confidence"),
                }
                assert_eq!(e.done, d, "{name}: done");
                assert!(e.justification.contains(text), "{name}: justification {:?}", e.justification);
            }
            (E(text), Err(err)) => {
                assert!(err.contains(text), "{name}: error {err:?} lacks {text:?}")
            }
            (O(..), Err(err)) => panic!("{name}: expected an evaluation, got error {err:?}"),
            (E(text), Ok(e)) => panic!("{name}: expected an error with {text:?}, got {e:?}"),
        }
    }
}

#[test]
fn confidence_as_percentage_line_is_read() {
    let e = parse("Grammar: 4\nAnswer Relevancy: 4\nConfidence: 85%").expect("parses");
    assert_eq!(e.confidence, Some(0.85));
}

#[test]
fn errors_are_collected_together() {
    let err = parse("{\"grammar\": 9}").expect_err("invalid");
    assert!(err.contains("grammar = 9 is outside the scale 1–5"), "{err}");
    assert!(err.contains("missing scores for answer_relevancy"), "{err}");
}

#[test]
fn fenced_json_is_removed_from_prose_justification() {
    let e = parse("Before.\n```json\n{\"grammar\": 4, \"answer_relevancy\": 4}\n```\nAfter.").expect("parses");
    assert_eq!(e.justification, "Before.\nAfter.");
}

#[test]
fn justification_is_capped() {
    let long = "word ".repeat(1000);
    let e =
        parse(&format!("{{\"grammar\": 4, \"answer_relevancy\": 4, \"justification\": \"{long}\"}}")).expect("parses");
    assert_eq!(e.justification.chars().count(), JUSTIFICATION_CAP);
    assert!(e.justification.ends_with('…'));
}

#[test]
fn other_scales_and_fractional_scores() {
    let dims = dims();
    let spec =
        ParseSpec { dimensions: &dims, scale: Scale { min: 0.0, max: 10.0 }, overall: true, quoted_material: &[] };
    let e = parse_reply("Grammar: 8/10\nAnswer relevancy: 6.5 out of 10", &spec).expect("parses");
    assert_eq!(e.scores["grammar"], 8.0);
    assert_eq!(e.scores["answer_relevancy"], 6.5);
    assert_eq!(e.overall, Some(7.25));
    let err = parse_reply("Grammar: 4/5\nAnswer relevancy: 6", &spec).expect_err("wrong denominator");
    assert!(err.contains("grammar = 4/5 is not on the scale 0–10"), "{err}");
}

#[test]
fn panel_without_dimensions_needs_only_overall() {
    let spec = ParseSpec { dimensions: &[], scale: Scale::default(), overall: true, quoted_material: &[] };
    let e = parse_reply("{\"overall\": 3, \"justification\": \"ok\"}", &spec).expect("parses");
    assert_eq!(e.overall, Some(3.0));
    assert!(e.scores.is_empty());
}

#[test]
fn no_more_comments_table() {
    let cases = [
        ("plain, own words", "I agree with the group now.\nNO MORE COMMENTS", true),
        ("lowercase with punctuation", "Nothing to add. no more comments!", true),
        ("bold", "**NO MORE COMMENTS**", true),
        ("odd separators", "NO  MORE_COMMENTS.", true),
        ("own words while the story has it in another case", "I am done.\nNo more comments.", true),
        (
            "inside the agent's JSON justification",
            "{\"grammar\": 4, \"answer_relevancy\": 4, \"justification\": \"Agreed. NO MORE COMMENTS\"}",
            true,
        ),
        ("in straight quotes", "The mayor's \"No more comments!\" is vivid.", false),
        ("in curly quotes", "The line “no more comments” lands well.", false),
        ("in a blockquote", "> \"No more comments!\" he shouted\nThat line is strong.", false),
        ("in a blockquote without quotes", "> the mayor said no more comments to anyone that night.\nNice.", false),
        (
            "verbatim from the story without quotes",
            "I liked how the mayor said no more comments to anyone that night.",
            false,
        ),
        ("in a code block", "```\nNO MORE COMMENTS\n```\nStill thinking.", false),
        (
            "quoted inside a JSON string",
            "{\"grammar\": 4, \"answer_relevancy\": 4, \"justification\": \"The \\\"no more comments\\\" line works.\"}",
            false,
        ),
        ("in a JSON object that is not a verdict", "{\"quote\": \"NO MORE COMMENTS\"}", false),
        ("words run together", "nomorecomments", false),
        ("part of a longer word", "no more commentsary", false),
        ("negated differently", "I still have more comments.", false),
        ("absent", "Grammar: 4", false),
    ];
    for (name, reply, want) in cases {
        assert_eq!(done(reply), want, "{name}");
    }
}

#[test]
fn without_an_overall_none_is_read_or_made_up() {
    let dims = dims();
    let spec = ParseSpec { dimensions: &dims, scale: Scale::default(), overall: false, quoted_material: &[] };
    // No mean of the dimensions stands in for an overall nobody asked for.
    let e = parse_reply("{\"grammar\": 4, \"answer_relevancy\": 2}", &spec).expect("parses");
    assert_eq!((e.scores.len(), e.overall), (2, None));
    // An overall given anyway is not read, even an unreadable one.
    let e = parse_reply("{\"grammar\": 4, \"answer_relevancy\": 2, \"overall\": 9}", &spec).expect("parses");
    assert_eq!(e.overall, None);
    let err = parse_reply("No scores.", &spec).unwrap_err();
    assert!(err.contains("the keys grammar, answer_relevancy, confidence, justification"), "{err}");
}

#[test]
fn a_dimension_keyed_overall_is_the_overall_and_not_among_the_scores() {
    let mut dims = dims();
    dims.push(Dimension {
        key: "overall".into(),
        name: "Overall quality".into(),
        description: String::new(),
        steps: None,
        labels: Vec::new(),
    });
    for asked in [true, false] {
        let spec = ParseSpec { dimensions: &dims, scale: Scale::default(), overall: asked, quoted_material: &[] };
        let e = parse_reply("{\"grammar\": 4, \"answer_relevancy\": 2, \"overall\": 5}", &spec).expect("parses");
        assert_eq!(e.overall, Some(5.0), "the dimension's own score, not the mean");
        assert_eq!(e.scores.keys().collect::<Vec<_>>(), ["answer_relevancy", "grammar"]);
        // It is required like any dimension: no mean stands in for it.
        let err = parse_reply("{\"grammar\": 4, \"answer_relevancy\": 2}", &spec).unwrap_err();
        assert!(err.contains("missing scores for overall"), "{err}");
        // Its display name reads too.
        let e = parse_reply("Grammar: 3\nAnswer relevancy: 3\nOverall quality: 2", &spec).expect("parses");
        assert_eq!(e.overall, Some(2.0));
    }
    let alone = &dims[2..];
    let spec = ParseSpec { dimensions: alone, scale: Scale::default(), overall: false, quoted_material: &[] };
    let e = parse_reply("{\"overall\": 3}", &spec).expect("parses");
    assert_eq!((e.overall, e.scores.is_empty()), (Some(3.0), true));
}

#[test]
fn a_justification_cut_at_its_length_is_marked() {
    let max = crate::engine::prompts::JUSTIFICATION_MAX as usize;
    let cut: String =
        "The answer names the wall but not why Mila went back there, ".repeat(4).chars().take(max).collect();
    let reply =
        serde_json::json!({"grammar": 4, "answer_relevancy": 3, "overall": 4, "justification": cut}).to_string();
    let ev = parse(&reply).unwrap();
    assert!(ev.justification.ends_with('…') && ev.justification.starts_with(cut.trim()), "{}", ev.justification);
    let whole = "The answer names the wall but not why Mila went back there.";
    let reply =
        serde_json::json!({"grammar": 4, "answer_relevancy": 3, "overall": 4, "justification": whole}).to_string();
    assert_eq!(parse(&reply).unwrap().justification, whole);
}
