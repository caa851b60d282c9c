"""The datasets every page works on: the bundled ones (cached for everyone) and this session's own.

The sidebar picks one (:func:`dataset_choices`); every page then gets it with :func:`dataset`. Uploaded
datasets, SNLI / MultiNLI fetched by name and opened run directories are the session's own: every compute function
that reads them takes the session's :class:`~aflite_app.specs.SessionData` as an argument (``session=``), which
the page passes in (:func:`aflite_app.ui.session_data`). Compute never imports the session module and never reads
Streamlit's session itself; without ``session`` it sees the bundled datasets and the server's stores only.

Also here, because the Data and Inspect pages both need them:

* SNLI / MultiNLI by name (:class:`NliSpec`, :func:`prepare_nli_fetch`): fetched with the optional ``datasets``
  library in a background job, at most once per (name, split, row cap, seed) (:class:`SharedJobs`), kept in a
  bounded store shared by every session;
* Gardner et al.'s token statistics of a dataset's text (:func:`artifact_statistics`), cached per dataset.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aflite_core.data import planted_bias as synthetic
from aflite_core.data.datasets import Dataset
from aflite_core.data.digits import load_digits_dataset
from aflite_core.data.embeddings import default_cache_dir
from aflite_core.data.nli import NLI_SPLITS, FetchProgress
from aflite_core.measures.artifact_statistics import artifact_statistics as _artifact_statistics
from aflite_core.measures.artifact_statistics import tokenize

from .. import settings
from ..admission import heavy
from ..jobs import Outcome, as_outcome, shared_jobs, stoppable
from ..specs import BUNDLED, NO_SESSION, DatasetSpec, SessionData
from . import _stores

__all__ = [
    "ARTIFACT_AUTO_ROWS",
    "DEFAULT_NLI_ROWS",
    "NLI_DATASETS",
    "NLI_DATA_DIR_ENV",
    "NLI_SPLITS",
    "NliSpec",
    "artifact_source_texts",
    "artifact_statistics",
    "artifact_statistics_wait",
    "artifact_summary",
    "artifact_table",
    "artifact_text_choices",
    "bundled_dataset",
    "class_names",
    "dataset",
    "dataset_choices",
    "default_partial_input",
    "describe_duplicates",
    "describe_nli_fetch",
    "groups_sentence",
    "is_partial_input",
    "nli_local_folder",
    "nli_unavailable",
    "pair_full_input",
    "partial_first_last",
    "partial_input_choices",
    "prepare_duplicates",
    "prepare_nli_fetch",
    "representation_table",
    "stored_duplicates",
]


@_stores.memo("bundled_dataset", 8, spinner="Loading the dataset…")
def bundled_dataset(key: str) -> Dataset:
    """A bundled dataset by key (see :data:`aflite_app.specs.BUNDLED`)."""
    if key == "digits":
        return load_digits_dataset()
    if key == "snli-sample":
        from aflite_core.data.bundled_snli import load_nli_sample

        return load_nli_sample()
    if key == "planted":
        X, y, biased = synthetic.make_planted_bias(2000, 16, class_sep=0.3, bias_fraction=0.25, random_state=0)
        return _synthetic_dataset(
            "planted",
            X,
            y,
            {"planted bias": biased},
            "Two Gaussian classes a linear model separates only weakly; 25 % of the rows "
            "carry a label-revealing shift (the planted bias AFLite should remove).",
        )
    if key == "circles":
        data = synthetic.make_biased_circles(1000, separation=0.5, flip_fraction=0.1, random_state=0)
        return _synthetic_dataset(
            "circles",
            data.X,
            data.y,
            {"planted bias": data.is_biased, "flipped label": data.is_flipped},
            "Two classes on concentric circles; 75 % of each class carry class-specific "
            "bias features, some biased rows have flipped labels (ICML 2020, §3).",
        )
    raise ValueError(f"Unknown bundled dataset {key!r}; choose one of {list(BUNDLED)}.")


def _synthetic_dataset(name: str, X, y, truth: dict[str, np.ndarray], description: str) -> Dataset:
    frame = pd.DataFrame({"label": np.asarray(y)})
    for col, values in truth.items():
        frame[col] = np.asarray(values, dtype=bool)
    for j in range(min(X.shape[1], 4)):
        frame[f"x{j}"] = X[:, j]
    classes = tuple(sorted(set(np.asarray(y).tolist())))
    return Dataset(
        name=name,
        frame=frame,
        label_column="label",
        classes=classes,
        y=np.searchsorted(classes, y).astype(np.int32),
        ids=np.arange(len(y)),
        representations={"features": np.asarray(X, dtype=np.float32)},
        representation_descriptions={"features": f"raw features ({X.shape[1]}-d)"},
        description=description,
        meta={"planted_truth": list(truth)},
    )


def dataset(spec: DatasetSpec | str, *, session: SessionData = NO_SESSION) -> Dataset:
    """The dataset behind a spec: one of the session's own (``session``, from the page) or a bundled one.

    ``session`` is this session's :class:`~aflite_app.specs.SessionData`, which the page layer passes in (compute
    never reads the session itself); without it only the bundled datasets are found.
    """
    key = spec.key if isinstance(spec, DatasetSpec) else spec
    if key in session.uploads:
        return session.uploads[key]
    return bundled_dataset(key)


def dataset_choices(*, session: SessionData = NO_SESSION) -> dict[str, str]:
    """Key -> label of every dataset this session (``session``, from the page) can pick."""
    out = dict(BUNDLED)
    for key, data in session.uploads.items():
        kind = "Opened" if key.startswith("run-") else "Fetched" if key.startswith("nli-") else "Uploaded"
        out[key] = f"{kind}: {data.name} ({data.n_rows:,} rows)"
    return out


def representation_table(data: Dataset) -> pd.DataFrame:
    """The representations Φ(X) of a dataset: name, dimensions and what each is (for a table on the Data page)."""
    return pd.DataFrame(
        {
            "representation": list(data.representations),
            "dimensions": [X.shape[1] for X in data.representations.values()],
            "what it is": [data.representation_descriptions.get(r, r) for r in data.representations],
        }
    )


def class_names(data: Dataset) -> list[str]:
    """Class names as strings, in code order (the core's :attr:`~aflite_core.Dataset.class_names`)."""
    return data.class_names


def is_partial_input(data: Dataset, rep: str) -> bool:
    """A partial-input view: described so (TF-IDF of the hypothesis alone), or named after one side of a pair.

    A name with a word starting ``hyp`` (``embedding_hypothesis``, ``hyp_minilm``) or ``prem`` (``prem_minilm``,
    ``premise_tfidf``): one sentence of a premise/hypothesis pair, as an uploaded .npy file's name says it.
    """
    desc = data.representation_descriptions.get(rep, "").lower()
    return desc.startswith("partial input") or re.search(r"(^|[^a-z])(hyp|prem)", rep.lower()) is not None


def pair_full_input(data: Dataset, used: str | None) -> str:
    """The representation a page takes as the *full* input when ``used`` (the sidebar's, the run's) is given.

    ``used`` itself, except on a premise/hypothesis pair when ``used`` is a partial input (AFLite run on the
    hypothesis alone, say): then the pair's own view, the full representation that shares most of ``used``'s name
    (``embedding_hypothesis`` -> ``embedding``, ``hyp_minilm`` -> ``pair_minilm``), first in order on a tie; ``used``
    when the dataset has no full representation.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from aflite_core.data.datasets import Dataset
    >>> X = np.zeros((4, 2), np.float32)
    >>> frame = pd.DataFrame({"premise": list("abcd"), "hypothesis": list("efgh"), "label": list("xyxy")})
    >>> data = Dataset(name="t", frame=frame, label_column="label", classes=("x", "y"), y=np.array([0, 1, 0, 1]),
    ...                ids=np.arange(4), representations={"hyp_minilm": X, "tfidf": X, "pair_minilm": X},
    ...                pair=("premise", "hypothesis"))
    >>> pair_full_input(data, "hyp_minilm"), pair_full_input(data, "tfidf")
    ('pair_minilm', 'tfidf')
    """
    used = used or data.default_representation
    if data.pair is None or not is_partial_input(data, used):
        return used
    full = [r for r in data.representations if not is_partial_input(data, r)]
    if not full:
        return used

    def run(a: str, b: str) -> int:  # characters shared from the start
        return next((i for i, (x, z) in enumerate(zip(a, b)) if x != z), min(len(a), len(b)))

    def shared(rep: str) -> int:
        a, b = used.lower(), rep.lower()
        return run(a, b) + run(a[::-1], b[::-1])

    return max(full, key=lambda r: (shared(r), -full.index(r)))


def partial_first_last(data: Dataset) -> Dataset:
    """``data`` with, on a premise/hypothesis pair, its full representations before the partial ones (else as is).

    The first representation is the default one (the sidebar's): an upload whose .npy files sort the hypothesis
    first (``snli.hyp_minilm.npy`` before ``snli.pair_minilm.npy``) would otherwise filter, record dynamics and
    score baselines on the hypothesis alone as if it were the whole example.
    """
    if data.pair is None:
        return data
    reps = list(data.representations)
    ordered = sorted(reps, key=lambda r: is_partial_input(data, r))
    if ordered == reps or is_partial_input(data, ordered[0]):
        return data
    return dataclasses.replace(data, representations={r: data.representations[r] for r in ordered})


def partial_input_choices(data: Dataset, used: str | None) -> list[str]:
    """Representations that can serve as the partial input (all but the one AFLite used), natural ones first.

    A representation described as a partial input (e.g. the hypothesis-only TF-IDF of a sentence pair) comes
    first (:func:`is_partial_input`).
    """
    used = used or data.default_representation
    others = [r for r in data.representations if r != used]
    return sorted(others, key=lambda r: not is_partial_input(data, r))


def default_partial_input(data: Dataset, used: str | None) -> str | None:
    """The partial-input representation to show by default: a natural partial input when the data has one."""
    choices = partial_input_choices(data, used)
    return choices[0] if choices and is_partial_input(data, choices[0]) else None


# -- SNLI / MultiNLI by name ---------------------------------------------------------------------------------------
#: the datasets the Data page fetches by name, and how it names them
NLI_DATASETS = {"snli": "SNLI", "mnli": "MultiNLI"}
#: a local folder read instead of the Hugging Face Hub (tests, offline machines): one sub-folder per dataset
NLI_DATA_DIR_ENV = settings.NLI_DATA_DIR_ENV
#: the row cap the Data page starts at
DEFAULT_NLI_ROWS = 5_000


@dataclass(frozen=True)
class NliSpec:
    """What to fetch: dataset (``"snli"`` / ``"mnli"``), split, row cap and the seed of the capped sample."""

    name: str
    split: str
    max_rows: int
    seed: int = 0

    @property
    def key(self) -> str:
        """The dataset's key in the session (and the sidebar)."""
        return f"nli-{self.name}-{self.split}-{self.max_rows}-{self.seed}"

    @property
    def label(self) -> str:
        """How the page names the dataset: "SNLI validation"."""
        return f"{NLI_DATASETS.get(self.name, self.name)} {self.split}"


def nli_unavailable() -> str | None:
    """Why fetching by name cannot work here (the ``datasets`` package is missing), or None."""
    if importlib.util.find_spec("datasets") is None:
        return (
            "Fetching SNLI / MultiNLI by name needs the optional 'datasets' package, which is not installed here: "
            "`pip install datasets`. Or download the data once elsewhere and upload it on 'Upload your own' "
            "(the original snli_1.0_dev.jsonl works as it is)."
        )
    return None


def nli_local_folder() -> Path | None:
    """The local copy read instead of the Hub (``$AFLITE_NLI_DATA_DIR``), or None."""
    return settings.load().nli_data_dir


def _nli_store() -> _stores.Store:
    """Fetched NLI datasets by :class:`NliSpec`, shared by every session."""
    return _stores.store("nli_store", settings.load().nli_store_size)


def _fetch_nli(spec: NliSpec, report: Callable[[Any], None]) -> Dataset:
    from aflite_core.data.nli import load_nli_dataset

    local = nli_local_folder()
    data_files = cache_dir = None
    if local is not None:
        data_files = local / spec.name
        if not data_files.is_dir():
            raise ValueError(  # the folder is named by its variable: no server path reaches the browser
                f"The local NLI folder (set by {NLI_DATA_DIR_ENV}) has no '{spec.name}' sub-folder; put the "
                f"{NLI_DATASETS[spec.name]} files in its '{spec.name}' sub-folder, or unset {NLI_DATA_DIR_ENV} to "
                "fetch from the Hugging Face Hub."
            )
        cache_dir = default_cache_dir() / "hf-datasets"
    try:
        data = load_nli_dataset(
            spec.name,
            split=spec.split,
            max_rows=spec.max_rows,
            random_state=spec.seed,
            data_files=data_files,
            cache_dir=cache_dir,
            progress=report,
        )
    except ImportError as exc:  # the core's one sentence (what to install); ui.errors shows ValueErrors
        raise ValueError(str(exc)) from None
    meta = dict(data.meta, source=f"{spec.label} ({'local copy' if local is not None else 'Hugging Face Hub'})")
    return dataclasses.replace(
        data,
        name=spec.label,
        description=f"{spec.label}: {data.n_rows:,} natural-language inference pairs"
        + (f" (a seeded sample of {spec.max_rows:,}, seed {spec.seed})" if data.n_rows >= spec.max_rows else "")
        + ", with TF-IDF features of the pair and of the hypothesis alone.",
        meta=meta,
    )


def prepare_nli_fetch(spec: NliSpec) -> Callable[[Callable], Outcome]:
    """The job :func:`aflite_app.jobs.run_in_background` runs for ``spec`` (checked here, in the page's thread).

    A fetched dataset is kept in a store shared by every session, and a fetch in progress is joined, never
    started twice (:class:`SharedJobs`). The wait gives an :class:`Outcome`: the Dataset, or why not (offline,
    ``datasets`` missing, stopped).
    """
    if spec.name not in NLI_DATASETS:
        raise ValueError(f"Unknown NLI dataset {spec.name!r}; choose one of {list(NLI_DATASETS)}.")
    if spec.split not in NLI_SPLITS[spec.name]:
        splits = list(NLI_SPLITS[spec.name])
        raise ValueError(f"{NLI_DATASETS[spec.name]} has no split {spec.split!r}; choose one of {splits}.")
    if spec.max_rows < 10:
        raise ValueError(f"Keep at least 10 rows (the row cap is {spec.max_rows}).")
    _stores.check_rows(
        spec.max_rows,
        subject="A row cap of",
        doing="handles",
        instead="Lower the row cap, or filter the whole split from the command line.",
    )
    missing = nli_unavailable()
    if missing is not None:
        raise ValueError(missing)
    store, jobs = _nli_store(), shared_jobs()

    def job(callback: Callable) -> Dataset:
        data = _fetch_nli(spec, stoppable(callback))
        store.keep(spec, data)
        return data

    def target(callback: Callable) -> Outcome:
        hit = store.recall(spec)
        return Outcome(hit) if hit is not None else as_outcome(lambda: jobs.follow(spec, job, callback), "The fetch")

    return target


def describe_nli_fetch(progress: FetchProgress | None, elapsed: float, _step: Any = None) -> tuple[float, str]:
    """The progress bar of a fetch: ``(fraction, text)`` (the step argument of run_in_background is ignored)."""
    if progress is None:
        return 0.0, f"Starting… ({elapsed:.0f} s)"
    text = progress.message
    if progress.stage == "load":
        text += " (the first time downloads the split, which can take a minute)"
    return min(max(progress.fraction, 0.02), 1.0), f"{text}… {elapsed:.0f} s"


# -- token statistics of a dataset's text ------------------------------------------------------------------------
def artifact_text_choices(data: Dataset) -> dict[str, str]:
    """The texts token statistics can be computed on: source key -> label (the hypothesis first for a pair)."""
    out: dict[str, str] = {}
    if data.pair is not None:
        out[data.pair[1]] = f"the hypothesis ('{data.pair[1]}')"
        out[data.pair[0]] = f"the premise ('{data.pair[0]}')"
    for col in data.text_columns:
        out.setdefault(col, f"'{col}'")
    if len(out) > 1:
        out["*all*"] = "all text columns together"
    return out


def artifact_source_texts(data: Dataset, source: str) -> list[str]:
    """The text of every row for a :func:`artifact_text_choices` key (missing cells are empty)."""
    choices = artifact_text_choices(data)
    if source not in choices:
        raise ValueError(f"'{data.name}' has no text column {source!r}; choose one of {list(choices)}.")
    cols = [c for c in choices if c != "*all*"] if source == "*all*" else [source]
    out = data.frame[cols[0]].astype("string").fillna("")  # column-wise (no call per row)
    for col in cols[1:]:
        out = out + " " + data.frame[col].astype("string").fillna("")
    return out.tolist()


#: example texts each (token, label) point of the chart shows on hover
N_EXAMPLES = 2


def _examples(
    texts: list[str],
    labels: np.ndarray,
    stats: pd.DataFrame,
    n: int,
    progress: Callable[[int], Any] | None = None,
) -> list[list[str]]:
    """Up to ``n`` texts of each (token, label) row of ``stats`` that contain the token and have the label.

    ``progress(done)`` every 10,000 texts.
    """
    wanted = set(stats["token"])
    found: dict[tuple[str, Any], list[str]] = {}
    for i, (text, label) in enumerate(zip(texts, labels)):
        if progress is not None and i and i % 10_000 == 0:
            progress(i)
        for tok in set(tokenize(text)) & wanted:
            hits = found.setdefault((tok, label), [])
            if len(hits) < n:
                hits.append(text if len(text) <= 90 else text[:89] + "…")
    return [found.get((t, lab), []) for t, lab in zip(stats["token"], stats["label"])]


def word_statistics(
    data: Dataset,
    source: str,
    min_count: int,
    alpha: float,
    progress: Callable[[int, int], Any] | None = None,
    texts: list[str] | None = None,
) -> pd.DataFrame:
    """:func:`artifact_statistics` of ``data`` computed now (no cache), with its ``examples`` column.

    ``progress(done, total)``: two passes over the n texts (the test, then the examples), ``total = 2 n``, called
    every 10,000 texts. ``texts``: the source's texts when the caller has them already
    (:func:`artifact_source_texts`).
    """
    texts = artifact_source_texts(data, source) if texts is None else texts
    labels = np.asarray(data.labels)
    n = len(texts)
    testing = None if progress is None else (lambda done, _total: progress(done, 2 * n))
    stats = _artifact_statistics(texts, labels, min_count=min_count, alpha=alpha, progress=testing)
    attrs = dict(stats.attrs)
    finding = None if progress is None else (lambda done: progress(n + done, 2 * n))
    stats = stats.assign(examples=_examples(texts, labels, stats, N_EXAMPLES, finding) if len(stats) else [])
    stats.attrs.update(attrs, source=source)
    return stats


@_stores.memo("dataset_artifacts", 16, spinner="Testing every token against the labels…")
def _dataset_artifacts(key: str, source: str, min_count: int, alpha: float, _data: Dataset) -> pd.DataFrame:
    return word_statistics(_data, source, min_count, alpha)


#: texts above which the Data page's token statistics start only when asked (settings.artifact_auto_rows)
ARTIFACT_AUTO_ROWS = settings.load().artifact_auto_rows


def artifact_statistics_wait(data: Dataset) -> bool:
    """Whether the Data page's token statistics of ``data`` wait for a click (more than :data:`ARTIFACT_AUTO_ROWS`).

    A run opened with its table of 550,000 texts takes about 7 s to test; the page does not start that unasked.
    """
    return data.n_rows > ARTIFACT_AUTO_ROWS


def artifact_statistics(
    key: str, source: str, *, min_count: int = 10, alpha: float = 0.01, session: SessionData = NO_SESSION
) -> pd.DataFrame:
    """Gardner et al.'s test of every (token, label) pair in one text source of the dataset ``key``.

    :func:`aflite_core.measures.artifact_statistics.artifact_statistics` on the dataset's labels, plus a column
    ``examples`` (up to two texts with the token and the label, for the chart's hover). Cached per dataset,
    source and settings (about 0.6 s on 7k texts). ``session``: the page's session data (for an uploaded dataset).
    """
    return _dataset_artifacts(key, source, int(min_count), float(alpha), dataset(key, session=session))


def artifact_table(stats: pd.DataFrame, *, every_pair: bool = False) -> pd.DataFrame:
    """The statistics as the pages show them: significant pairs only (or ``every_pair``), one example text each."""
    part = stats if every_pair else stats[stats["significant"].astype(bool)]
    out = part[["token", "label", "count", "label_count", "p_hat", "z", "significant", "pmi"]].copy()
    out["label"] = out["label"].astype(str)
    examples = part["examples"] if "examples" in part.columns else pd.Series([[]] * len(part), index=part.index)
    out["example"] = [ex[0] if len(ex) else "" for ex in examples]
    return out.reset_index(drop=True)


def artifact_summary(stats: pd.DataFrame) -> str:
    """One sentence: how many pairs were tested, how many are significant, and the threshold."""
    a = stats.attrs
    n_sig = int(stats["significant"].astype(bool).sum())
    labels = a.get("labels") or []
    return (
        f"{n_sig:,} of {a.get('n_tests', 0):,} (token, label) pairs are significant: tokens in at least "
        f"{a.get('min_count')} of the {a.get('n_texts', 0):,} texts × {len(labels)} labels were tested, "
        f"Bonferroni-corrected at α = {a.get('alpha', 0):g} (z* = {a.get('z_critical', float('nan')):.2f})."
    )


def groups_sentence(data) -> str | None:
    """The Data page's line for an NLI pair dataset (None for any other): what its runs keep together."""
    if getattr(data, "pair", None) is None:
        return None
    premise, hypothesis = data.pair
    return (
        f"Filter runs on this dataset keep each premise's hypotheses together: the rows that share a '{premise}' "
        f"are always on the same side of every partition, so no model predicts a '{hypothesis}' whose sibling "
        "hypotheses it trained on."
    )


# -- duplicates (issue 28): exact and near-duplicate rows, a background job of the Data page -----------------------
def _duplicates_store() -> _stores.Store:
    """Duplicate searches by :class:`DatasetSpec` (dataset and representation), shared by every session."""
    return _stores.store("duplicates_store", 16)


def stored_duplicates(spec: DatasetSpec) -> Any:
    """The finished duplicate search of ``spec`` (a :class:`aflite_core.data.duplicates.DuplicateReport`), or None."""
    return _duplicates_store().recall(spec)


def _duplicate_texts(data: Dataset) -> Any:
    """The texts whose equality makes rows exact duplicates: the pair's two columns, else the text columns."""
    cols = list(data.pair) if data.pair is not None else list(data.text_columns)
    cols = [c for c in cols if c in data.frame.columns]
    return data.frame[cols] if cols else None


def prepare_duplicates(spec: DatasetSpec, *, session: SessionData = NO_SESSION) -> Callable[[Callable], Outcome]:
    """The background job of the Data page's duplicate search of ``spec`` (data read now, in the page's thread).

    :func:`aflite_core.data.duplicates.find_duplicates` on the representation and the texts; the report is kept
    in a store shared by every session, and a search in progress is joined, never started twice.
    """
    from aflite_core.data.duplicates import find_duplicates

    data = dataset(spec, session=session)
    X = data.representation(spec.representation)
    texts = _duplicate_texts(data)
    store, jobs = _duplicates_store(), shared_jobs()

    def job(callback: Callable) -> Any:
        report = stoppable(callback)
        found = find_duplicates(X, texts=texts, progress=lambda done, total: report((done, total)))
        store.keep(spec, found)
        return found

    def target(callback: Callable) -> Outcome:
        hit = store.recall(spec)
        if hit is not None:
            return Outcome(hit)
        return as_outcome(lambda: jobs.follow(("duplicates", spec), job, callback), "The duplicate search")

    if data.n_rows > _stores.MAX_INTERACTIVE_ROWS:  # above the interactive size: it waits its turn in the queue
        return heavy(target, f"a duplicate search of {data.n_rows:,} rows")
    return target


def duplicates_now(spec: DatasetSpec, *, session: SessionData = NO_SESSION) -> Outcome:
    """The duplicate search of ``spec`` (up to the interactive size) awaited in the page's thread, or its stored report.

    Awaited before the Data page draws the groups panel's widgets: no progress fragment reruns the page when the
    search ends (a rerun that could swallow a click). Another session's search is joined, never started twice.
    """
    hit = stored_duplicates(spec)
    if hit is not None:
        return Outcome(hit)
    return prepare_duplicates(spec, session=session)(lambda _progress: True)


def duplicates_on_request(data: Dataset) -> bool:
    """Whether the Data page's duplicate search of ``data`` starts only when asked (above the interactive size).

    Below it the search takes seconds and runs as the page opens; above it it is a heavy job that waits its turn
    in the server's queue, so opening a large run never queues work the user did not ask for.
    """
    return data.n_rows > _stores.MAX_INTERACTIVE_ROWS


def describe_duplicates(progress: Any, elapsed: float, _step: Any = None) -> tuple[float, str]:
    """The duplicate search's progress bar: rows hashed so far."""
    if not progress:
        return 0.0, "Looking for exact and near-duplicate rows…"
    done, total = progress
    return min(1.0, done / max(total, 1)), f"Looking for near-duplicate rows: {done:,} of {total:,} hashed"
