"""The compiled centred update of the PYDT's c, theta, alpha given the tree and the
ridge rounds (``custom_ops.pydt.hyper``):

- its conditional log density against the model's own: PyMC's log density of the
  hyperparameter on its unconstrained scale (``model.logp(jacobian=True)``) plus the
  tree's prior by the full recursion (``pydt_forward``), at the thesis's priors and the
  getting-it-right tests' (value test, no sampling);
- the cached terms after every branch-point move and every centred update of a call of
  ``pydt_branch_hyper`` against the full recursion (``check=True``).

Its stationary distribution is tested through the tree step
(``tests/inference/gibbs/pydt/test_noncentred.py``: the centred update alone, with its
planted-bug twin without the transforms' Jacobian, and the compiled update against the
Python one it replaced; ``test_tempered.py``: the ridge rounds at beta = 0.3).
"""

import numpy as np
import pytest

from custom_ops.pydt.hyper import (
    BETA_LOGIT,
    GAMMA_LOG,
    CentredHyper,
    RidgePlan,
    hyper_log_density,
    pydt_branch_hyper,
)
from custom_ops.pydt.messages import PYDTParameters, full_state
from custom_ops.pydt.ops import pydt_forward
from pp_models import pydt
from pp_models.trees import DiffusionTree

NAMES = ("c", "theta", "alpha")
#: priors other than the thesis's, with rates other than 1 (the getting-it-right tests')
OTHER_PRIORS = {"c": (4.0, 4.0), "theta": (2.0, 4.0), "alpha": (2.0, 3.0)}
VALUE_NAMES = ("c_log__", "theta_log__", "alpha_logodds__")


def _hyper(priors, x):
    p = {**pydt.DEFAULT_PRIORS, **priors}
    return CentredHyper(
        np.array([GAMMA_LOG, GAMMA_LOG, BETA_LOGIT]),
        np.array([p[name][0] for name in NAMES]),
        np.array([p[name][1] for name in NAMES]),
        np.ones(3, dtype=bool),
        np.array(x, dtype=np.float64),
    )


#: slow: its compile of two Python entry points (the state, the conditional) costs a cold
#: run ~10 s; the default run compares the compiled update with the Python one it
#: replaced draw for draw (test_noncentred.py), which evaluates the model's own density
@pytest.mark.slow
@pytest.mark.parametrize("priors", [{}, OTHER_PRIORS], ids=["thesis", "other"])
def test_conditional_is_the_models_log_density(priors):
    draw = pydt.sample_prior(9, c=1.3, theta=0.8, alpha=0.4, dim=0, random_seed=5)[0]
    tree = draw.tree
    model = pydt.model(np.zeros((9, 1)), priors=priors)
    values = {v.name: v for v in model.value_vars}
    hyper_logp = {
        name: model.compile_fn(
            model.logp(vars=[model[name]], jacobian=True),
            inputs=[values[key]],
            on_unused_input="ignore",
        )
        for name, key in zip(NAMES, VALUE_NAMES, strict=True)
    }
    current = {"c": 1.3, "theta": 0.8, "alpha": 0.4}
    x_now = [np.log(1.3), np.log(0.8), np.log(0.4 / 0.6)]
    hyper = _hyper(priors, x_now)
    back = {"c": np.exp, "theta": np.exp, "alpha": lambda x: 1.0 / (1.0 + np.exp(-x))}
    X0 = np.zeros((9, 0))

    def both(k, name, key, x):
        st = full_state(tree.parent.copy(), tree.log1m_t.copy(), X0, 1.3, 0.8, 0.4, 1.0, 1.0)
        ours = hyper_log_density(st, hyper, k, x)
        moved = {**current, name: back[name](x)}
        tree_prior = pydt_forward(
            tree.parent, tree.log1m_t, X0, moved["c"], moved["theta"], moved["alpha"], 1.0
        )[0]
        return ours, float(hyper_logp[name]({key: np.asarray(x)})) + tree_prior

    for k, (name, key) in enumerate(zip(NAMES, VALUE_NAMES, strict=True)):
        ours0, theirs0 = both(k, name, key, x_now[k])
        for x in (x_now[k] - 1.7, x_now[k] + 0.3, x_now[k] + 2.1):
            ours, theirs = both(k, name, key, x)
            # the conditional up to a constant: what the slice sampler compares
            assert ours - ours0 == pytest.approx(theirs - theirs0, abs=1e-9), (name, x)
            # the normalised value too (PyTensor computes the constants from the model's
            # float32 parameters)
            assert ours == pytest.approx(theirs, rel=1e-6), (name, x)


def test_cached_terms_follow_every_move_and_update():
    draw = pydt.sample_prior(14, c=1.0, theta=1.5, alpha=0.3, dim=2, random_seed=3)[0]
    tree = draw.tree.copy()
    x = np.array([0.0, np.log(1.5), np.log(0.3 / 0.7)])
    hyper = _hyper(OTHER_PRIORS, x.copy())
    params = PYDTParameters(1.0, 1.5, 0.3, 0.7, 0.6)
    accepted, round_accepted, err = pydt_branch_hyper(
        np.random.default_rng(1),
        tree.parent,
        tree.log1m_t,
        draw.X,
        params,
        RidgePlan(14, 3, 14),
        hyper,
        True,
    )
    assert err < 1e-9
    assert accepted + round_accepted > 0
    assert np.all(hyper.x != x)
    DiffusionTree(tree.parent, tree.log1m_t)  # validates the edited tree
