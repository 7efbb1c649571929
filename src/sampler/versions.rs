//! What differs between the Python versions the sampler reads, as data: one row per version.
//! A new version is a new row here (and, for the later floors, its layout), not new code.

use std::io;

/// A Python version's facts for reading it from outside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionFacts {
    pub major: u8,
    pub minor: u8,
    /// `_PyRuntime` starts with `_Py_DebugOffsets` (3.13+: `pycore_runtime.h`), which says the
    /// exact version and where the fields the sampler reads are.
    pub debug_offsets: bool,
    /// Whether the sampler reads this version's free-threaded build (`3.13t`...), which
    /// `_Py_DebugOffsets.free_threaded` names: its objects carry a longer header, its code
    /// objects per-thread bytecode (`co_tlbc`), its strings other state bits. None yet: such a
    /// target is refused, saying so.
    pub free_threaded: bool,
}

/// The versions rprofile supports, oldest first.
#[rustfmt::skip]
pub const VERSIONS: &[VersionFacts] = &[
    VersionFacts { major: 3, minor: 10, debug_offsets: false, free_threaded: false },
    VersionFacts { major: 3, minor: 11, debug_offsets: false, free_threaded: false },
    VersionFacts { major: 3, minor: 12, debug_offsets: false, free_threaded: false },
    VersionFacts { major: 3, minor: 13, debug_offsets: true, free_threaded: false },
    VersionFacts { major: 3, minor: 14, debug_offsets: true, free_threaded: false },
    VersionFacts { major: 3, minor: 15, debug_offsets: true, free_threaded: false },
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

// Where each version's `_Py_DebugOffsets` keeps the offsets (3.13+): its own module.
pub use super::debug_words::{
    debug_words, DebugWordMap, DEBUG_WORDS_313, DEBUG_WORDS_314, DEBUG_WORDS_315,
};

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
    /// `_PyRuntimeState.main_thread`: the main thread's ident, read where thread states have no
    /// native id (3.10) to tell the main thread; `None`: it is the thread whose native id is the
    /// process id.
    pub runtime_main_thread: Option<u64>,
    /// `PyInterpreterState.next`, `.threads.head`.
    pub interp_next: u64,
    pub threads_head: u64,
    /// `PyThreadState.next`, `.interp`.
    pub thread_next: u64,
    pub thread_interp: u64,
    /// 3.11-3.12: `PyThreadState.cframe`, and `current_frame` is then `_PyCFrame`'s field;
    /// `None` (3.10, 3.13+): `current_frame` is the thread state's own field (3.10: `frame`).
    pub thread_cframe: Option<u64>,
    pub current_frame: u64,
    /// 3.11-3.12: `_PyCFrame.previous`, the cframe of the C call that called into the
    /// interpreter (a generator resumed by `str.join` runs under a cframe of its own).
    pub cframe_previous: Option<u64>,
    /// `PyThreadState.thread_id` (`threading.get_ident()`), `.native_thread_id` (3.11+).
    pub thread_id: u64,
    pub native_thread_id: Option<u64>,
    /// `PyThreadState.gil_requested` (an `int`, 3.15+): whether the thread waits for the GIL.
    pub gil_requested: Option<u64>,
    /// `_PyInterpreterFrame.previous`, `.f_code` or `.f_executable`, `.prev_instr` or
    /// `.instr_ptr`, `.owner` (one byte, 3.11+); 3.10: `PyFrameObject.f_back`, `.f_code`,
    /// `.f_lasti` (an `int`), as `StackFacts::frame_kind` says.
    pub frame_previous: u64,
    pub frame_executable: u64,
    pub frame_instr_ptr: u64,
    pub frame_owner: Option<u64>,
    /// 3.10: `PyFrameObject.f_gen`, the generator (or coroutine) a frame runs, else NULL;
    /// 3.11+ says so by the frame's `owner`.
    pub frame_gen: Option<u64>,
    /// 3.10: `PyFrameObject.f_state` (a `signed char`), which says whether it has finished.
    pub frame_state: Option<u64>,
    /// `PyCodeObject.co_filename`, `co_name`, `co_qualname` (3.11+), `co_linetable` (bytes),
    /// `co_firstlineno` (an `int`), `co_code_adaptive` (3.11+: the instructions, inline).
    pub code_filename: u64,
    pub code_name: u64,
    pub code_qualname: Option<u64>,
    pub code_linetable: u64,
    pub code_firstlineno: u64,
    pub code_adaptive: Option<u64>,
    /// `PyBytesObject`'s `ob_size` and `ob_sval`.
    pub bytes_size: u64,
    pub bytes_sval: u64,
    pub unicode: UnicodeLayout,
}

/// 3.10's layout (x86-64 and other LP64 targets, release build), from `include/python3.10/`:
/// `internal/pycore_runtime.h`, `internal/pycore_interp.h` (`tstate_head`), `cpython/pystate.h`,
/// `cpython/frameobject.h`, `cpython/code.h`, `cpython/bytesobject.h`, `cpython/unicodeobject.h`
/// (offsetof of each field, compiled against them). A thread state has no native thread id,
/// a frame no owner, a code object no qualified name and no inline instructions. Checked on
/// attach as 3.12's.
pub const LAYOUT_310: StackLayout = StackLayout {
    interpreters_head: 32,
    runtime_main_thread: Some(72),
    interp_next: 0,
    threads_head: 8,
    thread_next: 8,
    thread_interp: 16,
    thread_cframe: None,
    current_frame: 24,
    cframe_previous: None,
    thread_id: 176,
    native_thread_id: None,
    gil_requested: None,
    frame_previous: 24,
    frame_executable: 32,
    frame_instr_ptr: 96,
    frame_owner: None,
    frame_gen: Some(88),
    frame_state: Some(108),
    code_filename: 104,
    code_name: 112,
    code_qualname: None,
    code_linetable: 120,
    code_firstlineno: 40,
    code_adaptive: None,
    bytes_size: 16,
    bytes_sval: 32,
    // A `PyASCIIObject` with `wstr`, as 3.11's.
    unicode: LAYOUT_311.unicode,
};

/// 3.11's layout (x86-64 and other LP64 targets, release build), from `include/python3.11/`,
/// the same headers as 3.12's (offsetof of each field, compiled against them). Checked on attach
/// as 3.12's.
pub const LAYOUT_311: StackLayout = StackLayout {
    interpreters_head: 40,
    runtime_main_thread: None,
    interp_next: 0,
    threads_head: 16,
    thread_next: 8,
    thread_interp: 16,
    thread_cframe: Some(56),
    current_frame: 8,
    cframe_previous: Some(16),
    thread_id: 152,
    native_thread_id: Some(160),
    gil_requested: None,
    frame_previous: 48,
    frame_executable: 32,
    frame_instr_ptr: 56,
    frame_owner: Some(69),
    frame_gen: None,
    frame_state: None,
    code_filename: 112,
    code_name: 120,
    code_qualname: Some(128),
    code_linetable: 136,
    code_firstlineno: 72,
    code_adaptive: Some(184),
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
    runtime_main_thread: None,
    interp_next: 0,
    threads_head: 72,
    thread_next: 8,
    thread_interp: 16,
    thread_cframe: Some(56),
    current_frame: 0,
    cframe_previous: Some(8),
    thread_id: 136,
    native_thread_id: Some(144),
    gil_requested: None,
    frame_previous: 8,
    frame_executable: 0,
    frame_instr_ptr: 56,
    frame_owner: Some(70),
    frame_gen: None,
    frame_state: None,
    code_filename: 112,
    code_name: 120,
    code_qualname: Some(128),
    code_linetable: 136,
    code_firstlineno: 68,
    code_adaptive: Some(192),
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

/// How a thread's frames are chained, and how a frame says which instruction it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// 3.10: `PyFrameObject`s linked by `f_back`; `f_lasti` is the index of the code unit last
    /// started, -1 before the first.
    Object310,
    /// 3.11+: `_PyInterpreterFrame`s linked by `previous`; the instruction is a pointer into
    /// the code object's `co_code_adaptive`.
    Interpreter311,
}

/// The format of a code object's `co_linetable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineTable {
    /// 3.10: (byte delta, signed line delta) pairs, -128 for no line (3.10's
    /// `Objects/lnotab_notes.txt`).
    Lnotab310,
    /// 3.11+: the location table (`Objects/locations.md`).
    Locations311,
}

/// How a thread's frames lie on its data stack (`pycore_frame.h`, `pystate.c`): a call's frame
/// is pushed where the stack's top is, right after its caller's frame (its size in words from
/// it), or, when the chunk is full, at the start of a new chunk's data. A read that pairs a
/// caller with a callee elsewhere saw another call in the slot (the next pass of a loop).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FramePlacing {
    /// Where a code object says how big its frames are.
    pub frame_size: FrameSize,
    /// `_PyStackChunk.data`'s offset in a chunk, which starts a page (mmapped).
    pub chunk_data: u64,
    /// `FRAME_OWNED_BY_THREAD`: a frame on the data stack (not a generator's, nor on the C stack).
    pub owned_by_thread: u8,
    /// 3.11: where a frame's `is_entry` (a `bool`) is, set on a frame called from C code. Such
    /// a frame may lie past its caller's end (a finalizer run as a frame returns is pushed after
    /// the frame being cleared, which is already unlinked), as a frame after a shim does on
    /// 3.12+, which have no such flag (`None`).
    pub frame_is_entry: Option<u64>,
}

/// Where a code object's frame size is: the `int` fields of `PyCodeObject` it is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameSize {
    /// `co_framesize` (3.12+): the frame's size in words.
    Field(u64),
    /// 3.11, which has no `co_framesize`: `_PyFrame_Push` takes `co_nlocalsplus + co_stacksize
    /// + FRAME_SPECIALS_SIZE` words, the last the frame's fields before `localsplus`.
    Sum {
        stacksize: u64,
        nlocalsplus: u64,
        specials: u64,
    },
}

impl FrameSize {
    /// The frame size in bytes of the code object whose `int` at an offset `field` gives.
    pub fn bytes(self, mut field: impl FnMut(u64) -> io::Result<u32>) -> io::Result<u64> {
        let words = match self {
            FrameSize::Field(at) => u64::from(field(at)?),
            FrameSize::Sum {
                stacksize,
                nlocalsplus,
                specials,
            } => u64::from(field(stacksize)?) + u64::from(field(nlocalsplus)?) + specials,
        };
        Ok(words * 8)
    }
}

/// 3.12-3.15's: `co_framesize` after the header, three pointers and six `int`s (checked on
/// 3.12-3.14 against the interpreter and in 3.15's `cpython/code.h`).
pub const FRAME_PLACING_312: FramePlacing = FramePlacing {
    frame_size: FrameSize::Field(76),
    chunk_data: 24,
    owned_by_thread: 0,
    frame_is_entry: None,
};

/// 3.11's (`include/python3.11/cpython/code.h`, `internal/pycore_frame.h`): `co_stacksize` and
/// `co_nlocalsplus` are the fourth and sixth `int` after the header, three pointers, an `int`
/// and two `short`s; `localsplus` starts 9 words into `_PyInterpreterFrame`, after `stacktop`
/// (an `int`), `is_entry` and `owner`; the chunk is 3.12's.
pub const FRAME_PLACING_311: FramePlacing = FramePlacing {
    frame_size: FrameSize::Sum {
        stacksize: 68,
        nlocalsplus: 76,
        specials: 9,
    },
    frame_is_entry: Some(68),
    ..FRAME_PLACING_312
};

/// What the stack reader needs of a version beyond its layout, per version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackFacts {
    /// The struct layout; `None`: read it from the target's `_Py_DebugOffsets` (3.13+).
    pub layout: Option<StackLayout>,
    pub frame_kind: FrameKind,
    pub line_table: LineTable,
    /// The owners of frames that are not Python's, skipped: `FRAME_OWNED_BY_CSTACK`
    /// (`pycore_frame.h`, 3.12-3.14), a shim frame of C code, and `FRAME_OWNED_BY_INTERPRETER`
    /// (3.14+, `pycore_interpframe_structs.h`), the entry frame at the bottom of each thread's
    /// chain. Empty (3.11): every frame in the chain is a Python frame. Where there are
    /// shims (3.12+), every thread's chain ends at one, the entry frame of the interpreter's
    /// outermost run: a chain that ends at a Python frame was read while one was made (3.13: a
    /// generator's frame copied out of the data stack, its `previous` cleared before its owner
    /// is set), not a stack the thread had.
    pub shim_owners: &'static [u8],
    /// The low bits of a frame's `f_executable` that are a tag, not address: 3.14+ keep it as a
    /// `_PyStackRef` (`Py_TAG_BITS`, 3 in the GIL build, `pycore_stackref.h`); 0 before.
    pub executable_tag_bits: u64,
    /// Whether a frame popped off the data stack has its code cleared to `PyStackRef_NULL`
    /// (3.14+: `clear_thread_frame`, `Python/ceval.c`), its `previous` left as it was.
    pub returned_code_cleared: bool,
    /// Code objects the interpreter runs for itself in a frame owned as a Python one, which
    /// no function of the program is: where their flags are (`co_flags`, an `int`) and the
    /// flag that marks them. 3.13+: `_Py_InitCleanup` (`Python/specialize.c`), run between a
    /// class's `__init__` and its caller, flagged `CO_NO_MONITORING_EVENTS` (0x2000000,
    /// `cpython/code.h`); `co_flags` follows the header and three pointers. `None` before.
    pub internal_code: Option<(u64, u32)>,
    /// Where frames lie on a thread's data stack (3.11+; `None`: not checked).
    pub frame_placing: Option<FramePlacing>,
    /// How many bytes before `co_code_adaptive` `PyCodeObject._co_firsttraceable` (an `int`)
    /// is: a frame whose instruction is before it has not started its call (3.13-3.15: 16, a
    /// pointer and an `int` padded; checked on each against the instructions before `RESUME`).
    /// Read only in this process (`own_frames`).
    pub first_traceable_before_adaptive: Option<u64>,
    /// `FRAME_OWNED_BY_GENERATOR` (3.11+): a generator's or coroutine's frame, which is never
    /// the outermost of a thread's chain (its `previous` is set while it runs; a chain that
    /// ends at one was read while it yielded).
    pub frame_owned_by_generator: Option<u8>,
    /// How its `str` objects' state and characters are laid out.
    pub str_facts: StrFacts,
    /// `sizeof(_Py_CODEUNIT)`: the instruction pointer's unit, and 3.10's line table's.
    pub code_unit: u64,
    /// 3.10's `f_state` values of a finished frame (`cpython/frameobject.h`: `FRAME_RETURNED`,
    /// `FRAME_RAISED`, `FRAME_CLEARED`): one in a thread's chain means the chain changed under
    /// the read, since a finished frame's `f_back` is left stale or links the frame free list.
    pub frame_finished: &'static [i8],
}

/// 3.13's stack facts (`Objects/locations.md` is the location table's format, 3.11+).
pub const STACK_FACTS_313: StackFacts = StackFacts {
    layout: None,
    frame_kind: FrameKind::Interpreter311,
    line_table: LineTable::Locations311,
    shim_owners: &[3],
    executable_tag_bits: 0,
    returned_code_cleared: false,
    internal_code: Some((48, 0x200_0000)),
    frame_placing: Some(FRAME_PLACING_312),
    first_traceable_before_adaptive: Some(16),
    frame_owned_by_generator: Some(1),
    str_facts: STR_FACTS_312,
    code_unit: 2,
    frame_finished: &[],
};

/// 3.14's (`internal/pycore_interpframe_structs.h`, `pycore_stackref.h`): the owner values
/// move (3 = `FRAME_OWNED_BY_INTERPRETER`, 4 = `FRAME_OWNED_BY_CSTACK`: both skipped) and
/// `f_executable` is a tagged `_PyStackRef`.
pub const STACK_FACTS_314: StackFacts = StackFacts {
    shim_owners: &[3, 4],
    executable_tag_bits: 3,
    returned_code_cleared: true,
    ..STACK_FACTS_313
};

/// 3.15's: `FRAME_OWNED_BY_CSTACK` is gone; 3 (`FRAME_OWNED_BY_INTERPRETER`) is skipped.
pub const STACK_FACTS_315: StackFacts = StackFacts {
    shim_owners: &[3],
    ..STACK_FACTS_314
};

/// 3.12's: the same as 3.13's but for the layout, which 3.12 does not publish.
pub const STACK_FACTS_312: StackFacts = StackFacts {
    layout: Some(LAYOUT_312),
    internal_code: None,
    first_traceable_before_adaptive: None,
    ..STACK_FACTS_313
};

/// 3.11's: no C-stack shim frames, a longer `PyCompactUnicodeObject`.
pub const STACK_FACTS_311: StackFacts = StackFacts {
    layout: Some(LAYOUT_311),
    shim_owners: &[],
    str_facts: STR_FACTS_310,
    frame_placing: Some(FRAME_PLACING_311),
    ..STACK_FACTS_312
};

/// 3.10's: 3.11's strings, but frame objects and the older line table.
pub const STACK_FACTS_310: StackFacts = StackFacts {
    layout: Some(LAYOUT_310),
    frame_kind: FrameKind::Object310,
    line_table: LineTable::Lnotab310,
    frame_finished: &[1, 3, 4],
    ..STACK_FACTS_311
};

/// The stack facts of a version whose threads the sampler can read, `None` for the others.
pub fn stack_facts(major: u8, minor: u8) -> Option<&'static StackFacts> {
    match (major, minor) {
        (3, 10) => Some(&STACK_FACTS_310),
        (3, 11) => Some(&STACK_FACTS_311),
        (3, 12) => Some(&STACK_FACTS_312),
        (3, 13) => Some(&STACK_FACTS_313),
        (3, 14) => Some(&STACK_FACTS_314),
        (3, 15) => Some(&STACK_FACTS_315),
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

/// 3.14's headers (`_PyRuntime.interpreters.head` 808, `.main` 816; `PyInterpreterState._gil`
/// 7784); all but head -> main is read from `_Py_DebugOffsets` on attach.
pub const GIL_314: GilLayout = GilLayout {
    place: GilPlace::MainInterpreter {
        interpreters_head: 808,
        interpreters_main: 816,
        ceval_gil: 16,
        own_gil: 7784,
    },
    ..GIL_310
};

/// 3.15's headers (head 936, main 944, `_gil` 7736), used as 3.14's.
pub const GIL_315: GilLayout = GilLayout {
    place: GilPlace::MainInterpreter {
        interpreters_head: 936,
        interpreters_main: 944,
        ceval_gil: 16,
        own_gil: 7736,
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
        (3, 14) => Some(&GIL_314),
        (3, 15) => Some(&GIL_315),
        _ => None,
    }
}

/// One kind of entry in a dict's keys (`PyDictKeyEntry`, `PyDictUnicodeEntry`): its size and
/// where its key and value pointers are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryLayout {
    pub size: u64,
    pub key: u64,
    pub value: u64,
}

/// How a dict's keys object says its table's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeysSize {
    /// 3.10: `Py_ssize_t dk_size` at this offset; each index is 1, 2, 4 or 8 bytes, the fewest
    /// that hold `dk_size`.
    Count(u64),
    /// 3.11+: `uint8_t dk_log2_size` and `dk_log2_index_bytes` at these offsets: the indices
    /// take `1 << dk_log2_index_bytes` bytes.
    Log2 { size: u64, index_bytes: u64 },
}

/// A `dict` (`cpython/dictobject.h`) and its keys (`internal/pycore_dict.h`; 3.10's are in
/// `Objects/dict-common.h`, not installed). The entries follow the indices (`dk_indices`); a
/// split table (`ma_values` set, as an instance's attributes) keeps its values apart, in the
/// order of its keys' entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DictLayout {
    /// `PyDictObject.ma_keys`, `.ma_values`.
    pub ma_keys: u64,
    pub ma_values: u64,
    /// `PyDictObject.ma_version_tag`, which every change of the dict moves; `None` where
    /// a version has no such counter (a dict is then read once, unchecked).
    pub ma_version_tag: Option<u64>,
    pub size: KeysSize,
    /// `dk_kind` (one byte, 3.11+); `None`: every entry is a general one.
    pub dk_kind: Option<u64>,
    /// `DICT_KEYS_GENERAL`: entries with their hash; the other kinds have unicode entries.
    pub kind_general: u8,
    pub dk_nentries: u64,
    pub dk_indices: u64,
    pub general: EntryLayout,
    pub unicode: EntryLayout,
    /// `PyDictValues.values` (3.11+; 3.10's `ma_values` is the array itself).
    pub values_array: u64,
    /// `PyDictValues.capacity` (one byte, 3.13+): how many values there are room for;
    /// `None`: as many as the keys have entries.
    pub values_capacity: Option<u64>,
}

/// How an `int` says its number of digits (`cpython/longintrepr.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LongSize {
    /// 3.10-3.11: `ob_size`, the digit count, negative for a negative number.
    ObSize,
    /// 3.12+: `lv_tag`, the digit count shifted left by `_PyLong_NON_SIZE_BITS`; its low bits
    /// (`sign_mask`) are the sign, `negative` for a negative number.
    LvTag {
        shift: u32,
        sign_mask: u64,
        negative: u64,
    },
}

/// An `int` object: where its size word and its digits are, and the bits per digit
/// (`PyLong_SHIFT`; each digit is a `uint32_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongLayout {
    pub size: u64,
    pub size_kind: LongSize,
    pub digits: u64,
    pub digit_bits: u32,
}

/// Where an instance of a Python class keeps its attributes (`internal/pycore_object.h`).
/// Offsets that are `i64` are from the object's address, negative for the words before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceAttrs {
    /// 3.10: a dict at the type's `tp_dictoffset`.
    DictOffset,
    /// 3.11: a type with `managed_flag` (`Py_TPFLAGS_MANAGED_DICT`) keeps a pointer to values
    /// (keyed by the type's shared keys) at `values` and, when there are none, to a dict at
    /// `dict`.
    ValuesOrDict {
        managed_flag: u64,
        values: i64,
        dict: i64,
    },
    /// 3.12: one word at `slot` (`PyDictOrValues`): the values' address less one (odd) or a dict.
    TaggedValues { managed_flag: u64, slot: i64 },
    /// 3.13: a type with `inline_flag` (`Py_TPFLAGS_INLINE_VALUES`) keeps its values in the
    /// object, `values` bytes in (after the `PyObject` header), used while the byte `valid`
    /// bytes into them (`PyDictValues.valid`) is set; else the dict at `dict`
    /// (`MANAGED_DICT_OFFSET`).
    InlineValues {
        managed_flag: u64,
        inline_flag: u64,
        values: u64,
        valid: u64,
        dict: i64,
    },
}

/// What the thread-name reader follows, from the runtime to a thread's `_name`: byte offsets,
/// from the installed headers of each version (offsetof of each field, compiled against them
/// with `Py_BUILD_CORE`); on 3.13+ those that `_Py_DebugOffsets` publishes are read from the
/// target instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamesLayout {
    /// `_PyRuntimeState.interpreters.head`, `PyInterpreterState.next`.
    pub interpreters_head: u64,
    pub interp_next: u64,
    /// `PyInterpreterState.modules` (3.10-3.11) or `.imports.modules` (3.12+): `sys.modules`.
    pub interp_modules: u64,
    /// `PyObject.ob_type`; `PyTypeObject.tp_flags`, `.tp_dictoffset`;
    /// `PyHeapTypeObject.ht_cached_keys` (the keys an instance's values share).
    pub ob_type: u64,
    pub tp_flags: u64,
    pub tp_dictoffset: u64,
    pub ht_cached_keys: u64,
    /// `PyModuleObject.md_dict` (`internal/pycore_moduleobject.h`; 3.10's is in
    /// `Objects/moduleobject.c`): the module type's `tp_dictoffset`.
    pub md_dict: u64,
    pub dict: DictLayout,
    pub long: LongLayout,
    pub attrs: InstanceAttrs,
    pub unicode: UnicodeLayout,
    pub str_facts: StrFacts,
}

/// 3.12's dict; 3.11's is the same, 3.13's values start after a header.
pub const DICT_312: DictLayout = DictLayout {
    ma_keys: 32,
    ma_values: 40,
    ma_version_tag: Some(24),
    size: KeysSize::Log2 {
        size: 8,
        index_bytes: 9,
    },
    dk_kind: Some(10),
    kind_general: 0,
    dk_nentries: 24,
    dk_indices: 32,
    general: EntryLayout {
        size: 24,
        key: 8,
        value: 16,
    },
    unicode: EntryLayout {
        size: 16,
        key: 0,
        value: 8,
    },
    values_array: 0,
    values_capacity: None,
};

/// 3.10's and 3.11's `int`.
pub const LONG_310: LongLayout = LongLayout {
    size: 16,
    size_kind: LongSize::ObSize,
    digits: 24,
    digit_bits: 30,
};

/// 3.12's and 3.13's `int`.
pub const LONG_312: LongLayout = LongLayout {
    size_kind: LongSize::LvTag {
        shift: 3,
        sign_mask: 3,
        negative: 2,
    },
    ..LONG_310
};

/// 3.10 (`include/python3.10/`; `PyDictKeysObject` and `PyModuleObject` from its sources).
pub const NAMES_310: NamesLayout = NamesLayout {
    interpreters_head: 32,
    interp_next: 0,
    interp_modules: 856,
    ob_type: 8,
    tp_flags: 168,
    tp_dictoffset: 288,
    ht_cached_keys: 872,
    md_dict: 16,
    dict: DictLayout {
        size: KeysSize::Count(8),
        dk_kind: None,
        dk_nentries: 32,
        dk_indices: 40,
        ..DICT_312
    },
    long: LONG_310,
    attrs: InstanceAttrs::DictOffset,
    unicode: LAYOUT_311.unicode,
    str_facts: STR_FACTS_310,
};

/// 3.11 (`include/python3.11/`).
pub const NAMES_311: NamesLayout = NamesLayout {
    interpreters_head: LAYOUT_311.interpreters_head,
    interp_next: LAYOUT_311.interp_next,
    interp_modules: 888,
    dict: DICT_312,
    attrs: InstanceAttrs::ValuesOrDict {
        managed_flag: 1 << 4,
        values: -32,
        dict: -24,
    },
    ..NAMES_310
};

/// 3.12 (`include/python3.12/`).
pub const NAMES_312: NamesLayout = NamesLayout {
    interpreters_head: LAYOUT_312.interpreters_head,
    interp_next: LAYOUT_312.interp_next,
    interp_modules: 944,
    ht_cached_keys: 880,
    long: LONG_312,
    attrs: InstanceAttrs::TaggedValues {
        managed_flag: 1 << 4,
        slot: -24,
    },
    unicode: LAYOUT_312.unicode,
    str_facts: STR_FACTS_312,
    ..NAMES_311
};

/// 3.13 (`include/python3.13/`; the fields `_Py_DebugOffsets` has are read from the target).
pub const NAMES_313: NamesLayout = NamesLayout {
    interpreters_head: 632,
    interp_next: 7264,
    interp_modules: 7656,
    dict: DictLayout {
        values_array: 8,
        values_capacity: Some(0),
        ..DICT_312
    },
    attrs: InstanceAttrs::InlineValues {
        managed_flag: 1 << 4,
        inline_flag: 1 << 2,
        values: 16,
        valid: 3,
        dict: -24,
    },
    ..NAMES_312
};

/// 3.14 (`include/python3.14/`): 3.13's dicts, ints, strings and instances, other places in
/// the runtime and interpreter; `ma_version_tag` is gone (`_ma_watcher_tag` in its place does
/// not move at each change), so a dict is read once, unchecked.
pub const NAMES_314: NamesLayout = NamesLayout {
    interpreters_head: 808,
    interp_next: 7272,
    interp_modules: 7688,
    dict: DictLayout {
        ma_version_tag: None,
        ..NAMES_313.dict
    },
    ..NAMES_313
};

/// 3.15 (`include/python3.15/`; it publishes `tp_dictoffset` and `ht_cached_keys` too).
pub const NAMES_315: NamesLayout = NamesLayout {
    interpreters_head: 936,
    interp_next: 7264,
    interp_modules: 7592,
    ht_cached_keys: 888,
    ..NAMES_314
};

/// The thread-name layout of a supported version.
pub fn names_layout(major: u8, minor: u8) -> Option<&'static NamesLayout> {
    match (major, minor) {
        (3, 10) => Some(&NAMES_310),
        (3, 11) => Some(&NAMES_311),
        (3, 12) => Some(&NAMES_312),
        (3, 13) => Some(&NAMES_313),
        (3, 14) => Some(&NAMES_314),
        (3, 15) => Some(&NAMES_315),
        _ => None,
    }
}

/// Where a frame keeps its local variables, and their names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalsPlace {
    /// 3.10 (`cpython/frameobject.h`, `cpython/code.h`): `PyFrameObject.f_localsplus` holds
    /// `co_nlocals` locals (named by the tuple `co_varnames`), then one cell per name of
    /// `co_cellvars`, then one per name of `co_freevars`.
    FrameObject310 {
        f_localsplus: u64,
        co_nlocals: u64,
        co_varnames: u64,
        co_cellvars: u64,
        co_freevars: u64,
    },
    /// 3.11+ (`internal/pycore_frame.h`, `cpython/code.h`): `_PyInterpreterFrame.localsplus`
    /// holds `co_nlocalsplus` slots, named by the tuple `co_localsplusnames`, each of the kind
    /// its byte of `co_localspluskinds` says (`CO_FAST_*`, `internal/pycore_code.h`).
    Interpreter311 {
        localsplus: u64,
        co_nlocalsplus: u64,
        co_localsplusnames: u64,
        co_localspluskinds: u64,
    },
}

/// What `rprofile dump --locals` reads beyond the stack reader's layout: where a frame's locals
/// are, and the object fields its values are shown by. Byte offsets from the headers (LP64,
/// `tools/locals-offsets.c`); 3.13+ read those it publishes (`LocalsWords`) from the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalsLayout {
    pub place: LocalsPlace,
    /// `CO_FAST_CELL | CO_FAST_FREE`: a slot of such a kind holds a cell (3.11+).
    pub kind_cell: u8,
    /// `CO_FAST_HIDDEN` (3.12+): a comprehension's variable inlined into its function, which
    /// `locals()` does not show; 0 before.
    pub kind_hidden: u8,
    /// `PyTypeObject.tp_name` (a `char *`), `Py_TPFLAGS_HEAPTYPE`: the types the formatter
    /// knows by name are static ones, never a class of the program that took their name.
    pub tp_name: u64,
    pub heap_type_flag: u64,
    /// `PyTupleObject.ob_item` (3.14 adds `ob_hash` before it) and `ob_base.ob_size`.
    pub tuple_items: u64,
    pub tuple_size: u64,
    /// `PyListObject.ob_base.ob_size`, `PyDictObject.ma_used`, `PySetObject.used`.
    pub list_size: u64,
    pub dict_used: u64,
    pub set_used: u64,
    /// `PyFloatObject.ob_fval` (a `double`), `PyCellObject.ob_ref`.
    pub float_value: u64,
    pub cell_ref: u64,
}

/// 3.12's (`include/python3.12/`); 3.11's and 3.13's are the same but for what is marked.
pub const LOCALS_312: LocalsLayout = LocalsLayout {
    place: LocalsPlace::Interpreter311 {
        localsplus: 72,
        co_nlocalsplus: 72,
        co_localsplusnames: 96,
        co_localspluskinds: 104,
    },
    kind_cell: 0x40 | 0x80,
    kind_hidden: 0x10,
    tp_name: 24,
    heap_type_flag: 1 << 9,
    tuple_items: 24,
    tuple_size: 16,
    list_size: 16,
    dict_used: 16,
    set_used: 24,
    float_value: 16,
    cell_ref: 16,
};

/// 3.10 (`include/python3.10/`): frame objects, and no hidden locals.
pub const LOCALS_310: LocalsLayout = LocalsLayout {
    place: LocalsPlace::FrameObject310 {
        f_localsplus: 352,
        co_nlocals: 28,
        co_varnames: 72,
        co_cellvars: 88,
        co_freevars: 80,
    },
    kind_hidden: 0,
    ..LOCALS_312
};

/// 3.11 (`include/python3.11/`): `co_nlocalsplus` sits 4 bytes further on, no hidden locals.
pub const LOCALS_311: LocalsLayout = LocalsLayout {
    place: LocalsPlace::Interpreter311 {
        localsplus: 72,
        co_nlocalsplus: 76,
        co_localsplusnames: 96,
        co_localspluskinds: 104,
    },
    kind_hidden: 0,
    ..LOCALS_312
};

/// 3.13 (`include/python3.13/`): 3.12's offsets; the frame's, the code object's, the type's,
/// tuple's, list's and float's fields are read from `_Py_DebugOffsets`.
pub const LOCALS_313: LocalsLayout = LOCALS_312;

/// 3.14 (`include/python3.14/`): the frame's `localsplus` is at 80 (its slots are tagged
/// `_PyStackRef`s: `StackFacts::executable_tag_bits`), a tuple's items at 32.
pub const LOCALS_314: LocalsLayout = LocalsLayout {
    place: LocalsPlace::Interpreter311 {
        localsplus: 80,
        co_nlocalsplus: 72,
        co_localsplusnames: 96,
        co_localspluskinds: 104,
    },
    tuple_items: 32,
    ..LOCALS_312
};

/// 3.15 (`include/python3.15/`): 3.14's.
pub const LOCALS_315: LocalsLayout = LOCALS_314;

/// The words of `_Py_DebugOffsets` (as `DebugWordMap`'s) the locals reader takes, 3.13+, named
/// by their fields (`set_object.used`: 3.14+). `co_nlocalsplus`, `ma_used` and a cell's
/// `ob_ref` are not published: the table's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalsWords {
    pub frame_localsplus: usize,
    pub code_localsplusnames: usize,
    pub code_localspluskinds: usize,
    pub type_tp_name: usize,
    pub tuple_ob_item: usize,
    pub tuple_ob_size: usize,
    pub list_ob_size: usize,
    pub float_ob_fval: usize,
    pub set_used: Option<usize>,
}

impl LocalsWords {
    #[rustfmt::skip]
    pub fn indices(&self) -> Vec<usize> {
        let mut all = vec![
            self.frame_localsplus, self.code_localsplusnames, self.code_localspluskinds,
            self.type_tp_name, self.tuple_ob_item, self.tuple_ob_size, self.list_ob_size,
            self.float_ob_fval,
        ];
        all.extend(self.set_used);
        all
    }
}

#[rustfmt::skip]
pub const LOCALS_WORDS_313: LocalsWords = LocalsWords {
    frame_localsplus: 32, code_localsplusnames: 41, code_localspluskinds: 42, type_tp_name: 47,
    tuple_ob_item: 51, tuple_ob_size: 52, list_ob_size: 55, float_ob_fval: 60, set_used: None,
};

#[rustfmt::skip]
pub const LOCALS_WORDS_314: LocalsWords = LocalsWords {
    frame_localsplus: 35, code_localsplusnames: 46, code_localspluskinds: 47, type_tp_name: 53,
    tuple_ob_item: 57, tuple_ob_size: 58, list_ob_size: 61, float_ob_fval: 70, set_used: Some(63),
};

#[rustfmt::skip]
pub const LOCALS_WORDS_315: LocalsWords = LocalsWords {
    frame_localsplus: 43, code_localsplusnames: 54, code_localspluskinds: 55, type_tp_name: 61,
    tuple_ob_item: 69, tuple_ob_size: 70, list_ob_size: 73, float_ob_fval: 82, set_used: Some(75),
};

/// The locals layout of a supported version, and (3.13+) the words that replace its offsets.
pub fn locals_layout(
    major: u8,
    minor: u8,
) -> Option<(&'static LocalsLayout, Option<&'static LocalsWords>)> {
    match (major, minor) {
        (3, 10) => Some((&LOCALS_310, None)),
        (3, 11) => Some((&LOCALS_311, None)),
        (3, 12) => Some((&LOCALS_312, None)),
        (3, 13) => Some((&LOCALS_313, Some(&LOCALS_WORDS_313))),
        (3, 14) => Some((&LOCALS_314, Some(&LOCALS_WORDS_314))),
        (3, 15) => Some((&LOCALS_315, Some(&LOCALS_WORDS_315))),
        _ => None,
    }
}

/// The supported versions as text, oldest to newest: `3.10-3.15`.
pub fn supported_range() -> String {
    match (VERSIONS.first(), VERSIONS.last()) {
        (Some(a), Some(b)) => format!("{}.{}-{}.{}", a.major, a.minor, b.major, b.minor),
        _ => String::new(),
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
    fn the_table_covers_3_10_to_3_15_in_order() {
        let listed: Vec<_> = VERSIONS.iter().map(|v| (v.major, v.minor)).collect();
        assert_eq!(
            listed,
            [(3, 10), (3, 11), (3, 12), (3, 13), (3, 14), (3, 15)]
        );
        // No free-threaded build is read yet.
        assert!(VERSIONS.iter().all(|v| !v.free_threaded));
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
    fn stacks_are_read_on_3_10_to_3_12_by_table_and_on_3_13_by_debug_offsets() {
        assert_eq!(stack_facts(3, 12).map(|f| f.layout), Some(Some(LAYOUT_312)));
        assert_eq!(stack_facts(3, 13).map(|f| f.layout), Some(None));
        assert_eq!(stack_facts(3, 11).map(|f| f.layout), Some(Some(LAYOUT_311)));
        assert_eq!(stack_facts(3, 10).map(|f| f.layout), Some(Some(LAYOUT_310)));
        assert_eq!(stack_facts(3, 9), None);
        assert_eq!(stack_facts(3, 14).map(|f| f.layout), Some(None));
        assert_eq!(stack_facts(3, 15).map(|f| f.layout), Some(None));
        assert_eq!(stack_facts(3, 16), None);
    }

    #[test]
    fn only_3_10_walks_frame_objects_and_reads_the_older_line_table() {
        for (minor, kind, table) in [
            (10, FrameKind::Object310, LineTable::Lnotab310),
            (11, FrameKind::Interpreter311, LineTable::Locations311),
            (12, FrameKind::Interpreter311, LineTable::Locations311),
            (13, FrameKind::Interpreter311, LineTable::Locations311),
        ] {
            let f = stack_facts(3, minor).map(|f| (f.frame_kind, f.line_table));
            assert_eq!(f, Some((kind, table)), "3.{minor}");
        }
        // What 3.10 lacks is absent from its layout, not a made-up offset; 3.11 has each.
        let (old, new) = (LAYOUT_310, LAYOUT_311);
        assert_eq!(
            (
                old.native_thread_id,
                old.frame_owner,
                old.code_qualname,
                old.code_adaptive
            ),
            (None, None, None, None)
        );
        assert!(new.native_thread_id.is_some() && new.frame_owner.is_some());
        assert!(new.code_qualname.is_some() && new.code_adaptive.is_some());
        // 3.10's strings are 3.11's.
        assert_eq!(old.unicode, new.unicode);
        assert_eq!(STACK_FACTS_310.str_facts, STACK_FACTS_311.str_facts);
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
    fn thread_names_are_read_on_3_10_to_3_13() {
        assert_eq!(names_layout(3, 10), Some(&NAMES_310));
        assert_eq!(names_layout(3, 11), Some(&NAMES_311));
        assert_eq!(names_layout(3, 12), Some(&NAMES_312));
        assert_eq!(names_layout(3, 13), Some(&NAMES_313));
        assert_eq!(names_layout(3, 9), None);
        assert_eq!(names_layout(3, 14), Some(&NAMES_314));
        assert_eq!(names_layout(3, 15), Some(&NAMES_315));
        assert_eq!(names_layout(3, 16), None);
        // Each version keeps an instance's attributes in its own way.
        assert_eq!(NAMES_310.attrs, InstanceAttrs::DictOffset);
        assert!(matches!(
            NAMES_313.attrs,
            InstanceAttrs::InlineValues { .. }
        ));
        assert_eq!(NAMES_311.str_facts, STACK_FACTS_311.str_facts);
        assert_eq!(NAMES_313.str_facts, STACK_FACTS_313.str_facts);
    }

    #[test]
    fn every_version_with_debug_offsets_has_a_word_map_within_its_words() {
        for v in VERSIONS {
            let map = debug_words(v.major, v.minor);
            assert_eq!(map.is_some(), v.debug_offsets, "{}.{}", v.major, v.minor);
            if let Some(map) = map {
                assert!(map.indices().iter().all(|&i| i < map.words), "{}", v.minor);
            }
        }
        // Only 3.15 says which thread holds the GIL per thread.
        assert_eq!(DEBUG_WORDS_314.thread_holds_gil, None);
        assert!(DEBUG_WORDS_315.thread_holds_gil.is_some());
        assert_eq!(DEBUG_WORDS_314.thread_gil_requested, None);
        assert_eq!(DEBUG_WORDS_315.thread_gil_requested, Some(35));
    }

    #[test]
    fn a_cframe_names_the_one_before_it_where_threads_have_cframes() {
        for o in [LAYOUT_310, LAYOUT_311, LAYOUT_312] {
            assert_eq!(o.cframe_previous.is_some(), o.thread_cframe.is_some());
        }
        // `_PyCFrame`: `current_frame`, then `previous` (3.11: after `use_tracing`).
        for o in [LAYOUT_311, LAYOUT_312] {
            assert_eq!(o.cframe_previous, Some(o.current_frame + 8));
        }
    }

    #[test]
    fn frames_not_pythons_and_tagged_code_pointers_per_version() {
        let skip = |minor| stack_facts(3, minor).map(|f| (f.shim_owners, f.executable_tag_bits));
        assert_eq!(skip(11), Some((&[][..], 0)));
        assert_eq!(skip(13), Some((&[3][..], 0)));
        assert_eq!(skip(14), Some((&[3, 4][..], 3)));
        assert_eq!(skip(15), Some((&[3][..], 3)));
        // An entry frame ends every chain from 3.12, the first with shims to skip.
        for minor in 10..=15 {
            let shims = stack_facts(3, minor).map(|f| !f.shim_owners.is_empty());
            assert_eq!(shims, Some(minor >= 12), "3.{minor}");
        }
    }

    #[test]
    fn every_version_has_a_locals_row_and_3_13_on_read_words_within_their_maps() {
        for v in VERSIONS {
            let row = locals_layout(v.major, v.minor);
            let Some((_, words)) = row else {
                panic!("3.{} has no locals row", v.minor);
            };
            assert_eq!(words.is_some(), v.debug_offsets, "3.{}", v.minor);
            if let (Some(words), Some(map)) = (words, debug_words(v.major, v.minor)) {
                assert!(
                    words.indices().iter().all(|&i| i < map.words),
                    "3.{}",
                    v.minor
                );
            }
        }
        // Only 3.10 keeps locals in frame objects; 3.14 moves `localsplus` and tuple items.
        assert!(matches!(
            LOCALS_310.place,
            LocalsPlace::FrameObject310 { .. }
        ));
        assert_eq!((LOCALS_313.tuple_items, LOCALS_314.tuple_items), (24, 32));
        assert_eq!(LOCALS_WORDS_313.set_used, None);
        assert_eq!(locals_layout(3, 9), None);
        assert_eq!(locals_layout(3, 16), None);
    }

    #[test]
    fn version_hex_parts() {
        assert_eq!(hex_major_minor(0x030d00f0), (3, 13));
        assert_eq!(hex_major_minor(0x030a0df0), (3, 10));
    }
}
