//! Files an agent or a check wrote, as liza touches them from outside: never through a
//! link, never blocking on a FIFO, never more than a bound. The process may have swapped
//! any file or directory there for a link to something of the person's, or for a FIFO
//! that would hang the supervisor that opens it.

use std::ffi::CStr;
use std::fs::File;
use std::io::Read;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use nix::dir::{Dir, Type};
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::Mode;

/// Flags of every open here: no link followed, no wait on a FIFO's writer.
fn flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC
}

/// `path`, opened when it is a regular file (not a link, not a FIFO).
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    let fd = nix::fcntl::open(path, flags(), Mode::empty()).map_err(std::io::Error::from)?;
    regular(File::from(fd), path)
}

fn regular(file: File, path: &Path) -> std::io::Result<File> {
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(std::io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )))
    }
}

/// At most `limit` bytes of `path`, when it is a regular file.
pub fn read_regular(path: &Path, limit: u64) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    open_regular(path)
        .ok()?
        .take(limit)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// Writes `bytes` as a new file at `path`, whatever was there removed first (a link is
/// removed, not written through).
pub fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path)?,
        Ok(_) => std::fs::remove_file(path)?,
        Err(_) => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    std::io::Write::write_all(&mut file, bytes)
}

/// Removes every link, FIFO, socket and device under `dir` (down to `depth` levels) —
/// what liza would follow or block on; their paths.
pub fn remove_specials(dir: &Path, depth: usize) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removed;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            if depth > 0 {
                removed.extend(remove_specials(&path, depth - 1));
            }
        } else if !kind.is_file() && std::fs::remove_file(&path).is_ok() {
            removed.push(path.display().to_string());
        }
    }
    removed
}

/// The names git follows a link at in a worktree (it reads them), and that no link of a
/// project needs: git itself refuses to follow `.gitattributes`, `.gitignore` and
/// `.mailmap` links since 2.32.
const READ_BY_GIT: &[&str] = &[
    ".gitignore",
    ".gitattributes",
    ".gitmodules",
    ".git",
    ".mailmap",
];

/// Removes from the worktree `dir`, which an agent or a check wrote and nothing writes now,
/// what liza's git must never meet there: a FIFO (opening it waits for a writer that
/// never comes), a socket, a device; a link git would follow — at a name it reads
/// (`READ_BY_GIT`) or leading to a FIFO, a socket or a device. No link is followed on
/// the way. The paths removed.
pub fn defuse(dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            let harmful = if kind.is_dir() {
                dirs.push(path);
                continue;
            } else if kind.is_file() {
                false
            } else if kind.is_symlink() {
                let name = entry.file_name();
                READ_BY_GIT.iter().any(|n| name == *n)
                    || std::fs::metadata(&path).is_ok_and(|target| special(&target))
            } else {
                true
            };
            if harmful && std::fs::remove_file(&path).is_ok() {
                removed.push(path);
            }
        }
    }
    removed
}

/// A FIFO, a socket or a device.
fn special(meta: &std::fs::Metadata) -> bool {
    let kind = meta.file_type();
    !kind.is_file() && !kind.is_dir() && !kind.is_symlink()
}

/// The largest object file copied in (a pack included).
const MAX_OBJECT_FILE: u64 = 2 * 1024 * 1024 * 1024;
/// The most all of a run's object files together may take.
const MAX_OBJECTS_TOTAL: u64 = 4 * 1024 * 1024 * 1024;

/// Whether the object file `meta` may be copied with `budget` bytes left: not larger
/// than [`MAX_OBJECT_FILE`] or the budget, and not sparse — git's object files are
/// compressed data, so a file mostly of holes is a run's way to make liza write
/// gigabytes from kilobytes.
fn worth_copying(meta: &std::fs::Metadata, budget: u64) -> bool {
    use std::os::unix::fs::MetadataExt;
    let size = meta.len();
    let allocated = meta.blocks().saturating_mul(512);
    size <= MAX_OBJECT_FILE && size <= budget && (size < 1024 * 1024 || allocated >= size / 2)
}

/// Copies the loose objects (`xx/<hash>`) and packs (`pack/pack-<hash>.{pack,idx}`) of
/// the object store `from`, which a run writes, into `to`, liza's own: regular files
/// with object names only, each directory and file opened without following a link.
/// Nothing else of `from` — its `info/alternates`, a link to another repository's
/// objects — is looked at. Returns what was refused.
pub fn copy_objects(from: &Path, to: &Path) -> std::io::Result<Vec<String>> {
    let mut refused = Vec::new();
    let mut budget = MAX_OBJECTS_TOTAL;
    let dir_flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut top = Dir::open(from, dir_flags, Mode::empty()).map_err(std::io::Error::from)?;
    for (name, kind) in entries(&mut top) {
        let fan_out = name.len() == 2 && is_hex(&name);
        if !(fan_out || name == "pack") || kind != Some(Type::Directory) {
            if name != "info" {
                refused.push(name);
            }
            continue;
        }
        let Ok(mut sub) = Dir::openat(top.as_fd(), name.as_str(), dir_flags, Mode::empty()) else {
            refused.push(name);
            continue;
        };
        let into = to.join(&name);
        std::fs::create_dir_all(&into)?;
        for (file, kind) in entries(&mut sub) {
            let wanted = if fan_out {
                file.len() >= 38 && is_hex(&file)
            } else {
                file.strip_prefix("pack-").is_some_and(|rest| {
                    let stem = rest.trim_end_matches(".pack").trim_end_matches(".idx");
                    stem.len() < rest.len() && stem.len() >= 40 && is_hex(stem)
                })
            };
            if !wanted || kind != Some(Type::File) {
                refused.push(format!("{name}/{file}"));
                continue;
            }
            let copied = openat(sub.as_fd(), file.as_str(), flags(), Mode::empty())
                .map_err(std::io::Error::from)
                .and_then(|fd| regular(File::from(fd), &from.join(&name).join(&file)))
                .and_then(|source| {
                    let meta = source.metadata()?;
                    if !worth_copying(&meta, budget) {
                        return Err(std::io::Error::other("too large or sparse"));
                    }
                    budget -= meta.len();
                    let mut target = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(into.join(&file))?;
                    std::io::copy(&mut source.take(MAX_OBJECT_FILE), &mut target).map(drop)
                });
            if copied.is_err() {
                refused.push(format!("{name}/{file}"));
            }
        }
    }
    Ok(refused)
}

/// A directory's entries but `.` and `..`, with the type the listing gives.
fn entries(dir: &mut Dir) -> Vec<(String, Option<Type>)> {
    dir.iter()
        .flatten()
        .filter_map(|e| {
            let name = name_of(e.file_name())?;
            (name != "." && name != "..").then(|| (name, e.file_type()))
        })
        .collect()
}

fn name_of(name: &CStr) -> Option<String> {
    name.to_str().ok().map(str::to_owned)
}

fn is_hex(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn only_object_files_are_copied_and_links_and_fifos_are_refused() {
        let from = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        let secret = tempfile::tempdir().unwrap();
        std::fs::write(secret.path().join("key"), "secret").unwrap();
        let f = from.path();
        std::fs::create_dir_all(f.join("ab")).unwrap();
        std::fs::write(f.join("ab").join("c".repeat(38)), "object").unwrap();
        symlink(secret.path().join("key"), f.join("ab").join("d".repeat(38))).unwrap();
        nix::unistd::mkfifo(&f.join("ab").join("e".repeat(38)), Mode::S_IRWXU).unwrap();
        symlink(secret.path(), f.join("cd")).unwrap();
        std::fs::create_dir_all(f.join("info")).unwrap();
        std::fs::write(
            f.join("info/alternates"),
            secret.path().display().to_string(),
        )
        .unwrap();
        std::fs::create_dir_all(f.join("pack")).unwrap();
        let pack = format!("pack-{}.pack", "1".repeat(40));
        std::fs::write(f.join("pack").join(&pack), "pack").unwrap();
        // A gigabyte of holes that takes no room: refused, not written out.
        let sparse = File::create(f.join("ab").join("f".repeat(38))).unwrap();
        sparse.set_len(1024 * 1024 * 1024).unwrap();
        let refused = copy_objects(f, to.path()).unwrap();
        assert_eq!(refused.len(), 4, "{refused:?}");
        assert!(!to.path().join("ab").join("f".repeat(38)).exists());
        assert!(to.path().join("ab").join("c".repeat(38)).is_file());
        assert!(to.path().join("pack").join(&pack).is_file());
        assert!(!to.path().join("ab").join("d".repeat(38)).exists());
        assert!(!to.path().join("cd").exists());
        assert!(!to.path().join("info").exists());
        // A FIFO is neither waited on nor read.
        assert_eq!(read_regular(&f.join("ab").join("e".repeat(38)), 10), None);
        let removed = remove_specials(f, 2);
        assert_eq!(removed.len(), 3, "{removed:?}");
        assert_eq!(
            std::fs::read_to_string(secret.path().join("key")).unwrap(),
            "secret"
        );
    }
}
