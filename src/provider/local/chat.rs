//! The model's chat template and tokenizer: how a chat becomes prompt tokens.

use super::*;

/// The model's chat template and tokenizer, shared by the worker (which
/// prepares prompts) and the engines.
pub(super) struct Chat<'m> {
    pub(super) model: &'m LlamaModel,
    pub(super) template: LlamaChatTemplate,
    pub(super) template_name: String,
    pub(super) fallback_template: &'static str,
}

impl<'m> Chat<'m> {
    pub(super) fn new(model: &'m LlamaModel) -> Result<Self, ProviderError> {
        let architecture = model.meta_val_str("general.architecture").unwrap_or_default();
        let model_name = model.meta_val_str("general.name").unwrap_or_default();
        let fallback_template = fallback_template(&architecture, &model_name);
        let (template, template_name) = match model.chat_template(None) {
            Ok(t) => (t, "gguf".to_string()),
            Err(_) => (named_template(fallback_template)?, fallback_template.to_string()),
        };
        Ok(Self { model, template, template_name, fallback_template })
    }

    /// Renders the chat with the model's template (or the fallback when
    /// llama.cpp cannot run the GGUF's template).
    pub(super) fn render(&self, messages: &[ChatMessage], add_assistant: bool) -> Result<String, ProviderError> {
        let chat = messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    ChatRole::System => "system",
                    ChatRole::User => "user",
                    ChatRole::Assistant => "assistant",
                };
                LlamaChatMessage::new(role.to_string(), m.content.replace('\0', ""))
                    .map_err(|e| ProviderError::Config(format!("invalid message: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        match self.model.apply_chat_template(&self.template, &chat, add_assistant) {
            Ok(prompt) => Ok(prompt),
            Err(_) => self
                .model
                .apply_chat_template(&named_template(self.fallback_template)?, &chat, add_assistant)
                .map_err(|e| server_error(format!("cannot apply the chat template: {e}"))),
        }
    }

    /// The number of tokens of the prompt of `messages`, as [`Chat::prepare`]
    /// would read it.
    pub(super) fn count(&self, messages: &[ChatMessage]) -> Result<u64, ProviderError> {
        let prompt = self.render(messages, true)?;
        Ok(self.model.vocab().tokenize(prompt.as_bytes(), true, true).len() as u64)
    }

    /// The request's prompt, checked against the room a sequence has.
    /// `states`: where system prompts' states are saved, if they are.
    pub(super) fn prepare(
        &self,
        request: &ChatRequest,
        seq_capacity: usize,
        states: Option<&PromptStates>,
    ) -> Result<Prompt, ProviderError> {
        let prompt = self.render(&request.messages, true)?;
        let mut tokens = self.model.vocab().tokenize(prompt.as_bytes(), true, true);
        if tokens.is_empty() {
            return Err(ProviderError::Config("empty prompt".to_string()));
        }
        // The reply's opening words are read with the prompt, as its start.
        let opening = request
            .opening
            .clone()
            .map(|o| o.replace('\0', ""))
            .filter(|o| !o.is_empty() && (request.prose_first || request.response_schema.is_none()));
        if let Some(words) = &opening {
            tokens.extend(self.model.vocab().tokenize(words.as_bytes(), false, false));
        }
        if tokens.len() + SEQ_SPARE > seq_capacity {
            return Err(ProviderError::Config(format!(
                "the prompt has {} tokens but the local context holds {seq_capacity}; raise `context_size`",
                tokens.len()
            )));
        }
        let keep = match request.messages.split_last() {
            Some((_, head)) if !head.is_empty() => self.prefix_len(head, &tokens),
            _ => 0,
        };
        // Only a long system prompt's state is saved, and only one with
        // more of the prompt after it.
        let system = match (request.messages.first(), states) {
            (Some(m), Some(states)) if m.role == ChatRole::System => {
                let len = self.prefix_len(&request.messages[..1], &tokens);
                (SAVED_PROMPT_MIN..tokens.len()).contains(&len).then(|| {
                    let path = states.path(&tokens[..len]);
                    SavedSystem { len, saved: path.exists(), path }
                })
            }
            _ => None,
        };
        let east_asian = prompt.chars().chain(opening.iter().flat_map(|o| o.chars())).any(scripts::east_asian);
        Ok(Prompt { tokens, keep, system, opening, east_asian })
    }

    /// The start of a prompt that will begin with `messages`: their tokens up
    /// to where the last message's text ends so far, less the last few,
    /// which may merge with text still to come. `None` when there is too
    /// little to be worth it or more than a sequence holds.
    pub(super) fn ahead(&self, messages: &[ChatMessage], seq_capacity: usize) -> Option<Vec<LlamaToken>> {
        let last = messages.last()?.content.replace('\0', "");
        let last = last.trim_end();
        let rendered = self.render(messages, false).ok()?;
        let mut start = last.len().saturating_sub(48);
        while !last.is_char_boundary(start) {
            start += 1;
        }
        let tail = &last[start..];
        let end = rendered.rfind(tail)? + tail.len();
        let mut tokens = self.model.vocab().tokenize(&rendered.as_bytes()[..end], true, true);
        tokens.truncate(tokens.len().saturating_sub(AHEAD_UNSURE));
        (tokens.len() >= AHEAD_MIN && tokens.len() + 8 < seq_capacity).then_some(tokens)
    }

    /// How many of the prompt's `tokens` the messages `head` (its first
    /// ones) make up.
    pub(super) fn prefix_len(&self, head: &[ChatMessage], tokens: &[LlamaToken]) -> usize {
        let Ok(text) = self.render(head, false) else { return 0 };
        let head = self.model.vocab().tokenize(text.as_bytes(), true, true);
        common_prefix(&head, tokens)
    }
}

pub(super) fn named_template(name: &str) -> Result<LlamaChatTemplate, ProviderError> {
    LlamaChatTemplate::new(name).map_err(|e| server_error(format!("chat template {name}: {e}")))
}

/// The llama.cpp built-in template used when a GGUF carries none (or one
/// llama.cpp cannot run), chosen from `general.architecture` and
/// `general.name`. Qwen and SmolLM use ChatML; ChatML is also the last resort.
pub fn fallback_template(architecture: &str, model_name: &str) -> &'static str {
    let arch = architecture.to_ascii_lowercase();
    let name = model_name.to_ascii_lowercase();
    if arch.starts_with("qwen") || name.contains("smollm") || name.contains("qwen") {
        "chatml"
    } else if arch.starts_with("gemma") {
        "gemma"
    } else if arch.starts_with("phi3") {
        "phi3"
    } else if arch == "llama" && name.contains("llama") {
        "llama3"
    } else if arch.starts_with("mistral") {
        "mistral-v7"
    } else {
        "chatml"
    }
}
