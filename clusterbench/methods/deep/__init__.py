"""Deep clustering's shared core: the networks, the pretraining cache and the one training loop that
DEC (with or without its autoencoder), IDEC, DKM, DCEC and the Khatri-Rao paper's KR-IDEC and KR-DKM
(§7) are built on (docs/deep.md).

- ``networks``: plain ``torch.nn.Module`` s: the fully connected autoencoder (dense, or with the
  Khatri-Rao paper's Hadamard-factored inner layers, eq. 9), DCEC's convolutional autoencoder, and
  the two reconstruction-loss reductions the references disagree on.
- ``cache``: pretrained state dicts on disk, keyed by everything that determines them, written
  atomically with a checksum so that a corrupt file is rebuilt, never loaded.
- ``base``: ``DeepClusterer``, the loop (pretrain or load, seed the cluster parameters on the
  embedding, the clustering phase), its heads and losses; a method module (``methods/idec.py``,
  ``dkm.py``, ``dcec.py``, ``kr_deep.py``, and ``dec.py`` for the input-space case) gives only its
  hyperparameters, network, seeding and loss.
"""
