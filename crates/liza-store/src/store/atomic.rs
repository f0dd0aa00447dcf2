//! Durable file replacement: write a temp file, fsync it, swap it with the target
//! atomically, fsync the directory.
//!
//! The swap uses `renameat2(RENAME_EXCHANGE)`, so the file that was replaced is still
//! there afterwards (at the temp path) and can be checked: if it is not what the
//! transaction read, a human saved state.yaml while the transaction ran, and that save is
//! kept instead of being silently overwritten.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Writes `bytes` to a new file `dir/<prefix><unique>`, fsyncs it, mode 0644.
pub fn write_temp_synced(dir: &Path, prefix: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    let (file, path) = write_temp(dir, prefix, bytes)?;
    file.sync_all()?;
    Ok(path)
}

/// Writes `bytes` to a new file `dir/<prefix><unique>.tmp`, mode 0644, without fsync.
pub fn write_temp(dir: &Path, prefix: &str, bytes: &[u8]) -> io::Result<(File, PathBuf)> {
    let file = tempfile::Builder::new()
        .prefix(prefix)
        .suffix(".tmp")
        .permissions(fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)?;
    let (mut file, path) = file.keep().map_err(|e| e.error)?;
    file.write_all(bytes)?;
    Ok((file, path))
}

/// Creates `path` (which must not exist) with `bytes`, fsynced, mode 0644.
pub fn create_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    create_unsynced(path, bytes)?.sync_all()
}

/// Creates `path` (which must not exist) with `bytes`, mode 0644, without fsync.
pub fn create_unsynced(path: &Path, bytes: &[u8]) -> io::Result<File> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(path)?;
    file.write_all(bytes)?;
    Ok(file)
}

/// fsyncs a directory so renames and creations in it are durable.
pub fn fsync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// What an exchange left at the temp path.
#[derive(Debug, PartialEq, Eq)]
pub enum Swapped {
    /// The previous target now sits at the temp path.
    Previous,
    /// There was no target; the temp file was renamed into place.
    NoPrevious,
    /// The platform cannot exchange; a plain rename replaced the target.
    Replaced,
}

/// Atomically puts `temp` in place of `target` (both in `dir`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn exchange(dir: &Path, temp: &Path, target: &Path) -> io::Result<Swapped> {
    use nix::errno::Errno;
    use nix::fcntl::{RenameFlags, renameat2};

    let dir_fd = File::open(dir)?;
    // Names relative to the directory handle (the paths may be relative to the cwd).
    let (temp_name, target_name) = (file_name(temp)?, file_name(target)?);
    match renameat2(
        &dir_fd,
        temp_name,
        &dir_fd,
        target_name,
        RenameFlags::RENAME_EXCHANGE,
    ) {
        Ok(()) => Ok(Swapped::Previous),
        Err(Errno::ENOENT) if temp.exists() => {
            // The target does not exist: create it, refusing to overwrite one that
            // appeared meanwhile.
            renameat2(
                &dir_fd,
                temp_name,
                &dir_fd,
                target_name,
                RenameFlags::RENAME_NOREPLACE,
            )
            .map_err(io::Error::from)?;
            Ok(Swapped::NoPrevious)
        }
        Err(Errno::EINVAL | Errno::ENOSYS | Errno::EOPNOTSUPP) => {
            fs::rename(temp, target)?;
            Ok(Swapped::Replaced)
        }
        Err(e) => Err(io::Error::from(e)),
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn exchange(_dir: &Path, temp: &Path, target: &Path) -> io::Result<Swapped> {
    fs::rename(temp, target)?;
    Ok(Swapped::Replaced)
}

fn file_name(path: &Path) -> io::Result<&Path> {
    path.file_name()
        .map(Path::new)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file path"))
}

/// Renames a directory into place only if nothing is there yet.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn rename_noreplace(parent: &Path, from: &Path, to: &Path) -> io::Result<()> {
    use nix::fcntl::{RenameFlags, renameat2};
    let dir_fd = File::open(parent)?;
    let (from, to) = (file_name(from)?, file_name(to)?);
    renameat2(&dir_fd, from, &dir_fd, to, RenameFlags::RENAME_NOREPLACE).map_err(io::Error::from)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn rename_noreplace(_parent: &Path, from: &Path, to: &Path) -> io::Result<()> {
    if to.exists() {
        return Err(io::Error::from(io::ErrorKind::AlreadyExists));
    }
    fs::rename(from, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exchange_keeps_the_previous_file_at_the_temp_path() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("state.yaml");
        fs::write(&target, "old").unwrap();
        let temp = write_temp_synced(dir.path(), "state.yaml.", b"new").unwrap();
        let swapped = exchange(dir.path(), &temp, &target).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
        if swapped == Swapped::Previous {
            assert_eq!(fs::read_to_string(&temp).unwrap(), "old");
        }
        let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }

    #[test]
    fn exchange_works_with_paths_relative_to_the_cwd() {
        let dir = tempfile::tempdir_in(".").unwrap();
        let rel = Path::new(".").join(dir.path().file_name().unwrap());
        let target = rel.join("state.yaml");
        fs::write(&target, "old").unwrap();
        let temp = write_temp_synced(&rel, "state.yaml.", b"new").unwrap();
        exchange(&rel, &temp, &target).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
    }

    #[test]
    fn exchange_without_a_target_creates_it() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("state.yaml");
        let temp = write_temp_synced(dir.path(), "state.yaml.", b"new").unwrap();
        let swapped = exchange(dir.path(), &temp, &target).unwrap();
        assert_ne!(swapped, Swapped::Previous);
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
        assert!(!temp.exists());
    }
}
