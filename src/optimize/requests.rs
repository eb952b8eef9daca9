//! The optimisation loop's own model calls: feedback on the judge's
//! mistakes, and the rewrite of its prompt. Only picked (training) examples
//! ever reach these requests; the held-out split never does.

use std::fmt::Write;

use tokio_util::sync::CancellationToken;

use super::prompt::JudgePrompt;
use crate::engine::Binding;
use crate::engine::prompts::{fmt_num, render_item};
use crate::item::Item;
use crate::panel::Panel;
use crate::provider::retry::{RetryPolicy, call_with_retry};
use crate::provider::{ChatMessage, ChatRequest};
use crate::session::event::Role;

/// One picked example as the feedback model sees it.
pub struct Judged<'a> {
    pub item: &'a Item,
    pub judge: Option<f64>,
    pub human: f64,
    pub error: Option<&'a str>,
    /// The judge's own words on the example.
    pub reason: Option<&'a str>,
}

/// Asks for feedback on the judge's mistakes on the picked examples.
pub fn feedback_messages(
    panel: &Panel,
    prompt: &JudgePrompt,
    dimension: &str,
    examples: &[Judged<'_>],
) -> Vec<ChatMessage> {
    let system = "You study where an automatic judge disagrees with people's labels and explain why, so that its \
                  instructions can be improved. You are concrete: you name the examples and the patterns in them.";
    let mut user = format!(
        "The judge's current instructions:\n\n{}\n\nThe judge scores `{dimension}` from {} to {}. Below are examples \
         it scored, each with the judge's score, the human label and the judge's reason when it gave one.\n",
        prompt.render(),
        fmt_num(panel.scale.min),
        fmt_num(panel.scale.max)
    );
    for (n, e) in examples.iter().enumerate() {
        let judge = match (e.judge, e.error) {
            (Some(j), _) => fmt_num(j),
            (None, Some(err)) => format!("none ({err})"),
            (None, None) => "none".into(),
        };
        let _ = write!(
            user,
            "\nExample {}:\n{}\nJudge: {judge}   Human: {}\n",
            n + 1,
            render_item(e.item),
            fmt_num(e.human)
        );
        if let Some(reason) = e.reason {
            let _ = writeln!(user, "The judge's reason: {reason}");
        }
    }
    user.push_str(
        "\nWrite feedback on the judge's mistakes: for the examples where its score and the human label differ most, \
         say what the judge seems to get wrong and which part of its instructions leads it there or is missing. \
         Suggest what the instructions should say instead. Do not rewrite the instructions yourself. At most 250 \
         words of plain prose.",
    );
    vec![ChatMessage::system(system), ChatMessage::user(user)]
}

/// Asks for a revised prompt from the current one and the feedback.
pub fn rewrite_messages(prompt: &JudgePrompt, feedback: &str) -> Vec<ChatMessage> {
    let system = "You revise the instructions of an automatic judge so that its scores agree better with people's. \
                  You change what the feedback shows to be wrong or missing and keep what works.";
    let user = format!(
        "The judge's current instructions, in four sections:\n\n{}\n\nFeedback on the judge's mistakes:\n\n{}\n\n\
         Write the revised instructions. Reply with the four sections only, each under its heading line exactly as \
         above (## Task, ## Rubric, ## Guidance, ## Examples); a section may be empty but the task may not. Say \
         nothing about the reply format the judge must use: that is added separately.",
        prompt.render(),
        feedback.trim()
    );
    vec![ChatMessage::system(system), ChatMessage::user(user)]
}

/// One call of a role (feedback or rewriter) with retries; the reply's text
/// or the error.
pub async fn ask(
    panel: &Panel,
    role: Role,
    binding: &Binding,
    messages: Vec<ChatMessage>,
    retry: &RetryPolicy,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let settings = panel.role_model(role);
    let mut request = ChatRequest::new(messages);
    request.model = binding.model.clone();
    request.temperature = Some(settings.temperature.unwrap_or(panel.generation.temperature));
    request.max_tokens = settings.max_tokens.unwrap_or(1200).max(panel.generation.max_tokens);
    request.seed = panel.generation.seed;
    request.top_p = panel.generation.top_p;
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let mut on_failure = |_: &crate::provider::retry::AttemptFailure| {};
    match call_with_retry(binding.provider.as_ref(), &request, &tx, cancel, retry, &mut on_failure).await {
        Ok(c) if c.text.trim().is_empty() => Err("the reply was empty".into()),
        Ok(c) => Ok(c.text),
        Err(e) => Err(e.to_string()),
    }
}
