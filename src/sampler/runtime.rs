//! `find_runtime(pid)`: where the target's `_PyRuntime` is, in which file, and which Python;
//! `Symbols` keeps what was found in each interpreter file for the next process that runs it.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::symbols::SymbolError;
use super::versions::debug_offsets;
use super::{maps, memory, symbols, versions};

/// The interpreter runtime of a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runtime {
    pub pid: i32,
    /// `_PyRuntime`'s address in the target.
    pub address: u64,
    /// The file that holds it (`libpython3.X.so` or the executable).
    pub library: PathBuf,
    /// `(major, minor)`, from the debug offsets when there are some, else from the file name.
    pub version: Option<(u8, u8)>,
    /// `PY_VERSION_HEX` from `_PyRuntime.debug_offsets` (3.13+).
    pub version_hex: Option<u64>,
}

/// Why a process's runtime was not found.
#[derive(Debug)]
pub enum Error {
    /// A system call failed (the errno is in `error`): on `path` when it concerns a file.
    Io {
        error: io::Error,
        path: Option<PathBuf>,
    },
    /// The process is not a Python interpreter that we can read.
    NotPython(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io {
                error,
                path: Some(p),
            } => write!(f, "{error}: {}", p.display()),
            Error::Io { error, path: None } => write!(f, "{error}"),
            Error::NotPython(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Error {}

fn io_error(error: io::Error, path: Option<&Path>) -> Error {
    Error::Io {
        error,
        path: path.map(Path::to_path_buf),
    }
}

/// `_PyRuntime`'s place in the interpreter files read so far, so that another process running
/// one of them (a child of the same Python) is found from its memory map alone: reading and
/// parsing a 30 MB libpython takes milliseconds, the map a tenth of one.
#[derive(Default)]
pub struct Symbols {
    /// The file as mapped (path, device, inode, modification time) -> where the symbol is.
    found: HashMap<(PathBuf, u64, u64, i64), symbols::Located>,
}

impl Symbols {
    /// `_PyRuntime` in the file at `path`, read once per version of the file.
    fn locate(&mut self, path: &Path) -> Result<symbols::Located, SymbolError> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).map_err(SymbolError::Io)?;
        let key = (path.to_path_buf(), meta.dev(), meta.ino(), meta.mtime());
        if let Some(found) = self.found.get(&key) {
            return Ok(*found);
        }
        let found = symbols::locate(path, "_PyRuntime")?;
        self.found.insert(key, found);
        Ok(found)
    }
}

/// Finds process `pid`'s `_PyRuntime`, and reads its head: that checks we may read the process,
/// and on 3.13+ gives the exact version.
pub fn find_runtime(pid: i32) -> Result<Runtime, Error> {
    find_runtime_with(pid, &mut Symbols::default())
}

/// `find_runtime`, taking the symbol's place from `symbols` when the file was read before.
pub fn find_runtime_with(pid: i32, symbols: &mut Symbols) -> Result<Runtime, Error> {
    let mappings = maps::read(pid).map_err(|e| io_error(e, None))?;
    let module = maps::find_python(&mappings).ok_or_else(|| {
        Error::NotPython(format!(
            "process {pid} is not Python: neither libpython3.X.so nor a python executable is mapped"
        ))
    })?;
    let path = &module.path;
    let located = symbols.locate(path).map_err(|e| match e {
        SymbolError::Io(e) => io_error(e, Some(path)),
        SymbolError::NotElf(why) => Error::NotPython(format!(
            "process {pid}: {} is not a readable ELF file ({why})",
            path.display()
        )),
        SymbolError::Missing => Error::NotPython(format!(
            "process {pid}: {} has no _PyRuntime symbol (not a CPython 3 interpreter)",
            path.display()
        )),
    })?;
    let address =
        symbols::address_in_process(&located, module.base, page_size()).ok_or_else(|| {
            Error::NotPython(format!(
                "process {pid}: {} is mapped at {:#x}, below its link address {:#x}",
                path.display(),
                module.base,
                located.lowest_load
            ))
        })?;

    let mut head = [0u8; debug_offsets::HEAD_LEN];
    memory::read(pid, address, &mut head).map_err(|e| io_error(e, None))?;
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(versions::from_file_name);
    let version_hex = read_version_hex(&head, named).map_err(|why| {
        Error::NotPython(format!(
            "process {pid}: _PyRuntime at {address:#x} in {}: {why}",
            path.display()
        ))
    })?;
    Ok(Runtime {
        pid,
        address,
        library: module.path.clone(),
        version: version_hex.map(versions::hex_major_minor).or(named),
        version_hex,
    })
}

/// The version from the head of `_PyRuntime` (`_Py_DebugOffsets`' cookie and version), when the
/// version named by the file has one. A name that says nothing (`python3`) lets the cookie
/// decide; a name that promises debug offsets and a head without them is an error.
fn read_version_hex(head: &[u8], named: Option<(u8, u8)>) -> Result<Option<u64>, String> {
    let expected = named.is_none_or(|(major, minor)| versions::has_debug_offsets(major, minor));
    if !expected {
        return Ok(None);
    }
    let cookie = head.get(..debug_offsets::COOKIE.len());
    if cookie != Some(debug_offsets::COOKIE.as_slice()) {
        return match named {
            None => Ok(None),
            Some(_) => Err("no _Py_DebugOffsets cookie \"xdebugpy\" at its start".into()),
        };
    }
    let at = debug_offsets::VERSION as usize;
    let bytes: [u8; 8] = head
        .get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .ok_or("_Py_DebugOffsets.version not read")?;
    let hex = u64::from_ne_bytes(bytes);
    let (major, minor) = versions::hex_major_minor(hex);
    match named {
        Some(n) if n != (major, minor) => Err(format!(
            "the file says Python {}.{} but _Py_DebugOffsets says {major}.{minor} ({hex:#x})",
            n.0, n.1
        )),
        _ => Ok(Some(hex)),
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 for an unknown name, not the case
    // for _SC_PAGESIZE, and the fallback covers it anyway.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(n)
        .ok()
        .filter(|n| n.is_power_of_two())
        .unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(cookie: &[u8; 8], hex: u64) -> [u8; 16] {
        let mut h = [0u8; 16];
        h[..8].copy_from_slice(cookie);
        h[8..].copy_from_slice(&hex.to_ne_bytes());
        h
    }

    #[test]
    fn the_version_comes_from_the_debug_offsets_from_3_13_on() {
        let h = head(b"xdebugpy", 0x030d00f0);
        assert_eq!(read_version_hex(&h, Some((3, 13))), Ok(Some(0x030d00f0)));
        assert_eq!(read_version_hex(&h, None), Ok(Some(0x030d00f0)));
        // Before 3.13 the head is other fields: not read as a version.
        assert_eq!(read_version_hex(&h, Some((3, 12))), Ok(None));
        assert_eq!(read_version_hex(&[0; 16], Some((3, 10))), Ok(None));
    }

    #[test]
    fn a_missing_cookie_or_another_version_is_an_error_where_one_was_promised() {
        assert!(read_version_hex(&[0; 16], Some((3, 13))).is_err());
        assert_eq!(read_version_hex(&[0; 16], None), Ok(None));
        let h = head(b"xdebugpy", 0x030e00f0);
        assert!(read_version_hex(&h, Some((3, 13))).is_err());
        assert!(read_version_hex(&h[..10], Some((3, 13))).is_err());
    }

    #[test]
    fn a_process_without_python_is_not_python() {
        // The test binary links no libpython (nothing in the tests calls into it), and its
        // name does not start with `python`. Real interpreters are tested from Python
        // (tests/test_sampler_runtime.py), one child per supported version.
        let pid = crate::sampler::own_pid();
        match find_runtime(pid) {
            Err(Error::NotPython(why)) => assert!(why.contains("is not Python"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_missing_process_is_esrch() {
        match find_runtime(i32::MAX) {
            Err(Error::Io { error, .. }) => assert_eq!(error.raw_os_error(), Some(libc::ESRCH)),
            other => panic!("{other:?}"),
        }
    }
}
