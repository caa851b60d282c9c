"""Every bad input gets one clear message naming the parameter, the allowed range and the value given."""

from __future__ import annotations

import numpy as np
import pytest

from aflite_core import aflite, predictability

rng = np.random.default_rng(0)
X = rng.normal(size=(100, 4)).astype(np.float32)
y = np.r_[np.zeros(50, int), np.ones(50, int)]
OK = dict(target_size=50, train_size=20, slice_size=10)


def _with_nan():
    bad = X.copy()
    bad[7, 2] = np.nan
    return bad


def _with_inf():
    bad = X.copy()
    bad[3, 0] = np.inf
    return bad


CASES = [
    ("nan", dict(X=_with_nan()), ValueError, r"'X' parameter of aflite must contain only finite values.*row 7"),
    ("inf", dict(X=_with_inf()), ValueError, r"finite values.*row 3"),
    ("1-D X", dict(X=X[:, 0]), ValueError, r"'X' parameter of aflite must be a 2-D array.*1 dimension"),
    ("3-D X", dict(X=X.reshape(100, 2, 2)), ValueError, r"2-D array.*3 dimension"),
    ("string X", dict(X=np.array([["a"] * 4] * 100)), TypeError, r"'X' parameter of aflite must be a 2-D numeric"),
    (
        "length mismatch",
        dict(y=y[:90]),
        ValueError,
        r"'y' parameter of aflite must have one label per row of X \(100\)"
        r"\. Got 90",
    ),
    ("one class", dict(y=np.zeros(100, int)), ValueError, r"at least 2 classes\. Got 1 class"),
    ("tiny class", dict(y=np.r_[np.zeros(99, int), 1]), ValueError, r"at least 2 rows in every class.*class 1"),
    ("missing label", dict(y=np.r_[np.zeros(99), np.nan]), ValueError, r"missing labels\. Row 99"),
    ("2-D y", dict(y=np.zeros((100, 2))), ValueError, r"'y' parameter of aflite must be 1-D"),
    (
        "train >= target",
        dict(train_size=50),
        ValueError,
        r"'train_size' parameter of aflite must be an int in \(n_classes, target_size\).*\(2, 50\).*Got 50",
    ),
    ("train <= classes", dict(train_size=2), ValueError, r"'train_size'.*Got 2 instead"),
    ("train fraction too big", dict(train_size=0.9), ValueError, r"'train_size'.*Got 0.9, which is 90 rows of 100"),
    ("train bad type", dict(train_size="20"), TypeError, r"'train_size'.*Got '20' instead"),
    (
        "target >= N",
        dict(target_size=100),
        ValueError,
        r"'target_size' parameter of aflite must be an int in \(n_classes, n_samples\).*\(2, 100\).*Got 100",
    ),
    ("target fraction 1.5", dict(target_size=1.5), ValueError, r"'target_size'.*a float in \(0, 1\).*Got 1.5"),
    (
        "slice < 1",
        dict(slice_size=0),
        ValueError,
        r"'slice_size' parameter of aflite must be an int in \[1, inf\)\. Got 0",
    ),
    ("slice float", dict(slice_size=2.5), TypeError, r"'slice_size'.*an int in \[1, inf\)\. Got 2.5"),
    ("slice missing", dict(slice_size=None), ValueError, r"'slice_size'.*strategy='slice'"),
    ("tau > 1", dict(tau=1.5), ValueError, r"'tau' parameter of aflite must be a float in \[0, 1\]\. Got 1.5"),
    ("tau < 0", dict(tau=-0.1), ValueError, r"'tau'.*\[0, 1\]\. Got -0.1"),
    ("tau nan", dict(tau=float("nan")), ValueError, r"'tau'.*\[0, 1\]"),
    (
        "partitions 0",
        dict(n_partitions=0),
        ValueError,
        r"'n_partitions' parameter of aflite must be an int in \[1, "
        r"inf\)\. Got 0",
    ),
    ("strategy", dict(strategy="random"), ValueError, r"'strategy' parameter of aflite must be a str among"),
    (
        "model",
        dict(model="svm"),
        ValueError,
        r"'model' parameter of aflite must be one of \['linear', 'ridge', 'logistic', 'knn'\]",
    ),
    ("model type", dict(model=3), TypeError, r"'model' parameter of aflite"),
    (
        "eval width",
        dict(eval_X=X[:10, :3], eval_y=y[:10]),
        ValueError,
        r"'eval_X' parameter of aflite must have 4 columns.*Got 3",
    ),
    ("eval alone", dict(eval_X=X[:10]), ValueError, r"'eval_X' and 'eval_y' parameters of aflite must be given"),
    ("eval labels length", dict(eval_X=X[:10], eval_y=y[:9]), ValueError, r"'eval_y'.*one label per row of eval_X"),
    ("ids length", dict(ids=np.arange(5)), ValueError, r"'ids' parameter of aflite must have one id per row \(100\)"),
    ("seed", dict(random_state="abc"), TypeError, r"'random_state' parameter of aflite"),
    ("negative seed", dict(random_state=-1), ValueError, r"'random_state'"),
    ("callback", dict(callback=5), TypeError, r"'callback' parameter of aflite must be a callable"),
    ("empty X", dict(X=np.zeros((0, 4)), y=[]), ValueError, r"at least one row and one column"),
]


@pytest.mark.parametrize("name,override,exc,pattern", CASES, ids=[c[0] for c in CASES])
def test_bad_input_message(name, override, exc, pattern):
    kwargs = {"X": X, "y": y, **OK, **override}
    with pytest.raises(exc, match=pattern):
        aflite(kwargs.pop("X"), kwargs.pop("y"), **kwargs)


def test_messages_are_one_sentence_pair_in_sklearn_wording():
    with pytest.raises(ValueError) as info:
        aflite(X, y, target_size=50, train_size=20, slice_size=10, tau=2)
    msg = str(info.value)
    assert msg == "The 'tau' parameter of aflite must be a float in [0, 1]. Got 2 instead."


def test_labels_of_any_hashable_type():
    labels = [("a", 1) if v else ("b", 2) for v in y]
    res = aflite(X, labels, **OK, random_state=0)
    assert set(res.classes) == {("a", 1), ("b", 2)}
    mixed = [1 if v else "one" for v in y]  # unsortable mix: order of first appearance
    res = aflite(X, mixed, **OK, random_state=0)
    assert set(res.classes) == {1, "one"}


def test_predictability_validates_too():
    with pytest.raises(ValueError, match="'train_size' parameter of predictability"):
        predictability(X, y, train_size=100)
    with pytest.raises(ValueError, match="'X' parameter of predictability must contain only finite"):
        predictability(_with_nan(), y, train_size=20)


def test_finite_check_finds_the_first_bad_row_in_any_chunk_and_accepts_sums_that_overflow(monkeypatch):
    """The finite check clears a chunk by its sum: a NaN or infinity in a later chunk, or +inf and -inf that
    cancel to NaN, is still found by row; huge finite values whose sum overflows are accepted."""
    from aflite_core import _validation as v

    monkeypatch.setattr(v, "_FINITE_CHUNK_ROWS", 16)
    base = rng.normal(size=(100, 4)).astype(np.float32)
    for row, values in ((0, (np.nan,)), (37, (np.inf,)), (99, (-np.inf,)), (50, (np.inf, -np.inf))):
        bad = base.copy()
        bad[row, : len(values)] = values
        with pytest.raises(ValueError, match=rf"finite values\..*\(first in row {row}\)"):
            v.check_features(bad, "X", "aflite")
        with pytest.raises(ValueError, match=rf"first in row {row}"):  # column-major input too
            v.check_features(np.asfortranarray(bad), "X", "aflite")
    huge = np.full((100, 4), 3e38, dtype=np.float32)  # every value finite, every chunk's sum infinite
    huge[::2] *= -1
    huge[:, 0] = 3e38
    assert not np.isfinite(huge[:16].sum())
    assert np.array_equal(v.check_features(huge, "X", "aflite"), huge)
