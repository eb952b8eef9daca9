//! Sampling a request's tokens, and emitting them as UTF-8 text.

use super::*;

/// How many drawn tokens [`Sampling::pick_where`] refuses before it keeps
/// the next one whatever it is.
pub(super) const REFUSALS_MAX: usize = 32;

/// The samplers of one request. Prose goes through the repetition
/// penalties, then DRY (see [`Repetition`]), then `prose`'s choice; the JSON
/// object through `json`'s choice alone (a penalty would push scores away
/// from numbers the prose mentioned, and fight the grammar).
pub(super) struct Sampling {
    pub(super) penalties: LlamaSampler,
    /// The engine's DRY sampler, primed with the prompt (given back after the request).
    pub(super) dry: Option<LlamaSampler>,
    pub(super) prose: LlamaSampler,
    pub(super) json: LlamaSampler,
    /// Tokens never drawn (of a script the prompt does not use, see
    /// [`super::scripts`]).
    pub(super) banned: Option<Arc<[LlamaToken]>>,
}

impl Sampling {
    /// The samplers of `request`, whose prompt is `prompt`; `dry` is the
    /// engine's DRY sampler, if DRY is on; `banned`, tokens never drawn.
    pub(super) fn new(
        model: &LlamaModel,
        request: &ChatRequest,
        prompt: &[LlamaToken],
        repetition: &Repetition,
        (mut dry, banned): (Option<LlamaSampler>, Option<Arc<[LlamaToken]>>),
    ) -> Self {
        let temperature = request.temperature.unwrap_or(0.0);
        // The request's nucleus, else the chain's own 0.95; greedy decoding
        // (temperature 0) has no nucleus to narrow.
        let top_p = request.top_p.unwrap_or(0.95);
        let seed = request.seed.map(|s| draw_seed(s, prompt)).unwrap_or_else(rand::random);
        let pick = |seed: u32| {
            if temperature > 0.0 {
                vec![
                    LlamaSampler::top_k(40),
                    LlamaSampler::top_p(top_p, 1),
                    LlamaSampler::min_p(0.05, 1),
                    LlamaSampler::temp(temperature),
                    LlamaSampler::dist(seed),
                ]
            } else {
                vec![LlamaSampler::greedy()]
            }
        };
        if let Some(dry) = dry.as_mut() {
            repetition.prime(dry, prompt);
        }
        Self {
            penalties: repetition.penalties(model),
            dry,
            prose: LlamaSampler::chain_simple(pick(seed)),
            json: LlamaSampler::chain_simple(pick(seed.wrapping_add(1))),
            banned,
        }
    }

    /// The whole vocabulary with its logits, in token order, the banned
    /// tokens' logits at −∞.
    fn candidates(&self, logits: &[f32]) -> LlamaTokenDataArray {
        let mut candidates = candidates(logits);
        for &t in self.banned.iter().flat_map(|b| b.iter()) {
            if let Some(d) = usize::try_from(t.0).ok().and_then(|i| candidates.data.get_mut(i)) {
                d.set_logit(f32::NEG_INFINITY);
            }
        }
        candidates
    }

    /// The repetition penalties and DRY applied to prose's candidates.
    fn discourage(&mut self, candidates: &mut LlamaTokenDataArray) {
        candidates.apply_sampler(&mut self.penalties);
        if let Some(dry) = self.dry.as_mut() {
            candidates.apply_sampler(dry);
        }
    }

    /// Takes `token` as the next prose token.
    fn accept_prose(&mut self, token: LlamaToken) {
        self.penalties.accept(token);
        if let Some(dry) = self.dry.as_mut() {
            dry.accept(token);
        }
        self.prose.accept(token);
    }

    /// Picks the next prose token among those `allowed` accepts: a token the
    /// chain draws that `allowed` refuses is taken out and the draw repeated
    /// (refused tokens are few, and rarely drawn).
    pub(super) fn pick_where(
        &mut self,
        logits: &[f32],
        allowed: impl Fn(LlamaToken) -> bool,
    ) -> Result<LlamaToken, ProviderError> {
        let mut candidates = self.candidates(logits);
        self.discourage(&mut candidates);
        let mut token = None;
        for _ in 0..REFUSALS_MAX {
            let mut drawn = candidates.clone();
            drawn.apply_sampler(&mut self.prose);
            let Some(t) = drawn.selected_token() else { break };
            token = Some(t);
            if allowed(t) {
                break;
            }
            // The array holds the vocabulary in token order.
            match usize::try_from(t.0).ok().and_then(|i| candidates.data.get_mut(i)).filter(|d| d.id() == t) {
                Some(d) => d.set_logit(f32::NEG_INFINITY),
                None => break,
            }
        }
        let token = token.ok_or_else(|| server_error("the sampler selected no token"))?;
        self.accept_prose(token);
        Ok(token)
    }

    /// Picks the next token: prose without a grammar, the JSON object with
    /// one. With a grammar, the unconstrained choice is kept when the grammar
    /// accepts it (cheap), otherwise the grammar filters the whole
    /// vocabulary first.
    pub(super) fn pick(
        &mut self,
        logits: &[f32],
        grammar: Option<&mut LlamaSampler>,
    ) -> Result<LlamaToken, ProviderError> {
        match grammar {
            Some(grammar) => self.pick_json_where(logits, grammar, |_| false),
            None => {
                let mut candidates = self.candidates(logits);
                self.discourage(&mut candidates);
                candidates.apply_sampler(&mut self.prose);
                let token = candidates.selected_token().ok_or_else(|| server_error("the sampler selected no token"))?;
                self.accept_prose(token);
                Ok(token)
            }
        }
    }

    /// Picks the next JSON token the grammar accepts, not one `refused`
    /// names while the grammar allows another: a refused token drawn is
    /// taken out and the draw repeated; where the grammar allows nothing
    /// else, the first drawn stands.
    pub(super) fn pick_json_where(
        &mut self,
        logits: &[f32],
        grammar: &mut LlamaSampler,
        refused: impl Fn(LlamaToken) -> bool,
    ) -> Result<LlamaToken, ProviderError> {
        let mut candidates = self.candidates(logits);
        let chain = &mut self.json;
        let mut free = candidates.clone();
        free.apply_sampler(chain);
        let accepted = free.selected_token().filter(|&t| !refused(t) && accepts(grammar, t));
        let token = match accepted {
            Some(t) => Some(t),
            None => {
                candidates.apply_sampler(grammar);
                let mut first = None;
                let mut token = None;
                for _ in 0..REFUSALS_MAX {
                    let mut drawn = candidates.clone();
                    drawn.apply_sampler(chain);
                    let Some(t) = drawn.selected_token().filter(|&t| accepts(grammar, t)) else { break };
                    first.get_or_insert(t);
                    if !refused(t) {
                        token = Some(t);
                        break;
                    }
                    match usize::try_from(t.0).ok().and_then(|i| candidates.data.get_mut(i)).filter(|d| d.id() == t) {
                        Some(d) => d.set_logit(f32::NEG_INFINITY),
                        None => break,
                    }
                }
                token.or(first)
            }
        };
        let token = token.ok_or_else(|| server_error("the sampler selected no token"))?;
        grammar.accept(token);
        chain.accept(token);
        Ok(token)
    }
}

/// The seed of a request's draws: its `seed` mixed with its prompt, so that
/// requests that carry the same seed (every request of a run does) draw
/// different random numbers, and the same request the same ones.
pub(super) fn draw_seed(seed: u64, prompt: &[LlamaToken]) -> u32 {
    // FNV-1a over the prompt's tokens, then folded to 32 bits.
    let mixed = prompt
        .iter()
        .fold(seed ^ 0xcbf2_9ce4_8422_2325, |h, t| (h ^ u64::from(t.0.unsigned_abs())).wrapping_mul(0x0100_0000_01b3));
    (mixed ^ (mixed >> 32)) as u32
}

impl Sampling {
    /// Takes `token` as the next JSON token when the grammar accepts it.
    pub(super) fn force(&mut self, grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
        if !accepts(grammar, token) {
            return false;
        }
        grammar.accept(token);
        self.json.accept(token);
        true
    }
}

/// Whether `grammar`, where it stands, accepts `token` next.
pub(super) fn accepts(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut single = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
    single.apply_sampler(grammar);
    single.data.first().is_some_and(|d| d.logit().is_finite())
}

/// The whole vocabulary with its logits, in token order.
pub(super) fn candidates(logits: &[f32]) -> LlamaTokenDataArray {
    let data = (0_i32..).zip(logits).map(|(t, &logit)| LlamaTokenData::new(LlamaToken(t), logit, 0.0));
    LlamaTokenDataArray::from_iter(data, false)
}

/// Emits text as complete UTF-8 (token pieces may split a character).
pub(super) struct Output<'a> {
    pub(super) deltas: &'a DeltaSender,
    pub(super) text: String,
    pub(super) pending: Vec<u8>,
}

impl<'a> Output<'a> {
    pub(super) fn new(deltas: &'a DeltaSender) -> Self {
        Self { deltas, text: String::new(), pending: Vec::new() }
    }

    pub(super) fn text(&self) -> &str {
        &self.text
    }

    pub(super) fn push_bytes(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        let chunk = take_utf8(&mut self.pending);
        self.emit(chunk);
    }

    pub(super) fn push_str(&mut self, s: &str) {
        let mut chunk = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
        chunk.push_str(s);
        self.emit(chunk);
    }

    pub(super) fn emit(&mut self, chunk: String) {
        if !chunk.is_empty() {
            let _ = self.deltas.send(chunk.clone());
            self.text.push_str(&chunk);
        }
    }

    pub(super) fn finish(mut self) -> String {
        let rest = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
        self.emit(rest);
        self.text
    }
}

/// Takes the longest prefix of `buf` that is complete UTF-8; invalid bytes
/// become U+FFFD, an incomplete character at the end stays in `buf`.
pub(super) fn take_utf8(buf: &mut Vec<u8>) -> String {
    let mut out = String::new();
    loop {
        match std::str::from_utf8(buf) {
            Ok(s) => {
                out.push_str(s);
                buf.clear();
                return out;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                out.push_str(std::str::from_utf8(&buf[..valid]).unwrap_or_default());
                match e.error_len() {
                    Some(bad) => {
                        out.push(char::REPLACEMENT_CHARACTER);
                        buf.drain(..valid + bad);
                    }
                    None => {
                        buf.drain(..valid);
                        return out;
                    }
                }
            }
        }
    }
}
