//! How the embedded model's prose is kept from repeating itself and its
//! prompt: llama.cpp's repetition penalties over the reply so far, and its
//! DRY sampler ("don't repeat yourself") over the end of the prompt and the
//! reply, which penalises a token that would lengthen a run of tokens
//! already found there. Only prose is sampled so: a constrained JSON object
//! is left to its grammar (a penalty would push its scores away from
//! numbers the prose mentioned). See `docs/local-model.md`, *Repetition*.

use super::*;

/// A local provider's repetition settings (moot.toml keys of the same
/// names); the defaults were measured on the sample panel's debate.
#[derive(Debug, Clone, PartialEq)]
pub struct Repetition {
    /// Tokens of the reply so far that the penalties count (0: none).
    pub repeat_last_n: i32,
    /// Divides a counted token's positive logit (multiplies a negative
    /// one); 1 leaves it as it is.
    pub repeat_penalty: f32,
    /// Subtracted from a counted token's logit once per time it occurs.
    pub frequency_penalty: f32,
    /// Subtracted from a counted token's logit once.
    pub presence_penalty: f32,
    /// DRY's strength; 0 turns it off.
    pub dry_multiplier: f32,
    /// How fast DRY's penalty grows with the run it would lengthen:
    /// `multiplier × base^(run − allowed_length)`.
    pub dry_base: f32,
    /// The longest run of tokens repeated without a penalty.
    pub dry_allowed_length: i32,
    /// Tokens DRY looks back over: the end of the prompt (where a debate's
    /// discussion is) and the reply so far.
    pub dry_last_n: i32,
    /// Text that ends a run: a repeat counts from after the last of these.
    pub dry_breakers: Vec<String>,
}

impl Default for Repetition {
    fn default() -> Self {
        Self {
            repeat_last_n: 64,
            repeat_penalty: 1.1,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
            dry_multiplier: 0.0,
            dry_base: 1.75,
            dry_allowed_length: 4,
            dry_last_n: 2048,
            dry_breakers: ["\n", ":", "\"", "*"].map(String::from).to_vec(),
        }
    }
}

impl Repetition {
    /// Whether DRY is on.
    pub fn dry_on(&self) -> bool {
        self.dry_multiplier > 0.0 && self.dry_base >= 1.0 && self.dry_last_n > 0
    }

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
