//! The first bytes of many files, and what each file's status says, read in parallel: what
//! discovery asks of every file under the paths a user names, to tell a log from other files
//! and which agent wrote it (`analytics.agents.discover.read_head_seen` is the same question
//! for one file, and the answers are the same). On a home of thousands of session folders
//! those opens and reads were a third of discovering it, on one core.
#![forbid(unsafe_code)]

use std::fs::{File, Metadata};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

/// What discovery keeps of a file's status: size, `mtime` and `ctime` in nanoseconds (as
/// Python's `st_mtime_ns`, `st_ctime_ns`), inode.
pub type Seen = (i64, i64, i64, u64);

/// A file's first bytes (None when it could not be read) and its status (None when it could
/// not be had).
pub type Head = (Option<Vec<u8>>, Option<Seen>);

/// The status `metadata` gives, as [`Seen`].
fn seen(metadata: &Metadata) -> Seen {
    let size = i64::try_from(metadata.size()).unwrap_or(i64::MAX);
    let ns = |seconds: i64, nanos: i64| seconds.saturating_mul(1_000_000_000).saturating_add(nanos);
    (
        size,
        ns(metadata.mtime(), metadata.mtime_nsec()),
        ns(metadata.ctime(), metadata.ctime_nsec()),
        metadata.ino(),
    )
}

/// The first `limit` bytes of `path` (all of a shorter file) and its status, from one open:
/// a regular file's size says where it ends, so a short file is read in one call. A file that
/// cannot be opened is seen by its path (symlinks followed), if it can be; a read that fails
/// gives no bytes and no status.
pub fn head(path: &Path, limit: usize) -> Head {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(_) => return (None, std::fs::metadata(path).ok().map(|m| seen(&m))),
    };
    let Ok(metadata) = file.metadata() else {
        return (None, None);
    };
    let status = seen(&metadata);
    let regular = metadata.file_type().is_file();
    let ends = usize::try_from(metadata.size())
        .ok()
        .filter(|&size| regular && size > 0);
    let mut bytes = vec![0u8; limit];
    let mut filled = 0;
    while filled < limit {
        let Some(room) = bytes.get_mut(filled..) else {
            break;
        };
        match file.read(room) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return (None, None),
        }
        if ends.is_some_and(|end| filled >= end) {
            break;
        }
    }
    bytes.truncate(filled);
    (Some(bytes), Some(status))
}

/// [`head`] of each of `paths`, in their order, read on rayon's threads.
pub fn heads(paths: &[PathBuf], limit: usize) -> Vec<Head> {
    paths.par_iter().map(|path| head(path, limit)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_is_the_first_bytes_and_the_files_status() {
        let dir = std::env::temp_dir().join(format!("agentcost-heads-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let short = dir.join("short.json");
        let long = dir.join("long.jsonl");
        std::fs::write(&short, b"{\"id\": 1}\n").unwrap();
        std::fs::write(&long, vec![b'x'; 10_000]).unwrap();
        let missing = dir.join("missing");
        let got = heads(&[short.clone(), long.clone(), missing, dir.clone()], 4096);
        assert_eq!(got[0].0.as_deref(), Some(&b"{\"id\": 1}\n"[..]));
        let metadata = std::fs::metadata(&short).unwrap();
        assert_eq!(got[0].1, Some(seen(&metadata)));
        assert_eq!(got[0].1.map(|s| s.0), Some(10));
        assert_eq!(got[1].0.as_ref().map(Vec::len), Some(4096));
        assert_eq!(got[2], (None, None));
        // a directory opens but cannot be read
        assert_eq!(got[3], (None, None));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
