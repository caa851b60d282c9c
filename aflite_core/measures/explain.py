"""Why a row was removed (or kept): one row of an AFLite run explained from what the run recorded.

AFLite (Le Bras et al., 2020, Algorithm 1) removes a row when the share of the m held-out models that predict its
label, its predictability p, reaches τ among the k highest of a round. :func:`explain_row` gathers everything
that bears on that one decision, without re-running anything:

* its **text** (the run's recorded table) with the **label-revealing words** it contains: the tokens whose
  Gardner et al. z-test (:func:`~aflite_core.measures.artifact_statistics.artifact_statistics`, Bonferroni
  corrected) is significant for some label, their z and p̂;
* its **p per round** against τ, and, for a run with a null (``null_permutations``), the **null expectation**
  for its class: how many rows of its class, and what share of them, label permutations alone put at p ≥ τ
  (:mod:`aflite_core.engine.null`) - how often chance would have removed a row like it;
* the **votes** of the m models in its removal round (the last round it was scored, when kept): how many
  held-out predictions went to each class, as the run recorded them (``AFLiteResult.votes``, never derived
  from p);
* its **nearest neighbours in Φ** (cosine similarity over every row, in chunks, no sampling): the closest kept
  and the closest removed rows, with their text and status.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .. import _validation as v
from ..engine.result import AFLiteResult, round_half
from .artifact_statistics import artifact_statistics, tokenize

__all__ = ["NEIGHBOUR_CHUNK_BYTES", "RowExplanation", "explain_row", "nearest_neighbours", "row_position"]

#: bytes of features multiplied per step of the neighbour search (bounded memory at any number of rows)
NEIGHBOUR_CHUNK_BYTES = 64 * 2**20


@dataclass(frozen=True)
class RowExplanation:
    """What bears on one row's fate in an AFLite run (see :func:`explain_row`).

    Attributes
    ----------
    position : int
        The row's position in the run (0 … N-1).
    id : object
        Its id (the run's ids; the position when the run has none).
    label : str
        Its class.
    status : {"kept", "removed"}
    removed_round : int or None
        The round it was removed in (None when kept).
    tau : float
        The run's τ.
    removal_score : float
        p in the round it was removed (NaN when kept).
    text : dict of str to str
        Its text, column by column, in full ({} without a table).
    words : pandas.DataFrame
        The significant (token, label) pairs among its tokens: ``token``, ``label``, ``z``, ``p_hat``, ``count``
        (texts containing the token) and ``for_its_label`` (the pair's label is the row's), by z, largest first.
        ``attrs["tested"]`` says whether there were statistics to read, ``attrs["column"]`` names the text the
        tokens were read from, ``attrs["z_critical"]`` the threshold.
    rounds : pandas.DataFrame
        One row per round it was scored: ``round``, ``p``, ``n_predictions``, ``reaches_tau`` (p ≥ τ) and, with a
        null, ``class_rows`` (rows of its class in that round's set), ``null_at_tau`` (mean rows of its class at
        null p ≥ τ) and ``null_share_at_tau`` (their share of ``class_rows``).
    votes : pandas.DataFrame or None
        In ``votes_round``: ``class``, ``votes`` (held-out predictions of that class), ``share`` and ``is_label``.
        None when the run recorded no votes.
    votes_round : int or None
        The round the votes are from: the removal round, or the last round the row was scored when kept.
    neighbours : pandas.DataFrame or None
        Its nearest rows in Φ by cosine similarity, the closest kept and the closest removed (``k_neighbours``
        each): ``row``, ``id``, ``similarity``, ``status``, ``round``, ``class``, ``p`` (at removal, else last)
        and the text columns. None without features.
    notes : tuple of str
        One sentence per part that could not be shown, saying why (no table, no null, no votes, no features).
    """

    position: int
    id: Any
    label: str
    status: str
    removed_round: int | None
    tau: float
    removal_score: float
    text: dict[str, str]
    words: pd.DataFrame
    rounds: pd.DataFrame
    votes: pd.DataFrame | None
    votes_round: int | None
    neighbours: pd.DataFrame | None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def headline(self) -> str:
        """One sentence: the row, its class and its fate."""
        if self.status == "removed":
            fate = f"removed in round {self.removed_round} with p = {self.removal_score:.2f} ≥ τ = {self.tau:g}"
        else:
            last = self.rounds["p"].iloc[-1] if len(self.rounds) else float("nan")
            fate = f"kept (p = {last:.2f} in the last round it was scored; τ = {self.tau:g})"
        return f"Row {self.id!s} (class {self.label}) was {fate}."

    def to_dict(self) -> dict[str, Any]:
        """Everything as JSON-able values (what ``aflite explain --json`` prints)."""

        def records(frame: pd.DataFrame | None) -> list[dict] | None:
            if frame is None:
                return None
            return json.loads(frame.to_json(orient="records", force_ascii=False))

        return {
            "position": self.position,
            "id": self.id.item() if isinstance(self.id, np.generic) else self.id,
            "label": self.label,
            "status": self.status,
            "removed_round": self.removed_round,
            "tau": self.tau,
            "removal_score": None if math.isnan(self.removal_score) else self.removal_score,
            "headline": self.headline,
            "text": self.text,
            "words": records(self.words),
            "rounds": records(self.rounds),
            "votes_round": self.votes_round,
            "votes": records(self.votes),
            "neighbours": records(self.neighbours),
            "notes": list(self.notes),
        }

    def to_text(self, width: int = 100) -> str:
        """A plain-text report (what ``aflite explain`` prints)."""
        out = [self.headline, ""]
        for col, text in self.text.items():
            out.append(f"{col}: {text}")
        if len(self.words):
            out += ["", f"Label-revealing words in its {self.words.attrs.get('column', 'text')} (z > z*):"]
            for w in self.words.itertuples():
                mark = " (its label)" if w.for_its_label else ""
                out.append(
                    f"  {w.token!s:<16} → {w.label!s:<14} z = {w.z:6.1f}  p̂ = {w.p_hat:.2f}  n = {w.count}{mark}"
                )
        elif self.text:
            out += ["", "No significant label-revealing word in its text."]
        if len(self.rounds):
            out += ["", "p per round (τ = " + f"{self.tau:g}):"]
            for r in self.rounds.to_dict("records"):
                line = f"  round {r['round']:>3}: p = {r['p']:.3f} ({r['n_predictions']} held-out models)"
                line += "  ≥ τ" if r["reaches_tau"] else ""
                if "null_at_tau" in r:
                    line += f"  null: {r['null_at_tau']:.1f} of {r['class_rows']:,} {self.label} rows at p ≥ τ"
                    line += f" ({r['null_share_at_tau']:.1%})"
                out.append(line)
        if self.votes is not None:
            out += ["", f"Votes of the held-out models in round {self.votes_round}:"]
            for c in self.votes.itertuples():
                out.append(f"  {c._1!s:<16} {c.votes:>5}  ({c.share:.0%}){'  ← its label' if c.is_label else ''}")
        if self.neighbours is not None and len(self.neighbours):
            out += ["", "Nearest rows in Φ (cosine):"]
            text_cols = [c for c in self.neighbours.columns if c in self.text]
            shown = [self.words.attrs["column"]] if self.words.attrs.get("column") in text_cols else text_cols
            for nb in self.neighbours.to_dict("records"):
                head = f"  {nb['similarity']:.3f}  {nb['status']:<7} {nb['class']!s:<14} id {nb['id']!s}"
                out.append(head)
                for c in shown:
                    out.append(f"         {c}: {nb[c]!s}"[: max(width, 40)])
        for note in self.notes:
            out += ["", f"Note: {note}"]
        return "\n".join(out)


def row_position(result: AFLiteResult, row: Any) -> int:
    """The position of the row whose id is ``row`` (its position when the run has no ids).

    An id given as text matches an id of another type with the same text (the command line passes text).

    Raises
    ------
    ValueError
        When no row has that id (one sentence).
    """
    n = result.n_rows
    if result.ids is None:
        try:
            pos = int(str(row).strip()) if not isinstance(row, (int, np.integer)) else int(row)
        except ValueError:
            pos = -1
        if not 0 <= pos < n:
            raise ValueError(f"The run has no row {row!r}: it has no ids, so name a row by its position 0 … {n - 1}.")
        return pos
    ids = np.asarray(result.ids)
    try:
        hits = np.flatnonzero(ids == row)
    except (TypeError, ValueError):
        hits = np.empty(0, dtype=np.intp)
    if not len(hits):
        hits = np.flatnonzero(np.asarray([str(i) for i in ids], dtype=object) == str(row))
    if not len(hits):
        raise ValueError(f"The run has no row with id {v.shown(row)}; name one of its {n:,} ids.")
    return int(hits[0])


def nearest_neighbours(
    features: NDArray, position: int, *, k: int, groups: NDArray[np.bool_] | None = None, chunk_rows: int | None = None
) -> list[tuple[NDArray[np.intp], NDArray[np.float64]]]:
    """The ``k`` rows most similar to row ``position`` by cosine, among every row of each group (itself excluded).

    Every row is compared (no sampling), in chunks of rows (at most :data:`NEIGHBOUR_CHUNK_BYTES` of features at
    a time, so a memory-mapped matrix is read once and never whole); rows of zero norm are never neighbours.

    Parameters
    ----------
    features : ndarray of shape (N, d)
        Φ(X), e.g. memory-mapped.
    position : int
        The row.
    k : int
        Neighbours per group.
    groups : ndarray of bool, shape (n_groups, N), optional
        Masks of the rows each group may take its neighbours from (default: one group, every row).

    Returns
    -------
    list of (rows, similarities)
        Per group, its neighbours' positions and similarities, most similar first.
    """
    X = features
    N = X.shape[0]
    groups = np.ones((1, N), dtype=bool) if groups is None else np.asarray(groups, dtype=bool)
    q = np.asarray(X[position], dtype=np.float64)
    qn = float(np.linalg.norm(q))
    best = [(np.empty(0, np.intp), np.empty(0, np.float64)) for _ in groups]
    if qn == 0 or k <= 0:
        return best
    q = (q / qn).astype(np.float32)
    step = chunk_rows or max(1, NEIGHBOUR_CHUNK_BYTES // max(1, 4 * X.shape[1]))
    for start in range(0, N, step):
        block = np.asarray(X[start : start + step], dtype=np.float32)
        norms = np.sqrt(np.einsum("ij,ij->i", block, block, dtype=np.float64))
        with np.errstate(invalid="ignore", divide="ignore"):
            sims = (block @ q).astype(np.float64) / norms
        sims[~(norms > 0)] = -np.inf
        if start <= position < start + len(block):
            sims[position - start] = -np.inf
        for g, mask in enumerate(groups):
            s = np.where(mask[start : start + len(block)], sims, -np.inf)
            take = np.argpartition(-s, min(k, len(s) - 1))[:k] if len(s) > k else np.arange(len(s))
            take = take[np.isfinite(s[take])]
            rows = np.concatenate([best[g][0], start + take])
            vals = np.concatenate([best[g][1], s[take]])
            order = np.lexsort((rows, -vals))[:k]  # most similar first, ties by position
            best[g] = (rows[order], vals[order])
    return best


def _text_columns(table: pd.DataFrame, result: AFLiteResult, given: Any) -> list[str]:
    if given is not None:
        cols = [str(c) for c in given]
        missing = [c for c in cols if c not in table.columns]
        if missing:
            raise ValueError(
                f"The table has no column {missing[0]!r} (text_columns); its columns are {list(table.columns)[:20]}."
            )
        return cols
    id_col = table.attrs.get("id_column")
    classes = {str(c) for c in result.classes}
    ids = None if result.ids is None else np.asarray([str(i) for i in result.ids[:1000]], dtype=object)
    out = []
    for c in table.columns:
        col = table[c]
        if c == id_col or not (col.dtype == object or pd.api.types.is_string_dtype(col)):
            continue
        sample = col.head(1000).astype(str)
        if ids is not None and np.array_equal(sample.to_numpy(dtype=object), ids[: len(sample)]):
            continue  # the run's ids are not text
        if len(sample) and not set(sample) <= classes:  # a label column is not text
            out.append(str(c))
    return out


def _load_run(path: Path) -> tuple[AFLiteResult, pd.DataFrame | None, NDArray | None]:
    """A run directory's result, recorded table and features (the CLI's ``cli_args.json`` names them)."""
    from ..data.preflight import read_small_json
    from ..data.readers import read_features
    from ..engine.run_table import load_run_table

    result = AFLiteResult.load(path)
    table = load_run_table(path, result=result)
    features = None
    args = path / "cli_args.json"
    if args.is_file():
        record = read_small_json(args, "cli_args.json")
        name = record.get("features") if isinstance(record, dict) else None
        if isinstance(name, str):
            src = Path(name) if Path(name).is_absolute() else path / name
            if src.suffix == ".npy" and src.is_file():
                features = read_features(src, mmap=True)
    return result, table, features


def _words(text: dict[str, str], stats: pd.DataFrame | None, column: str | None, label: str) -> pd.DataFrame:
    cols = ["token", "label", "z", "p_hat", "count", "for_its_label"]
    if stats is None or not text:
        empty = pd.DataFrame(columns=cols)
        empty.attrs.update(tested=False)
        return empty
    source = text[column] if column in text else " ".join(text.values())
    tokens = set(tokenize(source))
    sig = stats[stats["significant"].astype(bool) & stats["token"].isin(tokens)]
    out = pd.DataFrame(
        {
            "token": sig["token"].astype(str).to_numpy(),
            "label": sig["label"].astype(str).to_numpy(),
            "z": sig["z"].to_numpy(dtype=float),
            "p_hat": sig["p_hat"].to_numpy(dtype=float),
            "count": sig["count"].to_numpy(dtype=np.int64),
        }
    )
    out["for_its_label"] = out["label"] == label
    out = out.sort_values(["z", "token"], ascending=[False, True]).reset_index(drop=True)
    out.attrs.update(tested=True, column=column if column in text else "text", z_critical=stats.attrs.get("z_critical"))
    return out


def _rounds(result: AFLiteResult, pos: int) -> pd.DataFrame:
    tau = float(result.params["tau"])
    if result.scores is not None:
        p = np.asarray(result.scores[:, pos], dtype=np.float64)
        n_pred = np.asarray(result.n_predictions[:, pos], dtype=np.int64)
        rounds = np.flatnonzero(~np.isnan(p))
        frame = pd.DataFrame({"round": rounds + 1, "p": p[rounds], "n_predictions": n_pred[rounds]})
    else:  # strategy 'greedy' keeps round 1 only
        first = float(result.first_score[pos])
        frame = pd.DataFrame(
            {"round": [1] if not math.isnan(first) else [], "p": [first] if not math.isnan(first) else []}
        )
        frame["n_predictions"] = pd.array([pd.NA] * len(frame), dtype="Int64")
    frame["reaches_tau"] = frame["p"] >= tau
    if result.null_counts is not None and len(frame):
        c = int(result.y[pos])
        grid = round_half(tau * 100)
        rr = np.asarray(result.removed_round)
        of_class = np.asarray(result.y) == c
        in_set = [int((of_class & ((rr < 0) | (rr >= r))).sum()) for r in frame["round"]]
        null = [float(result.null_counts[r - 1, c, grid]) for r in frame["round"]]
        frame["class_rows"] = in_set
        frame["null_at_tau"] = null
        frame["null_share_at_tau"] = [x / n if n else float("nan") for x, n in zip(null, in_set, strict=True)]
    return frame


def _votes(result: AFLiteResult, pos: int, rounds: pd.DataFrame) -> tuple[pd.DataFrame | None, int | None]:
    if result.votes is None or not len(rounds):
        return None, None
    rr = int(result.removed_round[pos])
    r = rr if rr > 0 else int(rounds["round"].iloc[-1])
    counts = np.asarray(result.votes[r - 1, pos], dtype=np.int64)
    total = int(counts.sum())
    names = [str(c) for c in result.classes]
    frame = pd.DataFrame(
        {
            "class": names,
            "votes": counts,
            "share": counts / total if total else np.zeros(len(counts)),
            "is_label": np.arange(len(names)) == int(result.y[pos]),
        }
    )
    return frame, r


def _neighbours(
    result: AFLiteResult, pos: int, features: NDArray, k: int, table: pd.DataFrame | None, text_cols: list[str]
) -> pd.DataFrame:
    kept = np.asarray(result.kept, dtype=bool)
    found = nearest_neighbours(features, pos, k=k, groups=np.vstack([kept, ~kept]))
    rows = np.concatenate([found[0][0], found[1][0]])
    sims = np.concatenate([found[0][1], found[1][1]])
    order = np.lexsort((rows, -sims))
    rows, sims = rows[order], sims[order]
    rr = np.asarray(result.removed_round)[rows]
    p = np.where(rr > 0, np.asarray(result.removal_score)[rows], np.asarray(result.last_score)[rows])
    frame = pd.DataFrame(
        {
            "row": rows.astype(np.int64),
            "id": np.asarray(result.ids)[rows] if result.ids is not None else rows.astype(np.int64),
            "similarity": sims,
            "status": np.where(rr > 0, "removed", "kept"),
            "round": pd.array(np.where(rr > 0, rr, 0), dtype="Int64").astype("Int64"),
            "class": [str(result.classes[c]) for c in np.asarray(result.y)[rows]],
            "p": p.astype(np.float64),
        }
    )
    frame.loc[frame["status"] == "kept", "round"] = pd.NA
    for col in text_cols:
        frame[col] = table[col].iloc[rows].astype("string").to_numpy() if table is not None else None
    return frame


def explain_row(
    result_or_run: AFLiteResult | str | Path,
    row: Any,
    *,
    table: pd.DataFrame | None = None,
    features: NDArray | None = None,
    artifact_stats: pd.DataFrame | None = None,
    k_neighbours: int = 5,
    text_columns: Any = None,
    words_column: str | None = None,
    min_count: int = 10,
    alpha: float = 0.01,
) -> RowExplanation:
    """Everything a run recorded that bears on one row's removal (or keeping); see the module docstring.

    Parameters
    ----------
    result_or_run : AFLiteResult, str or Path
        The run, or a run directory (its recorded table, and the features its ``cli_args.json`` names, are read
        when ``table`` / ``features`` are not given).
    row : object
        The row's id (one of the run's ids; its position 0 … N-1 when the run has none).
    table : DataFrame, optional
        The run's rows (one per run row, in its order): their text columns are shown and tested.
    features : ndarray of shape (N, d), optional
        Φ(X), for the neighbours (memory-mapped is fine: it is read in chunks).
    artifact_stats : DataFrame, optional
        :func:`~aflite_core.measures.artifact_statistics.artifact_statistics` of the run's texts and labels;
        computed over ``words_column`` (``min_count``, ``alpha``) when not given and there is a table.
    k_neighbours : int, default=5
        Nearest kept rows and nearest removed rows to show (each).
    text_columns : sequence of str, optional
        The table's text columns (default: its text columns other than its id and label columns).
    words_column : str, optional
        The text column the words are read from (default ``"hypothesis"`` when there is one, else all text).
    min_count, alpha : int, float
        The word test's settings when ``artifact_stats`` is computed here.

    Returns
    -------
    RowExplanation

    Raises
    ------
    ValueError
        One sentence: no such row, a table or features of another number of rows, a damaged run directory.

    Examples
    --------
    >>> import numpy as np
    >>> from aflite_core import aflite
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400)
    >>> X = rng.normal(size=(400, 5)); X[:100, 0] += 4 * (2 * y[:100] - 1)
    >>> res = aflite(X, y, target_size=200, train_size=100, slice_size=50, n_partitions=16, random_state=0)
    >>> gone = int(np.flatnonzero(~res.kept)[0])
    >>> ex = explain_row(res, gone, features=X, k_neighbours=2)
    >>> ex.status, int(ex.votes["votes"].sum()) == int(res.n_predictions[ex.removed_round - 1, gone])
    ('removed', True)
    >>> len(ex.neighbours)
    4
    """
    func = "explain_row"
    k = v.check_int(k_neighbours, "k_neighbours", func, low=0, high=1000)
    if isinstance(result_or_run, AFLiteResult):
        result = result_or_run
    else:
        result, run_table, run_features = _load_run(Path(result_or_run))
        table = run_table if table is None else table
        features = run_features if features is None else features
    n = result.n_rows
    for name, value in (("table", table), ("features", features)):
        if value is not None and len(value) != n:
            raise ValueError(f"The '{name}' parameter of {func} has {len(value):,} rows; the run has {n:,}.")
    if features is not None and np.ndim(features) != 2:
        raise ValueError(f"The 'features' parameter of {func} must be a 2-D array (rows × features).")
    pos = row_position(result, row)
    label = str(result.classes[int(result.y[pos])])
    notes: list[str] = []
    text: dict[str, str] = {}
    text_cols: list[str] = []
    if table is None:
        notes.append("No table of the run's rows: no text or words (record one with filter --table).")
    else:
        table = table.reset_index(drop=True)
        text_cols = _text_columns(table, result, text_columns)
        text = {c: "" if pd.isna(table[c].iloc[pos]) else str(table[c].iloc[pos]) for c in text_cols}
    column = words_column if words_column is not None else ("hypothesis" if "hypothesis" in text_cols else None)
    stats = artifact_stats
    if stats is None and text_cols:
        source = table[column] if column in text_cols else table[text_cols].astype(str).agg(" ".join, axis=1)
        stats = artifact_statistics(
            source.fillna("").astype(str).tolist(), result.labels.astype(str), min_count=min_count, alpha=alpha
        )
    words = _words(text, stats, column, label)
    rounds = _rounds(result, pos)
    if result.null_counts is None:
        notes.append("No null for this run: run it with null_permutations=K (CLI --null-permutations K).")
    votes, votes_round = _votes(result, pos, rounds)
    if result.votes is None:
        notes.append(result.votes_message[0].upper() + result.votes_message[1:] + ".")
    neighbours = None
    if features is None:
        notes.append("No features: pass features= (CLI --features) to find its nearest rows in Φ.")
    else:
        neighbours = _neighbours(result, pos, features, k, table, text_cols)
    rr = int(result.removed_round[pos])
    return RowExplanation(
        position=pos,
        id=result.ids[pos] if result.ids is not None else pos,
        label=label,
        status="removed" if rr > 0 else "kept",
        removed_round=rr if rr > 0 else None,
        tau=float(result.params["tau"]),
        removal_score=float(result.removal_score[pos]),
        text=text,
        words=words,
        rounds=rounds,
        votes=votes,
        votes_round=votes_round,
        neighbours=neighbours,
        notes=tuple(notes),
    )
