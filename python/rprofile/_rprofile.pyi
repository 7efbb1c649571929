"""Type stubs for rprofile's native core (the counterpart of _lsprof)."""

import os
from types import CodeType
from typing import Any, Callable, Final, Literal

class _CodeObjectData(ValueError): ...

def _marshal_loads(data: bytes) -> Any: ...

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
        timer: Callable[[], float | int | tuple[float, ...] | list[float]]
        | Literal["wall", "cpu", "thread_cpu"]
        | None = None,
        timeunit: float = 0.0,
        subcalls: bool = True,
        builtins: bool = True,
        *,
        bias: float = 0.0,
        threads: bool = False,
        async_aware: bool = False,
        timeline: bool = False,
        buffer_size: int = 1000000,
        when_full: Literal["keep_newest", "keep_oldest"] = "keep_newest",
        memory: bool = False,
        rss: bool = False,
        rss_interval: float = 0.01,
        rss_trigger: int | None = None,
        subprocesses: bool | str | os.PathLike[str] = False,
        types: bool = False,
        types_builtins: bool = False,
        types_only: list[str] | str | None = None,
        types_gc: bool = False,
    ) -> None: ...
    def enable(self, subcalls: bool = ..., builtins: bool = ...) -> None: ...
    def disable(self) -> None: ...
    def clear(self) -> None: ...
    def getstats(self) -> list[profiler_entry]: ...
    def _take_snapshot(self) -> Snapshot: ...
    def _options(self) -> dict[str, Any]: ...
    @property
    def subprocesses(self) -> bool | str | os.PathLike[str]: ...
    def _lookup_caches(self) -> tuple[int, int, int, int]: ...
    def _memory_stats(self) -> list[tuple[tuple[str, int, str], int, int, int, int, int]] | None: ...
    def _types_stats(
        self,
        stacks: int = 20,
    ) -> list[
        tuple[str, int, int, int, float, int, list[tuple[tuple[str, int, str], int, int]],
              list[tuple[int, tuple[tuple[str, int, str], ...]]]]
    ] | None: ...
    def _timeline_info(self) -> tuple[int, int, int, str, int, int] | None: ...
    def _timeline_columns(
        self,
    ) -> tuple[
        bytes,
        bytes,
        bytes,
        bytes,
        bytes,
        bytes,
        bytes,
        bytes,
        list[tuple[str, int, str]],
        list[tuple[int, str]],
        list[str],
    ] | None: ...
    def _timeline_write(
        self, format: Literal["chrome", "speedscope"], path: str | bytes, title: str
    ) -> None: ...
    def _timeline_paths(self) -> CallPaths | None: ...
    @property
    def clock(self) -> Literal["wall", "cpu", "thread_cpu"] | None: ...
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
    def stats_core(self) -> StatsCore: ...
    def __reduce__(self) -> tuple[Callable[[bytes], Snapshot], tuple[bytes]]: ...
    @classmethod
    def _from_pickle(cls, data: bytes) -> Snapshot: ...

class FuncList:
    """A listing of functions of a StatsCore, narrowed by restrictions."""

    def __len__(self) -> int: ...
    def head(self, n: int) -> FuncList: ...

class StatsCore:
    """The Stats engine's data: one stats dict, its sort order and callee lists."""

    def __init__(self) -> None: ...
    @staticmethod
    def from_bytes(data: bytes) -> StatsCore | None: ...
    @staticmethod
    def from_dict(d: object) -> StatsCore | None: ...
    def __len__(self) -> int: ...
    def top(self, n: int) -> StatsCore: ...
    sampled: bool
    def to_dict(self) -> dict[Any, Any]: ...
    def format_call_heading(self, width: int, title: str, columns: str = ...) -> str: ...
    def dump(self) -> bytes: ...
    def _to_pickle(self, keys: list[Any] | None = None) -> bytes: ...
    @staticmethod
    def _from_pickle(data: bytes) -> StatsCore: ...
    @property
    def ordered(self) -> bool: ...

class _testing:
    """Faces of internals that only the tests call."""
    @staticmethod
    def _f8(x: float) -> str: ...
    @staticmethod
    def _regex_translate(pattern: str) -> str | None: ...
    @staticmethod
    def _thread_stacks(pid: int) -> list[tuple[int, list[tuple[str, int | None, str]]]]: ...
    @staticmethod
    def _thread_names(pid: int) -> dict[int, str]: ...
    @staticmethod
    def _gil_holder(pid: int) -> int | None: ...
    @staticmethod
    def _running_threads(pid: int) -> list[int]: ...

class CallPaths:
    """A timeline's call paths, folded for the HTML report."""

    def __len__(self) -> int: ...

def _write_report(
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    stats: StatsCore | None = None,
    title: str = "",
    files: list[str] = ...,
    *,
    before: StatsCore | None = None,
    before_title: str = "",
    sampled: Any = None,
    threads: list[tuple[str, StatsCore]] = ...,
    memory: list[tuple[str, int, str, int, int, int, int, int]] = ...,
    types: list[
        tuple[str, int, int, int, float, int, list[tuple[str, int, str, int, int]],
              list[tuple[int, list[tuple[str, int, str]]]]]
    ] = ...,
    paths: CallPaths | None = None,
    dropped: tuple[int, int, str] | None = None,
    sort: str = "tottime",
    stall: float | None = None,
) -> None: ...
def _write_pprof(
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    stats: StatsCore | None = None,
    *,
    sampled: Any = None,
    paths: CallPaths | None = None,
    threads: list[tuple[str, StatsCore]] = ...,
    comments: list[str] = ...,
) -> None: ...
def _compare_table(before: StatsCore, after: StatsCore, limit: int = 30, width: int = 100) -> str: ...
def _watch_sigterm() -> bool: ...
# The highest sampling rate a Sampler takes (samples a second).
MAX_SAMPLING_RATE: float
