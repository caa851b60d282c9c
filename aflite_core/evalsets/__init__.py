"""AFLite on evaluation sets: how the choice of adversary changes what is selected and how models rank.

Phang et al. ("Adversarially Constructed Evaluation Sets Are More Challenging, but May Not Be Fair") filter an
*evaluation* set with AFLite (their appendix Algorithm 1, :func:`aflite_core.aflite` with ``eval_X``): the weak
models are fitted on training rows only, and every evaluation row they predict correctly often enough
(p ≥ τ) leaves in that round. This module runs that for several adversaries (representations Φ) and seeds and
measures what the paper measures:

==========================================  ==============================================================
paper                                       here
==========================================  ==============================================================
Figure 1: removed in round 1 / later /      :attr:`AdversaryStudy.categories`, :attr:`~AdversaryStudy.category_summary`
selected
Figures 2 and 7: accuracy of evaluated      :attr:`AdversaryStudy.accuracies`, :attr:`~AdversaryStudy.accuracy_matrix`
models, adversary × model, "none" column
Figure 3: model ranking per adversary       :attr:`AdversaryStudy.rankings`, :attr:`~AdversaryStudy.rank_correlation`
                                            (Kendall's coefficient against the unfiltered ranking)
Table 1: adversary strength (the fully      :attr:`AdversaryStudy.strength`,
trained model's accuracy)                   :mod:`aflite_core.measures.adversary_strength`
Figure 4: rank change of the model that     :attr:`AdversaryStudy.same_representation` ("shared backbone";
shares the adversary's pretrained model     "same representation" is an upper bound)
Figure 5 / §5.3: annotator agreement        :attr:`AdversaryStudy.agreement`, :func:`category_agreement`
§7: an ensemble of adversaries              :func:`ensemble_aflite` (``adversary_study(..., ensemble=True)``)
==========================================  ==============================================================

Evaluated models are trained once on the whole training set, independently of the adversaries, and scored on
the full evaluation set ("none") and on each adversary's selected rows. Kendall's coefficient is always
called that here: τ is AFLite's threshold.

Symbols: m → ``n_partitions``, t → ``train_size``, k → ``slice_size``, τ → ``tau``, n → ``target_size``.

References
----------
.. [1] J. Phang, A. Chen, W. Huang and S. R. Bowman, "Adversarially Constructed Evaluation Sets Are More
   Challenging, but May Not Be Fair", 2021 (§3, §5, Figures 1-5 and 7, appendix Algorithm 1, Table 3).
.. [2] R. Le Bras et al., "Adversarial Filters of Dataset Biases", ICML 2020.
"""

from .agreement import DEFAULT_ANNOTATOR_SOURCES, AgreementReport, annotator_agreement, category_agreement
from .ensemble import EnsembleResult, ensemble_aflite, ensemble_name
from .reading import study_overview, study_reading
from .setups import (
    DIGITS_STUDY_DEFAULTS,
    TEXT_STUDY_FRACTIONS,
    AdversarySetup,
    SetupStopped,
    digits_adversary_setup,
    text_adversary_setup,
)
from .study import AdversaryStudy, StudyProgress, StudyStep, adversary_study
from .tables import NONE

__all__ = [
    "DEFAULT_ANNOTATOR_SOURCES",
    "DIGITS_STUDY_DEFAULTS",
    "NONE",
    "TEXT_STUDY_FRACTIONS",
    "AdversarySetup",
    "AdversaryStudy",
    "AgreementReport",
    "EnsembleResult",
    "SetupStopped",
    "StudyProgress",
    "StudyStep",
    "adversary_study",
    "annotator_agreement",
    "category_agreement",
    "digits_adversary_setup",
    "ensemble_aflite",
    "ensemble_name",
    "study_overview",
    "study_reading",
    "text_adversary_setup",
]
