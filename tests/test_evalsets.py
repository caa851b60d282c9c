"""AFLite on evaluation sets across adversaries (aflite_core.evalsets): Phang et al., Figures 1-5 and 7."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from aflite_core import aflite
from aflite_core.cli.eval_filter import add_cli
from aflite_core.data.planted_bias import make_planted_bias
from aflite_core.engine.result import EVAL_CATEGORIES
from aflite_core.evalsets import (
    NONE,
    AdversaryStudy,
    adversary_study,
    annotator_agreement,
    category_agreement,
    digits_adversary_setup,
    ensemble_aflite,
    ensemble_name,
    study_reading,
    text_adversary_setup,
)
from aflite_core.evalsets.tables import _rankings

KW = {"target_size": 300, "train_size": 150, "slice_size": 60, "n_partitions": 32}


@pytest.fixture(scope="module")
def planted_pair():
    """The same rows seen by a strong and a weak adversary: identical labels and planted rows, shift 6 vs 1."""
    X_s, y, biased = make_planted_bias(900, 8, bias_fraction=0.3, bias_strength=6.0, random_state=3)
    X_w, y_w, biased_w = make_planted_bias(900, 8, bias_fraction=0.3, bias_strength=1.0, random_state=3)
    assert np.array_equal(y, y_w) and np.array_equal(biased, biased_w)
    names = np.array(["cat", "dog"])[y]
    tr, ev = np.arange(600), np.arange(600, 900)
    train_X = {"weak": X_w[tr], "strong": X_s[tr]}
    eval_X = {"weak": X_w[ev], "strong": X_s[ev]}
    return train_X, names[tr], eval_X, names[ev], biased[ev]


@pytest.fixture(scope="module")
def study(planted_pair):
    train_X, y, eval_X, ey, _ = planted_pair
    return adversary_study(
        train_X,
        y,
        eval_X,
        ey,
        seeds=(0, 1),
        ensemble=True,
        evaluated=[("logistic", "weak"), ("knn", "strong"), ("rbf", "weak"), ("rbf", "strong")],
        eval_ids=[f"e{i}" for i in range(len(ey))],
        **KW,
    )


# -- the filtering itself ------------------------------------------------------------------------------------
def test_evaluation_rows_never_influence_training_selection(planted_pair, study):
    train_X, y, _, _, _ = planted_pair
    for a in ("weak", "strong"):
        for s in (0, 1):
            alone = aflite(train_X[a], y, random_state=s, **KW)
            withe = study.runs_detail[(a, s)]
            assert np.array_equal(alone.removed_round, withe.removed_round)
            assert np.array_equal(alone.scores, withe.scores, equal_nan=True)
    name = ensemble_name(("weak", "strong"))
    for s in (0, 1):
        alone = ensemble_aflite(train_X, y, random_state=s, **KW).result
        assert np.array_equal(alone.removed_round, study.runs_detail[(name, s)].removed_round)


def test_categories_partition_the_evaluation_set(planted_pair, study):
    n_eval = len(planted_pair[3])
    cats = study.categories
    assert set(cats["category"]) <= set(EVAL_CATEGORIES)
    for (a, s), grp in cats.groupby(["adversary", "seed"]):
        assert sorted(grp["row"]) == list(range(n_eval))  # every evaluation row exactly once per run
        rr = grp["removed_round"].to_numpy()
        expected = np.where(rr == 1, EVAL_CATEGORIES[0], np.where(rr > 1, EVAL_CATEGORIES[1], EVAL_CATEGORIES[2]))
        assert (grp["category"].to_numpy() == expected).all()
        res = study.runs_detail[(a, s)]
        assert np.array_equal(rr, res.eval_removed_round)
        assert (grp["category"].to_numpy() == res.eval_category).all()
    assert cats["id"].iloc[0] == "e0"
    shares = study.category_table
    assert np.allclose(shares.sum(axis=1), 1.0)
    assert list(shares.index) == ["weak", "strong", "ensemble(weak+strong)"]
    runs = study.runs
    assert (runs[["removed_in_round_1", "removed_later", "selected"]].sum(axis=1) == n_eval).all()


def test_a_stronger_planted_adversary_removes_more_evaluation_rows(planted_pair, study):
    biased = planted_pair[4]
    shares = study.category_table
    # 0.08 apart with the logistic default, 0.11 with the weaker ridge default before it: both adversaries
    # find more with logistic regression, the weak one mostly in later rounds
    assert shares.loc["strong", "selected"] < shares.loc["weak", "selected"] - 0.05
    assert shares.loc["strong", EVAL_CATEGORIES[0]] > shares.loc["weak", EVAL_CATEGORIES[0]] + 0.1
    for s in (0, 1):  # the strong adversary finds the planted rows, mostly in round 1
        res = study.runs_detail[("strong", s)]
        assert (~res.eval_kept[biased]).mean() > 0.9
        assert (res.eval_removed_round[biased] == 1).mean() > 0.7
    # every evaluated model loses accuracy on the strong adversary's selection
    M = study.accuracy_matrix
    assert (M["strong"] < M[NONE]).all()


def test_accuracies_are_the_models_on_each_selected_set(study):
    acc = study.accuracies
    assert acc.loc[acc["adversary"] == NONE, "seed"].isna().all()
    correct = study.eval_correct
    for (a, s), res in study.runs_detail.items():
        sub = acc[(acc["adversary"] == a) & (acc["seed"] == s)].set_index("model")
        for model in correct.columns:
            assert sub.loc[model, "accuracy"] == pytest.approx(correct[model][res.eval_kept].mean())
            assert sub.loc[model, "n_rows"] == res.eval_kept.sum()
    M = study.accuracy_matrix
    assert list(M.columns) == [NONE, "weak", "strong", "ensemble(weak+strong)"]
    assert list(M.index) == ["logistic:weak", "knn:strong", "rbf:weak", "rbf:strong"]
    mean = acc[acc["adversary"] == "strong"].groupby("model")["accuracy"].mean()
    assert np.allclose(M["strong"], mean.reindex(M.index))


# -- rankings and Kendall's coefficient ----------------------------------------------------------------------
def _matrix(none, other):
    return pd.DataFrame({NONE: none, "adv": other}, index=pd.Index(["a", "b", "c", "d"], name="model"))


def _long(M):
    return pd.DataFrame({"adversary": "adv", "seed": 0, "model": M.index, "accuracy": M["adv"].to_numpy()})


@pytest.mark.parametrize(
    ("other", "expected"),
    [
        ([0.5, 0.6, 0.7, 0.8], 1.0),  # the same order, lower accuracies
        ([0.8, 0.7, 0.6, 0.5], -1.0),  # reversed
    ],
)
def test_rank_correlation_is_one_when_rankings_agree_and_minus_one_when_reversed(other, expected):
    M = _matrix([0.6, 0.7, 0.8, 0.9], other)
    rankings, corr = _rankings(M, _long(M), ["adv"], list(M.index))
    assert corr.loc[0, "kendall"] == pytest.approx(expected)
    assert corr.loc[0, "kendall_seed_mean"] == pytest.approx(expected)
    r = rankings[rankings["adversary"] == "adv"].set_index("model")
    assert r.loc["d", "rank_unfiltered"] == 1  # rank 1 is the most accurate
    assert r.loc["a", "rank_change"] == (0 if expected == 1 else -3)


def test_ranks_share_ties_and_kendall_matches_scipy(study):
    M = _matrix([0.9, 0.9, 0.8, 0.7], [0.5, 0.6, 0.6, 0.4])
    rankings, _ = _rankings(M, _long(M), ["adv"], list(M.index))
    assert rankings[rankings["adversary"] == NONE]["rank"].tolist() == [1, 1, 3, 4]
    M = study.accuracy_matrix
    for _, row in study.rank_correlation.iterrows():
        assert row["kendall"] == pytest.approx(kendalltau(M[NONE], M[row["adversary"]]).statistic, nan_ok=True)
    assert "tau" not in " ".join(study.rank_correlation.columns)


def test_same_representation_rank_change(study):
    same = study.same_representation
    assert set(same["relation"]) == {"same representation", "ensemble member"}
    direct = same[same["relation"] == "same representation"]
    assert set(zip(direct["adversary"], direct["model"])) == {
        ("weak", "logistic:weak"),
        ("weak", "rbf:weak"),
        ("strong", "knn:strong"),
        ("strong", "rbf:strong"),
    }
    ranks = study.rankings.set_index(["adversary", "model"])
    for _, row in same.iterrows():
        assert row["rank_change"] == ranks.loc[(row["adversary"], row["model"]), "rank"] - row["rank_unfiltered"]
        assert row["accuracy_drop"] == pytest.approx(row["accuracy_unfiltered"] - row["accuracy_filtered"])


# -- annotator agreement -------------------------------------------------------------------------------------
def test_agreement_by_hand_with_source_filtering():
    gold = ["e", "n", "c", "e", "c", "n"]
    ann = [
        ["e", "e", "e", "n", "e"],  # 0.8, random_subset, removed in round 1
        ["n", "c", "n", "e", "n"],  # 0.6, random_subset, selected
        np.array(["c", "c", "c", "c"]),  # 1.0, chaosnli -> excluded by source
        None,  # no labels
        '["c", "n", "c", "c", "c"]',  # 0.8 (JSON text), random_subset, selected
        "n|n|e|e|c",
    ]  # 0.4 (| separated), random_subset, removed later
    src = ["random_subset", "random_subset", "chaosnli", "random_subset", "random_subset", "random_subset"]
    assert annotator_agreement(gold, ann)[[0, 1, 2, 4, 5]].tolist() == pytest.approx([0.8, 0.6, 1.0, 0.8, 0.4])
    assert np.isnan(annotator_agreement(gold, ann)[3])
    cats = pd.DataFrame(
        {
            "adversary": "A",
            "seed": [0] * 6 + [1] * 6,
            "row": list(range(6)) * 2,
            "category": [
                "removed in round 1",
                "selected",
                "removed in round 1",
                "selected",
                "selected",
                "removed later",
                "selected",
                "selected",
                "selected",
                "selected",
                "removed in round 1",
                "selected",
            ],
        }
    )
    rep = category_agreement(cats, gold, ann, annotator_source=src)
    assert rep.info == {
        "n_eval": 6,
        "n_with_labels": 5,
        "n_used": 4,
        "n_excluded_by_source": 1,
        "n_without_labels": 1,
        "sources": ["random_subset"],
        "source_column_given": True,
        "source_counts": {"random_subset": 4, "chaosnli": 1},
    }
    by_seed = rep.by_seed.set_index(["seed", "category"])
    assert by_seed.loc[(0, "removed in round 1"), "mean_agreement"] == pytest.approx(0.8)  # row 2 excluded
    assert by_seed.loc[(0, "selected"), "mean_agreement"] == pytest.approx(0.7)
    assert by_seed.loc[(0, "removed later"), "mean_agreement"] == pytest.approx(0.4)
    assert by_seed.loc[(1, "selected"), "mean_agreement"] == pytest.approx((0.8 + 0.6 + 0.4) / 3)
    assert by_seed.loc[(1, "removed later"), "n_rows"] == 0
    table = rep.table()
    assert table.loc["A", "selected"] == pytest.approx((0.7 + 0.6) / 2)  # mean over seeds
    assert table.loc["A", "removed in round 1"] == pytest.approx((0.8 + 0.8) / 2)
    assert table.loc[NONE, "selected"] == pytest.approx((0.8 + 0.6 + 0.8 + 0.4) / 4)  # all used rows
    every = category_agreement(cats, gold, ann, annotator_source=src, annotator_sources=None)
    assert every.info["n_used"] == 5 and every.info["n_excluded_by_source"] == 0
    no_src = category_agreement(cats, gold, ann)
    assert no_src.info["n_used"] == 5 and no_src.info["sources"] is None


def test_study_carries_agreement(planted_pair):
    train_X, y, eval_X, ey, _ = planted_pair
    ann = [[lab] * 3 + ["cat" if lab == "dog" else "dog"] * (i % 3) for i, lab in enumerate(ey)]
    src = np.where(np.arange(len(ey)) % 4 == 0, "chaosnli", "random_subset")
    st = adversary_study(
        train_X, y, eval_X, ey, seeds=(0,), adversaries=["strong"], annotator_labels=ann, annotator_source=src, **KW
    )
    assert st.agreement.info["n_used"] == int((src == "random_subset").sum())
    rows = st.categories
    agree = annotator_agreement(ey, ann)
    sel = rows[(rows["category"] == "selected")]["row"].to_numpy()
    sel = sel[src[sel] == "random_subset"]
    assert st.agreement.table().loc["strong", "selected"] == pytest.approx(agree[sel].mean())
    assert "agreement" in st.tables() and "Annotator agreement" in " ".join(st.reading())


# -- the ensemble --------------------------------------------------------------------------------------------
def test_an_ensemble_of_one_adversary_is_plain_aflite(planted_pair):
    train_X, y, eval_X, ey, _ = planted_pair
    one = ensemble_aflite(
        {"strong": train_X["strong"]}, y, eval_X={"strong": eval_X["strong"]}, eval_y=ey, random_state=7, **KW
    ).result
    ref = aflite(train_X["strong"], y, eval_X=eval_X["strong"], eval_y=ey, random_state=7, **KW)
    for name in ("removed_round", "scores", "n_predictions", "eval_removed_round", "eval_scores", "first_score"):
        assert np.array_equal(getattr(one, name), getattr(ref, name), equal_nan=True), name
    assert one.stop_reason == ref.stop_reason and one.params["n_partitions"] == ref.params["n_partitions"]


def test_the_ensemble_pools_its_members_by_hand():
    # three classes; one member sees a planted shift on 40 % of the rows, the other is pure noise
    X, y, _ = make_planted_bias(
        900, 6, n_classes=3, class_sep=0.0, bias_fraction=0.4, bias_strength=8.0, random_state=5
    )
    noise = np.random.default_rng(5).normal(size=(900, 6)).astype(np.float32)
    tr, ev = np.arange(600), np.arange(600, 900)
    kw = {"target_size": 300, "train_size": 150, "slice_size": 60, "n_partitions": 16}
    ens = ensemble_aflite(
        {"planted": X[tr], "noise": noise[tr]},
        y[tr],
        eval_X={"planted": X[ev], "noise": noise[ev]},
        eval_y=y[ev],
        random_state=0,
        **kw,
    )
    res = ens.result
    assert ens.name == "ensemble(planted+noise)" and res.params["adversaries"] == ["planted", "noise"]
    assert res.params["n_partitions"] == 16 and res.params["n_partitions_total"] == 32
    # evaluation rows: every model of both members predicts every row, so the pooled score is the mean
    pa, pb = ens.member_eval_scores["planted"][0], ens.member_eval_scores["noise"][0]
    pooled = (pa + pb) / 2
    assert np.allclose(res.eval_scores[0], pooled, atol=1e-6)
    assert np.array_equal(res.eval_removed_round == 1, res.eval_scores[0] >= 0.75)
    # the planted member alone would remove its rows; pooled with noise (about 1/3 right) they mostly stay
    alone = pa >= 0.75
    assert alone.sum() > 50
    assert (res.eval_removed_round[alone] == 1).mean() < 0.5
    # training rows: sum of correct / sum of predictions over members
    na, nb = ens.member_n_predictions["planted"][0], ens.member_n_predictions["noise"][0]
    sa = np.nan_to_num(ens.member_scores["planted"][0]) * na
    sb = np.nan_to_num(ens.member_scores["noise"][0]) * nb
    assert np.allclose(res.scores[0], (sa + sb) / (na + nb), atol=1e-5)
    assert np.array_equal(res.n_predictions[0], na + nb)
    p0 = res.scores[0]
    qualified = np.nan_to_num(p0, nan=0.0) >= 0.75
    gone = res.removed_round == 1  # round 1 removes the top-k of the pooled scores, all ≥ τ
    assert gone.sum() == min(kw["slice_size"], qualified.sum())
    assert qualified[gone].all()
    assert p0[gone].min(initial=1.0) >= np.max(p0[qualified & ~gone], initial=0.0)


# -- ready-made setups ---------------------------------------------------------------------------------------
def test_digits_setup_runs_end_to_end():
    setup = digits_adversary_setup()
    assert (len(setup.train_y), len(setup.eval_y)) == (1006, 432)
    assert not set(setup.train_ids) & set(setup.eval_ids)
    assert list(setup.adversaries) == sorted(setup.adversaries, key=setup.strength.get)  # weakest first
    st = setup.run(seeds=(0,))
    assert isinstance(st, AdversaryStudy) and st.params["complete"]
    names = list(setup.adversaries)
    assert list(st.accuracy_matrix.columns) == [NONE, *names]
    shares = st.category_table
    for a in names:  # informative categories: many in round 1, some later, a selected remainder
        assert shares.loc[a, EVAL_CATEGORIES[0]] > 0.5
        assert 0 < shares.loc[a, EVAL_CATEGORIES[1]] < 0.25 and 0.03 < shares.loc[a, "selected"] < 0.35
    # strength is measured independently of filtering: each backbone's accuracy on the full evaluation set, the
    # very model the study evaluates as "shared backbone" (same fit, so the same number); the paper's "stronger
    # adversaries remove more in round 1" is not asserted: on the digits it does not hold (see the README)
    strength = st.strength.set_index("adversary")
    for a in names:
        bb = setup.backbones[a].name
        assert strength.loc[a, "backbone"] == bb
        assert strength.loc[a, "accuracy"] == pytest.approx(setup.strength[a], abs=1e-4)
        assert strength.loc[a, "accuracy"] == pytest.approx(st.accuracy_matrix.loc[bb, NONE])
        assert strength.loc[a, "ci_low"] < strength.loc[a, "accuracy"] < strength.loc[a, "ci_high"]
    assert {"backbone:mlp", "backbone:mlp_small", "backbone:pca"} <= set(st.accuracy_matrix.index)
    means = st.accuracy_matrix.mean()
    assert (means.drop(NONE) < means[NONE]).all()
    rel = st.same_representation
    assert set(rel[rel["relation"] == "shared backbone"]["adversary"]) == set(names)
    assert len(rel[rel["relation"] == "same representation"]) >= len(names)
    text = study_reading(st)
    assert any("Kendall's coefficient" in s for s in text) and all("tau" not in s for s in text)


def test_text_setup_splits_by_premise_and_builds_partial_input_views():
    from aflite_core.data.nli import nli_dataset_from_records

    rng = np.random.default_rng(0)
    words = ["man", "dog", "girl", "street", "ball", "park", "car", "beach"]
    rows = []
    for i in range(80):
        premise = f"A {words[i % 8]} near the {words[(i * 3) % 8]} number {i}."
        for label, hyp in (
            ("entailment", "Someone is outside."),
            ("contradiction", "Nobody is there."),
            ("neutral", f"The {words[rng.integers(8)]} is happy."),
        ):
            rows.append(
                {
                    "premise": premise,
                    "hypothesis": hyp,
                    "label": label,
                    "annotator_labels": [label] * 4 + ["neutral"],
                    "annotator_labels_src": "random_subset",
                }
            )
    ds = nli_dataset_from_records(
        pd.DataFrame(rows), name="toy", text_features=False, features={"random": rng.normal(size=(240, 5))}
    )
    setup = text_adversary_setup(
        ds,
        embeddings=False,
        annotator_column="annotator_labels",
        annotator_source_column="annotator_labels_src",
        n_components=16,
    )
    assert set(setup.adversaries) == {"random", "tfidf", "tfidf_hypothesis"}
    prem = ds.frame.set_index("id")["premise"]
    assert not set(prem[setup.train_ids]) & set(prem[setup.eval_ids])  # a premise never on both sides
    assert setup.strength["tfidf_hypothesis"] > setup.strength["random"]
    st = setup.run(seeds=(0,))
    assert st.agreement is not None and st.agreement.info["n_used"] == len(setup.eval_y)
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:  # the optional extra is missing: asking for embeddings says what to install
        with pytest.raises(ImportError, match="sentence-transformers"):
            text_adversary_setup(ds, tfidf=False, embeddings=True)


# -- output, reading and the command line -------------------------------------------------------------------
def test_save_writes_every_table(study, tmp_path):
    out = study.save(tmp_path / "study")
    for stem in study.tables():
        assert (out / f"{stem}.parquet").is_file() and (out / f"{stem}.csv").is_file()
    back = pd.read_parquet(out / "rank_correlation.parquet")
    assert list(back["adversary"]) == list(study.rank_correlation["adversary"])
    meta = json.loads((out / "summary.json").read_text())
    assert meta["summary"]["adversaries"]["strong"]["shares"]["selected"] == pytest.approx(
        study.category_table.loc["strong", "selected"], abs=1e-6
    )
    assert meta["reading"] == study.reading()


def test_reading_is_built_from_the_numbers(study):
    text = study.reading()
    M = study.accuracy_matrix
    expected = f"mean accuracy {M[NONE].mean():.2f} → {M['strong'].mean():.2f}"
    assert any(expected in s and "strong" in s for s in text)
    k = study.rank_correlation.set_index("adversary").loc["weak", "kendall"]
    assert any(f"{k:.2f}" in s and "Kendall's coefficient" in s for s in study_reading(study, "weak"))
    with pytest.raises(ValueError, match="no adversary 'nope'"):
        study_reading(study, "nope")


@pytest.fixture
def table_files(tmp_path, planted_pair):
    train_X, y, eval_X, ey, _ = planted_pair
    pd.DataFrame({"id": [f"t{i}" for i in range(len(y))], "label": y}).to_csv(tmp_path / "train.csv", index=False)
    ann = [[lab, lab, "cat"] for lab in ey]
    src = ["random_subset" if i % 3 else "chaosnli" for i in range(len(ey))]
    pd.DataFrame({"id": [f"e{i}" for i in range(len(ey))], "label": ey, "ann": ann, "src": src}).to_json(
        tmp_path / "eval.jsonl", orient="records", lines=True
    )
    for name in ("weak", "strong"):
        np.save(tmp_path / f"{name}_train.npy", train_X[name])
        np.save(tmp_path / f"{name}_eval.npy", eval_X[name])
    return tmp_path


def _parser():
    parser = argparse.ArgumentParser(prog="aflite")
    add_cli(parser.add_subparsers(dest="command"), "eval-filter")
    return parser


def test_cli_writes_its_files(table_files, capsys):
    d = table_files
    args = _parser().parse_args(
        [
            "eval-filter",
            "--train-table",
            str(d / "train.csv"),
            "--eval-table",
            str(d / "eval.jsonl"),
            "--id-column",
            "id",
            "--adversary",
            f"weak={d / 'weak_train.npy'}:{d / 'weak_eval.npy'}",
            "--adversary",
            f"strong={d / 'strong_train.npy'}:{d / 'strong_eval.npy'}",
            "--evaluated",
            "logistic:weak",
            "--evaluated",
            "knn:strong",
            "--seeds",
            "0,1",
            "--target-size",
            "300",
            "--train-size",
            "150",
            "--slice-size",
            "60",
            "--partitions",
            "16",
            "--ensemble",
            "--annotator-column",
            "ann",
            "--annotator-source-column",
            "src",
            "--out",
            str(d / "out"),
            "--quiet",
        ]
    )
    assert args.func(args) == 0
    line = capsys.readouterr().out.strip().splitlines()
    assert len(line) == 1
    summary = json.loads(line[0])
    assert set(summary["adversaries"]) == {"weak", "strong", "ensemble(weak+strong)"}
    assert summary["agreement"]["n_excluded_by_source"] == 100
    for stem in (
        "categories",
        "category_summary",
        "accuracies",
        "accuracy_matrix",
        "rankings",
        "rank_correlation",
        "same_representation",
        "agreement",
        "runs",
    ):
        assert (d / "out" / f"{stem}.parquet").is_file() and (d / "out" / f"{stem}.csv").is_file()
    cats = pd.read_parquet(d / "out" / "categories.parquet")
    assert cats["id"].iloc[0] == "e0" and len(cats) == 3 * 2 * 300
    assert (d / "out" / "summary.json").is_file()


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--target-size", "300"], "--train-size option is required"),
        (
            ["--target-size", "300", "--train-size", "150", "--slice-size", "60", "--adversary", "weak"],
            "must give files",
        ),
        (
            ["--target-size", "300", "--train-size", "150", "--slice-size", "60", "--evaluated", "logistic"],
            "FAMILY:REPRESENTATION",
        ),
        (["--target-size", "300", "--train-size", "150", "--slice-size", "60", "--seeds", "a,b"], "--seeds option"),
    ],
)
def test_cli_bad_input_raises_value_error(table_files, argv, match):
    d = table_files
    base = [
        "eval-filter",
        "--train-table",
        str(d / "train.csv"),
        "--eval-table",
        str(d / "eval.jsonl"),
        "--adversary",
        f"strong={d / 'strong_train.npy'}:{d / 'strong_eval.npy'}",
        "--out",
        str(d / "o"),
        "--quiet",
    ]
    args = _parser().parse_args(base + argv)
    with pytest.raises(ValueError, match=match):
        args.func(args)


def test_cli_main_reports_one_line_and_exit_2(table_files, capsys):
    from aflite_core import cli

    code = cli.main(["eval-filter", "--digits", "--train-table", "x.csv", "--out", str(table_files / "o")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--digits option cannot be combined" in err[0]


# -- validation ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"seeds": ()}, "'seeds' parameter of adversary_study must be a non-empty sequence"),
        ({"seeds": (0, 0)}, "distinct ints"),
        ({"adversaries": ["nope"]}, "'adversaries' parameter of adversary_study"),
        ({"evaluated": [("svm", "weak")]}, "'evaluated' parameter of adversary_study"),
        ({"evaluated": [("logistic", "weak"), ("logistic", "weak")]}, "names the model 'logistic:weak' twice"),
        ({"ensemble": ["weak"]}, "at least 2 adversaries"),
        ({"train_size": 400}, "'train_size' parameter of adversary_study"),
        ({"annotator_labels": [["cat"]] * 3}, "one entry per row"),
        ({"annotator_source": ["x"] * 300}, "needs 'annotator_labels'"),
    ],
)
def test_invalid_parameters(planted_pair, kw, match):
    train_X, y, eval_X, ey, _ = planted_pair
    params = {**KW, **kw}
    with pytest.raises(ValueError, match=match):
        adversary_study(train_X, y, eval_X, ey, **params)


def test_an_adversary_cannot_be_called_none(planted_pair):
    train_X, y, eval_X, ey, _ = planted_pair
    with pytest.raises(ValueError, match="must not name an adversary 'none'"):
        adversary_study({"none": train_X["weak"]}, y, {"none": eval_X["weak"]}, ey, **KW)


def test_eval_matrices_must_match(planted_pair):
    train_X, y, eval_X, ey, _ = planted_pair
    with pytest.raises(ValueError, match=r"'eval_X' parameter of adversary_study must hold the representation 'weak'"):
        adversary_study(train_X, y, {"strong": eval_X["strong"]}, ey, **KW)
    with pytest.raises(ValueError, match=r"eval_X\['weak'\].*must have 8 columns"):
        adversary_study(train_X, y, {**eval_X, "weak": eval_X["weak"][:, :3]}, ey, **KW)


def test_callback_can_stop_the_study(planted_pair):
    train_X, y, eval_X, ey, _ = planted_pair
    seen = []

    def stop_after_first_run(progress):
        seen.append((progress.stage, progress.adversary))
        return progress.stage != "aflite"

    st = adversary_study(
        train_X, y, eval_X, ey, seeds=(0, 1), evaluated=[("logistic", "weak")], callback=stop_after_first_run, **KW
    )
    assert seen == [("evaluated models", None), ("aflite", "weak")]
    assert not st.params["complete"] and list(st.runs_detail) == [("weak", 0)]
    assert list(st.accuracy_matrix.columns) == [NONE, "weak", "strong"] and st.accuracy_matrix["strong"].isna().all()


# -- real NLI data -------------------------------------------------------------------------------------------
@pytest.mark.shared_data
def test_snli_round_one_removals_have_higher_annotator_agreement_than_selected_rows(shared_data):
    from aflite_core.data.nli import nli_dataset_from_records

    frame = pd.read_json(shared_data / "snli_sample.jsonl", lines=True)
    feats = {
        "hypothesis": np.load(shared_data / "snli_sample.hyp_minilm.npy"),
        "pair": np.load(shared_data / "snli_sample.pair_minilm.npy"),
    }
    ds = nli_dataset_from_records(frame, name="snli", features=feats, text_features=False)
    setup = text_adversary_setup(
        ds,
        tfidf=False,
        embeddings=False,
        annotator_column="annotator_labels",
        annotator_source_column="annotator_labels_src",
        evaluated=[("logistic", "hypothesis"), ("logistic", "pair")],
        random_state=0,
    )
    prem = ds.frame.set_index("id")["premise"]
    assert not set(prem[setup.train_ids]) & set(prem[setup.eval_ids])  # split by premise
    st = setup.run(seeds=(0,))
    info = st.agreement.info
    src = frame.set_index("id").loc[setup.eval_ids, "annotator_labels_src"]
    assert info["n_used"] == int((src == "random_subset").sum()) > 300
    assert info["n_excluded_by_source"] == int((src == "chaosnli").sum()) > 0
    table = st.agreement.table()
    n = st.agreement.summary.set_index(["adversary", "category"])["n_rows_mean"]
    for a in ("hypothesis", "pair"):
        assert n[(a, EVAL_CATEGORIES[0])] >= 80 and n[(a, "selected")] >= 200
        # the paper's §5.3: round-1 removals have high agreement, the selected rows lower
        assert table.loc[a, EVAL_CATEGORIES[0]] > table.loc[a, "selected"] + 0.02
        assert st.accuracy_matrix.loc[f"logistic:{a}", a] < st.accuracy_matrix.loc[f"logistic:{a}", NONE]


def test_on_step_stops_inside_a_run_and_the_partial_study_still_reads(planted_pair):
    """Issue #17: on_step sees every piece of work; False inside a run leaves that run out and ends the study."""
    train_X, y, eval_X, ey, _ = planted_pair
    seen = []

    def stop_in_second_run(s):
        seen.append(s)
        return not (s.adversary == "weak" and s.seed == 1 and s.round == 1 and s.phase == "predict")

    st = adversary_study(
        train_X, y, eval_X, ey, seeds=(0, 1), evaluated=[("logistic", "weak")], on_step=stop_in_second_run, **KW
    )
    assert not st.params["complete"] and list(st.runs_detail) == [("weak", 0)]
    assert seen[-1].phase == "predict" and seen[-1].step == 3 and seen[-1].n_steps == 5
    first_run = [s for s in seen if s.step == 2]
    assert [s.share for s in first_run] == sorted(s.share for s in first_run) and first_run[-1].share > 0.3
    assert {s.phase for s in first_run} == {None, "fit", "predict"}
    assert isinstance(st.reading(), list)

    # stopped before any run: the overview has fewer than two adversaries to compare
    models = [("logistic", "weak")]
    nothing = adversary_study(
        train_X, y, eval_X, ey, seeds=(0,), evaluated=models, on_step=lambda s: s.stage != "aflite", **KW
    )
    assert len(nothing.runs) == 0 and isinstance(nothing.reading(), list)
