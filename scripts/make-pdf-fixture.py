#!/usr/bin/env python3
"""Write tests/fixtures/personas/interviews.pdf: a small two-page PDF with
real text (Helvetica, WinAnsi) for the persona builder's PDF reading test.
The text was written for the moot project; it describes no real study.

Usage: python3 scripts/make-pdf-fixture.py [OUT] [PAGES]
"""
import sys

PAGE_TEXT = [
    [
        "Reading aloud with young children: a sample interview study",
        "",
        "Sample document written for the moot project tests.",
        "",
        "A kindergarten teacher told us that a question must be short",
        "enough to ask without losing the class at the page turn.",
        "",
        "Parents said the answer has to come from the story itself so",
        "that the child is never corrected unfairly at bedtime.",
    ],
    [
        "Findings continued",
        "",
        "Speech therapists asked for questions a child can answer with",
        "one word or by pointing at the picture.",
        "",
        "References",
        "",
        "Sample, A. (2020). An invented entry that the reader leaves out.",
    ],
]


def escape(s):
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def content(lines):
    out = ["BT", "/F1 11 Tf", "72 740 Td"]
    for line in lines:
        if line:
            out.append("(%s) Tj" % escape(line))
        out.append("0 -14 Td")
    out.append("ET")
    return "\n".join(out).encode("latin-1")


def build(pages):
    objects = []  # bodies, 1-based ids
    def add(body):
        objects.append(body)
        return len(objects)

    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    pages_id = len(objects) + 1 + 2 * len(pages)
    kids = []
    for lines in pages:
        stream = content(lines)
        c = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        p = add(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>"
            % (pages_id, font, c)
        )
        kids.append(p)
    assert add(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))) == pages_id
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for o in offsets:
        out += b"%010d 00000 n \n" % o
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, catalog, xref)
    return bytes(out)


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/personas/interviews.pdf"
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    pages = PAGE_TEXT
    if count:
        # A long document: the first page's text repeated with a page number (benchmarks).
        pages = [["Page %d" % (n + 1), ""] + PAGE_TEXT[0][2:] + [""] + PAGE_TEXT[1][2:4] * 3 for n in range(count)]
    with open(path, "wb") as f:
        f.write(build(pages))
