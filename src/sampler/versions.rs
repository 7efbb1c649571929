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

/// Where each offset the stack reader needs sits in 3.13's `_Py_DebugOffsets`, as the index of
/// its `uint64_t` (the struct is all `uint64_t` after `cookie`, which takes word 0). The values
/// at these words are read from the target; only their places are written here.
/// `include/python3.13/internal/pycore_runtime.h`, `struct _Py_DebugOffsets`.
pub mod debug_offsets_313 {
    /// The words to read: through `unicode_object.asciiobject_size`.
    pub const WORDS: usize = 71;
    pub const RUNTIME_INTERPRETERS_HEAD: usize = 5;
    pub const INTERP_NEXT: usize = 8;
    pub const INTERP_THREADS_HEAD: usize = 9;
    pub const THREAD_NEXT: usize = 21;
    pub const THREAD_INTERP: usize = 22;
    pub const THREAD_CURRENT_FRAME: usize = 23;
    pub const THREAD_THREAD_ID: usize = 24;
    pub const THREAD_NATIVE_THREAD_ID: usize = 25;
    pub const FRAME_PREVIOUS: usize = 29;
    pub const FRAME_EXECUTABLE: usize = 30;
    pub const FRAME_INSTR_PTR: usize = 31;
    pub const FRAME_OWNER: usize = 33;
    pub const CODE_FILENAME: usize = 35;
    pub const CODE_NAME: usize = 36;
    pub const CODE_QUALNAME: usize = 37;
    pub const CODE_LINETABLE: usize = 38;
    pub const CODE_FIRSTLINENO: usize = 39;
    pub const CODE_CODE_ADAPTIVE: usize = 43;
    pub const BYTES_OB_SIZE: usize = 65;
    pub const BYTES_OB_SVAL: usize = 66;
    pub const UNICODE_STATE: usize = 68;
    pub const UNICODE_LENGTH: usize = 69;
    pub const UNICODE_ASCIIOBJECT_SIZE: usize = 70;
    /// `interpreter_state.ceval_gil` (the pointer), `gil_runtime_state` (the interpreter's own
    /// GIL), and that GIL's `locked` and `last_holder`, these two from the interpreter's start.
    pub const INTERP_CEVAL_GIL: usize = 14;
    pub const INTERP_GIL_RUNTIME_STATE: usize = 15;
    pub const INTERP_GIL_LOCKED: usize = 17;
    pub const INTERP_GIL_HOLDER: usize = 18;
    // The words the reader takes are all within what it reads.
    const _: () = assert!(UNICODE_ASCIIOBJECT_SIZE < WORDS);
}

/// Where a `str` object's fields are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnicodeLayout {
    pub state: u64,
    pub length: u64,
    /// `sizeof(PyASCIIObject)`: an ASCII string's characters follow it.
    pub ascii_size: u64,
}

/// Where the fields the stack reader follows are (byte offsets in their structs): from the
/// target's `_Py_DebugOffsets` on 3.13+, from the installed headers before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackLayout {
    /// `_PyRuntimeState.interpreters.head`.
    pub interpreters_head: u64,
    /// `PyInterpreterState.next`, `.threads.head`.
    pub interp_next: u64,
    pub threads_head: u64,
    /// `PyThreadState.next`, `.interp`.
    pub thread_next: u64,
    pub thread_interp: u64,
    /// 3.11-3.12: `PyThreadState.cframe`, and `current_frame` is then `_PyCFrame`'s field;
    /// `None` (3.13+): `current_frame` is the thread state's own field.
    pub thread_cframe: Option<u64>,
    pub current_frame: u64,
    /// `PyThreadState.thread_id` (`threading.get_ident()`), `.native_thread_id`.
    pub thread_id: u64,
    pub native_thread_id: u64,
    /// `_PyInterpreterFrame.previous`, `.f_code` or `.f_executable`, `.prev_instr` or
    /// `.instr_ptr`, `.owner` (one byte).
    pub frame_previous: u64,
    pub frame_executable: u64,
    pub frame_instr_ptr: u64,
    pub frame_owner: u64,
    /// `PyCodeObject.co_filename`, `co_name`, `co_qualname`, `co_linetable` (bytes),
    /// `co_firstlineno` (an `int`), `co_code_adaptive` (the instructions).
    pub code_filename: u64,
    pub code_name: u64,
    pub code_qualname: u64,
    pub code_linetable: u64,
    pub code_firstlineno: u64,
    pub code_adaptive: u64,
    /// `PyBytesObject`'s `ob_size` and `ob_sval`.
    pub bytes_size: u64,
    pub bytes_sval: u64,
    pub unicode: UnicodeLayout,
}

/// 3.11's layout (x86-64 and other LP64 targets, release build), from `include/python3.11/`,
/// the same headers as 3.12's (offsetof of each field, compiled against them). Checked on attach
/// as 3.12's.
pub const LAYOUT_311: StackLayout = StackLayout {
    interpreters_head: 40,
    interp_next: 0,
    threads_head: 16,
    thread_next: 8,
    thread_interp: 16,
    thread_cframe: Some(56),
    current_frame: 8,
    thread_id: 152,
    native_thread_id: 160,
    frame_previous: 48,
    frame_executable: 32,
    frame_instr_ptr: 56,
    frame_owner: 69,
    code_filename: 112,
    code_name: 120,
    code_qualname: 128,
    code_linetable: 136,
    code_firstlineno: 72,
    code_adaptive: 184,
    bytes_size: 16,
    bytes_sval: 32,
    unicode: UnicodeLayout {
        state: 32,
        length: 16,
        // 3.11's PyASCIIObject still has `wstr`.
        ascii_size: 48,
    },
};

/// 3.12's layout (x86-64 and other LP64 targets, release build), from `include/python3.12/`:
/// `internal/pycore_runtime.h`, `internal/pycore_interp.h`, `cpython/pystate.h`,
/// `internal/pycore_frame.h`, `cpython/code.h`, `cpython/bytesobject.h`,
/// `cpython/unicodeobject.h` (offsetof of each field, compiled against those headers).
/// Checked on attach: every thread state's `interp` must point back at its interpreter.
pub const LAYOUT_312: StackLayout = StackLayout {
    interpreters_head: 40,
    interp_next: 0,
    threads_head: 72,
    thread_next: 8,
    thread_interp: 16,
    thread_cframe: Some(56),
    current_frame: 0,
    thread_id: 136,
    native_thread_id: 144,
    frame_previous: 8,
    frame_executable: 0,
    frame_instr_ptr: 56,
    frame_owner: 70,
    code_filename: 112,
    code_name: 120,
    code_qualname: 128,
    code_linetable: 136,
    code_firstlineno: 68,
    code_adaptive: 192,
    bytes_size: 16,
    bytes_sval: 32,
    unicode: UnicodeLayout {
        state: 32,
        length: 16,
        ascii_size: 40,
    },
};

/// What `_Py_DebugOffsets` does not say of a `str` object (`cpython/unicodeobject.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StrFacts {
    /// `PyASCIIObject.state`'s bit fields, `interned:2, kind:3, compact:1, ascii:1` (3.10 and
    /// 3.11 add `ready:1` after them): the shift of `kind`, `compact` and `ascii`.
    pub kind_shift: u32,
    pub compact_bit: u32,
    pub ascii_bit: u32,
    /// `sizeof(PyCompactUnicodeObject) - sizeof(PyASCIIObject)`: `utf8_length` and `utf8`
    /// (and 3.10-3.11's `wstr_length`); the characters of a compact non-ASCII string follow it.
    pub compact_extra: u64,
}

/// 3.12's and 3.13's `str`.
pub const STR_FACTS_312: StrFacts = StrFacts {
    kind_shift: 2,
    compact_bit: 5,
    ascii_bit: 6,
    compact_extra: 16,
};

/// 3.10's and 3.11's `str`: the same bits, a longer `PyCompactUnicodeObject`.
pub const STR_FACTS_310: StrFacts = StrFacts {
    compact_extra: 24,
    ..STR_FACTS_312
};

/// What the stack reader needs of a version beyond its layout, per version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackFacts {
    /// The struct layout; `None`: read it from the target's `_Py_DebugOffsets` (3.13+).
    pub layout: Option<StackLayout>,
    /// `FRAME_OWNED_BY_CSTACK` (`pycore_frame.h`, 3.12+): a shim frame of C code, not Python;
    /// skipped. `None` (3.11): every frame in the chain is a Python frame.
    pub frame_owned_by_cstack: Option<u8>,
    /// How its `str` objects' state and characters are laid out.
    pub str_facts: StrFacts,
    /// `sizeof(_Py_CODEUNIT)`: the instruction pointer's unit.
    pub code_unit: u64,
}

/// 3.13's stack facts (`Objects/locations.md` is the location table's format, 3.11+).
pub const STACK_FACTS_313: StackFacts = StackFacts {
    layout: None,
    frame_owned_by_cstack: Some(3),
    str_facts: STR_FACTS_312,
    code_unit: 2,
};

/// 3.12's: the same as 3.13's but for the layout, which 3.12 does not publish.
pub const STACK_FACTS_312: StackFacts = StackFacts {
    layout: Some(LAYOUT_312),
    ..STACK_FACTS_313
};

/// 3.11's: no C-stack shim frames, a longer `PyCompactUnicodeObject`.
pub const STACK_FACTS_311: StackFacts = StackFacts {
    layout: Some(LAYOUT_311),
    frame_owned_by_cstack: None,
    str_facts: STR_FACTS_310,
    ..STACK_FACTS_313
};

/// The stack facts of a version whose threads the sampler can read, `None` for the others.
pub fn stack_facts(major: u8, minor: u8) -> Option<&'static StackFacts> {
    match (major, minor) {
        (3, 11) => Some(&STACK_FACTS_311),
        (3, 12) => Some(&STACK_FACTS_312),
        (3, 13) => Some(&STACK_FACTS_313),
        _ => None,
    }
}

/// Where a version's GIL is: `internal/pycore_gil.h`'s `_gil_runtime_state`, which holds
/// `last_holder` (the `PyThreadState` that holds or last held it) and `locked` (an `int`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GilPlace {
    /// 3.10, 3.11: one GIL for the process, `_PyRuntime.ceval.gil`: its offset in `_PyRuntime`.
    Runtime { gil: u64 },
    /// 3.12+: each interpreter points at the GIL its threads take (`PyInterpreterState.ceval.gil`);
    /// the one read is the main interpreter's (`_PyRuntime.interpreters.main`, which follows
    /// `.head`), which owns its GIL (`._gil`: checked on attach).
    MainInterpreter {
        interpreters_head: u64,
        interpreters_main: u64,
        ceval_gil: u64,
        own_gil: u64,
    },
}

/// The GIL's place and its fields' offsets in `_gil_runtime_state` (x86-64 and other LP64
/// targets, release build; offsetof of each field, compiled against the version's headers:
/// `internal/pycore_runtime.h`, `pycore_interp.h`, `pycore_ceval_state.h`, `pycore_gil.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GilLayout {
    pub place: GilPlace,
    pub last_holder: u64,
    pub locked: u64,
}

/// `interval`, then `last_holder`, then `locked` in every version: one read takes both.
const GIL_FIELDS: (u64, u64) = (8, 16);

pub const GIL_310: GilLayout = GilLayout {
    place: GilPlace::Runtime { gil: 352 },
    last_holder: GIL_FIELDS.0,
    locked: GIL_FIELDS.1,
};

pub const GIL_311: GilLayout = GilLayout {
    place: GilPlace::Runtime { gil: 360 },
    ..GIL_310
};

pub const GIL_312: GilLayout = GilLayout {
    place: GilPlace::MainInterpreter {
        interpreters_head: 40,
        interpreters_main: 48,
        ceval_gil: 384,
        own_gil: 1040,
    },
    ..GIL_310
};

/// 3.13's headers; the runtime's `_Py_DebugOffsets` (read on attach) replace all of it but the
/// distance from `interpreters.head` to `.main`, which they do not publish.
pub const GIL_313: GilLayout = GilLayout {
    place: GilPlace::MainInterpreter {
        interpreters_head: 632,
        interpreters_main: 640,
        ceval_gil: 16,
        own_gil: 7752,
    },
    ..GIL_310
};

/// Where the GIL of version `major.minor` is, `None` for a version the table does not know.
pub fn gil_layout(major: u8, minor: u8) -> Option<&'static GilLayout> {
    match (major, minor) {
        (3, 10) => Some(&GIL_310),
        (3, 11) => Some(&GIL_311),
        (3, 12) => Some(&GIL_312),
        (3, 13) => Some(&GIL_313),
        _ => None,
    }
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
    fn stacks_are_read_on_3_11_and_3_12_by_table_and_on_3_13_by_debug_offsets() {
        assert_eq!(stack_facts(3, 12).map(|f| f.layout), Some(Some(LAYOUT_312)));
        assert_eq!(stack_facts(3, 13).map(|f| f.layout), Some(None));
        assert_eq!(stack_facts(3, 11).map(|f| f.layout), Some(Some(LAYOUT_311)));
        assert_eq!(stack_facts(3, 10), None);
    }

    #[test]
    fn every_version_has_a_gil_row_and_main_follows_head() {
        for v in VERSIONS {
            let gil = gil_layout(v.major, v.minor);
            assert!(gil.is_some(), "{}.{}", v.major, v.minor);
            if let Some(GilPlace::MainInterpreter {
                interpreters_head,
                interpreters_main,
                ..
            }) = gil.map(|g| g.place)
            {
                assert_eq!(interpreters_main, interpreters_head + 8);
            }
        }
        // The same field as the stack reader's, where both come from the headers.
        assert!(matches!(
            GIL_312.place,
            GilPlace::MainInterpreter { interpreters_head, .. }
                if interpreters_head == LAYOUT_312.interpreters_head
        ));
        assert_eq!(gil_layout(3, 9), None);
        assert_eq!(gil_layout(3, 11).map(|g| g.locked), Some(16));
    }

    #[test]
    fn version_hex_parts() {
        assert_eq!(hex_major_minor(0x030d00f0), (3, 13));
        assert_eq!(hex_major_minor(0x030a0df0), (3, 10));
    }
}
