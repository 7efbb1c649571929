"""Type stubs for rprofile's native core (the counterpart of _lsprof)."""

from types import CodeType
from typing import Any, Callable, Final

class profiler_entry(tuple[Any, ...]):
    code: Final[CodeType | str]
    callcount: Final[int]
    reccallcount: Final[int]
    totaltime: Final[float]
    inlinetime: Final[float]
    calls: Final[list[profiler_subentry] | None]

class profiler_subentry(tuple[Any, ...]):
    code: Final[CodeType | str]
    callcount: Final[int]
    reccallcount: Final[int]
    totaltime: Final[float]
    inlinetime: Final[float]

class Profiler:
    """Native profiler; its type is named ``_lsprof.Profiler`` so its own rows read as cProfile's."""

    bias: float
    def __init__(
        self,
        timer: Callable[[], float | int | tuple[float, ...] | list[float]] | None = None,
        timeunit: float = 0.0,
        subcalls: bool = True,
        builtins: bool = True,
        *,
        bias: float = 0.0,
    ) -> None: ...
    def enable(self, subcalls: bool = ..., builtins: bool = ...) -> None: ...
    def disable(self) -> None: ...
    def clear(self) -> None: ...
    def getstats(self) -> list[profiler_entry]: ...
    def _take_snapshot(self) -> Snapshot: ...
    @property
    def _timer(self) -> Callable[[], Any] | None: ...
    @property
    def _timeunit(self) -> float: ...

class Snapshot:
    """A profiler's totals at one moment; the stats dict or its marshal bytes on demand."""

    def to_dict(
        self,
    ) -> dict[tuple[str, int, str], tuple[int, int, float, float, dict[tuple[str, int, str], tuple[int, int, float, float]]]]: ...
    def marshal(self) -> bytes: ...
