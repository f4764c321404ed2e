"""The evidence of collapsed LDA (``pp_models.lda``) against the sum over every topic
assignment of a 7-token corpus (``tests/oracles/lda.py``: Pólya urns,
independent of the kernels). The stepping-stone and thermodynamic estimates from one
tempered run of the collapsed Gibbs step must lie within their tolerance; ``-m slow``
measures the coverage of ±2 se over 20 seeds.
"""

import numpy as np
import pytest

from inference import evidence, fit
from inference.tempering import estimate_from_tempering
from pp_models import lda
from tests.helpers.evidence_checks import check_against_exact
from tests.oracles.lda import LDAEnumeration

DOCS = [[0, 1, 1], [2, 0], [1, 2]]
ALPHA = np.array([0.5, 0.9])
ETA = np.array([0.3, 0.7, 0.4])


@pytest.fixture(scope="module")
def model():
    return lda.model(DOCS, n_topics=2, alpha=ALPHA, eta=ETA, n_words=3)


@pytest.fixture(scope="module")
def exact():
    return LDAEnumeration(DOCS, 2, ALPHA, ETA).log_evidence()


def test_lda_evidence_matches_the_sum_over_assignments(model, exact):
    dt = fit(model, draws=800, tune=300, chains=2, cores=1, random_seed=5,
             progressbar=False, tempering=8)
    for method in ("stepping_stone", "thermodynamic"):
        result = estimate_from_tempering(dt, method)
        print(f"exact {exact:.4f}, {result}")
        # an error of 1 nat is caught (tests/helpers/evidence_checks.py)
        check_against_exact(result, exact, detect=1.0, comparisons=2)


@pytest.mark.slow
def test_standard_error_is_calibrated(model, exact):
    """The exact value within ±2 se on >= 90% of 20 seeds."""
    z = [(r.log_evidence - exact) / r.se for r in (
        evidence(model, n_temperatures=8, draws=500, tune=300, chains=2, cores=1,
                 random_seed=100 + seed) for seed in range(20))]
    z = np.array(z)
    print(f"|z| < 2 on {np.mean(np.abs(z) < 2):.2f}, mean z {z.mean():.2f}, sd {z.std():.2f}")
    assert np.mean(np.abs(z) < 2) >= 0.9
