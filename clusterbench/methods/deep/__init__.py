"""Deep clustering: the networks and the pretraining cache that DEC, IDEC, DKM, DCEC and their
Khatri-Rao variants (Khatri-Rao paper §7) are built on.

What is here (the first increment of the deep-clustering issue; no estimators and no configs yet):

- ``networks``: plain ``torch.nn.Module`` s: a fully connected autoencoder (DEC/IDEC's
  d-500-500-2000-10, or the Khatri-Rao paper's d-1024-512-256-10), DCEC's convolutional
  autoencoder, and the Khatri-Rao paper's Hadamard-factored linear layer (eq. 9) that turns the
  fully connected autoencoder into the compressed one; and the two reconstruction-loss reductions
  (per-element mean, per-sample sum) that the references disagree on.
- ``cache``: pretrained state dicts on disk, keyed by everything that determines them, written
  atomically with a checksum so that a corrupt file is rebuilt, never loaded.

What comes next: the scikit-learn-compatible estimators (DEC/IDEC, DKM, DCEC, Khatri-Rao IDEC and
DKM) that pretrain through ``cache.pretrained_state``, their Hydra configs, and the compressed
autoencoder's rank schedule (Khatri-Rao paper §9.1).
"""
