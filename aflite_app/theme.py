"""One visual language for every page: the kept/removed colours, class colours, labels."""

from __future__ import annotations

#: Okabe-Ito colour-blind-safe palette; blue means kept and vermillion means removed on every page.
KEPT = "#0072B2"
REMOVED = "#D55E00"
NEUTRAL = "#999999"
KEPT_REMOVED = {"kept": KEPT, "removed": REMOVED}
#: classes, in order (Okabe-Ito without the two status colours first, then a few more distinct ones)
CLASS_COLOURS = ["#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#F0E442", "#000000", "#8C564B", "#7F7F7F",
                 "#BCBD22", "#17BECF", "#1F77B4", "#9467BD"]
TAU_LINE = "#000000"
FONT = "Source Sans Pro, sans-serif"


def class_colour_map(classes) -> dict[str, str]:
    """Class name -> colour, stable for a given class order."""
    return {str(c): CLASS_COLOURS[i % len(CLASS_COLOURS)] for i, c in enumerate(classes)}


def round_colours(n_rounds: int) -> list[str]:
    """A sequential palette for 'round removed' (early rounds dark, late rounds light)."""
    import plotly.colors as pc

    if n_rounds <= 1:
        return [REMOVED]
    return pc.sample_colorscale("OrRd_r", [0.1 + 0.75 * i / (n_rounds - 1) for i in range(n_rounds)])
