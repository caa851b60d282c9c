"""``aflite ood``: do models trained on AFLite-filtered data generalise better out of distribution? (ICML §5)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd

from ..experiments.ood import OOD_DEFAULTS, REAL_OOD_DEFAULTS, OODResult, default_shared_dir, ood_experiment, ood_real
from ._common import int_list, print_json

__all__ = ["add_cli", "format_bias_table", "format_ood_table", "format_paired_table"]


def format_ood_table(result: OODResult) -> str:
    """The experiment as text: one line per dataset, model and training set, one column per test set.

    The last column is the accuracy lost from the first test set (in distribution) to the last one (the
    strongest shift: ``flipped_bias``, or ``transfer`` for the real data); negative means it gained.
    """
    t = result.table
    tests = list(dict.fromkeys(t["test_set"]))
    keys = ["dataset", "model", "train_set"]
    wide = t.pivot_table(index=keys, columns="test_set", values="accuracy", sort=False)
    spread = t.pivot_table(index=keys, columns="test_set", values="accuracy_std", sort=False)
    n_train = t.groupby(["dataset", "model", "train_set"], sort=False)["n_train"].first()
    seeds = int(t["n_seeds"].max())
    out = pd.DataFrame(index=wide.index)
    out["rows"] = n_train.reindex(wide.index).round().astype(int)
    for test in tests:
        if seeds > 1:
            out[test] = [f"{a:.3f} ± {s:.3f}" for a, s in zip(wide[test], spread[test])]
        else:
            out[test] = wide[test].map("{:.3f}".format)
    out[f"lost ({tests[0]} → {tests[-1]})"] = (wide[tests[0]] - wide[tests[-1]]).map("{:+.3f}".format)
    return out.reset_index().to_string(index=False)


#: the order the paired table lists the test sets: the fairest shift first (no_bias), then the others
_PAIRED_ORDER = ("no_bias", "transfer", "flipped_bias", "in_distribution")


def format_paired_table(result: OODResult) -> str:
    """The paired differences over seeds as text: mean ± sd, seeds in each direction, paired t-test and Wilcoxon.

    One line per dataset, model, test set (``no_bias`` / ``transfer`` first) and comparison.
    """
    p = result.paired()
    if not len(p):
        return ""
    order = {t: i for i, t in enumerate(_PAIRED_ORDER)}
    p = p.assign(_t=p["test_set"].map(order).fillna(len(order)))
    p = p.sort_values(["dataset", "model", "_t", "comparison"], kind="stable").drop(columns="_t")
    ds_order = {d: i for i, d in enumerate(dict.fromkeys(result.table["dataset"]))}
    p = p.sort_values("dataset", key=lambda c: c.map(ds_order), kind="stable")
    out = pd.DataFrame(
        {
            "dataset": p["dataset"],
            "model": p["model"],
            "test_set": p["test_set"],
            "comparison": p["comparison"],
            "difference": [f"{m:+.3f} ± {s:.3f}" for m, s in zip(p["mean"], p["sd"])],
            "seeds + / − / =": [f"{a} / {b} / {c}" for a, b, c in zip(p["n_positive"], p["n_negative"], p["n_tied"])],
            "paired t p": p["t_p"].map(lambda x: "" if pd.isna(x) else f"{x:.3g}"),
            "Wilcoxon p": p["wilcoxon_p"].map(lambda x: "" if pd.isna(x) else f"{x:.3g}"),
        }
    )
    return out.to_string(index=False)


def format_bias_table(result: OODResult) -> str:
    """Synthetic only: the bias direction's correlation with the label among each training set's unbiased rows."""
    b = result.bias_correlation
    if b is None or not len(b):
        return ""
    g = b.groupby(["dataset", "train_set"], sort=False)["correlation"]
    t = pd.DataFrame({"mean": g.mean(), "min": g.min(), "max": g.max(), "negative": g.apply(lambda s: (s < 0).sum())})
    t["cells"] = g.size()
    t = t.reset_index()
    shown = pd.DataFrame(
        {
            "dataset": t["dataset"],
            "train_set": t["train_set"],
            "correlation (mean [min, max])": [
                f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]" for m, lo, hi in zip(t["mean"], t["min"], t["max"])
            ],
            "seeds negative": [f"{n} of {c}" for n, c in zip(t["negative"], t["cells"])],
        }
    )
    aflite = b[b["train_set"] == "aflite"]["correlation"].dropna()
    tail = (
        f"\nAFLite's kept unbiased rows: {int((aflite < 0).sum())} of {len(aflite)} set × seed cells negative "
        f"({aflite.min():+.3f} to {aflite.max():+.3f})."
        if len(aflite)
        else ""
    )
    return shown.to_string(index=False) + tail


def _cmd_ood(args: argparse.Namespace) -> int:
    seeds = int_list(args.seeds, "--seeds")
    models = tuple(m.strip() for m in str(args.models).split(",") if m.strip()) if args.models else None

    def progress(step: int, total: int, what: str) -> None:
        if not args.quiet:
            sys.stderr.write(f"[{step}/{total}] {what}\n")
            sys.stderr.flush()

    if args.real:
        kw: dict[str, Any] = {"seeds": seeds, "callback": progress}
        if models:
            kw["models"] = models
        result = ood_real(args.data_dir, **kw)
        d = REAL_OOD_DEFAULTS
        head = (
            "Out of distribution, real transfer (Le Bras et al., ICML 2020, §4.1): logistic regression trained on "
            "the SNLI sample's [p, h, |p-h|, p*h] MiniLM features (all training rows / AFLite's kept rows / a "
            "random subset of the same size), tested on held-out SNLI rows (in_distribution) and on the MNLI "
            f"sample (transfer).\nAFLite (Φ = the same features): target {d['target_size']:.3g}, t {d['train_size']}, "
            f"k {d['slice_size']}, τ {d['tau']} of the SNLI training rows | seeds {list(seeds)} (mean ± sd)\n\n"
        )
    else:
        kw = {"seeds": seeds, "callback": progress}
        if models:
            kw["models"] = models
        result = ood_experiment(**kw)
        d = OOD_DEFAULTS
        head = (
            "Out of distribution, synthetic (Le Bras et al., ICML 2020, §5's claim on §3's circles): models trained "
            "on all rows / AFLite's kept rows / a random subset of the same size, tested on a fresh draw "
            "(in_distribution) and on the same draw with the bias features removed (no_bias) or pointing to the "
            f"other class (flipped_bias).\nAFLite: target {d['target_size']}, t {d['train_size']}, "
            f"k {d['slice_size']}, τ {d['tau']}, m 64 | 2000 training and 2000 test rows per set | seeds "
            f"{list(seeds)} (mean ± sd)\n\n"
        )
    if args.json:
        print_json(result.records())
    else:
        sys.stdout.write(head + format_ood_table(result) + "\n")
        paired = format_paired_table(result)
        if paired:
            sys.stdout.write(
                f"\nPaired over the {len(seeds)} seeds (the same split and test rows per seed): AFLite's accuracy "
                "minus the random subset's and minus all rows'; paired t-test (scipy.stats.ttest_rel, two-sided) "
                "and Wilcoxon signed-rank (two-sided)\n\n" + paired + "\n"
            )
        bias = format_bias_table(result)
        if bias:
            sys.stdout.write(
                "\nThe shortcut left in the training rows: correlation of the bias direction with the label among "
                "each training set's unbiased rows (0 = none; negative = a flipped bias is rewarded)\n\n" + bias + "\n"
            )
    return 0


def add_cli(subparsers: Any, name: str = "ood") -> None:
    """Register the ``ood`` sub-command: the out-of-distribution experiment (synthetic, or ``--real``).

    Parameters
    ----------
    subparsers : argparse subparsers action
        What ``ArgumentParser.add_subparsers()`` returned.
    name : str, default="ood"
        Command name.
    """
    p = subparsers.add_parser(
        name,
        help="out-of-distribution accuracy of models trained on original / AFLite-filtered / random data (ICML §5)",
        description="Train model families on the original training set, on AFLite's kept rows and on a random "
        "subset of the same size; test them in distribution and under a shift (synthetic: bias features removed "
        "or flipped; --real: SNLI sample -> MNLI sample).",
    )
    p.add_argument("--real", action="store_true", help="the real transfer: train on the SNLI sample, test on MNLI")
    p.add_argument(
        "--data-dir",
        default=str(default_shared_dir()),
        help="with --real: folder of snli_sample.* and mnli_sample.* ($AFLITE_SHARED_DATA or ../shared/data)",
    )
    p.add_argument("--models", default=None, help="families, comma-separated (default logistic,rbf; --real: logistic)")
    p.add_argument("--seeds", default="0,1,2,3,4,5,6,7,8,9", help="repetitions, comma-separated (default 0,...,9)")
    p.add_argument("--json", action="store_true", help="print JSON records instead of a text table")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=_cmd_ood)
