"""The supervised baseline of PRCut Table 1 ("CE"): PRCut's encoder trained as a classifier.

The same MLP as :class:`clusterbench.methods.PRCut` (§5: ``n_layers`` linear layers of ``hidden``
units, GELU between, first and last weight-normalised), its outputs the classes of ``y``, trained
with cross-entropy by mini-batch Adam (or RMSProp) over shuffled epochs. ``labels_`` is the
predicted class of each training point: Table 1 compares it with PRCut's clustering of the same
points under the label similarity (the paper does not say which split its CE row scores; the
notes, A1, suspect held-out accuracy). The paper gives no optimiser settings for CE: the defaults
(Adam, lr 1e-3, batches of 256, 20 epochs) are ours.

A harness must call ``fit(X, y)``: the estimator is a classifier (scikit-learn's tags say its
target is required).
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from clusterbench import graphs
from clusterbench.errors import HyperparameterError
from clusterbench.methods._seeding import resolve_seed
from clusterbench.methods.prcut import OPTIMIZERS, PREDICT_CHUNK, PRCut, build_encoder
from clusterbench.progress import progress_bar
from clusterbench.validation import (
    BOOLEAN,
    NON_NEGATIVE_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
    Constraint,
    TorchHyperparameters,
    check_fit_input,
    check_predict_input,
    flush_denormals,
    one_of,
    resolve_device,
    torch_threads,
)


class SupervisedMLP(TorchHyperparameters, ClassifierMixin, BaseEstimator):
    """PRCut's MLP trained with cross-entropy on the labels (PRCut Table 1's "CE" rows).

    Parameters
    ----------
    n_layers, hidden, weight_norm : the encoder, as PRCut's.
    optimizer : 'adam' or 'rmsprop'; lr, weight_decay : its settings.
    batch_size : points per step; epochs : passes over the shuffled data.
    device, random_state, n_threads : as PRCut's.

    Attributes
    ----------
    classes_ : the labels of ``y``; labels_ : the predicted class of each training point.
    loss_ : (epochs,) mean training cross-entropy of each epoch.
    """

    def __init__(
        self,
        n_layers=3,
        hidden=512,
        weight_norm=True,
        optimizer="adam",
        lr=1e-3,
        weight_decay=0.0,
        batch_size=256,
        epochs=20,
        device="auto",
        random_state=None,
        n_threads=1,
    ):
        self.n_layers = n_layers
        self.hidden = hidden
        self.weight_norm = weight_norm
        self.optimizer = optimizer
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.epochs = epochs
        self.device = device
        self.random_state = random_state
        self.n_threads = n_threads

    reports_progress = PRCut.reports_progress  # a bar of its epochs, not the runner's of seconds
    # Pickled as PRCut is: with the encoder's state dict (weight-normalised modules do not pickle).
    __getstate__ = PRCut.__getstate__
    __setstate__ = PRCut.__setstate__

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [
            ("n_layers", POSITIVE_INT),
            ("hidden", POSITIVE_INT),
            ("weight_norm", BOOLEAN),
            ("optimizer", one_of(OPTIMIZERS)),
            ("lr", POSITIVE_REAL),
            ("weight_decay", NON_NEGATIVE_REAL),
            ("batch_size", POSITIVE_INT),
            ("epochs", POSITIVE_INT),
        ]

    def fit(self, X, y=None):
        """Train on ``X`` and its labels ``y`` (required)."""
        self._validate_params()
        name = type(self).__name__
        if y is None:
            raise HyperparameterError(f"{name} is supervised: it needs the true labels, fit(X, y)")
        X = graphs.check_finite(check_fit_input(self, X, ensure_all_finite=False), name)
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:  # one column (df[['label']]): as scikit-learn takes it
            y = column_or_1d(y, warn=True)
        if y.ndim != 1 or len(y) != len(X):
            raise ValueError(
                f"{name}: y must be one label per point, got shape {y.shape} for {len(X)} points"
            )
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        with torch_threads(self.n_threads), flush_denormals():
            self.device_ = resolve_device(self.device)
            seed = resolve_seed(self.random_state)
            device = self.device_
            data = torch.as_tensor(X, dtype=torch.float32, device=device)
            target = torch.as_tensor(codes.reshape(-1), dtype=torch.long, device=device)
            self.network_ = build_encoder(
                X.shape[1], len(self.classes_), self.n_layers, self.hidden, self.weight_norm, seed, device
            )
            kind = torch.optim.RMSprop if self.optimizer == "rmsprop" else torch.optim.Adam
            optimizer = kind(self.network_.parameters(), lr=self.lr, weight_decay=self.weight_decay)
            generator = torch.Generator(device=device).manual_seed(seed % 2**63)
            n, losses = len(data), []
            bar = progress_bar(range(self.epochs), desc=name, unit="epoch", leave=False)
            for _ in bar:
                order = torch.randperm(n, generator=generator, device=device)
                total = torch.zeros((), device=device)
                for start in range(0, n, self.batch_size):
                    batch = order[start : start + self.batch_size]
                    loss = torch.nn.functional.cross_entropy(self.network_(data[batch]), target[batch])
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                    total += loss.detach() * len(batch)
                losses.append(float(total) / n)
                bar.set_postfix(loss=f"{losses[-1]:.4g}", refresh=False)
            bar.close()
            self.loss_ = np.asarray(losses)
            self.labels_ = self._predict_codes(data)
            self.labels_ = self.classes_[self.labels_]
        return self

    @torch.no_grad()
    def _predict_codes(self, data: torch.Tensor) -> np.ndarray:
        self.network_.eval()
        codes = [
            self.network_(data[s : s + PREDICT_CHUNK]).argmax(1) for s in range(0, len(data), PREDICT_CHUNK)
        ]
        self.network_.train()
        return torch.cat(codes).cpu().numpy()

    def predict(self, X) -> np.ndarray:
        """The predicted class of each point of ``X``."""
        X = check_predict_input(self, X, "network_")
        with torch_threads(self.n_threads):
            return self.classes_[
                self._predict_codes(torch.as_tensor(X, dtype=torch.float32, device=self.device_))
            ]
