"""MI-ADM: mutual-information clustering by an alternating direction method (Jabi et al., TPAMI
2019, §3, eq. 13–14 and 45), and DEPICT (Ghasedi Dizaji et al. 2017; SR paper eq. 6, 9) as its
``targets='depict'`` variant.

The posterior is a softmax classifier on the embedding, p_i = softmax(W z_i + b) (K → K, W
initialised from the initial clusters' means, b = 0, as the DEPICT code does). Alternation, on
the SR-K-means code's protocol (:class:`~clusterbench.methods.sr_kmeans.DEPICTClusterer`):

- network step (eq. 45): a pass minimising −(1/N) Σ_i Σ_k q_ik log p̃_ik + R(Z) with the targets Q
  fixed, p̃ the posterior of the noisy embedding;
- target step, on the clean posteriors P of all the data:
  ``'mi'`` q_ik ∝ p_ik² / (Σ_i' p_i'k²)^{1/2} (eq. 14, MI-ADM);
  ``'depict'`` q_ik ∝ p_ik / (Σ_i' p_i'k)^{1/2} (eq. 9, the DEPICT paper);
  ``'depict_code'`` q_ik ∝ p_ik² / Σ_i' p_i'k (DEPICT's released code, DEC-style, SR eq. 15).

Labels are argmax_k p_ik of the clean embedding.
"""

from __future__ import annotations

import torch
from torch import nn

from clusterbench.methods.sr_kmeans import DEPICTClusterer
from clusterbench.validation import Constraint, one_of

TARGETS = ("mi", "depict", "depict_code")


def adm_targets(p: torch.Tensor, kind: str = "mi") -> torch.Tensor:
    """The target step's closed form for posteriors P (n, K): eq. 14 (``'mi'``), eq. 9
    (``'depict'``) or the DEPICT code's p²/Σp (``'depict_code'``), each row normalised."""
    if kind == "mi":
        weight = p.square() / p.square().sum(0).sqrt()
    elif kind == "depict":
        weight = p / p.sum(0).sqrt()
    else:
        weight = p.square() / p.sum(0)
    return weight / weight.sum(1, keepdim=True)


class PosteriorClusterer(DEPICTClusterer):
    """A DEPICT-protocol method whose head is the softmax classifier (MI-ADM, MI-D)."""

    def _head(self, theta: torch.Tensor) -> nn.Module:
        # skip_init: both tensors are set below, and a default init would draw from (and advance)
        # the caller's global torch generator.
        classifier = nn.utils.skip_init(nn.Linear, self.n_clusters, self.n_clusters, device=self.device_)
        with torch.no_grad():  # logits z·θ_k: the initial clusters' means as the class directions
            classifier.weight.copy_(theta)
            classifier.bias.zero_()
        return classifier

    def _fitted(self, head) -> None:
        self.classifier_weights_ = head.weight.detach().double().cpu().numpy()

    def _cross_entropy(self, head, z: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """Eq. 45's first term (eq. 8): −mean_i Σ_k q_ik log p_ik."""
        return -(q * torch.log_softmax(head(z), dim=1)).sum(1).mean()

    @torch.no_grad()
    def _posteriors(self, head, z: torch.Tensor) -> torch.Tensor:
        return torch.softmax(head(z), dim=1)

    @torch.no_grad()
    def _labels(self, head, z: torch.Tensor) -> torch.Tensor:
        return head(z).argmax(1)


class MIADM(PosteriorClusterer):
    """MI-ADM (module docstring; eq. 13, 14, 45), or DEPICT with ``targets='depict'``.

    Parameters are SR-K-means' (:class:`~clusterbench.methods.SRKMeans`) without ``lam`` and
    ``labels_by``, plus ``targets`` ('mi' | 'depict' | 'depict_code'). ``tol`` (1e-7) is the DEPICT
    code's stopping threshold on mean (q − q_prev)²; ``lr`` 1e-3 the SR paper's.
    """

    def __init__(
        self,
        n_clusters=10,
        targets="mi",
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
        self.targets = targets
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

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [*super()._checks(), ("targets", one_of(TARGETS))]

    def _batch_loss(self, head, z: torch.Tensor, q: torch.Tensor, hard: bool) -> torch.Tensor:
        return self._cross_entropy(head, z, q)

    def _update(self, head, z: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The target step on the clean posteriors P: the targets, and P (whose I(X, K) is kept)."""
        p = self._posteriors(head, z)
        return adm_targets(p, self.targets), p
