//! The vocabulary of pairwise judging in the log: position labels, how the
//! two orders of a pair disagreed, a judge's stated confidence, and a
//! candidate's record in the result.

use serde::{Deserialize, Serialize};

/// A judge's preference between the two positions it was shown: `A` is the
/// candidate shown first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Label {
    A,
    B,
    #[serde(rename = "tie")]
    Tie,
}

impl Label {
    /// Read `A`, `B` or `tie` (any case, surrounding spaces ignored; a few
    /// common spellings such as "Summary A" and "draw").
    pub fn parse(s: &str) -> Option<Label> {
        let t = s.trim().trim_matches(|c: char| c == '"' || c == '.' || c == '*').trim().to_ascii_lowercase();
        let t = t
            .strip_prefix("summary ")
            .or_else(|| t.strip_prefix("candidate "))
            .or_else(|| t.strip_prefix("response "))
            .unwrap_or(&t);
        match t {
            "a" => Some(Label::A),
            "b" => Some(Label::B),
            "tie" | "draw" | "equal" | "neither" | "both" => Some(Label::Tie),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Label::A => "A",
            Label::B => "B",
            Label::Tie => "tie",
        }
    }

    /// The same preference seen from the other order (A and B exchanged).
    pub fn swapped(self) -> Label {
        match self {
            Label::A => Label::B,
            Label::B => Label::A,
            Label::Tie => Label::Tie,
        }
    }
}

/// How the two orders of one comparison disagreed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flip {
    /// Both orders agree.
    None,
    /// One order prefers a candidate, the other says tie.
    WinTie,
    /// The orders prefer opposite candidates (each prefers the same position).
    Opposite,
}

impl Flip {
    pub fn is_flip(self) -> bool {
        self != Flip::None
    }
    pub fn describe(self) -> &'static str {
        match self {
            Flip::None => "both orders agree",
            Flip::WinTie => "one order has a winner, the other a tie",
            Flip::Opposite => "each order prefers the candidate shown first",
        }
    }
}

/// How sure a judge said it was: a level or a number from 0 to 1.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Confidence {
    Level(ConfidenceLevel),
    Value(f64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfidenceLevel {
    Low,
    Medium,
    High,
}

impl std::fmt::Display for Confidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Confidence::Level(ConfidenceLevel::Low) => f.write_str("low"),
            Confidence::Level(ConfidenceLevel::Medium) => f.write_str("medium"),
            Confidence::Level(ConfidenceLevel::High) => f.write_str("high"),
            Confidence::Value(v) => write!(f, "{v:.2}"),
        }
    }
}

/// One candidate's record over the comparisons of an item, in the result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankEntry {
    /// The candidate's id (its system's name).
    pub candidate: String,
    pub wins: u32,
    pub losses: u32,
    pub ties: u32,
    /// `human` when a person settled at least one of its comparisons, or
    /// a person's extra vote counted in one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub human: bool,
}

/// The pair a pairwise turn compares, in the order it was shown.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairRef {
    pub first: String,
    pub second: String,
    /// `second` was shown as A.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub swapped: bool,
}

impl PairRef {
    /// The candidate ids in the order they were shown (A, B).
    pub fn shown(&self) -> (&str, &str) {
        if self.swapped { (&self.second, &self.first) } else { (&self.first, &self.second) }
    }
}

/// One readable verdict, as the log recorded it.
#[derive(Clone, Debug, PartialEq)]
pub struct VerdictView {
    pub turn: u64,
    pub judge: String,
    pub swapped: bool,
    pub vote: u32,
    pub label: Label,
    pub criteria: std::collections::BTreeMap<String, Label>,
    pub confidence: Option<Confidence>,
    pub reasoning: String,
}

/// A judge's (or the panel's) decision on a pair.
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionView {
    pub judge: Option<String>,
    pub first_order: Option<Label>,
    pub swapped_order: Option<Label>,
    pub winner: Option<String>,
    pub flip: Option<Flip>,
    pub no_result: Option<String>,
}

/// A person's decision on a pair.
#[derive(Clone, Debug, PartialEq)]
pub struct SettledView {
    pub winner: Option<String>,
    pub author: String,
}

/// A person's extra vote on a pair, or their own (blind) label of it.
#[derive(Clone, Debug, PartialEq)]
pub struct HumanPick {
    /// The candidate preferred; `None` for a tie.
    pub winner: Option<String>,
    pub author: String,
}

/// Everything recorded about one pair.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ComparisonView {
    pub first: String,
    pub second: String,
    pub verdicts: Vec<VerdictView>,
    /// Each judge's decision, in the order they came.
    pub decisions: Vec<DecisionView>,
    /// The panel's decision over its judges (and people's extra votes).
    pub panel: Option<DecisionView>,
    pub settled: Option<SettledView>,
    /// People's extra votes, one per person (the latest).
    pub votes: Vec<HumanPick>,
    /// Who declined to decide the pair.
    pub abstained: Option<String>,
    /// A person's own verdict given blind (a human label).
    pub label: Option<HumanPick>,
    /// The screen shows `second` on the left, as A (blind runs draw the order).
    pub shown_swapped: bool,
}

impl ComparisonView {
    /// Whether the pair has a decision, a person's or the panel's.
    pub fn decided(&self) -> bool {
        self.settled.is_some() || self.panel.as_ref().is_some_and(|p| p.no_result.is_none())
    }
    /// The preferred candidate (`None` for a tie or no decision): a person's
    /// decision wins over the panel's.
    pub fn winner(&self) -> Option<&str> {
        match &self.settled {
            Some(s) => s.winner.as_deref(),
            None => self.panel.as_ref().and_then(|p| p.winner.as_deref()),
        }
    }
    /// The verdicts of one order.
    pub fn order(&self, swapped: bool) -> impl Iterator<Item = &VerdictView> {
        self.verdicts.iter().filter(move |v| v.swapped == swapped)
    }
    /// Whether the pair is one a person may settle: the panel has decided
    /// and came to a tie, no decision, or a judge's orders disagreed.
    pub fn needs_settling(&self) -> bool {
        let Some(p) = &self.panel else { return false };
        p.winner.is_none()
            || p.no_result.is_some()
            || p.flip.is_some_and(Flip::is_flip)
            || self.decisions.iter().any(|d| d.flip.is_some_and(Flip::is_flip))
    }
    /// Whether any judge's two orders disagreed on this pair.
    pub fn flipped(&self) -> bool {
        self.panel.as_ref().and_then(|p| p.flip).is_some_and(Flip::is_flip)
            || self.decisions.iter().any(|d| d.flip.is_some_and(Flip::is_flip))
    }
    /// The candidates as the screen shows them: (left = A, right = B).
    pub fn on_screen(&self) -> (&str, &str) {
        if self.shown_swapped { (&self.second, &self.first) } else { (&self.first, &self.second) }
    }
}

/// The Wilson score interval (95%) for `successes` out of `n` (a tie may
/// count half a success): `(low, high)`, or `None` for no trials.
pub fn wilson(successes: f64, n: f64) -> Option<(f64, f64)> {
    if n <= 0.0 {
        return None;
    }
    let z = 1.959_964;
    let p = (successes / n).clamp(0.0, 1.0);
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z * ((p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt()) / (1.0 + z2 / n);
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

/// A candidate's win rate (a tie counting half) and its Wilson interval.
pub fn win_rate(r: &RankEntry) -> Option<(f64, (f64, f64))> {
    let n = f64::from(r.wins + r.losses + r.ties);
    let won = f64::from(r.wins) + 0.5 * f64::from(r.ties);
    wilson(won, n).map(|ci| (won / n, ci))
}

fn preferred(winner: &Option<String>) -> String {
    winner.as_deref().map(|w| format!("{w} preferred")).unwrap_or_else(|| "tie".into())
}

/// One line for a transcript about a person's part in a pair (settling,
/// voting, abstaining, a blind label); `None` for other events.
pub fn human_note(kind: &crate::session::EventKind) -> Option<String> {
    use crate::session::EventKind;
    Some(match kind {
        EventKind::PairSettled { first, second, winner, author } => {
            format!("{author} (human) settled {first} vs {second}: {}", preferred(winner))
        }
        EventKind::PairVoted { first, second, winner, author } => {
            format!("{author} (human) voted on {first} vs {second}: {}", preferred(winner))
        }
        EventKind::PairAbstained { first, second, author } => {
            format!("{author} (human) abstained on {first} vs {second}: the panel's decision stands")
        }
        EventKind::PairLabelled { first, second, winner, author, .. } => {
            format!("{author} (human) labelled {first} vs {second} blind: {}", preferred(winner))
        }
        _ => return None,
    })
}

/// The pairwise part of a session: one entry per pair, in the order the
/// pairs first appear.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PairwiseView {
    pub comparisons: Vec<ComparisonView>,
    /// The run is blind (`blind_order`): names and verdicts are hidden on
    /// screen until a person labels the pair (or abstains).
    pub blind: bool,
    /// Turn → the pair it compares and whether it was the swapped order.
    pub turns: std::collections::HashMap<u64, (usize, bool)>,
}

impl PairwiseView {
    fn index(&mut self, first: &str, second: &str) -> usize {
        if let Some(i) = self.comparisons.iter().position(|c| c.first == first && c.second == second) {
            return i;
        }
        self.comparisons.push(ComparisonView { first: first.into(), second: second.into(), ..Default::default() });
        self.comparisons.len() - 1
    }

    /// Whether the screen may show the judges' verdicts and the systems'
    /// names of a pair: always, unless the run is blind and nobody has
    /// labelled the pair or abstained yet.
    pub fn revealed(&self, c: &ComparisonView) -> bool {
        !self.blind || c.label.is_some() || c.abstained.is_some()
    }

    /// Whether a turn's text must stay off the screen: a blind run's turn
    /// on a pair nobody has labelled yet.
    pub fn hides_turn(&self, turn: u64) -> bool {
        self.blind && self.of_turn(turn).is_some_and(|(c, _)| !self.revealed(c))
    }

    /// The comparison a turn is part of, with its order.
    pub fn of_turn(&self, turn: u64) -> Option<(&ComparisonView, bool)> {
        self.turns.get(&turn).map(|&(i, swapped)| (&self.comparisons[i], swapped))
    }

    /// The verdict read from a turn's reply, once recorded.
    pub fn verdict_of(&self, turn: u64) -> Option<&VerdictView> {
        let (c, _) = self.of_turn(turn)?;
        c.verdicts.iter().find(|v| v.turn == turn)
    }

    pub fn apply(&mut self, kind: &crate::session::EventKind) {
        use crate::session::EventKind;
        match kind {
            EventKind::SessionStarted { .. } => *self = Self::default(),
            EventKind::TurnStarted { turn, pair: Some(p), .. } => {
                let i = self.index(&p.first, &p.second);
                self.turns.insert(*turn, (i, p.swapped));
            }
            EventKind::PairVerdict {
                turn,
                judge,
                first,
                second,
                swapped,
                vote,
                label,
                criteria,
                confidence,
                reasoning,
            } => {
                let i = self.index(first, second);
                self.comparisons[i].verdicts.push(VerdictView {
                    turn: *turn,
                    judge: judge.clone(),
                    swapped: *swapped,
                    vote: *vote,
                    label: *label,
                    criteria: criteria.clone(),
                    confidence: *confidence,
                    reasoning: reasoning.clone(),
                });
            }
            EventKind::PairDecided { judge, first, second, first_order, swapped_order, winner, flip, no_result } => {
                let i = self.index(first, second);
                let d = DecisionView {
                    judge: judge.clone(),
                    first_order: *first_order,
                    swapped_order: *swapped_order,
                    winner: winner.clone(),
                    flip: *flip,
                    no_result: no_result.clone(),
                };
                let c = &mut self.comparisons[i];
                match judge {
                    Some(j) => {
                        c.decisions.retain(|x| x.judge.as_deref() != Some(j));
                        c.decisions.push(d);
                    }
                    None => c.panel = Some(d),
                }
            }
            EventKind::PairSettled { first, second, winner, author } => {
                let i = self.index(first, second);
                self.comparisons[i].settled = Some(SettledView { winner: winner.clone(), author: author.clone() });
            }
            EventKind::PairVoted { first, second, winner, author } => {
                let i = self.index(first, second);
                let votes = &mut self.comparisons[i].votes;
                votes.retain(|v| v.author != *author);
                votes.push(HumanPick { winner: winner.clone(), author: author.clone() });
            }
            EventKind::PairAbstained { first, second, author } => {
                let i = self.index(first, second);
                self.comparisons[i].abstained = Some(author.clone());
            }
            EventKind::BlindOrder { pairs } => {
                self.blind = true;
                for p in pairs {
                    let i = self.index(&p.first, &p.second);
                    self.comparisons[i].shown_swapped = p.swapped;
                }
            }
            EventKind::PairLabelled { first, second, winner, author, .. } => {
                let i = self.index(first, second);
                self.comparisons[i].label = Some(HumanPick { winner: winner.clone(), author: author.clone() });
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_interval_matches_known_values() {
        let (lo, hi) = wilson(1.0, 1.0).unwrap();
        assert!((lo - 0.2065).abs() < 1e-3 && (hi - 1.0).abs() < 1e-9, "{lo} {hi}");
        let (lo, hi) = wilson(5.0, 10.0).unwrap();
        assert!((lo - 0.2366).abs() < 1e-3 && (hi - 0.7634).abs() < 1e-3, "{lo} {hi}");
        assert_eq!(wilson(0.0, 0.0), None);
    }
}
