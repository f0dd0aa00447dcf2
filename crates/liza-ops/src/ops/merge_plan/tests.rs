//! The schedule against the rounds specs/git.md *A batch* describes, and the benchmark's
//! scenarios (specs/quality.md Q1, Q2) counted in rounds of checks.

use super::*;

fn ids(names: &[&str]) -> Vec<TaskId> {
    names.iter().map(|n| TaskId::parse(n).unwrap()).collect()
}

fn queue(n: usize) -> Vec<TaskId> {
    (1..=n)
        .map(|i| TaskId::parse(&format!("t-{i}")).unwrap())
        .collect()
}

/// Runs the schedule to the end with checks that fail whenever a batch holds a task of
/// `failing`; returns the rounds taken, the tasks in publish order, and the failed ones.
fn simulate(
    tasks: &[TaskId],
    failing: &[TaskId],
    max_batch: usize,
    parallel: usize,
) -> (usize, Vec<TaskId>, Vec<TaskId>) {
    let mut schedule = Schedule::new(max_batch, parallel);
    for t in tasks {
        schedule.push(t.clone());
    }
    let (mut rounds, mut published, mut failed) = (0, Vec::new(), Vec::new());
    while !schedule.is_empty() {
        rounds += 1;
        assert!(rounds < 100, "the schedule never ends");
        let units = schedule.round();
        assert!(!units.is_empty() && units.len() <= parallel);
        // A stacked batch sees the ones under it.
        let mut seen: Vec<TaskId> = Vec::new();
        let mut verdicts = Vec::new();
        for u in &units {
            if !u.stacked {
                seen.clear();
            }
            seen.extend(u.tasks.iter().cloned());
            verdicts.push(if seen.iter().any(|t| failing.contains(t)) {
                UnitVerdict::Failed
            } else {
                UnitVerdict::Passed
            });
        }
        let r = schedule.resolve(&units, &verdicts);
        for i in r.publish {
            published.extend(units[i].tasks.iter().cloned());
        }
        failed.extend(r.failed);
    }
    (rounds, published, failed)
}

#[test]
fn sixteen_passing_tasks_are_two_batches_checked_at_once() {
    let tasks = queue(16);
    let (rounds, published, failed) = simulate(&tasks, &[], 8, 2);
    assert_eq!(rounds, 1);
    assert_eq!(published, tasks);
    assert!(failed.is_empty());
}

#[test]
fn one_failing_task_among_sixteen_fails_alone_within_five_rounds() {
    for bad in 1..=16 {
        let tasks = queue(16);
        let failing = vec![tasks[bad - 1].clone()];
        let (rounds, published, failed) = simulate(&tasks, &failing, 8, 2);
        assert_eq!(failed, failing, "task {bad}");
        assert_eq!(published.len(), 15, "task {bad}");
        assert!(rounds <= 5, "task {bad}: {rounds} rounds");
    }
}

#[test]
fn bisection_finds_two_failing_tasks_of_one_batch() {
    let tasks = ids(&["a", "b", "c", "d"]);
    let failing = ids(&["b", "c"]);
    let (_, published, mut failed) = simulate(&tasks, &failing, 8, 2);
    failed.sort();
    assert_eq!(failed, failing);
    let mut published = published;
    published.sort();
    assert_eq!(published, ids(&["a", "d"]));
}

#[test]
fn without_speculation_batches_go_one_at_a_time() {
    let tasks = queue(16);
    let (rounds, published, _) = simulate(&tasks, &[], 8, 1);
    assert_eq!(rounds, 2);
    assert_eq!(published, tasks);
    let (rounds, _, _) = simulate(&tasks, &[], 1, 1);
    assert_eq!(rounds, 16, "batches of one are today's serial merges");
}

#[test]
fn a_failing_batch_stops_what_was_built_on_it_and_it_is_checked_again() {
    let mut s = Schedule::new(2, 2);
    for t in ids(&["a", "b", "c", "d"]) {
        s.push(t);
    }
    let units = s.round();
    assert_eq!(units.len(), 2);
    assert!(!units[0].stacked && units[1].stacked);
    let r = s.resolve(&units, &[UnitVerdict::Failed, UnitVerdict::Stopped]);
    assert!(r.publish.is_empty() && r.failed.is_empty());
    // The halves of the failing batch first, each on the tip; then what was built on it.
    let next = s.round();
    assert_eq!(next.len(), 2);
    assert!(next.iter().all(|u| u.half && !u.stacked));
    assert_eq!(next[0].tasks, ids(&["a"]));
    assert_eq!(next[1].tasks, ids(&["b"]));
    let r = s.resolve(&next, &[UnitVerdict::Passed, UnitVerdict::Failed]);
    assert_eq!(r.publish, [0]);
    assert_eq!(r.failed, ids(&["b"]));
    assert_eq!(s.tasks(), ids(&["c", "d"]));
}

#[test]
fn two_halves_that_pass_alone_are_checked_again_one_on_the_other() {
    let mut s = Schedule::new(8, 2);
    for t in ids(&["a", "b"]) {
        s.push(t);
    }
    let units = s.round();
    s.resolve(&units, &[UnitVerdict::Failed]);
    let halves = s.round();
    let r = s.resolve(&halves, &[UnitVerdict::Passed, UnitVerdict::Passed]);
    assert_eq!(r.publish, [0]);
    let again = s.round();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].tasks, ids(&["b"]));
    assert!(
        !again[0].half,
        "checked again on top of the first, as a fresh batch"
    );
}

#[test]
fn put_back_keeps_the_order_and_what_was_known() {
    let mut s = Schedule::new(2, 2);
    for t in ids(&["a", "b", "c", "d", "e"]) {
        s.push(t);
    }
    let units = s.round();
    s.put_back(&units);
    assert_eq!(s.tasks(), ids(&["a", "b", "c", "d", "e"]));
    s.remove(&TaskId::parse("c").unwrap());
    assert_eq!(s.tasks(), ids(&["a", "b", "d", "e"]));
}
