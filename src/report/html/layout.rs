//! The page shell shared by session and report pages: head, inline CSS,
//! the small inline script, a Content-Security-Policy that lets only that
//! script run, and the fragments both pages use (folded text, score
//! cells, the human mark).

use super::markup::Html;

/// Texts longer than this (in characters) fold behind a summary.
pub const FOLD_CHARS: usize = 600;

const STYLE: &str = r#"
:root{--fg:#1d2329;--muted:#5c6670;--bg:#fff;--panel:#f5f7f9;--line:#d9dee3;--human:#b45309;--human-bg:#fff4e5;--good:#1e7b45;--bad:#b42318;--accent:#1f6fb2}
@media (prefers-color-scheme: dark){:root{--fg:#e6e9ec;--muted:#9aa5b1;--bg:#15191d;--panel:#1e2429;--line:#36404a;--human:#f5a524;--human-bg:#3a2a12;--good:#4cc38a;--bad:#f07167;--accent:#6cb4ee}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1100px;padding:1.2rem 1.5rem 4rem;font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
h1{font-size:1.45rem;margin:.2rem 0 .6rem}h2{font-size:1.15rem;margin:2rem 0 .6rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}h3{font-size:1rem;margin:1.2rem 0 .4rem}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:0}dl.meta dt{color:var(--muted)}dl.meta dd{margin:0}
table{border-collapse:collapse;margin:.4rem 0;font-variant-numeric:tabular-nums}th,td{border:1px solid var(--line);padding:.2rem .5rem;text-align:left;vertical-align:top}th{background:var(--panel)}td.num{text-align:right}
details{margin:.3rem 0}summary{cursor:pointer;color:var(--accent)}
.text{white-space:pre-wrap;overflow-wrap:anywhere;font-family:ui-monospace,"SF Mono",Menlo,Consolas,monospace;font-size:.88rem;background:var(--panel);padding:.5rem .7rem;border-radius:4px;margin:.3rem 0}
pre.table{overflow-x:auto;font-size:.8rem;background:var(--panel);padding:.6rem;border-radius:4px}
.entry{border-left:3px solid var(--line);padding:.25rem .8rem;margin:.5rem 0;content-visibility:auto;contain-intrinsic-size:auto 5rem}
.entry.turn{border-left-color:var(--accent)}.entry.human{border-left-color:var(--human);background:var(--human-bg)}
.entry .who{font-weight:600}.entry .what{color:var(--muted)}
.badge{display:inline-block;font-size:.75rem;padding:0 .4rem;border-radius:3px;border:1px solid var(--line);color:var(--muted);margin-left:.3rem}
.badge.human{border-color:var(--human);color:var(--human);font-weight:600}
.phase{margin:1.2rem 0 .3rem;font-weight:600;color:var(--muted);text-transform:uppercase;font-size:.8rem;letter-spacing:.04em}
.reached{color:var(--good)}.not-reached,.error{color:var(--bad)}
.scores span{margin-right:.8rem}
.plots{display:flex;flex-wrap:wrap;gap:1rem}figure.plot{margin:0}figure.plot figcaption{font-weight:600;margin-bottom:.2rem}
svg.timeline{background:var(--panel);border-radius:4px}svg.timeline text{fill:var(--muted);font-size:11px}svg.timeline .grid{stroke:var(--line)}
ul.legend{list-style:none;padding:0;margin:.2rem 0;display:flex;flex-wrap:wrap;gap:.2rem 1rem;font-size:.85rem}ul.legend i{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;margin-right:.3rem;vertical-align:-.1rem}
img.chart{max-width:100%;background:#fff;border:1px solid var(--line)}
.toolbar{float:right}.toolbar button{font:inherit;font-size:.85rem;margin-left:.3rem}
footer{margin-top:3rem;color:var(--muted);font-size:.85rem}
"#;

/// The page's own script: marks that it ran, and shows the buttons that
/// open or close every fold (the page reads the same without it).
const SCRIPT: &str = r#"
document.documentElement.dataset.script = "ran";
for (const b of document.querySelectorAll("button[data-fold]")) {
  b.hidden = false;
  b.addEventListener("click", () => {
    const open = b.dataset.fold === "open";
    for (const d of document.querySelectorAll("details")) d.open = open;
  });
}
"#;

/// A nonce for the page's script: new for every page, so a log cannot
/// carry a script tag that would match it.
fn nonce() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// A whole page: `<title>` and `<h1>` from `title`, then `body`.
pub fn page(title: &str, body: &Html) -> String {
    let nonce = nonce();
    let mut h = Html::new();
    h.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
        .raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let csp = format!(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'nonce-{nonce}'; base-uri 'none'; form-action 'none'"
    );
    h.open("meta", &[("http-equiv", "Content-Security-Policy"), ("content", &csp)]).raw("\n");
    h.raw("<meta name=\"generator\" content=\"moot\">\n");
    h.elem("title", &[], title).raw("\n<style>").raw(STYLE).raw("</style>\n</head>\n<body>\n");
    h.raw("<div class=\"toolbar\"><button type=\"button\" data-fold=\"open\" hidden>open all</button>")
        .raw("<button type=\"button\" data-fold=\"close\" hidden>close all</button></div>\n");
    h.elem("h1", &[], title).raw("\n");
    h.append(body);
    h.raw("\n<footer>Written by moot ")
        .text(env!("CARGO_PKG_VERSION"))
        .raw(". A self-contained page: it needs no network.</footer>\n");
    h.open("script", &[("nonce", &nonce)]).raw(SCRIPT).raw("</script>\n</body>\n</html>\n");
    h.into_string()
}

/// A text shown as it is (whitespace kept); longer than [`FOLD_CHARS`], it
/// folds behind `summary` and its first line.
pub fn text_block(h: &mut Html, summary: &str, text: &str) {
    if text.chars().count() <= FOLD_CHARS {
        h.elem("div", &[("class", "text")], text);
        return;
    }
    let head: String = text.lines().next().unwrap_or("").chars().take(120).collect();
    h.open("details", &[]).open("summary", &[]).text(summary).text(" — ").text(&head).text(" …").close("summary");
    h.elem("div", &[("class", "text")], text).close("details");
}

/// A folded text, closed whatever its length.
pub fn folded(h: &mut Html, summary: &str, text: &str) {
    h.open("details", &[]).elem("summary", &[], summary).elem("div", &[("class", "text")], text).close("details");
}

/// The mark of something a person did: `human` and who.
pub fn human_mark(h: &mut Html, author: &str) {
    h.elem("span", &[("class", "badge human"), ("data-author", author)], &format!("human: {author}"));
}

/// A small badge.
pub fn badge(h: &mut Html, text: &str) {
    h.elem("span", &[("class", "badge")], text);
}

/// A score as the terminal shows it: whole numbers without decimals, else two.
pub fn score(v: f64) -> String {
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.2}") }
}

/// `key: value` pairs in a row.
pub fn score_line(h: &mut Html, pairs: impl IntoIterator<Item = (String, String)>) {
    h.open("div", &[("class", "scores")]);
    for (k, v) in pairs {
        h.open("span", &[("data-key", &k)]).text(&k).text(": ").open("b", &[]).text(&v).close("b").close("span");
    }
    h.close("div");
}

/// Rows of `dt`/`dd`.
pub fn meta_list(h: &mut Html, rows: &[(&str, String)]) {
    h.open("dl", &[("class", "meta")]);
    for (k, v) in rows.iter().filter(|(_, v)| !v.is_empty()) {
        h.elem("dt", &[], k).elem("dd", &[], v);
    }
    h.close("dl");
}

/// A table of text cells; cells that parse as numbers align right.
pub fn table(h: &mut Html, class: &str, header: &[String], rows: &[Vec<String>]) {
    h.open("table", &[("class", class)]).open("thead", &[]).open("tr", &[]);
    for c in header {
        h.elem("th", &[], c);
    }
    h.close("tr").close("thead").open("tbody", &[]);
    for r in rows {
        h.open("tr", &[]);
        for c in r {
            if c.parse::<f64>().is_ok() {
                h.elem("td", &[("class", "num")], c);
            } else {
                h.elem("td", &[], c);
            }
        }
        h.close("tr");
    }
    h.close("tbody").close("table");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_allows_only_its_own_script() {
        let p = page("<t>", &Html::new());
        // The policy is an attribute value: its quotes are escaped.
        let nonce = p.split("&#39;nonce-").nth(1).and_then(|s| s.split("&#39;").next()).expect("a nonce in the policy");
        assert_eq!(nonce.len(), 32);
        assert!(p.contains(&format!("<script nonce=\"{nonce}\">")));
        assert_eq!(p.matches("<script").count(), 1);
        assert!(p.contains("<title>&lt;t&gt;</title>"));
        assert!(!p.contains("http://") && !p.contains("https://"));
    }

    #[test]
    fn long_texts_fold() {
        let mut h = Html::new();
        text_block(&mut h, "reply", "short");
        assert!(!h.as_str().contains("<details>"));
        text_block(&mut h, "reply", &"word ".repeat(200));
        assert!(h.as_str().contains("<details><summary>reply — word"));
    }
}
