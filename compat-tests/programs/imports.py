"""Imports of already-loaded modules, and importlib.reload of a small module.

Everything imported here is loaded by the time the profiled runs happen (the module imports
or the warm-up run load it), so the profile shows the cache hits and not a first load.
"""

import importlib
import json  # noqa: F401

from . import _reload_target

COMPILES_DURING_RUN = True  # reload() makes new code objects for the module and its functions


def main():
    import json  # noqa: F811
    import json.decoder
    from json import decoder  # noqa: F401  (a package: runs _handle_fromlist)
    from os import path  # noqa: F401

    importlib.import_module("json")
    importlib.import_module("json.decoder")
    importlib.import_module("._reload_target", __package__)
    __import__("collections")
    module = importlib.reload(_reload_target)
    module.work(3)
