//! `liza status --watch`: a full-screen dashboard (ratatui) of the tasks, agents, log tail
//! and alarms, redrawn when `.liza/` changes (file watch) and every second (lease
//! countdowns). Keys: ↑/↓ select a task, Enter opens its record (↑/↓, PgUp/PgDn,
//! Home/End scroll it), p pauses, r resumes, e
//! opens `liza edit` (the terminal is handed over and taken back), q quits. The terminal
//! is restored on exit, on error and on panic (`ratatui::init` installs the hook).

pub(crate) mod columns;
pub(crate) mod render;
pub(crate) mod view;

use crate::blackboard::store::changes::Topic;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use crate::blackboard::{Actor, Timestamp};
use crate::ops::{self, Project};
use render::Ui;
use view::View;

/// Runs the dashboard until the person quits.
pub(crate) fn run(project: &Project, actor: &Actor) -> Result<(), String> {
    if !std::io::stdout().is_terminal() {
        return Err("status --watch needs a terminal".into());
    }
    let changed = Arc::new(AtomicBool::new(true));
    let mut changes = project.store.changes(
        &[Topic::State, Topic::Log, Topic::Control, Topic::Alerts],
        Duration::from_millis(50),
    );
    let flag = changed.clone();
    std::thread::spawn(move || {
        loop {
            if changes.wait(Duration::from_secs(3600)) {
                flag.store(true, Ordering::SeqCst);
            }
        }
    });
    let mut terminal = ratatui::init();
    let result = serve(&mut terminal, project, actor, &changed);
    ratatui::restore();
    result.map_err(|e| e.to_string())
}

fn read(project: &Project) -> std::io::Result<View> {
    let snapshot = project
        .store
        .snapshot()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(View::read(&snapshot, &project.store, Timestamp::now()))
}

fn serve(
    terminal: &mut ratatui::DefaultTerminal,
    project: &Project,
    actor: &Actor,
    changed: &AtomicBool,
) -> std::io::Result<()> {
    let mut ui = Ui::default();
    let mut view = read(project)?;
    let mut read_at = Instant::now();
    loop {
        if changed.swap(false, Ordering::SeqCst) || read_at.elapsed() >= Duration::from_secs(1) {
            view = read(project)?;
            read_at = Instant::now();
        }
        terminal.draw(|frame| render::draw(frame, &view, &ui))?;
        if !event::poll(Duration::from_millis(200))? {
            continue;
        }
        let Event::Key(key) = event::read()? else {
            continue;
        };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        let tasks = view.report.tasks.len();
        // The open record scrolls; its last row is as far as it goes.
        let size = terminal.size()?;
        let limit = render::detail_scroll_limit(
            &view,
            &ui,
            ratatui::layout::Rect::new(0, 0, size.width, size.height),
        );
        let page = (size.height as usize).saturating_sub(5).max(1);
        match key.code {
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return Ok(()),
            KeyCode::Char('q') => return Ok(()),
            KeyCode::Esc if ui.detail => ui.detail = false,
            KeyCode::Esc => return Ok(()),
            KeyCode::Up | KeyCode::Char('k') if ui.detail => {
                ui.scroll = ui.scroll.min(limit).saturating_sub(1);
            }
            KeyCode::Down | KeyCode::Char('j') if ui.detail => {
                ui.scroll = (ui.scroll + 1).min(limit);
            }
            KeyCode::PageUp if ui.detail => ui.scroll = ui.scroll.min(limit).saturating_sub(page),
            KeyCode::PageDown if ui.detail => ui.scroll = (ui.scroll + page).min(limit),
            KeyCode::Home if ui.detail => ui.scroll = 0,
            KeyCode::End if ui.detail => ui.scroll = limit,
            KeyCode::Up | KeyCode::Char('k') => ui.selected = ui.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                ui.selected = (ui.selected + 1).min(tasks.saturating_sub(1));
            }
            KeyCode::Enter => {
                ui.detail = !ui.detail && tasks > 0;
                ui.scroll = 0;
            }
            KeyCode::Char('p') => {
                ui.message = Some(outcome(ops::pause(project, actor), "paused"));
                changed.store(true, Ordering::SeqCst);
            }
            KeyCode::Char('r') => {
                ui.message = Some(outcome(ops::resume(project, actor, None), "resumed"));
                changed.store(true, Ordering::SeqCst);
            }
            KeyCode::Char('e') => {
                ratatui::restore();
                let status = std::env::current_exe()
                    .and_then(|exe| std::process::Command::new(exe).arg("edit").status());
                *terminal = ratatui::init();
                ui.message = Some(match status {
                    Ok(s) if s.success() => "edit saved".into(),
                    Ok(_) => "edit abandoned or refused (see liza edit)".into(),
                    Err(e) => format!("could not start liza edit: {e}"),
                });
                changed.store(true, Ordering::SeqCst);
            }
            _ => {}
        }
    }
}

fn outcome<T>(result: Result<T, ops::OpsError>, done: &str) -> String {
    match result {
        Ok(_) => done.to_owned(),
        Err(e) => format!("refused: {e}"),
    }
}
