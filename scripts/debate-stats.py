#!/usr/bin/env python3
"""How much debating a MAJ-EVAL or CollabEval session shows, from its events.

    scripts/debate-stats.py LOG.jsonl [LOG.jsonl ...]

Each LOG is a session log (sessions/*.jsonl) or the output of
`moot run --headless --json`; both are event JSON lines. For every debate or
discussion turn of an agent it tells:

- whether the turn changed a score: any dimension or overall differs from
  the agent's previous evaluation (its first one, or its previous turn's);
- whether its words (the reply before its JSON evaluation) name another
  member of its group: the full name, or the name without a title such as
  "Dr." (so "Haddad" counts for "Dr. Haddad");
- whether the reply starts with prose (not with `{` or a code fence);
- whether the agent finished with it (said NO MORE COMMENTS).

It also counts the moderator's replies, those whose reason did not match
its scores table (moot asks again once; `parse_error`), and its picks: chosen by the LLM moderator with a
reason (which passed moot's check against its scores table, perhaps when
asked again), by the policy (a single candidate, a fallback), among them
the picks whose reason still did not match the table when asked again
(`reason_replaced`), or by a person.

And how many speeches are distinct: the speeches that stand (a draft
that repeated an earlier speech or misquoted and was asked for again does
not stand; the speech asked for again does) without a `repeats` mark,
moot's rule in `src/engine/repeats.rs`; how many speeches that stand, and
how many debate replies in all (drafts included), carry `misquotes`
(quotations nothing the speaker was shown contains, the rule in
`src/engine/quotes.rs`; logs of version 8 on); and, as a plainer check, how many of all the
agents' replies with words (first evaluations and standing speeches
with prose before their JSON) have words that no earlier reply of the
session had word for word; and how many standing speeches take their own
speaker for the member they answer ("agree with" / "agreed with" /
"agreeing with" followed by the speaker's name, with or without its
title: "Dana, I disagree with Amara" from Amara); and the aggregator's
syntheses: how many replies, how many gave someone a score the results do
not show (`misstates`, the rule in `src/engine/synthesis_claims.rs`; logs
of version 9 on), and whether the one that stands (the last) still does.
Prints one line per log and the totals; `--json` prints them as JSON.
"""

import json
import re
import sys

TITLES = ("dr.", "dr", "ms.", "ms", "mr.", "mr", "mrs.", "mrs", "prof.", "prof")


def words_of(text):
    """The reply without its trailing JSON evaluation (fenced or not)."""
    cut = len(text)
    for marker in ("\n{", "```"):
        at = text.find(marker)
        if at != -1:
            cut = min(cut, at)
    if text.lstrip().startswith("{"):
        cut = 0
    return text[:cut].strip()


def name_forms(name):
    forms = {name.lower()}
    parts = name.split()
    if len(parts) > 1 and parts[0].lower() in TITLES:
        forms.add(" ".join(parts[1:]).lower())
    return forms


def names_someone(words, others):
    hay = words.lower()
    for other in others:
        for form in name_forms(other):
            if re.search(r"(?<![\w])" + re.escape(form) + r"(?![\w])", hay):
                return True
    return False


def against_itself(words, agent):
    hay = words.lower()
    return any(re.search(r"agree(?:d|ing)? with (?:(?:dr|ms|mr|mrs|prof)\.? )?" + re.escape(form) + r"(?![\w])", hay)
               for form in name_forms(agent))


def changed(before, after):
    if before is None or after is None:
        return None
    keys = set(before.get("scores", {})) | set(after.get("scores", {}))
    if any(before.get("scores", {}).get(k) != after.get("scores", {}).get(k) for k in keys):
        return True
    return before.get("overall") != after.get("overall")


def stats(path):
    groups = {}  # agent -> group
    members = {}  # group -> [agents]
    started = {}  # turn -> turn_started event
    latest = {}  # agent -> latest evaluation
    s = {"turns": 0, "changed": 0, "named": 0, "prose_first": 0, "finished": 0, "picks_llm": 0, "picks_policy": 0,
         "picks_human": 0, "fallbacks": 0, "reasons_replaced": 0, "moderator_replies": 0, "reasons_mismatched": 0, "speeches": 0, "distinct_speeches": 0,
         "misquoting_speeches": 0, "misquoting_drafts": 0, "syntheses": 0, "syntheses_misstating": 0,
         "synthesis_standing_misstates": False, "against_itself": 0, "replies": 0, "distinct_replies": 0, "duration_s": None, "status": None}
    debate = []  # (agent, kind, repeats) of every debate turn, in order
    seen_words = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue
            kind = e.get("type")
            if kind == "session_started":
                for a in e.get("agents", []):
                    groups[a["name"]] = a["group"]
                    members.setdefault(a["group"], []).append(a["name"])
            elif kind == "turn_started":
                started[e["turn"]] = e
            elif kind == "speaker_selected":
                by = e.get("by")
                s["picks_llm" if by == "moderator" else "picks_human" if by == "human" else "picks_policy"] += 1
                if e.get("fallback"):
                    s["fallbacks"] += 1
                if e.get("reason_replaced"):
                    s["reasons_replaced"] += 1
            elif kind == "turn_completed":
                t = started.get(e["turn"], {})
                agent = e.get("agent")
                ev = e.get("evaluation")
                if t.get("role") == "moderator":
                    s["moderator_replies"] += 1
                    s["reasons_mismatched"] += "does not match" in (e.get("parse_error") or "")
                if t.get("role") == "aggregator":
                    s["syntheses"] += 1
                    s["syntheses_misstating"] += bool(e.get("misstates"))
                    s["synthesis_standing_misstates"] = bool(e.get("misstates"))
                if t.get("role", "agent") != "agent":
                    continue
                kind_of_turn = t.get("kind", "speak")
                if t.get("phase") in ("debate", "discussion") and kind_of_turn in ("speak", "redraw"):
                    debate.append((agent, kind_of_turn, e.get("repeats"), words_of(e.get("text", "")),
                                   e.get("misquotes") or []))
                    s["misquoting_drafts"] += bool(e.get("misquotes"))
                elif kind_of_turn == "speak" and words_of(e.get("text", "")):
                    s["replies"] += 1
                    w = " ".join(words_of(e["text"]).lower().split())
                    if w not in seen_words:
                        s["distinct_replies"] += 1
                    seen_words.add(w)
                if t.get("phase") in ("debate", "discussion") and kind_of_turn == "speak":
                    s["turns"] += 1
                    if changed(latest.get(agent), ev):
                        s["changed"] += 1
                    text = e.get("text", "")
                    others = [m for m in members.get(groups.get(agent), []) if m != agent]
                    if names_someone(words_of(text), others):
                        s["named"] += 1
                    if not text.lstrip().startswith(("{", "`")):
                        s["prose_first"] += 1
                    if ev is not None and ev.get("done"):
                        s["finished"] += 1
                if ev is not None:
                    latest[agent] = ev
            elif kind == "session_ended":
                # A draft asked for again is followed by its speaker's redraw.
                standing = [d for i, d in enumerate(debate)
                            if not (d[1] == "speak" and
                                    next((n[1] for n in debate[i + 1:] if n[0] == d[0]), None) == "redraw")]
                for agent, _, repeats, words, misquotes in standing:
                    s["speeches"] += 1
                    if not repeats:
                        s["distinct_speeches"] += 1
                    s["misquoting_speeches"] += bool(misquotes)
                    s["against_itself"] += against_itself(words, agent)
                    w = " ".join(words.lower().split())
                    if w:
                        s["replies"] += 1
                        s["distinct_replies"] += w not in seen_words
                    seen_words.add(w)
                s["duration_s"] = e.get("duration_ms", 0) / 1000
                s["status"] = e.get("status")
    return s


def pct(n, d):
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "0/0"


def line(label, s):
    # The totals have no one duration; a log without an end has none either.
    dur = f" in {s['duration_s']:.1f} s" if s["duration_s"] is not None else ""
    return (f"{label}: {s['status']}{dur}; debate turns {s['turns']}: score changed {pct(s['changed'], s['turns'])}, "
            f"named another member {pct(s['named'], s['turns'])}, prose first {pct(s['prose_first'], s['turns'])}, "
            f"finished {pct(s['finished'], s['turns'])}; "
            f"picks: moderator {s['picks_llm']}, policy {s['picks_policy']} (fallbacks {s['fallbacks']}), "
            f"human {s['picks_human']}; moderator replies {s['moderator_replies']}, reasons not matching the table "
            f"{s['reasons_mismatched']} (re-asked), replaced by the policy {s['reasons_replaced']}; "
            f"distinct speeches {pct(s['distinct_speeches'], s['speeches'])}, "
            f"misquoting speeches {pct(s['misquoting_speeches'], s['speeches'])} "
            f"(debate replies misquoting, drafts included: {s['misquoting_drafts']}), "
            f"speeches that answer their own speaker {pct(s['against_itself'], s['speeches'])}, "
            f"distinct replies {pct(s['distinct_replies'], s['replies'])}; "
            f"syntheses {s['syntheses']}, misstating {s['syntheses_misstating']}"
            f"{' (the standing one too)' if s['synthesis_standing_misstates'] else ''}")


def main(argv):
    as_json = "--json" in argv
    paths = [a for a in argv if a != "--json"]
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    all_stats = {p: stats(p) for p in paths}
    total = {k: 0 for k in ("turns", "changed", "named", "prose_first", "finished", "picks_llm", "picks_policy", "picks_human",
                            "fallbacks", "reasons_replaced", "moderator_replies", "reasons_mismatched", "speeches", "distinct_speeches", "misquoting_speeches",
                            "misquoting_drafts", "against_itself", "replies",
                            "distinct_replies", "syntheses", "syntheses_misstating", "synthesis_standing_misstates")}
    for s in all_stats.values():
        for k in total:
            total[k] += s[k]
    if as_json:
        print(json.dumps({"logs": all_stats, "total": total}, indent=2))
        return 0
    for p, s in all_stats.items():
        print(line(p, s))
    if len(paths) > 1:
        total.update(duration_s=None, status=f"{len(paths)} logs")
        print(line("total", total))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
