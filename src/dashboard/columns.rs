//! Table columns sized to what they hold and to the terminal: each column as wide as its
//! widest cell; when the row does not fit, the widest columns give up room first (never
//! below their header), and a cell cut to its column ends in `…` — nothing is cut
//! silently.

/// The width of `text` in terminal columns (one per character: the blackboard's text is
/// shown with its control characters as pictures).
fn width(text: &str) -> usize {
    text.chars().count()
}

/// Column widths for `rows` under `header` in `room` columns, `gap` columns between two
/// columns; and the rows with each cell that had to be cut ending in `…`.
pub(crate) fn fit(
    header: &[&str],
    rows: &[Vec<String>],
    room: usize,
    gap: usize,
) -> (Vec<usize>, Vec<Vec<String>>) {
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(width(cell));
        }
    }
    let spacing = gap * widths.len().saturating_sub(1);
    let mut total: usize = widths.iter().sum::<usize>() + spacing;
    // The widest column that can still give a column up gives it, one at a time.
    while total > room {
        let Some((i, _)) = widths
            .iter()
            .enumerate()
            .filter(|(i, w)| **w > width(header[*i]).max(3))
            .max_by_key(|(_, w)| **w)
        else {
            break;
        };
        widths[i] -= 1;
        total -= 1;
    }
    let cut = rows
        .iter()
        .map(|row| {
            row.iter()
                .zip(&widths)
                .map(|(cell, &w)| shorten(cell, w))
                .collect()
        })
        .collect();
    (widths, cut)
}

/// `text` in at most `max` columns, ending in `…` when it was cut.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// `text` broken into rows of at most `room` columns (at spaces when a row has one),
/// rows after the first indented by two.
pub(crate) fn wrap(text: &str, room: usize) -> Vec<String> {
    let room = room.max(4);
    let mut rows = Vec::new();
    let mut rest: Vec<char> = text.chars().collect();
    let mut indent = "";
    while !rest.is_empty() {
        let space = room - indent.len();
        if rest.len() <= space {
            rows.push(format!("{indent}{}", rest.iter().collect::<String>()));
            break;
        }
        let cut = rest[..=space]
            .iter()
            .rposition(|c| *c == ' ')
            .filter(|&i| i > space / 2)
            .unwrap_or(space);
        let row: String = rest[..cut].iter().collect();
        rows.push(format!("{indent}{}", row.trim_end()));
        rest.drain(..cut);
        while rest.first() == Some(&' ') {
            rest.remove(0);
        }
        indent = "  ";
    }
    if rows.is_empty() {
        rows.push(String::new());
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_take_what_they_hold_and_give_room_widest_first() {
        let rows = vec![vec![
            "coder-1".to_owned(),
            "WAITING · a review of t-1".to_owned(),
            "opencode".to_owned(),
        ]];
        let (widths, cut) = fit(&["ID", "STATUS", "CLI"], &rows, 80, 1);
        assert_eq!(widths, [7, 25, 8]);
        assert_eq!(cut, rows);
        let (widths, cut) = fit(&["ID", "STATUS", "CLI"], &rows, 30, 1);
        assert_eq!(widths.iter().sum::<usize>() + 2, 30);
        assert_eq!(widths[2], 8, "the CLI is whole");
        assert!(cut[0][1].ends_with('…'), "{cut:?}");
    }

    #[test]
    fn long_lines_wrap_at_spaces_and_keep_every_character() {
        let text =
            "12:00:01 coder-1 blocked t-1: the format of the report is not specified anywhere";
        let rows = wrap(text, 30);
        assert!(rows.iter().all(|r| r.chars().count() <= 30), "{rows:?}");
        let joined: String = rows.iter().map(|r| r.trim()).collect::<Vec<_>>().join(" ");
        assert_eq!(joined, text);
    }
}
