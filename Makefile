# clusterbench: `make install`, `make test`, `make tables PROFILE=smoke|paper`.
PYTHON ?= python3
PROFILE ?= smoke
# Jobs run at once by `make tables` (Hydra's joblib launcher: up to JOBS worker processes, each
# running jobs in turn); 1 = one job after another in the make process's own clusterbench run.
# Smoke runs one job per core (each at one thread); paper one at a time, so that the fit times
# CLAM Table 3 reports are not taken on shared cores.
JOBS ?= $(if $(filter smoke,$(PROFILE)),$(shell nproc 2>/dev/null || echo 1),1)
# The experiments whose records feed the tables of the methods implemented so far.
EXPERIMENTS ?= clam_baselines clam_table1 clam_dcec clam_table10 kr_table2 kr_restart_odds kr_table3 kcprime_tableS1 prcut_table1 prcut_table2 sr_table2 sr_table3
RESULTS ?= results

.PHONY: help install test lint tables figures report

# A bare `make` lists the targets instead of installing anything.
help:
	@echo "make install                      torch 2.13 (CPU) first, then clusterbench and its dev tools (-e)"
	@echo "make test                         the test suite, one worker per core (about 8 min on 2 cores)"
	@echo "make lint                         ruff check and ruff format --check"
	@echo "make tables PROFILE=smoke|paper   run EXPERIMENTS (JOBS=N at once), then build every table"
	@echo "make figures [QUICK=1]            the papers' figures (QUICK=1: into results/figures/quick)"
	@echo "make report [PROFILE=smoke]       results/report/index.html: every table, figure, benchmark"

install:
	$(PYTHON) -m pip install torch==2.13.0
	$(PYTHON) -m pip install -e ".[dev]"

# One pytest worker per core (pytest-xdist): most tests wait on a subprocess or a small fit.
# worksteal: an idle worker takes tests queued for the other, so neither idles at the end while
# the other still holds a queue of slow subprocess tests.
# Tests read the datasets from ../shared/datasets when it exists and nothing else is set; the other
# targets find data as the clusterbench command does (`clusterbench data where`).
test: export CLUSTERBENCH_DATA ?= $(wildcard $(abspath ../shared/datasets))
test:
	$(PYTHON) -m pytest -q -n auto --dist worksteal

lint:
	ruff check .
	ruff format --check .

# A grid point that fails (e.g. an eigensolver that does not converge) is recorded as failed and
# `run` exits 1; the tables are built from the points that finished all the same. An experiment that
# did not run at all (a misspelt name in EXPERIMENTS, a user error: `run` exits 2) or was killed
# (out of memory) is named again after the tables are built, and `make tables` fails; an
# interrupted run (Ctrl-C, SIGTERM) stops it.
tables:
	@test -f conf/profile/$(PROFILE).yaml || { echo "make tables: unknown PROFILE '$(PROFILE)'; one of: $(basename $(notdir $(wildcard conf/profile/*.yaml)))" >&2; exit 2; }
	@case "$(strip $(JOBS))" in ''|*[!0-9]*|0|00*) echo "make tables: JOBS must be an integer ≥ 1, got '$(JOBS)'" >&2; exit 2;; esac
	not_run=; for experiment in $(EXPERIMENTS); do \
		clusterbench run -m experiment=$$experiment profile=$(PROFILE) results_dir=$(RESULTS) \
			$(if $(filter-out 1,$(JOBS)),hydra/launcher=joblib hydra.launcher.n_jobs=$(JOBS)); \
		code=$$?; case $$code in \
			0) ;; \
			1) echo "make tables: some points of $$experiment failed (see the records' error column), or a job raised (the error above)" ;; \
			130|143) exit $$code ;; \
			2) echo "make tables: $$experiment did not run (the error above)"; not_run="$$not_run $$experiment" ;; \
			*) echo "make tables: $$experiment was stopped (exit $$code: killed, out of memory?); its finished points are kept"; not_run="$$not_run $$experiment" ;; \
		esac; \
	done; \
	clusterbench table --all --profile $(PROFILE) --results-dir $(RESULTS) || exit $$?; \
	if [ -n "$$not_run" ]; then echo "make tables: did not run or did not finish:$$not_run (the errors above); the tables are built from the records there are" >&2; exit 2; fi

# The papers' figures as PNG and PDF in $(RESULTS)/figures: CLAM's (Fig. 1, 4, 6, 7-10, 11, 12, 13; pick
# with FIGURES="4 11"), Khatri-Rao's (Fig. 6, 7, 8, 9; pick with KR_FIGURES="6 9") and
# k-means-C′'s (Fig. 1, S2; pick with KC_FIGURES="S2") and SR-K-means' (Fig. 1, from the records of
# experiment sr_table3; pick with SR_FIGURES="1"); QUICK=1 draws them at the quick scale into
# $(RESULTS)/figures/quick instead, never over the committed full-scale ones (git ignores it).
# With none picked every figure is drawn; with some, only those (a paper none is picked from is
# left out).
ALL_FIGURES = $(if $(strip $(FIGURES)$(KR_FIGURES)$(KC_FIGURES)$(SR_FIGURES)),,all)
FIGURES_OUT = $(RESULTS)/figures$(if $(QUICK),/quick)
figures:
	$(if $(FIGURES)$(ALL_FIGURES),$(PYTHON) scripts/clam_figures.py $(FIGURES) $(if $(QUICK),--quick) --out $(FIGURES_OUT) --results $(RESULTS))
	$(if $(KR_FIGURES)$(ALL_FIGURES),$(PYTHON) scripts/kr_figures.py $(KR_FIGURES) $(if $(QUICK),--quick) --out $(FIGURES_OUT))
	$(if $(KC_FIGURES)$(ALL_FIGURES),$(PYTHON) scripts/kcprime_figures.py $(KC_FIGURES) $(if $(QUICK),--quick) --out $(FIGURES_OUT))
	$(if $(SR_FIGURES)$(ALL_FIGURES),$(PYTHON) scripts/sr_figures.py $(SR_FIGURES) $(if $(QUICK),--quick) --out $(FIGURES_OUT) --results $(RESULTS) $(if $(SR_FIGURES),,--missing-ok))

# One static HTML page of every table, figure and benchmark, with a status per paper:
# $(RESULTS)/report/index.html. Its tables are profile paper's (the committed ones) unless PROFILE
# is set on the command line or in the environment (`make report PROFILE=smoke` after
# `make tables PROFILE=smoke`). The tables are built first (`make tables`).
report:
	clusterbench report --results-dir $(RESULTS) $(if $(filter-out file,$(origin PROFILE)),--profile $(PROFILE))
