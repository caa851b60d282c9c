"""Home lists every page of the app with one line each (issue #17: it omitted Evaluation sets and Training dynamics)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_home_links_every_page_with_a_line(app_test):
    at = app_test()
    assert not at.exception
    linked = {Path(el.proto.page).stem for el in at.get("page_link")}
    pages = {Path(p).stem for p in re.findall(r'st\.Page\("(pages/\w+\.py)"', (ROOT / "app.py").read_text())}
    assert pages - {"home"} and pages - {"home"} <= linked, pages - linked
    described = [c.value for c in at.caption if len(c.value) > 20]
    assert len(described) >= len(pages - {"home"})
