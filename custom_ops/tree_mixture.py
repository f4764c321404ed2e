"""Kernels of the Bayesian mixture of trees with Dirichlet (BDeu) CPTs integrated out.

Component ``k`` has a spanning tree (parent vector ``parents[k]`` rooted at node 0) and
CPTs with BDeu priors of equivalent sample size ``ess``: a root's distribution
``Dir(ess / K_root)`` per cell, a child's row per parent value ``Dir(ess / (K_pa K_v))``
per cell (Murphy 2012 Eqs. 26.28-26.30). Integrating them out (Dirichlet-categorical,
:mod:`custom_ops.conjugate`) gives ``p(D_k | T_k) = prod_v prod_j ML(N_vj; cell_v)``
where ``N_vj`` counts the child's values among the rows of component ``k`` whose parent
takes value ``j`` (the root's counts are row 0).

State: ``tables[k, v, j, c]`` (float64 counts), updated in place by the sweeps.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as nb

from custom_ops.conjugate import dirichlet_categorical_log_marginal

__all__ = [
    "TreeMixtureLogp",
    "assignment_sweep",
    "collapsed_log_marginal",
    "sample_tree_mixture_data",
    "tree_mixture_logp",
    "tree_tables",
]

_jit = numba.njit(cache=True)


@_jit
def _parent_categories(parents_k, v, n_categories):
    p = parents_k[v]
    return 1 if p < 0 else n_categories[p]


@_jit
def tree_tables(codes, z, parents, n_categories):
    """Counts ``tables[k, v, j, c]`` of every component's (parent value, child value)."""
    n, V = codes.shape
    n_components = parents.shape[0]
    k_max = 0
    for v in range(V):
        if n_categories[v] > k_max:
            k_max = n_categories[v]
    tables = np.zeros((n_components, V, k_max, k_max))
    for i in range(n):
        k = z[i]
        for v in range(V):
            p = parents[k, v]
            j = codes[i, p] if p >= 0 else 0
            tables[k, v, j, codes[i, v]] += 1.0
    return tables


@_jit
def collapsed_log_marginal(tables, parents, n_categories, ess):
    """sum_k log p(D_k | T_k), CPTs integrated out."""
    n_components, V = parents.shape
    out = 0.0
    for k in range(n_components):
        for v in range(V):
            Kv = n_categories[v]
            Kp = _parent_categories(parents[k], v, n_categories)
            cell = ess / (Kp * Kv)
            for j in range(Kp):
                out += dirichlet_categorical_log_marginal(tables[k, v, j, :Kv], cell)
    return out


@_jit
def _update(tables, codes_i, parents_k, k, delta):
    for v in range(codes_i.shape[0]):
        p = parents_k[v]
        j = codes_i[p] if p >= 0 else 0
        tables[k, v, j, codes_i[v]] += delta


@_jit
def assignment_sweep(rng, codes, z, parents, tables, log_weights, n_categories, ess,
                     counts):
    """One collapsed Gibbs sweep over the assignments, in place on ``z``, ``tables`` and
    ``counts`` (rows per component): ``p(z_i = k | ...) ∝ w_k prod_v (N_k,v,x_pa,x_v +
    a_v) / (N_k,v,x_pa + K_v a_v)`` (the tree's posterior predictive with ``x_i``
    removed). Returns the number of changed assignments."""
    n, V = codes.shape
    n_components = parents.shape[0]
    logp = np.empty(n_components)
    changed = 0
    for i in range(n):
        old = z[i]
        _update(tables, codes[i], parents[old], old, -1.0)
        counts[old] -= 1
        top = -np.inf
        for k in range(n_components):
            s = log_weights[k]
            for v in range(V):
                p = parents[k, v]
                Kv = n_categories[v]
                Kp = 1 if p < 0 else n_categories[p]
                a = ess / (Kp * Kv)
                j = codes[i, p] if p >= 0 else 0
                row = 0.0
                for c in range(Kv):
                    row += tables[k, v, j, c]
                s += math.log(tables[k, v, j, codes[i, v]] + a) - math.log(row + Kv * a)
            logp[k] = s
            if s > top:
                top = s
        total = 0.0
        for k in range(n_components):
            logp[k] = math.exp(logp[k] - top)
            total += logp[k]
        u = rng.random() * total
        new = n_components - 1
        acc = 0.0
        for k in range(n_components):
            acc += logp[k]
            if u < acc:
                new = k
                break
        z[i] = new
        _update(tables, codes[i], parents[new], new, 1.0)
        counts[new] += 1
        if new != old:
            changed += 1
    return changed


@_jit
def sample_tree_mixture_data(rng, z, parents, n_categories, ess, out):
    """Data given assignments and trees: draw every component's BDeu CPTs, then each row
    by ancestral sampling (parents before children: BFS from node 0)."""
    n_components, V = parents.shape
    k_max = 0
    for v in range(V):
        if n_categories[v] > k_max:
            k_max = n_categories[v]
    for k in range(n_components):
        # topological order of tree k
        order = np.empty(V, dtype=np.int64)
        order[0] = 0
        head = 0
        tail = 1
        while head < tail:
            u = order[head]
            head += 1
            for v in range(V):
                if parents[k, v] == u:
                    order[tail] = v
                    tail += 1
        cpt = np.zeros((V, k_max, k_max))
        for v in range(V):
            Kv = n_categories[v]
            Kp = _parent_categories(parents[k], v, n_categories)
            a = ess / (Kp * Kv)
            for j in range(Kp):
                s = 0.0
                for c in range(Kv):
                    g = rng.gamma(a, 1.0)
                    cpt[v, j, c] = g
                    s += g
                if s <= 0.0:  # every gamma draw underflowed: a point mass at random
                    cpt[v, j, int(rng.random() * Kv)] = 1.0
                    s = 1.0
                for c in range(Kv):
                    cpt[v, j, c] /= s
        for i in range(z.shape[0]):
            if z[i] != k:
                continue
            for r in range(V):
                v = order[r]
                p = parents[k, v]
                j = out[i, p] if p >= 0 else 0
                u = rng.random()
                acc = 0.0
                Kv = n_categories[v]
                choice = Kv - 1
                for c in range(Kv):
                    acc += cpt[v, j, c]
                    if u < acc:
                        choice = c
                        break
                out[i, v] = choice
    return out


# ---------------------------------------------------------------------------------------
# Op: the collapsed log likelihood log p(X | z, trees)
# ---------------------------------------------------------------------------------------


@_jit
def tree_mixture_logp(codes, z, parents, n_categories, ess):
    """log p(X | z, trees) with the CPTs integrated out; -inf for codes or labels out of
    range or a parent vector that is not a tree."""
    n, V = codes.shape
    n_components = parents.shape[0]
    if z.shape[0] != n or parents.shape[1] != V:
        return -np.inf
    for i in range(n):
        if z[i] < 0 or z[i] >= n_components:
            return -np.inf
        for v in range(V):
            if codes[i, v] < 0 or codes[i, v] >= n_categories[v]:
                return -np.inf
    for k in range(n_components):
        if parents[k, 0] != -1:
            return -np.inf
        for v in range(1, V):
            if parents[k, v] < 0 or parents[k, v] >= V:
                return -np.inf
    tables = tree_tables(codes, z, parents, n_categories)
    return collapsed_log_marginal(tables, parents, n_categories, ess)


class TreeMixtureLogp(Op):
    """``log p(X | z, T_1..T_K)`` of the mixture of trees with BDeu CPTs integrated out.

    Inputs: codes int (n, V), z int (n,), parents int (K, V), n_categories int (V,),
    ess float scalar. Codes, labels and trees are discrete and ``ess`` a constant
    hyperparameter here: no gradient.
    """

    __props__ = ()

    def make_node(self, codes, z, parents, n_categories, ess):
        ins = []
        for name, x, ndim in (("codes", codes, 2), ("z", z, 1), ("parents", parents, 2),
                              ("n_categories", n_categories, 1)):
            x = pt.as_tensor_variable(x)
            if not x.dtype.startswith(("int", "uint")):
                raise TypeError(f"{name} must be an integer tensor, got {x.dtype}")
            if x.ndim != ndim:
                raise ValueError(f"{name} must be {ndim}-D, got {x.ndim}-D")
            ins.append(pt.cast(x, "int64"))
        ess = pt.as_tensor_variable(ess, dtype="float64")
        if ess.ndim != 0:
            raise ValueError("ess must be a scalar")
        return Apply(self, [*ins, ess], [pt.scalar(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        codes, z, parents, n_categories, ess = inputs
        output_storage[0][0] = np.asarray(tree_mixture_logp(
            np.ascontiguousarray(codes), np.ascontiguousarray(z),
            np.ascontiguousarray(parents), np.ascontiguousarray(n_categories), float(ess)))

    def infer_shape(self, node, input_shapes):
        return [()]

    def pullback(self, inputs, outputs, cotangents):
        return [grad_undefined(self, i, x, "not differentiable here")
                for i, x in enumerate(inputs)]


@nb.register_funcify_default_op_cache_key(TreeMixtureLogp)
def _numba_tree_mixture_logp(op, node, **kwargs):
    @nb.numba_njit
    def tree_mixture_logp_numba(codes, z, parents, n_categories, ess):
        return np.asarray(tree_mixture_logp(
            np.ascontiguousarray(codes), np.ascontiguousarray(z),
            np.ascontiguousarray(parents), np.ascontiguousarray(n_categories), ess.item()))

    return tree_mixture_logp_numba
