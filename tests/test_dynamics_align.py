"""Uploaded training dynamics made to fit a dataset (aflite_core.dynamics.align): parsing and alignment."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aflite_core.dynamics import TrainingDynamics
from aflite_core.dynamics.align import align_dynamics, epoch_of_file, parse_class_order, read_epoch_files

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "cartography_example"
NLI = ("entailment", "neutral", "contradiction")


def _sample_files() -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted(SAMPLE.glob("dynamics_epoch_*.jsonl"))]


def _dynamics(rng, n=6, epochs=2, classes=NLI) -> TrainingDynamics:
    gold = np.arange(n) % len(classes)
    return TrainingDynamics(
        rng.normal(size=(n, epochs, len(classes))), gold, classes=classes, ids=[f"r{i}" for i in range(n)]
    )


# -- class order and file names ------------------------------------------------------------------------------------
def test_parse_class_order():
    assert parse_class_order("neutral , entailment,contradiction", NLI) == ["neutral", "entailment", "contradiction"]
    assert parse_class_order(" , ", [0, 1]) == ["0", "1"]


def test_epoch_of_file_reads_the_number_and_ignores_folders():
    assert epoch_of_file("dynamics_epoch_0.jsonl") == 0
    assert epoch_of_file("a/b/dynamics_epoch_17.jsonl") == 17


@pytest.mark.parametrize(
    "name", ["epoch0.jsonl", "dynamics_epoch_1.json", "dynamics_epoch_12345.jsonl", "dynamics_epoch_x.jsonl"]
)
def test_epoch_of_file_refuses_other_names(name):
    with pytest.raises(ValueError, match=r"not named dynamics_epoch_<e>\.jsonl"):
        epoch_of_file(name)


# -- read_epoch_files ----------------------------------------------------------------------------------------------
def test_read_epoch_files_in_any_order_matches_the_folder_reader():
    from aflite_core.dynamics import read_cartography_dynamics

    td = read_epoch_files(_sample_files()[::-1], classes=NLI)
    folder = read_cartography_dynamics(SAMPLE, classes=NLI)
    np.testing.assert_array_equal(td.logits, folder.logits)
    assert list(td.ids) == list(folder.ids) and td.classes == NLI


def test_read_epoch_files_refuses_an_epoch_given_twice():
    files = _sample_files()
    with pytest.raises(ValueError, match="Epoch 0 was uploaded twice among the full-input files"):
        read_epoch_files([files[0], ("other/" + files[0][0], files[0][1])], what="full-input")


def test_read_epoch_files_refuses_a_gap():
    files = _sample_files()
    with pytest.raises(ValueError, match="missing epoch"):
        read_epoch_files([files[0], files[2]])


def test_read_errors_name_the_file_and_line_never_the_temporary_folder():
    with pytest.raises(ValueError, match="line 1 is not valid JSON") as info:
        read_epoch_files([("dynamics_epoch_0.jsonl", b"{oops\n")], what="partial-input")
    text = str(info.value)
    assert text.startswith("Partial-input dynamics: 'dynamics_epoch_0.jsonl' line 1")
    assert "aflite-dynamics-" not in text


# -- align_dynamics ------------------------------------------------------------------------------------------------
def test_align_reorders_rows_by_id_and_logits_by_class_name(rng):
    td = _dynamics(rng)
    order = np.array([3, 0, 5, 1, 4, 2])
    perm = [2, 0, 1]  # the files' logit j is the dataset's class perm[j]
    file_gold = np.argsort(perm)[td.gold]
    shuffled = TrainingDynamics(
        td.logits[:, :, perm][order], file_gold[order], classes=tuple(NLI[p] for p in perm), ids=td.ids[order]
    )
    out = align_dynamics(shuffled, ids=td.ids, y=td.gold, classes=NLI, dataset_name="toy")
    np.testing.assert_allclose(out.logits, td.logits)
    assert out.gold.tolist() == td.gold.tolist() and out.classes == NLI
    assert list(out.ids) == list(td.ids) and out.ids.name == "id"


def test_align_compares_ids_as_text_and_keeps_the_dataset_ids(rng):
    td = TrainingDynamics(rng.normal(size=(3, 1, 2)), [0, 1, 0], classes=("a", "b"), ids=["2", "0", "1"])
    out = align_dynamics(td, ids=np.arange(3), y=[1, 0, 0], classes=["a", "b"])
    assert out.ids.tolist() == [0, 1, 2]
    np.testing.assert_allclose(out.logits[0], td.logits[1])


def test_align_names_guids_that_are_not_ids_and_rows_without_dynamics(rng):
    td = _dynamics(rng)
    with pytest.raises(ValueError, match=r"do not match the rows of 'toy'.*'r5'.*have no dynamics.*'x'") as info:
        align_dynamics(td, ids=[*td.ids[:5], "x"], y=td.gold, classes=NLI, dataset_name="toy", what="full-input")
    assert "1 guid(s) are not ids of the dataset" in str(info.value)


def test_align_refuses_a_guid_repeated_as_text(rng):
    td = TrainingDynamics(rng.normal(size=(2, 1, 2)), [0, 1], classes=("a", "b"), ids=[7, "7"])
    with pytest.raises(ValueError, match="repeat a guid once written as text"):
        align_dynamics(td, ids=["7", "8"], y=[0, 1], classes=["a", "b"])


def test_align_refuses_logits_of_other_classes(rng):
    td = _dynamics(rng)
    with pytest.raises(ValueError, match=r"3 logits per line named .* but 'toy' has the classes \['a', 'b'\]"):
        align_dynamics(td, ids=td.ids, y=td.gold % 2, classes=["a", "b"], dataset_name="toy")


def test_align_refuses_gold_labels_that_disagree(rng):
    td = _dynamics(rng)
    y = td.gold.copy()
    y[4] = (y[4] + 1) % 3
    with pytest.raises(ValueError, match=r"disagree with the dataset's labels on 1 rows \(e.g. id 'r4'"):
        align_dynamics(td, ids=td.ids, y=y, classes=NLI)


def test_align_refuses_labels_of_another_length(rng):
    td = _dynamics(rng)
    with pytest.raises(ValueError, match="one class code per id"):
        align_dynamics(td, ids=td.ids, y=td.gold[:3], classes=NLI)


def test_read_then_align_an_upload_of_the_sample(tmp_path):
    td = read_epoch_files(_sample_files(), classes=NLI)
    ids = list(td.ids)[::-1]
    y = td.gold[::-1]
    out = align_dynamics(td, ids=ids, y=y, classes=NLI)
    np.testing.assert_allclose(out.logits, td.logits[::-1])
    json.dumps([str(i) for i in out.ids])  # ids stay plain values
