"""One bounded parser for numbers from names, links and the command line (issue 24).

Before it: a link with ``n=inf``, ``k=-1e400``, ``seed=1e309`` or a 5,000-digit ``n`` raised an OverflowError on
every load ("This app has encountered an error"); ``dynamics_epoch_99999999999999999999.jsonl`` sized an
allocation that OOM-killed the process, and ``write_epoch(d, 10**20, ...)`` wrote such a file; ``write_epoch``
into a file raised a raw NotADirectoryError; ``--n-samples 99999999999999999999`` printed a traceback and
``--epochs``/``--partitions`` of that size reached numpy ("Maximum allowed dimension exceeded").
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aflite_app import links
from aflite_app.compute.datasets import bundled_dataset
from aflite_app.state import TAU, filter_key
from aflite_core._validation import MAX_NUMBER_CHARS, bounded_float, bounded_int
from aflite_core.cli import main
from aflite_core.dynamics import read_cartography_dynamics
from aflite_core.dynamics.cartography import MAX_EPOCH
from aflite_core.dynamics.recorder import write_epoch

HOSTILE = ["inf", "-inf", "nan", "1e309", "-1e400", "9" * 5000, "1" * 21, "", "  ", "abc", "0x10", "1e", "∞"]

# -- bounded_int / bounded_float ---------------------------------------------------------------------------------

number_texts = st.one_of(
    st.text(max_size=40),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(HOSTILE),
    st.integers(min_value=-(10**30), max_value=10**30),
)
ranges = st.tuples(st.integers(min_value=-(10**12), max_value=10**12), st.integers(min_value=0, max_value=10**12)).map(
    lambda t: (t[0], t[0] + t[1])
)


@given(text=number_texts, bounds=ranges, clamp=st.booleans())
def test_bounded_int_gives_an_int_in_the_range_or_one_value_error(text, bounds, clamp):
    low, high = bounds
    try:
        value = bounded_int(text, low, high, what="The link's n", clamp=clamp)
    except ValueError as exc:
        message = str(exc)
        assert message.startswith("The link's n must be a whole number from ") and message.endswith(" instead.")
        assert len(message) < 200  # never a 5,000-digit echo
        return
    assert type(value) is int and low <= value <= high


@given(text=number_texts)
def test_bounded_float_gives_a_finite_float_in_the_range_or_one_value_error(text):
    try:
        value = bounded_float(text, 0.0, 1.0)
    except ValueError as exc:
        assert str(exc).startswith("The value must be a number from 0 to 1") and len(str(exc)) < 200
        return
    assert 0.0 <= value <= 1.0


@pytest.mark.parametrize("text", HOSTILE)
def test_non_finite_non_numeric_or_long_numbers_are_refused_even_when_clamping(text):
    with pytest.raises(ValueError, match="must be a whole number from 0 to 99"):
        bounded_int(text, 0, 99, clamp=True)


def test_finite_values_are_clamped_or_refused():
    assert bounded_int("1e30", 1, 256, clamp=True) == 256
    assert bounded_int("-1e30", 1, 256, clamp=True) == 1
    assert bounded_int(" 7.9 ", 1, 256, clamp=True) == 7
    assert bounded_int("9" * MAX_NUMBER_CHARS, 0, 5, clamp=True) == 5
    with pytest.raises(ValueError, match="from 0 to 9,999"):
        bounded_int("99999999999999999999", 0, 9999)
    with pytest.raises(ValueError):
        bounded_int("7.9", 0, 99)  # a decimal is refused where a whole number is asked
    assert bounded_int(10**20, 0, 9999, clamp=True) == 9999


# -- links ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params, names",
    [
        ({"n": "inf"}, ["n"]),
        ({"k": "-1e400"}, ["k"]),
        ({"seed": "1e309"}, ["seed"]),
        ({"n": "9" * 5000}, ["n"]),
        ({"n": "inf", "k": "-1e400", "seed": "1e309", "tau": "nan"}, ["n", "k", "seed", "tau"]),
    ],
)
def test_a_link_with_an_unusable_number_is_ignored_with_one_sentence(params, names):
    session: dict = {}
    notice = links.apply_url(session, {"dataset": "digits", "m": "16", **params}, None, bundled_dataset)
    assert notice is not None and notice.count(". ") == 0 and notice.endswith("instead.")
    assert all(name in notice for name in names)
    assert "9999" not in notice  # the value is never quoted (nor rendered as Markdown)
    assert session[filter_key("m", "digits")] == 16  # the usable values still apply
    for name in names:
        widget = links.FILTER_PARAMS.get(name, name)
        assert filter_key(widget, "digits") not in session and TAU not in session


def test_finite_link_values_are_still_clamped_without_a_notice():
    session: dict = {}
    notice = links.apply_url(
        session, {"dataset": "digits", "n": "1e30", "k": "-5", "tau": "0.6"}, None, bundled_dataset
    )
    assert notice is None
    assert session[filter_key("target", "digits")] == bundled_dataset("digits").n_rows - 1
    assert session[filter_key("k", "digits")] == 1 and session[TAU] == 0.6


@pytest.mark.slow
@pytest.mark.parametrize(
    "query", [{"n": "inf", "k": "-1e400", "seed": "1e309"}, {"n": "9" * 5000}], ids=["inf", "5000-digits"]
)
def test_the_app_opens_a_link_with_unusable_numbers_and_says_so(app_test, query):
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params.update({"dataset": "digits", **query})
    at.run()
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    assert any(w.startswith("This link's ") and ("not a number" in w or "not numbers" in w) for w in warnings)
    assert not any("9" * 50 in w for w in warnings)
    link = {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}
    assert link.get("n") != query["n"]  # the address bar holds the usable view again


# -- training-dynamics file names ------------------------------------------------------------------------------------
def _epoch(folder, epoch):
    return write_epoch(folder, epoch, ["a", "b"], [[1.0, 0.0], [0.0, 1.0]], [0, 1])


def test_an_epoch_number_beyond_the_range_is_refused_by_the_reader_in_one_sentence(tmp_path):
    _epoch(tmp_path, 0)
    (tmp_path / "dynamics_epoch_99999999999999999999.jsonl").write_bytes(
        (tmp_path / "dynamics_epoch_0.jsonl").read_bytes()
    )
    with pytest.raises(ValueError, match=r"epoch number .* must be a whole number from 0 to 9,999") as info:
        read_cartography_dynamics(tmp_path)
    assert len(str(info.value).splitlines()) == 1


def test_a_230_digit_epoch_is_refused_without_echoing_it(tmp_path):
    _epoch(tmp_path, 0)
    long_name = f"dynamics_epoch_{'9' * 230}.jsonl"  # file names stop at 255 bytes
    (tmp_path / long_name).write_bytes(b"{}\n")
    with pytest.raises(ValueError, match="from 0 to 9,999") as info:
        read_cartography_dynamics(tmp_path)
    assert "9" * 40 not in str(info.value)


def test_the_last_allowed_epoch_alone_gives_a_short_missing_message(tmp_path):
    _epoch(tmp_path, MAX_EPOCH)
    with pytest.raises(ValueError, match=r"missing epoch\(s\) \[0, 1, 2, 3, 4, … \(9,999 in all\)\]") as info:
        read_cartography_dynamics(tmp_path)
    assert len(str(info.value)) < 400


def test_write_epoch_refuses_what_the_reader_refuses(tmp_path):
    for epoch in (10**20, MAX_EPOCH + 1, np.int64(2**62)):
        with pytest.raises(ValueError, match=r"The 'epoch' parameter of write_epoch must be an int in \[0, 9999\]"):
            _epoch(tmp_path, epoch)
    assert not list(tmp_path.iterdir())
    _epoch(tmp_path, MAX_EPOCH)  # the largest one is written, and read back as what it is
    assert (tmp_path / f"dynamics_epoch_{MAX_EPOCH}.jsonl").is_file()


@pytest.mark.parametrize("inside", [False, True], ids=["the-file", "below-the-file"])
def test_write_epoch_into_a_file_is_one_sentence(tmp_path, inside):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("x")
    target = blocker / "run" / "dyn" if inside else blocker
    with pytest.raises(ValueError, match="parameter of write_epoch must be a folder") as info:
        _epoch(target, 0)
    assert "is a file instead." in str(info.value) and len(str(info.value).splitlines()) == 1
    assert blocker.read_text() == "x"


def test_the_dynamics_command_refuses_a_huge_epoch_file_in_one_line(tmp_path, capsys):
    _epoch(tmp_path, 0)
    (tmp_path / "dynamics_epoch_99999999999999999999.jsonl").write_bytes(b"{}\n")
    code = main(["dynamics", "--dynamics-dir", str(tmp_path), "--out", str(tmp_path / "levels.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "from 0 to 9,999" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


# -- the command line ------------------------------------------------------------------------------------------------
HUGE = "99999999999999999999"
CLI_CASES = [
    (["synthetic", "--n-samples", HUGE], "--n-samples"),
    (["synthetic", "--partitions", HUGE], "--partitions"),
    (["synthetic", "--seed", "1e309"], "--seed"),
    (["synthetic", "--splits", HUGE], "--splits"),
    (["synthetic", "--target-size", "1e400"], "--target-size"),
    (["optimum", "--sample-seeds", HUGE], "--sample-seeds"),
    (["optimum", "--slice-size", HUGE], "--slice-size"),
    (["optimum", "--seed", "9" * 5000], "--seed"),
    (["ood", "--seeds", f"0,{HUGE}"], "--seeds"),
    (
        ["filter", "--features", "X.npy", "--labels", "y.txt", "--train-size", "50", "--partitions", HUGE],
        "--partitions",
    ),
    (["filter", "--features", "X.npy", "--labels", "y.txt", "--train-size", "50", "--seed", HUGE], "--seed"),
    (["filter", "--features", "X.npy", "--labels", "y.txt", "--train-size", "50", "--threads", HUGE], "--threads"),
    (["filter", "--features", "X.npy", "--labels", "y.txt", "--train-size", "inf"], "--train-size"),
    (
        [
            "filter",
            "--features",
            "X.npy",
            "--labels",
            "y.txt",
            "--train-size",
            "50",
            "--target-size",
            "100",
            "--dask-local",
            HUGE,
        ],
        "--dask-local",
    ),
    (
        ["predictability", "--features", "X.npy", "--labels", "y.txt", "--train-size", "50", "--partitions", "1e309"],
        "--partitions",
    ),
    (["eval-filter", "--digits", "--partitions", HUGE, "--out", "e"], "--partitions"),
    (["eval-filter", "--digits", "--threads", "9" * 5000, "--out", "e"], "--threads"),
    (["dynamics", "--features", "X.npy", "--labels", "y.txt", "--epochs", HUGE], "--epochs"),
    (["dynamics", "--features", "X.npy", "--labels", "y.txt", "--hidden-size", HUGE], "--hidden-size"),
    (["dynamics", "--features", "X.npy", "--labels", "y.txt", "--batch-size", HUGE], "--batch-size"),
    (["dynamics", "--features", "X.npy", "--labels", "y.txt", "--n-init", HUGE], "--n-init"),
    (["dynamics", "--features", "X.npy", "--labels", "y.txt", "--seed", "-1"], "--seed"),
    (["embed", "--table", "t.csv", "--text-column", "t", "--out", "X.npy", "--batch-size", HUGE], "--batch-size"),
    (["embed", "--table", "t.csv", "--text-column", "t", "--out", "X.npy", "--chunk-rows", HUGE], "--chunk-rows"),
    (["embed", "--table", "t.csv", "--text-column", "t", "--out", "X.npy", "--threads", "0"], "--threads"),
]


@pytest.mark.parametrize("argv, option", CLI_CASES, ids=[" ".join([c[0][0], c[1]]) for c in CLI_CASES])
def test_integer_options_that_size_work_are_bounded_in_one_line(tmp_path, capsys, monkeypatch, argv, option):
    monkeypatch.chdir(tmp_path)  # the feature files do not exist: the option must be refused before they are read
    code = main([*argv, *([] if "--out" in argv or argv[0] in ("synthetic", "optimum", "ood") else ["--out", "o"])])
    err = capsys.readouterr().err
    assert code == 2, err
    assert option in err and "Traceback" not in err and "Maximum allowed dimension" not in err
    assert len(err.strip().splitlines()) == 1 and len(err) < 300
