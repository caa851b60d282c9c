"""The app's compute layer: one module per page, its results memoised in the byte-bounded stores of :mod:`._stores`.

A page calls its module with small frozen specs (:mod:`aflite_app.specs`) and draws what comes back with its
chart module; it never computes itself. The modules a page does not own are shared: ``datasets`` (the
sidebar's datasets), ``runs`` (the Filter page's AFLite runs, which most pages show) and ``_stores`` (the
bounded result stores and the one row guard). Nothing here imports the session module or a chart; the session's
own datasets and opened runs come in as an argument, ``session=`` (a :class:`aflite_app.specs.SessionData` the page
passes; see :mod:`.datasets`).

======================  ===========================  ==================================================
module                  page                         holds
======================  ===========================  ==================================================
``datasets``            Data (bundled), every page   bundled and session datasets, class names, partial inputs
``uploads``             Data (upload)                uploaded table -> Dataset, column guesses
``upload_sentences``    Data (upload)                sentence embeddings of an upload's text columns
``rundirs``             Data (run directory)         CLI run directories opened below the run root
``runs``                Filter, Predictability       AFLite runs, the result store, class impact
``synthetic``           Synthetic circles            the Figure 2 datasets, runs and accuracies
``embedding``           Embedding map                PCA/UMAP map, selection, Figure 1, Table 3
``inspect``             Inspect                      rows table, artifacts, stability, downloads
``baselines``           Baselines                    equal-size random and one-shot comparisons
``evalsets``            Evaluation sets              adversary studies on an evaluation set
``dynamics``            Training dynamics            recorded or uploaded dynamics, difficulty levels
======================  ===========================  ==================================================
"""
