"""The papers' figures: one module per paper computes each figure's data, then draws it.

Each figure has a function that computes its data (arrays and small dataclasses, no matplotlib)
and a ``draw_*`` function that turns that data into a :class:`matplotlib.figure.Figure`, built
on ``Figure`` objects, never through ``pyplot``, so drawing needs no display and leaves no
global state. :func:`save_figure` writes one as PNG and PDF.

- :mod:`clusterbench.figures.clam`: CLAM Fig. 1, 4, 6, 7-10 (from clam_search records), 11, 12, 13.
- :mod:`clusterbench.figures.khatri_rao`: Khatri-Rao clustering Fig. 6, 7, 8, 9.
- :mod:`clusterbench.figures.kcprime`: k-means-C′ Fig. 1 (with S3) and S2.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure


def save_figure(figure: Figure, folder: Path | str, stem: str, dpi: int = 150) -> list[Path]:
    """Write ``figure`` as ``<stem>.png`` and ``<stem>.pdf`` in ``folder`` (created if needed)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{stem}.png", folder / f"{stem}.pdf"]
    for path in paths:
        figure.savefig(path, dpi=dpi)
    return paths
