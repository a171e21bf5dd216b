//! The kernels compiled by NVRTC, kept on disk between processes: compiling the kernel modules for
//! a device takes seconds (about 16 s of one core for all of them at sm_90), which every process
//! would otherwise pay again at its first use of each module.
//!
//! The directory is `LODTENSOR_KERNEL_CACHE` if set (`off` keeps nothing), else
//! `$XDG_CACHE_HOME/lodtensor/kernels`, else `$HOME/.cache/lodtensor/kernels`. Each entry is one
//! file named by a hash of its key (the compiler's version, the target, the options, the module's
//! name and source), holding the whole key, the image and a checksum: an entry is used only if its key is
//! the one asked for and its bytes are whole, so a change of source or compiler, a hash that two
//! keys share, a file cut short or one changed by hand all mean a compile, never a wrong image.
//! Entries are written to a file of their own and renamed into place, so processes that compile
//! the same kernels at once each read either nothing or a whole entry. The cache only saves time:
//! a directory that cannot be made, read or written is the same as none.

use crate::error::Result;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The cache's directory, or `None` when it is off or no home directory is known (read once).
pub(crate) fn cache_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        match var("LODTENSOR_KERNEL_CACHE") {
            Some(dir) if dir.as_os_str() == "off" => None,
            Some(dir) => Some(dir),
            None => var("XDG_CACHE_HOME")
                .or_else(|| var("HOME").map(|home| home.join(".cache")))
                .map(|base| base.join("lodtensor").join("kernels")),
        }
    })
    .as_deref()
}

/// The first bytes of every entry (the format's version is in it).
const MAGIC: &[u8; 16] = b"lodtensor-kern1\n";

/// The image stored under `key` in `dir`, or else `compile()`'s, which is then stored there (when
/// `dir` is `None`, just `compile()`'s). A compile error is returned and nothing is stored.
pub(crate) fn cached(dir: Option<&Path>, key: &[u8], compile: impl FnOnce() -> Result<Vec<u8>>) -> Result<Vec<u8>> {
    let Some(dir) = dir else { return compile() };
    let path = dir.join(format!("{:016x}.bin", fnv1a(&[key])));
    if let Some(image) = std::fs::read(&path).ok().and_then(|bytes| image_of(&bytes, key)) {
        return Ok(image);
    }
    let image = compile()?;
    store(dir, &path, key, &image);
    Ok(image)
}

/// The image in entry `bytes` if the entry is whole and was stored under `key`.
fn image_of(bytes: &[u8], key: &[u8]) -> Option<Vec<u8>> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let (stored_key, rest) = length_prefixed(rest)?;
    let (image, rest) = length_prefixed(rest)?;
    let sum = u64::from_le_bytes(rest.try_into().ok()?);
    (stored_key == key && sum == fnv1a(&[key, image])).then(|| image.to_vec())
}

/// A u64 length (little-endian), that many bytes, and what follows them.
fn length_prefixed(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = bytes.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    (len <= rest.len()).then(|| rest.split_at(len))
}

/// Writes the entry for `key` to `path` by way of a temporary file in `dir`; failures are ignored.
fn store(dir: &Path, path: &Path, key: &[u8], image: &[u8]) {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let mut entry = Vec::with_capacity(MAGIC.len() + key.len() + image.len() + 24);
    entry.extend_from_slice(MAGIC);
    for part in [key, image] {
        entry.extend_from_slice(&(part.len() as u64).to_le_bytes());
        entry.extend_from_slice(part);
    }
    entry.extend_from_slice(&fnv1a(&[key, image]).to_le_bytes());
    let temp =
        dir.join(format!(".{}.{}-{}.tmp", std::process::id(), WRITES.fetch_add(1, Ordering::Relaxed), nanos_now()));
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&temp, &entry))
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
}

/// The clock's nanoseconds, to keep temporary names of processes that share a pid (containers
/// sharing a directory) apart.
fn nanos_now() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// 64-bit FNV-1a over the parts, one after another: a name for an entry and its checksum (the key
/// itself is compared in full, so the hash needs no strength).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in parts.iter().copied().flatten() {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::err;
    use std::cell::Cell;

    /// A fresh directory under the system's temporary one, removed when dropped.
    struct TempDir(PathBuf);
    impl TempDir {
        fn new(what: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!("lodtensor-{what}-{}-{}", std::process::id(), nanos_now()));
            TempDir(dir)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn entries(dir: &Path) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir).map_or(vec![], |d| d.map(|e| e.unwrap().path()).collect());
        v.sort();
        v
    }

    /// The first call compiles and stores (the directory made on the way); the second reads the
    /// entry without compiling; another key compiles again; no temporary file is left behind.
    #[test]
    fn stores_then_serves_without_compiling() {
        let tmp = TempDir::new("kernel-cache");
        let dir = tmp.0.join("a").join("b");
        let compiles = Cell::new(0);
        let compile = |image: &'static [u8]| {
            compiles.set(compiles.get() + 1);
            Ok(image.to_vec())
        };
        assert_eq!(cached(Some(&dir), b"key one", || compile(b"image one")).unwrap(), b"image one");
        assert_eq!(compiles.get(), 1);
        assert_eq!(entries(&dir).len(), 1);
        assert_eq!(cached(Some(&dir), b"key one", || compile(b"other")).unwrap(), b"image one");
        assert_eq!(compiles.get(), 1, "served from the cache");
        assert_eq!(cached(Some(&dir), b"key two", || compile(b"image two")).unwrap(), b"image two");
        assert_eq!(compiles.get(), 2);
        assert_eq!(cached(Some(&dir), b"key two", || compile(b"other")).unwrap(), b"image two");
        assert_eq!(compiles.get(), 2);
        let names: Vec<String> =
            entries(&dir).iter().map(|p| p.file_name().unwrap().to_string_lossy().into()).collect();
        assert_eq!(names.len(), 2);
        assert!(names.iter().all(|n| n.ends_with(".bin") && !n.starts_with('.')), "{names:?}");
    }

    /// An entry that is cut short, altered, or stored under another key with the same name (a
    /// hash both share) is not used: the image is compiled again and the entry rewritten. An
    /// empty image is an image like any other.
    #[test]
    fn damaged_or_foreign_entries_mean_a_compile() {
        let tmp = TempDir::new("kernel-cache-damage");
        let dir = tmp.0.clone();
        let key = b"the key".as_slice();
        cached(Some(&dir), key, || Ok(b"the image".to_vec())).unwrap();
        let path = entries(&dir).pop().unwrap();
        let whole = std::fs::read(&path).unwrap();
        let mut foreign = MAGIC.to_vec();
        for part in [b"another key".as_slice(), b"its image"] {
            foreign.extend_from_slice(&(part.len() as u64).to_le_bytes());
            foreign.extend_from_slice(part);
        }
        foreign.extend_from_slice(&fnv1a(&[b"another key", b"its image"]).to_le_bytes());
        let mut flipped = whole.clone();
        let at = whole.len() - 12; // a byte of the image
        flipped[at] ^= 1;
        let mut long_length = whole.clone();
        long_length[MAGIC.len()] = 0xff;
        for (what, bytes) in [
            ("cut short", whole[..whole.len() - 1].to_vec()),
            ("an image byte changed", flipped),
            ("a length past the end", long_length),
            ("another key's entry", foreign),
            ("not an entry", b"hello".to_vec()),
            ("empty", vec![]),
        ] {
            std::fs::write(&path, &bytes).unwrap();
            let compiled = Cell::new(false);
            let got = cached(Some(&dir), key, || {
                compiled.set(true);
                Ok(b"the image".to_vec())
            });
            assert_eq!(got.unwrap(), b"the image", "{what}");
            assert!(compiled.get(), "{what}: compiled again");
            assert_eq!(std::fs::read(&path).unwrap(), whole, "{what}: the entry rewritten");
        }
        assert_eq!(cached(Some(&dir), b"empty", || Ok(vec![])).unwrap(), b"");
        assert_eq!(cached(Some(&dir), b"empty", || Err(err!(Internal, "not called"))).unwrap(), b"");
    }

    /// No directory: every call compiles. A directory that cannot be made (under a file): the
    /// image is still returned. A compile error is returned and nothing is stored.
    #[test]
    fn no_or_unusable_directory_and_compile_errors() {
        let tmp = TempDir::new("kernel-cache-unusable");
        let compiles = Cell::new(0);
        let compile = || {
            compiles.set(compiles.get() + 1);
            Ok(b"image".to_vec())
        };
        cached(None, b"k", compile).unwrap();
        cached(None, b"k", compile).unwrap();
        assert_eq!(compiles.get(), 2);
        std::fs::create_dir_all(&tmp.0).unwrap();
        let file = tmp.0.join("a file");
        std::fs::write(&file, b"").unwrap();
        let under_a_file = file.join("kernels");
        assert_eq!(cached(Some(&under_a_file), b"k", compile).unwrap(), b"image");
        assert_eq!(cached(Some(&under_a_file), b"k", compile).unwrap(), b"image");
        assert_eq!(compiles.get(), 4);
        let dir = tmp.0.join("kernels");
        let e = cached(Some(&dir), b"k", || Err(err!(Internal, "does not compile"))).unwrap_err();
        assert!(e.to_string().contains("does not compile"));
        assert!(entries(&dir).is_empty());
    }
}
