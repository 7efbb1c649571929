/* The cost floor of a profiler: hooks that receive the events cProfile uses and do nothing.
 * Built by bench/overhead.py with the C compiler of the interpreter being measured.
 *
 *   _floor.start_counting(), _floor.stop_counting()  -- callgrind client requests (no-ops
 *                            outside valgrind) around the measured span
 *   _floor.set_hook()        -- PyEval_SetProfile with a do-nothing C function (all versions)
 *   _floor.unset_hook()
 *   _floor.set_monitoring(clock=False, vectorcall=False)
 *   _floor.unset_monitoring()
 *                            -- 3.12+: sys.monitoring tool 2 with do-nothing callbacks for the
 *                               nine events cProfile registers: METH_FASTCALL builtins, or with
 *                               `vectorcall` objects CPython calls with no trampoline
 *   _floor.set_clock_hook(), set_monitoring(clock=True)
 *                            -- the same, but reading the clock rprofile reads by default here
 *                               (the TSC on x86-64, CLOCK_MONOTONIC elsewhere) on the events a
 *                               profiler must time, and keeping the reading: the least any
 *                               profiler that times calls can cost.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <time.h>
#if defined(__x86_64__)
#  include <x86intrin.h>
#endif
#if defined(__has_include)
#  if __has_include(<valgrind/callgrind.h>)
#    include <valgrind/callgrind.h>
#    define HAVE_CALLGRIND 1
#  endif
#endif

/* Client requests for bench/instructions.py: count instructions only around the workload. */
static PyObject *
start_counting(PyObject *mod, PyObject *unused)
{
#ifdef HAVE_CALLGRIND
    CALLGRIND_ZERO_STATS;
    CALLGRIND_START_INSTRUMENTATION;
#endif
    Py_RETURN_NONE;
}

static PyObject *
stop_counting(PyObject *mod, PyObject *unused)
{
#ifdef HAVE_CALLGRIND
    CALLGRIND_STOP_INSTRUMENTATION;
    CALLGRIND_DUMP_STATS;
#endif
    Py_RETURN_NONE;
}

static int
noop_hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    return 0;
}

/* Where clock readings go, so the compiler cannot drop them. */
static volatile long long last_reading;

static inline void
read_clock(void)
{
#if defined(__x86_64__)
    last_reading = (long long)__rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    last_reading = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
#endif
}

static int
clock_hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    read_clock();
    return 0;
}

static PyObject *
set_hook(PyObject *mod, PyObject *unused)
{
    PyEval_SetProfile(noop_hook, NULL);
    Py_RETURN_NONE;
}

static PyObject *
set_clock_hook(PyObject *mod, PyObject *unused)
{
    PyEval_SetProfile(clock_hook, NULL);
    Py_RETURN_NONE;
}

static PyObject *
unset_hook(PyObject *mod, PyObject *unused)
{
    PyEval_SetProfile(NULL, NULL);
    Py_RETURN_NONE;
}

#if PY_VERSION_HEX >= 0x030C0000
/* Callbacks as METH_FASTCALL builtins: what CPython's trampoline (recursion check, keyword
 * check) adds on every event is part of this floor. */
static PyObject *
noop_callback(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_RETURN_NONE;
}

static PyMethodDef noop_def = {"noop", (PyCFunction)(void (*)(void))noop_callback, METH_FASTCALL, NULL};

/* A profiler must time every PY_* event, but a CALL, C_RETURN or C_RAISE only when the callable
 * is not a Python function (those calls are timed by their own PY_START and PY_RETURN): the
 * clock floor reads the clock exactly there. */
static PyObject *
clock_py_callback(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    read_clock();
    Py_RETURN_NONE;
}

static PyObject *
clock_c_callback(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs >= 3 && Py_TYPE(args[2]) != &PyFunction_Type) read_clock();
    Py_RETURN_NONE;
}

static PyMethodDef clock_py_def = {"clock_py", (PyCFunction)(void (*)(void))clock_py_callback, METH_FASTCALL, NULL};
static PyMethodDef clock_c_def = {"clock_c", (PyCFunction)(void (*)(void))clock_c_callback, METH_FASTCALL, NULL};

/* The same callbacks as objects of a type with its own vectorcall slot: CPython calls the
 * function directly, with no builtin-function trampoline in between. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
} VcCallback;

static PyObject *
vc_noop(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_RETURN_NONE;
}

static PyObject *
vc_clock_py(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    read_clock();
    Py_RETURN_NONE;
}

static PyObject *
vc_clock_c(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) >= 3 && Py_TYPE(args[2]) != &PyFunction_Type) read_clock();
    Py_RETURN_NONE;
}

static PyTypeObject VcCallbackType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_floor.callback",
    .tp_basicsize = sizeof(VcCallback),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(VcCallback, vectorcall),
};

static PyObject *
vc_new(vectorcallfunc f)
{
    if (PyType_Ready(&VcCallbackType) < 0) return NULL;
    VcCallback *cb = PyObject_New(VcCallback, &VcCallbackType);
    if (!cb) return NULL;
    cb->vectorcall = f;
    return (PyObject *)cb;
}

static const char *events[] = {"PY_START", "PY_RESUME", "PY_THROW", "PY_RETURN", "PY_YIELD",
                               "PY_UNWIND", "CALL", "C_RETURN", "C_RAISE", NULL};
/* Index of the first event about a callable (CALL, C_RETURN, C_RAISE). */
#define FIRST_C_EVENT 6

static PyObject *
monitoring_call(const char *method, const char *fmt, ...)
{
    PyObject *sys = PyImport_ImportModule("sys");
    if (!sys) return NULL;
    PyObject *mon = PyObject_GetAttrString(sys, "monitoring");
    Py_DECREF(sys);
    if (!mon) return NULL;
    PyObject *meth = PyObject_GetAttrString(mon, method);
    Py_DECREF(mon);
    if (!meth) return NULL;
    va_list va;
    va_start(va, fmt);
    PyObject *args = Py_VaBuildValue(fmt, va);
    va_end(va);
    if (!args) { Py_DECREF(meth); return NULL; }
    PyObject *res = PyObject_CallObject(meth, args);
    Py_DECREF(meth);
    Py_DECREF(args);
    return res;
}

static long
event_bit(const char *name)
{
    PyObject *sys = PyImport_ImportModule("sys");
    PyObject *mon = PyObject_GetAttrString(sys, "monitoring");
    PyObject *evs = PyObject_GetAttrString(mon, "events");
    PyObject *v = PyObject_GetAttrString(evs, name);
    long bit = PyLong_AsLong(v);
    Py_DECREF(v); Py_DECREF(evs); Py_DECREF(mon); Py_DECREF(sys);
    return bit;
}

/* Registers `py_cb` for the PY_* events and `c_cb` for the others (references stolen). */
static PyObject *
register_all(PyObject *py_cb, PyObject *c_cb)
{
    PyObject *r = NULL;
    if (!py_cb || !c_cb) goto done;
    r = monitoring_call("use_tool_id", "(is)", 2, "floor");
    if (!r) goto done;
    Py_DECREF(r);
    long all = 0;
    for (int i = 0; events[i]; i++) {
        long bit = event_bit(events[i]);
        r = monitoring_call("register_callback", "(ilO)", 2, bit, i < FIRST_C_EVENT ? py_cb : c_cb);
        if (!r) goto done;
        Py_DECREF(r);
        all |= bit;
    }
    r = monitoring_call("set_events", "(il)", 2, all);
done:
    Py_XDECREF(py_cb);
    Py_XDECREF(c_cb);
    if (!r) return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* set_monitoring(clock=False, vectorcall=False) */
static PyObject *
set_monitoring(PyObject *mod, PyObject *args)
{
    int clock = 0, vectorcall = 0;
    if (!PyArg_ParseTuple(args, "|pp", &clock, &vectorcall)) return NULL;
    if (vectorcall)
        return register_all(vc_new(clock ? vc_clock_py : vc_noop), vc_new(clock ? vc_clock_c : vc_noop));
    return register_all(PyCFunction_New(clock ? &clock_py_def : &noop_def, NULL),
                        PyCFunction_New(clock ? &clock_c_def : &noop_def, NULL));
}

static PyObject *
unset_monitoring(PyObject *mod, PyObject *unused)
{
    for (int i = 0; events[i]; i++) {
        PyObject *r = monitoring_call("register_callback", "(ilO)", 2, event_bit(events[i]), Py_None);
        if (!r) return NULL;
        Py_DECREF(r);
    }
    PyObject *r = monitoring_call("set_events", "(ii)", 2, 0);
    if (!r) return NULL;
    Py_DECREF(r);
    r = monitoring_call("free_tool_id", "(i)", 2);
    if (!r) return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}
#endif

static PyMethodDef methods[] = {
    {"start_counting", start_counting, METH_NOARGS, NULL},
    {"stop_counting", stop_counting, METH_NOARGS, NULL},
    {"set_hook", set_hook, METH_NOARGS, NULL},
    {"unset_hook", unset_hook, METH_NOARGS, NULL},
    {"set_clock_hook", set_clock_hook, METH_NOARGS, NULL},
#if PY_VERSION_HEX >= 0x030C0000
    {"set_monitoring", set_monitoring, METH_VARARGS, NULL},
    {"unset_monitoring", unset_monitoring, METH_NOARGS, NULL},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_floor", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__floor(void)
{
    return PyModule_Create(&module);
}
