//! The `:` command line: parsing, validation against the session, and Tab completion.

use crate::engine::Command;
use crate::session::event::{OverrideTarget, Scores};
use crate::session::fold::SessionView;

/// Command names, for completion and help.
pub const COMMANDS: &[&str] = &[
    "comment", "override", "speaker", "veto", "pause", "resume", "step", "stop", "rate", "steps", "accept", "reject",
    "adopt", "settle", "vote", "abstain", "label", "pair", "quit", "speed", "seek", "theme", "help",
];

/// What a person does to the selected pair (pairwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairVerb {
    /// Decide a tie or a flip.
    Settle,
    /// One more vote, counted with the judges'.
    Vote,
    /// Decline to decide.
    Abstain,
    /// Your own verdict, blind.
    Label,
}

/// What a command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// Send this to the engine.
    Engine(Command),
    /// Leave the screen (asks first while running).
    Quit,
    /// Replay speed.
    Speed(f64),
    /// Replay: jump to the end of this turn.
    Seek(u64),
    Help,
    /// Pairwise: act on the selected pair; `choice` is `a`, `b`, `tie` or a candidate id.
    Pair {
        verb: PairVerb,
        choice: Option<String>,
    },
    /// Pairwise: select pair N (from 1).
    GoPair(usize),
}

/// Agent names and score keys (with `overall` where the panel has one) of a session.
pub fn names(view: &SessionView) -> (Vec<String>, Vec<String>) {
    let agents = view.agents.iter().map(|a| a.info.name.clone()).collect();
    (agents, view.score_keys())
}

fn one_of(what: &str, given: &str, valid: &[String]) -> Result<String, String> {
    if let Some(v) = valid.iter().find(|v| v.as_str() == given) {
        return Ok(v.clone());
    }
    let folded: Vec<&String> = valid.iter().filter(|v| v.eq_ignore_ascii_case(given)).collect();
    if let [one] = folded.as_slice() {
        return Ok((*one).clone());
    }
    Err(format!("unknown {what} \"{given}\"; valid: {}", valid.join(", ")))
}

/// Check a value against the panel's scale.
pub fn check_value(view: &SessionView, given: &str) -> Result<f64, String> {
    let v: f64 = given.trim().parse().map_err(|_| format!("\"{given}\" is not a number"))?;
    if let Some(p) = &view.panel
        && !p.scale.contains(v)
    {
        return Err(format!("{v} is outside the scale {}–{}", p.scale.min, p.scale.max));
    }
    Ok(v)
}

/// Parse a command line (without the leading `:`).
pub fn parse(line: &str, view: &SessionView, author: &str) -> Result<Parsed, String> {
    let line = line.trim();
    let (cmd, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    let words: Vec<&str> = rest.split_whitespace().collect();
    let (agents, dims) = names(view);
    let author = author.to_string();
    let need = |n: usize, usage: &str| if words.len() < n { Err(format!("usage: :{usage}")) } else { Ok(()) };
    let p = match cmd {
        "comment" | "c" => {
            if rest.is_empty() {
                return Err("usage: :comment TEXT".into());
            }
            Parsed::Engine(Command::Comment { text: rest.to_string(), author, group: None })
        }
        "override" | "o" => {
            need(3, "override AGENT|final DIMENSION VALUE [REASON]")?;
            let target = if words[0] == "final" {
                OverrideTarget::Final { group: None }
            } else {
                OverrideTarget::Agent { agent: one_of("agent", words[0], &agents)? }
            };
            let dimension = one_of("dimension", words[1], &dims)?;
            let value = check_value(view, words[2])?;
            let reason = words.get(3..).map(|w| w.join(" ")).filter(|r| !r.is_empty());
            Parsed::Engine(Command::Override { target, dimension, value, reason, author })
        }
        "speaker" | "s" => {
            need(1, "speaker AGENT")?;
            Parsed::Engine(Command::PickSpeaker { agent: one_of("agent", words[0], &agents)?, author })
        }
        "veto" => {
            need(1, "veto AGENT")?;
            Parsed::Engine(Command::VetoSpeaker { agent: one_of("agent", words[0], &agents)?, author })
        }
        "pause" => Parsed::Engine(Command::Pause { author }),
        "resume" => Parsed::Engine(Command::Resume { author }),
        "step" => Parsed::Engine(Command::Step { author }),
        "stop" => Parsed::Engine(Command::Stop { author }),
        "rate" => {
            need(2, "rate DIMENSION VALUE [DIMENSION VALUE…]")?;
            if !words.len().is_multiple_of(2) {
                return Err("usage: :rate DIMENSION VALUE [DIMENSION VALUE…]".into());
            }
            let mut scores = Scores::new();
            for pair in words.chunks(2) {
                scores.insert(one_of("dimension", pair[0], &dims)?, check_value(view, pair[1])?);
            }
            Parsed::Engine(Command::Rate { scores, author })
        }
        "steps" => {
            need(2, "steps DIMENSION TEXT (steps separated by ` | `)")?;
            let keys = view.dimension_keys();
            let dimension = one_of("dimension", words[0], &keys)?;
            let text = rest[words[0].len()..].trim();
            let steps = text.split(" | ").map(str::trim).filter(|s| !s.is_empty()).collect::<Vec<_>>().join("\n");
            Parsed::Engine(Command::EditSteps { dimension, steps, author })
        }
        "accept" | "reject" => {
            need(1, &format!("{cmd} DIMENSION [AGENT]"))?;
            let revised: Vec<String> = view.sage.revisions.iter().map(|r| r.dimension.clone()).collect();
            if revised.is_empty() {
                return Err("the meta-evaluator has revised nothing to accept or reject".into());
            }
            let dimension = one_of("revised dimension", words[0], &revised)?;
            let agent = words.get(1).map(|a| one_of("agent", a, &agents)).transpose()?;
            Parsed::Engine(Command::Decide { dimension, agent, accept: cmd == "accept", author })
        }
        "adopt" => {
            need(1, "adopt KEY (a proposed definition or new aspect)")?;
            let keys: Vec<String> = view.sage.proposals.iter().map(|p| p.key.clone()).collect();
            if keys.is_empty() {
                return Err("the meta-evaluator has proposed nothing to adopt".into());
            }
            Parsed::Engine(Command::Adopt { key: one_of("proposal", words[0], &keys)?, author })
        }
        "settle" | "vote" | "label" => {
            need(1, &format!("{cmd} a|b|tie (as the screen shows the pair, or a candidate id)"))?;
            let verb = match cmd {
                "settle" => PairVerb::Settle,
                "vote" => PairVerb::Vote,
                _ => PairVerb::Label,
            };
            Parsed::Pair { verb, choice: Some(words[0].to_string()) }
        }
        "abstain" => Parsed::Pair { verb: PairVerb::Abstain, choice: None },
        "pair" => {
            need(1, "pair N")?;
            Parsed::GoPair(words[0].parse().map_err(|_| format!("\"{}\" is not a pair number", words[0]))?)
        }
        "quit" | "q" => Parsed::Quit,
        "speed" => {
            need(1, "speed X (0.25 to 32)")?;
            let x: f64 = words[0].trim_start_matches(['x', '×']).parse().map_err(|_| "usage: :speed X".to_string())?;
            Parsed::Speed(x)
        }
        "seek" | "turn" => {
            need(1, "seek TURN")?;
            Parsed::Seek(words[0].parse().map_err(|_| format!("\"{}\" is not a turn number", words[0]))?)
        }
        "help" => Parsed::Help,
        "" => return Err("type a command: comment, override, speaker, pause, resume, step, stop, rate, quit".into()),
        other => return Err(format!("unknown command \"{other}\"; commands: {}", COMMANDS.join(", "))),
    };
    Ok(p)
}

/// Complete the last word of `line`. Returns the new line and, when several
/// candidates remain, their list.
pub fn complete(line: &str, view: &SessionView) -> (String, Vec<String>) {
    let (agents, dims) = names(view);
    let words: Vec<&str> = line.split(' ').collect();
    let idx = words.len() - 1;
    let last = words[idx];
    let cands: Vec<String> = match (idx, words[0]) {
        (0, _) => COMMANDS.iter().map(|s| s.to_string()).collect(),
        (1, "override" | "o") => {
            let mut v = agents.clone();
            v.push("final".into());
            v
        }
        (1, "speaker" | "s" | "veto") => agents,
        (1, "accept" | "reject") => view.sage.revisions.iter().map(|r| r.dimension.clone()).collect(),
        (1, "adopt") => view.sage.proposals.iter().map(|p| p.key.clone()).collect(),
        (1, "settle" | "vote" | "label") => vec!["a".into(), "b".into(), "tie".into()],
        (2, "override" | "o") => dims,
        (1, "steps") => view.dimension_keys(),
        (n, "rate") if n % 2 == 1 => dims,
        _ => Vec::new(),
    };
    let matches: Vec<String> = cands.into_iter().filter(|c| c.starts_with(last)).collect();
    let replacement = match matches.as_slice() {
        [] => return (line.to_string(), Vec::new()),
        [one] => format!("{one} "),
        many => common_prefix(many),
    };
    let mut out: Vec<&str> = words[..idx].to_vec();
    out.push(&replacement);
    let shown = if matches.len() > 1 { matches } else { Vec::new() };
    (out.join(" "), shown)
}

fn common_prefix(v: &[String]) -> String {
    let first = &v[0];
    let mut n = first.len();
    for s in &v[1..] {
        n = n.min(first.bytes().zip(s.bytes()).take_while(|(a, b)| a == b).count());
    }
    while !first.is_char_boundary(n) {
        n -= 1;
    }
    first[..n].to_string()
}
