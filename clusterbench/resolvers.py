"""The OmegaConf resolvers the config files use, registered on import: ``${protocentroid_budget:K}``,
``${seeds:N}`` and ``${scaled:N,S}``.

Registered here, not in the package's __init__: :mod:`clusterbench.catalog` imports this module
and everything that reads configs imports catalog, while ``import clusterbench`` stays cheap (the
command line's Ctrl-C guard starts after it).
"""

from __future__ import annotations

from omegaconf import OmegaConf


def _protocentroid_budget(n_clusters, n_sets=2) -> int:
    from clusterbench.methods.kr_kmeans import protocentroid_budget

    return protocentroid_budget(n_clusters, n_sets)


def _seeds(count) -> list[int]:
    return list(range(int(count)))


def _scaled(count, scale) -> int:
    return max(1, round(int(count) * float(scale)))


# ${protocentroid_budget:K[,P]} in a config: h1 + ... + hp for k = K (the Khatri-Rao paper's
# "k-means (h1 + h2)" baseline takes that many centroids).
OmegaConf.register_new_resolver("protocentroid_budget", _protocentroid_budget, replace=True)
# ${seeds:N} in a config: the list 0, 1, ..., N - 1 (a grid over random_state whose length a
# profile sets, e.g. experiment kr_restart_odds' single restarts).
OmegaConf.register_new_resolver("seeds", _seeds, replace=True)
# ${scaled:N,S} in a config: N scaled by S, rounded, at least 1 (a paper's epoch count under a
# profile's scale, e.g. ${scaled:200,${profile.deep_scale}}: 200 at the paper profile).
OmegaConf.register_new_resolver("scaled", _scaled, replace=True)
