"""The training-dynamics recorder: one writer, a Hugging Face Trainer callback, a PyTorch loop helper."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aflite_core import _durable
from aflite_core.cli import main
from aflite_core.dynamics import (
    DynamicsRecord,
    TrainingDynamics,
    difficulty_levels,
    read_cartography_dynamics,
    write_epoch,
    write_torch_epoch,
)

ROOT = Path(__file__).resolve().parents[1]


def _need(*modules: str) -> None:
    """Skip without an optional package - but in CI (which installs requirements-dev.txt) fail."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"not installed: {missing}")


# ---------------------------------------------------------------------------------------------------------------
# the writer
# ---------------------------------------------------------------------------------------------------------------
def test_write_epoch_lines_and_read_back(tmp_path, rng):
    z0, z1 = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    write_epoch(tmp_path, 0, ["d", "a", "c", "b"], z0, [2, 0, 1, 1])
    path = write_epoch(tmp_path, 1, np.array(["a", "b", "c", "d"]), z1[[1, 3, 2, 0]], np.array([0, 1, 1, 2]))
    assert path == tmp_path / "dynamics_epoch_1.jsonl"
    first = json.loads((tmp_path / "dynamics_epoch_0.jsonl").read_text().splitlines()[0])
    assert first == {"guid": "d", "logits_epoch_0": z0[0].tolist(), "gold": 2}  # floats round-trip exactly
    td = read_cartography_dynamics(tmp_path)
    assert list(td.ids) == ["d", "a", "c", "b"] and td.gold.tolist() == [2, 0, 1, 1]
    np.testing.assert_array_equal(td.logits[:, 0], z0)
    np.testing.assert_array_equal(td.logits[:, 1], z1)


def test_save_cartography_goes_through_the_same_writer(tmp_path, rng):
    td = TrainingDynamics(rng.normal(size=(5, 2, 3)), [0, 1, 2, 0, 1], ids=[10, 11, 12, 13, 14])
    files = td.save_cartography(tmp_path / "a")
    for e in range(2):
        write_epoch(tmp_path / "b", e, list(td.ids), td.logits[:, e], td.gold)
        assert files[e].read_bytes() == (tmp_path / "b" / f"dynamics_epoch_{e}.jsonl").read_bytes()


def test_an_interrupted_write_leaves_the_previous_epoch_file(tmp_path, monkeypatch):
    write_epoch(tmp_path, 0, ["a", "b"], [[1.0, 0.0], [0.0, 1.0]], [0, 1])
    before = (tmp_path / "dynamics_epoch_0.jsonl").read_bytes()

    def cut(*args):
        raise OSError("power cut before the rename")

    monkeypatch.setattr(_durable.os, "replace", cut)
    with pytest.raises(OSError, match="power cut"):
        write_epoch(tmp_path, 0, ["a", "b"], [[5.0, 0.0], [0.0, 5.0]], [0, 1])
    assert (tmp_path / "dynamics_epoch_0.jsonl").read_bytes() == before
    monkeypatch.undo()
    assert read_cartography_dynamics(tmp_path).logits[0, 0, 0] == 1.0  # the hidden temp file is ignored


@pytest.mark.parametrize(
    "args, match",
    [
        ((-1, ["a"], [[1.0, 0.0]], [0]), r"The 'epoch' parameter of write_epoch must be an int in \[0, 9999\]"),
        ((10**20, ["a"], [[1.0, 0.0]], [0]), r"The 'epoch' parameter of write_epoch must be an int in \[0, 9999\]"),
        ((0, ["a"], [1.0, 0.0], [0]), r"must be an array of shape \(n_examples, n_classes\)"),
        ((0, ["a"], [[1.0]], [0]), r"at least 1 example and 2 classes"),
        ((0, ["a"], [[np.nan, 0.0]], [0]), r"must contain only finite values"),
        ((0, ["a", "a"], [[1.0, 0.0], [0.0, 1.0]], [0, 1]), r"must hold unique ids. Got 'a' twice"),
        ((0, [1.5], [[1.0, 0.0]], [0]), r"must hold str or int ids. Got 1.5"),
        ((0, ["a", "b"], [[1.0, 0.0]], [0]), r"must have one id per row of logits \(1\)"),
        ((0, ["a"], [[1.0, 0.0]], [2]), r"must hold class indices in \[0, 1\]. Got 2"),
        ((0, ["a"], [[1.0, 0.0]], [0, 1]), r"The 'gold' parameter of write_epoch must be 1-D with one class"),
    ],
)
def test_write_epoch_rejects_bad_input(tmp_path, args, match):
    with pytest.raises(ValueError, match=match):
        write_epoch(tmp_path, *args)


def test_importing_the_recorder_needs_neither_torch_nor_transformers():
    code = (
        "import sys; import aflite_core.dynamics, aflite_core.dynamics.recorder; "
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------------------------
# a plain PyTorch loop
# ---------------------------------------------------------------------------------------------------------------
def test_plain_torch_loop(tmp_path):
    _need("torch")
    import torch
    from torch.utils.data import DataLoader

    torch.manual_seed(0)
    gen = np.random.default_rng(0)
    X = gen.normal(size=(30, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 1).astype(np.int64)
    rows = [{"guid": f"ex{i}", "x": torch.from_numpy(X[i]), "labels": int(y[i])} for i in range(30)]
    loader = DataLoader(rows, batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(0))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(5, 3)

        def forward(self, x):
            return self.lin(x)

    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for epoch in range(3):
        model.train()
        for batch in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(batch["x"]), batch["labels"]).backward()
            opt.step()
        write_torch_epoch(tmp_path, epoch, model, loader)
        assert model.training  # the mode is restored
    td = read_cartography_dynamics(tmp_path)
    assert td.n_examples == 30 and td.n_epochs == 3 and set(td.ids) == {f"ex{i}" for i in range(30)}
    order = [int(g[2:]) for g in td.ids]
    assert td.gold.tolist() == y[order].tolist()
    with torch.no_grad():
        final = model(torch.from_numpy(X[order])).numpy()
    np.testing.assert_allclose(td.logits[:, 2], final, rtol=1e-5, atol=1e-6)  # logits at the end of the epoch
    # tuple batches (inputs, labels, guids) and a custom forward work too
    tuples = [
        (torch.from_numpy(X[i : i + 10]), torch.from_numpy(y[i : i + 10]), list(range(i, i + 10))) for i in (0, 10, 20)
    ]
    write_torch_epoch(tmp_path / "t", 0, model, tuples, forward=lambda m, x: m(x) * 2)
    td2 = read_cartography_dynamics(tmp_path / "t")
    with torch.no_grad():
        np.testing.assert_allclose(td2.logits[:, 0], model(torch.from_numpy(X)).numpy() * 2, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"Batch 0 given to write_torch_epoch has no 'guid' key"):
        write_torch_epoch(tmp_path, 0, model, [{"x": torch.zeros(1, 5), "labels": torch.zeros(1)}])


# ---------------------------------------------------------------------------------------------------------------
# a Hugging Face Trainer run: a tiny randomly initialised BERT, two epochs on 40 rows, on the CPU
# ---------------------------------------------------------------------------------------------------------------
def _tiny_data():
    """40 short texts, 3 labels given away by one word; a whitespace tokenizer built here (no download)."""
    words = {0: "yes", 1: "maybe", 2: "no"}
    fillers = ["the", "a", "man", "dog", "runs", "sits", "park", "today"]
    gen = np.random.default_rng(0)
    texts, labels = [], []
    for i in range(40):
        lab = i % 3
        body = list(gen.choice(fillers, size=4))
        body.insert(int(gen.integers(0, 5)), words[lab])
        texts.append(" ".join(body))
        labels.append(lab)
    vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2}
    for t in texts:
        for w in t.split():
            vocab.setdefault(w, len(vocab))
    ids = [[1] + [vocab[w] for w in t.split()] + [2] for t in texts]  # every text has 5 words: 7 ids
    return texts, labels, ids, vocab


@pytest.mark.slow
def test_hugging_face_trainer_callback_writes_what_the_dynamics_command_reads(tmp_path, monkeypatch):
    _need("torch", "transformers", "accelerate", "datasets")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _run_trainer(tmp_path, torch)
    finally:
        torch.set_num_threads(threads)


def _run_trainer(tmp_path, torch):
    from datasets import Dataset
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    from aflite_core.dynamics import add_cartography_callback

    _texts, labels, ids, vocab = _tiny_data()
    data = Dataset.from_dict(
        {
            "guid": [f"row-{i}" for i in range(40)],
            "input_ids": ids,
            "attention_mask": [[1] * len(x) for x in ids],
            "labels": labels,
        }
    )
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=16,
        num_labels=3,
    )
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        num_train_epochs=2,
        per_device_train_batch_size=8,
        per_device_eval_batch_size=40,
        learning_rate=5e-3,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_strategy="no",
        eval_strategy="no",
        disable_tqdm=True,
        seed=0,
        dataloader_num_workers=0,
    )
    trainer = Trainer(model=model, args=args, train_dataset=data)
    folder = tmp_path / "dynamics"
    add_cartography_callback(trainer, folder)
    trainer.train()

    assert sorted(p.name for p in folder.iterdir()) == ["dynamics_epoch_0.jsonl", "dynamics_epoch_1.jsonl"]
    td = read_cartography_dynamics(folder)
    assert td.n_examples == 40 and td.n_epochs == 2 and td.n_classes == 3
    assert list(td.ids) == [f"row-{i}" for i in range(40)] and td.gold.tolist() == labels
    assert not np.allclose(td.logits[:, 0], td.logits[:, 1])  # the model changed between the two epochs
    # the last file holds the logits of the final model
    final = trainer.predict(data).predictions
    np.testing.assert_allclose(td.logits[:, 1], final, rtol=1e-4, atol=1e-5)
    levels = difficulty_levels(DynamicsRecord(td), random_state=0)
    assert len(levels.levels) == 40 and set(levels.levels) <= {"easy", "ambiguous", "hard"}

    out = tmp_path / "levels.csv"
    assert main(["dynamics", "--dynamics-dir", str(folder), "--out", str(out)]) == 0
    table = pd.read_csv(out)
    assert len(table) == 40 and table["id"].tolist() == [f"row-{i}" for i in range(40)]
    assert table["level"].isin(["easy", "ambiguous", "hard"]).all()
