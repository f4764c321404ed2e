"""Progress lines of the long non-MCMC estimators (BHC, mixture-of-trees EM, graphical
lasso path): the count they report is the work done, shown on a terminal only."""

import io
import sys

import numpy as np
import pytest

import pp_models.progress as progress
from pp_models import bhc, ggm
from pp_models.mixture_of_trees import em


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def terminal(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    # draw at once (the estimators here are quick) and capture what is drawn
    init = progress.WorkProgress.__init__

    def immediate(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.delay, self.interval = 0.0, 0.01

    monkeypatch.setattr(progress.WorkProgress, "__init__", immediate)

    def swap():
        out = _Terminal()
        monkeypatch.setattr(sys, "stderr", out)
        return out

    return swap


def _binary(n, d=12, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.random((3, d)) < 0.5
    rows = centres[rng.integers(0, 3, n)] ^ (rng.random((n, d)) < 0.1)
    return rows.astype(np.int64)


def _last_count(text):
    line = text.rstrip("\n").split("\r")[-1]
    done, total = line.split("] ")[1].split(" ")[0].split("/")
    return int(done.replace(",", "")), int(total.replace(",", ""))


def test_greedy_bhc_counts_every_pair_it_scores(terminal):
    out = terminal()
    n = 300
    bhc.greedy(_binary(n))
    # (n - 1)^2 = n(n-1)/2 initial pairs + (n-2) + ... + 0 after the merges
    assert out.getvalue().startswith("\rbhc.greedy [")
    assert _last_count(out.getvalue()) == ((n - 1) ** 2, (n - 1) ** 2)


def test_randomized_bhc_counts_every_point_placed(terminal):
    out = terminal()
    bhc.randomized(_binary(900), random_seed=0, subsample=40, leaf_size=100)
    assert _last_count(out.getvalue()) == (900, 900)
    out = terminal()
    bhc.embhc(_binary(500), random_seed=0)
    assert "bhc.embhc" in out.getvalue() and _last_count(out.getvalue()) == (500, 500)


def test_em_and_glasso_path_report_their_iterations(terminal):
    X = _binary(200, d=5)
    out = terminal()
    em(X, 2, n_init=2, max_iter=30, random_seed=0)
    assert _last_count(out.getvalue()) == (60, 60)
    out = terminal()
    rng = np.random.default_rng(1)
    ggm.graphical_lasso_path(rng.normal(size=(100, 6)), [0.5, 0.2, 0.1, 0.05])
    assert _last_count(out.getvalue()) == (4, 4)


def test_silent_when_asked_in_ci_and_in_pipes(terminal, monkeypatch):
    out = terminal()
    bhc.greedy(_binary(100), progressbar=False)
    assert out.getvalue() == ""
    monkeypatch.setenv("CI", "true")
    bhc.greedy(_binary(100))
    assert out.getvalue() == ""
    monkeypatch.delenv("CI")
    pipe = io.StringIO()  # not a terminal
    monkeypatch.setattr(sys, "stderr", pipe)
    bhc.greedy(_binary(100))
    assert pipe.getvalue() == ""
