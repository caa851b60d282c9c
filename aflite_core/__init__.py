"""AFLite Studio's core library: adversarial filtering of dataset biases, fast and faithful.

The main entry points:

* :func:`aflite` - filter a dataset (Le Bras et al., ICML 2020, Algorithm 1), optionally with an evaluation
  set filtered alongside (the evaluation-set variant);
* :func:`predictability` - score every row once without removing anything (an audit);
* :class:`AFLiteResult` - the full per-row, per-round record, with ``save`` / ``load``.

No plotting or UI code lives here; the Streamlit app, the CLI (``python -m aflite_core``) and the tests all use
this package.
"""

__version__ = "0.1.0"

from .datasets import Dataset
from .digits import load_digits_dataset
from .filtering import STRATEGIES, aflite, predictability
from .logistic import LogisticFamily
from .models import LinearFamily, SklearnFamily
from .result import EVAL_CATEGORIES, STOP_REASONS, AFLiteResult, RoundProgress
from .tables import dataset_from_table, load_table_dataset

__all__ = [
    "EVAL_CATEGORIES",
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
    "dataset_from_table",
    "load_digits_dataset",
    "load_table_dataset",
    "predictability",
]
