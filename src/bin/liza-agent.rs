//! `liza-agent <role>`: the per-agent supervisor, the same as `liza agent <role>`.

fn main() {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    args.insert(1, "agent".into());
    std::process::exit(liza::cli::run_with(args));
}
