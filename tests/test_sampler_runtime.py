"""The sampler's first floor: finding another Python process's interpreter runtime from outside
(its memory maps, the interpreter file's symbols, and on 3.13+ the runtime's debug offsets)."""

import ctypes
import errno
import os
import subprocess
import sys

import pytest

from rprofile._rprofile import _find_runtime

# The child says where its own runtime is and which version it is, then waits for its stdin.
CHILD = """
import ctypes, sys
print(ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime")), sys.hexversion,
      flush=True)
sys.stdin.read()
"""


def _own_runtime_address():
    return ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))


@pytest.fixture
def python_child():
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        address, hexversion = map(int, child.stdout.readline().split())
        yield child, address, hexversion
    finally:
        child.kill()
        child.wait()
        child.stdin.close()
        child.stdout.close()


def test_a_python_child_runtime_is_found_where_it_says_it_is(python_child):
    child, address, hexversion = python_child
    found, library, version = _find_runtime(child.pid)
    assert found == address
    assert os.path.isfile(library)
    name = os.path.basename(library)
    assert f"python{sys.version_info.major}.{sys.version_info.minor}" in name, library
    if sys.version_info >= (3, 13):
        assert version == hexversion
    else:
        assert version is None


def test_its_own_runtime_is_found_too():
    found, _, version = _find_runtime(os.getpid())
    assert found == _own_runtime_address()
    assert version == (sys.hexversion if sys.version_info >= (3, 13) else None)


def test_a_pid_that_does_not_exist_is_process_lookup_error():
    # Pids are below pid_max, so pid_max itself never names a process.
    with open("/proc/sys/kernel/pid_max") as f:
        missing = int(f.read())
    with pytest.raises(OSError) as info:
        _find_runtime(missing)
    assert info.value.errno == errno.ESRCH
    assert isinstance(info.value, ProcessLookupError)


def test_a_process_that_is_not_python_is_a_clear_value_error():
    child = subprocess.Popen(["sleep", "30"])
    try:
        with pytest.raises(ValueError, match=rf"process {child.pid} is not Python"):
            _find_runtime(child.pid)
    finally:
        child.kill()
        child.wait()


def test_a_negative_pid_is_an_error_not_a_crash():
    with pytest.raises((OSError, ValueError)):
        _find_runtime(-1)
