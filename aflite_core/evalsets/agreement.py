"""Annotator agreement of evaluation rows, per history category (Phang et al. §5.3, Figure 5)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .. import _validation as v
from ..engine.result import EVAL_CATEGORIES
from .tables import NONE

__all__ = ["DEFAULT_ANNOTATOR_SOURCES", "AgreementReport", "annotator_agreement", "category_agreement"]


#: the unbiased annotator-label source of the shared SNLI sample (see its README)
DEFAULT_ANNOTATOR_SOURCES = ("random_subset",)


def _label_text(value: Any) -> str:
    return str(value.item() if isinstance(value, np.generic) else value)


def _annotator_list(value: Any, row: int, func: str) -> list[str] | None:
    """One row's annotator labels as strings; None when it has none."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                raise ValueError(
                    f"The 'annotator_labels' parameter of {func} must hold lists of labels. Row {row} holds "
                    f"{text[:60]!r}, which is not a JSON list."
                ) from None
            if not isinstance(parsed, list):
                raise ValueError(
                    f"The 'annotator_labels' parameter of {func} must hold lists of labels. Row {row} holds "
                    f"{text[:60]!r} instead."
                )
            values = parsed
        else:
            values = [part.strip() for part in text.split("|")]
    elif isinstance(value, (list, tuple, np.ndarray, pd.Series)):
        values = list(value)
    else:
        raise v.param_error(
            "annotator_labels", func, "a sequence with, per row, a list of labels or None", value, TypeError
        )
    out = [_label_text(x) for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return out or None


def annotator_agreement(labels: ArrayLike, annotator_labels: Sequence[Any]) -> NDArray[np.float64]:
    """Per row: the share of its annotator labels equal to its gold label (NaN for rows without labels).

    Labels are compared as text (``str``), so gold label ``1`` and annotator label ``"1"`` agree.

    Parameters
    ----------
    labels : array-like of shape (n_rows,)
        Gold labels.
    annotator_labels : sequence of length n_rows
        Per row a list (tuple, array) of annotator labels, a JSON list as text, labels separated by ``|``, or
        None / NaN / an empty list for a row without labels.

    Returns
    -------
    ndarray of float64, shape (n_rows,)
        Agreement in [0, 1]; higher means the annotators agreed more with the gold label.

    Examples
    --------
    >>> annotator_agreement(["a", "b", "a"], [["a", "a", "b", "a"], None, "a|a"]).tolist()
    [0.75, nan, 1.0]
    """
    func = "annotator_agreement"
    gold = v._as_label_array(labels, "labels", func)
    values = list(
        annotator_labels.tolist() if isinstance(annotator_labels, (pd.Series, np.ndarray)) else annotator_labels
    )
    if len(values) != len(gold):
        raise ValueError(
            f"The 'annotator_labels' parameter of {func} must have one entry per row ({len(gold)}). "
            f"Got {len(values)} entries instead."
        )
    out = np.full(len(gold), np.nan)
    for i, (g, value) in enumerate(zip(gold, values)):
        lab = _annotator_list(value, i, func)
        if lab is not None:
            gt = _label_text(g)
            out[i] = sum(x == gt for x in lab) / len(lab)
    return out


@dataclass(frozen=True)
class AgreementReport:
    """Annotator agreement per adversary and Figure 1 category.

    Attributes
    ----------
    by_seed : DataFrame
        ``adversary, seed, category, mean_agreement, n_rows`` (rows used only).
    summary : DataFrame
        ``adversary, category, mean_agreement`` (mean over seeds of the per-seed means), ``std_over_seeds``,
        ``n_rows_mean``, ``n_seeds``. The first rows, adversary ``"none"`` and category ``"selected"``, hold
        the agreement of all rows used (the unfiltered set, as in the paper's Figure 5).
    info : dict
        ``n_eval``, ``n_with_labels``, ``n_used``, ``n_excluded_by_source``, ``n_without_labels``,
        ``sources`` (the accepted sources, or None for all) and ``source_counts`` (rows with labels per source).
    """

    by_seed: pd.DataFrame
    summary: pd.DataFrame
    info: dict[str, Any]

    def table(self) -> pd.DataFrame:
        """Mean agreement as a wide table: adversary × category (Figure 5's layout)."""
        if self.summary.empty:
            return pd.DataFrame()
        wide = self.summary.pivot(index="adversary", columns="category", values="mean_agreement")
        order = list(dict.fromkeys(self.summary["adversary"]))
        return wide.reindex(index=order, columns=[c for c in EVAL_CATEGORIES if c in wide.columns])


def _used_rows(
    n: int, agreement: NDArray, annotator_source: Any, annotator_sources: Any, func: str
) -> tuple[NDArray[np.bool_], dict[str, Any]]:
    has = np.isfinite(agreement)
    sources: list[str] | None
    if annotator_sources is None:
        sources = None
    elif isinstance(annotator_sources, str):
        sources = [annotator_sources]
    else:
        try:
            sources = [str(s) for s in annotator_sources]
        except TypeError:
            raise v.param_error(
                "annotator_sources", func, "None or a sequence of source names", annotator_sources, TypeError
            ) from None
        if not sources:
            raise v.param_error(
                "annotator_sources", func, "None or a non-empty sequence of source names", annotator_sources
            )
    source_counts: dict[str, int] = {}
    if annotator_source is None:
        src = None
        used = has.copy()
    else:
        raw = list(
            annotator_source.tolist() if isinstance(annotator_source, (pd.Series, np.ndarray)) else annotator_source
        )
        if len(raw) != n:
            raise ValueError(
                f"The 'annotator_source' parameter of {func} must have one entry per evaluation row ({n}). "
                f"Got {len(raw)} entries instead."
            )
        src = np.array(
            [None if x is None or (isinstance(x, float) and math.isnan(x)) else str(x) for x in raw], dtype=object
        )
        for s in src[has]:
            key = "(missing)" if s is None else s
            source_counts[key] = source_counts.get(key, 0) + 1
        used = has if sources is None else has & np.isin(src, sources)
    info = {
        "n_eval": int(n),
        "n_with_labels": int(has.sum()),
        "n_used": int(used.sum()),
        "n_excluded_by_source": int((has & ~used).sum()),
        "n_without_labels": int((~has).sum()),
        "sources": sources if src is not None else None,
        "source_column_given": src is not None,
        "source_counts": source_counts,
    }
    return used, info


def category_agreement(
    categories: pd.DataFrame,
    labels: ArrayLike,
    annotator_labels: Sequence[Any],
    *,
    annotator_source: Sequence[Any] | None = None,
    annotator_sources: Sequence[str] | None = DEFAULT_ANNOTATOR_SOURCES,
) -> AgreementReport:
    """Mean annotator agreement of the rows removed in round 1, removed later and selected, per adversary.

    Only rows with annotator labels enter; with a source column, only rows whose source is among
    ``annotator_sources`` (default: ``"random_subset"``, the unbiased sample of the shared SNLI data; ChaosNLI
    rows are the low-agreement pairs and would bias every mean). ``info`` says how many rows were used and
    how many were excluded because of their source.

    Parameters
    ----------
    categories : DataFrame
        :attr:`AdversaryStudy.categories`: columns ``adversary, seed, row, category`` (``row`` is the
        evaluation row's position).
    labels : array-like of shape (n_eval,)
        Gold labels of the evaluation rows.
    annotator_labels : sequence of length n_eval
        Per row its annotator labels (see :func:`annotator_agreement`).
    annotator_source : sequence of length n_eval, optional
        Per row where its labels came from. Without it every row with labels is used.
    annotator_sources : sequence of str or None, default=("random_subset",)
        Sources to use; None uses every source.

    Returns
    -------
    AgreementReport

    Examples
    --------
    >>> import pandas as pd
    >>> cats = pd.DataFrame({"adversary": "a", "seed": 0, "row": [0, 1, 2],
    ...                      "category": ["removed in round 1", "selected", "selected"]})
    >>> rep = category_agreement(cats, ["x", "y", "x"], [["x", "x"], ["y", "x"], ["y", "y"]],
    ...                          annotator_source=["random_subset", "random_subset", "chaosnli"])
    >>> rep.table().round(2).loc["a"].tolist()      # removed in round 1, removed later (no row), selected
    [1.0, nan, 0.5]
    >>> rep.info["n_used"], rep.info["n_excluded_by_source"]
    (2, 1)
    """
    func = "category_agreement"
    gold = v._as_label_array(labels, "labels", func)
    agreement = annotator_agreement(gold, annotator_labels)
    used, info = _used_rows(len(gold), agreement, annotator_source, annotator_sources, func)
    need = {"adversary", "seed", "row", "category"}
    if not isinstance(categories, pd.DataFrame) or not need <= set(categories.columns):
        raise ValueError(
            f"The 'categories' parameter of {func} must be a DataFrame with columns {sorted(need)} "
            "(AdversaryStudy.categories)."
        )
    rows = categories["row"].to_numpy(np.int64)
    if len(rows) and (rows.min() < 0 or rows.max() >= len(gold)):
        raise ValueError(f"The 'categories' parameter of {func} refers to evaluation rows outside [0, {len(gold)}).")
    frame = categories.loc[used[rows], ["adversary", "seed", "category"]].copy()
    frame["agreement"] = agreement[rows[used[rows]]]
    by_seed = (
        frame.groupby(["adversary", "seed", "category"], sort=False)["agreement"]
        .agg(mean_agreement="mean", n_rows="size")
        .reset_index()
    )
    # every category of every run, with n_rows 0 when it holds no used row
    runs = categories[["adversary", "seed"]].drop_duplicates()
    full = runs.merge(pd.DataFrame({"category": list(EVAL_CATEGORIES)}), how="cross")
    by_seed = full.merge(by_seed, on=["adversary", "seed", "category"], how="left")
    by_seed["n_rows"] = by_seed["n_rows"].fillna(0).astype(np.int64)
    summary = (
        by_seed.groupby(["adversary", "category"], sort=False)
        .agg(
            mean_agreement=("mean_agreement", "mean"),
            std_over_seeds=("mean_agreement", "std"),
            n_rows_mean=("n_rows", "mean"),
            n_seeds=("seed", "nunique"),
        )
        .reset_index()
    )
    none = pd.DataFrame(
        {
            "adversary": [NONE],
            "category": [EVAL_CATEGORIES[2]],
            "mean_agreement": [float(agreement[used].mean()) if used.any() else float("nan")],
            "std_over_seeds": [float("nan")],
            "n_rows_mean": [float(used.sum())],
            "n_seeds": [0],
        }
    )
    summary = pd.concat([none, summary], ignore_index=True)
    return AgreementReport(by_seed=by_seed, summary=summary, info=info)
