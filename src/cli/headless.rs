//! The headless transcript: a readable, live rendering of session events on a
//! plain output stream. Used by `moot run --headless` and `moot sessions show`.
//!
//! Several turns may stream at once (independent evaluations run
//! concurrently); one of them is shown live and the others are buffered and
//! shown, in start order, as soon as the live one ends — so every agent's
//! words still appear as a continuous block. A judge's reply shows its
//! words, not the JSON verdict it ends with: the line after it gives the
//! verdict, whatever its kind, as the screens do (`crate::tui::words`).

use std::collections::{HashMap, VecDeque};
use std::io::{self, Write};

use crate::engine::prompts::{fmt_num, reply_words};
use crate::session::event::{EndStatus, Evaluation, Event, EventKind, OverrideTarget, Phase, Role, TurnKind};
use crate::session::pairwise::PairRef;
use crate::tui::words::{
    Part, Stress, as_shown, asks_verdict, evaluation_parts, joined, pair_parts, pick_line, reply_shown, steps_lines,
};

pub use crate::paint::Paint;

/// Output waiting for its place: a turn, or lines that arrived while another turn was streaming.
#[derive(Debug)]
enum Block {
    Turn(u64),
    Lines(String),
}

#[derive(Debug, Default)]
struct TurnBuf {
    header: String,
    /// What is still to be printed of the turn (a turn not shown live yet).
    text: String,
    /// Lines to print after the text, once the turn ended.
    footer: Option<String>,
    /// The reply ends with a JSON verdict, which is not printed: the footer
    /// shows it.
    asks: bool,
    /// The reply so far, as streamed.
    raw: String,
    /// Its words taken for printing so far.
    words: String,
    /// Pairwise: the pair compared; the turn ends at its `pair_verdict`,
    /// whose label goes into the footer.
    pair: Option<PairRef>,
    /// Pairwise: the text and token line waiting for the verdict.
    pending: Option<(String, String)>,
}

impl TurnBuf {
    /// What a delta adds to the printed words: for a reply that ends with
    /// a verdict, only its prose (see [`reply_words`]).
    fn add(&mut self, delta: &str) -> String {
        if !self.asks {
            return delta.to_string();
        }
        self.raw.push_str(delta);
        let words = reply_words(&self.raw, false, false);
        let new = words.strip_prefix(self.words.as_str()).unwrap_or("").to_string();
        self.words.push_str(&new);
        new
    }

    /// The rest of the words of the complete reply `text`: what was not
    /// printed yet ([`reply_shown`]; `read`: what its verdict holds to show
    /// for a reply that was nothing else).
    fn rest(&self, text: &str, read: Option<&str>) -> String {
        if !self.asks {
            return String::new();
        }
        reply_shown(text, true, true, read).strip_prefix(self.words.as_str()).unwrap_or("").to_string()
    }

    /// Forget a failed attempt: the next one streams from the start.
    fn restart(&mut self) {
        self.text.clear();
        self.raw.clear();
        self.words.clear();
    }
}

/// Renders events as a transcript.
pub struct Transcript<W: Write> {
    out: W,
    paint: Paint,
    turns: HashMap<u64, TurnBuf>,
    queue: VecDeque<Block>,
    /// Turns not shown at all (moderator choices: `speaker_selected` says it better).
    hidden: std::collections::HashSet<u64>,
    live: Option<u64>,
    /// The cursor is not at the start of a line.
    mid_line: bool,
    dimension_order: Vec<String>,
    /// The panel's method is built on weighted scores ([`crate::panel::Panel::shows_weighted`]).
    show_weighted: bool,
    /// What the run's consensus checks mean.
    consensus: Option<crate::panel::ConsensusCheck>,
    /// What each agent's latest reply did that a speech is asked for again
    /// for ("repeated Ann's speech", "misquoted"), when it did.
    drafts: HashMap<String, String>,
}

impl<W: Write> Transcript<W> {
    pub fn new(out: W, paint: Paint) -> Self {
        Self {
            out,
            paint,
            turns: HashMap::new(),
            queue: VecDeque::new(),
            hidden: Default::default(),
            live: None,
            mid_line: false,
            dimension_order: Vec::new(),
            show_weighted: true,
            consensus: None,
            drafts: HashMap::new(),
        }
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    /// Print what is still held back behind a turn the log never ends (cut
    /// by a crash, or its end on a damaged line), marking each such turn.
    pub fn finish(&mut self) -> io::Result<()> {
        let mut open: Vec<u64> = self.turns.iter().filter(|(_, b)| b.footer.is_none()).map(|(t, _)| *t).collect();
        open.sort_unstable();
        for turn in open {
            let footer = self.paint.dim("(no end of this turn in the log)");
            self.end_turn(turn, None, footer)?;
        }
        self.flush_live()
    }

    fn line(&mut self, s: &str) -> io::Result<()> {
        if self.live.is_some() || !self.queue.is_empty() {
            // Keep a streaming turn's words together: show this after it.
            self.queue.push_back(Block::Lines(s.to_string()));
            return Ok(());
        }
        self.write_line(s)
    }

    fn write_line(&mut self, s: &str) -> io::Result<()> {
        if self.mid_line {
            writeln!(self.out)?;
            self.mid_line = false;
        }
        writeln!(self.out, "{s}")
    }

    /// A verdict's line, its decision in bold and its notices in yellow.
    fn styled(&self, parts: &[Part]) -> String {
        joined(parts, |part| match part.stress {
            Stress::Plain => part.text.clone(),
            Stress::Decision => self.paint.bold(&part.text),
            Stress::Notice => self.paint.yellow(&part.text),
        })
    }

    fn scores(&self, ev: &Evaluation) -> String {
        self.styled(&evaluation_parts(&self.dimension_order, &as_shown(ev, self.show_weighted), None, false))
    }

    fn flush_live(&mut self) -> io::Result<()> {
        // Show waiting output, in order, until a turn is still streaming.
        while self.live.is_none() {
            let Some(block) = self.queue.pop_front() else { break };
            let next = match block {
                Block::Lines(l) => {
                    self.write_line(&l)?;
                    continue;
                }
                Block::Turn(t) => t,
            };
            let Some(buf) = self.turns.get(&next) else { continue };
            let (header, text, footer) = (buf.header.clone(), buf.text.clone(), buf.footer.clone());
            self.write_line(&header)?;
            if !text.is_empty() {
                write!(self.out, "{text}")?;
                self.mid_line = !text.ends_with('\n');
            }
            match footer {
                Some(f) => {
                    if !f.is_empty() {
                        self.write_line(&f)?;
                    }
                    self.turns.remove(&next);
                }
                None => self.live = Some(next),
            }
        }
        self.out.flush()
    }

    /// Finish a turn: print its footer now if it is live, else keep it for its turn.
    fn end_turn(&mut self, turn: u64, text: Option<&str>, footer: String) -> io::Result<()> {
        if self.live == Some(turn) {
            self.live = None;
            self.turns.remove(&turn);
            if !footer.is_empty() {
                self.write_line(&footer)?;
            }
            self.flush_live()
        } else {
            if let Some(b) = self.turns.get_mut(&turn) {
                if let Some(t) = text {
                    b.text = t.to_string();
                }
                b.footer = Some(footer);
            }
            Ok(())
        }
    }

    /// End a turn whose reply is complete: print the rest of its words
    /// (`read`: what its verdict holds, see [`TurnBuf::rest`]), then `footer`.
    fn finish_words(&mut self, turn: u64, text: &str, read: Option<&str>, footer: String) -> io::Result<()> {
        let Some(b) = self.turns.get(&turn) else { return self.end_turn(turn, Some(text), footer) };
        let rest = b.rest(text, read);
        let shown = if b.asks { format!("{}{rest}", b.words) } else { text.to_string() };
        if self.live == Some(turn) && !rest.is_empty() {
            write!(self.out, "{rest}")?;
            self.mid_line = !rest.ends_with('\n');
        }
        self.end_turn(turn, Some(&shown), footer)
    }

    /// Render one event.
    pub fn event(&mut self, event: &Event) -> io::Result<()> {
        let p = self.paint;
        match &event.kind {
            EventKind::SessionStarted {
                session_id,
                protocol,
                panel,
                item,
                agents,
                roles,
                provider_note,
                preset,
                departures,
                schema_version,
                ..
            } => {
                let name = panel.get("name").and_then(|v| v.as_str()).unwrap_or("panel");
                self.dimension_order = panel
                    .get("dimensions")
                    .and_then(|d| d.as_array())
                    .map(|a| a.iter().filter_map(|d| d.get("key")?.as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                self.line(&p.bold(&format!("moot · {name} · {protocol} · item {}", item.id)))?;
                self.line(&p.dim(&format!("session {session_id}")))?;
                let recorded = serde_json::from_value::<crate::panel::Panel>(panel.clone()).ok();
                self.show_weighted = recorded.as_ref().is_none_or(crate::panel::Panel::shows_weighted);
                let departures =
                    crate::session::fold::logged_departures(*schema_version, departures, recorded.as_ref());
                self.line(&p.dim(&crate::panel::Panel::method_line(recorded.as_ref(), *preset, &departures)))?;
                // Logs written before protocols ran as stages do not say how they were composed.
                if let Some(stages) = recorded.as_ref().and_then(|p| p.stages_line()).filter(|_| *schema_version >= 5) {
                    self.line(&p.dim(&stages))?;
                }
                self.consensus = crate::session::fold::consensus_check(protocol, recorded.as_ref());
                if let Some(note) = provider_note {
                    self.line(&p.dim(&format!("provider: {note}")))?;
                }
                let mut models: Vec<String> = agents.iter().map(|a| format!("{}/{}", a.provider, a.model)).collect();
                models.extend(roles.values().map(|r| format!("{}/{}", r.provider, r.model)));
                models.sort();
                models.dedup();
                self.line(&p.dim(&format!("models: {}", models.join(", "))))?;
                let mut groups: Vec<(String, Vec<String>)> = Vec::new();
                for a in agents {
                    match groups.iter_mut().find(|(g, _)| *g == a.group) {
                        Some((_, names)) => names.push(a.name.clone()),
                        None => groups.push((a.group.clone(), vec![a.name.clone()])),
                    }
                }
                for (g, names) in groups {
                    self.line(&format!("  {} {}", p.cyan(&g), names.join(", ")))?;
                }
            }
            EventKind::PhaseStarted { phase, group, round } => {
                let mut label = phase.as_str().replace('_', " ");
                if let Some(g) = group {
                    label.push_str(&format!(" · {g}"));
                }
                if let Some(r) = round {
                    label.push_str(&format!(" · round {r}"));
                }
                self.line("")?;
                self.line(&p.bold(&format!("── {label} ──")))?;
            }
            EventKind::SpeakerSelected { group, agent, by, reason, fallback, .. } => {
                self.line(&p.magenta(&format!("» {}", pick_line(group, agent, *by, reason, fallback.as_deref()))))?;
            }
            EventKind::TurnStarted { turn, kind: TurnKind::Select, .. } => {
                self.hidden.insert(*turn);
            }
            EventKind::TurnStarted { turn, agent, group, phase, round, role, kind, pair, .. } => {
                let mut header = format!("▸ {}", p.bold(agent));
                if let Some(g) = group.as_ref().filter(|_| *role == Role::Agent) {
                    header.push_str(&p.dim(&format!(" ({g})")));
                }
                let what = match (kind, phase) {
                    (TurnKind::Repair, _) => Some("repair request".to_string()),
                    (TurnKind::Redraw, _) => Some(match self.drafts.get(agent) {
                        Some(did) => format!("asked again: the draft {did}"),
                        None => "asked again".to_string(),
                    }),
                    (TurnKind::Select, _) => Some("choosing the next speaker".to_string()),
                    (_, Phase::Initial) => Some("first evaluation".to_string()),
                    (_, Phase::Discussion) => round.map(|r| format!("round {r}")),
                    (_, Phase::Comparison) => pair.as_ref().map(|p| {
                        let (a, b) = p.shown();
                        let vote = round.filter(|&r| r > 1).map(|r| format!(", vote {r}")).unwrap_or_default();
                        format!("A = {a}, B = {b}{vote}")
                    }),
                    _ => None,
                };
                if let Some(w) = what {
                    header.push_str(&p.dim(&format!(" — {w}")));
                }
                let asks = asks_verdict(*role, *kind, *phase);
                self.turns.insert(*turn, TurnBuf { header, asks, pair: pair.clone(), ..Default::default() });
                self.queue.push_back(Block::Turn(*turn));
                self.flush_live()?;
            }
            EventKind::TurnDelta { turn, .. } if self.hidden.contains(turn) => {}
            EventKind::TurnDelta { turn, text } => {
                let Some(b) = self.turns.get_mut(turn) else { return Ok(()) };
                let text = b.add(text);
                if self.live != Some(*turn) {
                    b.text.push_str(&text);
                } else if !text.is_empty() {
                    write!(self.out, "{text}")?;
                    self.mid_line = !text.ends_with('\n');
                    self.out.flush()?;
                }
            }
            EventKind::TurnCompleted { turn, .. } if self.hidden.contains(turn) => {}
            EventKind::TurnCompleted {
                turn,
                agent,
                text,
                evaluation,
                parse_error,
                usage,
                latency_ms,
                cached,
                truncated,
                repeats,
                misquotes,
                misstates,
                ..
            } => {
                let mut footer = match (evaluation, parse_error) {
                    (Some(ev), _) => {
                        let salvaged = ev
                            .salvaged
                            .as_ref()
                            .map(|why| p.yellow(&format!(" · salvaged: {why}")))
                            .unwrap_or_default();
                        format!("  {} {}{salvaged}", p.green("✓"), self.scores(ev))
                    }
                    (None, Some(err)) => format!("  {} {}", p.red("✗ no readable evaluation:"), err),
                    (None, None) => String::new(),
                };
                let est = if usage.estimated { "~" } else { "" };
                let cache = match (*cached, *truncated) {
                    (true, _) => ", cached",
                    (false, true) => ", cut at the reply limit",
                    (false, false) => "",
                };
                let repeated = repeats.as_ref().map(|first| format!(", repeats {first}")).unwrap_or_default();
                let stats = p.dim(&format!(
                    "  [{est}{} in / {est}{} out tokens, {} ms{cache}{repeated}]",
                    usage.input_tokens, usage.output_tokens, latency_ms
                ));
                if footer.is_empty() {
                    footer = stats;
                } else {
                    footer = format!("{footer}\n{stats}");
                }
                match draft_words(repeats.as_deref(), !misquotes.is_empty(), !misstates.is_empty()) {
                    Some(did) => self.drafts.insert(agent.clone(), did),
                    None => self.drafts.remove(agent),
                };
                for quote in misquotes {
                    footer.push_str(&format!(
                        "\n  {}",
                        p.yellow(&format!("misquotes “{quote}” (not in the item or the discussion)"))
                    ));
                }
                for claim in misstates {
                    footer.push_str(&format!("\n  {}", p.yellow(&format!("misstates {claim}"))));
                }
                // A pair's verdict follows the turn: its words and its line wait for it.
                if let Some(b) = self.turns.get_mut(turn).filter(|b| b.pair.is_some() && parse_error.is_none()) {
                    b.pending = Some((text.clone(), footer));
                    return Ok(());
                }
                let read = parse_error.is_none().then(|| evaluation.as_ref().map_or("", |e| e.justification.as_str()));
                self.finish_words(*turn, text, read, footer)?;
            }
            EventKind::TurnFailed { turn, agent, error, attempt, will_retry, retry_in_ms } => {
                let msg = if *will_retry {
                    let wait = retry_in_ms.map(|ms| format!(" in {:.1} s", ms as f64 / 1000.0)).unwrap_or_default();
                    p.yellow(&format!("  ! {agent}: attempt {attempt} failed: {error}; retrying{wait}"))
                } else {
                    p.red(&format!("  ✗ {agent}: attempt {attempt} failed: {error}"))
                };
                if self.hidden.contains(turn) {
                    self.line(&msg)?;
                } else if !*will_retry {
                    self.end_turn(*turn, None, msg)?;
                } else if self.live == Some(*turn) {
                    self.write_line(&msg)?;
                    if let Some(b) = self.turns.get_mut(turn) {
                        b.restart();
                    }
                } else if let Some(b) = self.turns.get_mut(turn) {
                    b.restart();
                }
            }
            EventKind::TurnAbandoned { turn, agent, reason } => {
                let msg = p.yellow(&format!("  ↻ {agent}: turn {turn} abandoned: {reason}"));
                if self.hidden.contains(turn) {
                    self.line(&msg)?;
                } else {
                    self.end_turn(*turn, None, msg)?;
                }
            }
            EventKind::ConsensusChecked { group, round, spread, reached, rule, labels, .. } => {
                let where_ = crate::session::event::check_place(group.as_deref(), *round);
                let spreads: Vec<String> =
                    spread.iter().map(|(k, v)| format!("{k} {}", fmt_num((v * 100.0).round() / 100.0))).collect();
                let words = crate::session::fold::consensus_words(self.consensus, *reached, rule);
                let verdict = if *reached { p.green(&words) } else { p.yellow(&words) };
                if labels.is_empty() {
                    self.line(&format!("  ≈ {where_}: {verdict}; spread: {}", spreads.join(", ")))?;
                } else {
                    let said: Vec<String> = labels.iter().map(|(agent, label)| format!("{agent} {label}")).collect();
                    self.line(&format!("  ≈ {where_}: {verdict}: {}", said.join(", ")))?;
                }
            }
            EventKind::CriteriaChecked { .. } => {
                if let Some(line) = event.kind.criteria_line() {
                    self.line(&format!("  ≈ {line}"))?;
                }
            }
            EventKind::FinalEvaluations { group, evaluations, .. } => {
                self.line(&p.dim(&format!("  final evaluations in {group}:")))?;
                for (agent, ev) in evaluations {
                    let s = self.scores(ev);
                    self.line(&format!("    {agent}: {s}"))?;
                }
            }
            EventKind::HumanComment { text, author, group } => {
                let to = group.as_ref().map(|g| format!(" to {g}")).unwrap_or_default();
                self.line(&p.cyan(&format!("✎ {author}{to}: {text}")))?;
            }
            EventKind::ScoreOverridden { target, dimension, from, to, reason, author } => {
                let what = match target {
                    OverrideTarget::Agent { agent } => format!("{agent}'s"),
                    OverrideTarget::Turn { turn, agent } => format!("{agent}'s (turn {turn})"),
                    OverrideTarget::Final { group: Some(g) } => format!("{g}'s final"),
                    OverrideTarget::Final { group: None } => "the final".into(),
                };
                let from = from.map(fmt_num).unwrap_or_else(|| "—".into());
                let why = reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default();
                self.line(&p.cyan(&format!("✎ {author} set {what} {dimension}: {from} → {}{why}", fmt_num(*to))))?;
            }
            EventKind::HumanRating { scores, author } => {
                let s: Vec<String> = scores.iter().map(|(k, v)| format!("{k} {}", fmt_num(*v))).collect();
                self.line(&p.cyan(&format!("✎ {author} rated the item: {}", s.join(", "))))?;
            }
            EventKind::Paused { author } => self.line(&p.yellow(&format!("⏸ paused by {author}")))?,
            EventKind::Resumed { author } => self.line(&p.yellow(&format!("▶ resumed by {author}")))?,
            EventKind::Stepped { author } => self.line(&p.yellow(&format!("⏯ one step by {author}")))?,
            EventKind::SpeakerRequested { group, agent, veto, author } => {
                let what = if *veto { "vetoed" } else { "picked" };
                self.line(&p.cyan(&format!("✎ {author} {what} {agent} as the next speaker of {group}")))?;
            }
            EventKind::StopRequested { author } => self.line(&p.yellow(&format!("■ stop requested by {author}")))?,
            EventKind::CommandRejected { command, reason, .. } => {
                self.line(&p.red(&format!("✗ {command} not applied: {reason}")))?;
            }
            EventKind::Waiting { .. } => {}
            EventKind::EvaluationRevised { .. }
            | EventKind::DefinitionProposed { .. }
            | EventKind::AspectProposed { .. }
            | EventKind::RevisionDecided { .. }
            | EventKind::ProposalAdopted { .. } => {
                let line = crate::session::sage::note(&event.kind).unwrap_or_default();
                let human = matches!(event.kind, EventKind::RevisionDecided { .. } | EventKind::ProposalAdopted { .. });
                self.line(&if human { p.cyan(&line) } else { p.magenta(&line) })?;
            }
            EventKind::EvaluationSteps { dimension, steps, source, author, turn } => {
                let lines = steps_lines(dimension, steps, *source, author.as_deref(), *turn);
                for (i, l) in lines.iter().enumerate() {
                    self.line(&if i == 0 { p.bold(l) } else { l.clone() })?;
                }
            }
            EventKind::HistoryTrimmed { .. } => {
                if let Some(view) = crate::session::fold::TrimView::of(&event.kind) {
                    self.line(&p.dim(&format!("  ✂ {}", view.summary())))?;
                }
            }
            EventKind::PairVerdict { turn, first, second, swapped, label, criteria, confidence, reasoning, .. } => {
                let pair = PairRef { first: first.clone(), second: second.clone(), swapped: *swapped };
                let line = format!(
                    "  {} {}",
                    p.green("✓"),
                    self.styled(&pair_parts(&pair, *label, criteria, *confidence, false))
                );
                match self.turns.get_mut(turn).and_then(|b| b.pending.take()) {
                    Some((text, stats)) => {
                        self.finish_words(*turn, &text, Some(reasoning), format!("{line}\n{stats}"))?
                    }
                    None => self.line(&line)?,
                }
            }
            EventKind::PairDecided { judge, first, second, winner, flip, no_result, .. } => {
                let who = judge.as_deref().unwrap_or("panel");
                let what = match (no_result, winner) {
                    (Some(why), _) => p.red(&format!("no decision: {why}")),
                    (None, Some(w)) => format!("{w} preferred"),
                    (None, None) => "tie".to_string(),
                };
                let flip = flip
                    .filter(|f| f.is_flip())
                    .map(|f| p.yellow(&format!(" · flip: {}", f.describe())))
                    .unwrap_or_default();
                self.line(&format!("{} {first} vs {second} · {who}: {what}{flip}", p.bold("◆")))?;
            }
            EventKind::PairSettled { first, second, winner, author } => {
                let what = winner.as_deref().map(|w| format!("{w} preferred")).unwrap_or_else(|| "tie".into());
                self.line(&p.yellow(&format!("◆ {first} vs {second} settled by {author} (human): {what}")))?;
            }
            EventKind::PairVoted { .. } | EventKind::PairAbstained { .. } | EventKind::PairLabelled { .. } => {
                if let Some(note) = crate::session::pairwise::human_note(&event.kind) {
                    self.line(&p.yellow(&format!("◆ {note}")))?;
                }
            }
            EventKind::BlindOrder { pairs } => {
                self.line(&p.dim(&format!(
                    "  blind run: the screen hides names and verdicts of {} pair(s) until a person labels each",
                    pairs.len()
                )))?;
            }
            EventKind::AggregationCompleted {
                group,
                feedback,
                scores,
                overall,
                original,
                method,
                no_result,
                left_out,
                labels,
                original_labels,
                ranking,
            } => {
                let title = match group {
                    Some(g) => format!("result · {g}"),
                    None => "RESULT".to_string(),
                };
                let method = method.as_ref().map(|m| format!(" ({m})")).unwrap_or_default();
                let mut parts: Vec<String> = Vec::new();
                let keys: Vec<&String> = if self.dimension_order.is_empty() {
                    scores.keys().collect()
                } else {
                    self.dimension_order.iter().collect()
                };
                for k in keys {
                    if let Some(v) = scores.get(k) {
                        let was =
                            original.get(k).map(|o| format!(" (was {})", fmt_num(round2(*o)))).unwrap_or_default();
                        parts.push(format!("{k} {}{was}", fmt_num(round2(*v))));
                    }
                }
                if let Some(o) = overall {
                    let was =
                        original.get("overall").map(|o| format!(" (was {})", fmt_num(round2(*o)))).unwrap_or_default();
                    parts.push(p.bold(&format!("overall {}{was}", fmt_num(round2(*o)))));
                }
                parts.extend(labels.iter().map(|(k, l)| {
                    let was = original_labels.get(k).map(|o| format!(" (was {o})")).unwrap_or_default();
                    format!("{k} {l}{was}")
                }));
                parts.extend(ranking.iter().enumerate().map(|(i, r)| {
                    let human = if r.human { " (human)" } else { "" };
                    let name = format!("{}. {}", i + 1, r.candidate);
                    let name = if i == 0 { p.bold(&name) } else { name };
                    format!("{name} {}W {}L {}T{human}", r.wins, r.losses, r.ties)
                }));
                if group.is_none() && !feedback.is_empty() {
                    self.line("")?;
                    self.line(&p.bold("synthesis:"))?;
                    for l in feedback.lines() {
                        self.line(&format!("  {l}"))?;
                    }
                }
                if let Some(why) = no_result {
                    // Values a person set may stand on an otherwise empty result.
                    let human = if parts.is_empty() {
                        String::new()
                    } else {
                        format!(" (set by a person: {})", parts.join(" · "))
                    };
                    self.line(&format!(
                        "{}{}: {}{human}",
                        p.bold(&title),
                        p.dim(&method),
                        p.red(&format!("no result: {why}"))
                    ))?;
                } else {
                    self.line(&format!("{}{}: {}", p.bold(&title), p.dim(&method), parts.join(" · ")))?;
                }
                if no_result.is_none() && !left_out.is_empty() {
                    self.line(
                        &p.yellow(&format!("  left out of the panel-wide mean (no result): {}", left_out.join(", "))),
                    )?;
                }
            }
            EventKind::SessionEnded { status, error, reason, usage, duration_ms } => {
                self.line("")?;
                let status_s = match status {
                    EndStatus::Completed => p.green("completed"),
                    EndStatus::Stopped => p.yellow("stopped"),
                    EndStatus::Failed => p.red("failed"),
                };
                let est = if usage.total.estimated { " (some estimated)" } else { "" };
                self.line(&format!(
                    "session {status_s} in {:.1} s · {} calls · {} tokens in, {} out{est}",
                    *duration_ms as f64 / 1000.0,
                    usage.calls,
                    usage.total.input_tokens,
                    usage.total.output_tokens
                ))?;
                if !usage.by_role.is_empty() {
                    let roles: Vec<String> = usage.by_role.iter().map(|(r, u)| format!("{r} {}", u.total())).collect();
                    self.line(&p.dim(&format!("tokens by role: {}", roles.join(", "))))?;
                }
                if let Some(r) = reason {
                    self.line(&format!("reason: {r}"))?;
                }
                if let Some(e) = error {
                    self.line(&p.red(&format!("error: {e}")))?;
                }
            }
        }
        self.out.flush()
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// What a reply did that it is asked for again for: "repeated Ann's
/// speech", "misquoted", or both; a synthesis's "gave scores the results do
/// not show"; `None` when it did none of these.
fn draft_words(repeats: Option<&str>, misquoted: bool, misstated: bool) -> Option<String> {
    if misstated {
        return Some("gave scores the results do not show".to_string());
    }
    match (repeats, misquoted) {
        (Some(who), false) => Some(format!("repeated {who}'s speech")),
        (Some(who), true) => Some(format!("repeated {who}'s speech and misquoted")),
        (None, true) => Some("misquoted".to_string()),
        (None, false) => None,
    }
}
