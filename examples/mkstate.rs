//! Writes a generated state into an initialized project: mkstate <root> <tasks> <bytes-per-task>
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let root = std::path::Path::new(&a[1]);
    let state = liza::bench::generate_state(
        a[2].parse().unwrap(),
        a[3].parse().unwrap(),
        liza::blackboard::Timestamp::now(),
    );
    for spec in liza::bench::spec_files() {
        std::fs::write(root.join(spec), "# spec\n").unwrap();
    }
    for wt in liza::bench::worktree_dirs(&state) {
        std::fs::create_dir_all(root.join(wt)).unwrap();
    }
    std::fs::write(
        root.join(".liza/state.yaml"),
        liza::blackboard::document::emit(&state, 0),
    )
    .unwrap();
}
