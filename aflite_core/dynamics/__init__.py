"""Difficulty levels from training dynamics (Cosma et al., EMNLP 2024; after Swayamdipta et al., 2020).

A model is trained for a few epochs *on the set being characterised* and, for every example and epoch, its
class logits are recorded. Four measures summarise each example's trajectory, for the full input (e.g.
premise + hypothesis) and for a partial input (e.g. the hypothesis alone): eight features. A 3-component
Gaussian mixture over the standardised features gives three clusters, ranked by their mean full-input
confidence into the difficulty levels ``"easy"`` (highest), ``"ambiguous"`` and ``"hard"`` (lowest).

Where the dynamics come from:

* :func:`train_dynamics` / :func:`record_dynamics` train a small softmax model (or a one-hidden-layer MLP) with
  Adam on a feature matrix, in numpy, deterministic given ``random_state``;
* :func:`read_cartography_dynamics` reads the JSONL files written by allenai/cartography (one
  ``dynamics_epoch_<e>.jsonl`` per epoch) or by any trainer that writes the same format;
* :func:`write_epoch`, :func:`add_cartography_callback` (Hugging Face ``Trainer``) and
  :func:`write_torch_epoch` (a plain PyTorch loop) write that format from your own training runs.

The four measures (paper symbols → our names), for example *i* with gold class y_i over E epochs, p⁽ᵉ⁾ the
softmax probabilities and z⁽ᵉ⁾ the logits at epoch e:

* confidence μ̂_i = (1/E) Σ_e p⁽ᵉ⁾(y_i | x_i) → ``confidence``, in [0, 1], higher = easier;
* variability σ̂_i = sqrt((1/E) Σ_e (p⁽ᵉ⁾(y_i | x_i) − μ̂_i)²) → ``variability``, the *population* standard
  deviation (divide by E, not E − 1), as in Swayamdipta et al.'s Eq. 2 and the authors' code (``np.std``);
* correctness c_i = (1/E) Σ_e 1[argmax_y p⁽ᵉ⁾(y | x_i) = y_i] → ``correctness``, in [0, 1]; an epoch where
  another class ties with the gold class for the largest logit counts as incorrect;
* AUM_i = (1/E) Σ_e (z⁽ᵉ⁾_{y_i} − max_{y ≠ y_i} z⁽ᵉ⁾_y) → ``aum`` (Pleiss et al., 2020), in logit units,
  positive when the gold class usually wins.

The partial-input versions carry the prefix ``partial_`` (``partial_confidence`` …).

:mod:`aflite_core.dynamics.validation` checks the levels the way the paper does: the accuracy per level of models
trained on other rows (:mod:`~aflite_core.dynamics.heldout`), and models trained on a fraction of the rows chosen by
level against Data Maps' and AUM's selections and a random subset (its Tables 5 and 6,
:mod:`~aflite_core.dynamics.fractions`).

Who defined what: the GMM levels are Cosma et al.'s; the Data Maps ambiguous region (most variable rows) is
Swayamdipta et al.'s, and splitting the rest at the median confidence into easy / hard
(:func:`data_maps_levels`) is this project's choice; AUM is Pleiss et al.'s, its percentile bands
(:func:`aum_levels`) follow Cosma et al.'s baseline.

References
----------
A. Cosma, S. Ruseti, M. Dascalu and C. Caragea. How Hard is this Test Set? NLI Characterization by Exploiting
Training Dynamics. EMNLP 2024.

S. Swayamdipta, R. Schwartz, N. Lourie, Y. Wang, H. Hajishirzi, N. A. Smith and Y. Choi. Dataset Cartography:
Mapping and Diagnosing Datasets with Training Dynamics. EMNLP 2020.

G. Pleiss, T. Zhang, E. Elenberg and K. Q. Weinberger. Identifying Mislabeled Data using the Area Under the
Margin Ranking. NeurIPS 2020.
"""

from .cartography import read_cartography_dynamics
from .levels import LEVELS, DifficultyLevels, aum_levels, data_maps_levels, difficulty_levels
from .measures import MEASURES, PARTIAL_PREFIX, DynamicsRecord, TrainingDynamics, training_measures
from .recorder import add_cartography_callback, write_epoch, write_torch_epoch
from .trainer import RECORD_MODES, TrainingInterrupted, TrainingStep, record_dynamics, train_dynamics

__all__ = [
    "LEVELS",
    "MEASURES",
    "PARTIAL_PREFIX",
    "RECORD_MODES",
    "DifficultyLevels",
    "DynamicsRecord",
    "TrainingDynamics",
    "TrainingInterrupted",
    "TrainingStep",
    "add_cartography_callback",
    "aum_levels",
    "data_maps_levels",
    "difficulty_levels",
    "read_cartography_dynamics",
    "record_dynamics",
    "train_dynamics",
    "training_measures",
    "write_epoch",
    "write_torch_epoch",
]
