//! What differs between the Python versions the sampler reads, as data: one row per version.
//! A new version is a new row here (and, for the later floors, its layout), not new code.

/// A Python version's facts for reading it from outside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionFacts {
    pub major: u8,
    pub minor: u8,
    /// `_PyRuntime` starts with `_Py_DebugOffsets` (3.13+: `pycore_runtime.h`), which says the
    /// exact version and where the fields the sampler reads are.
    pub debug_offsets: bool,
}

/// The versions rprofile supports, oldest first.
#[rustfmt::skip]
pub const VERSIONS: &[VersionFacts] = &[
    VersionFacts { major: 3, minor: 10, debug_offsets: false },
    VersionFacts { major: 3, minor: 11, debug_offsets: false },
    VersionFacts { major: 3, minor: 12, debug_offsets: false },
    VersionFacts { major: 3, minor: 13, debug_offsets: true },
];

/// `_Py_DebugOffsets` as 3.13 declares it: `char cookie[8]` then `uint64_t version`
/// (`PY_VERSION_HEX`) then `uint64_t free_threaded`, at the start of `_PyRuntime`.
pub mod debug_offsets {
    /// `_Py_Debug_Cookie`.
    pub const COOKIE: &[u8; 8] = b"xdebugpy";
    /// Where `version` is in the struct.
    pub const VERSION: u64 = 8;
    /// The bytes to read to see the cookie and the version.
    pub const HEAD_LEN: usize = 16;
}

/// The row of version `major.minor`, if it is supported.
pub fn facts(major: u8, minor: u8) -> Option<&'static VersionFacts> {
    VERSIONS
        .iter()
        .find(|v| v.major == major && v.minor == minor)
}

/// Whether a version's runtime carries debug offsets: as its row says, and for a version newer
/// than the table (every release since 3.13 keeps the struct first in `_PyRuntime`).
pub fn has_debug_offsets(major: u8, minor: u8) -> bool {
    match facts(major, minor) {
        Some(f) => f.debug_offsets,
        None => VERSIONS
            .last()
            .is_some_and(|newest| (major, minor) > (newest.major, newest.minor)),
    }
}

/// `(major, minor)` from an interpreter file's name: `libpython3.12.so.1.0`, `libpython3.13d.so`,
/// `python3.11`. `None` when the name does not say (`python3`, `python`).
pub fn from_file_name(name: &str) -> Option<(u8, u8)> {
    let rest = name
        .strip_prefix("libpython")
        .or_else(|| name.strip_prefix("python"))?;
    let (major, rest) = rest.split_once('.')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let minor = rest.get(..digits)?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// `PY_VERSION_HEX`'s major and minor.
pub fn hex_major_minor(hex: u64) -> (u8, u8) {
    (((hex >> 24) & 0xff) as u8, ((hex >> 16) & 0xff) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_covers_3_10_to_3_13_in_order() {
        let listed: Vec<_> = VERSIONS.iter().map(|v| (v.major, v.minor)).collect();
        assert_eq!(listed, [(3, 10), (3, 11), (3, 12), (3, 13)]);
        assert_eq!(facts(3, 9), None);
        assert_eq!(facts(3, 12).map(|f| f.debug_offsets), Some(false));
    }

    #[test]
    fn debug_offsets_from_3_13_on() {
        assert!(!has_debug_offsets(3, 10));
        assert!(!has_debug_offsets(3, 12));
        assert!(has_debug_offsets(3, 13));
        assert!(has_debug_offsets(3, 14));
        assert!(!has_debug_offsets(3, 9));
        assert!(!has_debug_offsets(2, 7));
    }

    #[test]
    fn versions_from_file_names() {
        assert_eq!(from_file_name("libpython3.12.so.1.0"), Some((3, 12)));
        assert_eq!(from_file_name("libpython3.13t.so.1.0"), Some((3, 13)));
        assert_eq!(from_file_name("libpython3.10.so"), Some((3, 10)));
        assert_eq!(from_file_name("python3.11"), Some((3, 11)));
        assert_eq!(from_file_name("python3"), None);
        assert_eq!(from_file_name("python"), None);
        assert_eq!(from_file_name("python3.x"), None);
        assert_eq!(from_file_name("sleep"), None);
    }

    #[test]
    fn version_hex_parts() {
        assert_eq!(hex_major_minor(0x030d00f0), (3, 13));
        assert_eq!(hex_major_minor(0x030a0df0), (3, 10));
    }
}
