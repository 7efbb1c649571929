/* Prints what the sampler's per-version rows in src/sampler/versions.rs take from a Python's
 * headers: where each field it reads sits in `_Py_DebugOffsets` (word index: offsetof / 8), the
 * struct offsets that are not published there (the GIL's place, the dict and instance layouts),
 * and the frame owner values and tag bits. Compile it against one version's headers:
 *
 *   S=/work/main/.pythons/sid/usr/include   # or a pyenv interpreter's include/
 *   gcc -w -DPY315 -I$S/python3.15 -I$S -I$S/x86_64-linux-gnu/python3.15 \
 *       tools/sampler-offsets.c -o /tmp/offsets && /tmp/offsets
 *
 * -DPY315 adds the fields 3.15 first publishes; leave it out for 3.14. (3.13's struct is in
 * pycore_runtime.h: drop the pycore_debug_offsets.h include there.) */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include "internal/pycore_debug_offsets.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#include "internal/pycore_frame.h"
#include "internal/pycore_tstate.h"
#include "internal/pycore_dict.h"
#include "internal/pycore_moduleobject.h"
#include "internal/pycore_object.h"
#define W(f) printf("W %-45s %zu\n", #f, offsetof(_Py_DebugOffsets, f) / 8)
#define O(t, f) printf("O %-45s %zu\n", #t "." #f, offsetof(t, f))
#define Z(t) printf("Z %-45s %zu\n", #t, sizeof(t))
#define V(x) printf("V %-45s %ld\n", #x, (long)(x))
int main(void) {
  printf("words %zu\n", sizeof(_Py_DebugOffsets)/8);
  W(free_threaded); W(runtime_state.interpreters_head);
  W(interpreter_state.next); W(interpreter_state.threads_head); W(interpreter_state.threads_main);
  W(interpreter_state.imports_modules); W(interpreter_state.ceval_gil); W(interpreter_state.gil_runtime_state);
  W(interpreter_state.gil_runtime_state_locked); W(interpreter_state.gil_runtime_state_holder);
  W(thread_state.next); W(thread_state.interp); W(thread_state.current_frame);
  W(thread_state.thread_id); W(thread_state.native_thread_id);
#ifdef PY315
  W(thread_state.base_frame); W(thread_state.holds_gil); W(thread_state.gil_requested);
  W(type_object.tp_dictoffset); W(type_object.tp_basicsize); W(heap_type_object.ht_cached_keys);
  W(unicode_object.compactunicodeobject_size);
#endif
  W(interpreter_frame.previous); W(interpreter_frame.executable); W(interpreter_frame.instr_ptr);
  W(interpreter_frame.owner); W(interpreter_frame.size);
  W(code_object.filename); W(code_object.name); W(code_object.qualname); W(code_object.linetable);
  W(code_object.firstlineno); W(code_object.co_code_adaptive);
  W(pyobject.ob_type); W(type_object.tp_flags); W(dict_object.ma_keys); W(dict_object.ma_values);
  W(long_object.lv_tag); W(long_object.ob_digit); W(bytes_object.ob_size); W(bytes_object.ob_sval);
  W(unicode_object.state); W(unicode_object.length); W(unicode_object.asciiobject_size);
  O(_PyRuntimeState, interpreters.head); O(_PyRuntimeState, interpreters.main);
  O(PyInterpreterState, next); O(PyInterpreterState, threads.head); O(PyInterpreterState, imports.modules);
  O(PyInterpreterState, ceval.gil); O(PyInterpreterState, _gil);
  O(struct _gil_runtime_state, last_holder); O(struct _gil_runtime_state, locked);
  O(PyThreadState, next); O(PyThreadState, interp); O(PyThreadState, current_frame);
  O(PyThreadState, thread_id); O(PyThreadState, native_thread_id);
#ifdef PY315
  O(PyThreadState, holds_gil); O(PyThreadState, gil_requested); O(PyThreadState, base_frame);
#endif
  Z(_PyInterpreterFrame); O(_PyInterpreterFrame, previous); O(_PyInterpreterFrame, f_executable);
  O(_PyInterpreterFrame, instr_ptr); O(_PyInterpreterFrame, owner);
  O(PyCodeObject, co_filename); O(PyCodeObject, co_name); O(PyCodeObject, co_qualname);
  O(PyCodeObject, co_linetable); O(PyCodeObject, co_firstlineno); O(PyCodeObject, co_code_adaptive);
  V(FRAME_OWNED_BY_THREAD); V(FRAME_OWNED_BY_GENERATOR); V(FRAME_OWNED_BY_FRAME_OBJECT);
  V(FRAME_OWNED_BY_INTERPRETER);
#ifndef PY315
  V(FRAME_OWNED_BY_CSTACK);
#endif
  V(Py_TAG_BITS);
  O(PyDictObject, ma_keys); O(PyDictObject, ma_values); O(PyDictObject, _ma_watcher_tag);
  O(PyDictKeysObject, dk_log2_size); O(PyDictKeysObject, dk_log2_index_bytes); O(PyDictKeysObject, dk_kind);
  O(PyDictKeysObject, dk_nentries); O(PyDictKeysObject, dk_indices);
  Z(PyDictKeyEntry); O(PyDictKeyEntry, me_key); O(PyDictKeyEntry, me_value);
  Z(PyDictUnicodeEntry); O(PyDictUnicodeEntry, me_key); O(PyDictUnicodeEntry, me_value);
  O(PyDictValues, capacity); O(PyDictValues, valid); O(PyDictValues, values);
  V(DICT_KEYS_GENERAL);
  O(PyTypeObject, tp_flags); O(PyTypeObject, tp_dictoffset); O(PyHeapTypeObject, ht_cached_keys);
  O(PyModuleObject, md_dict); V(MANAGED_DICT_OFFSET); V(Py_TPFLAGS_INLINE_VALUES); V(Py_TPFLAGS_MANAGED_DICT);
  O(PyLongObject, long_value.lv_tag); O(PyLongObject, long_value.ob_digit); V(PyLong_SHIFT);
  V(_PyLong_NON_SIZE_BITS);
  O(PyBytesObject, ob_sval); O(PyVarObject, ob_size);
  Z(PyASCIIObject); Z(PyCompactUnicodeObject); O(PyASCIIObject, state); O(PyASCIIObject, length);
  O(PyObject, ob_type);
  return 0;
}
