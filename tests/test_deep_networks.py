"""The deep family's networks and pretraining cache (clusterbench.methods.deep): the Hadamard layer
against its explicit weight (Khatri-Rao paper eq. 9), parameter counts against hand counts, DCEC's
conv shapes, the two reconstruction-loss reductions, the cache's hits, misses and corrupt files,
and seeded determinism on CPU."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from clusterbench.methods.deep.cache import (
    ENVIRONMENT_VARIABLE,
    array_digest,
    cache_folder,
    cache_path,
    pretrained_state,
)
from clusterbench.methods.deep.networks import (
    ConvAutoencoder,
    HadamardLinear,
    KerasPaddedConv2d,
    KerasPaddedConvTranspose2d,
    MLPAutoencoder,
    hadamard_rank,
    reconstruction_loss,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

DEC_DIMS = (784, 500, 500, 2000, 10)


def test_hadamard_linear_equals_explicit_weight_product():
    torch.manual_seed(0)
    layer = HadamardLinear(7, 5, rank=3).double()
    x = torch.randn(4, 7, dtype=torch.float64)
    weight = (layer.A1 @ layer.B1) * (layer.A2 @ layer.B2)
    expected = x @ weight.T + layer.bias
    assert layer.A1.shape == (5, 3) and layer.B1.shape == (3, 7)
    torch.testing.assert_close(layer(x), expected, rtol=0, atol=1e-12)
    # The Hadamard product is not the plain product of the factors: the layer must not be low-rank A B.
    assert not torch.allclose(layer(x), x @ (layer.A1 @ layer.B1).T + layer.bias)


def test_hadamard_linear_without_bias_is_linear_in_x():
    torch.manual_seed(1)
    layer = HadamardLinear(6, 4, rank=2, bias=False).double()
    x = torch.randn(3, 6, dtype=torch.float64)
    torch.testing.assert_close(layer(2.0 * x), 2.0 * layer(x))
    torch.testing.assert_close(layer(x), x @ ((layer.A1 @ layer.B1) * (layer.A2 @ layer.B2)).T)


def test_hadamard_linear_gradient_reaches_all_factors():
    torch.manual_seed(2)
    layer = HadamardLinear(5, 4, rank=2)
    layer(torch.randn(3, 5)).square().sum().backward()
    for name in ("A1", "B1", "A2", "B2", "bias"):
        assert getattr(layer, name).grad is not None and getattr(layer, name).grad.abs().sum() > 0, name


def test_hadamard_linear_n_params():
    # 2·rank·(in + out) + out = 2·3·12 + 5.
    assert HadamardLinear(7, 5, rank=3).n_params == 77
    assert sum(p.numel() for p in HadamardLinear(7, 5, rank=3).parameters()) == 77
    assert HadamardLinear(7, 5, rank=3, bias=False).n_params == 72


@pytest.mark.parametrize("rank", [0, -1, 2.5, True])
def test_hadamard_linear_rejects_bad_rank(rank):
    with pytest.raises(ValueError, match="HadamardLinear rank must be a positive int"):
        HadamardLinear(4, 4, rank=rank)


def test_mlp_autoencoder_dec_shapes_and_parameter_count():
    torch.manual_seed(0)
    net = MLPAutoencoder(DEC_DIMS)
    z, x_hat = net(torch.rand(3, 784))
    assert z.shape == (3, 10) and x_hat.shape == (3, 784)
    # By hand: encoder 784·500+500 + 500·500+500 + 500·2000+2000 + 2000·10+10 = 1 665 010;
    # decoder 10·2000+2000 + 2000·500+500 + 500·500+500 + 500·784+784 = 1 665 784.
    assert net.n_params == 3_330_794
    # Linear embedding and reconstruction: no activation after the last layer of either half.
    assert isinstance(net.encoder[-1], nn.Linear) and isinstance(net.decoder[-1], nn.Linear)
    assert [m.out_features for m in net.encoder if isinstance(m, nn.Linear)] == [500, 500, 2000, 10]
    assert [m.out_features for m in net.decoder if isinstance(m, nn.Linear)] == [2000, 500, 500, 784]
    assert sum(isinstance(m, nn.ReLU) for m in net.modules()) == 6
    torch.testing.assert_close(net.decode(net.encode(torch.ones(2, 784))), net(torch.ones(2, 784))[1])


KR_DIMS = (784, 1024, 512, 256, 10)


def test_the_compressed_autoencoder_factors_only_the_inner_layers_at_the_papers_ranks():
    compressed = MLPAutoencoder(KR_DIMS, hadamard_multiplier=3)
    kinds = [type(m).__name__ for m in compressed.encoder if isinstance(m, nn.Linear | HadamardLinear)]
    assert kinds == ["Linear", "HadamardLinear", "HadamardLinear", "Linear"]
    # rank = max(10, min(⌊√in⌋, ⌊√out⌋))·m: 1024→512: min(32, 22)·3 = 66; 512→256: min(22, 16)·3 = 48.
    assert [m.rank for m in compressed.encoder if isinstance(m, HadamardLinear)] == [66, 48]
    assert [m.rank for m in compressed.decoder if isinstance(m, HadamardLinear)] == [48, 66]
    assert hadamard_rank(10, 2000, 1) == 10  # the floor of 10 (⌊√10⌋ = 3)
    z, x_hat = compressed(torch.rand(2, 784))
    assert z.shape == (2, 10) and x_hat.shape == (2, 784)


@pytest.mark.parametrize(
    ("d", "k", "h", "m", "paper_ratio"),
    # Khatri-Rao Table 3's params column (notes A4): MNIST m = 3; Olivetti, Optdigits, R15 m = 1.
    [(784, 10, 7, 3, 0.74), (4096, 40, 13, 1, 0.88), (64, 10, 7, 1, 0.22), (2, 15, 8, 1, 0.15)],
)
def test_the_compressed_autoencoder_gives_table_3s_params_ratio(d, k, h, m, paper_ratio):
    dims = (d, 1024, 512, 256, 10)
    dense = MLPAutoencoder(dims).n_params + 10 * k  # k centroids in the 10-d embedding
    compressed = MLPAutoencoder(dims, hadamard_multiplier=m).n_params + 10 * h  # h1 + h2 protocentroids
    assert round(compressed / dense, 2) == paper_ratio


def test_mlp_autoencoder_leaky_relu_and_bad_arguments():
    net = MLPAutoencoder((6, 4, 2), activation="leaky_relu")
    assert sum(isinstance(m, nn.LeakyReLU) for m in net.modules()) == 2
    with pytest.raises(ValueError, match="activation must be one of"):
        MLPAutoencoder((6, 4, 2), activation="tanh")
    with pytest.raises(ValueError, match="dims must be at least two positive ints"):
        MLPAutoencoder((6,))
    with pytest.raises(ValueError, match="hadamard_multiplier must be None or a positive int"):
        MLPAutoencoder((6, 4, 2), hadamard_multiplier=0)


@pytest.mark.parametrize(
    ("image_shape", "encoded_map"),
    [((1, 28, 28), 3), ((1, 32, 32), 4), ((1, 16, 16), 2), ((3, 32, 32), 4)],
)
def test_conv_autoencoder_round_trips_shapes(image_shape, encoded_map):
    torch.manual_seed(0)
    net = ConvAutoencoder(image_shape, channels=(4, 8, 16), embedding=10)
    x = torch.rand(2, *image_shape)
    z, x_hat = net(x)
    assert z.shape == (2, 10)
    assert x_hat.shape == x.shape
    # DCEC's maps: 28 → 14 → 7 → 3 (valid third conv), 32 → 16 → 8 → 4, 16 → 8 → 4 → 2.
    assert net.encoder[-1].in_features == 16 * encoded_map**2
    assert net.decoder[0].out_features == 16 * (image_shape[1] // 8) ** 2


def test_conv_autoencoder_dcec_parameter_count_at_28():
    net = ConvAutoencoder((1, 28, 28))
    # By hand, DCEC's 32-64-128 CAE at 28×28 (3×3 map, 1152 features):
    # conv 1·32·25+32 + 32·64·25+64 + 64·128·9+128, dense 1152·10+10;
    # dense 10·1152+1152, deconv 128·64·9+64 + 64·32·25+32 + 32·1·25+1.
    assert net.n_params == 832 + 51_264 + 73_856 + 11_530 + 12_672 + 73_792 + 51_232 + 801


def test_conv_autoencoder_pads_as_keras():
    """Keras' 'same' on an even size pads one pixel before and two after. With a kernel whose top
    row alone is 1, output (1, 0) covers image row 1 and columns −1..3, four of them in the image;
    torch's symmetric padding of 2 would put that window one pixel up and left (three pixels)."""
    net = ConvAutoencoder((1, 16, 16), channels=(1, 1, 1), embedding=2)
    conv1 = net.encoder[0]
    assert conv1.pad == (1, 2, 1, 2)
    with torch.no_grad():
        conv1.conv.weight.zero_()
        conv1.conv.weight[0, 0, 0, :] = 1.0  # the kernel's first row: the padding row above the image
        conv1.conv.bias.zero_()
    out = conv1(torch.ones(1, 1, 16, 16))
    assert out.shape == (1, 1, 8, 8)
    assert out[0, 0, 0].tolist() == [0.0] * 8  # first output row: the kernel's top row is on padding
    assert out[0, 0, 1, 0].item() == 4.0  # second row, left edge: 1 padded column, 4 image pixels


@pytest.mark.parametrize(
    ("kernel", "same", "image", "encoded"),
    [(5, True, 8, 4), (5, True, 16, 8), (3, True, 8, 4), (3, False, 7, 3)],
)
def test_conv_autoencoder_transposed_convolution_is_the_adjoint_of_the_convolution(
    kernel, same, image, encoded
):
    """Keras' Conv2DTranspose is the adjoint (gradient) of its Conv2D with the same padding, so with
    shared weights ⟨conv(x), y⟩ = ⟨x, deconv(y)⟩: this pins the deconvolution's crop to the
    convolution's (asymmetric) padding; a crop off by one pixel breaks the identity."""
    torch.manual_seed(0)
    conv = KerasPaddedConv2d(1, 1, kernel, 2, (same, same), (image, image))
    deconv = KerasPaddedConvTranspose2d(1, 1, kernel, 2, (same, same), (encoded, encoded))
    assert conv.out_size == (encoded, encoded) and deconv.out_size == (image, image)
    with torch.no_grad():
        deconv.conv.weight.copy_(conv.conv.weight)
        conv.conv.bias.zero_()
        deconv.conv.bias.zero_()
    x, y = (
        torch.randn(1, 1, image, image, dtype=torch.float64),
        torch.randn(1, 1, encoded, encoded, dtype=torch.float64),
    )
    conv.double(), deconv.double()
    torch.testing.assert_close((conv(x) * y).sum(), (x * deconv(y)).sum())


@pytest.mark.parametrize("size", [4, 7])
def test_conv_autoencoder_refuses_too_small_image(size):
    with pytest.raises(ValueError, match="at least 8×8 for its three stride-2 convolutions"):
        ConvAutoencoder((1, size, size))


def test_conv_autoencoder_refuses_size_its_decoder_cannot_reach():
    with pytest.raises(ValueError, match="cannot reconstruct a 30×30 image: DCEC's decoder gives 28×28"):
        ConvAutoencoder((1, 30, 30))


def test_reconstruction_loss_reductions_differ_by_feature_count():
    x = torch.zeros(2, 3)
    x_hat = torch.tensor([[1.0, 2.0, 0.0], [0.0, 0.0, 3.0]])  # squared errors sum to 1 + 4 + 9 = 14
    assert reconstruction_loss(x, x_hat).item() == pytest.approx(14 / 6)
    assert reconstruction_loss(x, x_hat, "mean").item() == pytest.approx(14 / 6)
    assert reconstruction_loss(x, x_hat, "sum_per_sample").item() == pytest.approx(14 / 2)
    torch.manual_seed(0)
    images, decoded = torch.rand(5, 1, 28, 28), torch.rand(5, 1, 28, 28)
    torch.testing.assert_close(
        reconstruction_loss(images, decoded, "sum_per_sample"),
        784 * reconstruction_loss(images, decoded, "mean"),
    )
    with pytest.raises(ValueError, match="reduction must be one of"):
        reconstruction_loss(x, x_hat, "sum")


def test_seeded_networks_are_identical_and_deterministic():
    def build(seed):
        torch.manual_seed(seed)
        return MLPAutoencoder((6, 5, 4, 2), hadamard_multiplier=1), ConvAutoencoder(
            (1, 8, 8), channels=(2, 2, 2)
        )

    first, second, other = build(3), build(3), build(4)
    for a, b, c in zip(first, second, other, strict=True):
        state_a, state_b, state_c = a.state_dict(), b.state_dict(), c.state_dict()
        assert all(torch.equal(state_a[name], state_b[name]) for name in state_a)
        assert not all(torch.equal(state_a[name], state_c[name]) for name in state_a)
    x = torch.rand(3, 6)
    assert torch.equal(first[0](x)[1], second[0](x)[1])


# --- the pretraining cache ---------------------------------------------------------------------------


class CountingBuild:
    """A seeded tiny autoencoder's state dict, counting how often it is built."""

    def __init__(self, seed=0):
        self.seed = seed
        self.calls = 0

    def __call__(self):
        self.calls += 1
        torch.manual_seed(self.seed)
        return MLPAutoencoder((6, 4, 2)).state_dict()


KEY = {
    "dataset": "0" * 64,
    "architecture": [6, 4, 2],
    "epochs": 3,
    "optimiser": "adam",
    "lr": 1e-3,
    "seed": 0,
}


def assert_same_state(state, expected):
    assert state.keys() == expected.keys()
    assert all(torch.equal(state[name], expected[name]) for name in expected)


def test_cache_second_call_does_not_build(tmp_path):
    build = CountingBuild()
    first = pretrained_state(KEY, build, folder=tmp_path)
    second = pretrained_state(KEY, build, folder=tmp_path)
    assert build.calls == 1
    assert_same_state(second, first)
    assert_same_state(second, CountingBuild()())
    assert list(tmp_path.iterdir()) == [cache_path(KEY, tmp_path)]  # and no temporary file left


def test_cache_key_order_does_not_matter(tmp_path):
    build = CountingBuild()
    pretrained_state(KEY, build, folder=tmp_path)
    pretrained_state(dict(reversed(list(KEY.items()))), build, folder=tmp_path)
    assert build.calls == 1


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: data[:-1], id="last-byte-missing"),
        pytest.param(
            lambda data: data[:100] + bytes(b ^ 0xFF for b in data[100:104]) + data[104:], id="flipped"
        ),
        pytest.param(
            lambda data: data[: len(data) - 50] + bytes([data[-50] ^ 1]) + data[len(data) - 49 :],
            id="one-bit",
        ),
        pytest.param(lambda data: b"", id="empty"),
    ],
)
def test_cache_rebuilds_damaged_file(tmp_path, damage):
    build = CountingBuild()
    pretrained_state(KEY, build, folder=tmp_path)
    path = cache_path(KEY, tmp_path)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.warns(UserWarning, match="is corrupt .*rebuilding it"):
        rebuilt = pretrained_state(KEY, build, folder=tmp_path)
    assert build.calls == 2
    assert_same_state(rebuilt, CountingBuild()())
    # The rewritten file is sound again: the next call loads it without building.
    assert_same_state(pretrained_state(KEY, build, folder=tmp_path), rebuilt)
    assert build.calls == 2


def test_cache_different_keys_give_different_files(tmp_path):
    other_seed = {**KEY, "seed": 1}
    first, second = CountingBuild(0), CountingBuild(1)
    state_first = pretrained_state(KEY, first, folder=tmp_path)
    state_second = pretrained_state(other_seed, second, folder=tmp_path)
    assert (first.calls, second.calls) == (1, 1)
    assert cache_path(KEY, tmp_path) != cache_path(other_seed, tmp_path)
    assert len(list(tmp_path.iterdir())) == 2
    assert not torch.equal(state_first["encoder.0.weight"], state_second["encoder.0.weight"])
    assert cache_path({**KEY, "epochs": 4}, tmp_path) != cache_path(KEY, tmp_path)


def test_cache_file_of_another_key_is_not_loaded(tmp_path):
    other_key = {**KEY, "seed": 1}
    pretrained_state(other_key, CountingBuild(1), folder=tmp_path)
    cache_path(other_key, tmp_path).replace(cache_path(KEY, tmp_path))
    build = CountingBuild(0)
    with pytest.warns(UserWarning, match="written for another key"):
        state = pretrained_state(KEY, build, folder=tmp_path)
    assert build.calls == 1
    assert_same_state(state, CountingBuild(0)())


def test_cache_folder_default_and_environment_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_folder() == tmp_path / "home" / ".cache" / "clusterbench" / "pretrained"
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, str(tmp_path / "env"))
    assert cache_folder() == tmp_path / "env"
    assert cache_folder(tmp_path / "given") == tmp_path / "given"
    pretrained_state(KEY, CountingBuild())
    assert cache_path(KEY).parent == tmp_path / "env" and cache_path(KEY).exists()


def test_cache_rejects_bad_keys_and_builds(tmp_path):
    with pytest.raises(TypeError, match="key must be JSON-able"):
        pretrained_state({"dataset": object()}, CountingBuild(), folder=tmp_path)
    with pytest.raises(TypeError, match="key must be a dict"):
        pretrained_state(["seed", 0], CountingBuild(), folder=tmp_path)
    with pytest.raises(TypeError, match=r"build must return a dict of str to torch\.Tensor"):
        pretrained_state(KEY, lambda: {"weight": [1.0]}, folder=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_array_digest_tells_data_apart():
    import numpy as np

    X = np.arange(12, dtype=np.float64).reshape(3, 4)
    assert array_digest(X) == array_digest(X.copy())
    assert array_digest(X) != array_digest(X[:2])  # a subsample
    assert array_digest(X) != array_digest(X / 255)  # another scaling
    assert array_digest(X) != array_digest(X.astype(np.float32))
    assert array_digest(X) != array_digest(X.reshape(4, 3))
