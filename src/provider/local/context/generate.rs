//! Generation in an engine's sequence: a reply's prose, token by token
//! through its samplers and guards, then its JSON object through the
//! schema's grammar.

use super::*;

impl ModelContext<'_, '_> {
    /// Decodes `tokens` after the cached ones as one step of the reply, in
    /// the next round; the last one's logits go to `state`.
    fn decode_step(&mut self, tokens: &[LlamaToken], state: &mut GenState) -> Result<(), ProviderError> {
        let early = self.early > 0;
        self.early = self.early.saturating_sub(1);
        match self.decode(self.following(tokens, true), Kind::Step { early }) {
            Ok(mut rows) => match numbers(rows.pop().unwrap_or_default()) {
                Ok(logits) => state.logits = logits,
                Err(e) => {
                    self.forget_cache();
                    return Err(e);
                }
            },
            Err(e) => {
                self.forget_cache();
                return Err(server_error(format!("llama.cpp could not decode: {e}")));
            }
        }
        self.current.cached.extend_from_slice(tokens);
        if self.handoffs.is_wanted(self.id) {
            self.handoffs.give(self.id, (self.current.seq, self.current.cached.clone()));
        }
        Ok(())
    }

    pub(in crate::provider::local) fn room_left(&self) -> bool {
        self.current.cached.len() + 1 < self.seq_capacity
    }

    pub(in crate::provider::local) fn piece(&self, token: LlamaToken) -> Vec<u8> {
        self.model.vocab().token_to_piece(token, false, None)
    }

    /// Whether the token with the highest logit begins with a blank.
    fn likeliest_is_blank(&self, logits: &[f32]) -> bool {
        likeliest(logits).is_some_and(|t| self.piece(t).first().is_some_and(u8::is_ascii_whitespace))
    }

    /// Free generation. With `json_follows`, stops (without emitting) where
    /// the model starts a JSON object, at the end of the budget or at its end
    /// of turn; but not before the prose is long enough (see
    /// [`prose_is_enough`]): until then, tokens that would end the turn or
    /// start the object (or a code fence) are not drawn. With a `guard`, no
    /// token copies what the request said not to copy.
    pub(in crate::provider::local) fn generate_prose(
        &mut self,
        job: &Job,
        sampling: &mut Sampling,
        state: &mut GenState,
        prose: Prose<'_>,
        out: &mut Output,
    ) -> Result<Finish, ProviderError> {
        let Prose { budget, json_follows, guard, speaker, sections } = prose;
        let mut produced = 0u32;
        let vocab = self.model.vocab();
        loop {
            if job.cancel.is_cancelled() || job.reply.is_closed() {
                return Err(ProviderError::Cancelled);
            }
            if produced >= budget {
                return Ok(Finish::Length);
            }
            if !self.room_left() {
                return Ok(Finish::Length);
            }
            let text = out.text();
            let copies = |piece: &[u8]| guard.is_some_and(|g| g.refuses(text, &String::from_utf8_lossy(piece)));
            let token = if json_follows && !prose_is_enough(produced, text) {
                // Too little prose yet: the reply may neither end nor turn to
                // its JSON object here, nor break its first sentence's line.
                sampling.pick_where(&state.logits, |t| {
                    let piece = vocab.token_to_piece(t, false, None);
                    !vocab.is_eog(t)
                        && !ends_prose(text, &piece)
                        && !breaks_line_early(produced, text, &piece)
                        && !reports_speech(produced, text, &piece)
                        && !copies(&piece)
                })?
            } else if guard.is_some() {
                sampling.pick_where(&state.logits, |t| !copies(&vocab.token_to_piece(t, false, None)))?
            } else {
                sampling.pick(&state.logits, None)?
            };
            if self.model.vocab().is_eog(token) {
                return Ok(Finish::Stop);
            }
            // A quotation closed with a blank before its mark is closed
            // without, where the piece without its blank is one token.
            let drawn = self.piece(token);
            let (token, piece) = if closes_quotation_apart(text, &drawn)
                && let [tight] = vocab.tokenize(&drawn[1..], false, false).as_slice()
            {
                (*tight, self.piece(*tight))
            } else {
                (token, drawn)
            };
            // A piece that begins the speaker's own name as the member the
            // speech answers is written as the answered member's name; a
            // member's name before a thing of theirs gets its possessive.
            let instead = speaker.and_then(|s| {
                let drawn = String::from_utf8_lossy(&piece);
                s.instead(text, &drawn).or_else(|| s.possessive(text, &drawn))
            });
            let (tokens, piece) = match instead {
                Some(name) => match vocab.tokenize(name.as_bytes(), false, false) {
                    tokens if !tokens.is_empty() => (tokens, name.into_bytes()),
                    _ => (vec![token], piece),
                },
                None => (vec![token], piece),
            };
            // A title the answered member lacks, where the answered member's
            // name would follow it, is the answered member's title.
            let weigh = speaker.and_then(|s| Some((s, s.title_to_weigh(text, &String::from_utf8_lossy(&piece))?)));
            let (tokens, piece) = match weigh {
                Some((s, right)) => self.weigh_title(s, (tokens, piece), right, state)?,
                None => (tokens, piece),
            };
            if json_follows && starts_json(out.text(), &piece) {
                return Ok(Finish::Stop);
            }
            let drawn_here = tokens.len() as u32;
            produced += drawn_here;
            state.generated += u64::from(drawn_here);
            out.push_bytes(&piece);
            self.decode_step(&tokens, state)?;
            // The prose is one paragraph: a line break after a finished
            // sentence ends it. Near the end of the budget, a finished
            // sentence ends it rather than a cut one; a reply of free text
            // too, which then counts as ended by its budget.
            let near_end = produced >= budget.saturating_sub(budget / 4) && ends_sentence(out.text());
            if json_follows && (ends_paragraph(produced, out.text(), &piece) || near_end) {
                return Ok(Finish::Stop);
            }
            if !json_follows && near_end {
                return Ok(Finish::Length);
            }
            // Free text in headed paragraphs: each begins with its heading,
            // and the reply ends with the last one's paragraph.
            match section_step(out.text(), &piece, sections) {
                SectionStep::Go => {}
                SectionStep::End => return Ok(Finish::Stop),
                SectionStep::Next(heading) => {
                    let words = if out.text().ends_with("\n\n") { heading.to_string() } else { format!("\n{heading}") };
                    let tokens = vocab.tokenize(words.as_bytes(), false, false);
                    let fits = self.current.cached.len() + tokens.len() + 1 < self.seq_capacity;
                    if tokens.is_empty() || !fits || produced + tokens.len() as u32 >= budget {
                        return Ok(Finish::Length);
                    }
                    produced += tokens.len() as u32;
                    state.generated += tokens.len() as u64;
                    out.push_str(&words);
                    self.decode_step(&tokens, state)?;
                }
            }
        }
    }

    /// Looks ahead of a `title` the answered member lacks, written right
    /// after the words that name whom a speech agrees with: decodes it (and
    /// a dot after it, the model's likeliest), and where the model's
    /// likeliest piece then begins the answered member's name (or the
    /// speaker's own, written as the answered member's), returns the
    /// answered member's title (`right`) to write instead; else the title.
    /// The looked-ahead tokens are dropped again either way: the caller
    /// decodes what it writes. ("Mr. Lindqvist, I disagree with Ms." from
    /// Ms. Ito became "…with Ms. Lindqvist's" where Ms. Okafor shared her
    /// title, 1 of 12 speeches in each of two 0.5B runs.)
    fn weigh_title(
        &mut self,
        speaker: &Speaker,
        title: (Vec<LlamaToken>, Vec<u8>),
        right: String,
        state: &mut GenState,
    ) -> Result<(Vec<LlamaToken>, Vec<u8>), ProviderError> {
        let before = self.current.cached.len();
        let vocab = self.model.vocab();
        let mut ahead = title.0.clone();
        let mut next = None;
        for _ in 0..2 {
            if !self.room_left() {
                break;
            }
            self.decode_step(&ahead, state)?;
            let Some(token) = likeliest(&state.logits) else { break };
            let piece = String::from_utf8_lossy(&vocab.token_to_piece(token, false, None)).into_owned();
            if piece == "." && !String::from_utf8_lossy(&title.1).ends_with('.') && ahead == title.0 {
                ahead = vec![token];
                continue;
            }
            next = Some(piece);
            break;
        }
        if self.cut_to(before) != before {
            return Err(server_error("llama.cpp could not drop the tokens it looked ahead".to_string()));
        }
        match next {
            Some(piece) if speaker.names_answered(&piece) => match vocab.tokenize(right.as_bytes(), false, false) {
                tokens if !tokens.is_empty() => Ok((tokens, right.into_bytes())),
                _ => Ok(title),
            },
            _ => Ok(title),
        }
    }

    /// Grammar-constrained generation of the JSON object, until the grammar
    /// is complete (the model's end of turn) or the context is full. The
    /// `openings` of the object's members (see [`member_openings`]) are
    /// given where the grammar forces them; `lead` holds tokens already in
    /// `out` but not yet decoded (the line break before the object). With
    /// `top`, each drawn token's log-probability and its `top` most likely
    /// alternatives (from the model's distribution before the grammar and
    /// the sampler) are added to `logprobs`, and each given token with
    /// log-probability 0 and none (asking for them changes no draw).
    #[allow(clippy::too_many_arguments)]
    pub(in crate::provider::local) fn generate_json(
        &mut self,
        job: &Job,
        sampling: &mut Sampling,
        (mut grammar, mut openings, mut echo, lead): JsonForm,
        state: &mut GenState,
        out: &mut Output,
        top: Option<usize>,
        logprobs: &mut Vec<TokenLogprob>,
    ) -> Result<Finish, ProviderError> {
        let start = out.text().len();
        let quote = match self.model.vocab().tokenize(b"\"", false, false).as_slice() {
            [q] => Some(*q),
            _ => None,
        };
        // The line break before the object (`lead`), its brace and its
        // first key are given at once.
        let mut step = lead;
        let given = self.give_forced(start, &openings, step.len(), sampling, &mut grammar, out);
        self.record_given(&given, top, logprobs);
        step.extend(given);
        if !step.is_empty() {
            // Given tokens are the reply's tokens too, as a server counts them.
            state.generated += step.len() as u64;
            self.decode_step(&step, state)?;
        }
        let brace = match self.model.vocab().tokenize(b"}", false, false).as_slice() {
            [b] => Some(*b),
            _ => None,
        };
        loop {
            if job.cancel.is_cancelled() || job.reply.is_closed() {
                return Err(ProviderError::Cancelled);
            }
            if !self.room_left() {
                return Ok(Finish::Length);
            }
            // A string value ends with its first finished sentence (see
            // `string_may_close`); the grammar still bounds its length. A
            // dot after a whole number ends one where the model's likeliest
            // next token is a blank, not the rest of a decimal.
            let close = quote.filter(|&q| {
                let json = &out.text()[start..];
                (string_may_close(json)
                    || (string_may_close_after_number(json) && self.likeliest_is_blank(&state.logits)))
                    && sampling.force(&mut grammar, q)
            });
            // A quotation mark after a blank inside a string value is a
            // quotation the model began, not the value's end: refused, so
            // the value is not cut after "… in the".
            let token = match close {
                Some(q) => q,
                None => {
                    let json = &out.text()[start..];
                    let vocab = self.model.vocab();
                    sampling.pick_json_where(&state.logits, &mut grammar, |t| {
                        opens_quote_in_string(json, &vocab.token_to_piece(t, false, None))
                    })?
                }
            };
            if self.model.vocab().is_eog(token) {
                return Ok(Finish::Stop);
            }
            let piece = self.piece(token);
            if let Some(k) = top {
                let (logprob, best) = crate::provider::logprobs::top_of_logits(&state.logits, token.0, k);
                let text = |t: i32| String::from_utf8_lossy(&self.piece(LlamaToken(t))).into_owned();
                logprobs.push(TokenLogprob {
                    token: String::from_utf8_lossy(&piece).into_owned(),
                    logprob,
                    top: best.into_iter().map(|(t, lp)| TopLogprob { token: text(t), logprob: lp }).collect(),
                });
            }
            state.generated += 1;
            out.push_bytes(&piece);
            // Once the echoed member's value is written, the member that
            // echoes it opens with it.
            if let Some((from, into)) = echo
                && let Some(value) = member_value(&out.text()[start..], &openings[from])
            {
                let value = value.to_string();
                openings[into].push_str(&value);
                echo = None;
            }
            // Once the last member's string is closed only the brace may
            // follow: the object is complete, and nothing more is decoded.
            if closes_object(&out.text()[start..], &openings)
                && let Some(b) = brace.filter(|&b| sampling.force(&mut grammar, b))
            {
                out.push_str("}");
                self.record_given(&[b], top, logprobs);
                state.generated += 1;
                return Ok(Finish::Stop);
            }
            // What the grammar forces after the token (the next member's
            // key) goes with it, in the same step.
            let mut step = vec![token];
            let given = self.give_forced(start, &openings, 1, sampling, &mut grammar, out);
            self.record_given(&given, top, logprobs);
            step.extend(given);
            state.generated += step.len() as u64 - 1;
            self.decode_step(&step, state)?;
        }
    }

    /// With log-probabilities wanted (`top`), an entry for each token given
    /// rather than drawn: the grammar left no other choice, so its
    /// log-probability is 0 (certain) and it has no alternatives.
    fn record_given(&self, given: &[LlamaToken], top: Option<usize>, logprobs: &mut Vec<TokenLogprob>) {
        if top.is_none() {
            return;
        }
        logprobs.extend(given.iter().map(|&t| TokenLogprob {
            token: String::from_utf8_lossy(&self.piece(t)).into_owned(),
            logprob: 0.0,
            top: Vec::new(),
        }));
    }

    /// Gives the reply the text the grammar forces on its object, written
    /// from byte `start` of `out` (see [`forced_text`]): the tokens the
    /// model's tokenizer makes of it, as far as the grammar accepts them
    /// and the sequence has room beside `pending` tokens still to decode;
    /// each goes to `out`. Returns them, to be decoded.
    fn give_forced(
        &self,
        start: usize,
        openings: &[String],
        pending: usize,
        sampling: &mut Sampling,
        grammar: &mut LlamaSampler,
        out: &mut Output,
    ) -> Vec<LlamaToken> {
        let Some(text) = forced_text(&out.text()[start..], openings) else { return Vec::new() };
        let tokens = self.model.vocab().tokenize(text.as_bytes(), false, false);
        if self.current.cached.len() + pending + tokens.len() + 1 >= self.seq_capacity {
            return Vec::new();
        }
        let given: Vec<LlamaToken> = tokens.into_iter().take_while(|&t| sampling.force(grammar, t)).collect();
        for &t in &given {
            out.push_bytes(&self.piece(t));
        }
        given
    }

    pub(in crate::provider::local) fn grammar_for(&self, schema: &Value) -> Result<LlamaSampler, ProviderError> {
        let gbnf = schema_to_gbnf(schema).ok_or_else(|| {
            ProviderError::Config(
                "the local model cannot follow this response schema (see docs/local-model.md, Constrained \
                 evaluations, for what it supports)"
                    .into(),
            )
        })?;
        LlamaSampler::grammar(self.model, &gbnf, "root")
            .map_err(|e| ProviderError::Config(format!("invalid grammar for the response schema: {e}")))
    }
}

/// What a reply's object is given rather than made to write: its grammar,
/// its members' [`member_openings`], the members of the request's
/// [`Echo`](crate::provider::Echo) ([`echo_members`]), and the tokens before its brace.
type JsonForm = (LlamaSampler, Vec<String>, Option<(usize, usize)>, Vec<LlamaToken>);

/// How a reply's prose is written: its token budget, whether a JSON object
/// follows it, and what it may not copy.
#[derive(Clone, Copy)]
pub(in crate::provider::local) struct Prose<'a> {
    pub(in crate::provider::local) budget: u32,
    pub(in crate::provider::local) json_follows: bool,
    pub(in crate::provider::local) guard: Option<&'a CopyGuard>,
    /// Who writes it, not to be named as the member it answers.
    pub(in crate::provider::local) speaker: Option<&'a Speaker>,
    /// The headings of free text's paragraphs, in order (the request's
    /// `sections`; see [`section_step`]).
    pub(in crate::provider::local) sections: &'a [String],
}

pub(in crate::provider::local) struct GenState {
    /// The logits to sample the next token from.
    pub(in crate::provider::local) logits: Vec<f32>,
    /// The reply's tokens: those the model drew and those given to it (an
    /// object's keys and brace), not the opening words, which are read with
    /// the prompt. A server counts the same.
    pub(in crate::provider::local) generated: u64,
}

/// The token with the highest logit.
fn likeliest(logits: &[f32]) -> Option<LlamaToken> {
    (0_i32..).zip(logits).max_by(|a, b| a.1.total_cmp(b.1)).map(|(t, _)| LlamaToken(t))
}
