"""The engine: AFLite's loop and everything a run is made of (see docs/ARCHITECTURE.md for the whole map).

=================== ==============================================================================================
module              holds
=================== ==============================================================================================
``filtering``       the public entry points :func:`aflite` and :func:`predictability`: argument checks, the run plan
``loop``            the loop of Algorithm 1 as a resumable :class:`Run` over a backend
``local_backend``   the :class:`Backend` protocol and :class:`LocalBackend` (a round's work in this process)
``partitions``      the m random partitions of a round and the scoring unit every backend runs
``models``          the batched ridge family (:class:`LinearFamily`) and scikit-learn families
``shards``          the ridge family's block Gram matrices, cut into shards and summed along a fixed tree
``logistic``        the default family, batched L-BFGS logistic regression (:class:`LogisticFamily`)
``_inputs``         the argument checks :func:`predictability` and the null share
``_parallel``       the engine's thread pool with single-threaded BLAS (same bits at any thread count)
``_blas``           SciPy's BLAS routines called without the GIL (the removals' fused downdates)
``torch_backend``   the default family on a PyTorch device (a GPU, or torch's CPU device for CI)
``torch_devices``   the checks of ``device`` and ``precision``, and the precision context a torch run computes in
``torch_logistic``  the L-BFGS fit of ``logistic`` ported to PyTorch
``distributed``     the Dask backend (whole shards per worker; bit-identical to the local backend)
``checkpoint``      per-round checkpoints and their checks
``run_record``      saving a finished run (its files, manifest and checksums; crash-consistent writes)
``run_loading``     loading a saved run, every file checked against the manifest before a table is read
``run_table``       the table a run's rows came from, recorded with it (``table.parquet``): matched, read back
``run_constants``   history columns, strategies, stop reasons, the table's file name (shared by the modules above)
``result``          :class:`AFLiteResult`, the per-row, per-round record of a run
``registry``        every model name: adversary families and measuring classifiers
``tau_path``        a higher τ read off a finished run (:func:`narrow_to_tau`), exactly
``null``            predictability under shuffled labels (:func:`null_predictability`, :func:`chance_share`)
=================== ==============================================================================================

No re-exports here: the public names are exported by :mod:`aflite_core` itself.
"""
