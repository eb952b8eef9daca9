//! How a model's prose is kept from repeating itself and its prompt:
//! llama.cpp's repetition penalties over the reply so far, and its DRY
//! sampler ("don't repeat yourself") over the end of the prompt and the
//! reply, which penalises a token that would lengthen a run of tokens
//! already found there. The same settings (a provider's
//! `[providers.<name>.repetition]` table) steer the embedded model's
//! sampler (`provider::local`) and are sent to a llama.cpp server in its
//! lean form (`provider::llamacpp`). See `docs/local-model.md`,
//! *Repetition*, and `docs/scale.md`.

/// Repetition settings (moot.toml keys of the same names); the defaults
/// were measured on the sample panel's debate.
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

/// llama.cpp's own sequence breakers (its server's default too).
fn default_breakers() -> Vec<String> {
    ["\n", ":", "\"", "*"].map(String::from).to_vec()
}

impl Default for Repetition {
    /// The embedded model's: penalties, no DRY (its copy guard keeps a
    /// speech from copying the discussion).
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
            dry_breakers: default_breakers(),
        }
    }
}

impl Repetition {
    /// A llama.cpp server's (see `provider::llamacpp`): the embedded
    /// model's penalties, and DRY standing in for the copy guard, which a
    /// server cannot run — a token that would lengthen a run already in
    /// the last 2,048 tokens past 2 is penalised by 0.8 × 1.75^(run − 2).
    /// With runs of 4 allowed, 5 of the 12 speeches of a measured run were
    /// still asked for again as repeats (docs/scale.md).
    pub fn llama_server() -> Self {
        Self { dry_multiplier: 0.8, dry_allowed_length: 2, ..Self::default() }
    }

    /// Whether DRY is on.
    pub fn dry_on(&self) -> bool {
        self.dry_multiplier > 0.0 && self.dry_base >= 1.0 && self.dry_last_n > 0
    }

    /// The settings in one line, as `moot providers` shows them.
    pub fn line(&self) -> String {
        let penalties = format!(
            "penalties {} over the reply's last {} tokens (frequency {}, presence {})",
            self.repeat_penalty, self.repeat_last_n, self.frequency_penalty, self.presence_penalty
        );
        let dry = if self.dry_on() {
            format!(
                "DRY {} × {}^(run − {}) over the last {} tokens, breakers {:?}",
                self.dry_multiplier, self.dry_base, self.dry_allowed_length, self.dry_last_n, self.dry_breakers
            )
        } else {
            "DRY off".to_string()
        };
        format!("{penalties}; {dry}")
    }
}
