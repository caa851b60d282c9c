"""The one catalogue of model families: what every model name stands for, wherever it is used.

Two roles, each with its own names:

* **classifier families** (:data:`CLASSIFIERS`, :func:`make_classifier`) *measure*: held-out accuracies of
  the baselines and the synthetic experiment, and the evaluated models of an evaluation-set study;
* **adversary families** (``model=`` of :func:`aflite_core.aflite`, resolved by
  :func:`aflite_core.models.resolve_model`) are the family M AFLite fits m times per round: ``"linear"`` is
  the fast batched linear family there, never a scikit-learn model.

``"logistic"`` is scikit-learn's ``LogisticRegression(C=1)`` in both roles.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import _validation as v

__all__ = ["CLASSIFIERS", "CLASSIFIER_LABELS", "make_classifier"]


#: classifier families that measure (held-out accuracies, baselines, the synthetic experiment, the evaluated
#: models of an evaluation-set study), by name, with exactly what each one is
CLASSIFIERS: dict[str, str] = {
    "logistic": "LogisticRegression(C=1, lbfgs, max_iter=1000) on the features as given",
    "rbf": "SVC(kernel='rbf', C=1, gamma='scale') on the features as given",
    "knn": "KNeighborsClassifier(n_neighbors=min(15, n_train), distance-weighted) on the features as given",
    "mlp": "StandardScaler + MLPClassifier(hidden_layer_sizes=(64,), max_iter=200, alpha=1e-3), seeded",
    "forest": "RandomForestClassifier(n_estimators=200, n_jobs=1), seeded",
}


#: short names of the classifier families, for menus, legends and tables
CLASSIFIER_LABELS: dict[str, str] = {
    "logistic": "Logistic regression",
    "knn": "kNN (k = 15)",
    "rbf": "RBF SVM",
    "mlp": "MLP (64 units)",
    "forest": "Random forest (200 trees)",
}


# -- model families ------------------------------------------------------------------------------------------
def make_classifier(name: str, *, random_state: int = 0, n_train: int | None = None, standardize: bool = False) -> Any:
    """An unfitted scikit-learn classifier of one of the :data:`CLASSIFIERS`.

    Parameters
    ----------
    name : {"logistic", "rbf", "knn", "mlp", "forest"}
        The family (see :data:`CLASSIFIERS` for the exact settings).
    random_state : int, default=0
        Seed of the models that draw random numbers (MLP, forest).
    n_train : int, optional
        Training rows the model will see; caps kNN's ``n_neighbors``.
    standardize : bool, default=False
        Put a ``StandardScaler`` first (the MLP always has one).

    Returns
    -------
    sklearn estimator
        A classifier or a ``Pipeline`` ending in one.

    Examples
    --------
    >>> type(make_classifier("rbf")).__name__
    'SVC'
    >>> [step for step, _ in make_classifier("logistic", standardize=True).steps]
    ['standardscaler', 'logisticregression']
    """
    est = _family(name, random_state, n_train)
    if standardize and name not in ("mlp", "forest"):
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(StandardScaler(), est)
    return est


def _family(name: str, random_state: int, n_train: int | None) -> Any:
    if name == "forest":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=200, n_jobs=1, random_state=int(random_state))
    if name == "logistic":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=1.0, max_iter=1000)
    if name == "rbf":
        from sklearn.svm import SVC

        return SVC(kernel="rbf", C=1.0, gamma="scale")
    if name == "knn":
        from sklearn.neighbors import KNeighborsClassifier

        k = 15 if n_train is None else max(1, min(15, int(n_train)))
        return KNeighborsClassifier(n_neighbors=k, weights="distance")
    if name == "mlp":
        from sklearn.neural_network import MLPClassifier
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(
            StandardScaler(),
            MLPClassifier(hidden_layer_sizes=(64,), alpha=1e-3, max_iter=200, random_state=int(random_state)),
        )
    raise ValueError(
        f"The 'models' parameter must name families among {sorted(CLASSIFIERS)} or map names "
        f"to unfitted scikit-learn classifiers. Got {name!r} instead."
    )


def _resolve_models(models: Any, func: str) -> dict[str, Any]:
    """``{name: "family name" or estimator}`` from a name, a sequence of names or a mapping."""
    allowed = (
        f"a family name among {sorted(CLASSIFIERS)}, a sequence of them, or a mapping from names to unfitted "
        "scikit-learn classifiers"
    )
    if isinstance(models, str):
        models = (models,)
    if isinstance(models, Mapping):
        out = {}
        for key, est in models.items():
            if isinstance(est, str) and est in CLASSIFIERS:
                out[str(key)] = est
            elif hasattr(est, "fit") and hasattr(est, "predict") and hasattr(est, "get_params"):
                out[str(key)] = est
            else:
                raise v.param_error("models", func, allowed, est, TypeError)
    else:
        try:
            names = list(models)
        except TypeError:
            raise v.param_error("models", func, allowed, models, TypeError) from None
        out = {}
        for name in names:
            if not isinstance(name, str) or name not in CLASSIFIERS:
                raise v.param_error("models", func, allowed, name)
            out[name] = name
    if not out:
        raise v.param_error("models", func, allowed, models)
    return out


def _build(spec: Any, seed: int, n_train: int, standardize: bool = False) -> Any:
    if isinstance(spec, str):
        return make_classifier(spec, random_state=seed, n_train=n_train, standardize=standardize)
    from sklearn.base import clone

    est = clone(spec)
    if "random_state" in est.get_params(deep=False):
        est.set_params(random_state=seed)
    if standardize:
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(StandardScaler(), est)
    return est
