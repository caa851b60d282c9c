"""The Synthetic page's notes say they describe one seed and offer the counts over seeds (issue 27), computed on
request in the background: Figure 2's narrative over 10 seeds and AFOptimum's over 10 generated instances."""

from __future__ import annotations

import pytest

from aflite_app.compute import synthetic as compute

pytestmark = pytest.mark.slow

PAGE = "pages/synthetic.py"


def _small(at):
    at.number_input(key="syn-n").set_value(300)
    at.text_input(key="syn-seps").set_value("0.3,0.8")
    next(b for b in at.button if b.label == "Apply").click().run()
    assert not at.exception, at.exception
    return at


def test_figure2_notes_say_one_seed_and_count_over_ten_seeds_on_request(app_test):
    at = _small(app_test(page=PAGE))
    assert any("describe the run shown: one seed (seed 0)" in c.value for c in at.caption)
    assert not any(m.value.startswith("**Over 10 seeds**") for m in at.markdown)  # on request only
    button = next(b for b in at.button if b.label.startswith("Count over 10 seeds"))
    button.click().run()
    assert not at.exception, at.exception
    over = next(m.value for m in at.markdown if m.value.startswith("**Over 10 seeds**"))
    assert "τ's early stop ends the run on" in over and "of 20 set × seed cells" in over  # 2 sets × 10 seeds
    assert "Seeds with at least one set below chance:" in over
    # the counts are the core's over the seeds' own tables: stored, so a rerun shows them without the button
    at.run()
    assert any(m.value.startswith("**Over 10 seeds**") for m in at.markdown)
    assert not any(b.label.startswith("Count over 10 seeds") for b in at.button)


def test_optimum_is_one_instance_and_counts_over_ten_generated_instances(app_test):
    at = app_test(page=PAGE)
    at.toggle(key="syn-optimum-on").set_value(True).run()
    assert not at.exception, at.exception
    assert any(
        "describe the run shown: one seed (seed 0)" in c.value and "generated instances" in c.value for c in at.caption
    )
    next(b for b in at.button if b.label.startswith("Count over 10 generated instances")).click().run()
    assert not at.exception, at.exception
    over = next(m.value for m in at.markdown if m.value.startswith("**Over 10 generated instances**"))
    assert "ends above slicing (B) on" in over and "of 10 instances" in over
    counts = compute.stored_seed_counts(compute.OptimumCountsSpec())
    assert counts is not None and counts.table["instance"].nunique() == 10
