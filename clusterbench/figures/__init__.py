"""The papers' figures: one module per paper computes each figure's data, then draws it.

Each figure has a function that computes its data (arrays and small dataclasses, no matplotlib)
and a ``draw_*`` function that turns that data into a :class:`matplotlib.figure.Figure`, built
on ``Figure`` objects, never through ``pyplot``, so drawing needs no display and leaves no
global state. :func:`save_figure` writes one as PNG and PDF.

- :mod:`clusterbench.figures.clam`: CLAM Fig. 1, 4, 6, 7-10 (from clam_search records), 11, 12, 13.
- :mod:`clusterbench.figures.khatri_rao`: Khatri-Rao clustering Fig. 6, 7, 8, 9.
- :mod:`clusterbench.figures.kcprime`: k-means-C′ Fig. 1 (with S3) and S2.
- :mod:`clusterbench.figures.sr_kmeans`: SR-K-means Fig. 1 (I(X, K) per outer iteration).
"""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib.figure import Figure

from clusterbench.results import atomic_write_bytes


def save_figure(figure: Figure, folder: Path | str, stem: str, dpi: int = 150) -> list[Path]:
    """Write ``figure`` as ``<stem>.png`` and ``<stem>.pdf`` in ``folder`` (created if needed),
    each rendered in memory and renamed into place: a killed run leaves the previous file whole."""
    paths = [Path(folder) / f"{stem}.png", Path(folder) / f"{stem}.pdf"]
    for path in paths:
        buffer = io.BytesIO()
        figure.savefig(buffer, format=path.suffix[1:], dpi=dpi)
        atomic_write_bytes(path, buffer.getvalue())
    return paths
