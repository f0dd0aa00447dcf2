//! Scalar rules shared by the parser and the emitter: how a plain scalar resolves under
//! the YAML 1.2 core schema, and when a string can be written plain without another
//! reader (YAML 1.1 tools such as PyYAML, or yq) taking it for something else.

use crate::node::Value;

/// Resolves the text of an untagged plain scalar (YAML 1.2 core schema).
pub(crate) fn resolve_plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let first = text.as_bytes()[0];
    if !(first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.')) {
        return Value::Str(text.to_owned());
    }
    if let Some(v) = resolve_int(text) {
        return v;
    }
    if let Some(f) = resolve_float(text) {
        return Value::Float(f);
    }
    Value::Str(text.to_owned())
}

pub(crate) fn resolve_int(text: &str) -> Option<Value> {
    let digits = match text.as_bytes()[0] {
        b'-' | b'+' => &text[1..],
        _ => text,
    };
    let (radix, body) = if let Some(rest) = digits.strip_prefix("0x") {
        (16, rest)
    } else if let Some(rest) = digits.strip_prefix("0o") {
        (8, rest)
    } else {
        (10, digits)
    };
    // The core schema allows a sign only on decimal integers.
    if body.is_empty() || (radix != 10 && digits.len() != text.len()) {
        return None;
    }
    if !body.bytes().all(|b| (b as char).is_digit(radix)) {
        return None;
    }
    let parsed = if radix == 10 {
        text.parse::<i64>()
    } else {
        i64::from_str_radix(body, radix)
    };
    match parsed {
        Ok(v) => Some(Value::Int(v)),
        // Too large for i64 (e.g. an all-digit commit SHA): keep the digits as text rather
        // than lose them in a float.
        Err(_) => Some(Value::Str(text.to_owned())),
    }
}

pub(crate) fn resolve_float(text: &str) -> Option<f64> {
    let unsigned = text.trim_start_matches(['-', '+']);
    if text.len() - unsigned.len() > 1 {
        return None;
    }
    let negative = text.starts_with('-');
    match unsigned {
        ".inf" | ".Inf" | ".INF" => {
            return Some(if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            });
        }
        ".nan" | ".NaN" | ".NAN" if unsigned.len() == text.len() => return Some(f64::NAN),
        _ => {}
    }
    // [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
    let b = unsigned.as_bytes();
    let mut i = 0;
    let int_digits = count_digits(&b[i..]);
    i += int_digits;
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        frac_digits = count_digits(&b[i..]);
        i += frac_digits;
    }
    if int_digits == 0 && frac_digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
            i += 1;
        }
        let exp = count_digits(&b[i..]);
        if exp == 0 {
            return None;
        }
        i += exp;
    }
    if i != b.len() {
        return None;
    }
    text.parse::<f64>().ok()
}

fn count_digits(b: &[u8]) -> usize {
    b.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// True when `text` can be written as a plain scalar in block context and every common
/// YAML reader (1.1 or 1.2) reads it back as this exact string.
pub(crate) fn is_plain_safe(text: &str) -> bool {
    let b = text.as_bytes();
    let Some(&first) = b.first() else {
        return false;
    };
    let last = b[b.len() - 1];
    if first == b' ' || last == b' ' || last == b':' {
        return false;
    }
    if matches!(
        first,
        b'-' | b'?'
            | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
            | b'='
            | b'~'
    ) {
        return false;
    }
    for (i, &c) in b.iter().enumerate() {
        match c {
            // Control characters, tabs and line breaks always need quoting.
            0..=0x1f | 0x7f => return false,
            b':' if b.get(i + 1) == Some(&b' ') => return false,
            b'#' if i > 0 && b[i - 1] == b' ' => return false,
            // Non-ASCII: reject the few code points YAML treats specially.
            0x80.. => {}
            _ => {}
        }
    }
    if !text.is_ascii() && text.chars().any(needs_escape) {
        return false;
    }
    !reads_as_non_string(text)
}

/// True when `text` may be written plain inside a flow sequence (`[a, b]`): ids, paths
/// and similar simple words.
pub fn is_flow_plain_safe(text: &str) -> bool {
    text.bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'/' | b'@' | b'+'))
        && is_plain_safe(text)
}

/// Characters that must be escaped in a double-quoted scalar (and so forbid plain and
/// block styles): controls other than tab and newline, the C1 range, the Unicode line and
/// paragraph separators and the byte order mark.
pub(crate) fn needs_escape(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}')
}

/// True when a YAML 1.1 or 1.2 reader could resolve the plain scalar to a null, boolean,
/// number or timestamp. Deliberately generous: a false positive only costs quotes.
fn reads_as_non_string(text: &str) -> bool {
    match text {
        "~" | "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
        | "y" | "Y" | "yes" | "Yes" | "YES" | "n" | "N" | "no" | "No" | "NO" | "on" | "On"
        | "ON" | "off" | "Off" | "OFF" | "<<" => return true,
        _ => {}
    }
    let b = text.as_bytes();
    let unsigned = match b[0] {
        b'-' | b'+' => &b[1..],
        _ => b,
    };
    let Some(&lead) = unsigned.first() else {
        return false;
    };
    if lead == b'.' {
        // .inf, .nan, .5 and friends.
        return unsigned.len() > 1;
    }
    if !lead.is_ascii_digit() {
        return false;
    }
    // 0x.., 0o.., 0b.. with any hex-ish body.
    if unsigned.len() > 2
        && unsigned[0] == b'0'
        && matches!(unsigned[1], b'x' | b'o' | b'b')
        && unsigned[2..]
            .iter()
            .all(|c| c.is_ascii_hexdigit() || *c == b'_')
    {
        return true;
    }
    // Decimal ints and floats of either version, sexagesimal (1:30), underscores.
    if unsigned
        .iter()
        .all(|c| c.is_ascii_digit() || matches!(c, b'_' | b'.' | b':' | b'e' | b'E' | b'-' | b'+'))
    {
        return true;
    }
    // YAML 1.1 timestamps start with a four-digit year and a dash.
    unsigned.len() >= 5 && unsigned[..4].iter().all(u8::is_ascii_digit) && unsigned[4] == b'-'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_scalars_resolve_under_the_core_schema() {
        assert_eq!(resolve_plain("~"), Value::Null);
        assert_eq!(resolve_plain(""), Value::Null);
        assert_eq!(resolve_plain("True"), Value::Bool(true));
        assert_eq!(resolve_plain("yes"), Value::Str("yes".into()));
        assert_eq!(resolve_plain("12"), Value::Int(12));
        assert_eq!(resolve_plain("-12"), Value::Int(-12));
        assert_eq!(resolve_plain("0x1F"), Value::Int(31));
        assert_eq!(resolve_plain("0o17"), Value::Int(15));
        assert_eq!(resolve_plain("1.5"), Value::Float(1.5));
        assert_eq!(resolve_plain("1e3"), Value::Float(1000.0));
        assert_eq!(resolve_plain(".5"), Value::Float(0.5));
        assert_eq!(resolve_plain("-.inf"), Value::Float(f64::NEG_INFINITY));
        assert!(matches!(resolve_plain(".nan"), Value::Float(f) if f.is_nan()));
        assert_eq!(resolve_plain("1_000"), Value::Str("1_000".into()));
        assert_eq!(resolve_plain("0755"), Value::Int(755));
        assert_eq!(resolve_plain("2026-03-01"), Value::Str("2026-03-01".into()));
        assert_eq!(resolve_plain("1.2.3"), Value::Str("1.2.3".into()));
        assert_eq!(resolve_plain("-0x1"), Value::Str("-0x1".into()));
        assert_eq!(resolve_plain("t-1"), Value::Str("t-1".into()));
    }

    #[test]
    fn ambiguous_strings_are_not_plain() {
        for s in [
            "",
            " x",
            "x ",
            "yes",
            "No",
            "on",
            "null",
            "~",
            "12",
            "1.5",
            "1e5",
            "0x10",
            "1:30",
            "2026-03-01",
            ".inf",
            "-1",
            "+1",
            "1_000",
            "a: b",
            "a #b",
            "x:",
            "- x",
            "-rf",
            "[x]",
            "{x}",
            "*a",
            "&a",
            "!t",
            "|",
            ">",
            "'q'",
            "\"q\"",
            "%x",
            "@x",
            "`x",
            "a\nb",
            "tab\t",
            "<<",
            "=",
            "\u{2028}x",
            "bom\u{feff}",
        ] {
            assert!(!is_plain_safe(s), "{s:?} must be quoted");
        }
    }

    #[test]
    fn ordinary_strings_stay_plain() {
        for s in [
            "t-1",
            "coder-1",
            "Add a --json flag to the report CLI",
            "specs/vision.md#api",
            "3f2a9c0d1e2b3a4c5d6e7f8091a2b3c4d5e6f708",
            "2026-03-01T09:00:00Z",
            "a:b",
            "a#b",
            "café",
            "IN_PROGRESS",
        ] {
            // Timestamps are excluded on purpose: the emitter writes Timestamp values plain
            // itself, but an arbitrary string that looks like one is quoted.
            let expected = !s.starts_with("2026");
            assert_eq!(is_plain_safe(s), expected, "{s:?}");
        }
    }
}
