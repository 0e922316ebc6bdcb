"""MI-D: direct maximisation of the mutual information by SGD (Jabi et al., TPAMI 2019, §5.3,
footnote 8): min −I(X, K) + R(Z), with I(X, K) of eq. 11 on the softmax classifier's posteriors.

No code exists for it (notes, A3); our choices: the same network, initialisation and phase 1 as
MI-ADM (:class:`~clusterbench.methods.MIADM`), then each step minimises −Î_B + R(Z) on a
mini-batch B of noisy posteriors p̃, Î_B = (1/|B|) Σ_i Σ_k p̃_ik log p̃_ik − Σ_k p̂_k log p̂_k with the
batch estimate p̂_k = mean_{i∈B} p̃_ik of the marginal. After each epoch I(X, K) of the clean
posteriors of all the data is recorded, and the run stops when mean (p − p_prev)² < ``tol``.
"""

from __future__ import annotations

import torch

from clusterbench.methods.mi_adm import PosteriorClusterer


def batch_mutual_information(log_p: torch.Tensor) -> torch.Tensor:
    """Î_B of eq. 11 from a batch's log-posteriors, the marginal estimated on the batch."""
    p = log_p.exp()
    prior = p.mean(0)
    return (p * log_p).sum(1).mean() - torch.xlogy(prior, prior).sum()


class MID(PosteriorClusterer):
    """MI-D (module docstring). Parameters are MI-ADM's without ``targets``."""

    def __init__(
        self,
        n_clusters=10,
        image_shape=None,
        channels=50,
        kernels=(4, 5),
        paddings=None,
        pretrain_epochs=4000,
        pretrain_patience=100,
        pretrain_lr=1e-4,
        pretrain_batch_size=100,
        pretrain_seed=None,
        init="ac_pic",
        n_init=40,
        init_epochs=500,
        init_patience=5,
        lr=1e-3,
        batch_size=100,
        epochs=500,
        tol=1e-7,
        device="auto",
        random_state=None,
        n_threads=None,
    ):
        self.n_clusters = n_clusters
        self.image_shape = image_shape
        self.channels = channels
        self.kernels = kernels
        self.paddings = paddings
        self.pretrain_epochs = pretrain_epochs
        self.pretrain_patience = pretrain_patience
        self.pretrain_lr = pretrain_lr
        self.pretrain_batch_size = pretrain_batch_size
        self.pretrain_seed = pretrain_seed
        self.init = init
        self.n_init = n_init
        self.init_epochs = init_epochs
        self.init_patience = init_patience
        self.lr = lr
        self.batch_size = batch_size
        self.epochs = epochs
        self.tol = tol
        self.device = device
        self.random_state = random_state
        self.n_threads = n_threads

    def _batch_loss(self, head, z: torch.Tensor, q: torch.Tensor, hard: bool) -> torch.Tensor:
        """Phase 1: cross-entropy to the initial labels; then −Î_B (footnote 8)."""
        if hard:
            return self._cross_entropy(head, z, q)
        return -batch_mutual_information(torch.log_softmax(head(z), dim=1))

    def _update(self, head, z: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """No target step: the clean posteriors, for the stopping rule and the record."""
        p = self._posteriors(head, z)
        return p, p
