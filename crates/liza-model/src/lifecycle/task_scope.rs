//! What a coder may change for a task: its `paths` (the planner's artifacts; none means
//! anything outside `protected_paths`) and always the test files that go with them
//! (`config.test_paths`): a planner that lists only source files must not make the TDD
//! rule impossible to meet. Protected paths stay protected either way (checked apart).

use super::text_rules::any_match;
use crate::model::{Config, Task};

/// The files one task admits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskScope {
    /// The task's id, for the command that widens it.
    pub task: String,
    /// The task's own paths; empty: the task is not limited.
    pub paths: Vec<String>,
    /// The test globs admitted with them.
    pub tests: Vec<String>,
}

impl TaskScope {
    /// The scope of `task` under `config`.
    pub fn of(task: &Task, config: &Config) -> TaskScope {
        TaskScope {
            task: task.id.to_string(),
            paths: task.paths.clone().unwrap_or_default(),
            tests: config.test_paths(),
        }
    }

    /// Whether the task is limited to some paths at all.
    pub fn is_limited(&self) -> bool {
        !self.paths.is_empty()
    }

    /// Whether `file` (repository-relative) may change for this task.
    pub fn admits(&self, file: &str) -> bool {
        !self.is_limited() || any_match(&self.paths, file) || any_match(&self.tests, file)
    }

    /// Every glob that admits files, the tests included (empty: anything).
    pub fn globs(&self) -> Vec<String> {
        if !self.is_limited() {
            return Vec::new();
        }
        let mut all = self.paths.clone();
        all.extend(self.tests.iter().cloned());
        all
    }

    /// The task's paths and the tests, for prompts and messages.
    pub fn describe(&self) -> String {
        if !self.is_limited() {
            return "anything outside the protected paths".into();
        }
        format!(
            "{}, and their tests ({})",
            self.paths.join(", "),
            self.tests.join(", ")
        )
    }

    /// For a file the task does not admit: the glob that would admit it and how the
    /// task is widened.
    pub fn widen_hint(&self, file: &str) -> String {
        let glob = match file.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/**"),
            None => file.to_owned(),
        };
        let mut paths = self.paths.clone();
        paths.push(glob.clone());
        format!(
            "`{glob}` would admit {file}; the planner or a person widens the task with \
             `liza amend-task {} --paths {}`",
            self.task,
            paths.join(",")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(paths: &[&str]) -> TaskScope {
        let mut task = Task::new(
            crate::TaskId::parse("t-1").unwrap(),
            crate::model::TaskStatus::Claimed,
        );
        task.paths = Some(paths.iter().map(|p| p.to_string()).collect());
        TaskScope::of(&task, &Config::default())
    }

    #[test]
    fn a_task_listing_only_source_files_admits_their_tests() {
        let s = scope(&["greet.sh"]);
        for test in [
            "tests/test_greet.sh",
            "test/greet.sh",
            "src/greet_test.go",
            "pkg/test_greet.py",
            "web/greet.test.ts",
            "spec/greet_spec.rb",
            "ui/__tests__/greet.js",
        ] {
            assert!(s.admits(test), "{test}");
        }
        assert!(s.admits("greet.sh"));
        assert!(!s.admits("docs/greet.md"));
        assert!(!s.admits("greet.sh.bak"));
        assert!(scope(&[]).admits("anything/at/all"));
    }

    #[test]
    fn a_refusal_names_the_glob_and_the_command_that_widens_the_task() {
        let hint = scope(&["greet.sh"]).widen_hint("docs/greet.md");
        assert!(
            hint.contains("`docs/**` would admit docs/greet.md"),
            "{hint}"
        );
        assert!(
            hint.contains("liza amend-task t-1 --paths greet.sh,docs/**"),
            "{hint}"
        );
    }
}
