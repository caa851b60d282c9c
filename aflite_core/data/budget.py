"""The memory budget of every read: how many bytes one parse may materialise, and all parses in flight together.

A file of a few megabytes can expand to gigabytes once decompressed and parsed (a zstd Parquet of zero columns,
dictionary-encoded strings, JSON Lines of nested objects). Every reader of :mod:`aflite_core.data` therefore
opens a :func:`parse` before it allocates and *reserves* the bytes it is about to materialise - the values it
reads plus the pandas / numpy copy it hands back - as soon as it knows them (from a footer or a header) or as it
goes (a streamed parse, batch by batch). A reservation that would take one parse over its budget
(:attr:`BudgetLimits.parse_bytes`, default 2 GiB), or every parse of the process over theirs
(:attr:`BudgetLimits.parses_bytes`, default 4 GiB; a server runs many sessions in one process), raises
:class:`MemoryBudgetError` with one sentence: what, how big, the limit, how to raise it. A parse over the
server-wide budget first waits up to :attr:`BudgetLimits.wait_seconds` for other parses to finish.

The reservations of a parse are released when it ends (its ``with`` block), whatever happens: the ledger counts
reads in progress, not what the process keeps afterwards (the app's stores bound that).

Examples
--------
>>> from aflite_core.data import budget
>>> with budget.parse("'demo.csv'") as p:
...     p.reserve(1_000, "rows")
...     p.reserved
1000
>>> budget.in_flight_bytes()
0
>>> old = budget.set_budgets(parse_bytes=1_000, advice="raise it")
>>> try:
...     with budget.parse("'big.csv'") as p:
...         p.reserve(5_000)
... except budget.MemoryBudgetError as exc:
...     print(exc)
'big.csv' needs 4.9 KB of memory to read, more than the 1000 bytes one read may use; raise it.
>>> _ = budget.set_budgets(**old.as_dict())
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace

__all__ = [
    "DEFAULT_PARSES_BYTES",
    "DEFAULT_PARSE_BYTES",
    "DEFAULT_WAIT_SECONDS",
    "BudgetLimits",
    "MemoryBudgetError",
    "Parse",
    "current",
    "human_bytes",
    "in_flight_bytes",
    "limits",
    "parse",
    "set_budgets",
]

MiB = 2**20
#: bytes one parse may materialise (values read + the pandas / numpy copy)
DEFAULT_PARSE_BYTES = 2048 * MiB
#: bytes every parse in flight in this process may hold together
DEFAULT_PARSES_BYTES = 4096 * MiB
#: seconds a parse waits for others to finish when the server-wide budget is full
DEFAULT_WAIT_SECONDS = 5.0
#: how to raise the budgets, said at the end of a refusal (the CLI and the app say it their way)
DEFAULT_ADVICE = "raise the budget with aflite_core.data.budget.set_budgets(parse_bytes=...)"
DEFAULT_SERVER_ADVICE = "try again in a moment, or raise it with aflite_core.data.budget.set_budgets(parses_bytes=...)"


def human_bytes(n: float) -> str:
    """A byte count for people, in binary units (``1.5 GB`` is 1.5 × 2³⁰ bytes).

    >>> human_bytes(512), human_bytes(3 * 2**20), human_bytes(5 * 2**40)
    ('512 bytes', '3.0 MB', '5120.0 GB')
    """
    n = float(n)
    for unit in ("bytes", "KB", "MB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


class MemoryBudgetError(ValueError):
    """A read refused because it would materialise more bytes than its budget allows (one sentence).

    Attributes
    ----------
    needed : int
        Bytes the read needs (at least: a streamed parse stops counting at the budget).
    limit : int
        The budget it ran against.
    scope : {"parse", "server"}
        ``"parse"``: one read's budget; ``"server"``: every read in flight together.
    """

    def __init__(self, message: str, *, needed: int, limit: int, scope: str = "parse") -> None:
        super().__init__(message)
        self.needed = int(needed)
        self.limit = int(limit)
        self.scope = scope


@dataclass(frozen=True)
class BudgetLimits:
    """The budgets in force (:func:`limits`); change them with :func:`set_budgets`.

    Attributes
    ----------
    parse_bytes : int
        Bytes one parse may materialise. Default 2 GiB.
    parses_bytes : int
        Bytes every parse in flight in this process may reserve together. Default 4 GiB.
    wait_seconds : float
        Seconds a parse waits for others when ``parses_bytes`` is full, before it is refused. Default 5.
    advice : str
        How to raise ``parse_bytes``, the end of a refusal.
    server_advice : str
        What to do when ``parses_bytes`` is full, the end of that refusal.
    """

    parse_bytes: int = DEFAULT_PARSE_BYTES
    parses_bytes: int = DEFAULT_PARSES_BYTES
    wait_seconds: float = DEFAULT_WAIT_SECONDS
    advice: str = DEFAULT_ADVICE
    server_advice: str = DEFAULT_SERVER_ADVICE

    def __post_init__(self) -> None:
        for name in ("parse_bytes", "parses_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"The budget's {name} must be a positive whole number of bytes. Got {value!r}.")
        if isinstance(self.wait_seconds, bool) or not isinstance(self.wait_seconds, int | float):
            raise ValueError(f"The budget's wait_seconds must be a number. Got {self.wait_seconds!r}.")
        if not 0 <= self.wait_seconds < float("inf"):
            raise ValueError(f"The budget's wait_seconds must be finite and not negative. Got {self.wait_seconds!r}.")

    def as_dict(self) -> dict:
        """The fields as keyword arguments of :func:`set_budgets` (to restore them)."""
        return asdict(self)


class _Ledger:
    """Bytes reserved by every parse in flight in this process (thread-safe)."""

    def __init__(self) -> None:
        self.held = 0
        self.cond = threading.Condition()
        self.limits = BudgetLimits()


_LEDGER = _Ledger()
_CURRENT: contextvars.ContextVar[Parse | None] = contextvars.ContextVar("aflite_parse", default=None)


def limits() -> BudgetLimits:
    """The budgets in force."""
    return _LEDGER.limits


def set_budgets(
    *,
    parse_bytes: int | None = None,
    parses_bytes: int | None = None,
    wait_seconds: float | None = None,
    advice: str | None = None,
    server_advice: str | None = None,
) -> BudgetLimits:
    """Set the budgets of every later parse (those given; the others stay); returns the previous ones.

    Parameters
    ----------
    parse_bytes : int, optional
        Bytes one parse may materialise.
    parses_bytes : int, optional
        Bytes all parses in flight may reserve together.
    wait_seconds : float, optional
        Seconds a parse waits when the server-wide budget is full.
    advice, server_advice : str, optional
        How a refusal says to raise the per-parse budget / what to do when the server-wide one is full
        (e.g. the CLI names its option, the app its environment variable).

    Returns
    -------
    BudgetLimits
        The budgets before the call (``set_budgets(**old.as_dict())`` restores them).

    Raises
    ------
    ValueError
        A budget that is not a positive whole number, or a negative wait.
    """
    given = {
        k: v
        for k, v in dict(
            parse_bytes=parse_bytes,
            parses_bytes=parses_bytes,
            wait_seconds=wait_seconds,
            advice=advice,
            server_advice=server_advice,
        ).items()
        if v is not None
    }
    with _LEDGER.cond:
        old = _LEDGER.limits
        _LEDGER.limits = replace(old, **given)
        _LEDGER.cond.notify_all()
    return old


def in_flight_bytes() -> int:
    """Bytes reserved right now by every parse in flight in this process."""
    with _LEDGER.cond:
        return _LEDGER.held


class Parse:
    """One read in progress: what it has reserved so far, against its budget and the server's.

    Made by :func:`parse`; readers call :meth:`reserve` before they allocate, and :meth:`release` for
    what they have freed again (a batch counted and dropped).
    """

    def __init__(self, label: str, limit: int) -> None:
        self.label = label
        self.limit = int(limit)
        self.reserved = 0
        self.peak = 0

    def reserve(self, n: int, what: str = "", *, partial: bool = False) -> None:
        """Reserve ``n`` more bytes, or raise :class:`MemoryBudgetError` (nothing is reserved then).

        Parameters
        ----------
        n : int
            Bytes about to be materialised.
        what : str
            What they are, put in brackets in the refusal (e.g. ``"10,000 columns × 60,000 rows"``).
        partial : bool, default=False
            The count is a running one that stopped here: the refusal says "at least".
        """
        n = max(0, int(n))
        need = self.reserved + n
        detail = f" ({what})" if what else ""
        if need > self.limit:
            lim = limits()
            amount = f"at least {human_bytes(need)}" if partial else human_bytes(need)
            raise MemoryBudgetError(
                f"{self.label} needs {amount} of memory to read{detail}, more than the "
                f"{human_bytes(self.limit)} one read may use; {lim.advice}.",
                needed=need,
                limit=self.limit,
            )
        ledger = _LEDGER
        with ledger.cond:
            deadline = None
            while ledger.held + n > ledger.limits.parses_bytes:
                if n > ledger.limits.parses_bytes:
                    deadline = 0.0
                now = time.monotonic()
                if deadline is None:
                    deadline = now + ledger.limits.wait_seconds
                if now >= deadline:
                    lim = ledger.limits
                    raise MemoryBudgetError(
                        f"{self.label} needs {human_bytes(need)} of memory to read{detail}, but the reads in "
                        f"progress already hold {human_bytes(ledger.held - self.reserved)} of the "
                        f"{human_bytes(lim.parses_bytes)} all reads may use together; {lim.server_advice}.",
                        needed=need,
                        limit=lim.parses_bytes,
                        scope="server",
                    )
                ledger.cond.wait(timeout=deadline - now)
            ledger.held += n
        self.reserved = need
        self.peak = max(self.peak, need)

    def release(self, n: int) -> None:
        """Give back ``n`` reserved bytes (materialised and freed again)."""
        n = min(max(0, int(n)), self.reserved)
        if not n:
            return
        self.reserved -= n
        with _LEDGER.cond:
            _LEDGER.held -= n
            _LEDGER.cond.notify_all()

    @property
    def room(self) -> int:
        """Bytes this parse may still reserve."""
        return max(0, self.limit - self.reserved)


@contextmanager
def parse(label: str, *, limit: int | None = None) -> Iterator[Parse]:
    """A read in progress: reserve what it materialises, released when the block ends.

    A parse opened inside another one in the same thread or context (a table read by a dataset loader)
    joins it: one budget for the whole read.

    Parameters
    ----------
    label : str
        What is read, as messages name it (``"Table file 'x.parquet'"``).
    limit : int, optional
        This parse's budget (default: :attr:`BudgetLimits.parse_bytes`).

    Yields
    ------
    Parse
    """
    outer = _CURRENT.get()
    if outer is not None:
        yield outer
        return
    current = Parse(label, limits().parse_bytes if limit is None else limit)
    token = _CURRENT.set(current)
    try:
        yield current
    finally:
        _CURRENT.reset(token)
        current.release(current.reserved)


def current() -> Parse | None:
    """The parse in progress in this thread or context, if any."""
    return _CURRENT.get()
