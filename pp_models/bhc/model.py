"""Bayesian hierarchical clustering (Heller 2007, ch. 3; Heller & Ghahramani 2005).

* :func:`fit` builds the tree: greedy agglomeration that merges the pair with the largest
  merge posterior r_k (Alg. 3.2, with a heap: O(n^2) pair evaluations, O(n^2 log n)
  time, O(n^2) memory), or one of the randomized variants for large n (§3.6: RBHC,
  Alg. 3.4-3.5, ``method="randomized"``; EMBHC, Alg. 3.6, ``method="embhc"``).
  It returns a :class:`BHCResult` (scipy linkage, evidence, r_k, tree cut, predictive,
  DPM lower bound, dendrogram plot).
* :func:`model` is the PyMC model of the DP concentration and the conjugate prior's
  hyperparameters for a fixed tree: its potential is the tree-consistent evidence
  log p(D | T) (:class:`custom_ops.bhc.BHCEvidence`), so NUTS or ``find_MAP`` apply.
* :func:`learn` alternates tree building and type-II maximum-likelihood optimisation
  of the hyperparameters (§3.4.1's EM-like scheme) until the evidence stops improving.

Likelihoods (conjugate families of :mod:`custom_ops.conjugate`): ``"bernoulli"`` (binary
data, Beta prior per dimension), ``"multinomial"`` (count vectors, Dirichlet),
``"gaussian"`` (Normal-Inverse-Wishart, full covariance), ``"diag_gaussian"``
(independent Normal-Gamma per dimension).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numba
import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from scipy import optimize

from custom_ops import bhc as ops
from custom_ops import conjugate as cj
from pp_models.model_info import ZooModelInfo, attach_info
from pp_models.registry import ModelEntry

__all__ = ["BHCResult", "default_hyper", "fit", "learn", "model"]

LIKELIHOODS = tuple(cj.FAMILY_CODES)
METHODS = ("greedy", "randomized", "embhc")
# greedy keeps every candidate pair in a heap: ~ n^2 entries of 16 bytes
_MAX_GREEDY_N = 12_000
_jit = numba.njit(cache=True)


# ======================================================================================
# greedy agglomeration kernel (Heller 2007 Alg. 3.2)
# ======================================================================================
@_jit
def _better(k1, i1, j1, k2, i2, j2):
    # larger log r first; ties broken by the smaller ids, so runs are deterministic
    if k1 != k2:
        return k1 > k2
    if i1 != i2:
        return i1 < i2
    return j1 < j2


@_jit
def _sift_down(keys, hi, hj, size, pos):
    while True:
        left = 2 * pos + 1
        if left >= size:
            return
        best = left
        right = left + 1
        if right < size and _better(
            keys[right], hi[right], hj[right], keys[left], hi[left], hj[left]
        ):
            best = right
        if _better(keys[best], hi[best], hj[best], keys[pos], hi[pos], hj[pos]):
            keys[pos], keys[best] = keys[best], keys[pos]
            hi[pos], hi[best] = hi[best], hi[pos]
            hj[pos], hj[best] = hj[best], hj[pos]
            pos = best
        else:
            return


@_jit
def _push(keys, hi, hj, size, key, i, j):
    pos = size
    keys[pos] = key
    hi[pos] = i
    hj[pos] = j
    while pos > 0:
        parent = (pos - 1) // 2
        if _better(keys[pos], hi[pos], hj[pos], keys[parent], hi[parent], hj[parent]):
            keys[pos], keys[parent] = keys[parent], keys[pos]
            hi[pos], hi[parent] = hi[parent], hi[pos]
            hj[pos], hj[parent] = hj[parent], hj[pos]
            pos = parent
        else:
            break
    return size + 1


@_jit
def _bernoulli_tables(a, b, n_max):
    """lgamma differences for integer counts: LA[j, m] = log Γ(a_j + m) - log Γ(a_j), LB
    likewise, LAB[N] = Σ_j log Γ(a_j + b_j + N) - log Γ(a_j + b_j). Turns the Beta-Bernoulli
    marginal into O(d) table look-ups (no lgamma in the O(n^2 d) pair loop)."""
    d = a.shape[0]
    LA = np.empty((d, n_max + 1))
    LB = np.empty((d, n_max + 1))
    LAB = np.zeros(n_max + 1)
    for j in range(d):
        ga = math.lgamma(a[j])
        gb = math.lgamma(b[j])
        gab = math.lgamma(a[j] + b[j])
        for m in range(n_max + 1):
            LA[j, m] = math.lgamma(a[j] + m) - ga
            LB[j, m] = math.lgamma(b[j] + m) - gb
            LAB[m] += math.lgamma(a[j] + b[j] + m) - gab
    return LA, LB, LAB


@_jit
def _pair_lml(fam, si, sj, H, tmp, use_table, LA, LB, LAB):
    if use_table:
        N = int(si[0] + sj[0] + 0.5)
        out = -LAB[N]
        for j in range(LA.shape[0]):
            m = int(si[1 + j] + sj[1 + j] + 0.5)
            out += LA[j, m] + LB[j, N - m]
        return out
    for s in range(tmp.shape[0]):
        tmp[s] = si[s] + sj[s]
    return cj.log_marginal(fam, tmp, H)


@_jit
def _pair_score(fam, si, sj, ldi, ldj, lpi, lpj, la, H, tmp, use_table, LA, LB, LAB):
    """(log r_k, log d_k, log p(D_k | T_k)) for the candidate merge of nodes i and j."""
    prior_one = la + math.lgamma(si[0] + sj[0])
    ldk = ops._logaddexp(prior_one, ldi + ldj)
    A = prior_one - ldk + _pair_lml(fam, si, sj, H, tmp, use_table, LA, LB, LAB)
    B = ldi + ldj - ldk + lpi + lpj
    lpk = ops._logaddexp(A, B)
    return A - lpk, ldk, lpk


@_jit
def greedy_kernel(fam, init_stats, init_log_d, init_log_p, alpha, H, use_table, LA, LB, LAB):
    """Greedy BHC over ``n0`` initial nodes (points, or clusters with their own subtree's
    log d and log p). Returns the merge list (n0 - 1, 2) over node ids 0..2 n0 - 2 and the
    number of candidate pairs scored."""
    n0 = init_stats.shape[0]
    S = init_stats.shape[1]
    m = 2 * n0 - 1
    la = math.log(alpha)
    stats = np.empty((m, S))
    log_d = np.empty(m)
    log_p = np.empty(m)
    stats[:n0] = init_stats
    log_d[:n0] = init_log_d
    log_p[:n0] = init_log_p
    alive = np.zeros(m, dtype=np.bool_)
    alive[:n0] = True
    alive_ids = np.empty(n0, dtype=np.int64)
    for i in range(n0):
        alive_ids[i] = i
    n_alive = n0
    cap = max(1, n0 * (n0 - 1))
    keys = np.empty(cap)
    hi = np.empty(cap, dtype=np.int32)
    hj = np.empty(cap, dtype=np.int32)
    tmp = np.empty(S)
    size = 0
    for i in range(n0):
        for j in range(i + 1, n0):
            lr, _ld, _lp = _pair_score(
                fam,
                stats[i],
                stats[j],
                log_d[i],
                log_d[j],
                log_p[i],
                log_p[j],
                la,
                H,
                tmp,
                use_table,
                LA,
                LB,
                LAB,
            )
            keys[size] = lr
            hi[size] = i
            hj[size] = j
            size += 1
    n_scored = size
    for pos in range(size // 2 - 1, -1, -1):
        _sift_down(keys, hi, hj, size, pos)
    merges = np.empty((max(n0 - 1, 0), 2), dtype=np.int64)
    for t in range(n0 - 1):
        while True:
            i = hi[0]
            j = hj[0]
            size -= 1
            keys[0] = keys[size]
            hi[0] = hi[size]
            hj[0] = hj[size]
            _sift_down(keys, hi, hj, size, 0)
            if alive[i] and alive[j]:
                break
        k = n0 + t
        _lr, ldk, lpk = _pair_score(
            fam,
            stats[i],
            stats[j],
            log_d[i],
            log_d[j],
            log_p[i],
            log_p[j],
            la,
            H,
            tmp,
            use_table,
            LA,
            LB,
            LAB,
        )
        for s in range(S):
            stats[k, s] = stats[i, s] + stats[j, s]
        log_d[k] = ldk
        log_p[k] = lpk
        merges[t, 0] = i
        merges[t, 1] = j
        alive[i] = False
        alive[j] = False
        w = 0
        for q in range(n_alive):
            c = alive_ids[q]
            if alive[c]:
                alive_ids[w] = c
                w += 1
        n_alive = w
        for q in range(n_alive):
            c = alive_ids[q]
            lr, _ld, _lp = _pair_score(
                fam,
                stats[c],
                stats[k],
                log_d[c],
                log_d[k],
                log_p[c],
                log_p[k],
                la,
                H,
                tmp,
                use_table,
                LA,
                LB,
                LAB,
            )
            size = _push(keys, hi, hj, size, lr, c, k)
            n_scored += 1
        alive[k] = True
        alive_ids[n_alive] = k
        n_alive += 1
    return merges, n_scored


@_jit
def _assign_kernel(fam, X, cstats, log_w, group, n_groups, H):
    """argmax_g logsumexp_{c in g} [log w_c + log p(x_i | D_c)] for every row.

    With one node per group this is the filter of Heller (2007) Alg. 3.5 / 3.6; with the
    nodes of a subtree and their Eq. 3.11 weights it is the tree predictive (Eq. 3.10)
    of that subtree. Per-node work is hoisted out of the loop over points:
    Beta-Bernoulli log probabilities are tabulated (O(d) additions per point and node)
    and NIW posteriors are factorised once (O(d^2) Student-t evaluations, not O(d^3))."""
    n = X.shape[0]
    d = X.shape[1]
    C = cstats.shape[0]
    out = np.empty(n, dtype=np.int64)
    acc = np.empty(n_groups)
    W1 = np.zeros((C, d))
    base = np.zeros(C)
    states = np.zeros((C, 3 + d * (d + 1) if fam == 2 else 1))
    if fam == 0:
        a, b = cj.bernoulli_view(H)
        for c in range(C):
            N = cstats[c, 0]
            for j in range(d):
                tot = math.log(a[j] + b[j] + N)
                l1 = math.log(a[j] + cstats[c, 1 + j]) - tot
                l0 = math.log(b[j] + N - cstats[c, 1 + j]) - tot
                W1[c, j] = l1 - l0
                base[c] += l0
    elif fam == 2:
        hyper = cj.gaussian_view(H)
        for c in range(C):
            states[c] = cj.gaussian_state(cstats[c], hyper)
    for i in range(n):
        acc[:] = -np.inf
        for c in range(C):
            if fam == 0:
                v = base[c]
                for j in range(d):
                    if X[i, j] > 0.5:
                        v += W1[c, j]
            elif fam == 2:
                v = cj.gaussian_state_log_predictive(X[i], states[c])
            else:
                v = cj.log_predictive(fam, X[i], cstats[c], H)
            g = group[c]
            acc[g] = ops._logaddexp(acc[g], log_w[c] + v)
        best = -np.inf
        arg = 0
        for g in range(n_groups):
            if acc[g] > best:
                best = acc[g]
                arg = g
        out[i] = arg
    return out


def _assign(builder, X, cstats, log_w, group=None, n_groups=None):
    if group is None:
        group = np.arange(cstats.shape[0])
        n_groups = cstats.shape[0]
    return _assign_kernel(
        builder.fam,
        X,
        np.ascontiguousarray(cstats),
        np.asarray(log_w, float),
        np.asarray(group, dtype=np.int64),
        int(n_groups),
        builder.H,
    )


# ======================================================================================
# hyperparameters
# ======================================================================================
def default_hyper(X, likelihood):
    """Empirical hyperparameters from a single model fitted to the whole data set, the
    practice Heller (2007, §3.4.1) recommends.

    * bernoulli: ``a_j = 2 p_j``, ``b_j = 2 (1 - p_j)``, ``p_j`` the smoothed column
      mean ``(m_j + 0.5) / (n + 1)`` (prior mean = data mean, strength 2);
    * multinomial: ``concentration_k = K q_k``, ``q_k`` the smoothed overall frequency;
    * gaussian: ``m0`` = data mean, ``kappa0 = 0.1``, ``nu0 = d + 2``,
      ``S0 = (nu0 - d - 1) diag(var) / 4`` (prior mean cluster covariance: a quarter of
      each column's variance, i.e. clusters half as wide as the data; the diagonal,
      because the total covariance's correlations come from the cluster layout);
    * diag_gaussian: ``m0`` = data mean, ``kappa0 = 0.1``, ``a0 = 2``, ``b0 = var / 4``.
    """
    n, d = X.shape
    if likelihood == "bernoulli":
        p = (X.sum(0) + 0.5) / (n + 1.0)
        return {"a": 2.0 * p, "b": 2.0 * (1.0 - p)}
    if likelihood == "multinomial":
        q = X.sum(0) + 0.5
        return {"concentration": d * q / q.sum()}
    var = X.var(0)
    var = np.where(var > 0, var, 1.0)
    if likelihood == "gaussian":
        nu0 = d + 2.0
        return {
            "m0": X.mean(0),
            "kappa0": 0.1,
            "nu0": nu0,
            "S0": (nu0 - d - 1.0) * np.diag(var) / 4.0,
        }
    return {"m0": X.mean(0), "kappa0": 0.1, "a0": 2.0, "b0": var / 4.0}


def _resolve_hyper(X, likelihood, hyper):
    d = X.shape[1]
    names = cj.FAMILIES[likelihood].hyper_names
    vals = default_hyper(X, likelihood)
    if hyper is not None:
        if not isinstance(hyper, dict):
            raise TypeError(f"hyper: must be a dict keyed by {names} or None, got {type(hyper)}")
        unknown = set(hyper) - set(names)
        if unknown:
            raise ValueError(f"hyper: unknown {sorted(unknown)} for {likelihood}; use {names}")
        vals.update(hyper)
    tup = cj.FAMILIES[likelihood].make_hyper(d, **vals)
    return tup, dict(zip(names, tup, strict=True))


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"alpha: must be a positive number, got {alpha!r}")
    alpha = float(alpha)
    if not np.isfinite(alpha) or alpha <= 0:
        raise ValueError(f"alpha: the DP concentration must be finite and > 0, got {alpha}")
    return alpha


def _check_data(X, likelihood):
    if likelihood not in LIKELIHOODS:
        raise ValueError(f"likelihood: unknown {likelihood!r}; choose one of {LIKELIHOODS}")
    if hasattr(X, "to_numpy"):
        X = X.to_numpy()
    X = cj.check_data(likelihood, X, "X")
    if X.shape[0] < 2:
        raise ValueError(f"X: BHC needs at least 2 points, got {X.shape[0]}")
    return X


# ======================================================================================
# result
# ======================================================================================
@dataclass
class BHCResult:
    """A BHC tree with its evidence.

    Attributes
    ----------
    X : (n, d) ndarray
    likelihood : str
    alpha : float
    hyper : dict
        The conjugate prior's hyperparameters used (validated arrays / floats).
    merges : (n - 1, 2) int64 ndarray
        Merge ``t`` joins nodes ``merges[t]`` into node ``n + t`` (scipy convention).
    linkage : (n - 1, 4) ndarray
        scipy format: ``[i, j, height, size]`` with height_k = max(height of children)
        - log r_k >= 0 (monotone, so ``scipy.cluster.hierarchy.dendrogram`` works; merges
        the model is sure of add little height, doubtful ones a lot).
    log_evidence : float
        log p(D | T) (Heller 2007 Eq. 3.2 at the root).
    log_rk : (n - 1,) ndarray
        log r_k of each merge (Eq. 3.3), merge order.
    log_d : (2n - 1,) ndarray
        log d_k of every node (Alg. 3.3), leaves first.
    n_scored : int
        Candidate merges whose r_k was evaluated while building the tree.
    method : str
    history : list of dict
        Filled by :func:`learn`: one entry per iteration.
    """

    X: np.ndarray
    likelihood: str
    alpha: float
    hyper: dict
    merges: np.ndarray
    linkage: np.ndarray
    log_evidence: float
    log_rk: np.ndarray
    log_d: np.ndarray
    n_scored: int = 0
    method: str = "greedy"
    history: list = field(default_factory=list)

    @property
    def n(self):
        return self.X.shape[0]

    def _H(self):
        names = cj.FAMILIES[self.likelihood].hyper_names
        return cj.pack_hyper(self.likelihood, [self.hyper[k] for k in names])

    def cut(self, threshold=0.5):
        """Flat partition: top-down, a node is a cluster when r_k >= ``threshold``
        (Heller 2007 Alg. 3.2 output: cut where r_k < 0.5). Returns labels (n,) in
        0..K-1, numbered by first appearance along the rows."""
        if not (0.0 <= float(threshold) <= 1.0):
            raise ValueError(f"threshold: must lie in [0, 1], got {threshold}")
        n = self.n
        r = np.ones(2 * n - 1)
        r[n:] = np.exp(self.log_rk)
        labels = np.empty(n, dtype=np.int64)
        stack = [2 * n - 2]
        cluster = 0
        while stack:
            k = stack.pop()
            if k < n or r[k] >= threshold:
                for leaf in _leaves(self.merges, n, k):
                    labels[leaf] = cluster
                cluster += 1
            else:
                i, j = self.merges[k - n]
                stack.extend((int(j), int(i)))
        _, first = np.unique(labels, return_index=True)
        order = np.argsort(np.argsort(first))
        return order[labels]

    def node_weights(self):
        """ω_k (Heller 2007 Eq. 3.11) of every node (2n - 1,), leaves first; sums to 1."""
        n = self.n
        sizes = _node_sizes(self.merges, n)
        log_r = np.zeros(2 * n - 1)
        log_r[n:] = self.log_rk
        log_1mr = np.full(2 * n - 1, -np.inf)
        log_1mr[n:] = np.log(-np.expm1(self.log_rk))
        log_g = np.zeros(2 * n - 1)
        for t in range(n - 2, -1, -1):
            k = n + t
            for c in self.merges[t]:
                log_g[c] = log_g[k] + log_1mr[k] + math.log(sizes[c] / sizes[k])
        return np.exp(log_g + log_r)

    def predictive_logpdf(self, x_new):
        """log p(x | D) (Heller 2007 Eqs. 3.10-3.11) with the new-cluster term:
        n/(n+α) Σ_k ω_k p(x | D_k) + α/(n+α) p(x). ``x_new``: one row (d,) or rows
        (m, d); returns a float or (m,)."""
        x = np.asarray(x_new, dtype=np.float64)
        single = x.ndim == 1
        x = np.atleast_2d(x)
        if x.shape[1] != self.X.shape[1]:
            raise ValueError(f"x_new: expected {self.X.shape[1]} columns, got {x.shape[1]}")
        cj.check_data(self.likelihood, x, "x_new")
        fam = cj.FAMILY_CODES[self.likelihood]
        H = self._H()
        stats = _node_stats(fam, self.X, self.merges)
        log_w = np.log(self.node_weights())
        keep = np.flatnonzero(np.isfinite(log_w))
        n, a = self.n, self.alpha
        out = _predictive_kernel(
            fam, x, stats[keep], log_w[keep], H, math.log(n / (n + a)), math.log(a / (n + a))
        )
        return float(out[0]) if single else out

    def dpm_lower_bound(self):
        """Heller (2007) Corollary 3.1: log[d_root Γ(α) / Γ(n + α)] + log p(D | T), a lower
        bound on the DP-mixture marginal likelihood log p(D)."""
        n, a = self.n, self.alpha
        return float(self.log_d[-1] + math.lgamma(a) - math.lgamma(n + a) + self.log_evidence)

    def plot(self, ax=None, threshold=0.5, **dendrogram_kwargs):
        """Dendrogram coloured by r_k: merges with r_k < ``threshold`` (where the tree is
        cut) in red, the others in blue. Returns the matplotlib axes."""
        import matplotlib.pyplot as plt
        from scipy.cluster.hierarchy import dendrogram

        if ax is None:
            _, ax = plt.subplots(figsize=(10, 4))
        n = self.n
        r = np.exp(self.log_rk)

        def color(k):
            return "tab:red" if k >= n and r[k - n] < threshold else "tab:blue"

        dendrogram_kwargs.setdefault("no_labels", n > 60)
        dendrogram(self.linkage, ax=ax, link_color_func=color, **dendrogram_kwargs)
        ax.set_ylabel("height = max(children) - log r_k")
        ax.set_title(f"BHC ({self.likelihood}), log p(D|T) = {self.log_evidence:.1f}")
        return ax


@_jit
def _predictive_kernel(fam, x, stats, log_w, H, log_old, log_new):
    m = x.shape[0]
    out = np.empty(m)
    empty = np.zeros(stats.shape[1])
    for i in range(m):
        acc = -np.inf
        for k in range(stats.shape[0]):
            acc = ops._logaddexp(acc, log_w[k] + cj.log_predictive(fam, x[i], stats[k], H))
        out[i] = ops._logaddexp(log_old + acc, log_new + cj.log_predictive(fam, x[i], empty, H))
    return out


@_jit
def _node_stats(fam, X, merges):
    n = X.shape[0]
    p = cj.point_stats(fam, X)
    out = np.empty((2 * n - 1, p.shape[1]))
    out[:n] = p
    for t in range(n - 1):
        out[n + t] = out[merges[t, 0]] + out[merges[t, 1]]
    return out


def _node_sizes(merges, n):
    sizes = np.ones(2 * n - 1)
    for t, (i, j) in enumerate(merges):
        sizes[n + t] = sizes[i] + sizes[j]
    return sizes


def _leaves(merges, n, k):
    out, stack = [], [k]
    while stack:
        c = stack.pop()
        if c < n:
            out.append(c)
        else:
            stack.extend(merges[c - n])
    return out


def _evaluate(X, likelihood, alpha, hyper_tuple, hyper_dict, merges, method, n_scored):
    fam = cj.FAMILY_CODES[likelihood]
    H = cj.pack_hyper(likelihood, hyper_tuple)
    n = X.shape[0]
    log_p, log_r, _q, log_d, _ml, _s = ops.tree_forward(
        fam, cj.point_stats(fam, X), merges, alpha, H
    )
    height = np.zeros(2 * n - 1)
    sizes = _node_sizes(merges, n)
    Z = np.empty((n - 1, 4))
    for t, (i, j) in enumerate(merges):
        k = n + t
        height[k] = max(height[i], height[j]) - log_r[k]
        Z[t] = (i, j, height[k], sizes[k])
    return BHCResult(
        X=X,
        likelihood=likelihood,
        alpha=alpha,
        hyper=hyper_dict,
        merges=merges,
        linkage=Z,
        log_evidence=float(log_p[-1]),
        log_rk=log_r[n:].copy(),
        log_d=log_d,
        n_scored=int(n_scored),
        method=method,
    )


# ======================================================================================
# tree builders
# ======================================================================================
class _Builder:
    """Shared state for greedy / randomized tree construction over subsets of rows."""

    def __init__(self, X, likelihood, alpha, hyper_tuple):
        self.X = X
        self.fam = cj.FAMILY_CODES[likelihood]
        self.likelihood = likelihood
        self.alpha = alpha
        self.H = cj.pack_hyper(likelihood, hyper_tuple)
        self.pstats = cj.point_stats(self.fam, X)
        n = X.shape[0]
        self.use_table = likelihood == "bernoulli"
        if self.use_table:
            self.tables = _bernoulli_tables(*cj.bernoulli_view(self.H), n)
        else:
            self.tables = (np.zeros((0, 1)), np.zeros((0, 1)), np.zeros(1))
        self.n_scored = 0

    def greedy_nodes(self, stats, log_d, log_p):
        LA, LB, LAB = self.tables
        merges, scored = greedy_kernel(
            self.fam, stats, log_d, log_p, self.alpha, self.H, self.use_table, LA, LB, LAB
        )
        self.n_scored += int(scored)
        return merges

    def greedy_points(self, idx):
        """Greedy BHC on rows ``idx``: local merge list (ids 0..len(idx)-1 = idx order)."""
        k = len(idx)
        la = math.log(self.alpha)
        stats = self.pstats[idx]
        lp = np.array([cj.log_marginal(self.fam, stats[i], self.H) for i in range(k)])
        return self.greedy_nodes(stats, np.full(k, la), lp)

    def subtree_values(self, idx, local_merges):
        """(stats, log d, log p) at the root of a local tree over rows ``idx``."""
        if len(idx) == 1:
            s = self.pstats[idx[0]]
            return s, math.log(self.alpha), cj.log_marginal(self.fam, s, self.H)
        log_p, _r, _q, log_d, _ml, stats = ops.tree_forward(
            self.fam, self.pstats[idx], local_merges, self.alpha, self.H
        )
        return stats[-1], log_d[-1], log_p[-1]


class _MergeList:
    """Accumulates merges over global node ids (leaves 0..n-1, merge t -> n + t)."""

    def __init__(self, n):
        self.n = n
        self.rows = []

    def add(self, i, j):
        self.rows.append((int(i), int(j)))
        return self.n + len(self.rows) - 1

    def add_local(self, idx, local_merges):
        """Append a local tree over rows ``idx``; return its root's global id."""
        k = len(idx)
        if k == 1:
            return int(idx[0])
        ids = list(int(i) for i in idx)
        for i, j in local_merges:
            ids.append(self.add(ids[i], ids[j]))
        return ids[-1]

    def array(self):
        return np.array(self.rows, dtype=np.int64).reshape(-1, 2)


def _local_log_pi(local_merges, k, alpha):
    """log π of every node of a local tree (Alg. 3.3; π = 1 at leaves)."""
    la = math.log(alpha)
    log_d = np.full(2 * k - 1, la)
    log_pi = np.zeros(2 * k - 1)
    sizes = np.ones(2 * k - 1)
    for t, (i, j) in enumerate(local_merges):
        sizes[k + t] = sizes[i] + sizes[j]
        log_d[k + t] = np.logaddexp(la + math.lgamma(sizes[k + t]), log_d[i] + log_d[j])
        log_pi[k + t] = la + math.lgamma(sizes[k + t]) - log_d[k + t]
    return log_pi, sizes


def _frontier(local_merges, k, split):
    """Nodes of the subsample tree the remaining points are filtered into.

    ``split="top"``: the two children of the root (Heller 2007 Alg. 3.4 verbatim).
    ``split="balanced"``: descend from the root, always opening the largest node, until
    no node holds more than half of the subsample; BHC's top merges are often very
    unbalanced (an outlier split off), and this bounds the recursion depth by O(log n).
    """
    sizes = np.ones(2 * k - 1)
    for t, (i, j) in enumerate(local_merges):
        sizes[k + t] = sizes[i] + sizes[j]
    root = 2 * k - 2
    front = [int(c) for c in local_merges[root - k]]
    if split == "balanced":
        while True:
            big = max(front, key=lambda c: sizes[c])
            if sizes[big] <= k / 2 or big < k:
                break
            front.remove(big)
            front.extend(int(c) for c in local_merges[big - k])
    return front


def _frontier_mixture(builder, sub, local, front, log_prior):
    """Nodes of the subtrees under the frontier with log weights log π_g + log ω_k^(g)
    (Eq. 3.11 within subtree g), for the tree-predictive filter."""
    k = len(sub)
    stats = _node_stats(builder.fam, builder.X[sub], local)
    _log_p, log_r, log_q, _d, _ml, _s = ops.tree_forward(
        builder.fam, builder.pstats[sub], local, builder.alpha, builder.H
    )
    sizes = stats[:, 0]
    rows, weights, groups = [], [], []
    for g, f in enumerate(front):
        stack = [(f, 0.0)]
        while stack:
            c, log_g = stack.pop()
            rows.append(c)
            weights.append(log_prior[g] + log_g + log_r[c])
            groups.append(g)
            if c >= k:
                for child in local[c - k]:
                    stack.append((int(child), log_g + log_q[c] + math.log(sizes[child] / sizes[c])))
    return stats[np.array(rows)], np.array(weights), np.array(groups)


def _rbhc(builder, rng, subsample, leaf_size, filter_prior, split, filter_predictive):
    """Randomized BHC (Heller 2007 Alg. 3.4 with the Filter of Alg. 3.5), iteratively.

    A set larger than ``leaf_size`` is organised by greedy BHC on ``subsample`` of its
    points; every other point x is filtered into the frontier node g of that subsample
    tree (:func:`_frontier`) maximising π_g p(x | D_g^[m]) (predictives against the
    subsample only, as in Alg. 3.5; p(x | D_g^[m]) is the BHC tree predictive of the
    subtree g (Eqs. 3.10-3.11) or, with ``filter_predictive="cluster"``, the single-
    cluster conjugate predictive); each frontier group is built recursively and the
    groups are joined by the subsample tree's own merges above the frontier. Sets of at
    most ``leaf_size`` points get exact greedy BHC.
    """
    X = builder.X
    n = X.shape[0]
    out = _MergeList(n)
    slots = [None]
    # explicit stack (unbalanced splits could recurse deeply): ("build", idx, slot) or
    # ("join", (local merges, frontier, child slots, k), slot)
    work = [("build", np.arange(n), 0)]
    while work:
        kind, payload, slot = work.pop()
        if kind == "join":
            local, front, child_slots, k = payload
            ids = {f: slots[s] for f, s in zip(front, child_slots, strict=True)}
            for t, (i, j) in enumerate(local):
                if int(i) in ids and int(j) in ids:
                    ids[k + t] = out.add(ids.pop(int(i)), ids.pop(int(j)))
            (slots[slot],) = ids.values()
            continue
        idx = payload
        if len(idx) <= leaf_size:
            slots[slot] = out.add_local(idx, builder.greedy_points(idx) if len(idx) > 1 else None)
            continue
        sub_pos = rng.choice(len(idx), size=subsample, replace=False)
        sub = idx[sub_pos]
        k = len(sub)
        local = builder.greedy_points(sub)
        front = _frontier(local, k, split)
        groups = [np.array(_leaves(local, k, f)) for f in front]
        rest_mask = np.ones(len(idx), dtype=bool)
        rest_mask[sub_pos] = False
        rest = idx[rest_mask]
        if filter_prior == "size":
            log_prior = np.log(np.array([len(g) for g in groups], dtype=float))
        else:
            # literal reading of Alg. 3.5: the π the BHC run computed for those nodes
            log_pi, _sizes = _local_log_pi(local, k, builder.alpha)
            log_prior = np.array([log_pi[f] for f in front])
        if filter_predictive == "tree":
            cst, log_w, group = _frontier_mixture(builder, sub, local, front, log_prior)
            side = _assign(builder, X[rest], cst, log_w, group, len(front))
        else:
            cst = np.stack([builder.pstats[sub[g]].sum(0) for g in groups])
            side = _assign(builder, X[rest], cst, log_prior)
        child_slots = []
        for _ in front:
            slots.append(None)
            child_slots.append(len(slots) - 1)
        work.append(("join", (local, front, child_slots, k), slot))
        for g_pos, (g, cs) in enumerate(zip(groups, child_slots, strict=True)):
            work.append(("build", np.concatenate([sub[g], rest[side == g_pos]]), cs))
    return out.array()


def _embhc(builder, rng, subsample, em_iterations):
    """EMBHC (Heller 2007 Alg. 3.6): ``subsample`` random points seed clusters; the
    others are filtered into them; ``em_iterations`` rounds of hard EM reassign every
    point to argmax_c log n_c + log p(x | D_c); then greedy BHC inside each cluster, and
    greedy BHC over the clusters as leaves, each leaf carrying its subtree's log d and
    log p(D | T) (so the whole tree is an ordinary BHC tree over the points)."""
    X = builder.X
    n = X.shape[0]
    seeds = rng.choice(n, size=subsample, replace=False)
    cst = builder.pstats[seeds].copy()
    z = _assign(builder, X, cst, np.zeros(len(seeds)))
    z[seeds] = np.arange(len(seeds))
    for _ in range(em_iterations):
        used = np.unique(z)
        z = np.searchsorted(used, z)
        cst = np.zeros((len(used), builder.pstats.shape[1]))
        np.add.at(cst, z, builder.pstats)
        counts = np.bincount(z, minlength=len(used)).astype(float)
        z_new = _assign(builder, X, cst, np.log(counts))
        if np.array_equal(z_new, z):
            break
        z = z_new
    z = np.searchsorted(np.unique(z), z)
    out = _MergeList(n)
    C = int(z.max()) + 1
    roots, stats, log_d, log_p = [], [], [], []
    for c in range(C):
        idx = np.flatnonzero(z == c)
        local = builder.greedy_points(idx) if len(idx) > 1 else None
        roots.append(out.add_local(idx, local))
        s, ld, lp = builder.subtree_values(idx, local)
        stats.append(s)
        log_d.append(ld)
        log_p.append(lp)
    if C > 1:
        top = builder.greedy_nodes(np.array(stats), np.array(log_d), np.array(log_p))
        ids = list(roots)
        for i, j in top:
            ids.append(out.add(ids[i], ids[j]))
    return out.array()


def fit(
    X,
    *,
    likelihood="bernoulli",
    alpha=1.0,
    hyper=None,
    method="greedy",
    random_seed=None,
    subsample=None,
    leaf_size=None,
    em_iterations=3,
    filter_prior="size",
    split="balanced",
    filter_predictive="tree",
) -> BHCResult:
    """Build a BHC tree over the rows of ``X``.

    Parameters
    ----------
    X : (n, d) array-like
        Binary (bernoulli), non-negative integer counts (multinomial) or real rows.
    likelihood : {"bernoulli", "multinomial", "gaussian", "diag_gaussian"}
    alpha : float
        DP concentration (> 0).
    hyper : dict, optional
        Conjugate hyperparameters by name (see :mod:`custom_ops.conjugate`); missing
        ones take :func:`default_hyper`'s empirical values.
    method : {"greedy", "randomized", "embhc"}
        ``"greedy"``: Alg. 3.2 (exact greedy, O(n^2) memory, n <= 12000).
        ``"randomized"``: RBHC, Alg. 3.4 (O(n m log n)). ``"embhc"``: Alg. 3.6 (O(n m)).
    random_seed : int or numpy Generator, optional
        For the randomized methods' subsamples.
    subsample : int, optional
        m, the subsample size of the randomized methods (default min(n, 200) for
        randomized, min(n, max(20, sqrt(n))) for embhc).
    leaf_size : int, optional
        randomized: sets of at most this many points get exact greedy BHC (default 4 m).
    em_iterations : int
        embhc: hard-EM rounds.
    filter_prior : {"size", "pi"}
        randomized: the filter weights π_g: the nodes' subsample sizes (DPM-natural,
        default) or the literal π that BHC computed for those nodes (Heller's Alg. 3.5
        is ambiguous).
    split : {"balanced", "top"}
        randomized: filter through the two top-level children of the subsample tree
        (``"top"``, Alg. 3.4 verbatim) or through the frontier where no node holds more
        than half of the subsample (``"balanced"``, default; keeps the recursion
        O(log n) deep when BHC's top split peels off outliers).
    filter_predictive : {"tree", "cluster"}
        randomized: p(x | D_g^[m]) in the filter is the BHC tree predictive of the
        subsample subtree (Eq. 3.10, default) or one conjugate cluster's predictive.

    Returns
    -------
    BHCResult
    """
    X = _check_data(X, likelihood)
    alpha = _check_alpha(alpha)
    hyper_tuple, hyper_dict = _resolve_hyper(X, likelihood, hyper)
    if method not in METHODS:
        raise ValueError(f"method: unknown {method!r}; choose one of {METHODS}")
    n = X.shape[0]
    if filter_predictive not in ("tree", "cluster"):
        raise ValueError(
            f"filter_predictive: must be 'tree' or 'cluster', got {filter_predictive!r}"
        )
    if split not in ("balanced", "top"):
        raise ValueError(f"split: must be 'balanced' or 'top', got {split!r}")
    if filter_prior not in ("size", "pi"):
        raise ValueError(f"filter_prior: must be 'size' or 'pi', got {filter_prior!r}")
    if (
        isinstance(em_iterations, bool)
        or not isinstance(em_iterations, numbers.Integral)
        or (em_iterations < 0)
    ):
        raise ValueError(f"em_iterations: must be a non-negative integer, got {em_iterations!r}")
    if method == "greedy" and n > _MAX_GREEDY_N:
        raise ValueError(
            f"X: greedy BHC keeps all O(n^2) candidate pairs; n = {n} > {_MAX_GREEDY_N} "
            "would need too much memory: use method='randomized' or 'embhc'"
        )
    default_m = min(n, 200) if method == "randomized" else min(n, max(20, int(math.sqrt(n))))
    m = default_m if subsample is None else subsample
    if isinstance(m, bool) or not isinstance(m, numbers.Integral) or not (2 <= m <= n):
        raise ValueError(f"subsample: must be an integer in [2, n = {n}], got {subsample!r}")
    ls = 4 * int(m) if leaf_size is None else leaf_size
    if isinstance(ls, bool) or not isinstance(ls, numbers.Integral) or ls < m:
        raise ValueError(f"leaf_size: must be an integer >= subsample = {m}, got {leaf_size!r}")
    rng = np.random.default_rng(random_seed)

    builder = _Builder(X, likelihood, alpha, hyper_tuple)
    if method == "greedy":
        merges = builder.greedy_points(np.arange(n))
    elif method == "randomized":
        merges = _rbhc(builder, rng, int(m), int(ls), filter_prior, split, filter_predictive)
    else:
        merges = _embhc(builder, rng, int(m), int(em_iterations))
    return _evaluate(
        X, likelihood, alpha, hyper_tuple, hyper_dict, merges, method, builder.n_scored
    )


# ======================================================================================
# PyMC model of the hyperparameters for a fixed tree
# ======================================================================================
def _default_priors(likelihood):
    priors = {"alpha": pm.LogNormal.dist(mu=0.0, sigma=1.5)}
    if likelihood == "bernoulli":
        priors["a"] = pm.LogNormal.dist(mu=0.0, sigma=1.0)
        priors["b"] = pm.LogNormal.dist(mu=0.0, sigma=1.0)
    elif likelihood == "multinomial":
        priors["concentration"] = pm.LogNormal.dist(mu=0.0, sigma=1.0)
    else:
        priors["kappa0"] = pm.LogNormal.dist(mu=math.log(0.1), sigma=1.5)
    return priors


def _tree_merges(tree, n):
    if isinstance(tree, BHCResult):
        if tree.n != n:
            raise ValueError(f"tree: built on {tree.n} points but X has {n} rows")
        return tree.merges
    return ops.validate_merges(tree, n)


OBJECTIVES = ("lower_bound", "evidence")


def _objective(objective, X, merges, alpha, likelihood, hyper):
    """The tree's score of the hyperparameters, a scalar tensor (see :func:`learn`)."""
    if objective == "evidence":
        return ops.bhc_log_evidence(X, merges, alpha, likelihood=likelihood, **hyper)[0]
    return ops.bhc_dpm_lower_bound(X, merges, alpha, likelihood=likelihood, **hyper)


def _check_objective(objective):
    if objective not in OBJECTIVES:
        raise ValueError(f"objective: must be one of {OBJECTIVES}, got {objective!r}")


def model(
    X,
    tree=None,
    *,
    likelihood="bernoulli",
    hyper=None,
    priors=None,
    alpha=1.0,
    objective="lower_bound",
) -> pm.Model:
    """PyMC model of the DP concentration and conjugate hyperparameters given a tree.

    The potential ``bhc_log_evidence`` is log p(D | T, alpha, hyper) computed by
    :class:`custom_ops.bhc.BHCEvidence` (with gradients), so the model can be sampled with
    NUTS or optimised with ``find_MAP``.

    Parameters
    ----------
    X : (n, d) array-like
    tree : BHCResult, (n - 1, 2) merge array or scipy linkage matrix, optional
        Default: the greedy BHC tree at ``alpha`` and the fixed ``hyper`` values.
    likelihood : str
    hyper : dict, optional
        Fixed values of the hyperparameters that get no prior (defaults:
        :func:`default_hyper`).
    priors : dict, optional
        ``{name: pm.<Dist>.dist(...)}`` for ``"alpha"`` and any hyperparameter name;
        those become free random variables (a scalar prior on a per-dimension
        hyperparameter is shared by all dimensions; a prior for ``S0`` must be
        (d, d) symmetric positive definite valued, e.g. a scalar prior times the
        identity is not expressible here: keep S0 fixed or learn it with :func:`learn`).
        ``None`` means: alpha ~ LogNormal(0, 1.5) and, per likelihood, ``a, b`` ~
        LogNormal(0, 1) | ``concentration`` ~ LogNormal(0, 1) | ``kappa0`` ~
        LogNormal(log 0.1, 1.5). Pass ``{}`` to fix everything (no free variables).
    alpha : float
        The DP concentration's value when ``priors`` has no ``"alpha"``.
    objective : {"lower_bound", "evidence"}
        The potential: Corollary 3.1's lower bound on the DP-mixture evidence
        log[d_root Γ(α)/Γ(n+α)] + log p(D | T) (default), or the tree evidence
        log p(D | T) itself. They differ only in α: p(D | T) normalises the CRP prior
        over the tree-consistent partitions alone, and its maximiser in α tracks the
        tree's shape (about n/e for greedy trees) rather than the data; see :func:`learn`.

    Returns
    -------
    pymc.Model
        Free variables: the keys of ``priors``; deterministics ``log_evidence``
        (log p(D | T)) and ``dpm_lower_bound``.
    """
    X = _check_data(X, likelihood)
    _check_objective(objective)
    n, _d = X.shape
    alpha = _check_alpha(alpha)
    _hyper_tuple, hyper_dict = _resolve_hyper(X, likelihood, hyper)
    if tree is None:
        tree = fit(X, likelihood=likelihood, alpha=alpha, hyper=hyper_dict)
    merges = _tree_merges(tree, n)
    names = cj.FAMILIES[likelihood].hyper_names
    priors = _default_priors(likelihood) if priors is None else dict(priors)
    unknown = set(priors) - {"alpha", *names}
    if unknown:
        raise ValueError(f"priors: unknown {sorted(unknown)}; use 'alpha' or {names}")
    for k, v in priors.items():
        if not isinstance(v, pt.TensorVariable):
            raise TypeError(f"priors[{k!r}]: expected a PyMC distribution from .dist(), got {v!r}")
    with pm.Model() as m:
        values = {}
        for name in ("alpha", *names):
            if name in priors:
                values[name] = m.register_rv(priors[name], name)
            elif name == "alpha":
                values[name] = alpha
            else:
                values[name] = hyper_dict[name]
        hyper_vals = {k: values[k] for k in names}
        lp, _lr = ops.bhc_log_evidence(
            X, merges, values["alpha"], likelihood=likelihood, **hyper_vals
        )
        lb = ops.bhc_dpm_lower_bound(
            X, merges, values["alpha"], likelihood=likelihood, **hyper_vals
        )
        pm.Potential("bhc_" + objective, lb if objective == "lower_bound" else lp)
        pm.Deterministic("log_evidence", lp)
        pm.Deterministic("dpm_lower_bound", lb)
    info = ZooModelInfo(
        family="bhc",
        preferred_method="nuts",
        notes=f"Hyperparameters of BHC for a fixed tree; potential = {objective}.",
    )
    return attach_info(m, info)


# ======================================================================================
# hyperparameter learning (§3.4.1)
# ======================================================================================
_LEARNABLE = {
    "bernoulli": ("alpha", "a", "b"),
    "multinomial": ("alpha", "concentration"),
    "gaussian": ("alpha", "kappa0", "nu0", "S0"),
    "diag_gaussian": ("alpha", "kappa0", "a0", "b0"),
}


class _EvidenceFunction:
    """log p(D | T) and its gradient in the log-scale factors θ of the learned
    hyperparameters (value = base exp(θ); nu0 = d - 1 + (base - d + 1) exp(θ)), with the
    tree as a shared variable so changing it does not recompile."""

    def __init__(self, X, likelihood, alpha, hyper_dict, names, merges, objective):
        d = X.shape[1]
        self.names = names
        self.merges = pytensor.shared(np.asarray(merges, dtype=np.int64), name="merges")
        theta = pt.dvector("theta")
        vals = {"alpha": alpha, **hyper_dict}
        sym = {}
        for pos, name in enumerate(names):
            f = pt.exp(theta[pos])
            if name == "nu0":
                sym[name] = (d - 1.0) + (vals[name] - (d - 1.0)) * f
            else:
                sym[name] = pt.as_tensor_variable(np.asarray(vals[name], dtype=float)) * f
        args = {k: sym.get(k, vals[k]) for k in cj.FAMILIES[likelihood].hyper_names}
        lp = _objective(objective, X, self.merges, sym.get("alpha", alpha), likelihood, args)
        self.fn = pytensor.function([theta], [lp, pytensor.grad(lp, theta)])
        self.exprs = pytensor.function([theta], [sym[k] for k in names])

    def values(self, theta):
        return dict(zip(self.names, self.exprs(theta), strict=True))


def learn(
    X,
    *,
    likelihood="bernoulli",
    alpha=1.0,
    hyper=None,
    learn=None,
    method="greedy",
    max_iter=10,
    tol=1e-3,
    random_seed=None,
    objective="lower_bound",
    **fit_kwargs,
) -> BHCResult:
    """Alternate tree building and hyperparameter optimisation (Heller 2007 §3.4.1).

    E-like step: build the tree with :func:`fit` at the current hyperparameters.
    M-like step: maximise the objective over the learned hyperparameters for that tree
    (L-BFGS on log-scale factors, gradients from the BHC Op's pullback). Stops when the
    optimised objective improves by less than ``tol`` (or after ``max_iter`` rounds)
    and returns the best tree found, evaluated at its optimised hyperparameters, with
    ``history`` (per round: the tree's evidence log p(D | T), the optimised objective
    and the hyperparameters).

    ``objective="lower_bound"`` (default) maximises Corollary 3.1's lower bound on the
    DP-mixture evidence, log[d_root Γ(α)/Γ(n+α)] + log p(D | T); ``"evidence"``
    maximises log p(D | T), Heller's literal choice. For the conjugate hyperparameters
    the two are identical; in α, p(D | T)'s optimum is set by the tree's shape (on
    greedy trees of digits it sat at α ≈ n/e whatever the subset) and raising α there
    lowered dendrogram purity, while the bound is the DPM's own evidence bounded below.

    ``learn``: names among ``"alpha"`` and the likelihood's positive hyperparameters
    (bernoulli ``a, b``; multinomial ``concentration``; gaussian ``kappa0, nu0, S0``;
    diag_gaussian ``kappa0, a0, b0``). Each is learned as one scalar factor on its
    initial value (the relative shape of per-dimension vectors is kept). Default: all.
    """
    X = _check_data(X, likelihood)
    alpha = _check_alpha(alpha)
    _check_objective(objective)
    _hyper_tuple, hyper_dict = _resolve_hyper(X, likelihood, hyper)
    allowed = _LEARNABLE[likelihood]
    names = tuple(allowed if learn is None else learn)
    bad = [k for k in names if k not in allowed]
    if bad or not names:
        raise ValueError(f"learn: must be a non-empty subset of {allowed}, got {learn!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter: must be a positive integer, got {max_iter!r}")
    if not (isinstance(tol, numbers.Real) and tol >= 0):
        raise ValueError(f"tol: must be a number >= 0, got {tol!r}")
    rng = np.random.default_rng(random_seed)

    cur_alpha, cur_hyper = alpha, dict(hyper_dict)
    best, history, evfn, prev = None, [], None, -np.inf
    for it in range(int(max_iter)):
        result = fit(
            X,
            likelihood=likelihood,
            alpha=cur_alpha,
            hyper=cur_hyper,
            method=method,
            random_seed=rng,
            **fit_kwargs,
        )
        if evfn is None:
            evfn = _EvidenceFunction(
                X, likelihood, alpha, hyper_dict, names, result.merges, objective
            )
        evfn.merges.set_value(result.merges)
        # θ is relative to the initial values; warm start at the current ones
        theta0 = _theta_of(names, cur_alpha, cur_hyper, alpha, hyper_dict, X.shape[1])
        res = optimize.minimize(
            lambda th, f=evfn.fn: tuple(-np.asarray(v, dtype=float) for v in f(th)),
            theta0,
            jac=True,
            method="L-BFGS-B",
            bounds=[(-12.0, 12.0)] * len(names),
        )
        vals = evfn.values(res.x)
        cur_alpha = float(vals.get("alpha", cur_alpha))
        cur_hyper = dict(cur_hyper)
        for k in names:
            if k != "alpha":
                cur_hyper[k] = np.asarray(vals[k], dtype=float)
        value = float(-res.fun)
        history.append(
            {
                "iteration": it,
                "tree_log_evidence": result.log_evidence,
                "optimised_objective": value,
                "alpha": cur_alpha,
                **{k: cur_hyper[k] for k in names if k != "alpha"},
            }
        )
        if best is None or value > best[0]:
            best = (value, result.merges, cur_alpha, dict(cur_hyper))
        if value - prev < tol:
            break
        prev = value
    _value, merges, best_alpha, best_hyper = best
    hyper_tuple, hyper_dict = _resolve_hyper(X, likelihood, best_hyper)
    final = _evaluate(X, likelihood, best_alpha, hyper_tuple, hyper_dict, merges, method, 0)
    final.history = history
    return final


def _theta_of(names, cur_alpha, cur_hyper, alpha0, hyper0, d):
    theta = np.zeros(len(names))
    for pos, k in enumerate(names):
        if k == "alpha":
            theta[pos] = math.log(cur_alpha / alpha0)
        elif k == "nu0":
            theta[pos] = math.log((cur_hyper[k] - (d - 1.0)) / (hyper0[k] - (d - 1.0)))
        else:
            base = np.ravel(np.asarray(hyper0[k], dtype=float))
            cur = np.ravel(np.asarray(cur_hyper[k], dtype=float))
            nz = np.flatnonzero(base)
            theta[pos] = math.log(cur[nz[0]] / base[nz[0]]) if nz.size else 0.0
    return theta


CLI_ENTRY = ModelEntry(
    name="bhc",
    description="Bayesian hierarchical clustering: DP concentration and prior "
    "hyperparameters for the greedy BHC tree (potential = DPM evidence lower bound)",
    methods=("nuts", "advi", "auto"),
    build=lambda dataset, **options: model(dataset.data, **options),
    default_dataset="iris",
    defaults={"likelihood": "gaussian"},
)
