//! Styling of printed output (transcripts, reports), off for pipes and
//! under `NO_COLOR`.

/// ANSI styling that can be switched off (pipes, `NO_COLOR`).
#[derive(Debug, Clone, Copy)]
pub struct Paint {
    pub enabled: bool,
}

impl Paint {
    /// Colour when the stream is a terminal and `NO_COLOR` is unset.
    pub fn for_stream(is_terminal: bool) -> Self {
        Self { enabled: is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) }
    }
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.enabled { format!("\x1b[{code}m{s}\x1b[0m") } else { s.to_string() }
    }
    pub fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
    pub fn dim(&self, s: &str) -> String {
        self.wrap("2", s)
    }
    pub fn green(&self, s: &str) -> String {
        self.wrap("32", s)
    }
    pub fn red(&self, s: &str) -> String {
        self.wrap("31", s)
    }
    pub fn yellow(&self, s: &str) -> String {
        self.wrap("33", s)
    }
    pub fn cyan(&self, s: &str) -> String {
        self.wrap("36", s)
    }
    pub fn magenta(&self, s: &str) -> String {
        self.wrap("35", s)
    }
}
