"""The evaluated models of a study: named (family, representation) pairs, fitted once on all training rows."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import _validation as v
from .._utils import blas_threads
from ..engine.registry import CLASSIFIERS, make_classifier

__all__: list[str] = []


def _model_name(family: Any, representation: str) -> str:
    label = family if isinstance(family, str) else type(family).__name__
    return f"{label}:{representation}"


def _check_evaluated(evaluated: Any, representations: Sequence[str], func: str) -> list[tuple[Any, str, str]]:
    """(family or estimator, representation, name) per evaluated model.

    Items are ``(family, representation)`` pairs (named ``"family:representation"``), ``"family:representation"``
    strings, or ``(name, family or estimator, representation)`` triples with a name of their own (e.g. an
    adversary's backbone, ``("backbone:mlp", MLPClassifier(...), "pixels")``).
    """
    allowed = (
        f"a sequence of (family, representation) pairs or (name, family, representation) triples with a family "
        f"among {sorted(CLASSIFIERS)} (or an unfitted scikit-learn classifier) and a representation among "
        f"{list(representations)}"
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
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            raise v.param_error("evaluated", func, allowed, item)
        given = None
        if len(item) == 3:
            given, fam, rep = item
            if not isinstance(given, str) or not given:
                raise v.param_error("evaluated", func, allowed, tuple(item))
        else:
            fam, rep = item
        is_est = hasattr(fam, "fit") and hasattr(fam, "predict") and hasattr(fam, "get_params")
        if not (is_est or (isinstance(fam, str) and fam in CLASSIFIERS)) or rep not in representations:
            raise v.param_error("evaluated", func, allowed, tuple(item))
        name = given or _model_name(fam, rep)
        if name in seen:
            raise ValueError(f"The 'evaluated' parameter of {func} names the model {name!r} twice.")
        seen.add(name)
        out.append((fam, str(rep), name))
    return out


def _fit_evaluated(
    models: list[tuple[Any, str, str]],
    train_X: Mapping[str, NDArray],
    codes: NDArray,
    eval_X: Mapping[str, NDArray],
    eval_codes: NDArray,
    rng: np.random.Generator,
    n_threads: int | None,
    before_fit: Callable[[int, str], bool | None] | None = None,
) -> tuple[NDArray[np.bool_], list[float], list[int]]:
    """Fit each evaluated model once on all training rows; return correct[eval_row, model] and fit seconds.

    Every model gets its own seed drawn from ``rng``, except an estimator given with an explicit integer
    ``random_state``, which keeps it (an adversary's backbone is then the very fit its strength was measured on).
    ``before_fit(j, name)`` is called before model j is fitted (and with ``j == len(models)`` after the last);
    ``False`` stops: the models fitted so far are returned (``seconds`` is then shorter than ``models``).
    """
    from sklearn.base import clone
    from sklearn.exceptions import ConvergenceWarning

    correct = np.zeros((len(eval_codes), len(models)), dtype=bool)
    seconds: list[float] = []
    seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=len(models))]
    with blas_threads(n_threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for j, (fam, rep, name) in enumerate(models):
            if before_fit is not None and before_fit(j, name) is False:
                break
            t0 = time.perf_counter()
            X = train_X[rep]
            if isinstance(fam, str):
                est = make_classifier(fam, random_state=seeds[j], n_train=len(X))
            else:
                est = clone(fam)
                params = est.get_params(deep=False)
                if "random_state" in params and not v._is_int(params["random_state"]):
                    est.set_params(random_state=seeds[j])
            est.fit(X, codes)
            correct[:, j] = np.asarray(est.predict(eval_X[rep])) == eval_codes
            seconds.append(time.perf_counter() - t0)
        else:
            if before_fit is not None:
                before_fit(len(models), "")
    return correct, seconds, seeds
