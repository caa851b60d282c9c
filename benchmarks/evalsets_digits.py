"""The README's "Evaluation sets" figures: the digits adversary study (Phang et al.), measured the paper's way.

Runs ``digits_adversary_setup().run()`` (the study ``python -m aflite_core eval-filter --digits`` runs: 1,006
training / 432 evaluation rows, target 400, t 100, k 100, τ 0.75, m 64, 3 seeds) and prints

1. each adversary's strength measured independently of filtering (its backbone's accuracy on the evaluation rows,
   Wilson 95 % interval) next to what round 1 does;
2. how much the MLP backbones' accuracy moves with their seed (8 refits each);
3. the accuracy of every evaluated model on each evaluation set, with the rows selected;
4. the models sorted on each evaluation set (the paper's Figure 3), with Kendall's coefficient and its discordant
   pairs (our addition);
5. the shared-backbone comparison (Figure 4) and the same-Φ upper bound;
6. the controls, in one table with the results: the mean accuracy drop and Kendall's coefficient, as run and at
   equal depth (each adversary's N_min least predictable rows), beside the same statistics on 1,000 random
   evaluation subsets of the same size (median [5-95 %], the observed value's percentile, one-sided p), and
   every model's drop with its percentile.

    python benchmarks/evalsets_digits.py [--seeds 0,1,2]
    python benchmarks/evalsets_digits.py --tiny     # one seed, 2 refits: checks that it runs (tests/test_benchmarks.py)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aflite_core.evalsets import NONE, digits_adversary_setup
from aflite_core.measures.adversary_strength import backbone_strength, digits_backbones

pd.set_option("display.width", 200)
pd.set_option("display.max_columns", 20)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--refits", type=int, default=8, help="seeds of the MLP backbones' refits (section 2)")
    ap.add_argument("--subsets", type=int, default=1000, help="random evaluation subsets of the null (section 6)")
    ap.add_argument("--tiny", action="store_true", help="seed 0 and 2 refits: every section in seconds")
    args = ap.parse_args()
    if args.tiny:
        args.seeds, args.refits, args.subsets = "0", 2, 100
    seeds = tuple(int(s) for s in args.seeds.split(","))
    t0 = time.perf_counter()
    setup = digits_adversary_setup()
    study = setup.run(seeds=seeds, n_null_subsets=args.subsets)
    print(
        f"digits: {len(setup.train_y):,} training / {len(setup.eval_y):,} evaluation rows; AFLite {setup.params}; "
        f"seeds {seeds}; {time.perf_counter() - t0:.0f} s\n"
    )

    st = study.strength.copy()
    cats = study.category_table
    st["strength"] = [f"{a:.3f} [{lo:.3f}, {hi:.3f}]" for a, lo, hi in zip(st["accuracy"], st["ci_low"], st["ci_high"])]
    st["removed in round 1"] = [f"{cats.loc[a, 'removed in round 1']:.1%}" for a in st["adversary"]]
    st["removed later"] = [f"{cats.loc[a, 'removed later']:.1%}" for a in st["adversary"]]
    st["selected"] = [f"{cats.loc[a, 'selected']:.1%}" for a in st["adversary"]]
    st["round-1 mean p"] = st["round1_mean_p"].map("{:.3f}".format)
    print("1. Strength (backbone accuracy on the evaluation rows, Wilson 95 %) and round 1 (mean over seeds)")
    cols = ["adversary", "backbone", "strength", "round-1 mean p", "removed in round 1", "removed later", "selected"]
    print(st[cols].to_string(index=False))
    print()

    print(f"2. The MLP backbones refitted with {args.refits} other seeds (accuracy on the evaluation rows)")
    for a in ("mlp_small", "mlp"):
        accs = []
        for s in range(args.refits):
            t = backbone_strength(
                setup.train_X, setup.train_y, setup.eval_X, setup.eval_y, digits_backbones([a], random_state=100 + s)
            )
            accs.append(float(t["accuracy"].iloc[0]))
        print(f"   {a}: mean {np.mean(accs):.3f}, sd {np.std(accs, ddof=1):.3f}, range {min(accs):.3f}-{max(accs):.3f}")
    print()

    M = study.accuracy_matrix
    order = list(M[NONE].sort_values().index)
    rows = study.category_summary.query("category == 'selected'").set_index("adversary")["n_rows_mean"]
    print("3. Accuracy (mean over seeds) on the full evaluation set and on each adversary's selected rows")
    print("   rows selected (mean): " + ", ".join(f"{a} {rows[a]:.0f}" for a in study.adversaries))
    print(M.loc[order].round(3).to_string())
    means = M.mean(axis=0)
    print("   mean over the models: " + ", ".join(f"{c} {means[c]:.3f}" for c in M.columns))
    summ = study.accuracy_summary
    widths = (summ[summ["adversary"] != NONE]["ci_high"] - summ[summ["adversary"] != NONE]["ci_low"]) / 2
    print(f"   95 % binomial half-widths on the selected rows: {widths.min():.2f}-{widths.max():.2f}")
    print()

    print("4. The models sorted worst → best on each evaluation set (Figure 3); Kendall's coefficient (ours)")
    lists = {}
    for c in [NONE, *study.adversaries]:
        col = M[c].sort_values(kind="stable")
        lists[c] = [f"{m} {v:.2f}" for m, v in col.items()]
    print(pd.DataFrame(lists).to_string(index=False))
    corr = study.rank_correlation.set_index("adversary")
    for a in study.adversaries:
        r = corr.loc[a]
        print(
            f"   {a}: Kendall's coefficient {r['kendall']:.2f} (seeds {r['kendall_seed_min']:.2f}-"
            f"{r['kendall_seed_max']:.2f}); {int(r['discordant_pairs'])} of {int(r['n_pairs'])} pairs swap order; "
            f"random subsets of that size {r['kendall_null_median']:.2f} [{r['kendall_null_low']:.2f}, "
            f"{r['kendall_null_high']:.2f}]: percentile {r['kendall_percentile']:.0f}, p vs random "
            f"{r['kendall_p_vs_random']:.3f} (scipy's p vs a coefficient of 0: {r['kendall_p_vs_zero']:.3f})"
        )
    print()

    same = study.same_representation
    print("5. Figure 4: the adversary's backbone (trained separately) and models on its very Φ (upper bound)")
    show = same[
        ["adversary", "relation", "model", "rank_unfiltered", "rank_filtered", "accuracy_drop", "others_mean_drop"]
    ]
    print(show.round(3).to_string(index=False))
    print()

    ctl = study.controls
    print(
        f"6. Controls: {int(ctl['n_subsets'].max())} random evaluation subsets of the same size per row; equal depth = "
        f"each adversary's N_min least predictable rows (N_min per seed: {study.params['equal_depth_rows']})"
    )
    t = pd.DataFrame(
        {
            "adversary": ctl["adversary"],
            "depth": ctl["depth"],
            "rows": ctl["n_rows_mean"].map("{:.0f}".format),
            "mean drop (seed sd)": [f"{m:.3f} ({sd:.3f})" for m, sd in zip(ctl["mean_drop"], ctl["mean_drop_seed_sd"])],
            "random [5-95 %]": [
                f"{m:.3f} [{lo:.3f}, {hi:.3f}]"
                for m, lo, hi in zip(
                    ctl["mean_drop_null_median"], ctl["mean_drop_null_low"], ctl["mean_drop_null_high"]
                )
            ],
            "pct": ctl["mean_drop_percentile"].map("{:.1f}".format),
            "p": ctl["mean_drop_p_vs_random"].map("{:.3f}".format),
            "Kendall (seed sd)": [f"{k:.2f} ({sd:.2f})" for k, sd in zip(ctl["kendall"], ctl["kendall_seed_sd"])],
            "random K [5-95 %]": [
                f"{m:.2f} [{lo:.2f}, {hi:.2f}]"
                for m, lo, hi in zip(ctl["kendall_null_median"], ctl["kendall_null_low"], ctl["kendall_null_high"])
            ],
            "K pct": ctl["kendall_percentile"].map("{:.0f}".format),
            "K p": ctl["kendall_p_vs_random"].map("{:.3f}".format),
        }
    )
    print(t.to_string(index=False))
    dc = study.drop_controls
    for depth in dc["depth"].unique():
        d = dc[dc["depth"] == depth]
        print(
            f"   every model's own drop ({depth}): percentiles among random subsets {d['percentile'].min():.1f}-"
            f"{d['percentile'].max():.1f}; {(d['p_vs_random'] < 0.05).sum()} of {len(d)} model x adversary drops "
            f"beyond random at p < 0.05 (smallest p possible: {1 / (1 + int(ctl['n_subsets'].max())):.3f})"
        )


if __name__ == "__main__":
    main()
