"""Experiments: the paper's studies reproduced end to end, each one call (and a composable plan for Figure 2).

====================  ========================================================================================
``figure2``           the synthetic experiment (ICML 2020 §3, Figure 2): AFLite on the concentric circles
``circle_accuracies`` its measurements: held-out accuracies before, after and over the rounds, the planted truth
``accuracy_notes``    what those accuracies mean, in words
``ood``               out-of-distribution generalisation after AFLite (§4.1 and §5)
``optimum``           AFOptimum: the exact optimum of the objective on tiny data, against AFLite's strategies
====================  ========================================================================================

Nothing is imported here: import the module you need.
"""
