//! Pairwise judging with bias controls (after MASA's recommendations): a
//! judge sees two candidates as "Summary A" and "Summary B" and says `A`,
//! `B` or `tie`.
//!
//! - [`label`]: the label verdict (what a judge's reply must end with, its
//!   JSON schema for the local model, and how a reply is read; a reply that
//!   cannot be read is a parse failure, never a label).
//! - [`combine`]: how verdicts combine. Votes are combined per order first
//!   (a label needs more than half of the `k` votes asked, otherwise the
//!   order says tie), then the two orders by the swap rule (a candidate wins
//!   only when both orders prefer it, otherwise tie, and a disagreement is a
//!   flip). Several judges' combined decisions go through the same majority
//!   rule. Which pairs are compared: each system against one reference
//!   system (n−1 comparisons) or all pairs (n(n−1)/2), with a ranking from
//!   win rates.

pub mod combine;
pub mod label;
