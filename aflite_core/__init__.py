"""AFLite Studio's core library: adversarial filtering of dataset biases, fast and faithful.

The main entry points:

* :func:`aflite` - filter a dataset (Le Bras et al., ICML 2020, Algorithm 1), optionally with an evaluation
  set filtered alongside (the evaluation-set variant);
* :func:`predictability` - score every row once without removing anything (an audit);
* :func:`null_predictability` / :func:`chance_share` - the same scores under shuffled labels, and the share of
  the rows at p ≥ τ that chance alone would put there;
* :class:`AFLiteResult` - the full per-row, per-round record, with ``save`` / ``load``.

No plotting or UI code lives here; the Streamlit app, the CLI (``python -m aflite_core``) and the tests all use
this package. Its modules are grouped by job: the engine (the loop, partitions, model families, checkpoints and
run records; top level for now), :mod:`aflite_core.data`, :mod:`aflite_core.measures`,
:mod:`aflite_core.experiments`, :mod:`aflite_core.evalsets`, :mod:`aflite_core.dynamics` and :mod:`aflite_core.cli`.
Every name the README uses is importable from here; those outside the engine load on first use.
"""

__version__ = "0.1.0"

from .data.datasets import Dataset
from .data.digits import load_digits_dataset
from .data.user_tables import dataset_from_table, load_table_dataset
from .engine.filtering import STRATEGIES, aflite, predictability
from .engine.logistic import LogisticFamily
from .engine.models import LinearFamily
from .engine.null import chance_share, null_predictability
from .engine.result import EVAL_CATEGORIES, STOP_REASONS, AFLiteResult, RoundProgress
from .engine.sklearn_family import SklearnFamily

#: names importable from here that load their module on first use (``import aflite_core`` stays light)
_LAZY = {
    "ID_COLUMN_NAMES": "aflite_core.data.user_tables",
    "artifact_shares": "aflite_core.measures.artifact_statistics",
    "artifact_statistics": "aflite_core.measures.artifact_statistics",
    "chance_table": "aflite_core.engine.null",
    "explain_row": "aflite_core.measures.explain",
    "make_biased_circles": "aflite_core.data.planted_bias",
    "load_run_table": "aflite_core.engine.run_table",
    "make_planted_bias": "aflite_core.data.planted_bias",
    "narrow_to_tau": "aflite_core.engine.tau_path",
    "paper_circles": "aflite_core.data.planted_bias",
    "run_table_info": "aflite_core.engine.run_table",
    "significance_curve": "aflite_core.measures.artifact_statistics",
    "suggest_tau": "aflite_core.engine.null",
    "synthetic_experiment": "aflite_core.experiments.figure2",
}


def __getattr__(name: str):
    """Load a :data:`_LAZY` name's module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'aflite_core' has no attribute {name!r}")
    import importlib

    value = globals()[name] = getattr(importlib.import_module(module), name)
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "EVAL_CATEGORIES",
    "ID_COLUMN_NAMES",
    "STOP_REASONS",
    "STRATEGIES",
    "AFLiteResult",
    "Dataset",
    "LinearFamily",
    "LogisticFamily",
    "RoundProgress",
    "SklearnFamily",
    "__version__",
    "aflite",
    "artifact_shares",
    "artifact_statistics",
    "chance_share",
    "chance_table",
    "dataset_from_table",
    "explain_row",
    "load_digits_dataset",
    "load_run_table",
    "load_table_dataset",
    "make_biased_circles",
    "make_planted_bias",
    "narrow_to_tau",
    "null_predictability",
    "paper_circles",
    "predictability",
    "run_table_info",
    "significance_curve",
    "suggest_tau",
    "synthetic_experiment",
]
