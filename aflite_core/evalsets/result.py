"""The adversary study's result: its tidy tables, headline summary and what :meth:`AdversaryStudy.save` writes."""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._utils import json_default
from ..engine.result import EVAL_CATEGORIES, AFLiteResult
from .agreement import AgreementReport
from .ensemble import EnsembleResult
from .reading import study_reading
from .tables import NONE, _accuracy_summary

__all__ = ["AdversaryStudy"]


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
        One row per AFLite run: rounds, stop reason, training rows kept, evaluation rows per category, seconds;
        ``eval_null_round_1``: with ``null_permutations``, the mean number of evaluation rows at p ≥ τ in round 1
        under shuffled training labels (compare ``removed_in_round_1``; NaN without a null).
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
        rows and on the unfiltered set), ``kendall_p_vs_zero`` (scipy's test of a coefficient of 0: the wrong
        null, kept labelled), the random-subset null beside it (``kendall_null_median/low/high``,
        ``kendall_percentile``, ``kendall_p_vs_random``: see ``controls``), per-seed
        ``kendall_seed_mean/min/max`` and ``n_models``.
    same_representation : DataFrame
        Per adversary and evaluated model related to it: ``relation`` ``"shared backbone"`` (the adversary's
        backbone, trained separately on the training rows: the paper's Figure 4), ``"same representation"``
        (trained on the adversary's own Φ: an upper bound, the penalty is partly built in) or ``"ensemble
        member"``; accuracies, ranks unfiltered / filtered, ``rank_change`` (> 0: fell), ``accuracy_drop`` and
        ``others_mean_drop`` (the other models' mean drop).
    strength : DataFrame
        Per adversary: ``backbone`` and its accuracy on the full evaluation set with a Wilson 95 % interval
        (``accuracy, ci_low, ci_high, n_eval``: the strength measured independently of filtering, the paper's
        Table 1; NaN without a backbone), next to what round 1 did: ``round1_mean_p`` (mean predictability of the
        training rows), ``eval_round1_mean_p`` and ``round1_removed_share`` (means over seeds).
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
    controls : DataFrame
        Per adversary and ``depth`` (``"as run"``; ``"equal depth"``: each adversary's ``N_min`` least
        predictable rows, ``N_min`` the smallest adversary's selected count per seed, in
        ``params["equal_depth_rows"]``): rows, mean accuracy drop and Kendall's coefficient, each beside the same
        statistic on random evaluation subsets of the same size (median, 5-95 % range, percentile, one-sided
        ``p_vs_random``). See :func:`aflite_core.evalsets.controls.study_controls`.
    drop_controls : DataFrame
        Per adversary, depth and evaluated model: the accuracy drop beside its random-subset null.
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
    strength: pd.DataFrame = field(default_factory=pd.DataFrame)
    controls: pd.DataFrame = field(default_factory=pd.DataFrame)
    drop_controls: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def accuracy_summary(self) -> pd.DataFrame:
        """Per evaluation set and model: mean accuracy, spread over seeds, rows and a Wilson 95 % interval."""
        return _accuracy_summary(self.accuracies, list(self.adversaries), list(self.params.get("evaluated_names", [])))

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
            "strength": self.strength,
            "accuracy_summary": self.accuracy_summary,
            "controls": self.controls,
            "drop_controls": self.drop_controls,
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
        strength = self.strength.set_index("adversary") if len(self.strength) else None
        for a in self.adversaries:
            entry: dict[str, Any] = {}
            if strength is not None and a in strength.index:
                row = strength.loc[a]
                entry["strength"] = {
                    "backbone": row["backbone"],
                    "accuracy": _num(row["accuracy"]),
                    "ci": [_num(row["ci_low"]), _num(row["ci_high"])],
                    "round1_mean_p": _num(row["round1_mean_p"]),
                }
            if a in cat.index:
                entry["shares"] = {c: _num(cat.loc[a, c]) for c in EVAL_CATEGORIES}
            if a in means.index:
                entry["mean_accuracy"] = _num(means[a])
            if corr is not None and a in corr.index:
                entry["kendall"] = _num(corr.loc[a, "kendall"])
                entry["discordant_pairs"] = int(corr.loc[a, "discordant_pairs"])
                entry["n_pairs"] = int(corr.loc[a, "n_pairs"])
                for col in ("kendall_p_vs_zero", "kendall_percentile", "kendall_p_vs_random"):
                    if col in corr.columns:
                        entry[col] = _num(corr.loc[a, col])
            if len(self.controls):
                ctl = self.controls[self.controls["adversary"] == a]
                entry["controls"] = {
                    row["depth"]: {
                        k: _num(row[k])
                        for k in (
                            "n_rows_mean",
                            "mean_drop",
                            "mean_drop_percentile",
                            "mean_drop_p_vs_random",
                            "kendall",
                            "kendall_percentile",
                            "kendall_p_vs_random",
                        )
                    }
                    for _, row in ctl.iterrows()
                }
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

        Raises
        ------
        aflite_core._folder_lock.FolderBusyError
            When another process or thread kept writing into ``directory`` for longer than the lock's wait
            (:data:`aflite_core._folder_lock.LOCK_TIMEOUT_S` seconds), in one sentence.
        """
        from .._folder_lock import folder_lock

        out = Path(directory)
        with folder_lock(out):  # one writer per folder: a second save waits, then refuses in one sentence
            return self._write(out)

    def _write(self, out: Path) -> Path:
        from .. import _durable

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
        text = json.dumps(payload, indent=2, default=json_default, ensure_ascii=False) + "\n"
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
