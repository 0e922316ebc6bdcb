"""clusterbench: reproduce the tables of recent clustering papers, with our numbers beside theirs."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load_dataset"]


def load_dataset(
    name: str,
    *,
    preprocess: bool | str = True,
    experiment: str | None = None,
    max_samples: int | None = None,
):
    """The features ``X`` (float64, n x d) and labels ``y`` (int64) of dataset ``name`` (an option
    of ``conf/dataset``, see ``clusterbench list``), prepared as its config prepares them for a
    run: train/test split, subsample, NaN imputation, then the preprocessing (e.g. standardize).

    ``preprocess``: True, the config's preprocessing; False, the arrays before imputation and
    preprocessing (NaNs kept: the rows and labels a record's data_digest covers); a name, that
    preprocessing instead (``"minmax"``, ``"none"``, ...; imputation still applies).
    ``experiment``: merge in that experiment's ``dataset_overrides`` for the dataset (e.g. CLAM's
    60000-row Fashion-MNIST training split), as a run of the experiment does.
    ``max_samples``: a profile's size cap (a class-stratified subsample).

    The file is read from the first data folder holding it (``clusterbench data where``); the
    small UCI datasets are bundled, so they load offline with nothing set up::

        >>> import clusterbench
        >>> X, y = clusterbench.load_dataset("zoo")
        >>> X.shape, round(float(abs(X.mean(axis=0)).max()), 9)
        ((101, 16), 0.0)
        >>> X_raw, y_raw = clusterbench.load_dataset("zoo", preprocess=False)  # 0/1 features, legs
    """
    # Imported here: `import clusterbench` stays cheap (no hydra, pandas or torch until data is asked for).
    from omegaconf import OmegaConf

    from clusterbench.catalog import dataset_spec
    from clusterbench.data import load_dataset as load_prepared
    from clusterbench.errors import UserError

    if not isinstance(preprocess, bool | str):
        raise UserError(f"preprocess must be True, False or a preprocessing name, got {preprocess!r}")
    spec = dataset_spec(name, experiment)
    if isinstance(preprocess, str):
        spec = OmegaConf.merge(spec, {"preprocess": preprocess})
    data = load_prepared(spec, max_samples=max_samples, prepare=preprocess is not False)
    return data.X, data.y
