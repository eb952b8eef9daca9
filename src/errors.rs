//! How an error reads where moot shows it: on stderr, on the home screen, in
//! a run's results.

/// An error and its causes, joined by `: `, leaving out a cause whose text
/// the message already holds (an error that prints its source, as
/// `path: {error}` does, would otherwise show it twice).
pub fn error_text(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text = format!("{text}: {cause}");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_the_message_holds_is_not_repeated_and_others_are_kept() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let e = anyhow::Error::new(io()).context(format!("x.toml: cannot read panel: {}", io()));
        assert_eq!(error_text(&e), "x.toml: cannot read panel: No such file");
        let e = anyhow::Error::new(io()).context("loading the panel");
        assert_eq!(error_text(&e), "loading the panel: No such file");
    }
}
