"""The GGM steps' ``sweeps`` (thinning inside the step) and their cached Gram matrix."""

import numpy as np
import pytest

from custom_ops.ggm.gibbs import gram
from inference.gibbs.ggm import BGLassoBlockGibbs, SSSLBlockGibbs
from pp_models import ggm


def _data():
    return np.random.default_rng(1).normal(size=(30, 4))


@pytest.mark.parametrize(("build", "cls", "names"), [
    (lambda: ggm.model(_data(), lam=(2.0, 1.0)), BGLassoBlockGibbs, ("Omega", "lam")),
    (lambda: ggm.model(_data(), prior="spike_slab"), SSSLBlockGibbs, ("Omega",)),
])
def test_k_sweeps_in_one_step_are_k_steps(build, cls, names):
    model = build()
    start = model.initial_point()
    thinned = cls([model[n] for n in names], model=model, rng=np.random.default_rng(5),
                  sweeps=3)
    single = cls([model[n] for n in names], model=model, rng=np.random.default_rng(5))
    once, _ = thinned.step(start)
    point = start
    for _ in range(3):
        point, _ = single.step(point)
    for name in once:
        np.testing.assert_array_equal(once[name], point[name])
    # and not one sweep's result
    one, _ = cls([model[n] for n in names], model=model,
                 rng=np.random.default_rng(5)).step(start)
    assert not np.array_equal(one["Omega_cholesky-cov__"],
                              once["Omega_cholesky-cov__"])


def test_gram_matrix_follows_the_data():
    model = ggm.model(_data(), prior="spike_slab")
    step = SSSLBlockGibbs([model["Omega"]], model=model)
    X = np.random.default_rng(2).normal(size=(30, 4))
    np.testing.assert_allclose(step._gram(X), X.T @ X, rtol=1e-12)
    X[0, 0] += 1.0  # changed in place (as getting-it-right's free data do between steps)
    np.testing.assert_allclose(step._gram(X), X.T @ X, rtol=1e-12)
    np.testing.assert_allclose(step._gram(X[:20]), gram(np.ascontiguousarray(X[:20])))


def test_factory_passes_sweeps_per_draw():
    model = ggm.model(_data(), sweeps_per_draw=4)
    from pp_models.model_info import get_info

    assert get_info(model).step_hints[0].options == {"sweeps": 4}
    with pytest.raises(ValueError, match="sweeps_per_draw must be >= 1"):
        ggm.model(_data(), sweeps_per_draw=0)
