//! Blackboard text made safe to show on a terminal. Notes, descriptions, reasons and log
//! details come from agents and hand edits; printed raw, an escape sequence in one could
//! clear the screen, retitle the terminal, or hide text (`\r`, bidi overrides). Human
//! output shows each such character visibly instead; `--json` keeps the exact text.

use std::borrow::Cow;

/// `text` with every control character except newline and tab shown visibly: C0
/// controls and DEL as their Unicode control pictures (`␛`, `␍`, `␡`), C1 controls and
/// the invisible direction overrides as `<U+XXXX>`.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_showing) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_showing(c) {
            out.push_str(&shown(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// What to put in one terminal cell instead of a grapheme holding a control character
/// (the dashboard's cells are one column wide, so `<U+XXXX>` does not fit).
pub fn cell_symbol(grapheme: &str) -> Option<String> {
    let c = grapheme
        .chars()
        .find(|&c| needs_showing(c) || c == '\n' || c == '\t')?;
    Some(match picture(c) {
        Some(p) => p.to_string(),
        None => '\u{FFFD}'.to_string(),
    })
}

fn needs_showing(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_direction_control(c)
}

/// Characters that reorder how the text around them is displayed (the "Trojan source"
/// characters) or are invisible marks.
fn is_direction_control(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn picture(c: char) -> Option<char> {
    match c as u32 {
        n @ 0x00..=0x1F => char::from_u32(0x2400 + n),
        0x7F => Some('\u{2421}'),
        _ => None,
    }
}

fn shown(c: char) -> String {
    match picture(c) {
        Some(p) => p.to_string(),
        None => format!("<U+{:04X}>", c as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_untouched() {
        let text = "a note\n\twith tab, é and 日本";
        assert!(matches!(visible(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn escapes_and_other_controls_are_shown_not_sent() {
        let shown = visible("x\u{1b}[2J\u{1b}]0;owned\u{7}y\rz\u{7f}\u{9b}31m\u{202E}cba");
        assert_eq!(shown, "x␛[2J␛]0;owned␇y␍z␡<U+009B>31m<U+202E>cba");
        assert!(!shown.chars().any(|c| c.is_control()));
    }

    #[test]
    fn cells_get_one_column_pictures() {
        assert_eq!(cell_symbol("\u{1b}").as_deref(), Some("␛"));
        assert_eq!(cell_symbol("\u{202E}").as_deref(), Some("\u{FFFD}"));
        assert_eq!(cell_symbol("a"), None);
    }
}
