"""Data: where a dataset's rows, labels and representations Φ(X) come from, read safely.

==================  ==========================================================================================
``datasets``        :class:`Dataset` - rows, label codes, class names, ids and named float32 representations
``digits``          scikit-learn's bundled digits with the paper's representations
``user_tables``     the user's own table (CSV, TSV, Parquet, JSONL) as a dataset
``nli``             SNLI / MultiNLI from a local file or by name
``features``        TF-IDF + SVD representations of text columns, partial-input views
``embeddings``      sentence embeddings: the model's loading, shared once per process, and a disk cache
``readers``         safe readers of features, labels and ids (no pickle, size limits)
``text_tables``     the streamed, budgeted parsing of CSV, TSV and JSON Lines behind ``readers.read_table``
``preflight``       cheap checks of a file's rows and columns before an expensive read
``parquet_reads``   a Parquet file read within limits: footer first, then batch by batch under the budget
``budget``          the memory budget of every read: one parse's, and all parses in flight together
``planted_bias``    synthetic data with planted, known biases (the concentric circles of Figure 2)
``wordnet``         a tiny reader of the WordNet database files (for the spurious measures)
==================  ==========================================================================================

Nothing is imported here: import the module you need (``from aflite_core.data.digits import ...``); the names
the README uses are importable from :mod:`aflite_core` itself.
"""
