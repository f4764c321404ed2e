"""PYDTLogProb and its gradient call their kernels through C entry points
(custom_ops.pydt, "Numba registrations"): a graph loaded from PyTensor's cache in a new
process finds them, loaded from Numba's cache, and gives the numbers of the kernels."""

import numpy as np

from tests.custom_ops.test_numba_cache import GRAPH_SCRIPT_PRELUDE, run_twice_on_one_cache

# A multifurcating tree over 5 leaves (root 8 -> 5, 6, leaf 4; slot 7 unused), the value
# and every gradient with data as a variable (wrt_data=True) and as a constant (False),
# then invalid parameters (alpha >= 1) through the same graph.
PYDT_GRAPH = GRAPH_SCRIPT_PRELUDE + """
from custom_ops import _numba_cache, pydt

parent = np.array([5, 5, 6, 6, 8, 8, 8, -2, -1])
log1m_t = np.log1p(-np.array([0.6, 0.8, 0.0, 0.2]))
X = np.random.default_rng(4).normal(size=(5, 3))
pydt.check_tree(parent, log1m_t, 5)
l1, Xv = pt.dvector("log1m_t"), pt.dmatrix("X")
c, theta, alpha, sigma2 = (pt.dscalar(name) for name in ("c", "theta", "alpha", "sigma2"))
params = [c, theta, alpha, sigma2]
lp, ll = pydt.PYDTLogProb()(parent, l1, Xv, *params)
total = 0.7 * lp + 1.3 * ll
fn = pytensor.function([l1, Xv, *params],
                       [lp, ll, *pytensor.grad(total, [l1, Xv, *params])], mode="NUMBA")
lp_c, ll_c = pydt.PYDTLogProb()(parent, l1, pt.constant(X), *params)
fn_const = pytensor.function([l1, *params],
                             pytensor.grad(lp_c + ll_c, [l1, *params]), mode="NUMBA")
args = (1.5, 0.8, 0.3, 0.9)
out = [np.asarray(o).tolist() for o in fn(log1m_t, X, *args)]
out_const = [np.asarray(o).tolist() for o in fn_const(log1m_t, *args)]
bad = [np.asarray(o).tolist() for o in fn(log1m_t, X, 1.5, 0.8, 1.2, 0.9)]
ref = pydt.pydt_value_and_grad(parent, log1m_t, X, *args, 0.7, 1.3)
ref_const = pydt.pydt_value_and_grad(parent, log1m_t, X, *args, 1.0, 1.0)
print(json.dumps({"out": out, "out_const": out_const, "bad": bad, "compiled": compiled,
                  "entry_cache_hits": {symbol: entry.cache_hits for symbol, entry
                                       in _numba_cache._ENTRY_POINTS.items()},
                  "reference": [np.asarray(r).tolist() for r in ref],
                  "reference_const": [np.asarray(r).tolist() for r in ref_const]}))
"""


def test_a_pydt_graph_loaded_from_pytensors_cache_finds_its_kernels(tmp_path):
    first, second = run_twice_on_one_cache(PYDT_GRAPH, tmp_path)
    assert any("numba_funcified_fgraph" in name for name in first["compiled"])
    assert not [name for name in second["compiled"]
                if "fgraph" in name or "pydt" in name or "entry" in name], second["compiled"]
    hits = second["entry_cache_hits"]
    assert sorted(symbol.split("_")[2] for symbol in hits) == ["forward", "grad"], hits
    assert all(symbol.startswith("ppm_pydt_") for symbol in hits), hits
    assert list(hits.values()) == [1, 1]
    assert second["out"] == first["out"] and second["out_const"] == first["out_const"]
    # (lp, ll, d log1m_t, d X, d c, d theta, d alpha, d sigma2), weights 0.7 and 1.3
    lp, ll, g_l, g_x, *g_params = first["reference"]
    got = first["out"]
    np.testing.assert_allclose(got[:2], [lp, ll], rtol=1e-12)
    # the unused slot's entry of d log1m_t is zero in both
    np.testing.assert_allclose(got[2], g_l, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[3], g_x, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[4:], g_params, rtol=1e-10, atol=1e-12)
    _, _, g_l, _, *g_params = first["reference_const"]
    np.testing.assert_allclose(first["out_const"][0], g_l, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(first["out_const"][1:], g_params, rtol=1e-10, atol=1e-12)
    # alpha >= 1 is outside the parameter space: zero density and NaN gradients, as the
    # kernels give, in the process that loaded everything from the caches
    assert second["bad"][:2] == [-np.inf, -np.inf]
    assert all(np.all(np.isnan(g)) for g in second["bad"][2:])
