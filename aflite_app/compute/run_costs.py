"""What an AFLite run of the app costs before it starts: its rounds, seconds and memory, and the refusals.

The Filter page asks before a run estimated over :data:`CONFIRM_SECONDS` starts (:func:`aflite_app.ui`'s
confirmation, :func:`estimate_run_seconds`); :func:`aflite_app.compute.runs.prepare_run` refuses, in one
sentence, a run whose :func:`run_memory_bytes` exceeds the memory free now (:func:`check_memory`; tests patch
:func:`available_memory_bytes` here).
"""

from __future__ import annotations

from aflite_core.engine import estimates

from ..specs import NO_SESSION, FilterSpec, SessionData

__all__ = [
    "CONFIRM_SECONDS",
    "ROW_RECORD_BYTES",
    "RUN_MEMORY_FACTOR",
    "available_memory_bytes",
    "check_memory",
    "estimate_run_seconds",
    "round_record_bytes",
    "run_memory_bytes",
    "run_rounds",
]


#: a Filter run estimated above this many seconds waits for the user's "Start the run" (issue 29 item 4)
CONFIRM_SECONDS = 30.0


def run_rounds(spec: FilterSpec, n_rows: int) -> int:
    """Rounds a run of ``spec`` takes at most: to the target size, k rows a round (1 for the greedy strategy)."""
    k = 1 if spec.strategy == "greedy" else max(1, int(spec.slice_size))
    return max(0, -(-(int(n_rows) - int(spec.target_size)) // k))


def estimate_run_seconds(spec: FilterSpec, n_rows: int, n_features: int, n_classes: int = 3) -> float:
    """Seconds an AFLite run of ``spec`` takes on this server at most (to the target size; τ may end it sooner).

    :func:`aflite_core.engine.estimates.estimate_seconds` (``"aflite"``): the default family's shape model at this
    server's rates - the reference machine's first (no measuring), then, for a run that may be long (over a
    third of :data:`CONFIRM_SECONDS`), the rates this process measures once (:func:`~aflite_core.engine.estimates.
    calibrate`, about a second). Each family is priced by its own shape model and rate (scikit-learn's logistic
    regression and kNN at the rates the calibration measures for the Baselines page). The greedy strategy removes
    one row a round.
    """
    shape = dict(
        n_rows=int(n_rows),
        target_size=int(spec.target_size),
        slice_size=1 if spec.strategy == "greedy" else max(1, int(spec.slice_size)),
        train_size=int(spec.train_size),
        n_partitions=int(spec.n_partitions),
        n_features=max(1, int(n_features)),
        n_classes=max(2, int(n_classes)),
        model=str(spec.model),
    )
    seconds = estimates.estimate_seconds("aflite", calibrated=False, **shape)
    if seconds > CONFIRM_SECONDS / 3:
        seconds = estimates.estimate_seconds("aflite", calibrated=True, **shape)
    return seconds


#: an in-app run's peak memory over its features' float32 bytes (the engine's blocks, predictions and copies;
#: the CLI peaked at 2.6× (200,000 × 384) and 1.9× (550,000 × 384), issue 25): a margin above both
RUN_MEMORY_FACTOR = 3.0


def available_memory_bytes() -> int | None:
    """Memory the server can give a new job now, in bytes (None when the platform does not say).

    psutil's ``available`` when psutil is installed, else ``MemAvailable`` of /proc/meminfo; with neither the run
    is not refused for memory.
    """
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # not installed, or a platform it cannot read
        pass
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


#: bytes a run keeps per row whatever its rounds: the removal round and the first, last and removal scores (in the
#: engine's loop and again in the result it returns), the kept mask and the label codes
ROW_RECORD_BYTES = 48


def round_record_bytes(spec: FilterSpec, n_classes: int = 3) -> int:
    """Bytes a run of ``spec`` records per row and round (``aflite_core.engine.loop``'s per-round rows).

    The round's score (float32), its prediction count (uint16; int32 from 65,536 models) and its votes, one count
    per class (``AFLiteResult.votes``, recorded by default: int16; int32 from 32,768 models): 12 bytes at 3
    classes and m < 32,768. The greedy strategy keeps no per-round rows: 0.
    """
    if spec.strategy == "greedy":
        return 0
    m = int(spec.n_partitions)
    count = 2 if m < 2**16 else 4
    vote = 2 if m < 2**15 else 4
    return 4 + count + max(2, int(n_classes)) * vote


def run_memory_bytes(spec: FilterSpec, n_rows: int, n_features: int, n_classes: int = 3) -> int:
    """Bytes an AFLite run of ``spec`` on ``n_rows`` × ``n_features`` needs at most, roughly.

    The features' float32 bytes × :data:`RUN_MEMORY_FACTOR`, :data:`ROW_RECORD_BYTES` a row, and the per-round
    records (:func:`round_record_bytes` a row a round, for every round the run can take until the target size, at
    most 10,000) twice: the engine's rows and the result's matrices stacked from them are both held when the run
    ends.
    """
    k = 1 if spec.strategy == "greedy" else max(1, int(spec.slice_size))
    rounds = max(1, -(-max(0, n_rows - int(spec.target_size)) // k))
    per_round = 2 * round_record_bytes(spec, n_classes)
    return int(
        n_rows * n_features * 4 * RUN_MEMORY_FACTOR + n_rows * (ROW_RECORD_BYTES + min(rounds, 10_000) * per_round)
    )


def _human(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:,.1f} GB" if n_bytes >= 2**30 else f"{n_bytes / 2**20:,.0f} MB"


def check_memory(
    spec: FilterSpec, n_rows: int, n_features: int, *, n_classes: int = 3, session: SessionData = NO_SESSION
) -> None:
    """Refuse, in one sentence whose advice works, a run this server has not the memory for now (ValueError).

    Every size the machine can hold is run (an opened run directory of 550,000 rows included); only a run whose
    :func:`run_memory_bytes` exceeds :func:`available_memory_bytes` is refused. Its advice: the opened run's own
    k with a τ at or above its τ (read off it, no new run) when this session opened one on this dataset, and
    waiting for the server's other jobs.
    """
    need, free = run_memory_bytes(spec, n_rows, n_features, n_classes), available_memory_bytes()
    if free is None or need <= free:
        return
    opened = [e["spec"] for e in session.run_dirs.values() if e["spec"].dataset == spec.dataset]
    read_off = (
        f"keep k at {opened[0].slice_size:,} and τ at {opened[0].tau:.2f} or above (read off the opened run, no "
        "new AFLite run), or "
        if opened and opened[0].strategy == "slice"
        else ""
    )
    raise ValueError(
        f"An AFLite run on {n_rows:,} rows × {n_features:,} features needs about {_human(need)} of memory, but "
        f"this server has {_human(free)} free now: {read_off}try again once the server's other jobs have finished."
    )
