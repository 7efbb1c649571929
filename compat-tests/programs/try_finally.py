"""try/finally: returns, breaks and exceptions passing through finally blocks."""


def note(log, what):
    log.append(what)


def returns_in_try(log):
    try:
        return len(log)
    finally:
        note(log, "finally after return")


def raises_through(log):
    try:
        raise ValueError("through")
    finally:
        note(log, "finally during unwind")


def breaks_out(log):
    for i in range(5):
        try:
            if i == 2:
                break
        finally:
            note(log, i)


def overriding_return(log):
    try:
        raise KeyError("lost")
    finally:
        return note(log, "swallowed")  # noqa: B012


def main():
    log = []
    returns_in_try(log)
    try:
        raises_through(log)
    except ValueError:
        pass
    breaks_out(log)
    overriding_return(log)
