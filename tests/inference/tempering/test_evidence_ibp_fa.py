"""The evidence of the NSFA model (``pp_models.ibp_fa``) against its exact value.

At D = 2 rows and N = 1 column, ``p(Y)`` is a sum over the IBP's classes of ``Z`` (three
column patterns, Poisson counts) with the loadings and factors integrated in closed form
and the noise precisions and ``alpha`` by quadrature
(``tests/oracles/ibp_fa.py``, independent of the sampler). The loading
precision is fixed (``loading_prior=1.0``): with it random the evidence needs one more
integral the oracle does not do. The stepping-stone and thermodynamic estimates from one
tempered run of the NSFA step must lie within 3 standard errors of it; ``-m slow``
measures the coverage of ±2 se over 20 seeds.
"""

import numpy as np
import pytest

from inference import evidence, fit
from inference.tempering import estimate_from_tempering
from tests.helpers.evidence_checks import check_against_exact
from tests.inference.gibbs.ibp_fa.tiny import oracle, tiny_model

CONFIG = dict(noise="diagonal", alpha=(2.0, 2.0))


@pytest.fixture(scope="module")
def model():
    return tiny_model(**CONFIG)


@pytest.fixture(scope="module")
def exact():
    return oracle(1.0, **CONFIG).log_normaliser


def test_nsfa_evidence_matches_the_sum_over_classes(model, exact):
    dt = fit(model, draws=800, tune=300, chains=2, cores=1, random_seed=5,
             progressbar=False, tempering=8)
    for method in ("stepping_stone", "thermodynamic"):
        result = estimate_from_tempering(dt, method)
        print(f"exact {exact:.4f}, {result}")
        # an error of 1 nat is caught (tests/helpers/evidence_checks.py)
        check_against_exact(result, exact, detect=1.0, comparisons=2)


@pytest.mark.slow
def test_standard_error_is_calibrated(model, exact):
    """The exact value within ±2 se on >= 80% of 20 seeds."""
    z = [(r.log_evidence - exact) / r.se for r in (
        evidence(model, n_temperatures=8, draws=500, tune=300, chains=2, cores=1,
                 random_seed=200 + seed) for seed in range(20))]
    z = np.array(z)
    print(f"|z| < 2 on {np.mean(np.abs(z) < 2):.2f}, mean z {z.mean():.2f}, sd {z.std():.2f}")
    assert np.mean(np.abs(z) < 2) >= 0.8
