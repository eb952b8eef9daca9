//! OpenAI-compatible Chat Completions over SSE.
