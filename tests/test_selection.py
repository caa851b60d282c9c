"""Selection handling of the Embedding map (pure functions, no Streamlit)."""

from __future__ import annotations

import base64
import struct
import zlib

import numpy as np
import pandas as pd
import pytest

from aflite_app.images import png_bytes, png_data_uri
from aflite_app.map_table import selection_table, thumbnail, thumbnails
from aflite_app.selection import (
    MapSelection,
    after_event,
    cleared,
    for_figure,
    selected_rows,
)
from aflite_core import aflite
from aflite_core.data.datasets import Dataset


def _event(points, **extra):
    return {
        "selection": {
            "points": points,
            "point_indices": [p.get("point_index", 0) for p in points],
            "box": [],
            "lasso": [],
            **extra,
        }
    }


def test_rows_come_from_customdata_of_every_trace_not_point_indices():
    points = [
        {"curve_number": 0, "point_number": 0, "point_index": 0, "x": 1.0, "y": 2.0, "customdata": [12]},
        {"curve_number": 1, "point_number": 0, "point_index": 0, "x": 0.5, "y": 0.1, "customdata": [3]},
        {"curve_number": 1, "point_number": 4, "point_index": 4, "x": 0.2, "y": 0.3, "customdata": [40]},
    ]
    assert selected_rows(_event(points, lasso=[{"x": [0, 1], "y": [0, 1]}])) == [3, 12, 40]


@pytest.mark.parametrize(
    "customdata, row",
    [
        (7, 7),
        (7.0, 7),
        ([7], 7),
        ((7, "x"), 7),
        ({"0": 7}, 7),
        ({0: 7}, 7),
        ([[7]], 7),
        (np.array([7]), 7),
        (np.int16(7), 7),
        ("7", 7),
    ],
)
def test_customdata_shapes_the_browser_sends(customdata, row):
    # a row of a 2-D typed array arrives as {"0": 7}: JSON of a JavaScript typed array
    assert selected_rows(_event([{"customdata": customdata}])) == [row]


@pytest.mark.parametrize(
    "event",
    [
        None,
        {},
        {"selection": None},
        {"selection": {}},
        {"selection": {"points": []}},
        {"selection": {"points": None, "point_indices": [1, 2]}},
        {"selection": {"point_indices": [0, 1]}},
        {"selection": {"box": [{"x": [0, 1]}]}},
        {"selection": {"points": {"not": "a list"}}},
    ],
)
def test_empty_or_missing_keys_give_no_rows(event):
    assert selected_rows(event) == []


@pytest.mark.parametrize("customdata", [None, [], {}, "abc", float("nan"), -1, 2.5, True])
def test_points_without_a_usable_row_are_skipped(customdata):
    assert selected_rows(_event([{"customdata": customdata}, {"customdata": [5]}])) == [5]


def test_duplicates_are_merged_and_rows_out_of_range_dropped():
    points = [{"customdata": [2]}, {"customdata": [2]}, {"customdata": [9]}, {"customdata": [1]}]
    assert selected_rows(_event(points)) == [1, 2, 9]
    assert selected_rows(_event(points), n_rows=5) == [1, 2]


def test_selection_part_alone_and_attribute_objects_are_accepted():
    class Obj:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    assert selected_rows({"points": [{"customdata": [4]}]}) == [4]
    assert selected_rows(Obj(selection=Obj(points=[{"customdata": [6]}]))) == [6]


def test_a_selection_survives_a_new_figure_and_is_drawn_in_it():
    state = for_figure(None, ("run", "status", "PCA"))
    assert state == MapSelection(("run", "status", "PCA"))
    state = after_event(state, _event([{"customdata": [3]}, {"customdata": [8]}]))
    assert state.rows == (3, 8) and state.baked == () and state.touched
    assert for_figure(state, ("run", "status", "PCA")) is state  # same figure: nothing changes
    moved = for_figure(state, ("run", "class", "PCA"))  # new colouring: rows carried, drawn as selected
    assert moved.rows == moved.baked == (3, 8) and not moved.touched
    lasso = after_event(moved, _event([{"customdata": [1]}]))  # a new lasso replaces the rows ...
    assert lasso.rows == (1,) and lasso.baked == (3, 8)  # ... but the figure (and its identity) stays
    cleared_by_double_click = after_event(lasso, {"selection": {"points": []}})
    assert cleared_by_double_click.rows == () and not cleared_by_double_click.touched
    assert for_figure(cleared_by_double_click, ("run", "class", "UMAP")).baked == ()


def test_a_stale_empty_event_does_not_drop_a_carried_selection():
    # the chart sends "nothing selected" only if it held a selection itself; a carried selection is not its own
    carried = for_figure(after_event(None, _event([{"customdata": 5}])), "new figure")
    assert after_event(carried, {"selection": {"points": []}}) == carried
    assert after_event(carried, None) == carried
    assert after_event(None, _event([{"customdata": 2}]), n_rows=2).rows == ()


def test_clearing_drops_rows_and_bumps_the_figure_revision():
    state = for_figure(after_event(None, _event([{"customdata": 5}])), "fig")
    empty = cleared(state)
    assert empty.rows == empty.baked == () and empty.revision == state.revision + 1
    assert empty.signature == "fig" and for_figure(empty, "fig") is empty
    assert cleared(None).revision == 1


# -- thumbnails and the table --------------------------------------------------------------------------------
def _decode_png(data: bytes) -> tuple[int, int, int, bytes]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        tag = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(tag + body) & 0xFFFFFFFF
        chunks[tag] = chunks.get(tag, b"") + body
        pos += 12 + length
    w, h, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert depth == 8 and b"IEND" in chunks
    return w, h, colour, zlib.decompress(chunks[b"IDAT"])


@pytest.mark.parametrize("shape, colour, channels", [((3, 5), 0, 1), ((3, 5, 3), 2, 3), ((3, 5, 4), 6, 4)])
def test_png_encoder_round_trips(shape, colour, channels):
    img = np.arange(np.prod(shape)).reshape(shape).astype(np.uint8)
    w, h, ctype, raw = _decode_png(png_bytes(img))
    assert (w, h, ctype) == (5, 3, colour)
    rows = np.frombuffer(raw, np.uint8).reshape(3, 1 + 5 * channels)
    assert (rows[:, 0] == 0).all()
    np.testing.assert_array_equal(rows[:, 1:].reshape(shape), img)
    assert base64.b64decode(png_data_uri(img).split(",", 1)[1]) == png_bytes(img)
    with pytest.raises(ValueError, match="shape"):
        png_bytes(np.zeros((2, 2, 2), np.uint8))


def test_thumbnail_scales_inverts_and_upscales():
    img = np.array([[0, 16], [8, 0]])
    t = thumbnail(img, vmax=16, size=8)
    assert t.shape == (8, 8) and t.dtype == np.uint8
    assert t[0, 0] == 255 and t[0, 7] == 0  # blank -> white, full ink -> black
    assert thumbnail(np.zeros((2, 2)), size=2).max() == 255  # a blank image stays white


def _dataset(images: bool = True, n: int = 40) -> Dataset:
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], n // 2)
    X = (rng.normal(size=(n, 4)) + y[:, None]).astype(np.float32)
    frame = pd.DataFrame(
        {
            "label": np.where(y == 1, "dog", "cat"),
            "planted bias": rng.random(n) < 0.3,
            "note": [f"row {i}" for i in range(n)],
        }
    )
    return Dataset(
        name="toy",
        frame=frame,
        label_column="label",
        classes=("cat", "dog"),
        y=y,
        ids=np.arange(100, 100 + n),
        representations={"f": X},
        images=rng.integers(0, 17, (n, 8, 8)) if images else None,
        meta={"planted_truth": ["planted bias"]},
    )


@pytest.fixture(scope="module")
def toy():
    data = _dataset()
    result = aflite(
        data.representation(), data.y, target_size=24, train_size=10, slice_size=4, n_partitions=8, random_state=0
    )
    return data, result


def test_selection_table_lists_images_ids_classes_and_scores(toy):
    data, result = toy
    rows = [int(np.flatnonzero(~result.kept)[0]), int(np.flatnonzero(result.kept)[0]), 3, 3]
    table, counts = selection_table(data, result, rows, cap=200)
    assert counts == {
        "selected": 3,
        "kept": int(result.kept[sorted(set(rows))].sum()),
        "removed": int((~result.kept[sorted(set(rows))]).sum()),
        "shown": 3,
    }
    assert list(table.columns[:1]) == ["image"] and table["image"].str.startswith("data:image/png;base64,").all()
    assert {"planted bias", "id", "class", "status", "round removed", "first-round p", "removal score"} <= set(table)
    assert set(table["class"]) <= {"cat", "dog"}
    for _, r in table.iterrows():
        pos = r["row"]
        assert r["id"] == str(100 + pos)
        assert r["status"] == ("kept" if result.kept[pos] else "removed")
        assert r["round removed"] == ("" if result.kept[pos] else str(result.removed_round[pos]))
        assert r["removal score"] == ("" if result.kept[pos] else f"{result.removal_score[pos]:.2f}")


def test_selection_table_caps_and_handles_no_images(toy):
    _, result = toy
    data = _dataset(images=False)
    table, counts = selection_table(data, result, range(40), cap=5)
    assert counts["selected"] == 40 and counts["shown"] == 5 and len(table) == 5
    assert "image" not in table and "planted bias" in table
    empty, counts = selection_table(data, result, [], cap=5)
    assert len(empty) == 0 and counts["selected"] == 0


def test_thumbnails_share_one_scale(toy):
    data, _ = toy
    thumbs = thumbnails(data, [0, 1], size=16)
    assert len(thumbs) == 2 and thumbs[0].shape == (16, 16)
    assert thumbnails(_dataset(images=False), [0]) == []


def test_docstring_examples():
    import doctest

    import aflite_app.selection as module

    assert doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE).failed == 0


def _python_sequences(value, seen=None):
    """Every tuple or list inside ``value`` (dataclass fields, containers), with its length."""
    import dataclasses

    seen = set() if seen is None else seen
    if id(value) in seen:
        return []
    seen.add(id(value))
    found = []
    if isinstance(value, (tuple, list)):
        found.append(len(value))
        for item in value:
            found += _python_sequences(item, seen)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            found += _python_sequences(getattr(value, f.name), seen)
    return found


def test_a_box_over_many_rows_is_kept_as_one_array_not_a_python_int_per_row():
    # issue 25: a box over 418,000 of 550,000 rows was kept as a tuple of 418,000 Python ints (built, filtered
    # and looped over in Python on every rerun); the state now holds one read-only array and the geometry
    from aflite_app.selection import Rows, redrawn, restored

    n = 60_000
    xy = np.random.default_rng(0).normal(size=(n, 2))
    box = {"selection": {"points": [], "box": [{"x": [-1.5, 1.5], "y": [-1.5, 1.5]}], "lasso": []}}
    state = after_event(for_figure(None, "status"), box, n_rows=n, xy=xy, drawn_on="PCA")
    expected = np.flatnonzero((np.abs(xy) <= 1.5).all(axis=1))
    assert len(expected) > n // 2
    assert isinstance(state.rows, Rows) and np.array_equal(np.asarray(state.rows), expected)
    assert not state.rows.array.flags.writeable  # shared by reruns: nobody changes it in place
    for kept in (state, for_figure(state, "class"), redrawn(state)):
        assert max(_python_sequences(kept), default=0) < 100, "a Python sequence per selected row"
    linked = restored(None, state.shapes, [], xy=xy, drawn_on="PCA")
    assert linked.rows == state.rows and max(_python_sequences(linked), default=0) < 100
    # a click added to a box (Shift) joins its rows; rows beyond n_rows are dropped
    outside = int(np.flatnonzero(~(np.abs(xy) <= 1.5).all(axis=1))[0])
    both = dict(box["selection"], points=[{"customdata": outside}])
    joined = after_event(None, {"selection": both}, n_rows=n, xy=xy)
    assert outside in joined.rows and len(joined.rows) == len(expected) + 1
    assert after_event(None, box, n_rows=10, xy=xy).rows == tuple(r for r in expected.tolist() if r < 10)


def test_rows_behave_as_the_tuple_of_their_positions():
    from aflite_app.selection import Rows

    rows = Rows([9, 2, 2, 5])
    assert rows == (2, 5, 9) and rows == [2, 5, 9] and rows != (2, 5) and rows == Rows(np.array([2, 5, 9]))
    assert hash(rows) == hash(Rows((2, 5, 9))) and list(rows) == [2, 5, 9] and rows[1] == 5 and rows[-1] == 9
    assert 5 in rows and 4 not in rows and "x" not in rows
    assert rows.below(6) == (2, 5) and rows.below(100) is rows and rows.below(0) == ()
    assert repr(rows) == "(2, 5, 9)" and not Rows() and len(Rows(range(100))) == 100
    assert MapSelection(rows=(3, 1)).rows == (1, 3)  # a tuple given is kept as Rows
    import pickle

    assert pickle.loads(pickle.dumps(rows)) == rows


def test_the_table_lists_a_sorted_array_of_rows_as_it_lists_a_list(toy):
    from aflite_app.map_table import class_counts
    from aflite_app.selection import Rows

    data, result = toy
    n = data.n_rows
    listed = [n - 1, 3, 7, 3, n + 10, -1, 12]
    for rows in (Rows([3, 7, 12, n - 1]), np.array([3, 7, 12, n - 1, n + 10]), np.array([12, 3, n - 1, 7, 7])):
        a, ca = selection_table(data, result, rows, cap=2, offset=1)
        b, cb = selection_table(data, result, listed, cap=2, offset=1)
        pd.testing.assert_frame_equal(a, b)
        assert ca == cb and ca["selected"] == 4
        pd.testing.assert_frame_equal(class_counts(data, result, rows), class_counts(data, result, listed))


def test_a_lasso_selects_exactly_the_rows_of_points_in_polygon_with_the_rows_sorted_once():
    from aflite_app.map_shapes import _BY_Y, mask_in_shapes, prepare_lasso
    from aflite_core.measures.map_grids import points_in_polygon

    rng = np.random.default_rng(3)
    # float32 coordinates on a coarse grid: many rows exactly on a vertex's or an edge's y, and ties in y
    xy = np.round(rng.normal(size=(20_000, 2)) * 4).astype(np.float32) / 4
    prepare_lasso(xy)  # sorted in the background when the map is drawn (a lasso meanwhile sorts for itself)
    for k in range(30):
        n = int(rng.integers(3, 40))
        t = np.sort(rng.uniform(0, 2 * np.pi, n))
        r = rng.uniform(0.2, 3, n)  # star-shaped, often concave
        px, py = np.round(r * np.cos(t) * 4) / 4, np.round(r * np.sin(t) * 4) / 4
        if k % 3 == 0:
            py[1] = py[0]  # a horizontal edge
        shape = ("lasso", tuple(px), tuple(py))
        assert np.array_equal(mask_in_shapes([shape], xy), points_in_polygon(xy, px, py)), k
    assert not mask_in_shapes([("lasso", (0.0, 1.0, 2.0), (0.0, 0.0, 0.0))], xy).any()  # encloses nothing
    assert _BY_Y[id(xy)][0]() is xy  # kept for this map's next lassos
