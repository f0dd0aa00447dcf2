//! The schedule against specs/git.md *A batch*, and the benchmark's scenarios
//! (specs/quality.md Q1, Q2) simulated with checks that all take one unit of time.

use super::*;

fn ids(names: &[&str]) -> Vec<TaskId> {
    names.iter().map(|n| TaskId::parse(n).unwrap()).collect()
}

fn queue(n: usize) -> Vec<TaskId> {
    (1..=n)
        .map(|i| TaskId::parse(&format!("t-{i}")).unwrap())
        .collect()
}

/// What a simulated merge did.
#[derive(Debug, Default)]
struct Run {
    /// Units of check time until the line was empty.
    time: u32,
    published: Vec<TaskId>,
    failed: Vec<TaskId>,
    /// How many checks ran (stopped ones included).
    checks: u32,
}

/// Runs the schedule to the end with checks that take one unit of time each and fail
/// whenever what they check holds a task of `failing`; `arrivals` adds tasks to the line
/// at the time given.
fn simulate(
    tasks: &[TaskId],
    failing: &[TaskId],
    max_batch: usize,
    parallel: usize,
    arrivals: &[(u32, TaskId)],
) -> Run {
    let mut schedule = Schedule::new(max_batch, parallel);
    for t in tasks {
        schedule.push(t.clone());
    }
    let mut run = Run::default();
    // In flight: id → (finish time, verdict, tasks checked).
    let mut flying: Vec<(u64, u32, UnitVerdict, Vec<TaskId>)> = Vec::new();
    loop {
        for (at, t) in arrivals {
            if *at == run.time {
                schedule.push(t.clone());
            }
        }
        while let Some((id, unit)) = schedule.start() {
            run.checks += 1;
            // A stacked batch is checked with the ones under it; published tasks never
            // fail, so a batch on the tip is checked as itself.
            let mut content = if unit.stacked {
                flying.last().map(|f| f.3.clone()).unwrap_or_default()
            } else {
                Vec::new()
            };
            content.extend(unit.tasks.iter().cloned());
            let verdict = if content.iter().any(|t| failing.contains(t)) {
                UnitVerdict::Failed
            } else {
                UnitVerdict::Passed
            };
            flying.push((id, run.time + 1, verdict, content));
        }
        if flying.is_empty() {
            if arrivals.iter().any(|(at, _)| *at > run.time) {
                run.time += 1;
                continue;
            }
            break;
        }
        assert!(run.time < 100, "the schedule never ends");
        run.time += 1;
        let ended: Vec<(u64, UnitVerdict)> = flying
            .iter()
            .filter(|f| f.1 == run.time)
            .map(|f| (f.0, f.2))
            .collect();
        for (id, verdict) in ended {
            if !flying.iter().any(|f| f.0 == id) {
                continue;
            }
            let units: Vec<(u64, Unit)> = flying
                .iter()
                .filter_map(|f| schedule.unit(f.0).map(|u| (f.0, u.clone())))
                .collect();
            for decision in schedule.finished(id, verdict) {
                match decision {
                    Decision::Publish(p) => {
                        let unit = &units.iter().find(|(i, _)| *i == p).unwrap().1;
                        run.published.extend(unit.tasks.iter().cloned());
                        flying.retain(|f| f.0 != p);
                    }
                    Decision::Failed(p, task) => {
                        run.failed.push(task);
                        flying.retain(|f| f.0 != p);
                    }
                    Decision::Stop(p) | Decision::Done(p) => flying.retain(|f| f.0 != p),
                }
            }
        }
    }
    run
}

#[test]
fn sixteen_passing_tasks_are_two_batches_checked_at_once() {
    let tasks = queue(16);
    let run = simulate(&tasks, &[], 8, 2, &[]);
    assert_eq!(run.time, 1);
    assert_eq!(run.published, tasks);
    assert!(run.failed.is_empty());
}

#[test]
fn one_failing_task_among_sixteen_fails_alone_within_five_checks_time() {
    for bad in 1..=16 {
        let tasks = queue(16);
        let failing = vec![tasks[bad - 1].clone()];
        let run = simulate(&tasks, &failing, 8, 2, &[]);
        assert_eq!(run.failed, failing, "task {bad}");
        assert_eq!(run.published.len(), 15, "task {bad}");
        assert!(run.time <= 5, "task {bad}: {} units", run.time);
    }
}

#[test]
fn bisection_finds_two_failing_tasks_of_one_batch() {
    let tasks = ids(&["a", "b", "c", "d"]);
    let failing = ids(&["b", "c"]);
    let run = simulate(&tasks, &failing, 8, 2, &[]);
    let (mut failed, mut published) = (run.failed, run.published);
    failed.sort();
    published.sort();
    assert_eq!(failed, failing);
    assert_eq!(published, ids(&["a", "d"]));
}

#[test]
fn without_speculation_batches_go_one_at_a_time() {
    let tasks = queue(16);
    let run = simulate(&tasks, &[], 8, 1, &[]);
    assert_eq!(run.time, 2);
    assert_eq!(run.published, tasks);
    let run = simulate(&tasks, &[], 1, 1, &[]);
    assert_eq!(run.time, 16, "batches of one are the serial merges of old");
}

#[test]
fn a_task_approved_while_a_batch_is_checked_is_checked_on_top_of_it_at_once() {
    // Speculation: t-2 arrives while t-1 is checked, and starts beside it, not after.
    let run = simulate(
        &ids(&["t-1"]),
        &[],
        8,
        2,
        &[(0, TaskId::parse("t-2").unwrap())],
    );
    assert_eq!(run.time, 1);
    assert_eq!(run.published, ids(&["t-1", "t-2"]));
}

#[test]
fn a_failing_batch_stops_what_was_built_on_it_and_that_is_built_again() {
    let mut s = Schedule::new(2, 2);
    for t in ids(&["a", "b", "c", "d"]) {
        s.push(t);
    }
    let (first, u1) = s.start().unwrap();
    let (second, u2) = s.start().unwrap();
    assert!(!u1.stacked && u2.stacked);
    assert!(s.start().is_none(), "two in flight at most");
    // The one on top passes first: it waits for the one under it.
    assert!(s.finished(second, UnitVerdict::Passed).is_empty());
    let decisions = s.finished(first, UnitVerdict::Failed);
    assert_eq!(decisions, [Decision::Stop(second), Decision::Done(first)]);
    // The halves of the failing batch, each on the tip; then what was built on it.
    let (h1, half1) = s.start().unwrap();
    let (h2, half2) = s.start().unwrap();
    assert!(half1.half && half2.half && !half1.stacked && !half2.stacked);
    assert_eq!(
        (half1.tasks.clone(), half2.tasks.clone()),
        (ids(&["a"]), ids(&["b"]))
    );
    assert_eq!(
        s.finished(h2, UnitVerdict::Failed),
        [Decision::Failed(h2, TaskId::parse("b").unwrap())]
    );
    assert_eq!(s.finished(h1, UnitVerdict::Passed), [Decision::Publish(h1)]);
    assert_eq!(s.tasks(), ids(&["c", "d"]));
}

#[test]
fn a_half_that_passed_beside_a_published_one_is_checked_again_on_top_of_it() {
    let mut s = Schedule::new(8, 2);
    for t in ids(&["a", "b"]) {
        s.push(t);
    }
    let (id, _) = s.start().unwrap();
    s.finished(id, UnitVerdict::Failed);
    let (h1, _) = s.start().unwrap();
    let (h2, _) = s.start().unwrap();
    assert_eq!(s.finished(h1, UnitVerdict::Passed), [Decision::Publish(h1)]);
    // Checked on the old tip: not published, checked again as a fresh batch.
    assert_eq!(s.finished(h2, UnitVerdict::Passed), [Decision::Done(h2)]);
    let (_, again) = s.start().unwrap();
    assert_eq!(again.tasks, ids(&["b"]));
    assert!(!again.half);
}

#[test]
fn integration_moved_puts_every_flight_back_in_order() {
    let mut s = Schedule::new(2, 2);
    for t in ids(&["a", "b", "c", "d", "e"]) {
        s.push(t);
    }
    let (a, _) = s.start().unwrap();
    let (b, _) = s.start().unwrap();
    assert_eq!(
        s.integration_moved(),
        [Decision::Stop(a), Decision::Stop(b)]
    );
    assert!(!s.flying());
    assert_eq!(s.tasks(), ids(&["a", "b", "c", "d", "e"]));
    s.remove(&TaskId::parse("c").unwrap());
    assert_eq!(s.tasks(), ids(&["a", "b", "d", "e"]));
}
