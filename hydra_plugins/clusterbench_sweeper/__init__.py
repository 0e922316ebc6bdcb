"""Hydra's basic sweeper, made to resume: a job whose every grid point is recorded is counted, not
launched (``hydra/sweeper: clusterbench`` in ``conf/config.yaml``).

Hydra composes each job's config twice (once to check the batch, once to launch it), about 0.2 s
each from our config tree: a finished 600-job sweep took four minutes to do nothing. This sweeper
expands the same job list as the basic one (the experiment's ``hydra.sweeper.params`` and the
command line's sweeps), composes each distinct job once for every seed it sweeps (the seed is
set on a copy), asks the records whether the job is done (:func:`clusterbench.runner.recorded_outcomes`,
the lookup ``run_job`` itself makes), notes the done ones in the run's journal and launches only
the rest, one at a time under a progress bar with the basic launcher. A setting a job would
refuse (a UserError: a bad value in any job's grid, a missing dataset) stops the sweep before any
job is launched, in the job's one line; any other job the check cannot read (an interpolation
only a running job resolves) is launched, and says what it says. A sweep all of whose jobs sit
at seeds their method does not run at (``method_seeds``) fits nothing, and says so (exit 2).
The command line checked the overrides before Hydra started, so the basic sweeper's batch check
is not repeated.

Hydra finds sweepers only in the ``hydra_plugins`` namespace package, hence this folder.
"""

# No ``from __future__ import annotations``: Hydra imports plugins outside sys.modules, where a
# dataclass cannot resolve string annotations, and OmegaConf reads the types of the config class.
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional  # noqa: UP035 (OmegaConf reads typing's forms)

from hydra._internal.core_plugins.basic_launcher import BasicLauncher
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf, open_dict


@dataclass
class ResumingSweeperConf:
    _target_: str = "hydra_plugins.clusterbench_sweeper.ResumingSweeper"
    max_batch_size: Optional[int] = None  # noqa: UP045 (OmegaConf reads typing's forms)
    params: Optional[Dict[str, str]] = None  # noqa: UP006, UP045


ConfigStore.instance().store(
    group="hydra/sweeper", name="clusterbench", node=ResumingSweeperConf, provider="clusterbench"
)


class ResumingSweeper(BasicSweeper):
    def sweep(self, arguments):
        from tqdm.auto import tqdm

        from clusterbench.errors import UserError
        from clusterbench.progress import progress_bar
        from clusterbench.results import note_outcomes
        from clusterbench.runner import seeds_not_run

        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        overrides = parser.parse_overrides([*self._parse_config(), *arguments])
        jobs = [list(job) for batch in self.split_arguments(overrides, None) for job in batch]
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")

        pending, not_run = [], []
        check = _RecordCheck(self, parser)
        try:
            for job in progress_bar(jobs, shown=len(jobs) > 1, desc="records", unit="job", leave=False):
                outcomes = check.outcomes(job)
                if outcomes is None:
                    pending.append(job)
                elif not outcomes:  # a seed its method does not run at (method_seeds)
                    not_run.append(job)
                else:
                    note_outcomes(outcomes)
            if len(not_run) == len(jobs):
                raise UserError(f"the sweep fits nothing: {seeds_not_run(check.last_config)}")
        except UserError as exc:  # as a job says it, before any job of the sweep has fitted
            print(f"clusterbench: error: {exc}", file=sys.stderr)
            sys.exit(2)
        recorded = len(jobs) - len(pending) - len(not_run)
        if recorded:
            tqdm.write(f"{recorded} of {len(jobs)} jobs are recorded already: not launched")
        if not_run:
            tqdm.write(
                f"{len(not_run)} of {len(jobs)} jobs are at seeds their method does not run at (method_seeds)"
            )
        if not pending:  # everything recorded: no launcher is started (a batch of 0 would be an error)
            return []
        returns = []
        if not isinstance(self.launcher, BasicLauncher):  # joblib, submitit: one batch, their own pace
            size = self.max_batch_size or len(pending)
            for start in range(0, len(pending), size):
                returns.append(_checked(self.launcher.launch(pending[start : start + size], start)))
            return returns
        with progress_bar(total=len(pending), shown=len(pending) > 1, desc="jobs", unit="job") as bar:
            for index, job in enumerate(pending):
                returns.append(_checked(self.launcher.launch([job], initial_job_idx=index)))
                bar.update()
        return returns


def _checked(results):
    """``results`` once each job's return is read: a job that raised (an error outside any fit,
    which the runner records itself) raises here, as Hydra's basic sweeper raises after its batch,
    instead of ending the sweep as if it had no points. Jobs are launched one at a time, so the
    sweep stops at the first: such an error (a config's, the code's) would recur in every job."""
    for result in results:
        _ = result.return_value
    return results


class _RecordCheck:
    """Whether a job is done, from its records: its config composed once per distinct job but
    its seed, and each dataset loaded once."""

    def __init__(self, sweeper, parser):
        self.sweeper, self.parser = sweeper, parser
        self.composed = {}
        self.datasets = {}
        self.last_config = None  # the last job's config checked (to name its method_seeds)

    def outcomes(self, job):
        from clusterbench.errors import UserError
        from clusterbench.runner import job_settings, recorded_outcomes

        seeds = [word for word in job if word.partition("=")[0] == "seed"]
        key = tuple(word for word in job if word not in seeds)
        try:
            if key not in self.composed:
                cfg = self.sweeper.hydra_context.config_loader.load_sweep_config(self.sweeper.config, job)
                HydraConfig.instance().set_config(cfg)  # for ${hydra:…} in the job's settings
                self.composed[key] = (cfg, job_settings(cfg, cfg.hydra.runtime.choices))
            # The jobs of one key differ only in their seed: one config serves them all, set in
            # place (a copy per job cost more than the check).
            cfg, experiment = self.composed[key]
            with open_dict(cfg):
                for word in seeds:
                    cfg.seed = self.parser.parse_override(word).value()
            self.last_config = cfg
            return recorded_outcomes(cfg, experiment, load=self._load)
        except UserError:  # the job would refuse it: the sweep does, before launching any
            raise
        except Exception:  # any other (an interpolation only a running job resolves): the job says it
            return None

    def _load(self, dataset_cfg, max_samples=None):
        from clusterbench.data import load_dataset

        key = OmegaConf.to_yaml(dataset_cfg) + str(max_samples)
        if key not in self.datasets:
            self.datasets[key] = load_dataset(dataset_cfg, max_samples=max_samples)
        return self.datasets[key]
