//! Just enough markdown for the docs tests: which lines are prose and which are in fenced
//! code blocks, the links of a line, the headings of a page and their GitHub anchors.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Prose,
    /// A ``` or ~~~ line opening or closing a block.
    Fence,
    Code,
}

pub struct Line<'a> {
    /// 1-based.
    pub number: usize,
    pub text: &'a str,
    pub kind: Kind,
}

/// The lines of `text`, each marked prose, fence or code.
pub fn lines(text: &str) -> Vec<Line<'_>> {
    let mut open: Option<(char, usize)> = None;
    let mut out = Vec::new();
    for (i, text) in text.lines().enumerate() {
        let trimmed = text.trim_start();
        let fence = ['`', '~'].into_iter().find_map(|c| {
            let n = trimmed.chars().take_while(|&x| x == c).count();
            (n >= 3).then_some((c, n))
        });
        let kind = match (open, fence) {
            (Some((c, n)), Some((f, m)))
                if c == f && m >= n && trimmed.trim_start_matches(c).trim().is_empty() =>
            {
                open = None;
                Kind::Fence
            }
            (Some(_), _) => Kind::Code,
            (None, Some(f)) => {
                open = Some(f);
                Kind::Fence
            }
            (None, None) => Kind::Prose,
        };
        out.push(Line {
            number: i + 1,
            text,
            kind,
        });
    }
    out
}

static CODE_SPAN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(`+)[^`]*?(`+)").unwrap());
static INLINE_LINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)"#).unwrap());
static REFERENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?").unwrap());
static HTML_LINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?:href|src)\s*=\s*"([^"]+)""#).unwrap());
static HTML_ANCHOR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"<a\s+(?:id|name)\s*=\s*"([^"]+)""#).unwrap());
static ATX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s{0,3}#{1,6}(?:\s+(.*?))?\s*$").unwrap());
static SETEXT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s{0,3}(?:=+|-+)\s*$").unwrap());
static LINK_TEXT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"!?\[([^\]]*)\]\([^)]*\)").unwrap());

/// A prose line without its code spans (what they hold is never a link).
fn without_code_spans(text: &str) -> String {
    CODE_SPAN.replace_all(text, "").into_owned()
}

/// The link targets of a prose line: inline links and images, reference definitions,
/// HTML `href`/`src`.
pub fn links(text: &str) -> Vec<String> {
    let text = without_code_spans(text);
    let mut found: Vec<String> = INLINE_LINK
        .captures_iter(&text)
        .map(|c| c[1].to_owned())
        .collect();
    found.extend(REFERENCE.captures_iter(&text).map(|c| c[1].to_owned()));
    found.extend(HTML_LINK.captures_iter(&text).map(|c| c[1].to_owned()));
    found
}

/// The headings of a page as plain text (markup removed), with their line numbers.
pub fn headings(text: &str) -> Vec<(usize, String)> {
    let lines = lines(text);
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.kind != Kind::Prose {
            continue;
        }
        if let Some(c) = ATX.captures(line.text) {
            let raw = c.get(1).map_or("", |m| m.as_str());
            let raw = raw.trim_end_matches('#').trim_end();
            found.push((line.number, plain(raw)));
        } else if SETEXT.is_match(line.text)
            && let Some(previous) = i.checked_sub(1).map(|p| &lines[p])
            && previous.kind == Kind::Prose
            && !previous.text.trim().is_empty()
            && !ATX.is_match(previous.text)
            && !previous.text.trim_start().starts_with(['-', '*', '>', '|'])
        {
            found.push((previous.number, plain(previous.text.trim())));
        }
    }
    found
}

/// A heading's text as it reads: link texts kept, code and emphasis marks dropped.
pub fn plain(text: &str) -> String {
    let text = LINK_TEXT.replace_all(text, "$1");
    text.chars().filter(|c| !matches!(c, '`' | '*')).collect()
}

/// GitHub's anchor for a heading's text: lowercase, punctuation dropped, spaces as `-`.
pub fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor a page has: its headings' slugs (`-1`, `-2`… for repeats) and the ids of
/// its HTML anchors.
pub fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = std::collections::HashMap::<String, usize>::new();
    let mut found = BTreeSet::new();
    for (_, heading) in headings(text) {
        let base = slug(&heading);
        let n = seen.entry(base.clone()).or_insert(0);
        found.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    found.extend(HTML_ANCHOR.captures_iter(text).map(|c| c[1].to_owned()));
    found
}

#[test]
fn the_markdown_reader_finds_blocks_links_and_anchors() {
    let page = "# Getting `liza` started\n\nSee [a](b.md#x) and `[c](d.md)`.\n\n```sh\n[e](f.md)\n~~~\n```\n\nDup\n---\n## Dup\n[r]: <g.md>\n";
    let kinds: Vec<Kind> = lines(page).iter().map(|l| l.kind).collect();
    assert_eq!(
        kinds[4..8],
        [Kind::Fence, Kind::Code, Kind::Code, Kind::Fence]
    );
    assert_eq!(links("See [a](b.md#x) and `[c](d.md)`."), ["b.md#x"]);
    assert_eq!(links("[r]: <g.md>"), ["g.md"]);
    let anchors = anchors(page);
    assert_eq!(
        anchors.into_iter().collect::<Vec<_>>(),
        ["dup", "dup-1", "getting-liza-started"]
    );
    assert_eq!(
        slug("Exit codes (agent → supervisor)"),
        "exit-codes-agent--supervisor"
    );
}
