//! Rendering results and errors: human text, or the `--json` envelope
//! `{"ok": bool, "result": …, "error": {"code", "message", "hint"}}`.

use std::io::Write;

use serde_json::{Value, json};

use super::error::CliError;
use super::exit::{code_name, exit_code};
use crate::blackboard::Finding;
use crate::terminal_text::visible;

pub struct Output {
    pub json: bool,
}

impl Output {
    /// Prints a successful result: `human` as text, or `result` in the envelope.
    pub fn ok(&self, result: Value, human: impl FnOnce() -> String) {
        let mut stdout = std::io::stdout().lock();
        if self.json {
            let _ = writeln!(stdout, "{}", json!({"ok": true, "result": result}));
        } else {
            let text = human();
            let text = visible(&text);
            let _ = stdout.write_all(text.as_bytes());
            if !text.is_empty() && !text.ends_with('\n') {
                let _ = writeln!(stdout);
            }
        }
    }

    /// Prints a result that is also a failure (e.g. `validate` with findings).
    pub fn fail_with_result(
        &self,
        result: Value,
        err: &CliError,
        human: impl FnOnce() -> String,
    ) -> i32 {
        if self.json {
            let envelope = json!({"ok": false, "result": result, "error": error_object(err)});
            println!("{envelope}");
        } else {
            print!("{}", visible(&human()));
        }
        exit_code(err.class)
    }

    /// Prints an error and returns its exit code.
    pub fn error(&self, err: &CliError) -> i32 {
        if self.json {
            println!(
                "{}",
                json!({"ok": false, "result": null, "error": error_object(err)})
            );
        } else {
            let mut stderr = std::io::stderr().lock();
            let mut text = format!("error: {}\n", err.message);
            for cause in &err.detail.causes {
                text.push_str(&format!("caused by: {cause}\n"));
            }
            for f in &err.detail.findings {
                text.push_str(&format!(
                    "  {}\n",
                    finding_line(err.detail.file.as_deref(), f)
                ));
            }
            for hint in &err.hints {
                text.push_str(&format!("hint: {hint}\n"));
            }
            let _ = stderr.write_all(visible(&text).as_bytes());
        }
        exit_code(err.class)
    }
}

fn error_object(err: &CliError) -> Value {
    let mut object = json!({
        "code": code_name(err.class),
        "message": err.message,
        "hint": if err.hints.is_empty() { Value::Null } else { Value::String(err.hints.join("\n")) },
    });
    if let Some(rule) = err.detail.rule {
        object["rule"] = json!(rule.as_str());
    }
    if !err.detail.causes.is_empty() {
        object["causes"] = json!(err.detail.causes);
    }
    if !err.detail.findings.is_empty() {
        object["findings"] = json!(err.detail.findings);
    }
    object
}

/// `file:line:column: error: message [rule 3 check] (path, id)` like a compiler.
pub(super) fn finding_line(file: Option<&str>, f: &Finding) -> String {
    let mut line = String::new();
    if let Some(file) = file {
        line.push_str(file);
        line.push(':');
    }
    if f.line > 0 {
        line.push_str(&format!("{}:{}:", f.line, f.column));
    }
    if !line.is_empty() {
        line.push(' ');
    }
    let severity = if f.is_error() { "error" } else { "warning" };
    line.push_str(&format!(
        "{severity}: {} [{}] at {}",
        f.message,
        f.label(),
        f.path
    ));
    if let Some(id) = &f.id {
        line.push_str(&format!(" ({id})"));
    }
    if let Some(hint) = &f.hint {
        line.push_str(&format!("\n    hint: {hint}"));
    }
    line
}
