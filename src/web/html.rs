//! Writing HTML by hand, safely: every string from the blackboard, a log or git goes
//! through [`E`] (agents write task titles, notes and output: they are untrusted), every
//! query value through [`Q`]; the page's frame, its times and its small pieces.

use std::fmt::{self, Write as _};

use crate::blackboard::Timestamp;
use crate::blackboard::timestamp::human_duration;

/// Text escaped for HTML, in an element or a quoted attribute: `& < > " '`.
pub(crate) struct E<'a>(pub &'a str);

impl fmt::Display for E<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(['&', '<', '>', '"', '\'']) {
            f.write_str(&rest[..at])?;
            f.write_str(match rest.as_bytes()[at] {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                _ => "&#39;",
            })?;
            rest = &rest[at + 1..];
        }
        f.write_str(rest)
    }
}

/// A value for a URL's query string, percent-encoded (and then safe in an attribute).
pub(crate) struct Q<'a>(pub &'a str);

impl fmt::Display for Q<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in form_urlencoded::byte_serialize(self.0.as_bytes()) {
            f.write_str(part)?;
        }
        Ok(())
    }
}

/// A moment, shown relative to `now` ("4 min ago", "in 2 min") with the absolute UTC time
/// as its tooltip; the page's script keeps the relative text current.
pub(crate) fn time(at: Timestamp, now: Timestamp) -> String {
    let age = now.seconds_since(at);
    let relative = if age >= 0 {
        format!("{} ago", human_duration(age))
    } else {
        format!("in {}", human_duration(-age))
    };
    format!(
        "<time datetime=\"{at}\" title=\"{}\">{relative}</time>",
        absolute(at)
    )
}

/// `2026-11-29 09:15:51 UTC`.
pub(crate) fn absolute(at: Timestamp) -> String {
    let text = at.to_string();
    format!(
        "{} {} UTC",
        text.get(..10).unwrap_or(&text),
        text.get(11..19).unwrap_or("")
    )
}

/// A link to a task's page.
pub(crate) fn task_link(id: &str) -> String {
    format!("<a href=\"/task/{}\">{}</a>", Q(id), E(id))
}

/// A link to an agent's entries in the log.
pub(crate) fn agent_link(id: &str) -> String {
    format!("<a href=\"/log?agent={}\">{}</a>", Q(id), E(id))
}

/// A link to a commit's page, shown by its short id; anything but a commit id is text.
pub(crate) fn commit_link(id: &str) -> String {
    if is_commit_id(id) {
        format!(
            "<a class=\"commit\" href=\"/commit/{id}\">{}</a>",
            &id[..12.min(id.len())]
        )
    } else {
        E(id).to_string()
    }
}

/// 7 to 64 lowercase hex digits: a commit id liza may hand to git.
pub(crate) fn is_commit_id(id: &str) -> bool {
    (7..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A status as a badge (its class names the status for the colours).
pub(crate) fn badge(status: &str) -> String {
    format!(
        "<span class=\"badge s-{}\">{}</span>",
        E(&status.to_ascii_lowercase()),
        E(status)
    )
}

/// What a page needs from the server to be framed.
pub(crate) struct Frame<'a> {
    pub title: &'a str,
    /// The navigation entry that is this page (`sprint`, `inbox`, `log`), if one is.
    pub here: &'a str,
    /// Items waiting in the person's inbox, counted in the navigation.
    pub inbox: usize,
    /// The value every action form carries (none in read-only mode).
    pub csrf: Option<&'a str>,
    pub revision: u64,
    /// The changes the live feed had seen when the page was read.
    pub seen: u64,
}

/// The whole document around `main`: the navigation, the flash line the script fills
/// after an action, and the keyboard help.
pub(crate) fn page(frame: &Frame<'_>, main: &str) -> String {
    let mut s = String::with_capacity(main.len() + 2048);
    let _ = write!(
        s,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{} · liza</title><link rel=\"stylesheet\" href=\"/assets/app.css\">\
         <script src=\"/assets/app.js\" defer></script></head>\
         <body data-revision=\"{}\" data-seen=\"{}\"{}>",
        E(frame.title),
        frame.revision,
        frame.seen,
        if frame.csrf.is_none() {
            " data-read-only=\"1\""
        } else {
            ""
        },
    );
    s.push_str(&header(frame));
    s.push_str("<div id=\"flash\" role=\"status\" aria-live=\"polite\"></div><main id=\"main\">");
    s.push_str(main);
    s.push_str(
        "</main><footer id=\"keys\"><kbd>s</kbd> sprint · <kbd>i</kbd> inbox · <kbd>l</kbd> log · \
         <kbd>j</kbd>/<kbd>k</kbd> select · <kbd>Enter</kbd> open · <kbd>Esc</kbd> back · \
         <kbd>p</kbd> pause · <kbd>r</kbd> resume · <kbd>/</kbd> filter</footer></body></html>\n",
    );
    s
}

/// The navigation bar: the pages, the inbox's count and the live indicator.
pub(crate) fn header(frame: &Frame<'_>) -> String {
    let item = |key: &str, href: &str, label: String| {
        format!(
            "<a href=\"{href}\"{}>{label}</a>",
            if frame.here == key {
                " aria-current=\"page\""
            } else {
                ""
            }
        )
    };
    let inbox = if frame.inbox > 0 {
        format!("Inbox <span class=\"count\">{}</span>", frame.inbox)
    } else {
        "Inbox".to_owned()
    };
    format!(
        "<header id=\"top\"><nav>{}{}{}</nav><span id=\"live\" title=\"follows the blackboard\">revision {}</span></header>",
        item("sprint", "/", "Sprint".into()),
        item("inbox", "/inbox", inbox),
        item("log", "/log", "Log".into()),
        frame.revision
    )
}

/// An action form: a POST to `/action/<name>` carrying the CSRF value, `fields` (HTML the
/// caller escaped) and a button; nothing in read-only mode.
pub(crate) fn form(
    csrf: Option<&str>,
    name: &str,
    fields: &str,
    button: &str,
    command: &str,
) -> String {
    let Some(csrf) = csrf else {
        return String::new();
    };
    format!(
        "<form class=\"action\" method=\"post\" action=\"/action/{name}\" data-action=\"{name}\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{}\">{fields}\
         <button type=\"submit\" title=\"{}\">{}</button></form>",
        E(csrf),
        E(command),
        E(button),
    )
}

/// A hidden form field.
pub(crate) fn hidden(name: &str, value: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
        E(name),
        E(value)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_markup_character_is_escaped() {
        assert_eq!(
            E("<img src=x onerror='a()'> & \"</script>").to_string(),
            "&lt;img src=x onerror=&#39;a()&#39;&gt; &amp; &quot;&lt;/script&gt;"
        );
        assert_eq!(E("plain t-1 text").to_string(), "plain t-1 text");
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(Q("a b&c=\"<").to_string(), "a+b%26c%3D%22%3C");
    }

    #[test]
    fn only_hex_ids_become_commit_links() {
        assert!(
            commit_link("0123456789abcdef")
                .starts_with("<a class=\"commit\" href=\"/commit/0123456789abcdef\">0123456789ab<")
        );
        assert_eq!(commit_link("\"><script>"), "&quot;&gt;&lt;script&gt;");
        assert!(!is_commit_id("HEAD"));
    }

    #[test]
    fn read_only_pages_have_no_forms() {
        assert_eq!(form(None, "pause", "", "Pause", "liza pause"), "");
        let f = form(Some("c0ffee"), "pause", "", "Pause", "liza pause");
        assert!(f.contains("name=\"csrf\" value=\"c0ffee\""), "{f}");
    }
}
