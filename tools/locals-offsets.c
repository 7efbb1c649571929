/* Prints what `rprofile dump --locals` takes from a Python's headers (src/sampler/versions.rs,
 * `LocalsLayout`): where a frame keeps its local variables and their names, the kinds that mark
 * cells, and the object fields the value formatter reads. Compiles against every supported
 * version's headers (3.10 to 3.15):
 *
 *   I=$(pyenv root)/versions/3.12.1/include/python3.12
 *   gcc -w -I$I tools/locals-offsets.c -o /tmp/locals && /tmp/locals
 *   S=/work/main/.pythons/sid/usr/include   # 3.14, 3.15
 *   gcc -w -I$S/python3.15 -I$S -I$S/x86_64-linux-gnu/python3.15 tools/locals-offsets.c ...
 *
 * On 3.13+ the lines marked W are the word indices in `_Py_DebugOffsets` of the fields it
 * publishes (see tools/sampler-offsets.c). */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_frame.h"
#include "internal/pycore_code.h"
#endif
#if PY_VERSION_HEX >= 0x030e0000
#include "internal/pycore_interpframe.h"
#include "internal/pycore_debug_offsets.h"
#elif PY_VERSION_HEX >= 0x030d0000
#include "internal/pycore_runtime.h"
#endif
#if PY_VERSION_HEX < 0x030b0000
#include "frameobject.h"
#endif
#define W(f) printf("W %-45s %zu\n", #f, offsetof(_Py_DebugOffsets, f) / 8)
#define O(t, f) printf("O %-45s %zu\n", #t "." #f, offsetof(t, f))
#define V(x) printf("V %-45s %ld\n", #x, (long)(x))
int main(void) {
  printf("version %x\n", PY_VERSION_HEX);
#if PY_VERSION_HEX >= 0x030b0000
  O(_PyInterpreterFrame, localsplus);
  O(PyCodeObject, co_nlocalsplus); O(PyCodeObject, co_localsplusnames);
  O(PyCodeObject, co_localspluskinds);
  V(CO_FAST_LOCAL); V(CO_FAST_CELL); V(CO_FAST_FREE);
#else
  O(PyFrameObject, f_localsplus); O(PyCodeObject, co_nlocals); O(PyCodeObject, co_varnames);
  O(PyCodeObject, co_cellvars); O(PyCodeObject, co_freevars);
#endif
  O(PyTupleObject, ob_item); O(PyTupleObject, ob_base.ob_size);
  O(PyListObject, ob_base.ob_size); O(PyDictObject, ma_used); O(PySetObject, used);
  O(PyFloatObject, ob_fval); O(PyCellObject, ob_ref); O(PyTypeObject, tp_name);
  V(Py_TPFLAGS_HEAPTYPE);
#if PY_VERSION_HEX >= 0x030d0000
  W(interpreter_frame.localsplus); W(code_object.localsplusnames);
  W(code_object.localspluskinds); W(type_object.tp_name); W(tuple_object.ob_item);
  W(tuple_object.ob_size); W(list_object.ob_size); W(float_object.ob_fval);
#endif
#if PY_VERSION_HEX >= 0x030e0000
  W(set_object.used);
#endif
  return 0;
}
