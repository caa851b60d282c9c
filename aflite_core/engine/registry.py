"""The one catalogue of model families: what every model name stands for, wherever it is used.

Two roles, each with its own names:

* **classifier families** (:data:`CLASSIFIERS`, :func:`make_classifier`) *measure*: held-out accuracies of
  the baselines and the synthetic experiment, and the evaluated models of an evaluation-set study;
* **adversary families** (:data:`ADVERSARIES`, :func:`resolve_model`: ``model=`` of :func:`aflite_core.aflite`)
  are the family M AFLite fits m times per round: ``"linear"`` is the fast batched logistic regression there
  (all m models fitted together), never a scikit-learn model; ``"ridge"`` the batched ridge classifier.

``"logistic"`` is scikit-learn's ``LogisticRegression(C=1)`` and ``"knn"`` the same k-nearest-neighbour
classifier in both roles. :func:`family_from_spec` rebuilds the family a run recorded, so a resumed run keeps
the family it started with whatever a name means today.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _validation as v

if TYPE_CHECKING:  # the families import nothing from here; resolving imports them lazily
    from .models import LinearFamily
    from .sklearn_family import SklearnFamily

__all__ = [
    "ADVERSARIES",
    "ADVERSARY_LABELS",
    "CLASSIFIERS",
    "CLASSIFIER_LABELS",
    "adversary_name",
    "family_from_spec",
    "make_classifier",
    "resolve_model",
]


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


#: adversary families, by the name ``aflite(model=...)`` takes, with exactly what each one is
ADVERSARIES: dict[str, str] = {
    "linear": "batched logistic regression: scikit-learn's LogisticRegression(C=1) objective, all m partition "
    "models fitted together (aflite_core.engine.logistic.LogisticFamily; ridge where it was measured to agree "
    "and logistic regression would be expensive) — the default",
    "ridge": "batched ridge least squares on one-hot labels (aflite_core.engine.models.LinearFamily; the default "
    "before)",
    "logistic": "scikit-learn LogisticRegression(C=1, max_iter=1000), one fit per partition",
    "knn": "scikit-learn KNeighborsClassifier(n_neighbors=15, distance-weighted), one fit per partition",
}

#: short names of the adversary families, for menus
ADVERSARY_LABELS: dict[str, str] = {
    "linear": "Linear (batched logistic regression, default)",
    "ridge": "Ridge (batched least squares, fastest)",
    "logistic": "Logistic regression (scikit-learn, one fit per model, slower)",
    "knn": "k-nearest neighbours (scikit-learn, k = 15)",
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


def resolve_model(model: Any, func: str = "aflite") -> LinearFamily | SklearnFamily:
    """Turn the ``model`` argument into a model family.

    Parameters
    ----------
    model : {"linear", "ridge", "logistic"} or LinearFamily or SklearnFamily or sklearn classifier
        ``"linear"`` (default): :class:`~aflite_core.engine.logistic.LogisticFamily`, scikit-learn's logistic
        regression fitted for all m partitions at once; ``"ridge"``: the closed-form ridge
        :class:`LinearFamily` (the default before); ``"logistic"``: scikit-learn's ``LogisticRegression``
        cloned per partition (slow); any unfitted scikit-learn classifier instance is cloned per partition.
    func : str
        Public function name for the error message.

    Returns
    -------
    LinearFamily or SklearnFamily
    """
    from .models import LinearFamily
    from .sklearn_family import SklearnFamily

    if isinstance(model, (LinearFamily, SklearnFamily)):
        return model
    if isinstance(model, str):
        if model == "linear":
            from .logistic import LogisticFamily

            return LogisticFamily()
        if model == "ridge":
            return LinearFamily()
        if model in ("logistic", "knn"):
            return SklearnFamily(make_classifier(model))
        raise ValueError(
            f"The 'model' parameter of {func} must be one of {list(ADVERSARIES)}, a LinearFamily or an "
            f"unfitted scikit-learn classifier. Got {v.shown(model)} instead."
        )
    if isinstance(model, type):
        raise TypeError(
            f"The 'model' parameter of {func} must be a model instance, not the class {model.__name__}: pass "
            f"{model.__name__}() (with any parameters) instead."
        )
    if hasattr(model, "fit") and hasattr(model, "predict") and hasattr(model, "get_params"):
        from sklearn.base import is_classifier

        if not is_classifier(model):
            raise TypeError(
                f"The 'model' parameter of {func} must be a classifier (scikit-learn's is_classifier). Got "
                f"{type(model).__name__}, {v.with_article(_estimator_kind(model))}, instead: its outputs are not "
                "class labels."
            )
        return SklearnFamily(model)
    raise TypeError(
        f"The 'model' parameter of {func} must be 'linear', 'logistic', a LinearFamily or an unfitted "
        f"scikit-learn classifier. Got {type(model).__name__} instead."
    )


def _estimator_kind(model: Any) -> str:
    kind = getattr(getattr(model, "__sklearn_tags__", lambda: None)(), "estimator_type", None)
    return {"regressor": "regressor", "clusterer": "clusterer", "transformer": "transformer"}.get(
        kind or "", "estimator that is not a classifier"
    )


def family_from_spec(spec: dict[str, Any]) -> LinearFamily | SklearnFamily:
    """Rebuild the family a result or checkpoint recorded (``result.params["model"]``, ``family.spec()``).

    A resumed run continues with the family it started with, whatever the default is now (an old run's
    ``LinearFamily`` spec gives that ridge family with its parameters). Raises ``ValueError`` otherwise.
    """
    import importlib

    from .logistic import LogisticFamily
    from .models import LinearFamily
    from .sklearn_family import SklearnFamily

    path, params = str(spec.get("class", "")), dict(spec.get("params") or {})
    ours = {"aflite_core.models.LinearFamily": LinearFamily, "aflite_core.logistic.LogisticFamily": LogisticFamily}
    try:
        if path in ours:
            return ours[path](**params)
        if spec.get("family") == "sklearn" and path.startswith("sklearn."):
            module, _, name = path.rpartition(".")
            return SklearnFamily(getattr(importlib.import_module(module), name)(**params))
    except (TypeError, ValueError, ImportError, AttributeError) as exc:
        raise ValueError(f"Cannot rebuild the recorded model family {path}: {exc}") from None
    raise ValueError(f"Cannot rebuild the recorded model family {spec!r}.")


def adversary_name(spec: dict[str, Any]) -> str | None:
    """The :data:`ADVERSARIES` name of a recorded family spec (``result.params["model"]``), None if it has none."""
    path = str(spec.get("class", "")) if isinstance(spec, dict) else ""
    return {
        "aflite_core.logistic.LogisticFamily": "linear",
        "aflite_core.models.LinearFamily": "ridge",
        "sklearn.linear_model._logistic.LogisticRegression": "logistic",
        "sklearn.neighbors._classification.KNeighborsClassifier": "knn",
    }.get(path)
