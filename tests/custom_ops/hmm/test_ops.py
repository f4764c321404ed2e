"""The forward-algorithm Op: value against enumeration and the kernel, shapes,
verify_grad on every continuous input, Numba against Python."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from custom_ops.hmm.ops import HMMLogEvidence, HMMLogEvidenceGrad, hmm_log_evidence
from tests.helpers.backends import PYTHON_MODE, assert_numba_matches_python
from tests.oracles.hmm import exact_posterior, random_hmm

OFFSETS = np.array([0, 2, 5], dtype=np.int64)


@pytest.fixture(scope="module")
def values():
    return random_hmm(np.random.default_rng(0), 3, 5)


def _symbols():
    return pt.vector("log_pi0"), pt.matrix("log_P"), pt.matrix("log_lik")


def test_value_matches_enumeration(values):
    a, b, c = _symbols()
    f = pytensor.function([a, b, c], hmm_log_evidence(a, b, c, OFFSETS), mode=PYTHON_MODE)
    np.testing.assert_allclose(f(*values), exact_posterior(*values, OFFSETS)[0].sum(), rtol=1e-13)


def test_gradient_is_the_expected_counts(values):
    a, b, c = _symbols()
    out = hmm_log_evidence(a, b, c, OFFSETS)
    f = pytensor.function([a, b, c], pt.grad(out, [a, b, c]), mode=PYTHON_MODE)
    _, gamma, xi, initial = exact_posterior(*values, OFFSETS)
    got = f(*values)
    for g, ref in zip(got, (initial, xi, gamma), strict=True):
        np.testing.assert_allclose(g, ref, atol=1e-10)


def test_shapes_and_validation(values):
    a, b, c = _symbols()
    out = hmm_log_evidence(a, b, c, OFFSETS)
    assert out.ndim == 0
    grads = HMMLogEvidenceGrad()(a, b, c, OFFSETS)
    f = pytensor.function([a, b, c], [g.shape for g in grads], mode=PYTHON_MODE)
    assert [tuple(s) for s in f(*values)] == [(3,), (3, 3), (5, 3)]
    with pytest.raises(TypeError, match="log_P"):
        hmm_log_evidence(a, a, c, OFFSETS)
    with pytest.raises(TypeError, match="offsets"):
        hmm_log_evidence(a, b, c, np.array([0.0, 5.0]))
    with pytest.raises(ValueError, match="number of states"):
        hmm_log_evidence(np.zeros(2), np.zeros((3, 3)), c, OFFSETS)
    f = pytensor.function([a, b, c], hmm_log_evidence(a, b, c, np.array([0, 4])), mode=PYTHON_MODE)
    with pytest.raises(ValueError, match="offsets"):
        f(*values)


@pytest.mark.parametrize("wrt", [0, 1, 2])
def test_verify_grad(values, wrt):
    rng = np.random.default_rng(1)
    args = [np.asarray(v) for v in values]

    def fn(x):
        inputs = list(args)
        inputs[wrt] = x
        return hmm_log_evidence(*inputs, OFFSETS)

    pytensor.gradient.verify_grad(fn, [args[wrt]], rng=rng, mode=PYTHON_MODE)


def test_numba_matches_python(values):
    a, b, c = _symbols()
    out = hmm_log_evidence(a, b, c, OFFSETS)
    assert_numba_matches_python(
        [a, b, c], [out, *pt.grad(out, [a, b, c])], values, op=HMMLogEvidence
    )
