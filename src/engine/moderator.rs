//! Moderator policies: who speaks next in a debate.
//!
//! [`pick`] implements the policies that need no model (`round-robin`,
//! `random`, `disagreement`, `least-spoken`) as pure functions over a snapshot
//! of the group. [`parse_moderator_reply`] reads the choice of an LLM
//! moderator, with errors worded so they can be sent back when re-asking.

use rand::Rng;

use crate::engine::parse::{expand_to_fence, json_objects, mark_cut, normalize_key};
use crate::engine::prompts::{one_decimal, turns};
use crate::panel::ModeratorPolicy;
use crate::session::event::Evaluation;

/// Ties in disagreement are decided by turns spoken, then candidate order.
const EPS: f64 = 1e-9;

/// Longest reason kept from a moderator's prose, in characters.
const REASON_CAP: usize = 300;

/// One agent the moderator may choose, as the debate stands.
#[derive(Debug, Clone, Copy)]
pub struct SpeakerCandidate<'a> {
    pub name: &'a str,
    /// The agent's most recent evaluation, if it has given one.
    pub latest: Option<&'a Evaluation>,
    /// Debate turns this agent has taken so far.
    pub turns_spoken: u32,
    /// The agent said `NO MORE COMMENTS`; it is never picked again.
    pub finished: bool,
}

/// The chosen next speaker and a short human reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    pub agent: String,
    pub reason: String,
}

/// Choose the next speaker under a non-LLM policy (`Llm` is treated as
/// `Disagreement`, the fallback when a moderator model is unavailable).
///
/// Finished agents are never picked; `None` when every agent is finished.
/// `keys` are the score keys compared by `disagreement` (dimension keys and
/// `overall`); `turn_index` is the 0-based debate turn about to be taken.
///
/// - `round-robin`: the next unfinished agent after `last_speaker` in candidate
///   order, wrapping around; the first unfinished agent when there is no (known)
///   last speaker.
/// - `random`: uniform among unfinished agents, drawn from `rng`.
/// - `disagreement`: an agent with no evaluation yet goes first (its view is not
///   on the table); otherwise the agent whose scores are furthest from the
///   others', measured as the sum over keys of |own score − mean of the other
///   agents' scores| (finished agents' scores count as part of the group). The
///   last speaker is passed over while another agent is available, so the
///   others can answer it. Ties go to whoever has spoken least, then to
///   candidate order.
/// - `least-spoken`: fewest turns spoken, ties by candidate order, passing over
///   the last speaker while another agent is available.
pub fn pick(
    policy: ModeratorPolicy,
    candidates: &[SpeakerCandidate<'_>],
    keys: &[String],
    last_speaker: Option<&str>,
    turn_index: u32,
    rng: &mut impl Rng,
) -> Option<Pick> {
    let open: Vec<&SpeakerCandidate<'_>> = candidates.iter().filter(|c| !c.finished).collect();
    if open.is_empty() {
        return None;
    }
    let pick = match policy {
        ModeratorPolicy::RoundRobin => round_robin(candidates, last_speaker),
        ModeratorPolicy::Random => {
            let chosen = open[rng.random_range(0..open.len())];
            Pick {
                agent: chosen.name.to_string(),
                reason: format!("drawn at random among {} agents still debating", open.len()),
            }
        }
        ModeratorPolicy::LeastSpoken => least_spoken(&without_last(&open, last_speaker)),
        ModeratorPolicy::Disagreement | ModeratorPolicy::Llm => {
            disagreement(&without_last(&open, last_speaker), candidates, keys)
        }
    };
    Some(Pick { reason: format!("turn {}: {}", turn_index + 1, pick.reason), ..pick })
}

fn without_last<'c, 'a>(open: &[&'c SpeakerCandidate<'a>], last: Option<&str>) -> Vec<&'c SpeakerCandidate<'a>> {
    let rest: Vec<_> = open.iter().copied().filter(|c| Some(c.name) != last).collect();
    if rest.is_empty() { open.to_vec() } else { rest }
}

fn round_robin(candidates: &[SpeakerCandidate<'_>], last_speaker: Option<&str>) -> Pick {
    let after = last_speaker.and_then(|name| candidates.iter().position(|c| c.name == name));
    let start = after.map_or(0, |i| i + 1);
    let n = candidates.len();
    // `pick` has checked that someone is unfinished.
    let chosen = (0..n).map(|k| &candidates[(start + k) % n]).find(|c| !c.finished).unwrap_or(&candidates[0]);
    let reason = match after {
        Some(i) => format!("next in turn after {}", candidates[i].name),
        None => "first in panel order".to_string(),
    };
    Pick { agent: chosen.name.to_string(), reason }
}

fn least_spoken(pool: &[&SpeakerCandidate<'_>]) -> Pick {
    let chosen = pool.iter().min_by_key(|c| c.turns_spoken).unwrap_or(&pool[0]);
    Pick { agent: chosen.name.to_string(), reason: format!("has spoken least ({})", turns(chosen.turns_spoken)) }
}

/// How far one agent stands from the rest, and the key where it stands furthest.
struct Distance {
    total: f64,
    /// (key, own score, mean of the others) for the largest gap.
    widest: Option<(String, f64, f64)>,
}

fn distance(agent: &SpeakerCandidate<'_>, candidates: &[SpeakerCandidate<'_>], keys: &[String]) -> Distance {
    let mut d = Distance { total: 0.0, widest: None };
    let mut widest_gap = 0.0;
    let Some(own) = agent.latest else { return d };
    for key in keys {
        let Some(mine) = own.score(key) else { continue };
        let others: Vec<f64> = candidates
            .iter()
            .filter(|c| c.name != agent.name)
            .filter_map(|c| c.latest.and_then(|e| e.score(key)))
            .collect();
        if others.is_empty() {
            continue;
        }
        let mean = others.iter().sum::<f64>() / others.len() as f64;
        let gap = (mine - mean).abs();
        d.total += gap;
        if gap > widest_gap + EPS {
            widest_gap = gap;
            d.widest = Some((key.clone(), mine, mean));
        }
    }
    d
}

fn disagreement(pool: &[&SpeakerCandidate<'_>], candidates: &[SpeakerCandidate<'_>], keys: &[String]) -> Pick {
    if let Some(fresh) = pool.iter().filter(|c| c.latest.is_none()).min_by_key(|c| c.turns_spoken) {
        return Pick { agent: fresh.name.to_string(), reason: "has not given an evaluation yet".to_string() };
    }
    let mut best: Option<(&SpeakerCandidate<'_>, Distance)> = None;
    for &c in pool {
        let d = distance(c, candidates, keys);
        let better = match &best {
            None => true,
            Some((b, bd)) => {
                d.total > bd.total + EPS || ((d.total - bd.total).abs() <= EPS && c.turns_spoken < b.turns_spoken)
            }
        };
        if better {
            best = Some((c, d));
        }
    }
    let Some((chosen, d)) = best else {
        return least_spoken(pool);
    };
    let reason = match d.widest {
        Some((key, own, mean)) if d.total > EPS => furthest(chosen.name, &key, own, mean),
        _ => format!("no disagreement left; has spoken least ({})", turns(chosen.turns_spoken)),
    };
    Pick { agent: chosen.name.to_string(), reason }
}

/// What the scores table shows about `agent`, a member who may speak, for
/// the moderator's request under `reasons = "checked"`, as a sentence a
/// small moderator can give as its reason instead of inventing one: the
/// dimension where its scores differ most from the mean of the other
/// `members`' ("Ben's grammar score (2) is furthest from the others'
/// average (4.5)"), or that it has none yet, the only ones, or the same as
/// the others'.
pub fn standing(agent: &SpeakerCandidate<'_>, members: &[SpeakerCandidate<'_>], keys: &[String]) -> String {
    let name = agent.name;
    let d = distance(agent, members, keys);
    match d.widest {
        Some((key, own, mean)) if d.total > EPS => furthest(name, &key, own, mean),
        _ if agent.latest.is_none() => format!("{name} has no scores yet"),
        _ if !members.iter().any(|m| m.name != name && m.latest.is_some()) => {
            format!("{name} has the only scores so far")
        }
        _ => format!("{name}'s scores are the same as the others'"),
    }
}

/// A member's widest gap from the others' mean, as the moderator's request
/// and the `disagreement` policy's reasons say it.
fn furthest(name: &str, key: &str, own: f64, mean: f64) -> String {
    format!(
        "{name}'s {} score ({}) is furthest from the others' average ({})",
        key.replace('_', " "),
        one_decimal(own),
        one_decimal(mean)
    )
}

/// Read an LLM moderator's choice of the next speaker.
///
/// Accepted, in this order: a JSON object with `next` (or `agent`, `speaker`,
/// `next_speaker`) and an optional `reason`; a line `Next: Name` or
/// `Next speaker: Name`; exactly one eligible agent named in the prose. Names
/// match case-insensitively, ignoring surrounding quotes and markdown.
///
/// The error explains what was wrong and who may be chosen, so the caller can
/// send it back to the model: no agent named, an agent that is finished or
/// not eligible, or several eligible agents with no clear choice.
pub fn parse_moderator_reply(reply: &str, eligible: &[&str], all_agents: &[&str]) -> Result<Pick, String> {
    if eligible.is_empty() {
        return Err("no agent is eligible to speak".to_string());
    }
    for object in json_objects(reply).iter().rev() {
        let field = |names: &[&str]| {
            object.map.iter().find_map(|(k, v)| match v {
                serde_json::Value::String(s) if names.contains(&normalize_key(k).as_str()) => Some(s.as_str()),
                _ => None,
            })
        };
        if let Some(name) = field(&["next", "next_speaker", "next_agent", "speaker", "agent"]) {
            let agent = resolve(name, eligible, all_agents)?;
            let reason = field(&["reason", "why", "rationale", "justification"])
                .map(|r| mark_cut(r.trim()))
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| {
                    let around = expand_to_fence(reply, object.range.clone());
                    prose_reason(&format!("{}{}", &reply[..around.start], &reply[around.end..]))
                });
            return Ok(Pick { agent, reason });
        }
    }
    let mut offset = 0;
    let mut labelled = None;
    for line in reply.split_inclusive('\n') {
        let range = offset..offset + line.len();
        offset += line.len();
        let cleaned: String = line.chars().filter(|c| !matches!(c, '*' | '`' | '#')).collect();
        let cleaned = cleaned.trim().trim_start_matches(['-', '•']).trim_start();
        if let Some((label, value)) = cleaned.split_once(':')
            && matches!(normalize_key(label).as_str(), "next" | "next_speaker" | "next_agent" | "speaker")
        {
            labelled = Some((range, value.trim().to_string()));
        }
    }
    if let Some((range, value)) = labelled {
        let agent = resolve(&value, eligible, all_agents)?;
        let reason = prose_reason(&format!("{}{}", &reply[..range.start], &reply[range.end..]));
        return Ok(Pick { agent, reason });
    }
    let named = mentioned(reply, eligible);
    match named.as_slice() {
        [one] => Ok(Pick { agent: one.to_string(), reason: prose_reason(reply) }),
        [] => {
            let others = mentioned(reply, all_agents);
            if others.is_empty() {
                Err(format!("no agent was named. {}", hint(eligible)))
            } else {
                Err(format!(
                    "{} cannot speak now (finished or not in this debate). {}",
                    others.join(", "),
                    hint(eligible)
                ))
            }
        }
        several => {
            Err(format!("several agents are named ({}) with no clear choice. {}", several.join(", "), hint(eligible)))
        }
    }
}

fn hint(eligible: &[&str]) -> String {
    format!("Answer with {{\"next\": \"<name>\", \"reason\": \"<why>\"}} naming one of: {}.", eligible.join(", "))
}

fn prose_reason(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = text.trim_matches(|c: char| c == '`' || c.is_whitespace());
    if text.is_empty() {
        return "chosen by the moderator".to_string();
    }
    if text.chars().count() <= REASON_CAP {
        return text.to_string();
    }
    let mut out: String = text.chars().take(REASON_CAP - 1).collect();
    out.push('…');
    out
}

/// Resolve a name given by the moderator to an eligible agent.
fn resolve(raw: &str, eligible: &[&str], all_agents: &[&str]) -> Result<String, String> {
    let name = raw
        .trim()
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | '*' | '_' | '“' | '”' | '[' | ']' | '<' | '>'))
        .trim_end_matches(['.', ',', ';', ':', '!', '?'])
        .trim();
    if name.is_empty() {
        return Err(format!("no agent was named. {}", hint(eligible)));
    }
    let lower = name.to_lowercase();
    if let Some(e) = eligible.iter().find(|e| e.to_lowercase() == lower) {
        return Ok(e.to_string());
    }
    if let Some(a) = all_agents.iter().find(|a| a.to_lowercase() == lower) {
        return Err(format!("{a} cannot speak now (finished or not in this debate). {}", hint(eligible)));
    }
    // A name followed by an explanation: "Alice (she has not answered Bob)".
    match mentioned(name, eligible).as_slice() {
        [one] => return Ok(one.to_string()),
        [] => {}
        several => {
            return Err(format!(
                "several agents are named ({}) with no clear choice. {}",
                several.join(", "),
                hint(eligible)
            ));
        }
    }
    let others = mentioned(name, all_agents);
    if !others.is_empty() {
        return Err(format!(
            "{} cannot speak now (finished or not in this debate). {}",
            others.join(", "),
            hint(eligible)
        ));
    }
    Err(format!("{name:?} is not an agent in this debate. {}", hint(eligible)))
}

/// The names (in `names` order) that occur in `text` as whole words, case-insensitively.
fn mentioned<'n>(text: &str, names: &[&'n str]) -> Vec<&'n str> {
    let hay = text.to_lowercase();
    names
        .iter()
        .copied()
        .filter(|name| {
            let needle = name.to_lowercase();
            !needle.is_empty()
                && hay.match_indices(&needle).any(|(i, m)| {
                    let before = hay[..i].chars().next_back();
                    let after = hay[i + m.len()..].chars().next();
                    !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    fn eval(grammar: f64, overall: f64) -> Evaluation {
        let mut e = Evaluation::default();
        e.scores.insert("grammar".into(), grammar);
        e.overall = Some(overall);
        e
    }

    fn keys() -> Vec<String> {
        vec!["grammar".into(), "overall".into()]
    }

    fn cand<'a>(name: &'a str, latest: Option<&'a Evaluation>, turns: u32, finished: bool) -> SpeakerCandidate<'a> {
        SpeakerCandidate { name, latest, turns_spoken: turns, finished }
    }

    fn run(policy: ModeratorPolicy, c: &[SpeakerCandidate<'_>], last: Option<&str>) -> Option<Pick> {
        pick(policy, c, &keys(), last, 0, &mut ChaCha8Rng::seed_from_u64(7))
    }

    fn who(p: Option<Pick>) -> Option<String> {
        p.map(|p| p.agent)
    }

    #[test]
    fn round_robin() {
        let (a, b, c) = (eval(4.0, 4.0), eval(4.0, 4.0), eval(4.0, 4.0));
        let all = [cand("Ann", Some(&a), 1, false), cand("Ben", Some(&b), 1, true), cand("Cy", Some(&c), 1, false)];
        let rr = ModeratorPolicy::RoundRobin;
        assert_eq!(who(run(rr, &all, None)).as_deref(), Some("Ann"));
        assert_eq!(who(run(rr, &all, Some("Ann"))).as_deref(), Some("Cy"), "skips finished Ben");
        assert_eq!(who(run(rr, &all, Some("Cy"))).as_deref(), Some("Ann"), "wraps around");
        assert_eq!(who(run(rr, &all, Some("Nobody"))).as_deref(), Some("Ann"), "unknown last speaker");
        let p = run(rr, &all, Some("Ann")).expect("pick");
        assert_eq!(p.reason, "turn 1: next in turn after Ann");
        let lone = [cand("Ann", None, 3, false), cand("Ben", None, 0, true)];
        assert_eq!(who(run(rr, &lone, Some("Ann"))).as_deref(), Some("Ann"), "only one left");
    }

    #[test]
    fn all_finished_gives_none() {
        let all = [cand("Ann", None, 1, true), cand("Ben", None, 1, true)];
        for policy in ModeratorPolicy::ALL {
            assert_eq!(run(policy, &all, None), None, "{policy:?}");
        }
        assert_eq!(run(ModeratorPolicy::Random, &[], None), None);
    }

    #[test]
    fn random_is_uniform_over_unfinished_and_seeded() {
        let all = [cand("Ann", None, 0, false), cand("Ben", None, 0, true), cand("Cy", None, 0, false)];
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        let mut counts = std::collections::BTreeMap::new();
        for turn in 0..400 {
            let p = pick(ModeratorPolicy::Random, &all, &keys(), None, turn, &mut rng).expect("pick");
            *counts.entry(p.agent).or_insert(0) += 1;
        }
        assert_eq!(counts.get("Ben"), None);
        assert!(counts["Ann"] > 150 && counts["Cy"] > 150, "{counts:?}");
        let first =
            |seed| who(pick(ModeratorPolicy::Random, &all, &keys(), None, 0, &mut ChaCha8Rng::seed_from_u64(seed)));
        assert_eq!(first(9), first(9), "same seed, same pick");
    }

    #[test]
    fn least_spoken() {
        let all = [
            cand("Ann", None, 2, false),
            cand("Ben", None, 1, false),
            cand("Cy", None, 1, false),
            cand("Di", None, 0, true),
        ];
        let ls = ModeratorPolicy::LeastSpoken;
        let p = run(ls, &all, None).expect("pick");
        assert_eq!(p.agent, "Ben", "ties by candidate order; finished Di skipped");
        assert_eq!(p.reason, "turn 1: has spoken least (1 turn)");
        assert_eq!(who(run(ls, &all, Some("Ben"))).as_deref(), Some("Cy"), "avoids repeating the last speaker");
        let two = [cand("Ann", None, 0, false), cand("Ben", None, 5, true)];
        assert_eq!(who(run(ls, &two, Some("Ann"))).as_deref(), Some("Ann"), "repeats when nobody else is left");
    }

    #[test]
    fn disagreement() {
        let (a, b, c) = (eval(4.0, 4.0), eval(2.0, 3.0), eval(5.0, 4.0));
        let all = [cand("Ann", Some(&a), 1, false), cand("Ben", Some(&b), 1, false), cand("Cy", Some(&c), 1, false)];
        let d = ModeratorPolicy::Disagreement;
        let p = run(d, &all, None).expect("pick");
        assert_eq!(p.agent, "Ben");
        assert_eq!(p.reason, "turn 1: Ben's grammar score (2) is furthest from the others' average (4.5)");
        assert_eq!(
            who(run(ModeratorPolicy::Llm, &all, None)).as_deref(),
            Some("Ben"),
            "llm falls back to disagreement"
        );
        // Ben just spoke: the next furthest speaks (Cy: 5 vs mean 3 on grammar).
        assert_eq!(who(run(d, &all, Some("Ben"))).as_deref(), Some("Cy"));
        // A finished outlier is not picked, but its scores still count for the others.
        let finished =
            [cand("Ann", Some(&a), 1, false), cand("Ben", Some(&b), 1, true), cand("Cy", Some(&c), 1, false)];
        assert_eq!(who(run(d, &finished, None)).as_deref(), Some("Cy"));
    }

    #[test]
    fn standing_names_the_widest_gap_against_every_other_member() {
        let (a, b, c) = (eval(4.0, 4.0), eval(2.0, 3.0), eval(5.0, 4.0));
        let all = [cand("Ann", Some(&a), 1, false), cand("Ben", Some(&b), 0, false), cand("Cy", Some(&c), 2, true)];
        assert_eq!(
            standing(&all[1], &all, &keys()),
            "Ben's grammar score (2) is furthest from the others' average (4.5)"
        );
        // A finished member's scores count among the others'.
        assert_eq!(
            standing(&all[0], &all, &keys()),
            "Ann's grammar score (4) is furthest from the others' average (3.5)"
        );
        let same = eval(4.0, 4.0);
        let agree = [cand("Ann", Some(&a), 1, false), cand("Ben", Some(&same), 1, false), cand("Cy", None, 0, false)];
        assert_eq!(standing(&agree[0], &agree, &keys()), "Ann's scores are the same as the others'");
        assert_eq!(standing(&agree[2], &agree, &keys()), "Cy has no scores yet");
        let alone = [cand("Ann", Some(&a), 1, false), cand("Ben", None, 1, false)];
        assert_eq!(standing(&alone[0], &alone, &keys()), "Ann has the only scores so far");
    }

    #[test]
    fn disagreement_prefers_agents_without_evaluation_then_ties_by_turns() {
        let (a, b) = (eval(4.0, 4.0), eval(1.0, 1.0));
        let fresh = [cand("Ann", Some(&a), 0, false), cand("Ben", Some(&b), 0, false), cand("Cy", None, 0, false)];
        let p = run(ModeratorPolicy::Disagreement, &fresh, None).expect("pick");
        assert_eq!((p.agent.as_str(), p.reason.as_str()), ("Cy", "turn 1: has not given an evaluation yet"));
        // Two agents, equally far from each other: the one who spoke less goes.
        let tie = [cand("Ann", Some(&a), 3, false), cand("Ben", Some(&b), 1, false)];
        assert_eq!(who(run(ModeratorPolicy::Disagreement, &tie, None)).as_deref(), Some("Ben"));
        // Everyone agrees: least spoken, then candidate order.
        let same = [cand("Ann", Some(&a), 2, false), cand("Ben", Some(&a), 1, false), cand("Cy", Some(&a), 1, false)];
        let p = run(ModeratorPolicy::Disagreement, &same, None).expect("pick");
        assert_eq!(p.agent, "Ben");
        assert_eq!(p.reason, "turn 1: no disagreement left; has spoken least (1 turn)");
    }

    #[test]
    fn moderator_replies_table() {
        let eligible = ["Alice", "Carol", "Dr. Ng"];
        let all = ["Alice", "Bob", "Carol", "Dr. Ng"];
        let ok = |agent: &'static str, reason: &'static str| Ok::<_, &'static str>((agent, reason));
        let err = |text: &'static str| Err::<(&str, &str), _>(text);
        let cases = [
            (
                "json",
                r#"{"next": "Carol", "reason": "She has not answered Alice."}"#,
                ok("Carol", "She has not answered Alice."),
            ),
            (
                "fenced json, agent key, case",
                "```json\n{\"agent\": \"carol\"}\n```\nCarol disagrees most.",
                ok("Carol", "Carol disagrees most."),
            ),
            ("speaker key with markdown name", r#"{"speaker": "**Alice**", "why": "outlier"}"#, ok("Alice", "outlier")),
            (
                "name with explanation",
                r#"{"next": "Alice (still at 2 on grammar)"}"#,
                ok("Alice", "chosen by the moderator"),
            ),
            (
                "next line",
                "Bob and Alice disagree on grammar.\nNext: Carol",
                ok("Carol", "Bob and Alice disagree on grammar."),
            ),
            (
                "next speaker line, bold, quoted",
                "**Next speaker:** \"Dr. Ng\".",
                ok("Dr. Ng", "chosen by the moderator"),
            ),
            (
                "one eligible name in prose",
                "I think Alice should respond to the points raised.",
                ok("Alice", "I think Alice should respond to the points raised."),
            ),
            ("finished agent in json", r#"{"next": "Bob"}"#, err("Bob cannot speak now")),
            ("finished agent in prose", "Bob should go again.", err("Bob cannot speak now")),
            ("unknown name", r#"{"next": "Zed"}"#, err("\"Zed\" is not an agent in this debate")),
            ("nobody named", "Let us continue the debate.", err("no agent was named")),
            ("several named", "Alice or Carol could go next.", err("several agents are named (Alice, Carol)")),
            ("name as part of a word", "Alicea should speak.", err("no agent was named")),
        ];
        for (name, reply, want) in cases {
            let got = parse_moderator_reply(reply, &eligible, &all);
            match (want, got) {
                (Ok((agent, reason)), Ok(p)) => {
                    assert_eq!(p.agent, agent, "{name}");
                    assert_eq!(p.reason, reason, "{name}");
                }
                (Err(text), Err(e)) => {
                    assert!(e.contains(text), "{name}: {e:?} lacks {text:?}");
                    assert!(e.contains("one of: Alice, Carol, Dr. Ng"), "{name}: {e:?} names the eligible agents");
                }
                (want, got) => panic!("{name}: wanted {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn a_reason_cut_at_its_length_is_marked() {
        let eligible = ["Alice", "Carol"];
        let long = "Alice has not yet answered the point that Carol made about the pillow and the tooth, ".repeat(3);
        let cut: String = long.chars().take(crate::engine::prompts::JUSTIFICATION_MAX as usize).collect();
        let reply = serde_json::json!({"next": "Alice", "reason": cut}).to_string();
        let pick = parse_moderator_reply(&reply, &eligible, &eligible).unwrap();
        assert_eq!(pick.reason, format!("{}…", cut.trim()), "cut mid-sentence");
        let whole = format!("{}.", &cut[..cut.len() - 1]);
        let reply = serde_json::json!({"next": "Alice", "reason": whole}).to_string();
        assert_eq!(parse_moderator_reply(&reply, &eligible, &eligible).unwrap().reason, whole, "a sentence's end");
        let short = r#"{"next": "Alice", "reason": "Alice has not answered Carol"}"#;
        assert_eq!(parse_moderator_reply(short, &eligible, &eligible).unwrap().reason, "Alice has not answered Carol");
    }
}
