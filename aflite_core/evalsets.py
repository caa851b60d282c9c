"""AFLite on evaluation sets: how the choice of adversary changes what is selected and how models rank.

Phang et al. ("Adversarially Constructed Evaluation Sets Are More Challenging, but May Not Be Fair") filter an
*evaluation* set with AFLite (their appendix Algorithm 1, :func:`aflite_core.aflite` with ``eval_X``): the weak
models are fitted on training rows only, and every evaluation row they predict correctly often enough
(p ≥ τ) leaves in that round. This module runs that for several adversaries (representations Φ) and seeds and
measures what the paper measures:

==========================================  ==============================================================
paper                                       here
==========================================  ==============================================================
Figure 1: removed in round 1 / later /      :attr:`AdversaryStudy.categories`, :attr:`~AdversaryStudy.category_summary`
selected
Figures 2 and 7: accuracy of evaluated      :attr:`AdversaryStudy.accuracies`, :attr:`~AdversaryStudy.accuracy_matrix`
models, adversary × model, "none" column
Figure 3: model ranking per adversary       :attr:`AdversaryStudy.rankings`, :attr:`~AdversaryStudy.rank_correlation`
                                            (Kendall's coefficient against the unfiltered ranking)
Figure 4: rank change of the model that     :attr:`AdversaryStudy.same_representation`
shares the adversary's representation
Figure 5 / §5.3: annotator agreement        :attr:`AdversaryStudy.agreement`, :func:`category_agreement`
§7: an ensemble of adversaries              :func:`ensemble_aflite` (``adversary_study(..., ensemble=True)``)
==========================================  ==============================================================

Evaluated models are trained once on the whole training set, independently of the adversaries, and scored on
the full evaluation set ("none") and on each adversary's selected rows. Kendall's coefficient is always
called that here: τ is AFLite's threshold.

Symbols: m → ``n_partitions``, t → ``train_size``, k → ``slice_size``, τ → ``tau``, n → ``target_size``.

References
----------
.. [1] J. Phang, A. Chen, W. Huang and S. R. Bowman, "Adversarially Constructed Evaluation Sets Are More
   Challenging, but May Not Be Fair", 2021 (§3, §5, Figures 1-5 and 7, appendix Algorithm 1, Table 3).
.. [2] R. Le Bras et al., "Adversarial Filters of Dataset Biases", ICML 2020.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from . import _validation as v
from ._utils import blas_threads, versions
from .filtering import _check_run_args, _resolve, aflite
from .models import resolve_model
from .partitions import RoundScores
from .result import EVAL_CATEGORIES, AFLiteResult, RoundProgress

__all__ = [
    "DIGITS_STUDY_DEFAULTS",
    "EVALUATED_FAMILIES",
    "NONE",
    "AdversarySetup",
    "AdversaryStudy",
    "AgreementReport",
    "EnsembleResult",
    "StudyProgress",
    "add_cli",
    "adversary_study",
    "annotator_agreement",
    "category_agreement",
    "digits_adversary_setup",
    "ensemble_aflite",
    "ensemble_name",
    "make_evaluated_model",
    "study_reading",
    "text_adversary_setup",
]

#: the column / adversary name of the unfiltered evaluation set (the paper's "None")
NONE = "none"

#: model families of evaluated models, with their exact settings (the first four are analysis.MODEL_FAMILIES)
EVALUATED_FAMILIES: dict[str, str] = {
    "linear": "LogisticRegression(C=1, lbfgs, max_iter=1000) on the features as given",
    "rbf": "SVC(kernel='rbf', C=1, gamma='scale') on the features as given",
    "knn": "KNeighborsClassifier(n_neighbors=min(15, n_train), distance-weighted) on the features as given",
    "mlp": "StandardScaler + MLPClassifier(hidden_layer_sizes=(64,), max_iter=200, alpha=1e-3), seeded",
    "forest": "RandomForestClassifier(n_estimators=200, n_jobs=1), seeded",
}

#: AFLite parameters of :func:`digits_adversary_setup` (counts of the ~1,006 training rows)
DIGITS_STUDY_DEFAULTS: dict[str, Any] = {
    "target_size": 400,
    "train_size": 100,
    "slice_size": 100,
    "tau": 0.75,
    "n_partitions": 64,
}

#: evaluated models of the digits setup: (family, representation)
DIGITS_EVALUATED: tuple[tuple[str, str], ...] = (
    ("linear", "pixels"),
    ("knn", "pca"),
    ("rbf", "mlp"),
    ("mlp", "pixels"),
    ("forest", "pixels"),
    ("linear", "mlp_small"),
)

#: AFLite parameters of :func:`text_adversary_setup`, as fractions of the training rows
TEXT_STUDY_FRACTIONS: dict[str, float] = {"target_size": 0.5, "train_size": 0.4, "slice_size": 0.05}

#: the unbiased annotator-label source of the shared SNLI sample (see its README)
DEFAULT_ANNOTATOR_SOURCES = ("random_subset",)


# ==============================================================================================================
# the ensemble of adversaries (§7)
# ==============================================================================================================


def ensemble_name(members: Sequence[str]) -> str:
    """Name of the ensemble adversary, e.g. ``"ensemble(pca+mlp)"``.

    Parameters
    ----------
    members : sequence of str
        Adversary names, in order.

    Returns
    -------
    str
    """
    return "ensemble(" + "+".join(members) + ")"


@dataclass(eq=False)
class EnsembleResult:
    """An AFLite run whose predictability pools several adversaries, with each member's share of it.

    Attributes
    ----------
    result : AFLiteResult
        The run, exactly as :func:`aflite_core.aflite` records one (``params["adversaries"]`` lists the
        members; ``scores`` hold the pooled predictability).
    members : tuple of str
        Adversary (representation) names.
    member_scores : dict of str to ndarray of float32, shape (rounds, N)
        Each member's own predictability of the training rows per round (NaN where not scored).
    member_n_predictions : dict of str to ndarray of int32, shape (rounds, N)
        Each member's out-of-sample predictions per row and round. The pooled score is
        ``sum(score · n) / sum(n)`` over members.
    member_eval_scores : dict of str to ndarray of float32, shape (rounds, n_eval), or None
        Each member's predictability of the evaluation rows (all its m models predict every remaining row,
        so the pooled evaluation score is the mean of the members').
    """

    result: AFLiteResult
    members: tuple[str, ...]
    member_scores: dict[str, NDArray[np.float32]]
    member_n_predictions: dict[str, NDArray[np.int32]]
    member_eval_scores: dict[str, NDArray[np.float32]] | None = None

    @property
    def name(self) -> str:
        """``"ensemble(a+b+...)"``."""
        return ensemble_name(self.members)

    def __repr__(self) -> str:
        return f"EnsembleResult(name={self.name!r}, result={self.result!r})"


def _check_mapping(X: Any, name: str, func: str, *, n_rows: int | None = None,
                   n_cols: Mapping[str, int] | None = None, keys: Sequence[str] | None = None
                   ) -> dict[str, NDArray[np.float32]]:
    """A mapping name → 2-D float32 matrix, all with the same number of rows."""
    if not isinstance(X, Mapping) or not X:
        raise v.param_error(name, func, "a non-empty mapping from representation names to feature matrices", X,
                            TypeError if not isinstance(X, Mapping) else ValueError)
    out: dict[str, NDArray[np.float32]] = {}
    wanted = list(X) if keys is None else list(keys)
    for key in wanted:
        if not isinstance(key, str) or not key:
            raise v.param_error(name, func, "a mapping with non-empty str keys", key, TypeError)
        if key not in X:
            raise ValueError(
                f"The '{name}' parameter of {func} must hold the representation {key!r} too (it has "
                f"{sorted(map(str, X))}). Got no {key!r} instead."
            )
        M = v.check_features(X[key], f"{name}[{key!r}]", func, n_cols=None if n_cols is None else n_cols[key])
        if n_rows is None:
            n_rows = M.shape[0]
        elif M.shape[0] != n_rows:
            raise ValueError(
                f"The '{name}' parameter of {func} must hold matrices with the same rows ({n_rows}). "
                f"Got {M.shape[0]} rows in {key!r} instead."
            )
        out[key] = M
    return out


class _EnsembleBackend:
    """An engine backend that scores every round with several adversaries and pools their counts.

    Each member is an ordinary :class:`aflite_core.engine.LocalBackend` on its own representation; a round's
    "plan" is the list of the members' plans. The run's ``n_partitions`` is ``m × n_members`` (so the engine's
    evaluation score ``eval_correct / n_partitions`` is the pooled share), while each member fits m models.
    """

    def __init__(self, names: Sequence[str], Xs: Mapping[str, NDArray[np.float32]],
                 EXs: Mapping[str, NDArray[np.float32]] | None, m: int) -> None:
        self.names = tuple(names)
        self.Xs, self.EXs, self.m = Xs, EXs, m
        self.members: list[Any] = []
        self.member_scores: dict[str, list[NDArray]] = {a: [] for a in self.names}
        self.member_counts: dict[str, list[NDArray]] = {a: [] for a in self.names}
        self.member_eval: dict[str, list[NDArray]] = {a: [] for a in self.names}
        self.mode = "exact"
        self.rows_per_block = 1

    def open(self, X, codes, n_classes, family, *, train_size, n_partitions, rng, eval_X=None,
             eval_codes=None) -> None:
        """Open one local backend per member, in order (each draws its per-run randomness from ``rng``)."""
        from .engine import LocalBackend

        self.N = X.shape[0]
        self.n_eval = 0 if eval_X is None else eval_X.shape[0]
        self.members = []
        for a in self.names:
            b = LocalBackend()
            b.open(self.Xs[a], codes, n_classes, family, train_size=train_size, n_partitions=self.m, rng=rng,
                   eval_X=None if self.EXs is None else self.EXs[a], eval_codes=eval_codes)
            self.members.append(b)
        self.mode = self.members[0].mode
        self.rows_per_block = self.members[0].rows_per_block

    def draw_plan(self, rows, rng) -> list:
        """One plan per member (each its own m random partitions of the same rows)."""
        return [b.draw_plan(rows, rng) for b in self.members]

    def score(self, rows, plan, rng, eval_rows, round_no) -> RoundScores:
        """Score with every member and add the counts (pooled predictability = Σ correct / Σ predictions)."""
        n = len(rows)
        correct = np.zeros(n, dtype=np.int32)
        n_pred = np.zeros(n, dtype=np.int32)
        eval_correct = None if eval_rows is None else np.zeros(len(eval_rows), dtype=np.int32)
        model_correct, model_total = [], []
        for a, b, pl in zip(self.names, self.members, plan):
            rs = b.score(rows, pl, rng, eval_rows, round_no)
            correct += rs.correct
            n_pred += rs.n_predictions
            model_correct.append(rs.model_correct)
            model_total.append(rs.model_total)
            row = np.full(self.N, np.nan, dtype=np.float32)
            row[rows] = np.where(rs.n_predictions > 0, rs.predictability, np.nan)
            self.member_scores[a].append(row)
            cnt = np.zeros(self.N, dtype=np.int32)
            cnt[rows] = rs.n_predictions
            self.member_counts[a].append(cnt)
            if eval_correct is not None:
                eval_correct += rs.eval_correct
                erow = np.full(self.n_eval, np.nan, dtype=np.float32)
                erow[eval_rows] = (rs.eval_correct / self.m).astype(np.float32)
                self.member_eval[a].append(erow)
        return RoundScores(correct, n_pred, np.concatenate(model_correct), np.concatenate(model_total),
                           eval_correct)

    def remove(self, rows, round_no) -> None:
        """Every member forgets the removed rows (the same S for all)."""
        for b in self.members:
            b.remove(rows, round_no)

    def close(self) -> None:
        """Close the members."""
        for b in self.members:
            b.close()


def ensemble_aflite(
    X: Mapping[str, ArrayLike],
    y: ArrayLike,
    *,
    target_size: int | float,
    n_partitions: int = 64,
    train_size: int | float,
    slice_size: int,
    tau: float = 0.75,
    model: Any = "linear",
    eval_X: Mapping[str, ArrayLike] | None = None,
    eval_y: ArrayLike | None = None,
    random_state: int | np.random.Generator | None = None,
    callback: Callable[[RoundProgress], bool | None] | None = None,
    ids: ArrayLike | None = None,
    eval_ids: ArrayLike | None = None,
    n_threads: int | None = 1,
) -> EnsembleResult:
    """AFLite with an ensemble of adversaries: a row's predictability pools every adversary's partition models.

    Each round, every adversary (representation) draws its own m partitions of the *same* current set S and
    scores it with :func:`aflite_core.partitions.score_round`. A training row's predictability is the sum of
    its correct out-of-sample predictions over all adversaries divided by the sum of its predictions; an
    evaluation row's is its correct predictions over all ``m × n_adversaries`` models. The loop is the
    engine's (:class:`aflite_core.engine.Run`, strategy B, greedy slicing): up to ``slice_size`` training rows
    with the highest p ≥ ``tau`` leave (seeded tie-break, never below ``target_size``), every evaluation row
    with p ≥ ``tau`` leaves, and the run stops when S reached the target or fewer than ``slice_size`` rows
    qualified. Evaluation rows are never used for fitting and never change which training rows are removed.

    Parameters
    ----------
    X : mapping of str to array-like of shape (n_samples, d_a)
        The adversaries' representations Φ_a(X) of the training rows, in order.
    y : array-like of shape (n_samples,)
        Training labels.
    target_size, n_partitions, train_size, slice_size, tau, model
        As in :func:`aflite_core.aflite` (n, m per adversary, t, k, τ, the model family).
    eval_X : mapping of str to array-like of shape (n_eval, d_a), optional
        The same representations of the evaluation rows (every key of ``X``).
    eval_y : array-like of shape (n_eval,), optional
        Evaluation labels.
    random_state : int, numpy Generator or None
        The one seed. With a single adversary the run equals ``aflite(...)`` with the same seed.
    callback : callable, optional
        Called after every round with a :class:`~aflite_core.result.RoundProgress`; ``False`` stops.
    ids, eval_ids : array-like, optional
        Row ids carried into the result.
    n_threads : int or None, default=1
        BLAS threads.

    Returns
    -------
    EnsembleResult
        The pooled run (an :class:`~aflite_core.result.AFLiteResult` whose ``params["n_partitions"]`` is m per
        adversary and ``params["adversaries"]`` the members) and each member's per-round scores.

    Notes
    -----
    The paper (§7) suggests ensembling "a diverse set of adversary models when running AFLite". Pooling the
    counts weighs every adversary by the predictions it made, so a row must be predictable to the ensemble
    as a whole: one adversary that finds a row trivial cannot remove it alone. The run's features (hashed in
    ``provenance``) are the members' matrices side by side.

    Examples
    --------
    >>> import numpy as np
    >>> from aflite_core.evalsets import ensemble_aflite
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400)
    >>> A = rng.normal(size=(400, 4)); A[:150, 0] += 3 * (2 * y[:150] - 1)
    >>> B = rng.normal(size=(400, 4)); B[100:250, 1] += 3 * (2 * y[100:250] - 1)
    >>> ens = ensemble_aflite({"a": A, "b": B}, y, target_size=200, train_size=100, slice_size=40,
    ...                       random_state=0)
    >>> ens.name, ens.result.n_kept >= 200
    ('ensemble(a+b)', True)
    """
    func = "ensemble_aflite"
    Xs = _check_mapping(X, "X", func)
    names = tuple(Xs)
    if (eval_X is None) != (eval_y is None):
        raise ValueError(
            f"The 'eval_X' and 'eval_y' parameters of {func} must be given together. "
            f"Got {'eval_X' if eval_y is None else 'eval_y'} alone instead."
        )
    EXs = None
    if eval_X is not None:
        EXs = _check_mapping(eval_X, "eval_X", func, keys=names, n_cols={k: M.shape[1] for k, M in Xs.items()})
    r = _resolve(Xs[names[0]], y, func=func, target_size=target_size, n_partitions=n_partitions,
                 train_size=train_size, slice_size=slice_size, tau=tau, strategy="slice",
                 eval_X=None if EXs is None else EXs[names[0]], eval_y=eval_y, ids=ids, eval_ids=eval_ids)
    family = resolve_model(model, func)
    n_threads, seed = _check_run_args(callback, n_threads, random_state, func)
    from .engine import Run, RunConfig

    labels = r["labels"]
    m, A = r["m"], len(names)
    backend = _EnsembleBackend(names, Xs, EXs, m)
    config = RunConfig(target_size=r["n_target"], train_size=r["t"], slice_size=r["k"], n_partitions=m * A,
                       tau=r["tau"], strategy="slice", seed=seed, n_threads=n_threads)
    wide = Xs[names[0]] if A == 1 else np.hstack([Xs[a] for a in names])
    wide_eval = None if EXs is None else (EXs[names[0]] if A == 1 else np.hstack([EXs[a] for a in names]))
    extra = {"target_size_given": target_size, "train_size_given": train_size}
    if A > 1:
        extra.update({
            "n_partitions": m,
            "n_partitions_total": m * A,
            "adversaries": list(names),
            "member_n_features": {a: int(M.shape[1]) for a, M in Xs.items()},
            "pooling": "sum of correct out-of-sample predictions / sum of predictions, over all adversaries",
        })
    run = Run(X=wide, codes=labels.codes, classes=labels.classes, config=config, family=family, backend=backend,
              callback=callback, eval_X=wide_eval, eval_codes=r.get("eval_codes"), ids=r["ids"],
              eval_ids=r["eval_ids"], extra_state={"params": extra})
    result = run.execute()
    N, n_eval = len(labels.codes), 0 if EXs is None else len(r["eval_codes"])

    def stack(rows: list[NDArray], width: int, dtype) -> NDArray:
        return np.vstack(rows) if rows else np.empty((0, width), dtype=dtype)

    return EnsembleResult(
        result=result,
        members=names,
        member_scores={a: stack(backend.member_scores[a], N, np.float32) for a in names},
        member_n_predictions={a: stack(backend.member_counts[a], N, np.int32) for a in names},
        member_eval_scores={a: stack(backend.member_eval[a], n_eval, np.float32) for a in names}
        if EXs is not None else None,
    )


# ==============================================================================================================
# annotator agreement (§5.3, Figure 5)
# ==============================================================================================================


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
        raise v.param_error("annotator_labels", func, "a sequence with, per row, a list of labels or None",
                            value, TypeError)
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
    values = list(annotator_labels.tolist() if isinstance(annotator_labels, (pd.Series, np.ndarray))
                  else annotator_labels)
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


def _used_rows(n: int, agreement: NDArray, annotator_source: Any, annotator_sources: Any, func: str
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
            raise v.param_error("annotator_sources", func, "None or a sequence of source names",
                                annotator_sources, TypeError) from None
        if not sources:
            raise v.param_error("annotator_sources", func, "None or a non-empty sequence of source names",
                                annotator_sources)
    source_counts: dict[str, int] = {}
    if annotator_source is None:
        src = None
        used = has.copy()
    else:
        raw = list(annotator_source.tolist() if isinstance(annotator_source, (pd.Series, np.ndarray))
                   else annotator_source)
        if len(raw) != n:
            raise ValueError(
                f"The 'annotator_source' parameter of {func} must have one entry per evaluation row ({n}). "
                f"Got {len(raw)} entries instead."
            )
        src = np.array([None if x is None or (isinstance(x, float) and math.isnan(x)) else str(x) for x in raw],
                       dtype=object)
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
        raise ValueError(
            f"The 'categories' parameter of {func} refers to evaluation rows outside [0, {len(gold)})."
        )
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
        .agg(mean_agreement=("mean_agreement", "mean"), std_over_seeds=("mean_agreement", "std"),
             n_rows_mean=("n_rows", "mean"), n_seeds=("seed", "nunique"))
        .reset_index()
    )
    none = pd.DataFrame({
        "adversary": [NONE], "category": [EVAL_CATEGORIES[2]],
        "mean_agreement": [float(agreement[used].mean()) if used.any() else float("nan")],
        "std_over_seeds": [float("nan")], "n_rows_mean": [float(used.sum())], "n_seeds": [0],
    })
    summary = pd.concat([none, summary], ignore_index=True)
    return AgreementReport(by_seed=by_seed, summary=summary, info=info)


# ==============================================================================================================
# evaluated models
# ==============================================================================================================


def make_evaluated_model(family: str, *, random_state: int = 0, n_train: int | None = None) -> Any:
    """An unfitted classifier of one of the :data:`EVALUATED_FAMILIES`.

    Parameters
    ----------
    family : {"linear", "rbf", "knn", "mlp", "forest"}
        The family (exact settings in :data:`EVALUATED_FAMILIES`).
    random_state : int, default=0
        Seed of the families that draw random numbers (MLP, forest).
    n_train : int, optional
        Training rows (caps kNN's ``n_neighbors``).

    Returns
    -------
    sklearn estimator

    Examples
    --------
    >>> type(make_evaluated_model("forest")).__name__
    'RandomForestClassifier'
    """
    if family == "forest":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=200, n_jobs=1, random_state=int(random_state))
    if family not in EVALUATED_FAMILIES:
        raise ValueError(
            f"The 'family' parameter of make_evaluated_model must be one of {sorted(EVALUATED_FAMILIES)}. "
            f"Got {family!r} instead."
        )
    from .analysis import make_model

    return make_model(family, random_state=int(random_state), n_train=n_train)


def _model_name(family: Any, representation: str) -> str:
    label = family if isinstance(family, str) else type(family).__name__
    return f"{label}:{representation}"


def _check_evaluated(evaluated: Any, representations: Sequence[str], func: str) -> list[tuple[Any, str, str]]:
    """(family or estimator, representation, name) per evaluated model."""
    allowed = (
        f"a sequence of (family, representation) pairs with a family among {sorted(EVALUATED_FAMILIES)} (or an "
        f"unfitted scikit-learn classifier) and a representation among {list(representations)}"
    )
    if evaluated is None or isinstance(evaluated, (str, bytes)):
        raise v.param_error("evaluated", func, allowed, evaluated, TypeError)
    try:
        items = list(evaluated)
    except TypeError:
        raise v.param_error("evaluated", func, allowed, evaluated, TypeError) from None
    out: list[tuple[Any, str, str]] = []
    seen: set[str] = set()
    for item in items:
        if isinstance(item, str) and ":" in item:
            item = tuple(item.split(":", 1))
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise v.param_error("evaluated", func, allowed, item)
        fam, rep = item
        is_est = hasattr(fam, "fit") and hasattr(fam, "predict") and hasattr(fam, "get_params")
        if not (is_est or (isinstance(fam, str) and fam in EVALUATED_FAMILIES)) or rep not in representations:
            raise v.param_error("evaluated", func, allowed, tuple(item))
        name = _model_name(fam, rep)
        if name in seen:
            raise ValueError(f"The 'evaluated' parameter of {func} names the model {name!r} twice.")
        seen.add(name)
        out.append((fam, str(rep), name))
    return out


def _fit_evaluated(models: list[tuple[Any, str, str]], train_X: Mapping[str, NDArray], codes: NDArray,
                   eval_X: Mapping[str, NDArray], eval_codes: NDArray, rng: np.random.Generator,
                   n_threads: int | None) -> tuple[NDArray[np.bool_], list[float], list[int]]:
    """Fit each evaluated model once on all training rows; return correct[eval_row, model] and fit seconds."""
    from sklearn.base import clone
    from sklearn.exceptions import ConvergenceWarning

    correct = np.zeros((len(eval_codes), len(models)), dtype=bool)
    seconds: list[float] = []
    seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=len(models))]
    with blas_threads(n_threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for j, (fam, rep, _) in enumerate(models):
            t0 = time.perf_counter()
            X = train_X[rep]
            if isinstance(fam, str):
                est = make_evaluated_model(fam, random_state=seeds[j], n_train=len(X))
            else:
                est = clone(fam)
                if "random_state" in est.get_params(deep=False):
                    est.set_params(random_state=seeds[j])
            est.fit(X, codes)
            correct[:, j] = np.asarray(est.predict(eval_X[rep])) == eval_codes
            seconds.append(time.perf_counter() - t0)
    return correct, seconds, seeds


# ==============================================================================================================
# the study
# ==============================================================================================================


@dataclass(frozen=True)
class StudyProgress:
    """What the progress callback of :func:`adversary_study` receives after every step.

    Attributes
    ----------
    step : int
        Steps done (1-based).
    n_steps : int
        Steps in total: one for the evaluated models, one per AFLite run.
    stage : str
        ``"evaluated models"``, ``"aflite"`` or ``"ensemble"``.
    adversary : str or None
        Adversary of the run just finished.
    seed : int or None
        Its seed.
    seconds : float
        Wall time since the study started.
    """

    step: int
    n_steps: int
    stage: str
    adversary: str | None
    seed: int | None
    seconds: float

    @property
    def fraction_done(self) -> float:
        """Share of the steps done, in [0, 1]."""
        return self.step / max(self.n_steps, 1)


@dataclass(eq=False)
class AdversaryStudy:
    """Evaluation-set AFLite for several adversaries and seeds, and what it does to evaluated models.

    All tables are tidy pandas DataFrames (one observation per row); ``adversary`` is a representation name,
    ``ensemble(a+b+...)`` for the pooled adversary, or ``"none"`` for the unfiltered evaluation set.

    Attributes
    ----------
    categories : DataFrame
        One row per adversary, seed and evaluation row: ``adversary, seed, row`` (position in the evaluation
        set), ``id``, ``label``, ``category`` (``"removed in round 1"``, ``"removed later"``, ``"selected"``),
        ``removed_round`` (-1 if selected) and ``first_score`` (round-1 predictability).
    category_summary : DataFrame
        ``adversary, category, share_mean, share_std, n_rows_mean, n_seeds`` (Figure 1; mean over seeds).
    runs : DataFrame
        One row per AFLite run: rounds, stop reason, training rows kept, evaluation rows per category, seconds.
    accuracies : DataFrame
        ``adversary, seed, model, family, representation, accuracy, n_rows``: each evaluated model on the
        unfiltered set (adversary ``"none"``, seed missing) and on each run's selected rows.
    accuracy_matrix : DataFrame
        Mean accuracy over seeds: index the evaluated models, columns ``"none"`` then the adversaries
        (Figures 2 and 7).
    rankings : DataFrame
        ``adversary, model, accuracy, rank, rank_unfiltered, rank_change``: rank 1 is the most accurate model
        (ties share the best rank); ``rank_change`` > 0 means the model fell that many places (Figure 3).
    rank_correlation : DataFrame
        Per adversary: ``kendall`` (Kendall's coefficient between the models' mean accuracies on the selected
        rows and on the unfiltered set), ``kendall_p_value``, per-seed ``kendall_seed_mean/min/max`` and
        ``n_models``.
    same_representation : DataFrame
        Per adversary and evaluated model that uses the adversary's representation (or, for the ensemble, a
        member's): ``relation``, accuracies, ranks unfiltered / filtered, ``rank_change`` (> 0: fell),
        ``accuracy_drop`` and ``others_mean_drop`` (the other models' mean drop) (Figure 4).
    agreement : AgreementReport or None
        Annotator agreement per category (Figure 5), when annotator labels were given.
    runs_detail : dict of (str, int) to AFLiteResult
        Every run, by (adversary, seed).
    ensemble_runs : dict of int to EnsembleResult
        The ensemble's runs by seed (with each member's scores).
    eval_correct : DataFrame
        Whether each evaluated model is right on each evaluation row (rows × models, bool).
    params : dict
        Resolved parameters, adversaries, evaluated models, seeds, sizes, chance level, timings.
    """

    categories: pd.DataFrame
    category_summary: pd.DataFrame
    runs: pd.DataFrame
    accuracies: pd.DataFrame
    accuracy_matrix: pd.DataFrame
    rankings: pd.DataFrame
    rank_correlation: pd.DataFrame
    same_representation: pd.DataFrame
    agreement: AgreementReport | None
    runs_detail: dict[tuple[str, int], AFLiteResult]
    ensemble_runs: dict[int, EnsembleResult]
    eval_correct: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def adversaries(self) -> tuple[str, ...]:
        """Adversary names in order (the ensemble last, when run)."""
        return tuple(self.params.get("adversary_names", ()))

    @property
    def category_table(self) -> pd.DataFrame:
        """Mean share of each category per adversary: adversary × category (Figure 1's bars)."""
        if self.category_summary.empty:
            return pd.DataFrame(columns=list(EVAL_CATEGORIES))
        wide = self.category_summary.pivot(index="adversary", columns="category", values="share_mean")
        return wide.reindex(index=[a for a in self.adversaries if a in wide.index], columns=list(EVAL_CATEGORIES))

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table by file stem (what :meth:`save` writes)."""
        out = {
            "categories": self.categories,
            "category_summary": self.category_summary,
            "runs": self.runs,
            "accuracies": self.accuracies,
            "accuracy_matrix": self.accuracy_matrix.reset_index(),
            "rankings": self.rankings,
            "rank_correlation": self.rank_correlation,
            "same_representation": self.same_representation,
        }
        if self.agreement is not None:
            out["agreement"] = self.agreement.summary
            out["agreement_by_seed"] = self.agreement.by_seed
        return out

    def reading(self) -> list[str]:
        """Plain-language sentences built from the numbers (see :func:`study_reading`)."""
        return study_reading(self)

    def summary(self) -> dict[str, Any]:
        """Headline numbers per adversary, JSON-friendly (what the CLI prints and writes to summary.json)."""
        adv: dict[str, Any] = {}
        cat = self.category_table
        means = self.accuracy_matrix.mean(axis=0) if not self.accuracy_matrix.empty else pd.Series(dtype=float)
        corr = self.rank_correlation.set_index("adversary") if not self.rank_correlation.empty else None
        for a in self.adversaries:
            entry: dict[str, Any] = {}
            if a in cat.index:
                entry["shares"] = {c: _num(cat.loc[a, c]) for c in EVAL_CATEGORIES}
            if a in means.index:
                entry["mean_accuracy"] = _num(means[a])
            if corr is not None and a in corr.index:
                entry["kendall"] = _num(corr.loc[a, "kendall"])
            adv[a] = entry
        out: dict[str, Any] = {
            "adversaries": adv,
            "mean_accuracy_unfiltered": _num(means.get(NONE, float("nan"))) if len(means) else None,
            "n_train": self.params.get("n_train"),
            "n_eval": self.params.get("n_eval"),
            "seeds": self.params.get("seeds"),
            "evaluated": self.params.get("evaluated_names"),
            "complete": self.params.get("complete"),
            "seconds": self.params.get("seconds"),
        }
        if self.agreement is not None:
            out["agreement"] = self.agreement.info
        return out

    def save(self, directory: str | Path) -> Path:
        """Write every table as Parquet and CSV, plus ``summary.json`` (parameters, headline, reading).

        Parameters
        ----------
        directory : str or Path
            Created if missing; files of the same names are overwritten.

        Returns
        -------
        Path
            The directory.
        """
        from . import _durable

        out = Path(directory)
        _durable.make_dirs(out)
        for stem, table in self.tables().items():
            frame = table.copy()
            for col in frame.columns:
                if frame[col].dtype == object:  # ids / labels of mixed types: text, so Parquet has one type
                    kinds = {type(x.item() if isinstance(x, np.generic) else x) for x in frame[col] if x is not None}
                    if len(kinds) > 1 or not kinds <= {str, int, float, bool}:
                        frame[col] = frame[col].map(lambda x: x if x is None or isinstance(x, str) else str(x))
            buf = io.BytesIO()
            frame.to_parquet(buf, index=False)
            _durable.write_file(out / f"{stem}.parquet", buf.getvalue())  # each file whole or not at all
            _durable.write_file(out / f"{stem}.csv", frame.to_csv(index=False).encode("utf-8"))
        payload = {
            "format": "aflite-studio-eval-filter",
            "format_version": 1,
            "summary": self.summary(),
            "reading": self.reading(),
            "params": self.params,
            "files": sorted(f"{stem}.{ext}" for stem in self.tables() for ext in ("parquet", "csv")),
        }
        text = json.dumps(payload, indent=2, default=_json_default, ensure_ascii=False) + "\n"
        _durable.write_file(out / "summary.json", text.encode("utf-8"))  # written last: the study is complete
        return out

    def __repr__(self) -> str:
        return (
            f"AdversaryStudy(adversaries={list(self.adversaries)}, seeds={self.params.get('seeds')}, "
            f"evaluated={self.params.get('evaluated_names')})"
        )


def _num(x: Any) -> float | None:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if not math.isfinite(f) else round(f, 6)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return repr(value)


def _check_seeds(seeds: Any, func: str) -> tuple[int, ...]:
    allowed = "a non-empty sequence of distinct ints in [0, inf)"
    if v._is_int(seeds):
        seeds = (seeds,)
    try:
        values = tuple(seeds)
    except TypeError:
        raise v.param_error("seeds", func, allowed, seeds, TypeError) from None
    if not values or not all(v._is_int(s) and s >= 0 for s in values) or len(set(values)) != len(values):
        raise v.param_error("seeds", func, allowed, seeds)
    return tuple(int(s) for s in values)


def _check_names(value: Any, name: str, func: str, available: Sequence[str]) -> tuple[str, ...]:
    allowed = f"a non-empty sequence of distinct representation names among {list(available)}"
    if isinstance(value, str):
        value = (value,)
    try:
        values = tuple(value)
    except TypeError:
        raise v.param_error(name, func, allowed, value, TypeError) from None
    if not values or len(set(values)) != len(values) or not all(isinstance(x, str) and x in available
                                                                for x in values):
        raise v.param_error(name, func, allowed, value)
    return values


def _ranks(acc: NDArray[np.float64]) -> NDArray[np.float64]:
    """Rank 1 = most accurate; ties share the best rank; NaN accuracies get NaN."""
    from scipy.stats import rankdata

    out = np.full(len(acc), np.nan)
    ok = np.isfinite(acc)
    if ok.any():
        out[ok] = rankdata(-acc[ok], method="min")
    return out


def _kendall(a: NDArray[np.float64], b: NDArray[np.float64]) -> tuple[float, float]:
    """Kendall's coefficient (scipy's variant b, which handles ties) and its p-value; NaN when undefined."""
    from scipy.stats import kendalltau

    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 2 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = kendalltau(a[ok], b[ok])
    return float(res.statistic), float(res.pvalue)


def _category_of(removed_round: NDArray[np.int32]) -> NDArray:
    cat = np.full(len(removed_round), EVAL_CATEGORIES[2], dtype=object)
    cat[removed_round == 1] = EVAL_CATEGORIES[0]
    cat[removed_round > 1] = EVAL_CATEGORIES[1]
    return cat


def adversary_study(
    train_X: Mapping[str, ArrayLike],
    train_y: ArrayLike,
    eval_X: Mapping[str, ArrayLike],
    eval_y: ArrayLike,
    *,
    target_size: int | float,
    train_size: int | float,
    slice_size: int,
    adversaries: Sequence[str] | None = None,
    evaluated: Sequence[tuple[Any, str]] = (),
    seeds: Sequence[int] = (0, 1, 2),
    tau: float = 0.75,
    n_partitions: int = 64,
    model: Any = "linear",
    ensemble: bool | Sequence[str] = False,
    annotator_labels: Sequence[Any] | None = None,
    annotator_source: Sequence[Any] | None = None,
    annotator_sources: Sequence[str] | None = DEFAULT_ANNOTATOR_SOURCES,
    ids: ArrayLike | None = None,
    eval_ids: ArrayLike | None = None,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
    callback: Callable[[StudyProgress], bool | None] | None = None,
) -> AdversaryStudy:
    """Filter an evaluation set with AFLite for several adversaries and seeds, and score evaluated models on it.

    For every adversary (a named representation Φ with a training and an evaluation matrix) and every seed,
    :func:`aflite_core.aflite` runs on the training rows with the evaluation rows filtered alongside
    (appendix Algorithm 1 of Phang et al.): evaluation rows never train a model and never change which
    training rows are removed; every evaluation row with p ≥ ``tau`` leaves in that round. Each evaluation row
    ends "removed in round 1", "removed later" or "selected" (Figure 1). The evaluated models, each a
    (family, representation) pair, are trained **once** on all training rows, independently of the
    adversaries, and scored on the unfiltered set and on each run's selected rows (Figures 2, 3, 4, 7).

    Parameters
    ----------
    train_X : mapping of str to array-like of shape (n_train, d_r)
        Named representations of the training rows (adversaries and the evaluated models' inputs).
    train_y : array-like of shape (n_train,)
        Training labels (any hashable type).
    eval_X : mapping of str to array-like of shape (n_eval, d_r)
        The same representations of the evaluation rows (every name used).
    eval_y : array-like of shape (n_eval,)
        Evaluation labels.
    target_size, train_size : int or float
        n and t of AFLite (counts or fractions of n_train; t < n).
    slice_size : int
        k, training rows removed per round at most.
    adversaries : sequence of str, optional
        Representations to filter with, in display order (e.g. weakest first). Default: every key of
        ``train_X``.
    evaluated : sequence of (family, representation), default=()
        Evaluated models: a family of :data:`EVALUATED_FAMILIES` (or an unfitted scikit-learn classifier)
        and a representation name, e.g. ``[("linear", "pixels"), ("forest", "pixels")]``. Named
        ``"family:representation"`` in the tables.
    seeds : sequence of int, default=(0, 1, 2)
        AFLite seeds; every adversary runs once per seed (the paper averages three).
    tau : float, default=0.75
        τ, AFLite's threshold (Table 3 of the paper).
    n_partitions : int, default=64
        m, models per round (Table 3).
    model : "linear", "logistic", LinearFamily or scikit-learn classifier, default="linear"
        The adversaries' weak model family M.
    ensemble : bool or sequence of str, default=False
        Also filter with the pooled ensemble of all adversaries (True) or of the named ones (§7); it appears
        as one more adversary named ``ensemble(a+b+...)`` (see :func:`ensemble_aflite`).
    annotator_labels : sequence of length n_eval, optional
        Per evaluation row its annotator labels (a list, None when it has none); enables the agreement table.
    annotator_source : sequence of length n_eval, optional
        Per evaluation row where its annotator labels came from (e.g. the shared data's
        ``annotator_labels_src``).
    annotator_sources : sequence of str or None, default=("random_subset",)
        Sources whose rows enter the agreement means (None: every source). Ignored without
        ``annotator_source``.
    ids, eval_ids : array-like, optional
        Ids of the training and evaluation rows (``categories["id"]`` shows the evaluation ids).
    random_state : int, numpy Generator or None, default=0
        Seed of the evaluated models (each gets its own integer seed drawn from it).
    n_threads : int or None, default=1
        BLAS threads for everything fitted here.
    callback : callable, optional
        Called with a :class:`StudyProgress` after the evaluated models and after every AFLite run;
        returning ``False`` stops the study: the result then holds the runs finished so far
        (``params["complete"]`` is False).

    Returns
    -------
    AdversaryStudy
        The tidy tables (categories, accuracies, rankings with Kendall's coefficient, same-representation
        rank change, agreement) and every run.

    Raises
    ------
    ValueError
        For an invalid parameter, with the uniform wording of :mod:`aflite_core._validation`.

    Notes
    -----
    Rankings use the models' accuracies averaged over seeds; ``rank_correlation`` also gives Kendall's
    coefficient of each seed's ranking. A run that selects no evaluation row gives missing accuracies.

    References
    ----------
    .. [1] J. Phang et al., "Adversarially Constructed Evaluation Sets Are More Challenging, but May Not Be
       Fair", §3, §5, appendix Algorithm 1.

    Examples
    --------
    >>> import numpy as np
    >>> from aflite_core.evalsets import adversary_study
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 700)
    >>> strong = rng.normal(size=(700, 4)); strong[:, 0] += 2.0 * (2 * y - 1)
    >>> weak = rng.normal(size=(700, 4)); weak[:, 0] += 0.5 * (2 * y - 1)
    >>> tr, ev = slice(0, 500), slice(500, 700)
    >>> study = adversary_study({"weak": weak[tr], "strong": strong[tr]}, y[tr],
    ...                         {"weak": weak[ev], "strong": strong[ev]}, y[ev],
    ...                         target_size=200, train_size=100, slice_size=50, seeds=(0,),
    ...                         evaluated=[("linear", "weak"), ("knn", "strong")])
    >>> shares = study.category_table
    >>> bool(shares.loc["strong", "selected"] < shares.loc["weak", "selected"])
    True
    >>> list(study.accuracy_matrix.columns)
    ['none', 'weak', 'strong']
    """
    func = "adversary_study"
    started = time.perf_counter()
    TX = _check_mapping(train_X, "train_X", func)
    reps = tuple(TX)
    adv = reps if adversaries is None else _check_names(adversaries, "adversaries", func, reps)
    models = _check_evaluated(evaluated, reps, func)
    seed_list = _check_seeds(seeds, func)
    members: tuple[str, ...] = ()
    if ensemble is True:
        members = adv
    elif ensemble is not False and ensemble is not None:
        members = _check_names(ensemble, "ensemble", func, reps)
    if members and len(members) < 2:
        raise ValueError(
            f"The 'ensemble' parameter of {func} must name at least 2 adversaries to pool. Got {list(members)} "
            "instead."
        )
    if NONE in adv:
        raise ValueError(f"The 'adversaries' parameter of {func} must not name an adversary {NONE!r} (the name of the "
                         "unfiltered evaluation set). Rename that representation.")
    used_reps = list(dict.fromkeys([*adv, *members, *(rep for _, rep, _ in models)]))
    EX = _check_mapping(eval_X, "eval_X", func, keys=used_reps, n_cols={k: TX[k].shape[1] for k in used_reps})
    # validate the AFLite parameters, labels and ids once, before any work
    resolved = _resolve(TX[adv[0]], train_y, func=func, target_size=target_size, n_partitions=n_partitions,
                        train_size=train_size, slice_size=slice_size, tau=tau, strategy="slice",
                        eval_X=EX[adv[0]], eval_y=eval_y, ids=ids, eval_ids=eval_ids)
    resolve_model(model, func)
    labels = resolved["labels"]
    codes, eval_codes = labels.codes, resolved["eval_codes"]
    n_eval = len(eval_codes)
    if callback is not None and not callable(callback):
        raise v.param_error("callback", func, "a callable or None", callback, TypeError)
    if n_threads is not None:
        n_threads = v.check_int(n_threads, "n_threads", func, low=1)
    eval_labels = np.empty(n_eval, dtype=object)
    eval_labels[:] = [labels.classes[c] for c in eval_codes]
    agreement_rows = None
    if annotator_labels is not None:
        agreement_rows = annotator_agreement(eval_labels, annotator_labels)
        _used_rows(n_eval, agreement_rows, annotator_source, annotator_sources, func)  # validate early
    elif annotator_source is not None:
        raise ValueError(f"The 'annotator_source' parameter of {func} needs 'annotator_labels' too.")
    rng = np.random.default_rng(v.check_random_state(random_state, func))
    model_seed_draw = np.random.default_rng(int(rng.integers(0, 2**63 - 1)))

    ens_name = ensemble_name(members) if members else None
    names = [*adv, *([ens_name] if ens_name else [])]
    n_steps = 1 + len(adv) * len(seed_list) + (len(seed_list) if members else 0)
    step = 0
    stopped = False

    def report(stage: str, adversary: str | None, seed: int | None) -> None:
        nonlocal step, stopped
        step += 1
        if callback is not None:
            prog = StudyProgress(step=step, n_steps=n_steps, stage=stage, adversary=adversary, seed=seed,
                                 seconds=time.perf_counter() - started)
            if callback(prog) is False:
                stopped = True

    # evaluated models: trained once on the full training set, independently of the adversaries
    correct, fit_seconds, model_seeds = _fit_evaluated(models, TX, codes, EX, eval_codes, model_seed_draw,
                                                       n_threads)
    report("evaluated models", None, None)

    common = {"target_size": target_size, "n_partitions": n_partitions, "train_size": train_size,
              "slice_size": slice_size, "tau": tau, "model": model, "n_threads": n_threads, "ids": ids,
              "eval_ids": eval_ids}
    detail: dict[tuple[str, int], AFLiteResult] = {}
    ens_runs: dict[int, EnsembleResult] = {}
    for a in adv:
        for s in seed_list:
            if stopped:
                break
            detail[(a, s)] = aflite(TX[a], train_y, eval_X=EX[a], eval_y=eval_y, random_state=s, **common)
            report("aflite", a, s)
    if members:
        for s in seed_list:
            if stopped:
                break
            ens = ensemble_aflite({a: TX[a] for a in members}, train_y, eval_X={a: EX[a] for a in members},
                                  eval_y=eval_y, random_state=s, **common)
            ens_runs[s] = ens
            detail[(ens_name, s)] = ens.result
            report("ensemble", ens_name, s)

    eval_id_values = resolved["eval_ids"] if resolved["eval_ids"] is not None else np.arange(n_eval)
    categories = _categories_frame(detail, names, seed_list, eval_id_values, eval_labels)
    category_summary = _category_summary(categories, names)
    runs = _runs_frame(detail, names, seed_list)
    model_names = [name for _, _, name in models]
    correct_frame = pd.DataFrame(correct, columns=model_names)
    correct_frame.index.name = "row"
    accuracies = _accuracies_frame(detail, names, seed_list, models, correct)
    matrix = _accuracy_matrix(accuracies, names, model_names)
    rankings, rank_corr = _rankings(matrix, accuracies, names, model_names)
    same = _same_representation(matrix, rankings, models, adv, members, ens_name)
    agreement = None
    if agreement_rows is not None:
        agreement = category_agreement(categories, eval_labels, annotator_labels, annotator_source=annotator_source,
                                       annotator_sources=annotator_sources)
    params = {
        "target_size": resolved["n_target"],
        "train_size": resolved["t"],
        "slice_size": resolved["k"],
        "tau": resolved["tau"],
        "n_partitions": resolved["m"],
        "target_size_given": target_size,
        "train_size_given": train_size,
        "model": resolve_model(model, func).spec(),
        "seeds": list(seed_list),
        "adversaries": list(adv),
        "ensemble_members": list(members),
        "adversary_names": names,
        "evaluated": [[fam if isinstance(fam, str) else type(fam).__name__, rep] for fam, rep, _ in models],
        "evaluated_names": model_names,
        "evaluated_families": {name: EVALUATED_FAMILIES.get(fam, repr(fam)) if isinstance(fam, str) else repr(fam)
                               for fam, _, name in models},
        "evaluated_seeds": dict(zip(model_names, model_seeds)),
        "evaluated_fit_seconds": dict(zip(model_names, [round(s, 3) for s in fit_seconds])),
        "representations": {r: int(TX[r].shape[1]) for r in used_reps},
        "classes": [_label_text(c) for c in labels.classes],
        "n_classes": labels.n_classes,
        "chance": 1.0 / labels.n_classes,
        "majority_share_eval": float(np.bincount(eval_codes, minlength=labels.n_classes).max() / max(n_eval, 1)),
        "n_train": len(codes),
        "n_eval": int(n_eval),
        "random_state": random_state if isinstance(random_state, (int, type(None))) else repr(random_state),
        "n_threads": n_threads,
        "complete": not stopped,
        "annotator_sources": None if annotator_sources is None else list(annotator_sources),
        "seconds": round(time.perf_counter() - started, 3),
        "versions": versions(),
    }
    return AdversaryStudy(
        categories=categories,
        category_summary=category_summary,
        runs=runs,
        accuracies=accuracies,
        accuracy_matrix=matrix,
        rankings=rankings,
        rank_correlation=rank_corr,
        same_representation=same,
        agreement=agreement,
        runs_detail=detail,
        ensemble_runs=ens_runs,
        eval_correct=correct_frame,
        params=params,
    )


def _categories_frame(detail, names, seeds, eval_ids, eval_labels) -> pd.DataFrame:
    parts = []
    for a in names:
        for s in seeds:
            res = detail.get((a, s))
            if res is None:
                continue
            rr = res.eval_removed_round
            parts.append(pd.DataFrame({
                "adversary": a, "seed": s, "row": np.arange(len(rr)), "id": eval_ids, "label": eval_labels,
                "category": _category_of(rr), "removed_round": rr, "first_score": res.eval_first_score,
            }))
    cols = ["adversary", "seed", "row", "id", "label", "category", "removed_round", "first_score"]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)[cols]


def _category_summary(categories: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    cols = ["adversary", "category", "share_mean", "share_std", "n_rows_mean", "n_seeds"]
    if categories.empty:
        return pd.DataFrame(columns=cols)
    counts = categories.groupby(["adversary", "seed", "category"]).size().rename("n_rows").reset_index()
    runs = categories[["adversary", "seed"]].drop_duplicates()
    full = runs.merge(pd.DataFrame({"category": list(EVAL_CATEGORIES)}), how="cross")
    counts = full.merge(counts, on=["adversary", "seed", "category"], how="left").fillna({"n_rows": 0})
    sizes = categories.groupby(["adversary", "seed"]).size().rename("n_eval").reset_index()
    counts = counts.merge(sizes, on=["adversary", "seed"])
    counts["share"] = counts["n_rows"] / counts["n_eval"]
    out = (
        counts.groupby(["adversary", "category"])
        .agg(share_mean=("share", "mean"), share_std=("share", "std"), n_rows_mean=("n_rows", "mean"),
             n_seeds=("seed", "nunique"))
        .reset_index()
    )
    out["_a"] = out["adversary"].map({a: i for i, a in enumerate(names)})
    out["_c"] = out["category"].map({c: i for i, c in enumerate(EVAL_CATEGORIES)})
    return out.sort_values(["_a", "_c"]).drop(columns=["_a", "_c"]).reset_index(drop=True)[cols]


def _runs_frame(detail, names, seeds) -> pd.DataFrame:
    rows = []
    for a in names:
        for s in seeds:
            res = detail.get((a, s))
            if res is None:
                continue
            rr = res.eval_removed_round
            rows.append({
                "adversary": a, "seed": s, "rounds": res.n_rounds, "stop_reason": res.stop_reason,
                "train_rows": res.n_rows, "train_kept": res.n_kept, "n_eval": len(rr),
                "removed_in_round_1": int((rr == 1).sum()), "removed_later": int((rr > 1).sum()),
                "selected": int((rr < 0).sum()),
                "seconds": round(float(res.history["seconds"].sum()), 4) if len(res.history) else 0.0,
            })
    return pd.DataFrame(rows, columns=["adversary", "seed", "rounds", "stop_reason", "train_rows", "train_kept",
                                       "n_eval", "removed_in_round_1", "removed_later", "selected", "seconds"])


def _accuracies_frame(detail, names, seeds, models, correct) -> pd.DataFrame:
    rows = []
    fams = [fam if isinstance(fam, str) else type(fam).__name__ for fam, _, _ in models]

    def add(adversary: str, seed: int | None, mask: NDArray[np.bool_]) -> None:
        n = int(mask.sum())
        acc = correct[mask].mean(axis=0) if n else np.full(len(models), np.nan)
        for j, (_, rep, name) in enumerate(models):
            rows.append({"adversary": adversary, "seed": seed, "model": name, "family": fams[j],
                         "representation": rep, "accuracy": float(acc[j]), "n_rows": n})

    add(NONE, None, np.ones(len(correct), dtype=bool))
    for a in names:
        for s in seeds:
            res = detail.get((a, s))
            if res is not None:
                add(a, s, res.eval_kept)
    frame = pd.DataFrame(rows, columns=["adversary", "seed", "model", "family", "representation", "accuracy",
                                        "n_rows"])
    frame["seed"] = frame["seed"].astype("Int64")
    return frame


def _accuracy_matrix(accuracies: pd.DataFrame, names, model_names) -> pd.DataFrame:
    cols = [NONE, *names]
    if accuracies.empty:
        return pd.DataFrame(index=pd.Index(model_names, name="model"), columns=cols, dtype=float)
    mean = accuracies.groupby(["model", "adversary"])["accuracy"].mean().unstack("adversary")
    mean = mean.reindex(index=model_names, columns=cols)
    mean.index.name = "model"
    mean.columns.name = "adversary"
    return mean


def _rankings(matrix: pd.DataFrame, accuracies: pd.DataFrame, names, model_names
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    rank_cols = ["adversary", "model", "accuracy", "rank", "rank_unfiltered", "rank_change"]
    corr_cols = ["adversary", "kendall", "kendall_p_value", "kendall_seed_mean", "kendall_seed_min",
                 "kendall_seed_max", "n_models"]
    if not model_names:
        return pd.DataFrame(columns=rank_cols), pd.DataFrame(columns=corr_cols)
    base = matrix[NONE].to_numpy(np.float64)
    base_rank = _ranks(base)
    rows, corr = [], []
    for a in [NONE, *names]:
        acc = matrix[a].to_numpy(np.float64)
        rk = _ranks(acc)
        for j, name in enumerate(model_names):
            rows.append({"adversary": a, "model": name, "accuracy": acc[j], "rank": rk[j],
                         "rank_unfiltered": base_rank[j], "rank_change": rk[j] - base_rank[j]})
        if a == NONE:
            continue
        k, p = _kendall(base, acc)
        per_seed = []
        sub = accuracies[accuracies["adversary"] == a]
        for _, grp in sub.groupby("seed"):
            seed_acc = grp.set_index("model")["accuracy"].reindex(model_names).to_numpy(np.float64)
            per_seed.append(_kendall(base, seed_acc)[0])
        ps = np.array(per_seed, dtype=float)
        finite = ps[np.isfinite(ps)]
        corr.append({
            "adversary": a, "kendall": k, "kendall_p_value": p,
            "kendall_seed_mean": float(finite.mean()) if finite.size else float("nan"),
            "kendall_seed_min": float(finite.min()) if finite.size else float("nan"),
            "kendall_seed_max": float(finite.max()) if finite.size else float("nan"),
            "n_models": int(np.isfinite(acc).sum()),
        })
    rankings = pd.DataFrame(rows, columns=rank_cols)
    for col in ("rank", "rank_unfiltered", "rank_change"):
        rankings[col] = rankings[col].astype("Int64") if rankings[col].notna().all() else rankings[col]
    return rankings, pd.DataFrame(corr, columns=corr_cols)


def _same_representation(matrix, rankings, models, adv, members, ens_name) -> pd.DataFrame:
    cols = ["adversary", "model", "representation", "relation", "accuracy_unfiltered", "accuracy_filtered",
            "rank_unfiltered", "rank_filtered", "rank_change", "accuracy_drop", "others_mean_drop", "n_models"]
    rows = []
    if not models:
        return pd.DataFrame(columns=cols)
    pairs = [(a, (a,), "same representation") for a in adv]
    if ens_name:
        pairs.append((ens_name, members, "ensemble member"))
    ranked = rankings.set_index(["adversary", "model"])
    for a, reps, relation in pairs:
        drops = matrix[NONE] - matrix[a]
        for _, rep, name in models:
            if rep not in reps:
                continue
            others = drops.drop(index=name)
            r = ranked.loc[(a, name)]
            rows.append({
                "adversary": a, "model": name, "representation": rep, "relation": relation,
                "accuracy_unfiltered": float(matrix.loc[name, NONE]), "accuracy_filtered": float(matrix.loc[name, a]),
                "rank_unfiltered": r["rank_unfiltered"], "rank_filtered": r["rank"], "rank_change": r["rank_change"],
                "accuracy_drop": float(drops[name]),
                "others_mean_drop": float(others.mean()) if len(others) else float("nan"),
                "n_models": len(models),
            })
    frame = pd.DataFrame(rows, columns=cols)
    for col in ("rank_unfiltered", "rank_filtered", "rank_change"):
        if len(frame) and frame[col].notna().all():
            frame[col] = frame[col].astype("Int64")
    return frame


# ==============================================================================================================
# a plain-language reading
# ==============================================================================================================


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _model_sentences(study: AdversaryStudy, a: str, corr: pd.DataFrame | None) -> list[str]:
    """Accuracy, ranking and same-representation sentences of one adversary."""
    out: list[str] = []
    M = study.accuracy_matrix
    before, after = M[NONE], M[a]
    ok = before.notna() & after.notna()
    if not ok.any():
        return [f"Filtering with {a} selects no evaluation row, so no model can be scored on it."]
    lower = int((after[ok] < before[ok]).sum())
    n = int(ok.sum())
    if lower == n:
        verb = "lowers every evaluated model"
    elif lower == 0:
        verb = "lowers no evaluated model"
    else:
        verb = f"lowers {lower} of {n} evaluated models"
    out.append(f"Filtering with {a} {verb}: mean accuracy {before[ok].mean():.2f} → {after[ok].mean():.2f}.")
    if corr is not None and a in corr.index and np.isfinite(corr.loc[a, "kendall"]):
        k = float(corr.loc[a, "kendall"])
        if k >= 1 - 1e-12:
            out.append(f"The ranking of the models is unchanged (Kendall's coefficient {k:.2f}).")
        else:
            out.append(f"The ranking changes: Kendall's coefficient {k:.2f} against the unfiltered ranking.")
    same = study.same_representation
    members = same[(same["adversary"] == a) & (same["relation"] == "ensemble member")]
    if len(members):
        ch = members["rank_change"].dropna().astype(int)
        parts = [f"{int((ch > 0).sum())} fall", f"{int((ch < 0).sum())} rise",
                 f"{int((ch == 0).sum())} keep their place"]
        out.append(
            f"Of the {len(members)} evaluated model(s) on an ensemble member's representation, {', '.join(parts)}; "
            f"they lose {members['accuracy_drop'].mean():.2f} accuracy on average."
        )
    for _, row in same[(same["adversary"] == a) & (same["relation"] == "same representation")].iterrows():
        change = row["rank_change"]
        if pd.isna(change):
            continue
        change = int(change)
        who = "The model sharing the adversary's representation"
        where = f"from {_ordinal(int(row['rank_unfiltered']))} to {_ordinal(int(row['rank_filtered']))}"
        if change > 0:
            move = f"falls {change} place{'s' if change != 1 else ''} ({where})"
        elif change < 0:
            move = f"rises {-change} place{'s' if change != -1 else ''} ({where})"
        else:
            move = f"keeps its place ({_ordinal(int(row['rank_filtered']))})"
        drop, others = row["accuracy_drop"], row["others_mean_drop"]
        extra = ""
        if np.isfinite(drop) and np.isfinite(others):
            extra = f"; it loses {drop:.2f} accuracy, the other models {others:.2f} on average"
        out.append(f"{who} ({row['model']}) {move}{extra}.")
    return out


def study_reading(study: AdversaryStudy, adversary: str | None = None) -> list[str]:
    """A few plain sentences computed only from the study's numbers.

    Parameters
    ----------
    study : AdversaryStudy
        The study.
    adversary : str, optional
        Only this adversary (default: an overview sentence, then every adversary).

    Returns
    -------
    list of str
        One sentence per item, e.g. "Filtering with mlp lowers every evaluated model: mean accuracy
        0.95 → 0.61."
    """
    names = list(study.adversaries) if adversary is None else [adversary]
    if adversary is not None and adversary not in study.adversaries:
        raise ValueError(f"The study has no adversary {adversary!r}; it has {list(study.adversaries)}.")
    out: list[str] = []
    M = study.accuracy_matrix
    have_models = not M.empty and M.shape[0] > 0
    cats = study.category_table
    corr = study.rank_correlation.set_index("adversary") if not study.rank_correlation.empty else None
    seeds = study.params.get("seeds", [])
    if adversary is None and have_models and len(names) > 1:
        means = M.mean(axis=0)
        filt = means.drop(index=NONE).dropna()
        if len(filt):
            lo, hi = filt.idxmin(), filt.idxmax()
            out.append(
                f"Mean accuracy of the {M.shape[0]} evaluated models is {means[NONE]:.2f} on the full evaluation "
                f"set and ranges from {filt[hi]:.2f} ({hi}) to {filt[lo]:.2f} ({lo}) on the selected rows."
            )
    for a in names:
        if a in cats.index:
            sel_n = study.category_summary.query("adversary == @a and category == 'selected'")["n_rows_mean"]
            n_sel = float(sel_n.iloc[0]) if len(sel_n) else float("nan")
            out.append(
                f"{a} removes {_pct(cats.loc[a, EVAL_CATEGORIES[0]])} of the evaluation rows in round 1, "
                f"{_pct(cats.loc[a, EVAL_CATEGORIES[1]])} later and selects {_pct(cats.loc[a, EVAL_CATEGORIES[2]])} "
                f"({n_sel:.0f} rows; mean over {len(seeds)} seed{'s' if len(seeds) != 1 else ''})."
            )
        if have_models and a in M.columns:
            out.extend(_model_sentences(study, a, corr))
        if study.agreement is not None:
            tab = study.agreement.table()
            if a in tab.index:
                r1, sel = tab.loc[a].get(EVAL_CATEGORIES[0]), tab.loc[a].get(EVAL_CATEGORIES[2])
                if r1 is not None and sel is not None and np.isfinite(r1) and np.isfinite(sel):
                    info = study.agreement.info
                    out.append(
                        f"Annotator agreement is {r1:.2f} among the rows {a} removes in round 1 and {sel:.2f} among "
                        f"the rows it selects ({info['n_used']} evaluation rows with labels used)."
                    )
    return out


# ==============================================================================================================
# ready-made setups
# ==============================================================================================================


@dataclass(frozen=True, eq=False)
class AdversarySetup:
    """Training and evaluation matrices per representation, with the adversaries and evaluated models to use.

    Attributes
    ----------
    name : str
        Name of the data.
    train_X, eval_X : dict of str to ndarray of float32
        Representations of the training and evaluation rows.
    train_y, eval_y : ndarray
        Labels (class names).
    adversaries : tuple of str
        Adversaries, weakest first.
    evaluated : tuple of (str, str)
        Evaluated models as (family, representation).
    params : dict
        AFLite parameters (``target_size``, ``train_size``, ``slice_size``, ``tau``, ``n_partitions``).
    train_ids, eval_ids : ndarray
        Row ids.
    annotator_labels : list or None
        Per evaluation row its annotator labels (None where absent), when the data has them.
    annotator_source : ndarray or None
        Per evaluation row the source of its annotator labels.
    descriptions : dict of str to str
        One line per representation.
    strength : dict of str to float
        Each adversary's strength: mean out-of-sample predictability of the training rows in one scoring
        round with the study's parameters (the estimate of R(Φ) of Le Bras et al., eq. 5).
    meta : dict
        How the split was made.
    """

    name: str
    train_X: dict[str, NDArray[np.float32]]
    train_y: NDArray
    eval_X: dict[str, NDArray[np.float32]]
    eval_y: NDArray
    adversaries: tuple[str, ...]
    evaluated: tuple[tuple[str, str], ...]
    params: dict[str, Any]
    train_ids: NDArray | None = None
    eval_ids: NDArray | None = None
    annotator_labels: list | None = None
    annotator_source: NDArray | None = None
    descriptions: dict[str, str] = field(default_factory=dict)
    strength: dict[str, float] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def study_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`adversary_study` for this setup."""
        kw: dict[str, Any] = {
            "adversaries": self.adversaries, "evaluated": self.evaluated, "ids": self.train_ids,
            "eval_ids": self.eval_ids, **self.params,
        }
        if self.annotator_labels is not None:
            kw["annotator_labels"] = self.annotator_labels
            kw["annotator_source"] = self.annotator_source
        return kw

    def run(self, **overrides: Any) -> AdversaryStudy:
        """Run :func:`adversary_study` on this setup (keyword arguments override the setup's)."""
        kw = {**self.study_kwargs(), **overrides}
        return adversary_study(self.train_X, self.train_y, self.eval_X, self.eval_y, **kw)

    def __repr__(self) -> str:
        n_train = len(self.train_y)
        return (
            f"AdversarySetup(name={self.name!r}, n_train={n_train}, n_eval={len(self.eval_y)}, "
            f"adversaries={list(self.adversaries)}, evaluated={[f'{f}:{r}' for f, r in self.evaluated]})"
        )


def _strengths(train_X: Mapping[str, NDArray], y: NDArray, names: Sequence[str], *, train_size: int,
               n_partitions: int, seed: int, n_threads: int | None) -> dict[str, float]:
    from .filtering import predictability

    out = {}
    for a in names:
        p = predictability(train_X[a], y, n_partitions=n_partitions, train_size=train_size, random_state=seed,
                           n_threads=n_threads)
        out[a] = round(float(np.nanmean(p)), 4)
    return out


def digits_adversary_setup(
    *,
    random_state: int | np.random.Generator | None = 0,
    eval_fraction: float = 0.3,
    adversaries: Sequence[str] | None = None,
    evaluated: Sequence[tuple[str, str]] | None = None,
    n_threads: int | None = 1,
) -> AdversarySetup:
    """The bundled digits split into training and evaluation parts, with four adversaries and evaluated models.

    :func:`aflite_core.datasets.load_digits_dataset` gives 1,438 digits (its warm-up rows already left out)
    with four representations: raw ``pixels`` (64-d), ``pca`` (16 components), and the hidden layers of two
    warm-up MLPs, ``mlp_small`` (8 units) and ``mlp`` (64 units). A stratified, seeded ``eval_fraction``
    becomes the evaluation set (432 rows by default; 1,006 training rows).

    The adversaries are ordered weakest first by their measured strength with the study's parameters
    (``strength``: mean out-of-sample predictability of the training rows in one round). Evaluated models
    (:data:`DIGITS_EVALUATED`): ``linear:pixels``, ``knn:pca``, ``rbf:mlp``, ``mlp:pixels``,
    ``forest:pixels`` and ``linear:mlp_small``, so every adversary shares its representation with at least
    one of them (Figure 4).

    AFLite parameters (:data:`DIGITS_STUDY_DEFAULTS`): ``target_size=400``, ``train_size=100``,
    ``slice_size=100``, ``tau=0.75``, ``n_partitions=64``. With these 70-85 % of the evaluation rows leave in
    round 1 (more for stronger adversaries), 6-11 % later and 9-19 % (about 40-80 rows) are selected; every
    run reaches the target size, or stops early by τ, within seven rounds.

    Parameters
    ----------
    random_state : int, numpy Generator or None, default=0
        Seed of the split (and of the strength measurement).
    eval_fraction : float, default=0.3
        Share of the rows in the evaluation set, in (0, 1).
    adversaries : sequence of str, optional
        A subset of ``("pixels", "pca", "mlp_small", "mlp")`` (still ordered by strength).
    evaluated : sequence of (family, representation), optional
        Replaces the default evaluated models.
    n_threads : int or None, default=1
        BLAS threads for the strength measurement.

    Returns
    -------
    AdversarySetup
        ``setup.run()`` runs the study (about 10-20 s on a busy 2-core machine with three seeds).

    Examples
    --------
    >>> from aflite_core.evalsets import digits_adversary_setup
    >>> setup = digits_adversary_setup()
    >>> len(setup.train_y), len(setup.eval_y), sorted(setup.adversaries)
    (1006, 432, ['mlp', 'mlp_small', 'pca', 'pixels'])
    """
    func = "digits_adversary_setup"
    if not v._is_real(eval_fraction) or not 0.0 < float(eval_fraction) < 1.0:
        raise v.param_error("eval_fraction", func, "a float in (0, 1)", eval_fraction)
    seed = v.check_random_state(random_state, func)
    from sklearn.model_selection import train_test_split

    from .datasets import DIGITS_REPRESENTATIONS, load_digits_dataset

    ds = load_digits_dataset()
    available = ("pixels", "pca", "mlp_small", "mlp")
    names = available if adversaries is None else _check_names(adversaries, "adversaries", func, available)
    models = DIGITS_EVALUATED if evaluated is None else tuple((f, r) for f, r in evaluated)
    _check_evaluated(models, available, func)
    rng = np.random.default_rng(seed)
    split_seed, strength_seed = (int(s) for s in rng.integers(0, 2**31 - 1, size=2))
    idx = np.arange(ds.n_rows)
    tr, ev = train_test_split(idx, test_size=float(eval_fraction), stratify=ds.y, random_state=split_seed)
    tr, ev = np.sort(tr), np.sort(ev)
    labels = ds.labels
    train_X = {r: np.ascontiguousarray(ds.representation(r)[tr]) for r in available}
    eval_X = {r: np.ascontiguousarray(ds.representation(r)[ev]) for r in available}
    params = dict(DIGITS_STUDY_DEFAULTS)
    strength = _strengths(train_X, ds.y[tr], names, train_size=params["train_size"],
                          n_partitions=16, seed=strength_seed, n_threads=n_threads)
    ordered = tuple(sorted(names, key=lambda a: strength[a]))
    return AdversarySetup(
        name="digits",
        train_X=train_X,
        train_y=labels[tr],
        eval_X=eval_X,
        eval_y=labels[ev],
        adversaries=ordered,
        evaluated=tuple(models),
        params=params,
        train_ids=ds.ids[tr],
        eval_ids=ds.ids[ev],
        descriptions={r: DIGITS_REPRESENTATIONS.get(r, r) for r in available},
        strength=strength,
        meta={"split": "sklearn train_test_split, stratified", "eval_fraction": float(eval_fraction),
              "random_state": seed, "split_seed": split_seed, "source": ds.meta.get("source"),
              "n_warmup_rows_left_out": ds.meta.get("n_warmup")},
    )


def text_adversary_setup(
    dataset: Any,
    *,
    eval_fraction: float = 0.3,
    group_column: str | None = "auto",
    representations: Sequence[str] | None = None,
    tfidf: bool = True,
    embeddings: bool | None = None,
    n_components: int = 128,
    annotator_column: str | None = None,
    annotator_source_column: str | None = None,
    evaluated: Sequence[tuple[str, str]] | None = None,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
) -> AdversarySetup:
    """Adversaries for a text :class:`~aflite_core.datasets.Dataset`: TF-IDF, partial input, sentence embeddings.

    Built representations (for a sentence pair such as NLI; without a pair the text columns are used and no
    partial-input view is built):

    * ``tfidf`` - TF-IDF + SVD of premise and hypothesis (:func:`aflite_core.features.tfidf_features`);
    * ``tfidf_hypothesis`` - the partial-input view, the hypothesis alone;
    * ``embedding`` / ``embedding_hypothesis`` - all-MiniLM-L6-v2 sentence embeddings of the pair text and of
      the hypothesis (:func:`aflite_core.features.embedding_features`), when the optional ``embeddings`` extra
      is installed.

    The dataset's own representations (e.g. embeddings loaded from ``.npy`` files) are kept too. TF-IDF and
    the SVD are fitted on all rows (no labels are used). The split keeps each premise on one side
    (``group_column``), so a premise's other hypotheses cannot leak into the evaluation set.

    Parameters
    ----------
    dataset : Dataset
        A text dataset (``pair`` or ``text_columns`` set).
    eval_fraction : float, default=0.3
        Share of the rows (of the groups, with a group column) in the evaluation set.
    group_column : str or None, default="auto"
        Rows sharing a value stay on one side; ``"auto"`` uses the premise column of a pair, None splits
        stratified by label.
    representations : sequence of str, optional
        The dataset's representations to keep (default: all).
    tfidf : bool, default=True
        Build the TF-IDF views.
    embeddings : bool or None, default=None
        Build sentence embeddings: None when the optional packages are installed, True always (ImportError
        with an install hint when missing), False never.
    n_components : int, default=128
        TF-IDF dimensions.
    annotator_column, annotator_source_column : str, optional
        Columns with per-row annotator labels and their source (carried to the evaluation rows).
    evaluated : sequence of (family, representation), optional
        Default: a linear model on every representation, plus RBF SVM and kNN on the first full-input one.
    random_state : int, numpy Generator or None, default=0
        One seed for the split and TF-IDF.
    n_threads : int or None, default=1
        Threads for TF-IDF, embeddings and the strength measurement.

    Returns
    -------
    AdversarySetup
        AFLite parameters as fractions of the training rows (:data:`TEXT_STUDY_FRACTIONS`):
        ``target_size`` 0.5, ``train_size`` 0.4, ``slice_size`` 5 % (counts), ``tau`` 0.75, m = 64. With the
        shared SNLI sample and MiniLM embeddings these remove 15-40 % of the evaluation rows in round 1.
    """
    func = "text_adversary_setup"
    from .datasets import Dataset

    if not isinstance(dataset, Dataset):
        raise v.param_error("dataset", func, "an aflite_core Dataset", dataset, TypeError)
    if not v._is_real(eval_fraction) or not 0.0 < float(eval_fraction) < 1.0:
        raise v.param_error("eval_fraction", func, "a float in (0, 1)", eval_fraction)
    seed = v.check_random_state(random_state, func)
    rng = np.random.default_rng(seed)
    split_seed, tfidf_seed, strength_seed = (int(s) for s in rng.integers(0, 2**31 - 1, size=3))
    frame = dataset.frame
    pair = dataset.pair
    text_cols = list(pair) if pair else list(dataset.text_columns)
    if (tfidf or embeddings) and not text_cols:
        raise ValueError(f"The 'dataset' parameter of {func} must have text columns (a pair or text_columns).")
    keep = tuple(dataset.representations) if representations is None else _check_names(
        representations, "representations", func, tuple(dataset.representations))
    reps: dict[str, NDArray[np.float32]] = {k: dataset.representations[k] for k in keep}
    descs = {k: dataset.representation_descriptions.get(k, k) for k in keep}
    if tfidf:
        from .features import tfidf_features

        if "tfidf" not in reps:
            reps["tfidf"] = tfidf_features(frame, columns=text_cols, n_components=n_components,
                                           random_state=tfidf_seed, n_threads=n_threads)
            descs["tfidf"] = f"TF-IDF + SVD of {' + '.join(text_cols)}"
        if pair and "tfidf_hypothesis" not in reps:
            reps["tfidf_hypothesis"] = tfidf_features(frame, columns=[pair[1]], n_components=n_components,
                                                      random_state=tfidf_seed + 1, n_threads=n_threads)
            descs["tfidf_hypothesis"] = f"partial input: TF-IDF + SVD of {pair[1]} alone"
    notes = []
    if embeddings is not False:
        from .features import EMBEDDINGS_INSTALL_HINT, embedding_features, load_sentence_model

        try:
            st_model = load_sentence_model()
        except ImportError:
            if embeddings:
                raise ImportError(EMBEDDINGS_INSTALL_HINT) from None
            st_model = None
            notes.append("sentence embeddings skipped: optional packages not installed")
        if st_model is not None:
            if "embedding" not in reps:
                reps["embedding"] = embedding_features(frame, text_cols, model=st_model, n_threads=n_threads)
                descs["embedding"] = f"all-MiniLM-L6-v2 of {' [SEP] '.join(text_cols)}"
            if pair and "embedding_hypothesis" not in reps:
                reps["embedding_hypothesis"] = embedding_features(frame, [pair[1]], model=st_model,
                                                                  n_threads=n_threads)
                descs["embedding_hypothesis"] = f"partial input: all-MiniLM-L6-v2 of {pair[1]} alone"
    if not reps:
        raise ValueError(f"{func} built no representation: enable tfidf or embeddings, or keep some of the "
                         "dataset's own.")
    group = (pair[0] if pair else None) if group_column == "auto" else group_column
    if group is not None and group not in frame.columns:
        raise ValueError(
            f"The 'group_column' parameter of {func} must be a column of the dataset {list(frame.columns)}. Got "
            f"{group!r} instead."
        )
    idx = np.arange(dataset.n_rows)
    if group is not None:
        from sklearn.model_selection import GroupShuffleSplit

        gss = GroupShuffleSplit(n_splits=1, test_size=float(eval_fraction), random_state=split_seed)
        tr, ev = next(gss.split(idx, groups=frame[group].astype(str).to_numpy()))
    else:
        from sklearn.model_selection import train_test_split

        tr, ev = train_test_split(idx, test_size=float(eval_fraction), stratify=dataset.y, random_state=split_seed)
    tr, ev = np.sort(tr), np.sort(ev)
    labels = dataset.labels
    n_train = len(tr)
    params = {
        "target_size": round(TEXT_STUDY_FRACTIONS["target_size"] * n_train),
        "train_size": round(TEXT_STUDY_FRACTIONS["train_size"] * n_train),
        "slice_size": max(1, round(TEXT_STUDY_FRACTIONS["slice_size"] * n_train)),
        "tau": 0.75,
        "n_partitions": 64,
    }
    train_X = {k: np.ascontiguousarray(X[tr]) for k, X in reps.items()}
    eval_X = {k: np.ascontiguousarray(X[ev]) for k, X in reps.items()}
    names = tuple(reps)
    if evaluated is None:
        full = next((k for k in names if "hypothesis" not in k and "hyp" not in k), names[0])
        models = tuple([("linear", k) for k in names] + [("rbf", full), ("knn", full)])
    else:
        models = tuple((f, r) for f, r in evaluated)
        _check_evaluated(models, names, func)
    strength = _strengths(train_X, dataset.y[tr], names, train_size=params["train_size"], n_partitions=16,
                          seed=strength_seed, n_threads=n_threads)
    ann = src = None
    if annotator_column is not None:
        if annotator_column not in frame.columns:
            raise ValueError(f"The 'annotator_column' parameter of {func} must be a column of the dataset. Got "
                             f"{annotator_column!r} instead.")
        ann = [frame[annotator_column].iloc[i] for i in ev]
    if annotator_source_column is not None:
        if annotator_source_column not in frame.columns:
            raise ValueError(f"The 'annotator_source_column' parameter of {func} must be a column of the dataset. "
                             f"Got {annotator_source_column!r} instead.")
        src = frame[annotator_source_column].to_numpy()[ev]
    return AdversarySetup(
        name=dataset.name,
        train_X=train_X,
        train_y=labels[tr],
        eval_X=eval_X,
        eval_y=labels[ev],
        adversaries=tuple(sorted(names, key=lambda a: strength[a])),
        evaluated=models,
        params=params,
        train_ids=dataset.ids[tr],
        eval_ids=dataset.ids[ev],
        annotator_labels=ann,
        annotator_source=src,
        descriptions=descs,
        strength=strength,
        meta={"group_column": group, "eval_fraction": float(eval_fraction), "random_state": seed,
              "notes": notes},
    )


# ==============================================================================================================
# command line: aflite eval-filter
# ==============================================================================================================


def _parse_arrays_spec(text: str, option: str) -> tuple[str, str | None, str | None]:
    """``NAME=TRAIN.npy:EVAL.npy`` (or a bare ``NAME``) → (name, train path, eval path)."""
    if "=" not in text:
        name = text.strip()
        if not name:
            raise ValueError(f"The {option} option must be NAME=TRAIN.npy:EVAL.npy. Got {text!r} instead.")
        return name, None, None
    name, rest = text.split("=", 1)
    name = name.strip()
    parts = rest.split(":")
    if len(parts) != 2:  # a path with ':' in it: split after the first '.npy'
        cut = rest.find(".npy:")
        parts = [rest[: cut + 4], rest[cut + 5 :]] if cut >= 0 else []
    if not name or len(parts) != 2 or not parts[0] or not parts[1]:
        raise ValueError(f"The {option} option must be NAME=TRAIN.npy:EVAL.npy. Got {text!r} instead.")
    return name, parts[0], parts[1]


def _cli_int_list(text: str, option: str) -> tuple[int, ...]:
    try:
        values = tuple(int(s) for s in str(text).split(",") if s.strip())
    except ValueError:
        raise ValueError(f"The {option} option must be a comma-separated list of ints. Got {text!r} instead.") from None
    if not values:
        raise ValueError(f"The {option} option must be a comma-separated list of ints. Got {text!r} instead.")
    return values


def _cli_number(text: str | None, option: str) -> int | float | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"The {option} option must be an int or a float in (0, 1). Got {text!r} instead.") from None


def _read_column(frame: pd.DataFrame, column: str, option: str, path: str) -> pd.Series:
    if column not in frame.columns:
        raise ValueError(f"The {option} option names {column!r}, which is not a column of '{path}' "
                         f"({list(frame.columns)}).")
    return frame[column]


def _cmd_eval_filter(args: argparse.Namespace) -> int:
    from .io import read_features, read_table

    started = time.perf_counter()
    specs = [_parse_arrays_spec(s, "--adversary") for s in (args.adversary or [])]
    extra = [_parse_arrays_spec(s, "--representation") for s in (args.representation or [])]
    seeds = _cli_int_list(args.seeds, "--seeds")
    evaluated = []
    for item in args.evaluated or []:
        if ":" not in item:
            raise ValueError(f"The --evaluated option must be FAMILY:REPRESENTATION. Got {item!r} instead.")
        fam, rep = item.split(":", 1)
        evaluated.append((fam.strip(), rep.strip()))
    numbers = {"target_size": _cli_number(args.target_size, "--target-size"),
               "train_size": _cli_number(args.train_size, "--train-size"),
               "slice_size": _cli_number(args.slice_size, "--slice-size")}
    kw: dict[str, Any] = {"seeds": seeds, "tau": args.tau, "n_partitions": args.partitions,
                          "random_state": args.seed, "n_threads": args.threads}
    if args.annotator_sources is not None:
        kw["annotator_sources"] = None if args.annotator_sources.strip().lower() == "all" else tuple(
            s.strip() for s in args.annotator_sources.split(",") if s.strip())
    if args.digits:
        if args.train_table or args.eval_table:
            raise ValueError("The --digits option cannot be combined with --train-table / --eval-table.")
        if any(p is not None for _, p, _ in specs) or extra:
            raise ValueError("With --digits, --adversary takes bare representation names (pixels, pca, mlp_small, "
                             "mlp) and --representation is not used.")
        if args.annotator_column:
            raise ValueError("The --annotator-column option needs --train-table / --eval-table (digits have no "
                             "annotator labels).")
        setup = digits_adversary_setup(random_state=args.seed, eval_fraction=args.eval_fraction,
                                       adversaries=[n for n, _, _ in specs] or None,
                                       evaluated=evaluated or None, n_threads=args.threads)
        study_kw = setup.study_kwargs()
        study_kw.update({k: val for k, val in numbers.items() if val is not None})
        study_kw.update(kw)
        train_X, train_y, eval_X, eval_y = setup.train_X, setup.train_y, setup.eval_X, setup.eval_y
        source = {"data": "digits", "eval_fraction": args.eval_fraction, "strength": setup.strength}
    else:
        if not (args.train_table and args.eval_table):
            raise ValueError("Give either --digits or both --train-table and --eval-table.")
        if not specs:
            raise ValueError("Give at least one --adversary NAME=TRAIN.npy:EVAL.npy with --train-table.")
        for opt, val in (("--target-size", numbers["target_size"]), ("--train-size", numbers["train_size"]),
                         ("--slice-size", numbers["slice_size"])):
            if val is None:
                raise ValueError(f"The {opt} option is required with --train-table.")
        for name, p, _ in specs + extra:
            if p is None:
                raise ValueError(f"The --adversary / --representation option must give files: {name}=TRAIN.npy:"
                                 "EVAL.npy.")
        names = [n for n, _, _ in specs + extra]
        if len(set(names)) != len(names):
            raise ValueError(f"Representation names must be distinct. Got {names}.")
        train = read_table(args.train_table)
        ev = read_table(args.eval_table)
        train_y = _read_column(train, args.label_column, "--label-column", args.train_table).to_numpy()
        eval_y = _read_column(ev, args.label_column, "--label-column", args.eval_table).to_numpy()
        train_X, eval_X = {}, {}
        for name, p_train, p_eval in specs + extra:
            train_X[name] = read_features(p_train)
            eval_X[name] = read_features(p_eval)
            for what, arr, table, path in (("train", train_X[name], train, p_train),
                                           ("eval", eval_X[name], ev, p_eval)):
                if arr.ndim != 2 or arr.shape[0] != len(table):
                    raise ValueError(f"'{path}' ({what} features of {name!r}) has shape {arr.shape}; the {what} table "
                                     f"has {len(table)} rows.")
        study_kw = {"adversaries": [n for n, _, _ in specs],
                    "evaluated": evaluated or [("linear", n) for n, _, _ in specs], **numbers}
        if args.id_column:
            study_kw["ids"] = _read_column(train, args.id_column, "--id-column", args.train_table).to_numpy()
            study_kw["eval_ids"] = _read_column(ev, args.id_column, "--id-column", args.eval_table).to_numpy()
        if args.annotator_column:
            study_kw["annotator_labels"] = _read_column(ev, args.annotator_column, "--annotator-column",
                                                        args.eval_table).tolist()
            if args.annotator_source_column:
                study_kw["annotator_source"] = _read_column(ev, args.annotator_source_column,
                                                            "--annotator-source-column", args.eval_table).tolist()
        elif args.annotator_source_column:
            raise ValueError("The --annotator-source-column option needs --annotator-column.")
        study_kw.update(kw)
        source = {"data": "tables", "train_table": args.train_table, "eval_table": args.eval_table}
    if args.ensemble:
        study_kw["ensemble"] = True
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"The --out option must name a directory. '{out}' is a file.")

    def progress(p: StudyProgress) -> None:
        if not args.quiet:
            what = p.stage if p.adversary is None else f"{p.stage} {p.adversary} seed {p.seed}"
            sys.stderr.write(f"[{p.step}/{p.n_steps}] {what} | {p.seconds:.1f}s\n")
            sys.stderr.flush()

    study = adversary_study(train_X, train_y, eval_X, eval_y, callback=progress, **study_kw)
    study.params["source"] = source
    study.save(out)
    summary = study.summary()
    summary["out"] = str(out)
    summary["seconds"] = round(time.perf_counter() - started, 3)
    print(json.dumps(summary, default=_json_default))
    return 0


def add_cli(subparsers: Any, name: str = "eval-filter") -> None:
    """Register the ``eval-filter`` sub-command: the adversary study of an evaluation set.

    ``aflite eval-filter`` runs :func:`adversary_study` on the bundled digits (``--digits``) or on a training
    and an evaluation table with named representations (``--adversary NAME=TRAIN.npy:EVAL.npy``, repeated),
    writes every table as Parquet and CSV plus ``summary.json`` to ``--out`` and prints one JSON line.
    Progress goes to stderr. Bad input raises ``ValueError``; the CLI's ``main`` prints it on one line and
    exits with status 2.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers()`` returned.
    name : str, default="eval-filter"
        The command's name (``cli._EXTRA_COMMANDS`` passes it).
    """
    p = subparsers.add_parser(
        name,
        help="filter an evaluation set with several adversaries and compare evaluated models (Phang et al.)",
        description="AFLite on an evaluation set for several adversaries and seeds: which evaluation rows leave "
                    "in round 1, later, or are selected; evaluated models' accuracy, ranking (Kendall's "
                    "coefficient) and same-representation rank change; annotator agreement per category.",
    )
    data = p.add_argument_group("data")
    data.add_argument("--digits", action="store_true", help="the bundled digits with four adversaries")
    data.add_argument("--eval-fraction", type=float, default=0.3, help="digits: evaluation share (default 0.3)")
    data.add_argument("--train-table", default=None, help="training rows: CSV, TSV, Parquet or JSONL")
    data.add_argument("--eval-table", default=None, help="evaluation rows: CSV, TSV, Parquet or JSONL")
    data.add_argument("--label-column", default="label", help="label column of both tables (default label)")
    data.add_argument("--id-column", default=None, help="id column of both tables")
    data.add_argument("--adversary", action="append", metavar="NAME=TRAIN.npy:EVAL.npy",
                      help="an adversary's representation of the training and evaluation rows (repeat); with "
                           "--digits a bare name selects one of pixels, pca, mlp_small, mlp")
    data.add_argument("--representation", action="append", metavar="NAME=TRAIN.npy:EVAL.npy",
                      help="a further representation used only by evaluated models (repeat)")
    p.add_argument("--evaluated", action="append", metavar="FAMILY:REPRESENTATION",
                   help=f"an evaluated model (repeat); families: {', '.join(EVALUATED_FAMILIES)}")
    p.add_argument("--seeds", default="0,1,2", help="AFLite seeds, comma-separated (default 0,1,2)")
    p.add_argument("--target-size", default=None, help="n, count or fraction (digits default 400)")
    p.add_argument("--train-size", default=None, help="t, count or fraction (digits default 100)")
    p.add_argument("--slice-size", default=None, help="k, count (digits default 100)")
    p.add_argument("--tau", type=float, default=0.75, help="τ, AFLite's threshold (default 0.75)")
    p.add_argument("--partitions", type=int, default=64, help="m, models per round (default 64)")
    p.add_argument("--ensemble", action="store_true", help="also filter with the pooled ensemble of adversaries")
    p.add_argument("--annotator-column", default=None, help="evaluation-table column with annotator label lists")
    p.add_argument("--annotator-source-column", default=None, help="column with the source of those labels")
    p.add_argument("--annotator-sources", default=None,
                   help="sources used for agreement, comma-separated, or 'all' (default random_subset)")
    p.add_argument("--seed", type=int, default=0, help="seed of the split (digits) and evaluated models (default 0)")
    p.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    p.add_argument("--out", required=True, help="directory for the tables (Parquet + CSV) and summary.json")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=_cmd_eval_filter)
