"""Lazy-k-means (Har-Peled & Sadri) as a partial truncated variational E-step (Lücke & Forster, §4).

A point leaves its cluster c̃ for its nearest centre c only when that is markedly closer,
(1 + ε)‖y − μ_c‖ < ‖y − μ_c̃‖ (eq. 19 as intended: the printed inequality has the sides swapped,
which would never move a point to a nearer centre). Every such move raises the free energy
(eq. 7, Prop. 1), so lazy-k-means increases the same free energy as k-means without maximising it
over the sets (Corollary 1 does not apply); the centre updates are Lloyd's and σ² decouples as
for C′ = 1 (Suppl. D). ε = 0 is k-means. The first E-step, at the seeds, assigns every point to
its nearest centre. The iteration, bookkeeping (``history_`` with eq. 7, 13 and 17) and
attributes are those of :mod:`clusterbench.methods.kmeans_cprime`; ``labels_`` is the lazy
assignment, which need not be the nearest centre, while ``predict`` gives every point, new or
seen, its nearest centre (a new point holds no cluster to be lazy about), so ``fit_predict(X)``
and ``fit(X).predict(X)`` can differ.
"""

from __future__ import annotations

import torch

from clusterbench.methods.kmeans_cprime import _TruncatedEM
from clusterbench.validation import NON_NEGATIVE_REAL, Constraint


class LazyKMeans(_TruncatedEM):
    """Lazy-k-means: k-means that moves a point only to a centre (1 + ε) times closer (eq. 19).

    Parameters as :class:`~clusterbench.methods.kmeans_cprime.KMeansCPrime` with ``epsilon``
    (float ≥ 0; the paper's Table S1: 0.1) in place of ``c_prime``.

    ``labels_`` is the lazy assignment, ``predict`` the nearest centre, so on the training data
    the two can differ when ε > 0 (module docstring).
    """

    def __init__(
        self,
        n_clusters: int = 8,
        epsilon: float = 0.1,
        init="k-means++",
        n_local_trials: int | None = None,
        n_init: int = 1,
        max_iter: int = 300,
        tol: float = 1e-6,
        random_state=None,
        device: str = "auto",
        n_threads: int | None = 1,
    ):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.init = init
        self.n_local_trials = n_local_trials
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.device = device
        self.n_threads = n_threads

    def _extra_checks(self) -> list[tuple[str, Constraint]]:
        return [("epsilon", NON_NEGATIVE_REAL)]

    def _e_step(self, scores: torch.Tensor, nearest: torch.Tensor, held: torch.Tensor | None, norms, sigma2):
        if held is None:
            return nearest[:, None], nearest
        # Eq. 19 squared: (1 + ε)² ‖y − μ_nearest‖² < ‖y − μ_current‖².
        current, twice_variance = held[:, 0], 2 * sigma2[:, None]
        closer = (1.0 + self.epsilon) ** 2 * (
            norms - twice_variance * scores.gather(1, nearest[:, None])[:, 0]
        )
        moves = closer < norms - twice_variance * scores.gather(1, held)[:, 0]
        assigned = torch.where(moves, nearest, current)
        return assigned[:, None], assigned
