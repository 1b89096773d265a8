//! Writing a staged upload around the page cache where the file system allows it.
//!
//! A buffered `write` copies every byte into the page cache, and on this kind of machine that
//! copy was 62 % of an upload thread's CPU (`perf`, bench/media.sh, docs/performance.md):
//! the upload ran at the speed of the copy, not of the disk. With `O_DIRECT` the disk reads
//! the bytes from our buffer, and the CPU is free for the next PATCH's bytes. `O_DIRECT` wants
//! the buffer, the offset and the length aligned to the device's block ([`ALIGN`] covers
//! every common one), so the parts of an append that are not aligned (the first bytes up to a
//! block boundary, the last short block) go through the page cache as before, and a file
//! system that refuses `O_DIRECT` (tmpfs, some network file systems) gets every byte that way.
//! Durability does not change: the append still `fdatasync`s before each checkpoint, which
//! also writes the file's size and flushes the device's cache.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt as _;
use std::path::Path;

/// The alignment of direct writes: buffer address, file offset and length.
pub(crate) const ALIGN: usize = 4096;

/// A staged file open twice: through the page cache, and around it when the file system
/// allows.
pub(crate) struct StagedFile {
    buffered: File,
    direct: Option<File>,
}

impl StagedFile {
    /// Opens `path` for writing; `direct` asks for the second, unbuffered handle.
    pub(crate) fn open(path: &Path, direct: bool) -> io::Result<Self> {
        let buffered = OpenOptions::new().write(true).open(path)?;
        let direct = if direct { open_direct(path) } else { None };
        Ok(Self { buffered, direct })
    }

    /// The buffered handle (size, truncation, sync).
    pub(crate) fn file(&self) -> &File {
        &self.buffered
    }

    /// How many of `available` bytes the next write at `offset` should take so that the one
    /// after it starts on a block boundary: up to the boundary when `offset` is not on one.
    pub(crate) fn next_len(&self, offset: u64, available: usize) -> usize {
        let into_block = (offset % ALIGN as u64) as usize;
        match (&self.direct, into_block) {
            (Some(_), 0) | (None, _) => available,
            (Some(_), n) => available.min(ALIGN - n),
        }
    }

    /// Writes `bytes` at `offset`: directly when both are block-aligned (and `bytes` lies in
    /// an aligned buffer), through the page cache otherwise. A file system that refuses a
    /// direct write gets this and every later write buffered.
    pub(crate) fn write_at(&mut self, bytes: &[u8], offset: u64) -> io::Result<()> {
        let aligned = offset % ALIGN as u64 == 0
            && bytes.len() % ALIGN == 0
            && bytes.as_ptr().align_offset(ALIGN) == 0;
        if let (true, Some(direct)) = (aligned && !bytes.is_empty(), &self.direct) {
            match direct.write_all_at(bytes, offset) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                    tracing::debug!(error = %e, "direct writes refused: writing through the page cache");
                    self.direct = None;
                }
                Err(e) => return Err(e),
            }
        }
        self.buffered.write_all_at(bytes, offset)
    }
}

#[cfg(target_os = "linux")]
fn open_direct(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .ok()
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_path: &Path) -> Option<File> {
    None
}

/// A buffer of `len` bytes (a multiple of [`ALIGN`]) whose start is aligned for direct writes:
/// a larger allocation and the aligned window inside it.
pub(crate) struct AlignedBuffer {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuffer {
    pub(crate) fn new(len: usize) -> Self {
        let storage = vec![0u8; len + ALIGN];
        let start = storage.as_ptr().align_offset(ALIGN).min(ALIGN);
        Self {
            storage,
            start,
            len,
        }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;

    #[test]
    fn unaligned_and_aligned_writes_make_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for direct in [false, true] {
            let path = dir.path().join(format!("f{direct}"));
            File::create(&path).unwrap();
            let mut file = StagedFile::open(&path, direct).unwrap();
            let mut buf = AlignedBuffer::new(3 * ALIGN);
            let mut offset = 0usize;
            // Starts off a boundary, then as next_len says.
            for first in [100usize, 5000, 20_000] {
                let window = buf.as_mut_slice();
                let take = file
                    .next_len(offset as u64, first.min(window.len()))
                    .min(data.len() - offset);
                window[..take].copy_from_slice(&data[offset..offset + take]);
                file.write_at(&window[..take], offset as u64).unwrap();
                offset += take;
            }
            while offset < data.len() {
                let window = buf.as_mut_slice();
                let take = file
                    .next_len(offset as u64, window.len())
                    .min(data.len() - offset);
                window[..take].copy_from_slice(&data[offset..offset + take]);
                file.write_at(&window[..take], offset as u64).unwrap();
                offset += take;
            }
            file.file().sync_data().unwrap();
            let mut back = Vec::new();
            File::open(&path).unwrap().read_to_end(&mut back).unwrap();
            assert_eq!(back, data, "direct = {direct}");
        }
    }

    #[test]
    fn the_buffer_is_aligned() {
        for len in [ALIGN, 256 * ALIGN] {
            let mut b = AlignedBuffer::new(len);
            let s = b.as_mut_slice();
            assert_eq!(s.len(), len);
            assert_eq!(s.as_ptr().align_offset(ALIGN), 0);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_system_that_allows_it_gets_a_direct_handle() {
        // The positive control of the tests above: on the test machine's disk the direct
        // path is really taken (tmpfs would refuse O_DIRECT and test only the buffered one).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        File::create(&path).unwrap();
        let file = StagedFile::open(&path, true).unwrap();
        if std::env::var_os("MEDIALIB_TEST_NO_DIRECT_IO").is_none() {
            assert!(
                file.direct.is_some(),
                "O_DIRECT refused in {} (set MEDIALIB_TEST_NO_DIRECT_IO=1 on such a file system)",
                dir.path().display()
            );
        }
    }
}
