"""The deep family's networks, as plain ``torch.nn.Module`` s, and its reconstruction loss.

- ``HadamardLinear``: the Khatri-Rao paper's Hadamard-decomposition reparameterisation of a
  weight matrix (§4.2, eq. 9; two factors of equal rank, §8), the building block of its
  compressed autoencoder.
- ``MLPAutoencoder``: the fully connected autoencoder of DEC (Xie et al. 2016, §3.2: d-500-500-2000-10),
  IDEC and the Khatri-Rao paper (§9.1: d-1024-512-256-10), dense or Hadamard-factored.
- ``ConvAutoencoder``: DCEC's convolutional autoencoder (Guo et al. 2017; XifengGuo/DCEC ``CAE``),
  with Keras' ``same``/``valid`` padding reproduced exactly (asymmetric where Keras pads so).
- ``reconstruction_loss``: the two reductions of the squared error the references use.

All of them run on whatever device their parameters are on; the weights they start from come from
torch's global generator, so ``torch.manual_seed`` before construction fixes them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional

from clusterbench.validation import is_int

ACTIVATIONS = {"relu": nn.ReLU, "leaky_relu": nn.LeakyReLU}
REDUCTIONS = ("mean", "sum_per_sample")


class HadamardLinear(nn.Module):
    """A linear layer whose weight is the Hadamard product of two rank-``rank`` products.

    W = (A₁B₁) ⊙ (A₂B₂), A_i ∈ R^{out×rank}, B_i ∈ R^{rank×in}: the Khatri-Rao paper's
    reparameterisation of an autoencoder weight matrix (§4.2, eq. 9 in shared/papers/khatri_rao.txt,
    which §8 cites as "Equation (6)"), applied to every compressed layer by its deep clustering
    framework (§7, "Reparameterization"), with g = 2 factors of equal rank (§8, "Choosing the number
    of Hadamard factors and their ranks"); y = x Wᵀ + b. The product can reach rank ``rank``² while
    storing 2·rank·(in + out) numbers (§4.2). §9.1 gives the ranks it used: max{10, min{√in, √out}}
    times a multiplier, on the inner layers only.

    Initialisation: the paper does not state one (§7-§9, Appendix B). The authors' code
    (KhatriRaoDeepClustering/deep_clustering_utils.py, ``HadamardLowRankLinear.reset_parameters``)
    draws every factor from a zero-mean normal with He's standard deviation for its own fan-in,
    gain √2 / √fan_in: A_i ~ N(0, 2/rank), B_i ~ N(0, 2/in); the bias is U(±1/√in), torch's
    ``nn.Linear`` default. We do the same.

    The weight is rebuilt from the factors at each forward pass (out × in, never batch-sized), so
    the gradient reaches the factors through one matrix product per factor.
    """

    def __init__(self, in_features: int, out_features: int, rank: int, bias: bool = True):
        super().__init__()
        for name, value in (("in_features", in_features), ("out_features", out_features), ("rank", rank)):
            if not is_int(value) or value < 1:
                raise ValueError(f"HadamardLinear {name} must be a positive int, got {value!r}")
        in_features, out_features, rank = int(in_features), int(out_features), int(rank)
        self.in_features = in_features
        self.out_features = out_features
        self.rank = rank
        self.A1 = nn.Parameter(torch.empty(out_features, rank))
        self.B1 = nn.Parameter(torch.empty(rank, in_features))
        self.A2 = nn.Parameter(torch.empty(out_features, rank))
        self.B2 = nn.Parameter(torch.empty(rank, in_features))
        self.bias = nn.Parameter(torch.empty(out_features)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The authors' code's draw (see the class docstring)."""
        gain = math.sqrt(2.0)  # torch.nn.init.calculate_gain("relu")
        with torch.no_grad():
            for factor in (self.A1, self.A2):
                factor.normal_(0.0, gain / math.sqrt(self.rank))
            for factor in (self.B1, self.B2):
                factor.normal_(0.0, gain / math.sqrt(self.in_features))
            if self.bias is not None:
                bound = 1.0 / math.sqrt(self.in_features)
                self.bias.uniform_(-bound, bound)

    @property
    def weight(self) -> torch.Tensor:
        """W = (A₁B₁) ⊙ (A₂B₂), out × in (eq. 9)."""
        return (self.A1 @ self.B1) * (self.A2 @ self.B2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return functional.linear(x, self.weight, self.bias)

    @property
    def n_params(self) -> int:
        """2·rank·(in + out), plus ``out`` for the bias."""
        return 2 * self.rank * (self.in_features + self.out_features) + (
            self.out_features if self.bias is not None else 0
        )

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, rank={self.rank}, "
            f"bias={self.bias is not None}"
        )


class _Autoencoder(nn.Module):
    """What every autoencoder here offers the clustering methods: ``encode``, ``decode``,
    ``forward`` returning (embedding, reconstruction), and ``n_params``; a subclass builds
    ``self.encoder`` and ``self.decoder``."""

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(embedding, reconstruction)."""
        z = self.encode(x)
        return z, self.decode(z)

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def hadamard_rank(in_features: int, out_features: int, multiplier: int) -> int:
    """The Khatri-Rao paper's rank of a compressed layer (§9.1): max{10, min{⌊√in⌋, ⌊√out⌋}} times
    the multiplier m (the OCR'd text lost the square roots; the notes, A4, show that this rule
    reproduces every ratio of Table 3's params column)."""
    return max(10, min(math.isqrt(in_features), math.isqrt(out_features))) * multiplier


def _stack(
    dims: Sequence[int], hadamard_multiplier: int | None, activation: type[nn.Module]
) -> nn.Sequential:
    """Linear layers dims[0]→…→dims[-1] with ``activation`` between them, none after the last;
    with a multiplier, the inner layers (all but the first and the last) Hadamard-factored."""
    layers: list[nn.Module] = []
    last = len(dims) - 2
    for i in range(len(dims) - 1):
        if hadamard_multiplier is None or i in (0, last):
            layers.append(nn.Linear(dims[i], dims[i + 1]))
        else:
            rank = hadamard_rank(dims[i], dims[i + 1], hadamard_multiplier)
            layers.append(HadamardLinear(dims[i], dims[i + 1], rank))
        if i < last:
            layers.append(activation())
    return nn.Sequential(*layers)


class MLPAutoencoder(_Autoencoder):
    """A fully connected autoencoder: encoder dims[0]→…→dims[-1], decoder its mirror.

    DEC (Xie et al. 2016, §3.2) and IDEC use dims = (d, 500, 500, 2000, 10) with ReLU; the
    Khatri-Rao paper (§9.1) uses (d, 1024, 512, 256, 10) through ClustPy, whose default activation
    is LeakyReLU (slope 0.01). The embedding (the encoder's last layer) and the reconstruction (the
    decoder's last layer) are linear, as in all three.

    ``hadamard_multiplier``: None gives dense ``nn.Linear`` layers (the "full" autoencoder); an
    int m gives the Khatri-Rao paper's compressed autoencoder (§7 "Reparameterization", §9.1): the
    first and last layers of the encoder and of the decoder stay dense, every inner layer becomes a
    ``HadamardLinear`` of rank :func:`hadamard_rank` (in, out, m). On (784, 1024, 512, 256, 10)
    with m = 3 that is 0.74× the dense parameters with Table 3's MNIST centroids counted.

    Initial weights: torch's ``nn.Linear`` default, U(±1/√fan_in), which is exactly DEC-keras'
    ``VarianceScaling(1/3, 'fan_in', 'uniform')``; biases U(±1/√fan_in) where Keras starts at 0.
    """

    def __init__(self, dims: Sequence[int], hadamard_multiplier: int | None = None, activation: str = "relu"):
        super().__init__()
        dims = tuple(dims)
        if len(dims) < 2 or any(not is_int(d) or d < 1 for d in dims):
            raise ValueError(f"MLPAutoencoder dims must be at least two positive ints, got {dims!r}")
        if hadamard_multiplier is not None and (not is_int(hadamard_multiplier) or hadamard_multiplier < 1):
            raise ValueError(
                "MLPAutoencoder hadamard_multiplier must be None or a positive int, "
                f"got {hadamard_multiplier!r}"
            )
        # NumPy integers (a scikit-learn grid's values) as the Python ints torch's layers expect.
        dims = tuple(int(d) for d in dims)
        hadamard_multiplier = None if hadamard_multiplier is None else int(hadamard_multiplier)
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"MLPAutoencoder activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}"
            )
        self.dims = dims
        self.hadamard_multiplier = hadamard_multiplier
        self.encoder = _stack(dims, hadamard_multiplier, ACTIVATIONS[activation])
        self.decoder = _stack(dims[::-1], hadamard_multiplier, ACTIVATIONS[activation])


def _same_padding(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """Keras/TensorFlow ``padding='same'``: output ⌈size/stride⌉, the padding split with the odd
    pixel *after* (so a stride-2 5×5 conv on an even size pads 1 before and 2 after, which torch's
    symmetric ``padding`` cannot express: the windows would sit one pixel off DCEC's)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


class KerasPaddedConv2d(nn.Module):
    """Conv2d with Keras' ``same`` (asymmetric, as TensorFlow pads) or ``valid`` padding, per axis."""

    def __init__(
        self, in_channels, out_channels, kernel, stride, same: tuple[bool, bool], size: tuple[int, int]
    ):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel, stride)
        pads = [
            _same_padding(s, kernel, stride) if keep else (0, 0) for keep, s in zip(same, size, strict=True)
        ]
        self.pad = (*pads[1], *pads[0])  # functional.pad takes the last axis (width) first
        self.out_size = tuple(
            -(-s // stride) if keep else (s - kernel) // stride + 1
            for keep, s in zip(same, size, strict=True)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(functional.pad(x, self.pad) if any(self.pad) else x)


class KerasPaddedConvTranspose2d(nn.Module):
    """Conv2DTranspose with Keras' ``same`` (output size·stride, cropped as TensorFlow crops: the
    transpose of ``_same_padding``) or ``valid`` (output (size−1)·stride + kernel) padding, per axis."""

    def __init__(
        self, in_channels, out_channels, kernel, stride, same: tuple[bool, bool], size: tuple[int, int]
    ):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, kernel, stride)
        self.out_size = tuple(
            s * stride if keep else (s - 1) * stride + kernel for keep, s in zip(same, size, strict=True)
        )
        # The padding the forward 'same' conv from out_size to size would use is cropped here.
        self.crop = tuple(
            _same_padding(o, kernel, stride)[0] if keep else 0
            for keep, o in zip(same, self.out_size, strict=True)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        full = self.conv(x)
        (top, left), (height, width) = self.crop, self.out_size
        return full[..., top : top + height, left : left + width]


class ConvAutoencoder(_Autoencoder):
    """DCEC's convolutional autoencoder (Guo et al., ICONIP 2017; XifengGuo/DCEC ``ConvAE.CAE``).

    Encoder: Conv(c₁, 5×5, stride 2, same) → Conv(c₂, 5×5, stride 2, same) → Conv(c₃, 3×3,
    stride 2, ``same`` if the size is divisible by 8 else ``valid``), each with ReLU; flatten;
    Dense(embedding), linear. Decoder: Dense(c₃·⌊H/8⌋·⌊W/8⌋) with ReLU; reshape; the transposed
    convolutions mirroring the encoder (c₂ 3×3, c₁ 5×5 with ReLU, then C 5×5 linear). Feature
    maps: 28×28 → 14 → 7 → 3 (valid); 32×32 → 16 → 8 → 4; 16×16 → 8 → 4 → 2.

    DCEC keys the third padding on the height alone (square images); here each axis takes its own,
    which is DCEC's rule on square images. A size below 8 leaves the decoder's dense layer empty;
    a size whose decoder does not come back to it (e.g. 30: 30 → 15 → 8 → 3, decoded to 28) is
    refused too, since DCEC's Keras model could not be trained on it either.

    Initial weights: Keras' defaults, which DCEC keeps: Glorot uniform kernels, zero biases.
    """

    MIN_SIZE = 8

    def __init__(
        self,
        image_shape: Sequence[int] = (1, 28, 28),
        channels: Sequence[int] = (32, 64, 128),
        embedding: int = 10,
    ):
        super().__init__()
        image_shape, channels = tuple(image_shape), tuple(channels)
        if len(image_shape) != 3 or any(not is_int(s) or s < 1 for s in image_shape):
            raise ValueError(
                f"ConvAutoencoder image_shape must be three positive ints (C, H, W), got {image_shape!r}"
            )
        if len(channels) != 3 or any(not is_int(c) or c < 1 for c in channels):
            raise ValueError(f"ConvAutoencoder channels must be three positive ints, got {channels!r}")
        if not is_int(embedding) or embedding < 1:
            raise ValueError(f"ConvAutoencoder embedding must be a positive int, got {embedding!r}")
        image_shape, channels = tuple(int(s) for s in image_shape), tuple(int(c) for c in channels)
        embedding = int(embedding)
        n_channels, height, width = image_shape
        if min(height, width) < self.MIN_SIZE:
            raise ValueError(
                f"ConvAutoencoder needs an image of at least {self.MIN_SIZE}×{self.MIN_SIZE} for its three "
                f"stride-2 convolutions, got {height}×{width}: DCEC is for images (dec or idec cluster "
                "feature vectors)"
            )
        self.image_shape = image_shape
        size = (height, width)
        third_same = (height % 8 == 0, width % 8 == 0)

        conv1 = KerasPaddedConv2d(n_channels, channels[0], 5, 2, (True, True), size)
        conv2 = KerasPaddedConv2d(channels[0], channels[1], 5, 2, (True, True), conv1.out_size)
        conv3 = KerasPaddedConv2d(channels[1], channels[2], 3, 2, third_same, conv2.out_size)
        flat = channels[2] * conv3.out_size[0] * conv3.out_size[1]
        self.encoder = nn.Sequential(
            conv1, nn.ReLU(), conv2, nn.ReLU(), conv3, nn.ReLU(), nn.Flatten(), nn.Linear(flat, embedding)
        )

        decoded_map = (height // 8, width // 8)  # DCEC's Dense(128·⌊H/8⌋²), not the encoder's map
        deconv3 = KerasPaddedConvTranspose2d(channels[2], channels[1], 3, 2, third_same, decoded_map)
        deconv2 = KerasPaddedConvTranspose2d(channels[1], channels[0], 5, 2, (True, True), deconv3.out_size)
        deconv1 = KerasPaddedConvTranspose2d(channels[0], n_channels, 5, 2, (True, True), deconv2.out_size)
        if deconv1.out_size != size:
            raise ValueError(
                f"ConvAutoencoder cannot reconstruct a {height}×{width} image: DCEC's decoder gives "
                f"{deconv1.out_size[0]}×{deconv1.out_size[1]} (sizes divisible by 8, or 4 mod 8, work)"
            )
        self.decoder = nn.Sequential(
            nn.Linear(embedding, channels[2] * decoded_map[0] * decoded_map[1]),
            nn.ReLU(),
            nn.Unflatten(1, (channels[2], *decoded_map)),
            deconv3,
            nn.ReLU(),
            deconv2,
            nn.ReLU(),
            deconv1,
        )
        self._keras_init()

    def _keras_init(self) -> None:
        for module in self.modules():
            if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear)):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)


def reconstruction_loss(x: torch.Tensor, x_hat: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """The squared reconstruction error of a batch, reduced one of the two ways the references do.

    - ``mean``: the mean over every element, Σ(x − x̂)²/(B·d): Keras' ``'mse'``, which DEC-keras,
      IDEC and DCEC train with, and ClustPy's ``torch.nn.MSELoss()`` before 2025-03-25 (the default,
      as DEC/IDEC's reference code uses it).
    - ``sum_per_sample``: the sum over each sample's features, averaged over the batch,
      Σ(x − x̂)²/B: ClustPy's ``mean_squared_error`` since commit 30fe4ae (2025-03-25), which the
      Khatri-Rao paper's runs presumably used (notes, B: "Loss-scale trap").

    The two differ by the factor d = the features per sample (784 on MNIST), which changes what a
    fixed clustering-loss weight (IDEC's 0.1) means.
    """
    if reduction not in REDUCTIONS:
        raise ValueError(
            f"reconstruction_loss reduction must be one of {list(REDUCTIONS)}, got {reduction!r}"
        )
    if x.shape != x_hat.shape:
        raise ValueError(
            f"reconstruction_loss needs x and x_hat of one shape, got {tuple(x.shape)}, {tuple(x_hat.shape)}"
        )
    squared = (x - x_hat).square()
    if reduction == "mean":
        return squared.mean()
    return squared.sum() / x.shape[0]


def _conv_out(size: int, kernel: int, stride: int, padding: int) -> int:
    return (size + 2 * padding - kernel) // stride + 1


class DEPICTAutoencoder(_Autoencoder):
    """DEPICT's convolutional denoising autoencoder (Ghasedi Dizaji et al. 2017), as the SR-K-means
    code (MOhammedJAbi/SoftKMeans) uses it (notes, deep-and-prcut.md A3).

    Encoder: input dropout → conv(``channels``, k₁, s₁, p₁) → LeakyReLU(0.01) → dropout → conv(k₂, s₂,
    p₂) → LeakyReLU → dropout → dense to ``embedding_dim`` (= K) units with tanh. Decoder: dense back
    to the second conv map with LeakyReLU, the transposed convolutions cropping the encoder's padding
    (LeakyReLU, then tanh at the output). Per-dataset settings (the code's ``dataset_settings``):
    kernels (4, 5), paddings (0, 2) for MNIST/USPS, (2, 2) for CMU-PIE; strides (2, 2).

    ``encode``/``forward`` are the clean path (no dropout); ``denoising`` is the training path: the
    noisy embedding z̃ and the loss (x − x̂)² + ``hidden_weight``·Σ_l (h_l − ĥ_l)², each a per-element
    mean, whose hidden targets h_l are the clean encoder's activations (the embedding has no term).
    Weights start Glorot-uniform with zero biases (Lasagne's defaults).
    """

    def __init__(
        self,
        image_shape: Sequence[int],
        embedding_dim: int,
        channels: int = 50,
        kernels: Sequence[int] = (4, 5),
        strides: Sequence[int] = (2, 2),
        paddings: Sequence[int] = (0, 2),
        dropouts: Sequence[float] = (0.1, 0.1, 0.0),
        hidden_weight: float = 0.1,
    ):
        super().__init__()
        c, h, w = (int(v) for v in image_shape)
        sizes = [(h, w)]
        for kernel, stride, padding in zip(kernels, strides, paddings, strict=True):
            sizes.append(tuple(_conv_out(s, kernel, stride, padding) for s in sizes[-1]))
        if min(min(s) for s in sizes) < 1:
            raise ValueError(f"images of {h}×{w} are too small for kernels {list(kernels)}")
        self.map_shape = (channels, *sizes[2])
        self.dropouts = tuple(float(p) for p in dropouts)
        self.hidden_weight = hidden_weight
        self.conv1 = nn.Conv2d(c, channels, kernels[0], strides[0], paddings[0])
        self.conv2 = nn.Conv2d(channels, channels, kernels[1], strides[1], paddings[1])
        self.dense = nn.Linear(math.prod(self.map_shape), embedding_dim)
        self.undense = nn.Linear(embedding_dim, math.prod(self.map_shape))
        # output_padding restores the sizes the strided convolutions rounded down.
        self.deconv2 = self._transposed(
            channels, channels, kernels[1], strides[1], paddings[1], sizes[1], sizes[2]
        )
        self.deconv1 = self._transposed(channels, c, kernels[0], strides[0], paddings[0], sizes[0], sizes[1])
        self.encoder = nn.ModuleList([self.conv1, self.conv2, self.dense])
        self.decoder = nn.ModuleList([self.undense, self.deconv2, self.deconv1])
        for module in self.modules():
            if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear)):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)

    @staticmethod
    def _transposed(c_in, c_out, kernel, stride, padding, target, source) -> nn.ConvTranspose2d:
        extra = [t - ((s - 1) * stride - 2 * padding + kernel) for t, s in zip(target, source, strict=True)]
        if min(extra) < 0 or max(extra) >= stride:
            raise ValueError(f"kernel {kernel}, stride {stride}, padding {padding} cannot be mirrored")
        return nn.ConvTranspose2d(c_in, c_out, kernel, stride, padding, output_padding=tuple(extra))

    def _encode(self, x: torch.Tensor, noisy: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        act = functional.leaky_relu
        h1 = act(self.conv1(functional.dropout(x, self.dropouts[0], training=noisy)), 0.01)
        h2 = act(self.conv2(functional.dropout(h1, self.dropouts[1], training=noisy)), 0.01)
        z = torch.tanh(self.dense(functional.dropout(h2, self.dropouts[2], training=noisy).flatten(1)))
        return h1, h2, z

    def _decode(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        d2 = functional.leaky_relu(self.undense(z), 0.01).reshape(-1, *self.map_shape)
        d1 = functional.leaky_relu(self.deconv2(d2), 0.01)
        return d1, d2, torch.tanh(self.deconv1(d1))

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self._encode(x, noisy=False)[2]

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self._decode(z)[2]

    def denoising(self, x: torch.Tensor, noisy: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """(z̃, reconstruction loss) of the corrupted path (``noisy=False``: of the clean one)."""
        h1, h2, z = self._encode(x, noisy=False)
        if noisy:
            z = self._encode(x, noisy=True)[2]
        d1, d2, x_hat = self._decode(z)
        hidden = (d1 - h1).square().mean() + (d2 - h2).square().mean()
        return z, (x_hat - x).square().mean() + self.hidden_weight * hidden
