"""The one slice-sampling routine (``custom_ops.slice.slice_sample``, Neal 2003):

- exactness without autocorrelation: independent draws from a target, each pushed
  through one update, are still draws from it (KS against the exact distribution), on
  an unbounded, a bounded and a half-bounded support; a planted bug (the level drawn
  under a wrong ``f0``) is caught by the same test;
- the compiled routine and its Python function (``slice_sample_python``) are one code:
  the same draws from the same generator;
- the contract with a caching density: the last evaluation is at the returned value.

The PYDT's slice updates (times, hyperparameters) have their own exact tests and
planted-bug twins (``tests/inference/gibbs/pydt/test_noncentred.py``).
"""

import math

import numpy as np
import pytest
from scipy import stats

from custom_ops.jit import njit_exact
from custom_ops.slice import SliceSettings, slice_sample, slice_sample_python

#: rejection level of each KS test: the chance that the correct routine fails one
LEVEL = 1e-4
N_DRAWS = 4000
SETTINGS = SliceSettings(1.0, 20, 200)


def _normal(x, _target):
    return -0.5 * x * x


def _support(lo, hi):
    def log_density(x, _target):
        return -0.5 * x * x if lo < x < hi else -math.inf

    return log_density


def _pushed(log_density, lo, hi, seed, settings=SETTINGS):
    """Exact draws of the standard normal truncated to (lo, hi), each after one update."""
    rng = np.random.default_rng(seed)
    start = stats.truncnorm.rvs(lo, hi, size=N_DRAWS, random_state=rng)
    return np.array(
        [
            slice_sample_python(rng, log_density, None, x, -0.5 * x * x, lo, hi, settings)[0]
            for x in start
        ]
    )


@pytest.mark.parametrize(("lo", "hi"), [(-math.inf, math.inf), (-1.0, 2.0), (-math.inf, 0.5)])
def test_one_update_keeps_the_target(lo, hi):
    pushed = _pushed(_support(lo, hi), lo, hi, seed=1)
    assert np.all((lo < pushed) & (pushed < hi))
    p = stats.kstest(pushed, stats.truncnorm(lo, hi).cdf).pvalue
    assert p > LEVEL, p


def test_a_wrong_level_is_caught():
    """Planted bug: the level drawn under a log density one unit too low at the current
    value (a caller's stale or wrongly normalised ``f0``): the slices are too wide and
    the draws too spread out (measured: KS p <= 1e-32 at seeds 0-5)."""
    rng = np.random.default_rng(2)
    start = rng.standard_normal(N_DRAWS)
    pushed = np.array(
        [
            slice_sample_python(
                rng, _normal, None, x, -0.5 * x * x - 1.0, -math.inf, math.inf, SETTINGS
            )[0]
            for x in start
        ]
    )
    assert stats.kstest(pushed, stats.norm.cdf).pvalue < LEVEL


@njit_exact
def _compiled_normal(x, target):
    target[0] += 1.0
    target[1] = x
    return -0.5 * x * x


@njit_exact
def _compiled_updates(rng, xs, counts):
    out = np.empty_like(xs)
    for i in range(xs.shape[0]):
        x0 = xs[i]
        target = np.zeros(2)
        out[i] = slice_sample(
            rng,
            _compiled_normal,
            target,
            x0,
            -0.5 * x0 * x0,
            -np.inf,
            np.inf,
            SliceSettings(1.0, 20, 200),
        )[0]
        counts[i] = target[0]
        # the contract: the last evaluation was at the returned value
        if target[1] != out[i]:
            counts[i] = -1.0
    return out


#: slow: a kernel of its own to compile; the default run compares the compiled and the
#: Python hyperparameter updates of the PYDT step, which share this routine
@pytest.mark.slow
def test_compiled_and_python_routines_are_one_code():
    xs = np.random.default_rng(3).standard_normal(200)
    counts = np.zeros(200)
    compiled = _compiled_updates(np.random.default_rng(4), xs, counts)
    assert np.all(counts > 0)
    rng = np.random.default_rng(4)
    python = [
        slice_sample_python(rng, _normal, None, x, -0.5 * x * x, -math.inf, math.inf, SETTINGS)[0]
        for x in xs
    ]
    assert np.array_equal(compiled, python)
