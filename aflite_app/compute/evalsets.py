"""The Evaluation sets page (Phang et al.): AFLite filters an evaluation set with several adversaries and seeds.

"Adversarially Constructed Evaluation Sets Are More Challenging, but May Not Be Fair": evaluated models are
scored on what each adversary (a representation) selects. Caches: the split with its adversaries ordered by
strength (keyed by :class:`EvalSetSpec`); finished studies in a bounded store keyed by
:class:`EvalStudySpec` (shared by the page's background run and the synchronous path, like the Filter page's
results); uploaded evaluation files parsed once and kept in a bounded store by content digest
(:mod:`aflite_app.compute.evalset_uploads`). The specs are in :mod:`aflite_app.compute.evalset_specs`; this
module, the page's own, re-exports both modules' public names.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

from aflite_core.data.datasets import Dataset
from aflite_core.data.embeddings import (
    EMBEDDINGS_INSTALL_COMMAND,
    EmbeddingProgress,
    embeddings_status,
    sentence_model_loaded,
)
from aflite_core.engine.registry import CLASSIFIER_LABELS
from aflite_core.evalsets import (
    SetupStopped,
    StudyProgress,
    StudyStep,
    annotator_agreement,
    digits_adversary_setup,
    study_overview,
    study_reading,
    text_adversary_setup,
)

from .. import settings
from ..jobs import Outcome
from ..specs import NO_SESSION, SessionData
from . import _stores
from .datasets import dataset
from .evalset_specs import EvalSetSpec, EvalStudySpec, EvalUpload
from .evalset_uploads import (
    EVALSET_TEXT_REPRESENTATIONS,
    EVALSET_UPLOAD_STORE_SIZE,  # noqa: F401 - read here by tests/test_settings.py
    _evalsets_check_size,
    _evalsets_upload_setup,
    evalsets_annotator_columns,
    evalsets_upload,
    evalsets_uploaded,
)
from .uploads import UPLOAD_TABLE_TYPES

__all__ = [
    "EMBEDDINGS_INSTALL_COMMAND",
    "EVALSET_FAMILIES",
    "EVALSET_MAX_SEEDS",
    "EVALSET_SLOW_FAMILIES",
    "EVALSET_TEXT_REPRESENTATIONS",
    "UPLOAD_TABLE_TYPES",
    "EvalSetSpec",
    "EvalStudySpec",
    "EvalUpload",
    "describe_evalsets_setup",
    "describe_evalsets_study",
    "evalsets_annotator_columns",
    "evalsets_default_models",
    "evalsets_embeddings_available",
    "evalsets_is_upload",
    "evalsets_key",
    "evalsets_kind",
    "evalsets_model_choices",
    "evalsets_reading",
    "evalsets_setup",
    "evalsets_setup_is_slow",
    "evalsets_source_counts",
    "evalsets_study_seconds",
    "evalsets_upload",
    "evalsets_uploaded",
    "evalsets_wait_hint",
    "prepare_evalsets_setup",
    "prepare_evalsets_study",
    "run_evalsets_study",
    "stored_evalsets_setup",
    "stored_evalsets_study",
]

#: classifier families of evaluated models, with their labels from the core's registry
EVALSET_FAMILIES = dict(CLASSIFIER_LABELS)
#: families left out of the default choice of evaluated models (seconds each on the digits)
EVALSET_SLOW_FAMILIES = ("mlp", "forest")
EVALSET_MAX_SEEDS = settings.load().evalset_max_seeds
EVALSET_STORE_SIZE = settings.load().evalset_store_size
EVALSET_SETUP_STORE_SIZE = settings.load().evalset_setup_store_size


def evalsets_kind(key: str, data: Dataset) -> str:
    """How the page builds adversaries: ``"digits"`` (bundled setup), ``"pair"`` (text pair) or ``"table"``."""
    if key == "digits":
        return "digits"
    return "pair" if data.pair is not None else "table"


def evalsets_is_upload(key: str, *, session: SessionData = NO_SESSION) -> bool:
    """True when ``key`` is a table uploaded in this session (``session``; only those accept an evaluation file)."""
    return key in session.uploads


def evalsets_embeddings_available() -> bool:
    """True when the optional sentence-embedding packages (the ``embeddings`` extra) are installed."""
    return embeddings_status().available


def evalsets_key(spec: Any) -> str:
    """A short stable text key of a spec (for widget keys that must reset when the split changes)."""
    return hashlib.sha256(repr(spec).encode()).hexdigest()[:10]


def _evalsets_setup_store() -> _stores.Store:
    """Splits with their adversaries by EvalSetSpec (shared by the page's background run and the direct path)."""
    return _stores.store("evalsets_setup_store", EVALSET_SETUP_STORE_SIZE)


def stored_evalsets_setup(spec: EvalSetSpec):
    """The split of ``spec`` when it was built already (no computation), else None."""
    return _evalsets_setup_store().recall(spec)


def evalsets_setup_is_slow(spec: EvalSetSpec, *, session: SessionData = NO_SESSION) -> bool:
    """True when building ``spec`` embeds text with the sentence model (the page runs it in the background).

    Only a split of a text pair with the sentence-embedding adversaries asked for; every other split takes
    seconds and is built while the page waits.
    """
    if spec.source != "split" or not spec.embeddings:
        return False
    return evalsets_kind(spec.dataset, dataset(spec.dataset, session=session)) == "pair"


def _build_setup(spec: EvalSetSpec, data: Dataset, progress: Callable[[Any], bool | None] | None = None):
    """The AdversarySetup of a split of ``data`` (see :func:`evalsets_setup`)."""
    _evalsets_check_size(data)
    kind = evalsets_kind(spec.dataset, data)
    if kind == "digits":
        return digits_adversary_setup(random_state=int(spec.seed), eval_fraction=float(spec.eval_fraction), n_threads=1)
    try:
        return text_adversary_setup(
            data,
            eval_fraction=float(spec.eval_fraction),
            group_column="auto" if kind == "pair" else None,
            tfidf=kind == "pair",
            embeddings=bool(spec.embeddings) if kind == "pair" else False,
            annotator_column=spec.annotator_column,
            annotator_source_column=spec.annotator_source_column,
            random_state=int(spec.seed),
            n_threads=1,
            progress=progress,
        )
    except ImportError as exc:  # the optional sentence-embedding packages
        raise ValueError(str(exc)) from None


def evalsets_setup(spec: EvalSetSpec, *, session: SessionData = NO_SESSION):
    """The training / evaluation split of ``spec`` with its adversaries ordered weakest first (an AdversarySetup).

    Digits: :func:`aflite_core.evalsets.digits_adversary_setup`; a text pair: ``text_adversary_setup`` (TF-IDF
    views, premise kept on one side); any other dataset: a stratified split with the dataset's own representations
    as adversaries; an uploaded evaluation table: the dataset is the training set (:func:`evalsets_upload`).
    Built in this thread and kept in a bounded store; the page builds a slow split (sentence embeddings) with
    :func:`prepare_evalsets_setup` in the background instead.
    """
    hit = stored_evalsets_setup(spec)
    if hit is not None:
        return hit
    if spec.source == "upload":
        setup = _evalsets_upload_setup(spec, session=session)
    elif spec.source != "split":
        raise ValueError(f"Unknown evaluation source {spec.source!r}; choose 'split' or 'upload'.")
    else:
        setup = _build_setup(spec, dataset(spec.dataset, session=session))
    _evalsets_setup_store().keep(spec, setup)
    return setup


def prepare_evalsets_setup(spec: EvalSetSpec, *, session: SessionData = NO_SESSION) -> Callable[[Callable], Outcome]:
    """A background job building the split of ``spec`` with its sentence embeddings (checked now, in this thread).

    The returned ``target(reporter)`` (:class:`aflite_app.jobs.BackgroundRun`) reports
    :class:`aflite_core.data.embeddings.EmbeddingProgress` es through ``reporter.step`` (the sentence model's load, then
    every piece of about a hundred texts, so Stop is seen within a second or so of embedding; the load itself
    cannot be interrupted) and gives an :class:`Outcome`: the setup, kept in the store, or ``stopped``.
    """
    if spec.source != "split":
        raise ValueError("Only a split of the dataset builds sentence embeddings here.")
    data = dataset(spec.dataset, session=session)  # the session's dataset, resolved in the page's thread
    store = _evalsets_setup_store()

    def target(reporter: Callable) -> Outcome:
        hit = store.recall(spec)
        if hit is not None:
            return Outcome(hit)
        was_loaded = sentence_model_loaded()
        try:
            setup = _build_setup(spec, data, progress=reporter.step)
        except SetupStopped:
            return Outcome(stopped=True)
        finally:
            if not was_loaded and sentence_model_loaded():
                # torch and the model add ~400k long-lived objects; Streamlit's full collection after every
                # script run (and every 0.4 s progress poll) would scan them holding the GIL (see uploads.py)
                gc.collect()
                gc.freeze()
        store.keep(spec, setup)
        return Outcome(setup)

    return target


def describe_evalsets_setup(_progress: Any, elapsed: float, step: EmbeddingProgress | None = None) -> tuple[float, str]:
    """The progress of building a split with sentence embeddings: ``(fraction, text)`` without the time left."""
    if step is None:
        return 0.0, f"Splitting the data and building the TF-IDF views · {elapsed:.0f} s"
    if step.stage == "load_model":
        return 0.0, f"Loading the sentence model… (about 10 s the first time; it cannot be stopped) · {elapsed:.0f} s"
    if step.stage == "done":
        return 1.0, f"Embeddings ready; measuring each adversary's strength… · {elapsed:.0f} s"
    left = f" · about {step.eta_seconds:,.0f} s left" if step.eta_seconds else ""
    return step.fraction, f"Embedding '{step.view}': {step.done:,} of {step.total:,} texts · {elapsed:.0f} s{left}"


def evalsets_model_choices(setup) -> list[str]:
    """Every evaluated model the page offers: ``family:representation`` for each family and representation."""
    return [f"{fam}:{rep}" for rep in setup.train_X for fam in EVALSET_FAMILIES]


def evalsets_default_models(setup) -> list[str]:
    """The setup's evaluated models without the slow families (all of them when that leaves fewer than two)."""
    names = [f"{fam}:{rep}" for fam, rep in setup.evaluated]
    cheap = [n for n in names if n.split(":", 1)[0] not in EVALSET_SLOW_FAMILIES]
    return cheap if len(cheap) >= 2 else names


def evalsets_source_counts(setup) -> dict[str, int]:
    """Evaluation rows with annotator labels per label source (empty without a source column)."""
    if setup.annotator_labels is None or setup.annotator_source is None:
        return {}
    has = np.isfinite(annotator_agreement(setup.eval_y, setup.annotator_labels))
    out: dict[str, int] = {}
    for s in np.asarray(setup.annotator_source, dtype=object)[has]:
        key = "(missing)" if s is None or (isinstance(s, float) and np.isnan(s)) else str(s)
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _evalsets_store() -> _stores.Store:
    """Finished studies by EvalStudySpec."""
    return _stores.store("evalsets_store", EVALSET_STORE_SIZE)


def stored_evalsets_study(spec: EvalStudySpec):
    """A finished study for ``spec``, if any (no computation)."""
    return _evalsets_store().recall(spec)


def _evalsets_kwargs(setup, spec: EvalStudySpec) -> dict[str, Any]:
    if not spec.adversaries:
        raise ValueError("Choose at least one adversary.")
    if not spec.evaluated:
        raise ValueError("Choose at least one evaluated model.")
    unknown = [a for a in spec.adversaries if a not in setup.adversaries]
    if unknown:
        raise ValueError(f"Unknown adversaries {unknown}; this split offers {list(setup.adversaries)}.")
    if spec.ensemble and len(spec.adversaries) < 2:
        raise ValueError(
            "The ensemble pools at least two adversaries: choose two or more, or untick 'Also filter "
            "with the ensemble'."
        )
    if not 1 <= int(spec.n_seeds) <= EVALSET_MAX_SEEDS:
        raise ValueError(f"Seeds must be between 1 and {EVALSET_MAX_SEEDS}. Got {spec.n_seeds}.")
    chosen = [name.partition(":") for name in spec.evaluated]
    adversaries = tuple(a for a in setup.adversaries if a in spec.adversaries)  # weakest first
    # every chosen adversary's backbone is evaluated too: its strength and the paper's Figure 4 need it
    evaluated, backbones = setup.evaluated_with_backbones([(fam, rep) for fam, _, rep in chosen], adversaries)
    kw: dict[str, Any] = {
        "adversaries": adversaries,
        "evaluated": evaluated,
        "backbones": backbones,
        "seeds": spec.seeds,
        "tau": float(spec.tau),
        "target_size": int(spec.target_size),
        "train_size": int(spec.train_size),
        "slice_size": int(spec.slice_size),
        "n_partitions": int(spec.n_partitions),
        "model": spec.model,
        "ensemble": bool(spec.ensemble),
        "random_state": int(spec.setup.seed),
        "n_threads": 1,
    }
    if setup.annotator_labels is not None:
        kw["annotator_sources"] = None if spec.annotator_sources is None else tuple(spec.annotator_sources)
    return kw


def prepare_evalsets_study(spec: EvalStudySpec, *, session: SessionData = NO_SESSION) -> Callable[[Callable], Any]:
    """Everything a background thread needs to run ``spec`` (resolved and checked now, in the page's thread).

    The returned ``target(reporter)`` runs :meth:`AdversarySetup.run` (``adversary_study``) with ``reporter`` as
    its ``callback`` (a :class:`aflite_core.evalsets.StudyProgress` after every step) and ``reporter.step`` as its
    ``on_step`` (a :class:`aflite_core.evalsets.StudyStep` before each evaluated model's fit and inside every
    AFLite run, after each group of partition fits and block of predictions): ``False`` from either stops the
    study within one such piece of work, and the partial study (``params["complete"]`` False) is returned. A
    complete study is stored.
    """
    setup = evalsets_setup(spec.setup, session=session)
    kw = _evalsets_kwargs(setup, spec)
    store = _evalsets_store()

    def target(reporter: Callable) -> Any:
        study = setup.run(callback=reporter, on_step=getattr(reporter, "step", None), **kw)
        if study.params.get("complete"):
            store.keep(spec, study)
        return study

    return target


def describe_evalsets_study(progress: StudyProgress | None, step: StudyStep | None, n_models: int) -> tuple[float, str]:
    """Where a running study is: ``(fraction done, text)``.

    E.g. "Step 2 of 5: AFLite with pixels, seed 0 — round 3, predicting, 40 %"; the page adds the elapsed time
    and the estimate of the time left.
    """
    if step is None or (progress is not None and progress.step >= step.step):
        if progress is None:
            return 0.0, f"Step 1: training the {n_models} evaluated models"
        return progress.fraction_done, f"Step {progress.step} of {progress.n_steps} done"
    head = f"Step {step.step} of {step.n_steps}: "
    if step.stage == "evaluated models":
        if step.model is None:
            what = f"training the {step.n_models} evaluated models"
        else:
            what = f"training the evaluated models — {step.model} ({(step.model_index or 0) + 1} of {step.n_models})"
    else:
        who = f"the ensemble {step.adversary}" if step.stage == "ensemble" else str(step.adversary)
        what = f"AFLite with {who}, seed {step.seed}"
        if step.round is not None:
            phase = {"fit": ", fitting", "predict": ", predicting"}.get(step.phase or "", "")
            what += f" — round {step.round}{phase}, {round(100 * step.share)} %"
    return step.fraction_done, head + what


def run_evalsets_study(spec: EvalStudySpec, callback: Callable | None = None, *, session: SessionData = NO_SESSION):
    """Run (or fetch) the adversary study of ``spec`` in this thread."""
    hit = stored_evalsets_study(spec)
    if hit is not None:
        return hit
    return prepare_evalsets_study(spec, session=session)(callback or (lambda _p: True))


def evalsets_reading(study) -> tuple[list[str], dict[str, list[str]]]:
    """The study's plain-language reading: overview sentences, and per adversary the sentences for its heading.

    The per-adversary sentences do not repeat the adversary's name (the page shows it as the heading).
    """
    ran = set(study.runs["adversary"]) if len(study.runs) else set()  # a stopped study lacks the later ones
    per = {a: study_reading(study, a, named=False) for a in study.adversaries if a in ran}
    return study_overview(study), per


def evalsets_study_seconds(setup, spec: EvalStudySpec) -> float:
    """Roughly how long the AFLite runs of ``spec`` take here: one run per adversary and seed (the server's rates).

    Each chosen adversary is priced by :func:`aflite_core.engine.estimates.estimate_seconds` on its own number of
    features (the ensemble as one more run on the widest); the evaluated models' fits are not included.
    """
    from aflite_core.engine.estimates import estimate_seconds

    n_train = len(setup.train_y)
    n_classes = len(set(map(str, setup.train_y)))
    widths = [int(np.shape(setup.train_X[a])[1]) for a in spec.adversaries if a in setup.train_X]
    if spec.ensemble and widths:
        widths.append(max(widths))
    one = [
        estimate_seconds(
            "aflite",
            calibrated=False,
            n_rows=n_train,
            target_size=int(spec.target_size),
            slice_size=int(spec.slice_size),
            train_size=int(spec.train_size),
            n_partitions=int(spec.n_partitions),
            n_features=d,
            n_classes=n_classes,
        )
        for d in widths
    ]
    return float(sum(one) * max(int(spec.n_seeds), 1))


def evalsets_wait_hint(setup, spec: EvalStudySpec) -> str:
    """The pre-run hint of the study: how long these settings take on this data (not a fixed "a few seconds").

    E.g. "about 40 s for 4 adversaries × 1 seed on 1,050 training rows, plus training the evaluated models".
    """
    seconds = evalsets_study_seconds(setup, spec)
    n_adv = len(spec.adversaries) + (1 if spec.ensemble else 0)
    n_seeds = int(spec.n_seeds)
    when = (
        "a few seconds"
        if seconds < 5
        else f"about {seconds:.0f} s"
        if seconds < 90
        else f"about {seconds / 60:.0f} min"
    )
    return (
        f"{when} for {n_adv} adversar{'ies' if n_adv != 1 else 'y'} × {n_seeds} seed{'s' if n_seeds != 1 else ''} "
        f"on {len(setup.train_y):,} training rows, plus training the evaluated models"
    )
