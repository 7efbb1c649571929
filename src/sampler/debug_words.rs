//! Where each offset the sampler takes sits in the `_Py_DebugOffsets` of 3.13, 3.14 and 3.15,
//! as data: one map per version (`versions` names them with the other per-version rows).

/// Where each offset the sampler takes sits in a version's `_Py_DebugOffsets`, as the index of
/// its `uint64_t` (the struct is all `uint64_t` after `cookie`, which takes word 0). The values
/// at these words are read from the target; only their places are written here, one row per
/// version: `offsetof(_Py_DebugOffsets, field) / 8` compiled against that version's
/// `include/python3.X/internal/pycore_debug_offsets.h` (3.13: `pycore_runtime.h`);
/// `tools/sampler-offsets.c` prints them. A field a version does not publish is `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DebugWordMap {
    /// The words to read: through the last one used.
    pub words: usize,
    /// Whether the build is free-threaded (other object and dict layouts).
    pub free_threaded: usize,
    pub runtime_interpreters_head: usize,
    pub interp_next: usize,
    pub interp_threads_head: usize,
    /// `interpreter_state.imports_modules`: `sys.modules`, for the thread-name reader.
    pub interp_imports_modules: usize,
    /// `interpreter_state.ceval_gil` (the pointer), `gil_runtime_state` (the interpreter's own
    /// GIL), and that GIL's `locked` and `last_holder`, these two from the interpreter's start.
    pub interp_ceval_gil: usize,
    pub interp_gil_runtime_state: usize,
    pub interp_gil_locked: usize,
    pub interp_gil_holder: usize,
    pub thread_next: usize,
    pub thread_interp: usize,
    pub thread_current_frame: usize,
    pub thread_thread_id: usize,
    pub thread_native_thread_id: usize,
    /// `thread_state.holds_gil` and `.gil_requested` (3.15+, `int`s): whether this thread holds
    /// its interpreter's GIL, and whether it waits for it.
    pub thread_holds_gil: Option<usize>,
    pub thread_gil_requested: Option<usize>,
    pub frame_previous: usize,
    pub frame_executable: usize,
    pub frame_instr_ptr: usize,
    pub frame_owner: usize,
    pub code_filename: usize,
    pub code_name: usize,
    pub code_qualname: usize,
    pub code_linetable: usize,
    pub code_firstlineno: usize,
    pub code_adaptive: usize,
    // What the thread-name reader takes (objects, types, dicts, ints, bytes, strings).
    pub pyobject_ob_type: usize,
    pub type_tp_flags: usize,
    /// `type_object.tp_dictoffset`, `heap_type_object.ht_cached_keys` (3.15+).
    pub type_tp_dictoffset: Option<usize>,
    pub heap_type_ht_cached_keys: Option<usize>,
    pub dict_ma_keys: usize,
    pub dict_ma_values: usize,
    pub long_lv_tag: usize,
    pub long_ob_digit: usize,
    pub bytes_ob_size: usize,
    pub bytes_ob_sval: usize,
    pub unicode_state: usize,
    pub unicode_length: usize,
    pub unicode_asciiobject_size: usize,
    /// `unicode_object.compactunicodeobject_size` (3.15+).
    pub unicode_compact_size: Option<usize>,
}

impl DebugWordMap {
    /// Every word index the map names, for checks that they lie within `words`.
    pub fn indices(&self) -> Vec<usize> {
        let mut all = vec![
            self.free_threaded,
            self.runtime_interpreters_head,
            self.interp_next,
            self.interp_threads_head,
            self.interp_imports_modules,
            self.interp_ceval_gil,
            self.interp_gil_runtime_state,
            self.interp_gil_locked,
            self.interp_gil_holder,
            self.thread_next,
            self.thread_interp,
            self.thread_current_frame,
            self.thread_thread_id,
            self.thread_native_thread_id,
            self.frame_previous,
            self.frame_executable,
            self.frame_instr_ptr,
            self.frame_owner,
            self.code_filename,
            self.code_name,
            self.code_qualname,
            self.code_linetable,
            self.code_firstlineno,
            self.code_adaptive,
            self.pyobject_ob_type,
            self.type_tp_flags,
            self.dict_ma_keys,
            self.dict_ma_values,
            self.long_lv_tag,
            self.long_ob_digit,
            self.bytes_ob_size,
            self.bytes_ob_sval,
            self.unicode_state,
            self.unicode_length,
            self.unicode_asciiobject_size,
        ];
        all.extend(
            [
                self.thread_holds_gil,
                self.thread_gil_requested,
                self.type_tp_dictoffset,
                self.heap_type_ht_cached_keys,
                self.unicode_compact_size,
            ]
            .into_iter()
            .flatten(),
        );
        all
    }
}

/// 3.13 (`include/python3.13/internal/pycore_runtime.h`, `struct _Py_DebugOffsets`: 73 words).
pub const DEBUG_WORDS_313: DebugWordMap = DebugWordMap {
    words: 71,
    free_threaded: 2,
    runtime_interpreters_head: 5,
    interp_next: 8,
    interp_threads_head: 9,
    interp_imports_modules: 11,
    interp_ceval_gil: 14,
    interp_gil_runtime_state: 15,
    interp_gil_locked: 17,
    interp_gil_holder: 18,
    thread_next: 21,
    thread_interp: 22,
    thread_current_frame: 23,
    thread_thread_id: 24,
    thread_native_thread_id: 25,
    thread_holds_gil: None,
    thread_gil_requested: None,
    frame_previous: 29,
    frame_executable: 30,
    frame_instr_ptr: 31,
    frame_owner: 33,
    code_filename: 35,
    code_name: 36,
    code_qualname: 37,
    code_linetable: 38,
    code_firstlineno: 39,
    code_adaptive: 43,
    pyobject_ob_type: 45,
    type_tp_flags: 49,
    type_tp_dictoffset: None,
    heap_type_ht_cached_keys: None,
    dict_ma_keys: 57,
    dict_ma_values: 58,
    long_lv_tag: 62,
    long_ob_digit: 63,
    bytes_ob_size: 65,
    bytes_ob_sval: 66,
    unicode_state: 68,
    unicode_length: 69,
    unicode_asciiobject_size: 70,
    unicode_compact_size: None,
};

/// 3.14 (`include/python3.14/internal/pycore_debug_offsets.h`: 95 words): the interpreter
/// state gains `threads_main`, the code object `co_tlbc`, and sets, floats, lists, tuples and
/// generators are published before the fields read after them.
pub const DEBUG_WORDS_314: DebugWordMap = DebugWordMap {
    words: 81,
    free_threaded: 2,
    runtime_interpreters_head: 5,
    interp_next: 8,
    interp_threads_head: 9,
    interp_imports_modules: 12,
    interp_ceval_gil: 15,
    interp_gil_runtime_state: 16,
    interp_gil_locked: 18,
    interp_gil_holder: 19,
    thread_next: 24,
    thread_interp: 25,
    thread_current_frame: 26,
    thread_thread_id: 27,
    thread_native_thread_id: 28,
    thread_holds_gil: None,
    thread_gil_requested: None,
    frame_previous: 32,
    frame_executable: 33,
    frame_instr_ptr: 34,
    frame_owner: 36,
    code_filename: 40,
    code_name: 41,
    code_qualname: 42,
    code_linetable: 43,
    code_firstlineno: 44,
    code_adaptive: 48,
    pyobject_ob_type: 51,
    type_tp_flags: 55,
    type_tp_dictoffset: None,
    heap_type_ht_cached_keys: None,
    dict_ma_keys: 67,
    dict_ma_values: 68,
    long_lv_tag: 72,
    long_ob_digit: 73,
    bytes_ob_size: 75,
    bytes_ob_sval: 76,
    unicode_state: 78,
    unicode_length: 79,
    unicode_asciiobject_size: 80,
    unicode_compact_size: None,
};

/// 3.15 (`include/python3.15/internal/pycore_debug_offsets.h`: 111 words): the thread state
/// gains `base_frame`, the last profiled frame, `holds_gil`, `gil_requested` and its
/// exceptions; types publish `tp_basicsize`, `tp_dictoffset` and `ht_cached_keys`.
pub const DEBUG_WORDS_315: DebugWordMap = DebugWordMap {
    words: 94,
    thread_thread_id: 30,
    thread_native_thread_id: 31,
    thread_holds_gil: Some(34),
    thread_gil_requested: Some(35),
    frame_previous: 40,
    frame_executable: 41,
    frame_instr_ptr: 42,
    frame_owner: 44,
    code_filename: 48,
    code_name: 49,
    code_qualname: 50,
    code_linetable: 51,
    code_firstlineno: 52,
    code_adaptive: 56,
    pyobject_ob_type: 59,
    type_tp_flags: 63,
    type_tp_dictoffset: Some(65),
    heap_type_ht_cached_keys: Some(67),
    dict_ma_keys: 79,
    dict_ma_values: 80,
    long_lv_tag: 84,
    long_ob_digit: 85,
    bytes_ob_size: 87,
    bytes_ob_sval: 88,
    unicode_state: 90,
    unicode_length: 91,
    unicode_asciiobject_size: 92,
    unicode_compact_size: Some(93),
    ..DEBUG_WORDS_314
};

/// The word map of a version that publishes `_Py_DebugOffsets`, `None` for the others.
pub fn debug_words(major: u8, minor: u8) -> Option<&'static DebugWordMap> {
    match (major, minor) {
        (3, 13) => Some(&DEBUG_WORDS_313),
        (3, 14) => Some(&DEBUG_WORDS_314),
        (3, 15) => Some(&DEBUG_WORDS_315),
        _ => None,
    }
}
