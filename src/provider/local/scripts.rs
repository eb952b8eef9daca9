//! Scripts a prompt does not use are not drawn. The Qwen models, trained on
//! much Chinese, now and then go on with an English sentence in Chinese
//! ("the importance of careful推理 without confusing struggling readers",
//! from the 0.5B model in five of seven default runs). A request whose prompt
//! holds no East Asian character (Han, kana, Hangul, their punctuation and
//! full-width forms) draws no token that holds one, or that begins one (a
//! byte-level vocabulary splits rare characters into bytes). A prompt that
//! holds one (an item in Chinese, a panel written in Japanese) draws from
//! the whole vocabulary. See `docs/local-model.md`, *Sampling and
//! repetition*.

use super::*;

/// Whether `c` is of an East Asian script: Hangul Jamo, CJK radicals and
/// symbols and punctuation, kana, Bopomofo, Hangul, CJK ideographs (with
/// their extensions and compatibility forms), Yi, and full-width forms.
pub(super) fn east_asian(c: char) -> bool {
    matches!(
        u32::from(c),
        0x1100..=0x11FF
            | 0x2E80..=0x2FDF
            | 0x2FF0..=0x9FFF
            | 0xA000..=0xA4CF
            | 0xA960..=0xA97F
            | 0xAC00..=0xD7FF
            | 0xF900..=0xFAFF
            | 0xFE30..=0xFE4F
            | 0xFF00..=0xFFEF
            | 0x20000..=0x3FFFF
    )
}

/// Whether a token's bytes hold an East Asian character, or end with the
/// first bytes of a character that can only be one.
pub(super) fn holds_east_asian(piece: &[u8]) -> bool {
    if String::from_utf8_lossy(piece).chars().any(east_asian) {
        return true;
    }
    // An unfinished character at the end: its lead byte and what follows.
    let Some(lead) = piece.iter().rposition(|b| b & 0xC0 != 0x80) else { return false };
    let started = &piece[lead..];
    let needed = match started[0] {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => return false,
    };
    if started.len() >= needed {
        return false;
    }
    // The lowest and the highest character it can begin.
    let finish = |fill: u8| {
        let mut bytes = started.to_vec();
        bytes.resize(needed, fill);
        std::str::from_utf8(&bytes).ok().and_then(|s| s.chars().next())
    };
    match (finish(0x80), finish(0xBF)) {
        (Some(low), Some(high)) => east_asian(low) && east_asian(high),
        _ => false,
    }
}

/// The model's tokens that [`holds_east_asian`] (scanned once, when the
/// model is loaded: 32,573 of Qwen2.5's 151,936 tokens, in about a tenth
/// of a second).
pub(super) fn east_asian_tokens(model: &LlamaModel) -> Arc<[LlamaToken]> {
    let started = std::time::Instant::now();
    let vocab = model.vocab();
    let tokens: Arc<[LlamaToken]> = (0..model.n_vocab())
        .map(LlamaToken)
        .filter(|&t| holds_east_asian(&vocab.token_to_piece(t, false, None)))
        .collect();
    tracing::debug!(
        tokens = tokens.len(),
        of = model.n_vocab(),
        ms = started.elapsed().as_millis() as u64,
        "local model: tokens of East Asian scripts found"
    );
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn east_asian_characters_and_their_first_bytes_are_found() {
        for held in ["推理", " 孩子", "の", "한국", "。", "ａ", "x推"] {
            assert!(holds_east_asian(held.as_bytes()), "{held}");
        }
        // The first byte, and the first two, of 推 (E6 8E A8).
        assert!(holds_east_asian(&[0xE6]));
        assert!(holds_east_asian(&[b' ', 0xE6, 0x8E]));
        for free in ["careful", " inference", "é", "—", "’", "ρ", "Привет", "", " "] {
            assert!(!holds_east_asian(free.as_bytes()), "{free}");
        }
        // The start of "—" (E2 80 94) or of "é" (C3 A9) begins no East
        // Asian character; a lone continuation byte begins nothing.
        assert!(!holds_east_asian(&[0xE2]));
        assert!(!holds_east_asian(&[0xE2, 0x80]));
        assert!(!holds_east_asian(&[0xC3]));
        assert!(!holds_east_asian(&[0xA8]));
        // EF starts both full-width forms and the replacement character.
        assert!(!holds_east_asian(&[0xEF]));
        assert!(holds_east_asian(&[0xEF, 0xBC]));
    }
}
