"""Post-fit outputs of the PYDT model: the predictive density of new points (Knowles
2012 §7.6) and a picture of the most probable sampled tree."""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from scipy.special import logsumexp

from custom_ops.pydt.ops import check_parameters, pydt_forward
from pp_models.model_info import posterior_with_labels
from pp_models.pydt.attach import children_lists, leaf_counts_from, sample_attach
from pp_models.pydt.greedy import _grow
from pp_models.trees import DiffusionTree
from pp_models.validation import check_int, rng_from_seed

__all__ = ["log_predictive", "log_predictive_tree", "plot_results"]


#: composite Gauss-Legendre rule of the quadrature predictive: nodes per panel, and the
#: widest panel in A(t) / c = -log(1 - t) (the integrand is smooth on that scale: its
#: variance changes by a factor e per unit). On 100-leaf prior trees in 2-D this rule is
#: within 5e-4 of one with 16 nodes per panel of width 2 (max over 200 points).
_GL_NODES, _GL_PANEL = 8, 4.0
#: a leaf segment is integrated up to -log(1 - t) = u(parent) + this: beyond it the new
#: point's Brownian variance sigma2 (1 - t) is below e^-40 sigma2 and the Gaussian around
#: the leaf contributes nothing at any point farther than ~e^-18 sigma from it
_LEAF_SPAN = 40.0


def _location_messages(tree, X, sigma2):
    """Gaussian messages about the location of every node (internal ones integrated out,
    digest §3.9): ``inside[v]`` = (mean, variance) of x_v given the data below v (variance
    0 at a leaf); ``top[v]`` = (mean, variance) of the location of v's parent given all
    data not below v (the origin, variance 0, for the root); both isotropic (one variance
    shared by the D columns)."""
    n = tree.n_leaves
    parent = tree.parent
    kids = children_lists(parent)
    root = tree.root
    one_minus_t = np.zeros(parent.shape[0])  # leaves sit at t = 1
    one_minus_t[n:] = np.exp(tree.log1m_t)
    order = [root]
    for v in order:
        order.extend(kids[v])
    d = X.shape[1]
    in_mean = np.zeros((parent.shape[0], d))
    in_var = np.zeros(parent.shape[0])
    in_mean[:n] = X
    # precision and precision-weighted mean of each child's message at its parent
    msg_prec = np.zeros(parent.shape[0])
    for v in reversed(order):
        if v >= n:
            prec = msg_prec[kids[v]]
            in_var[v] = 1.0 / prec.sum()
            in_mean[v] = in_var[v] * (prec[:, None] * in_mean[kids[v]]).sum(axis=0)
        if v != root:
            u = parent[v]
            msg_prec[v] = 1.0 / (in_var[v] + sigma2 * (one_minus_t[u] - one_minus_t[v]))
    top_mean = np.zeros((parent.shape[0], d))
    top_var = np.zeros(parent.shape[0])
    for u in order:
        if u < n:
            continue
        if u == root:  # the root hangs from the origin at t = 0
            out_prec, out_wmean = 1.0 / (sigma2 * (1.0 - one_minus_t[u])), np.zeros(d)
        else:
            w = top_var[u] + sigma2 * (one_minus_t[parent[u]] - one_minus_t[u])
            out_prec, out_wmean = 1.0 / w, top_mean[u] / w
        prec_all = out_prec + msg_prec[kids[u]].sum()
        wmean_all = out_wmean + (msg_prec[kids[u], None] * in_mean[kids[u]]).sum(axis=0)
        for v in kids[u]:
            prec = prec_all - msg_prec[v]
            top_var[v] = 1.0 / prec
            top_mean[v] = (wmean_all - msg_prec[v] * in_mean[v]) / prec
    return order, kids, one_minus_t, in_mean, in_var, top_mean, top_var


def _gauss_legendre(length):
    """Composite Gauss-Legendre nodes and weights on [0, length]."""
    panels = max(1, math.ceil(length / _GL_PANEL))
    x, w = np.polynomial.legendre.leggauss(_GL_NODES)
    h = length / panels
    starts = h * np.arange(panels)[:, None]
    return (starts + h * (x + 1) / 2).ravel(), np.tile(h * w / 2, panels)


def _log_predictive_quadrature(tree, X, X_new, c, theta, alpha, sigma2):
    """The new point's density with its divergence position integrated out: exactly over
    the branch it takes (Eqs. 4.10-4.11) and by quadrature over its divergence time on a
    segment (Eq. 4.9: an exponential waiting time in A(t) = -c log(1 - t)), the location
    of the divergence point from the Gaussian messages."""
    order, kids, omt, in_mean, in_var, top_mean, top_var = _location_messages(tree, X,
                                                                              sigma2)
    n = tree.n_leaves
    root = tree.root
    parent = tree.parent
    counts = leaf_counts_from(root, kids, n)
    d = X.shape[1]
    log_terms = []  # (log weight, mean weight on top message, variance, segment v)
    log_reach = np.zeros(parent.shape[0])  # log P(the new point reaches v's segment)
    for v in order:
        u = parent[v]
        omt_top = 1.0 if v == root else omt[u]
        m = counts[v]
        rate = c * math.exp(math.lgamma(m - alpha) - math.lgamma(m + 1.0 + theta))
        # r = -log(1 - t) - u_top: the waiting time is Exp(rate) in r
        span = _LEAF_SPAN if v < n else math.log(omt_top / omt[v])
        r, w = _gauss_legendre(span)
        one_minus_t = omt_top * np.exp(-r)
        top = top_var[v] + sigma2 * (omt_top - one_minus_t)
        bottom = in_var[v] + sigma2 * (one_minus_t - omt[v])
        lam = bottom / (top + bottom)  # weight of the top message's mean
        var = top * bottom / (top + bottom) + sigma2 * one_minus_t
        log_w = log_reach[v] + math.log(rate) - rate * r + np.log(w)
        log_terms.append((log_w, lam, var, v))
        if v < n:
            continue
        log_pass = log_reach[v] - rate * span
        denom = math.log(m + theta)
        if theta + alpha * len(kids[v]) > 0:  # a new branch at v (Eq. 4.11)
            prec = 1.0 / (top_var[v] + sigma2 * (omt_top - omt[v])) + 1.0 / in_var[v]
            node_var = 1.0 / prec + sigma2 * omt[v]
            node_lam = (1.0 / (top_var[v] + sigma2 * (omt_top - omt[v]))) / prec
            log_terms.append((np.array([log_pass + math.log(theta + alpha * len(kids[v]))
                                        - denom]), np.array([node_lam]),
                              np.array([node_var]), v))
        for w_ in kids[v]:  # follow an existing branch (Eq. 4.10)
            log_reach[w_] = log_pass + math.log(counts[w_] - alpha) - denom
    out = np.full(X_new.shape[0], -np.inf)
    for log_w, lam, var, v in log_terms:
        a, b = top_mean[v], in_mean[v]
        diff_b = X_new - b
        p = (diff_b ** 2).sum(axis=1)
        q = diff_b @ (a - b)
        rr = float(((a - b) ** 2).sum())
        dist = p[:, None] - 2.0 * lam * q[:, None] + lam ** 2 * rr
        lp = log_w - 0.5 * d * np.log(2 * math.pi * var) - 0.5 * dist / var
        out = np.logaddexp(out, logsumexp(lp, axis=1))
    return out


def log_predictive_tree(tree, X, X_new, *, c, theta, alpha, sigma2, n_positions=None,
                        random_seed=None):
    """log p(x* | tree, X, c, theta, alpha, sigma2) for each row of ``X_new``.

    The new point diverges from the tree as the generative process says (Eqs. 4.9-4.11)
    and moves by Brownian motion to t = 1; its density is the expectation over that
    position of p(X, x* | tree + x*) / p(X | tree).

    ``n_positions=None`` (default): the expectation is computed, not sampled: a sum over
    every segment and branch point of the probability that the new point diverges there
    times the Gaussian it then has (the divergence point's location given the data by
    message passing, plus sigma2 (1 - t) of Brownian motion), integrated over the
    divergence time on each segment by composite Gauss-Legendre quadrature (§7.6 does
    this with about 3 sampled times per branch). ``n_positions=k``: a Monte Carlo
    average over ``k`` positions drawn from the generative process, each scored by the
    Op's message passing on the grown tree (shared by all rows of ``X_new``; an
    independent check of the quadrature, and biased low in log space for small ``k``).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    X_new = np.ascontiguousarray(X_new, dtype=np.float64)
    if X_new.ndim != 2 or X_new.shape[1] != X.shape[1]:
        raise ValueError(f"X_new: must have {X.shape[1]} columns like X, got shape "
                         f"{X_new.shape}")
    check_parameters(c, theta, alpha, sigma2)
    if n_positions is None:
        return _log_predictive_quadrature(tree, X, X_new, c, theta, alpha, sigma2)
    n_positions = check_int(n_positions, "n_positions", minimum=1)
    rng = rng_from_seed(random_seed)
    n = tree.n_leaves
    base = pydt_forward(tree.parent, tree.log1m_t, X, c, theta, alpha, sigma2)[1]
    parent, log1m_t = _grow(tree.parent, tree.log1m_t, n)
    grown = DiffusionTree(parent, log1m_t, validate=False)
    out = np.empty((n_positions, X_new.shape[0]))
    data = np.empty((n + 1, X.shape[1]))
    data[:n] = X
    for k in range(n_positions):
        mode, anchor, l_new = sample_attach(rng, tree, c=c, theta=theta, alpha=alpha)
        trial = grown.copy()
        # the grown tree numbers the internal nodes one higher (_grow)
        trial.attach(n, mode, anchor if anchor < n else anchor + 1, l_new)
        for j, x in enumerate(X_new):
            data[n] = x
            out[k, j] = pydt_forward(trial.parent, trial.log1m_t, data, c, theta, alpha,
                                     sigma2)[1] - base
    return logsumexp(out, axis=0) - math.log(n_positions)


def log_predictive(posterior, X, X_new, *, n_positions=None, max_draws=200,
                   random_seed=None):
    """Posterior predictive log density of each row of ``X_new``: the average over
    (up to ``max_draws``, evenly thinned) posterior draws of :func:`log_predictive_tree`
    (``n_positions``: ``None`` integrates the new point's position out by quadrature,
    an integer samples that many positions per draw).

    ``posterior`` is the result of ``fit(pydt.model(X))`` (a DataTree; the tree is read
    from its ``posterior_labels`` group) or a Dataset with ``tree``, ``c``, ``sigma2``
    and, unless the model is binary, ``theta`` and ``alpha``.
    """
    per_draw = _log_predictive_per_draw(posterior, X, X_new, n_positions, max_draws,
                                        random_seed)[1]
    return logsumexp(per_draw, axis=0) - math.log(per_draw.shape[0])


def _log_predictive_per_draw(posterior, X, X_new, n_positions, max_draws, random_seed):
    """(chain of each used draw, log p(x* | draw) of shape (draws used, len(X_new)))."""
    from pp_models.pydt.model import trees_from_posterior

    if isinstance(posterior, xr.DataTree) and "posterior" in posterior.children:
        ds = posterior_with_labels(posterior)  # a whole fit: the tree is a label variable
    else:
        ds = posterior.to_dataset() if hasattr(posterior, "to_dataset") else posterior
    trees = trees_from_posterior(ds)
    n_draws = ds.sizes.get("draw", len(trees))

    def flat(name, default):
        return ds[name].values.reshape(-1) if name in ds else np.full(len(trees), default)

    c, sigma2 = flat("c", 1.0), flat("sigma2", 1.0)
    theta, alpha = flat("theta", 0.0), flat("alpha", 0.0)
    idx = np.unique(np.linspace(0, len(trees) - 1, min(max_draws, len(trees))).astype(int))
    rng = rng_from_seed(random_seed)
    per_draw = np.array([
        log_predictive_tree(trees[i], X, X_new, c=c[i], theta=theta[i], alpha=alpha[i],
                            sigma2=sigma2[i], n_positions=n_positions, random_seed=rng)
        for i in idx
    ])
    return idx // n_draws, per_draw


def _best_draw(posterior, X):
    """Index (flat over chains) of the draw with the highest ``log p(tree, X | c, theta,
    alpha, sigma2)`` (the Op's joint); the last draw when ``X`` is not at hand."""
    from pp_models.pydt.model import trees_from_posterior

    trees = trees_from_posterior(posterior)
    if X is None:
        return len(trees) - 1, trees, None

    def flat(name, default):
        if name in posterior:
            return posterior[name].values.reshape(-1)
        return np.full(len(trees), default)

    c, sigma2 = flat("c", 1.0), flat("sigma2", 1.0)
    theta, alpha = flat("theta", 0.0), flat("alpha", 0.0)
    X = np.ascontiguousarray(X, dtype=np.float64)
    log_joint = np.array([
        sum(pydt_forward(t.parent, t.log1m_t, X, c[i], theta[i], alpha[i], sigma2[i]))
        for i, t in enumerate(trees)
    ])
    best = int(np.argmax(np.where(np.isfinite(log_joint), log_joint, -np.inf)))
    return best, trees, float(log_joint[best])


def plot_results(dt, path=None):
    """Dendrogram of the posterior draw of highest joint density of tree and data given
    the draw's hyperparameters (a MAP tree among the draws), divergence time on the
    vertical axis spaced as ``-log(1 - t)`` and the leaves named by the data's rows
    (``DiffusionTree.plot``). Saves a PNG to ``path`` when given; returns
    the figure. ``ppzoo fit pydt`` writes it as ``tree.png``.
    """
    import matplotlib.pyplot as plt

    if not isinstance(dt, xr.DataTree):
        raise TypeError(f"dt: expected the DataTree fit returns, got {type(dt).__name__}")
    posterior = posterior_with_labels(dt)
    X = None
    if "observed_data" in dt.children and "X" in dt["observed_data"]:
        X = dt["observed_data"]["X"].values
    best, trees, log_joint = _best_draw(posterior, X)
    tree = trees[best]
    n_draws = posterior.sizes["draw"]
    chain, draw = divmod(best, n_draws)
    labels = None
    if X is not None:
        obs = dt["observed_data"]["X"]
        if obs.dims and obs.dims[0] in obs.coords:
            labels = [str(v) for v in obs.coords[obs.dims[0]].values]
    fig, ax = plt.subplots(figsize=(min(max(5.0, 0.1 * tree.n_leaves), 20.0), 4.8))
    tree.plot(ax=ax, labels=labels)
    if log_joint is not None:
        title = (f"PYDT: most probable sampled tree (chain {chain}, draw {draw})\n"
                 f"log p(tree, X | hyperparameters) = {log_joint:.1f}")
    else:
        title = f"PYDT: last sampled tree (chain {chain}, draw {draw})"
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(f"{tree.n_leaves} data points, {tree.n_internal} branch points")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, format="png", dpi=110)
        plt.close(fig)
    return fig
