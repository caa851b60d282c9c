"""Ready-made studies: the bundled digits with four adversaries, and any text table with representations."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import _validation as v
from ..measures.adversary_strength import Backbone, backbone_strength, digits_backbones, linear_backbones
from .checks import _check_names
from .evaluated import _check_evaluated, _model_name
from .study import AdversaryStudy, adversary_study
from .text_views import SetupStopped, _text_representations, _text_split

__all__ = [
    "DIGITS_STUDY_DEFAULTS",
    "AdversarySetup",
    "SetupStopped",
    "digits_adversary_setup",
    "text_adversary_setup",
]


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
    ("logistic", "pixels"),
    ("knn", "pca"),
    ("rbf", "mlp"),
    ("mlp", "pixels"),
    ("forest", "pixels"),
    ("logistic", "mlp_small"),
)


#: AFLite parameters of :func:`text_adversary_setup`, as fractions of the training rows
TEXT_STUDY_FRACTIONS: dict[str, float] = {"target_size": 0.5, "train_size": 0.4, "slice_size": 0.05}


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
        Adversaries, weakest first by ``strength``.
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
        Each adversary's strength, measured independently of filtering: the accuracy of its backbone (the
        fully trained model, :mod:`aflite_core.measures.adversary_strength`) on the evaluation rows (Phang et al.'s
        Table 1).
    strength_table : pandas.DataFrame
        The same with the backbone, its description and a Wilson 95 % interval
        (:func:`~aflite_core.measures.adversary_strength.backbone_strength`).
    predictability : dict of str to float
        Mean out-of-sample predictability of the training rows in one scoring round with the study's parameters
        (the estimate of R(Φ) of Le Bras et al., eq. 5): what round 1 measures, *not* an independent strength.
    backbones : dict of str to Backbone
        Each adversary's backbone; the study evaluates them too ("shared backbone", the paper's Figure 4).
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
    strength_table: Any = None
    predictability: dict[str, float] = field(default_factory=dict)
    backbones: dict[str, Backbone] = field(default_factory=dict)

    def evaluated_with_backbones(
        self, evaluated: Sequence[Any] | None = None, adversaries: Sequence[str] | None = None
    ) -> tuple[list[Any], dict[str, str]]:
        """Evaluated models plus the backbones of ``adversaries`` (default all), and the backbone mapping.

        Returns ``(evaluated, backbones)`` for :func:`adversary_study`: a backbone that is already an evaluated
        model (e.g. ``logistic:pixels``) is not added twice.
        """
        models = list(self.evaluated if evaluated is None else evaluated)
        names = {_model_name(m[0], m[1]) if len(m) == 2 else m[0] for m in models}
        chosen = self.adversaries if adversaries is None else tuple(adversaries)
        mapping = {}
        for a in chosen:
            bb = self.backbones.get(a)
            if bb is None:
                continue
            if bb.name not in names:
                models.append(bb.as_evaluated())
                names.add(bb.name)
            mapping[a] = bb.name
        return models, mapping

    def study_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`adversary_study` for this setup (the backbones included)."""
        evaluated, backbones = self.evaluated_with_backbones()
        kw: dict[str, Any] = {
            "adversaries": self.adversaries,
            "evaluated": evaluated,
            "backbones": backbones,
            "ids": self.train_ids,
            "eval_ids": self.eval_ids,
            **self.params,
        }
        if self.annotator_labels is not None:
            kw["annotator_labels"] = self.annotator_labels
            kw["annotator_source"] = self.annotator_source
        return kw

    def run(self, **overrides: Any) -> AdversaryStudy:
        """Run :func:`adversary_study` on this setup (keyword arguments override the setup's).

        Overriding ``adversaries`` or ``evaluated`` keeps the chosen adversaries' backbones among the evaluated
        models (unless ``backbones`` is overridden too).
        """
        kw = {**self.study_kwargs(), **overrides}
        if "backbones" not in overrides and ("evaluated" in overrides or "adversaries" in overrides):
            kw["evaluated"], kw["backbones"] = self.evaluated_with_backbones(
                overrides.get("evaluated"), kw["adversaries"]
            )
        return adversary_study(self.train_X, self.train_y, self.eval_X, self.eval_y, **kw)

    def __repr__(self) -> str:
        n_train = len(self.train_y)
        return (
            f"AdversarySetup(name={self.name!r}, n_train={n_train}, n_eval={len(self.eval_y)}, "
            f"adversaries={list(self.adversaries)}, evaluated={[f'{f}:{r}' for f, r in self.evaluated]})"
        )


def _strengths(
    train_X: Mapping[str, NDArray],
    y: NDArray,
    names: Sequence[str],
    *,
    train_size: int,
    n_partitions: int,
    seed: int,
    n_threads: int | None,
) -> dict[str, float]:
    from ..engine.filtering import predictability

    out = {}
    for a in names:
        p = predictability(
            train_X[a], y, n_partitions=n_partitions, train_size=train_size, random_state=seed, n_threads=n_threads
        )
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

    :func:`aflite_core.data.digits.load_digits_dataset` gives 1,438 digits (its warm-up rows already left out)
    with four representations: raw ``pixels`` (64-d), ``pca`` (16 components), and the hidden layers of two
    warm-up MLPs, ``mlp_small`` (8 units) and ``mlp`` (64 units). A stratified, seeded ``eval_fraction``
    becomes the evaluation set (432 rows by default; 1,006 training rows).

    The adversaries are ordered weakest first by a strength measured independently of filtering (Phang et al.'s
    Table 1): the held-out accuracy, on the evaluation rows, of each adversary's backbone trained on the training
    rows (:func:`aflite_core.measures.adversary_strength.digits_backbones`: the warm-up MLPs' architecture retrained on
    the pixels with its own seed, PCA + logistic regression, logistic regression on the pixels). The round-1
    predictability is kept too (``predictability``), but only as what round 1 measures. Evaluated models
    (:data:`DIGITS_EVALUATED`): ``logistic:pixels``, ``knn:pca``, ``rbf:mlp``, ``mlp:pixels``,
    ``forest:pixels`` and ``logistic:mlp_small``, so every adversary shares its representation with at least
    one of them (the upper bound of Figure 4), plus the backbones (``backbone:pca``, ``backbone:mlp``,
    ``backbone:mlp_small``; the pixels' backbone is ``logistic:pixels``): the paper's Figure 4 comparison.

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

    from ..data.digits import DIGITS_REPRESENTATIONS, load_digits_dataset

    ds = load_digits_dataset()
    available = ("pixels", "pca", "mlp_small", "mlp")
    names = available if adversaries is None else _check_names(adversaries, "adversaries", func, available)
    models = DIGITS_EVALUATED if evaluated is None else tuple((f, r) for f, r in evaluated)
    _check_evaluated(models, available, func)
    rng = np.random.default_rng(seed)
    split_seed, strength_seed, backbone_seed = (int(s) for s in rng.integers(0, 2**31 - 1, size=3))
    idx = np.arange(ds.n_rows)
    tr, ev = train_test_split(idx, test_size=float(eval_fraction), stratify=ds.y, random_state=split_seed)
    tr, ev = np.sort(tr), np.sort(ev)
    labels = ds.labels
    train_X = {r: np.ascontiguousarray(ds.representation(r)[tr]) for r in available}
    eval_X = {r: np.ascontiguousarray(ds.representation(r)[ev]) for r in available}
    params = dict(DIGITS_STUDY_DEFAULTS)
    predictability = _strengths(
        train_X,
        ds.y[tr],
        names,
        train_size=params["train_size"],
        n_partitions=16,
        seed=strength_seed,
        n_threads=n_threads,
    )
    backbones = digits_backbones(names, random_state=backbone_seed)
    table = backbone_strength(
        train_X, labels[tr], eval_X, labels[ev], backbones, random_state=backbone_seed, n_threads=n_threads
    )
    strength = {a: round(float(x), 4) for a, x in zip(table["adversary"], table["accuracy"])}
    ordered = tuple(sorted(names, key=lambda a: (strength[a], predictability[a])))
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
        strength_table=table,
        predictability=predictability,
        backbones=backbones,
        meta={
            "split": "sklearn train_test_split, stratified",
            "eval_fraction": float(eval_fraction),
            "random_state": seed,
            "split_seed": split_seed,
            "source": ds.meta.get("source"),
            "n_warmup_rows_left_out": ds.meta.get("n_warmup"),
        },
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
    progress: Callable[[Any], bool | None] | None = None,
) -> AdversarySetup:
    """Adversaries for a text :class:`~aflite_core.data.datasets.Dataset`: TF-IDF, partial input, sentence embeddings.

    Built representations (for a sentence pair such as NLI; without a pair the text columns are used and no
    partial-input view is built):

    * ``tfidf`` - TF-IDF + SVD of premise and hypothesis (:func:`aflite_core.data.features.tfidf_features`);
    * ``tfidf_hypothesis`` - the partial-input view, the hypothesis alone;
    * ``embedding`` / ``embedding_hypothesis`` - all-MiniLM-L6-v2 sentence embeddings of the pair text and of
      the hypothesis (:func:`aflite_core.data.embeddings.embedding_features`), when the optional ``embeddings`` extra
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
    progress : callable, optional
        Called with an :class:`aflite_core.data.embeddings.EmbeddingProgress` while the sentence embeddings are built:
        ``"load_model"`` just before the sentence model is loaded (only when it is not in memory yet; the load
        itself cannot be interrupted), ``"embed"`` after every chunk of texts (with a time estimate) and
        ``"done"``. Returning ``False`` stops the setup at once with :class:`SetupStopped`.

    Returns
    -------
    AdversarySetup
        AFLite parameters as fractions of the training rows (:data:`TEXT_STUDY_FRACTIONS`):
        ``target_size`` 0.5, ``train_size`` 0.4, ``slice_size`` 5 % (counts), ``tau`` 0.75, m = 64. With the
        shared SNLI sample and MiniLM embeddings these remove 15-40 % of the evaluation rows in round 1.
    """
    func = "text_adversary_setup"
    from ..data.datasets import Dataset

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
    reps, descs, notes = _text_representations(
        dataset,
        frame,
        text_cols,
        pair,
        func=func,
        representations=representations,
        tfidf=tfidf,
        embeddings=embeddings,
        n_components=n_components,
        tfidf_seed=tfidf_seed,
        n_threads=n_threads,
        progress=progress,
    )
    if not reps:
        raise ValueError(
            f"{func} built no representation: enable tfidf or embeddings, or keep some of the dataset's own."
        )
    group, tr, ev = _text_split(dataset, frame, pair, group_column, eval_fraction, split_seed, func)
    labels = dataset.labels
    params = _text_study_params(len(tr))
    train_X = {k: np.ascontiguousarray(X[tr]) for k, X in reps.items()}
    eval_X = {k: np.ascontiguousarray(X[ev]) for k, X in reps.items()}
    names = tuple(reps)
    models = _evaluated_models(names, evaluated, func)
    predictability = _strengths(
        train_X,
        dataset.y[tr],
        names,
        train_size=params["train_size"],
        n_partitions=16,
        seed=strength_seed,
        n_threads=n_threads,
    )
    backbones = linear_backbones(names)
    table = backbone_strength(
        train_X, labels[tr], eval_X, labels[ev], backbones, random_state=strength_seed, n_threads=n_threads
    )
    strength = {a: round(float(x), 4) for a, x in zip(table["adversary"], table["accuracy"])}
    ann, src = _annotators(frame, ev, annotator_column, annotator_source_column, func)
    return AdversarySetup(
        name=dataset.name,
        train_X=train_X,
        train_y=labels[tr],
        eval_X=eval_X,
        eval_y=labels[ev],
        adversaries=tuple(sorted(names, key=lambda a: (strength[a], predictability[a]))),
        evaluated=models,
        params=params,
        train_ids=dataset.ids[tr],
        eval_ids=dataset.ids[ev],
        annotator_labels=ann,
        annotator_source=src,
        descriptions=descs,
        strength=strength,
        strength_table=table,
        predictability=predictability,
        backbones=backbones,
        meta={"group_column": group, "eval_fraction": float(eval_fraction), "random_state": seed, "notes": notes},
    )


def _text_study_params(n_train: int) -> dict[str, Any]:
    """AFLite's parameters for a text study: :data:`TEXT_STUDY_FRACTIONS` of the training rows, τ 0.75, m 64."""
    return {
        "target_size": round(TEXT_STUDY_FRACTIONS["target_size"] * n_train),
        "train_size": round(TEXT_STUDY_FRACTIONS["train_size"] * n_train),
        "slice_size": max(1, round(TEXT_STUDY_FRACTIONS["slice_size"] * n_train)),
        "tau": 0.75,
        "n_partitions": 64,
    }


def _evaluated_models(
    names: tuple[str, ...], evaluated: Sequence[tuple[str, str]] | None, func: str
) -> tuple[tuple[str, str], ...]:
    """The evaluated models: ``evaluated`` checked, else logistic on every view, RBF SVM and kNN on the full one."""
    if evaluated is None:
        full = next((k for k in names if "hypothesis" not in k and "hyp" not in k), names[0])
        return tuple([("logistic", k) for k in names] + [("rbf", full), ("knn", full)])
    models = tuple((f, r) for f, r in evaluated)
    _check_evaluated(models, names, func)
    return models


def _annotators(
    frame: Any, ev: NDArray, annotator_column: str | None, annotator_source_column: str | None, func: str
) -> tuple[list | None, NDArray | None]:
    """The annotators' labels and sources of the evaluation rows, from the named columns (None where not named)."""
    ann = src = None
    if annotator_column is not None:
        if annotator_column not in frame.columns:
            raise ValueError(
                f"The 'annotator_column' parameter of {func} must be a column of the dataset. Got "
                f"{annotator_column!r} instead."
            )
        ann = [frame[annotator_column].iloc[i] for i in ev]
    if annotator_source_column is not None:
        if annotator_source_column not in frame.columns:
            raise ValueError(
                f"The 'annotator_source_column' parameter of {func} must be a column of the dataset. "
                f"Got {annotator_source_column!r} instead."
            )
        src = frame[annotator_source_column].to_numpy()[ev]
    return ann, src
