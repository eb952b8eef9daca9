//! Markup under construction, built so that text from a log can never
//! become markup.
//!
//! Text enters an [`Html`] only through [`Html::text`] and attribute
//! values, and both go through [`escape`]; tags, attribute names and the
//! page's own CSS and script are `&'static str`, so only this crate's
//! source can write them. A model's reply containing `<script>` lands in
//! the page as `&lt;script&gt;`.

/// Escape text for an HTML text node or a double- or single-quoted
/// attribute value: `&`, `<`, `>`, `"` and `'` become character references.
pub fn escape(s: &str, out: &mut String) {
    let mut rest = s;
    while let Some(i) = rest.find(['&', '<', '>', '"', '\'']) {
        out.push_str(&rest[..i]);
        out.push_str(match rest.as_bytes()[i] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            _ => "&#39;",
        });
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
}

/// A fragment of a page.
#[derive(Debug, Default, Clone)]
pub struct Html {
    buf: String,
}

impl Html {
    pub fn new() -> Self {
        Self::default()
    }

    /// Markup written in this crate's source (a tag, an entity, the page's CSS).
    pub fn raw(&mut self, markup: &'static str) -> &mut Self {
        self.buf.push_str(markup);
        self
    }

    /// Text, escaped.
    pub fn text(&mut self, s: &str) -> &mut Self {
        escape(s, &mut self.buf);
        self
    }

    /// `<tag a="v" …>`, each value escaped.
    pub fn open(&mut self, tag: &'static str, attrs: &[(&'static str, &str)]) -> &mut Self {
        self.buf.push('<');
        self.buf.push_str(tag);
        for (name, value) in attrs {
            self.buf.push(' ');
            self.buf.push_str(name);
            self.buf.push_str("=\"");
            escape(value, &mut self.buf);
            self.buf.push('"');
        }
        self.buf.push('>');
        self
    }

    pub fn close(&mut self, tag: &'static str) -> &mut Self {
        self.buf.push_str("</");
        self.buf.push_str(tag);
        self.buf.push('>');
        self
    }

    /// `<tag …>text</tag>`.
    pub fn elem(&mut self, tag: &'static str, attrs: &[(&'static str, &str)], text: &str) -> &mut Self {
        self.open(tag, attrs).text(text).close(tag)
    }

    /// Another fragment, as it is (it was built the same way).
    pub fn append(&mut self, other: &Html) -> &mut Self {
        self.buf.push_str(&other.buf);
        self
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn into_string(self) -> String {
        self.buf
    }

    pub fn as_str(&self) -> &str {
        &self.buf
    }
}

/// A name safe in a file name and a URL path: letters, digits, `-`, `_`
/// and `.` kept, anything else `_`, never starting with a dot.
pub fn file_stem(s: &str) -> String {
    let mut out: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    if out.is_empty() || out.starts_with('.') {
        out.insert(0, '_');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_attributes_are_escaped() {
        let mut h = Html::new();
        h.open("p", &[("title", "\"><img src=x onerror=alert(1)>")])
            .text("<script>alert('x') & co</script>")
            .close("p");
        assert_eq!(
            h.as_str(),
            "<p title=\"&quot;&gt;&lt;img src=x onerror=alert(1)&gt;\">&lt;script&gt;alert(&#39;x&#39;) &amp; co&lt;/script&gt;</p>"
        );
    }

    #[test]
    fn escape_keeps_other_text() {
        let mut s = String::new();
        escape("plain ünïcode — 5 ≤ 6", &mut s);
        assert_eq!(s, "plain ünïcode — 5 ≤ 6");
    }

    #[test]
    fn file_stems_cannot_leave_their_folder() {
        assert_eq!(file_stem("../../etc/passwd"), "_.._.._etc_passwd");
        assert_eq!(file_stem("20250101-abc"), "20250101-abc");
        assert_eq!(file_stem(""), "_");
        assert_eq!(file_stem("javascript:alert(1)"), "javascript_alert_1_");
    }
}
