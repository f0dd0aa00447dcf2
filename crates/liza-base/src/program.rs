//! Finding programs: on `PATH` as a shell would (without a shell), and liza's own
//! executable beside the running one.

use std::path::{Path, PathBuf};

/// Looks `name` up like a shell would, without a shell: a name with a `/` is taken as a
/// path, any other is searched on `PATH`. Only regular files with an execute bit count.
pub fn find_executable(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let path = PathBuf::from(name);
        return runnable(&path).then_some(path);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| runnable(p))
    })
}

/// The `liza` executable beside the running one (a supervisor may run as `liza-agent`),
/// else `liza` as found on `PATH`.
pub fn liza_executable() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("liza")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("liza"))
}
