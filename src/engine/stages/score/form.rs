//! The score-first reply (`reply = "score-first"`): the judge fills in the
//! form, its score alone, with nothing written before it. The score token
//! is then the reply's first choice, and its log-probabilities are the
//! model's distribution of scores for the item, not one conditioned on
//! reasoning it happened to sample first.

use crate::engine::prompts::fmt_num;
use crate::engine::verdict::{DimensionScore, Verdict};
use crate::provider::{ChatMessage, Completion};
use crate::session::event::{Evaluation, Phase};

/// [`DimensionScore`], asked for at once and alone.
pub(crate) struct FormScore<'a>(pub DimensionScore<'a>);

impl Verdict for FormScore<'_> {
    type Output = Evaluation;
    fn instructions(&self) -> String {
        let (d, scale) = (self.0.dimension, self.0.scale);
        format!(
            "Fill in the form: reply with only your score, as one JSON object with nothing before or after it: \
             {{\"{}\": <score from {} to {}>}}",
            d.key,
            fmt_num(scale.min),
            fmt_num(scale.max)
        )
    }
    fn schema(&self) -> Option<serde_json::Value> {
        self.0.schema()
    }
    fn top_logprobs(&self) -> Option<u8> {
        self.0.top_logprobs()
    }
    fn read(&self, completion: &Completion) -> Result<Evaluation, String> {
        self.0.read(completion)
    }
    fn repair(&self, error: &str) -> ChatMessage {
        self.0.repair(error)
    }
    fn evaluation(&self, output: &Evaluation) -> Option<Evaluation> {
        self.0.evaluation(output)
    }
    fn restore(&self, output: &mut Evaluation, recorded: &Evaluation) {
        self.0.restore(output, recorded)
    }
    /// The object comes first: the embedded model writes it at once, and a
    /// server with structured output gets no speech field before it.
    fn prose_first(&self, _phase: Phase) -> bool {
        false
    }
}
