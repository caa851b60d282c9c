"""The old module paths the README documented still work for one release: they warn and re-export the new ones."""

from __future__ import annotations

import importlib
import sys

import pytest

import aflite_core

SHIMS = {
    "aflite_core.tables": "aflite_core.data.user_tables",
    "aflite_core.artifact_stats": "aflite_core.measures.artifact_statistics",
    "aflite_core.logistic": "aflite_core.engine.logistic",
    "aflite_core.tau_path": "aflite_core.engine.tau_path",
}


@pytest.mark.parametrize("old", sorted(SHIMS))
def test_an_old_path_warns_and_re_exports_the_new_module(old):
    new = importlib.import_module(SHIMS[old])
    sys.modules.pop(old, None)  # imported before (by the doctest collection or another test): import it afresh
    with pytest.warns(DeprecationWarning, match=rf"{old} is deprecated .* moved to {SHIMS[old]}") as record:
        shim = importlib.import_module(old)
    assert record[0].filename == __file__  # the warning names the importer, not the shim or importlib
    for name in new.__all__:
        assert getattr(shim, name) is getattr(new, name)
    private = next(n for n in vars(new) if n.startswith("_") and not n.startswith("__"))
    assert getattr(shim, private) is getattr(new, private)  # private names too, through the shim's __getattr__
    with pytest.raises(AttributeError, match="has no attribute"):
        shim.no_such_name  # noqa: B018


def test_the_readme_names_are_importable_from_the_package():
    from aflite_core import ID_COLUMN_NAMES, artifact_statistics, narrow_to_tau
    from aflite_core.data.user_tables import ID_COLUMN_NAMES as ids
    from aflite_core.measures.artifact_statistics import artifact_statistics as stats
    from aflite_core.tau_path import narrow_to_tau as narrow

    assert (ID_COLUMN_NAMES, artifact_statistics, narrow_to_tau) == (ids, stats, narrow)
    for name in aflite_core.__all__:
        assert getattr(aflite_core, name) is not None
    assert set(aflite_core.__all__) <= set(dir(aflite_core))
    with pytest.raises(AttributeError):
        aflite_core.no_such_name  # noqa: B018
