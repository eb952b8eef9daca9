//! How the embedded model's prose is kept from repeating itself and its
//! prompt: llama.cpp's repetition penalties over the reply so far, and its
//! DRY sampler ("don't repeat yourself") over the end of the prompt and the
//! reply, which penalises a token that would lengthen a run of tokens
//! already found there. Only prose is sampled so: a constrained JSON object
//! is left to its grammar (a penalty would push its scores away from
//! numbers the prose mentioned). See `docs/local-model.md`, *Repetition*.

use super::*;
pub use crate::provider::repetition::Repetition;

impl Repetition {
    /// The penalties over the reply so far (a new one per request: it
    /// counts what it is given).
    pub(super) fn penalties(&self, model: &LlamaModel) -> LlamaSampler {
        LlamaSampler::penalties(
            model.n_vocab(),
            self.repeat_last_n.max(0),
            self.repeat_penalty,
            self.frequency_penalty,
            self.presence_penalty,
        )
    }

    /// A DRY sampler, when DRY is on. Building one scans the vocabulary for
    /// the breakers (tenths of a second), so an engine keeps it and
    /// [`Self::prime`]s it for each request.
    pub(super) fn dry(&self, model: &LlamaModel) -> Option<LlamaSampler> {
        self.dry_on().then(|| {
            LlamaSampler::dry(
                model,
                self.dry_multiplier,
                self.dry_base,
                self.dry_allowed_length.max(0),
                self.dry_last_n,
                self.dry_breakers.iter().filter(|b| !b.is_empty() && !b.contains('\0')),
            )
        })
    }

    /// Readies `dry` for a request: forgets the last one and reads the end
    /// of `prompt` (the reply's opening words included).
    pub(super) fn prime(&self, dry: &mut LlamaSampler, prompt: &[LlamaToken]) {
        dry.reset();
        let n = usize::try_from(self.dry_last_n).unwrap_or(0);
        dry.accept_many(&prompt[prompt.len().saturating_sub(n)..]);
    }
}
