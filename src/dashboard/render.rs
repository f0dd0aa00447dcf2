//! Drawing one frame of the dashboard from a [`View`] — a pure function of the view, the
//! selection and the area, so it is tested with ratatui's test backend at any size. Laid
//! out to stay readable in an 80×24 tmux pane: header, tasks, agents, log tail beside the
//! alarms, and a line of keys.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row, Table, TableState, Wrap};

use super::view::View;
use crate::blackboard::model::TaskStatus;
use crate::status::{AgentLine, TaskLine, bar};

/// What the person is looking at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ui {
    pub selected: usize,
    /// The selected task's record is open.
    pub detail: bool,
    /// The outcome of the last key (pause, resume, edit), shown in the footer.
    pub message: Option<String>,
}

pub fn draw(frame: &mut Frame, view: &View, ui: &Ui) {
    let area = frame.area();
    // The title line, the column header, one line per agent.
    let agents_height = (view.report.agents.len() as u16 + 2).clamp(3, 10);
    let bottom_height = if area.height >= 40 {
        area.height / 3
    } else {
        7
    };
    // The header, and a line for each sprint state that waits for a person.
    let header_height = 2 + view.report.attention.len() as u16;
    let [header, tasks, agents, bottom, footer] = Layout::vertical([
        Constraint::Length(header_height),
        Constraint::Min(4),
        Constraint::Length(agents_height),
        Constraint::Length(bottom_height),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(frame, view, header);
    draw_tasks(frame, view, ui, tasks);
    draw_agents(frame, view, agents);
    let [log, alarms] =
        Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(bottom);
    draw_log(frame, view, log);
    draw_alarms(frame, view, alarms);
    draw_footer(frame, ui, footer);
    if ui.detail {
        draw_detail(frame, view, ui, area);
    }
    show_controls(frame.buffer_mut());
}

/// Blackboard text may hold escape sequences (a hostile note): a cell holding a control
/// character gets its one-column picture, so the terminal is never sent one.
fn show_controls(buffer: &mut ratatui::buffer::Buffer) {
    for cell in buffer.content.iter_mut() {
        if let Some(symbol) = crate::terminal_text::cell_symbol(cell.symbol()) {
            cell.set_symbol(&symbol);
        }
    }
}

fn status_style(status: TaskStatus) -> Style {
    use TaskStatus as S;
    let color = match status {
        S::Merged => Color::Green,
        S::Blocked | S::IntegrationFailed => Color::Red,
        S::Rejected => Color::Yellow,
        S::Claimed | S::ReadyForReview | S::Approved => Color::Cyan,
        S::Abandoned | S::Superseded => Color::DarkGray,
        S::Draft | S::Unclaimed => Color::Reset,
    };
    Style::default().fg(color)
}

fn draw_header(frame: &mut Frame, view: &View, area: Rect) {
    let r = &view.report;
    let goal = r.goal.status.map_or("-", |s| s.as_str());
    let first = Line::from(vec![
        Span::styled("liza ", Style::default().add_modifier(Modifier::BOLD)),
        Span::raw(format!(
            "{} ({goal}) · {} ({}) · revision {}{}",
            r.goal.id,
            r.sprint.id,
            r.sprint.status,
            r.revision,
            if r.pending_hand_edit {
                " · hand edit pending"
            } else {
                ""
            }
        )),
    ]);
    let counts: Vec<String> = r
        .sprint
        .counts
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let second = Line::from(format!(
        "{} {}/{} terminal · {}",
        bar(r.sprint.planned_terminal, r.sprint.planned, 16),
        r.sprint.planned_terminal,
        r.sprint.planned,
        counts.join(" · ")
    ));
    let mut lines = vec![first, second];
    for a in &r.attention {
        lines.push(Line::from(vec![
            Span::styled(
                format!("{} ", a.state),
                Style::default()
                    .fg(Color::Yellow)
                    .add_modifier(Modifier::BOLD | Modifier::REVERSED),
            ),
            Span::raw(format!(" {}", a.next)),
        ]));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

fn draw_tasks(frame: &mut Frame, view: &View, ui: &Ui, area: Rect) {
    let rows: Vec<Row> = view
        .report
        .tasks
        .iter()
        .map(|t| Row::new(t.cells()).style(status_style(t.status)))
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Length(13),
            Constraint::Length(18),
            Constraint::Length(3),
            Constraint::Length(11),
            Constraint::Length(4),
            Constraint::Length(7),
            Constraint::Length(7),
            Constraint::Min(6),
        ],
    )
    .header(Row::new(TaskLine::HEADER).style(Style::default().add_modifier(Modifier::BOLD)))
    .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
    .highlight_symbol("›")
    .block(
        Block::default()
            .borders(Borders::TOP)
            .title(format!(" Tasks ({}) ", view.report.tasks.len())),
    );
    let mut state = TableState::default();
    if !view.report.tasks.is_empty() {
        state.select(Some(ui.selected.min(view.report.tasks.len() - 1)));
    }
    frame.render_stateful_widget(table, area, &mut state);
}

fn draw_agents(frame: &mut Frame, view: &View, area: Rect) {
    let rows: Vec<Row> = view
        .report
        .agents
        .iter()
        .map(|a| Row::new(a.cells()))
        .collect();
    let unsandboxed: Vec<&str> = view
        .report
        .agents
        .iter()
        .filter(|a| a.unsandboxed())
        .map(|a| a.id.as_str())
        .collect();
    let mut title = vec![Span::raw(format!(
        " Agents ({}) ",
        view.report.agents.len()
    ))];
    if !unsandboxed.is_empty() {
        // Loud: these agents run with the user's full access (specs/sandbox.md *Modes*).
        title.push(Span::styled(
            format!(
                " UNSANDBOXED: {} (liza status says why) ",
                unsandboxed.join(", ")
            ),
            Style::default()
                .fg(Color::White)
                .bg(Color::Red)
                .add_modifier(Modifier::BOLD),
        ));
    }
    let table = Table::new(
        rows,
        [
            Constraint::Length(16),
            Constraint::Length(13),
            Constraint::Length(9),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(7),
            Constraint::Min(7),
        ],
    )
    .header(Row::new(AgentLine::HEADER).style(Style::default().add_modifier(Modifier::BOLD)))
    .block(
        Block::default()
            .borders(Borders::TOP)
            .title(Line::from(title)),
    );
    frame.render_widget(table, area);
}

/// The last lines that fit, newest at the bottom.
fn tail(lines: &[String], area: Rect) -> Vec<Line<'static>> {
    let room = area.height.saturating_sub(1) as usize;
    lines[lines.len().saturating_sub(room)..]
        .iter()
        .map(|l| Line::from(l.clone()))
        .collect()
}

fn draw_log(frame: &mut Frame, view: &View, area: Rect) {
    let block = Block::default().borders(Borders::TOP).title(" Log ");
    frame.render_widget(Paragraph::new(tail(&view.log, area)).block(block), area);
}

fn draw_alarms(frame: &mut Frame, view: &View, area: Rect) {
    // `<ts> <LEVEL> <CATEGORY> <message> [key]`: the key is for machines.
    let lines: Vec<String> = view
        .alarms
        .iter()
        .map(|l| {
            let text = l.rsplit_once(" [").map_or(l.as_str(), |(t, _)| t);
            text.split_once(' ')
                .map_or(text, |(_, rest)| rest)
                .to_owned()
        })
        .collect();
    let block = Block::default()
        .borders(Borders::TOP | Borders::LEFT)
        .title(format!(" Alarms ({}) ", view.alarms.len()));
    let body = if lines.is_empty() {
        vec![Line::from("none")]
    } else {
        tail(&lines, area)
            .into_iter()
            .map(|l| l.style(Style::default().fg(Color::Red)))
            .collect()
    };
    frame.render_widget(Paragraph::new(body).block(block), area);
}

fn draw_footer(frame: &mut Frame, ui: &Ui, area: Rect) {
    let keys = "↑↓ task · ⏎ detail · p pause · r resume · e edit · q quit";
    let text = match &ui.message {
        Some(m) => format!("{m} — {keys}"),
        None => keys.to_owned(),
    };
    frame.render_widget(
        Paragraph::new(text).style(Style::default().add_modifier(Modifier::DIM)),
        area,
    );
}

fn draw_detail(frame: &mut Frame, view: &View, ui: &Ui, area: Rect) {
    let Some(yaml) = view.task_yaml.get(ui.selected) else {
        return;
    };
    let [_, middle, _] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(5),
        Constraint::Length(1),
    ])
    .areas(area);
    let [_, popup, _] = Layout::horizontal([
        Constraint::Length(2),
        Constraint::Min(20),
        Constraint::Length(2),
    ])
    .areas(middle);
    let id = view
        .report
        .tasks
        .get(ui.selected)
        .map_or("", |t| t.id.as_str());
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(yaml.clone())
            .wrap(Wrap { trim: false })
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(format!(" {id} — Esc closes ")),
            ),
        popup,
    );
}

#[cfg(test)]
mod tests {
    use crate::blackboard::EventKind;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::blackboard::log::LogEntry;
    use crate::status::mid_sprint_fixture;

    fn view() -> View {
        let (snapshot, paths, now) = mid_sprint_fixture();
        let log: Vec<LogEntry> = (0..12)
            .map(|i| {
                let mut e = LogEntry::new(
                    now.plus_seconds(-600 + i * 40),
                    "coder-2",
                    EventKind::Claimed,
                );
                e.task = Some(format!("t-{i}"));
                e.detail = Some(format!("worktree .worktrees/t-{i}"));
                e
            })
            .collect();
        let alarms = vec![
            "2026-03-01T12:20:00Z WARN TASK_BLOCKED t-blocked is BLOCKED: the format is unspecified [blocked:t-blocked:2026-03-01T12:00:00Z]".to_owned(),
            "2026-03-01T12:25:00Z ERROR INTEGRATION_FAILED t-failed could not be merged into integration (tests) [integration-failed:t-failed:x]".to_owned(),
        ];
        View::new(&snapshot, &Default::default(), &paths, now, log, alarms)
    }

    fn screen(width: u16, height: u16, ui: &Ui) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        let view = view();
        terminal.draw(|f| draw(f, &view, ui)).unwrap();
        terminal.backend().to_string()
    }

    #[test]
    fn the_dashboard_fits_an_80_by_24_pane() {
        let text = screen(80, 24, &Ui::default());
        insta::assert_snapshot!(text);
    }

    #[test]
    fn a_large_terminal_shows_more_of_everything() {
        let text = screen(200, 50, &Ui::default());
        insta::assert_snapshot!(text);
    }

    #[test]
    fn the_selected_tasks_record_opens_over_the_dashboard() {
        let ui = Ui {
            selected: 2,
            detail: true,
            message: Some("paused".into()),
        };
        let text = screen(80, 24, &ui);
        assert!(text.contains("Esc closes"), "{text}");
        assert!(text.contains("paused —"), "{text}");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn escape_sequences_in_blackboard_text_never_reach_the_terminal() {
        let (snapshot, paths, now) = mid_sprint_fixture();
        let alarms = vec!["2026-03-01T12:30:00Z WARN NOTE \u{1b}]0;owned\u{7}\u{1b}[2J".to_owned()];
        let mut note = LogEntry::new(now, "human", EventKind::Note);
        note.detail = Some("\u{1b}[2J\u{9b}H".into());
        let view = View::new(
            &snapshot,
            &Default::default(),
            &paths,
            now,
            vec![note],
            alarms,
        );
        let mut terminal = Terminal::new(TestBackend::new(120, 30)).unwrap();
        terminal.draw(|f| draw(f, &view, &Ui::default())).unwrap();
        let cells = &terminal.backend().buffer().content;
        assert!(
            cells
                .iter()
                .all(|c| !c.symbol().chars().any(char::is_control)),
            "a control character is in a cell"
        );
        let text = terminal.backend().to_string();
        assert!(text.contains("NOTE ␛]0;owned␇␛[2J"), "{text}");
        assert!(text.contains("note: ␛[2J<U+009B>H"), "{text}");
    }
}
