//! The rule for a person's override of an agent's score, in one place: the
//! engine applies it to decide and record an override, the fold (screens,
//! replays) to show it, so the two can never disagree.

use super::event::{Evaluation, OverrideTarget};

/// Why an override of an agent's score cannot apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The agent has no evaluation yet.
    NoEvaluation,
    /// The targeted turn is not the agent's latest evaluation.
    NotLatest { turn: u64, latest: Option<u64> },
}

impl Refused {
    /// The reason, for `command_rejected`.
    pub fn reason(&self, agent: &str) -> String {
        match self {
            Refused::NoEvaluation => format!("{agent} has no evaluation yet"),
            Refused::NotLatest { turn, latest } => {
                let latest = latest.map(|t| t.to_string()).unwrap_or_else(|| "none".into());
                format!("turn {turn} is not {agent}'s latest evaluation (latest: turn {latest})")
            }
        }
    }
}

/// Set `dimension` to `to` on the agent's latest evaluation, as `target`
/// asks: an `agent` target changes the latest evaluation; a `turn` target
/// only when that turn is the latest. Returns the value it replaced.
/// `final` targets (aggregated results) are not an agent's score: `Ok(None)`
/// and nothing changes.
pub fn override_latest(
    latest: Option<&mut Evaluation>,
    latest_turn: Option<u64>,
    target: &OverrideTarget,
    dimension: &str,
    to: f64,
) -> Result<Option<f64>, Refused> {
    if let OverrideTarget::Turn { turn, .. } = target
        && latest_turn != Some(*turn)
    {
        return Err(Refused::NotLatest { turn: *turn, latest: latest_turn });
    }
    if matches!(target, OverrideTarget::Final { .. }) {
        return Ok(None);
    }
    let ev = latest.ok_or(Refused::NoEvaluation)?;
    let from = ev.score(dimension);
    ev.set_score(dimension, to);
    Ok(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_target_applies_only_to_the_latest_evaluation() {
        let mut ev = Evaluation { overall: Some(3.0), ..Default::default() };
        let turn = |turn| OverrideTarget::Turn { turn, agent: "Ann".into() };
        assert_eq!(
            override_latest(Some(&mut ev), Some(4), &turn(2), "overall", 5.0),
            Err(Refused::NotLatest { turn: 2, latest: Some(4) })
        );
        assert_eq!(ev.overall, Some(3.0));
        assert_eq!(override_latest(Some(&mut ev), Some(4), &turn(4), "overall", 5.0), Ok(Some(3.0)));
        assert_eq!(ev.overall, Some(5.0));
        let agent = OverrideTarget::Agent { agent: "Ann".into() };
        assert_eq!(override_latest(None, None, &agent, "overall", 1.0), Err(Refused::NoEvaluation));
        assert_eq!(
            Refused::NotLatest { turn: 2, latest: None }.reason("Ann"),
            "turn 2 is not Ann's latest evaluation (latest: turn none)"
        );
    }
}
