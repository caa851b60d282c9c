"""Measures: what a run removed, and how predictable, stable or spuriously correlated a dataset is.

=======================  =====================================================================================
``removed_artifacts``    which tokens or feature directions a run removed (smoothed log-odds)
``artifact_statistics``  which single tokens give the label away (the competency-problems test, Gardner et al.)
``baselines``            held-out accuracies and the paper's equal-size baselines (random subset, one-shot filter)
``geometry``             where the kept and removed rows lie: kNN distances, cosine-similarity heatmaps
``stability``            what a run did to each class, and how stable its removals are across seeds
``spurious``             spurious-correlation measures of text pairs (Cosma et al. 2024)
``projection``           two-dimensional maps of Φ(X): PCA and UMAP
``adversary_strength``   how strong an adversary is, independently of its filtering (Phang et al., Table 1)
``_args``                the argument checks and seeding helpers these modules share
=======================  =====================================================================================

Nothing is imported here: import the module you need; the names the README uses are importable from
:mod:`aflite_core` itself.
"""
