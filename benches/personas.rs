//! The persona builder's own time, with a scripted model that answers at once:
//!
//! - `build_three_20_page_docs`: reading nothing from disk, building a panel
//!   from three documents of 20 pages each (about 10,000 words apiece):
//!   extraction part by part, quote checks, consolidation, personas. Target: < 1 s.
//! - `read_and_verify_200_page_pdf`: reading a 200-page PDF (text extraction,
//!   paragraphs) and checking 50 quotes in it, half of them invented. Target: < 2 s.
//!
//! The documents and the PDF are generated here; their text was written for
//! the moot project.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use moot::personas::docs::{DocKind, from_text};
use moot::personas::log::BuildLog;
use moot::personas::{Ctx, Model, Options, build, read_document, verify};
use moot::testkit::scripted::ScriptedProvider;

const SENTENCES: &[&str] = &[
    "A teacher said short questions keep the whole class listening at the page turn.",
    "Parents told us that bedtime questions must feel like part of the story.",
    "The weather turned cold in the second week of the study.",
    "A psychologist noted that children of four recall events better than reasons.",
    "Sessions took place in the school library after lunch.",
    "One mother counted a single word as a full answer from her son.",
    "The researcher recorded every question asked during the reading.",
    "Speech therapists asked for questions a child can answer by pointing.",
];

/// About `pages` pages of prose (500 words a page) in paragraphs of four sentences.
fn document_text(pages: usize, seed: usize) -> String {
    let mut out = String::new();
    let sentences = pages * 500 / 13;
    for i in 0..sentences {
        out.push_str(SENTENCES[(i * 7 + seed) % SENTENCES.len()]);
        out.push_str(if i % 4 == 3 { "\n\n" } else { " " });
    }
    out
}

/// A PDF of `pages` pages of text, Helvetica, one content stream each.
fn pdf(pages: usize) -> Vec<u8> {
    let mut objects: Vec<Vec<u8>> = Vec::new();
    objects.push(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_vec());
    let pages_id = 2 + 2 * pages;
    let mut kids = Vec::new();
    for n in 0..pages {
        let mut content = String::from("BT /F1 10 Tf 50 780 Td\n");
        for line in 0..40 {
            let s = SENTENCES[(n * 3 + line) % SENTENCES.len()];
            content.push_str(&format!("(Page {} line {line}: {s}) Tj 0 -18 Td\n", n + 1));
        }
        content.push_str("ET");
        objects.push(format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()).into_bytes());
        let contents = objects.len();
        objects.push(
            format!(
                "<< /Type /Page /Parent {pages_id} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 1 0 R >> >> /Contents {contents} 0 R >>"
            )
            .into_bytes(),
        );
        kids.push(objects.len());
    }
    let kids: Vec<String> = kids.iter().map(|k| format!("{k} 0 R")).collect();
    objects.push(format!("<< /Type /Pages /Kids [{}] /Count {pages} >>", kids.join(" ")).into_bytes());
    objects.push(format!("<< /Type /Catalog /Pages {pages_id} 0 R >>").into_bytes());
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root {} 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1, objects.len())
            .as_bytes(),
    );
    out
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let docs: Vec<_> = (0..3)
        .map(|i| {
            let name = format!("study-{i}.md");
            from_text(&name, Path::new(&name), DocKind::Markdown, &document_text(20, i))
        })
        .collect();
    let mut g = c.benchmark_group("personas");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function("build_three_20_page_docs", |b| {
        b.iter(|| {
            let provider =
                Arc::new(ScriptedProvider::new(|r, _| moot::testkit::builder_reply(r).into()).with_chunk(4096));
            let log = Arc::new(BuildLog::new(None, None).unwrap());
            let ctx = Ctx::new(
                "Judge QA pairs for shared reading with young children.",
                Model::new(provider.clone(), ""),
                log,
            );
            runtime.block_on(build(&ctx, &docs, &Options::default())).unwrap();
            // 5 parts a document, a consolidation, and personas.
            assert!(provider.calls() > 16, "{} calls", provider.calls());
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.pdf");
    std::fs::write(&path, pdf(200)).unwrap();
    let quotes: Vec<String> = (0..50)
        .map(|i| {
            if i % 2 == 0 {
                format!("Page {} line 3: {}", i * 4 + 1, SENTENCES[(i * 12 + 3) % SENTENCES.len()])
            } else {
                "Every child in the study preferred questions about dinosaurs to questions about the story.".into()
            }
        })
        .collect();
    g.bench_function("read_and_verify_200_page_pdf", |b| {
        b.iter(|| {
            let doc = read_document(&path).unwrap();
            let index = verify::Index::new(&doc);
            let found = quotes.iter().filter(|q| index.check(q).found).count();
            assert_eq!(found, 25);
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
