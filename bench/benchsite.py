"""Comparison tools the benchmarks install from PyPI (yappi, viztracer, memray, pyinstrument,
py-spy's binary) go into bench/.build/py3.X/site with `pip install --target`, once per
interpreter, leaving the dev environment as it is."""

import os
import subprocess
import sys
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))


def site_dir():
    return os.path.join(HERE, ".build", "py%d.%d" % sys.version_info[:2], "site")


def ensure(package, module=None):
    """Returns the site folder once `module` (default: the package's name) imports from it,
    installing the package first if needed; None (saying why on stderr) if it cannot be had."""
    folder = site_dir()
    check = [sys.executable, "-c", "import sys; sys.path.insert(0, %r); import %s" % (
        folder, module or package)]
    if subprocess.run(check, capture_output=True).returncode == 0:
        return folder
    # A C extension built from source includes <pyconfig.h>, which Debian's (3.14/3.15 here)
    # points at a multiarch folder beside the include folder: one level up is searched too.
    include = os.path.dirname(sysconfig.get_paths()["include"])
    env = dict(os.environ, CFLAGS=(os.environ.get("CFLAGS", "") + " -I" + include).strip())
    res = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target", folder,
                          package], capture_output=True, text=True, env=env)
    if res.returncode == 0 and subprocess.run(check, capture_output=True).returncode == 0:
        return folder
    _cannot(package, res)
    return None


def ensure_tool(package, exe):
    """The path of the program `exe` a package ships (py-spy: a binary in its wheel), installed
    into the site folder's bin/ if needed; None (saying why on stderr) if it cannot be had."""
    path = os.path.join(site_dir(), "bin", exe)
    check = [path, "--version"]
    if os.path.exists(path) and subprocess.run(check, capture_output=True).returncode == 0:
        return path
    res = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target",
                          site_dir(), package], capture_output=True, text=True)
    if res.returncode == 0 and os.path.exists(path) and \
            subprocess.run(check, capture_output=True).returncode == 0:
        return path
    _cannot(package, res)
    return None


def _cannot(package, res):
    print("%s does not install for Python %d.%d, leaving its mode out:\n%s" % (
        (package,) + sys.version_info[:2] + ((res.stderr or "").strip()[-2000:],)),
        file=sys.stderr)
