//! The `liza` binary: every blackboard operation (see `liza --help`).

fn main() {
    std::process::exit(liza::cli::run());
}
