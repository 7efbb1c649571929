"""Objects by type (``Profile(types=True)``) as text and as JSON: ``print_types`` (under the
stats table, ``--types``) and ``dump_types`` (``--types-json``, ``Profile.dump_types``); and
``profile_keywords``, the Profile keywords the command line's and ``%rprofile``'s --types
options ask for."""

import sys

TYPE_SORTS = {
    "alive": lambda kv: (-kv[1].alive, -kv[1].created, kv[0]),
    "created": lambda kv: (-kv[1].created, -kv[1].alive, kv[0]),
    "destroyed": lambda kv: (-kv[1].destroyed, -kv[1].created, kv[0]),
    "peak": lambda kv: (-kv[1].peak, -kv[1].alive, kv[0]),
    "name": lambda kv: kv[0],
}


def profile_keywords(only, builtins, gc, calls):
    """``Profile``'s keywords for --types with --types-only (`only`: strings, each a
    comma-separated list of type names), --types-builtins, --types-gc and --no-calls (`calls`
    false)."""
    names = [n.strip() for value in only for n in value.split(",") if n.strip()]
    return {"types": True, "types_builtins": builtins, "types_only": names or None,
            "types_gc": gc, "calls": calls}


def print_types(types, sort="alive", limit=20, file=None, functions=3):
    """Under the table: the types of `types` (``Profile.types_stats()``) by `sort`, each with
    the `functions` that made most of its objects still alive (else most of its objects), and
    the call stack that made most of its survivors."""
    from pstats import func_std_string

    if sort not in TYPE_SORTS:
        raise ValueError("sort must be one of %s, not %r" % (", ".join(TYPE_SORTS), sort))
    out = file if file is not None else sys.stdout
    rows = sorted(types.items(), key=TYPE_SORTS[sort])
    print("   Objects by type (created while profiling; alive = created - destroyed):",
          file=out)
    print("%12s %12s %12s %12s %10s  type" % ("alive", "created", "destroyed", "peak",
                                              "peak at s"), file=out)
    for name, t in rows[:limit]:
        print("%12d %12d %12d %12d %10.3f  %s" % (t.alive, t.created, t.destroyed, t.peak,
                                                  t.peak_time, name), file=out)
        makers = sorted(t.functions.items(), key=lambda kv: (-kv[1][1], -kv[1][0],
                                                             func_std_string(kv[0])))
        for func, (made, alive) in makers[:functions]:
            print("%12d %12d %12s %12s %10s    made by %s" % (alive, made, "", "", "",
                                                               func_std_string(func)), file=out)
        if t.stacks:
            stack, alive = next(iter(t.stacks.items()))  # the one that made most survivors
            print("%12d %12s %12s %12s %10s    alive from %s" % (alive, "", "", "", "",
                                                                 _chain(stack)), file=out)
    if len(rows) > limit:
        print("   ... %d more types" % (len(rows) - limit), file=out)
    print(file=out)


def _chain(stack, last=5):
    """A call stack's function names, outermost first, its `last` innermost ones (a
    built-in's name as pstats shows it)."""
    from pstats import func_std_string

    names = [name if file != "~" else func_std_string((file, line, name))
             for file, line, name in stack]
    if not names:
        return "(outside every profiled call)"
    return " > ".join((["..."] if len(names) > last else []) + names[-last:])


def types_document(types):
    """The JSON document of `types` (``Profile.types_stats()``): ``{"types": [...]}``, a
    type per entry, most objects alive first, each with the functions that made its objects,
    most alive first, and the call stacks (outermost first) that made most of its survivors."""
    rows = []
    for name, t in sorted(types.items(), key=TYPE_SORTS["alive"]):
        makers = sorted(t.functions.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0]))
        rows.append({
            "name": name, "created": t.created, "destroyed": t.destroyed, "alive": t.alive,
            "peak": t.peak, "peak_time": t.peak_time, "older_destroyed": t.older_destroyed,
            "functions": [{"file": file, "line": line, "function": func, "created": made,
                           "alive": alive}
                          for (file, line, func), (made, alive) in makers],
            "stacks": [{"alive": alive,
                        "stack": [{"file": file, "line": line, "function": func}
                                  for file, line, func in stack]}
                       for stack, alive in t.stacks.items()],
        })
    return {"types": rows}


def dump_types(types, path):
    """Writes `types` (``Profile.types_stats()``) at `path` as ``types_document`` says."""
    # Here: the command line imports this module before the program it profiles runs, whose
    # own `import json` would then be missing from its profile.
    import json

    with open(path, "w", encoding="utf-8") as f:
        json.dump(types_document(types), f, indent=1)
        f.write("\n")
