"""The guided demo ("Show me in 10 minutes"): what each of its three steps shows, computed from real runs.

1. **The shortcut** (:func:`circles_step`): the Synthetic page's Figure 2 experiment at the demo's τ (the same
   cached runs as :mod:`aflite_app.compute.synthetic`; a τ change runs no AFLite), one dataset's before/after.
2. **A real NLI sample** (:func:`words_step`): AFLite on the bundled SNLI sample (the Filter page's default run
   of that dataset, so the Filter page shows the same run), Gardner et al.'s significant words of its hypotheses
   and the share of each word's rows that AFLite removed.
3. **One removed row** (:func:`removed_rows`, :func:`explain_row`): its text, its predictability per round against
   τ and the significant words it contains. :func:`explain_row` is the one place that explains a row: it reads the
   run's per-round scores and the word statistics today, and can call a per-row explanation API once the core
   has one.

No widget, no session: the page passes its session data as ``session=`` (the bundled sample needs none, but the
same functions take it so every compute call reads alike).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from aflite_core import AFLiteResult
from aflite_core._validation import bounded_int
from aflite_core.data.datasets import Dataset
from aflite_core.measures.artifact_statistics import artifact_shares, tokenize

from ..specs import NO_SESSION, DatasetSpec, FilterSpec, SessionData
from . import _stores, run_devices
from . import datasets as datasets_compute
from . import runs as runs_compute
from . import synthetic as synthetic_compute

__all__ = [
    "DEMO_CIRCLES_INDEX",
    "DEMO_DATASET",
    "DEMO_STEPS",
    "DEMO_TAU",
    "DEMO_TAU_FLOOR",
    "circles_step",
    "demo_filter_spec",
    "explain_row",
    "parse_step",
    "removed_rows",
    "words_step",
]

#: the three steps: (short title, the action the step asks for)
DEMO_STEPS = (
    ("The shortcut", "Move τ"),
    ("A real NLI sample", "Pick a word"),
    ("One removed row, explained", "Show another row"),
)
#: the bundled dataset of steps 2 and 3, and the representation AFLite runs on (the hypothesis alone)
DEMO_DATASET = DatasetSpec("snli-sample", "hyp_minilm")
#: τ of steps 2 and 3 (the Filter page's default), and where step 1's τ slider starts
DEMO_TAU = 0.75
#: the lowest τ of step 1's slider (the Synthetic page's: every τ above it is read off one run)
DEMO_TAU_FLOOR = synthetic_compute.CIRCLES_TAU_FLOOR
#: the circles dataset step 1 shows (ring gap 0.6: the linear model falls, the RBF SVM stays)
DEMO_CIRCLES_INDEX = 1


def parse_step(text: Any) -> int:
    """The step (1-3) a link asks for: a number clamped to the steps; anything else is step 1."""
    try:
        return bounded_int(str(text), 1, len(DEMO_STEPS), what="The link's step", clamp=True)
    except ValueError:
        return 1


# -- step 1: the circles ---------------------------------------------------------------------------------------------
def circles_step(tau: float, progress: Callable[[float, str], Any] | None = None) -> dict[str, Any]:
    """Figure 2 at ``tau`` (the Synthetic page's default datasets and AFLite settings), one dataset picked out.

    Returns ``{"run", "experiment", "index", "data", "result", "row"}``: the :class:`CirclesRunSpec`, the whole
    experiment, and dataset :data:`DEMO_CIRCLES_INDEX` with its AFLite result and experiment-table row (the numbers
    of its panel titles: linear and RBF-SVM accuracy before and after).
    """
    run = synthetic_compute.CirclesRunSpec(synthetic_compute.CirclesSpec(), tau=float(tau))
    exp = synthetic_compute.circles_experiment(run, progress)
    index = min(DEMO_CIRCLES_INDEX, len(exp.datasets) - 1)
    data = exp.datasets[index]
    return {
        "run": run,
        "experiment": exp,
        "index": index,
        "data": data,
        "result": exp.results[data.name],
        "row": exp.table.iloc[index],
    }


# -- step 2: the words ------------------------------------------------------------------------------------------------
def demo_filter_spec(data: Dataset) -> FilterSpec:
    """The run of steps 2 and 3: the Filter page's default run of the bundled SNLI sample (τ = 0.75).

    Premise groups included, as the Filter page's default for an NLI pair, so the demo's run is the one it opens.
    """
    defaults = runs_compute.filter_defaults(data.n_rows, data.n_classes)
    return FilterSpec(
        dataset=DEMO_DATASET,
        target_size=defaults["target_size"],
        train_size=defaults["train_size"],
        slice_size=defaults["slice_size"],
        tau=DEMO_TAU,
        n_partitions=defaults["n_partitions"],
        device=run_devices.app_device("linear"),
        groups=runs_compute.groups_choice(data),
    )


@_stores.memo("demo_words", 4)
def _shares(spec: FilterSpec, _data: Dataset, _result: AFLiteResult, _stats: pd.DataFrame) -> pd.DataFrame:
    texts = _data.frame["hypothesis"].astype(str).tolist()
    return artifact_shares(texts, _data.labels, _result, _stats)


def words_step(*, session: SessionData = NO_SESSION) -> dict[str, Any]:
    """AFLite on the bundled SNLI sample and what it did to each significant word of the hypotheses.

    Returns ``{"spec", "data", "result", "stats", "shares", "removed_share", "word", "z_critical"}``: the run (stored,
    so the Filter page shows it too), the word statistics (every pair), ``shares``
    (:func:`aflite_core.measures.artifact_statistics.artifact_shares` of the significant pairs), the share of all
    rows removed, and ``word``: the significant pair whose rows AFLite removed most (its ``shares`` row as a dict).
    """
    data = datasets_compute.dataset(DEMO_DATASET, session=session)
    spec = demo_filter_spec(data)
    result = runs_compute.with_class_names(runs_compute.run_filter(spec, session=session), tuple(data.classes))
    stats = datasets_compute.artifact_statistics(DEMO_DATASET.key, "hypothesis", session=session)
    significant = stats[stats["significant"].astype(bool)]
    shares = _shares(spec, data, result, significant)
    removed_share = float(result.n_removed / result.n_rows)
    word = shares.sort_values(["removed_fraction", "z"], ascending=False).iloc[0].to_dict() if len(shares) else None
    return {
        "spec": spec,
        "data": data,
        "result": result,
        "stats": stats,
        "shares": shares,
        "removed_share": removed_share,
        "word": word,
        "z_critical": float(stats.attrs.get("z_critical", np.nan)),
    }


# -- step 3: one removed row ------------------------------------------------------------------------------------------
def removed_rows(data: Dataset, result: AFLiteResult, token: str | None, label: str | None) -> list[int]:
    """Rows AFLite removed whose hypothesis contains ``token`` and whose label is ``label`` (latest round first).

    A row removed in a late round has the longer story: its predictability over several rounds against τ.

    Falls back to every removed row when none has the word (or no word is given).
    """
    removed = np.flatnonzero(~np.asarray(result.kept))
    order = np.argsort(-np.asarray(result.removed_round)[removed], kind="stable")
    removed = removed[order]
    if token is None:
        return removed.tolist()
    labels = np.asarray(data.labels).astype(str)
    texts = data.frame["hypothesis"].astype(str).to_numpy()
    hits = [int(i) for i in removed if labels[i] == str(label) and token in tokenize(texts[i])]
    return hits or removed.tolist()


def explain_row(data: Dataset, result: AFLiteResult, row: int, stats: pd.DataFrame) -> dict[str, Any]:
    """Why AFLite removed row ``row``: its text, its predictability per round against τ, its significant words.

    Returns ``{"row", "id", "premise", "hypothesis", "label", "removed_round", "tau", "rounds", "scores",
    "words"}``: ``rounds`` (1, 2, …) and ``scores`` (the share of the round's models that predicted the row's label,
    NaN where the row was not scored) up to the round that removed it; ``words``: the significant (token, label)
    pairs of the word statistics whose token is in the hypothesis (token, label, p̂, z; strongest first), which
    say which words of the row give its label away. The one explanation of a row the demo shows; it reads what
    the run records today.
    """
    row = int(row)
    rnd = int(np.asarray(result.removed_round)[row])
    last = rnd if rnd > 0 else int(result.n_rounds)
    scores = result.scores
    p = (
        np.asarray(scores[:last, row], dtype=float)
        if scores is not None and last > 0
        else np.full(max(last, 0), np.nan, dtype=float)
    )
    frame = data.frame
    hyp = str(frame.at[row, "hypothesis"])
    toks = set(tokenize(hyp))
    sig = stats[stats["significant"].astype(bool) & stats["token"].isin(toks)]
    words = sig.sort_values("z", ascending=False)[["token", "label", "p_hat", "z"]].reset_index(drop=True)
    words["label"] = words["label"].astype(str)
    return {
        "row": row,
        "id": str(data.ids[row]),
        "premise": str(frame.at[row, "premise"]),
        "hypothesis": hyp,
        "label": str(np.asarray(data.labels)[row]),
        "removed_round": rnd,
        "tau": float(result.params.get("tau", DEMO_TAU)),
        "rounds": list(range(1, last + 1)),
        "scores": p,
        "words": words,
    }
