"""Label switching solved by relabelling: ``relabel`` permutes every draw's labels onto
one reference labelling.

A model with exchangeable labels (mixture components, topics, features, clusters) has a
posterior invariant under permuting them, so a sampler that mixes well visits every
permutation and one that does not leaves each chain in its own: the raw draws of a
component's mean are then neither identified nor comparable between chains. The ECR
algorithm (Papastamoulis & Iliopoulos 2010, JCGS 19, Section 3; the iterative version
ECR-ITERATIVE-1 of Papastamoulis 2016, J. Stat. Softw. 69(1), Section 3.2) finds, for
each draw ``s``, the permutation ``tau_s`` that makes its allocations agree most with a
pivot allocation ``z*``::

    tau_s = argmax_tau  sum_i  I(tau(z_i^s) = z*_i)                      (ECR, Eq. 9)

an assignment problem over the ``K x K`` matrix of counts ``C[k, j] = #{i : z_i^s = k,
z*_i = j}``, solved by the Hungarian algorithm (``scipy.optimize.linear_sum_assignment``)
in ``O(n + K^3)`` per draw. The iterative version starts from one draw's allocations as
the pivot and replaces the pivot by the most frequent relabelled allocation of each unit
until the permutations no longer change. Every chain is matched to the same pivot, so
the result is consistent across chains.

The agreement count generalises to allocations that are not one label per unit (the
model's :class:`~pp_models.model_info.Relabelling` says which): binary memberships (IBP
features, IOMM clusters) count agreeing zeros and ones, ``C[k, j] = sum_i A_ik P_ij +
(1 - A_ik)(1 - P_ij)``, with the pivot the majority membership; label proportions
(LDA's document-topic ``theta``) count ``C[k, j] = sum_i A_ik P_ij``, with the pivot the
mean relabelled proportions. One-hot labels give Eq. 9's count in either form.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr
from scipy.optimize import linear_sum_assignment

from pp_models.model_info import Relabelling, get_info

__all__ = ["find_permutations", "relabel"]

#: iterations of the pivot update before giving up on a fixed point (each one relabels
#: every draw); ECR-ITERATIVE-1 converges in a handful on the zoo's posteriors
MAX_ITERATIONS = 50


def find_permutations(
    allocations,
    n_labels: int,
    *,
    kind: str = "labels",
    max_iterations: int = MAX_ITERATIONS,
    start: int = -1,
) -> np.ndarray:
    """The ECR permutation of every draw (module docstring).

    Parameters
    ----------
    allocations : array
        ``kind="labels"``: integer labels in ``[0, n_labels)``, shape ``(draws, units)``;
        ``"memberships"`` (0/1) or ``"proportions"``: shape ``(draws, units,
        n_labels)``.
    n_labels : int
        The number of labels ``K``.
    kind : str
        ``"labels"``, ``"memberships"`` or ``"proportions"``.
    max_iterations : int
        Pivot updates allowed.
    start : int
        The draw whose allocations are the first pivot.

    Returns
    -------
    numpy.ndarray
        ``perm`` of shape ``(draws, K)``: label ``k`` of draw ``s`` becomes ``perm[s,
        k]``.
    """
    Relabelling("_", "_", kind)  # validates kind
    K = int(n_labels)
    if K < 1:
        raise ValueError(f"n_labels must be >= 1, got {n_labels}")
    A = np.asarray(allocations)
    if kind == "labels":
        if A.ndim != 2:
            raise ValueError(f"allocations: labels need shape (draws, units), got {A.shape}")
        A = A.astype(np.int64)
        if A.size and (A.min() < 0 or A.max() >= K):
            raise ValueError(
                f"allocations: labels must lie in [0, {K}), got [{A.min()}, {A.max()}]"
            )
    else:
        if A.ndim != 3 or A.shape[2] != K:
            raise ValueError(f"allocations: {kind} need shape (draws, units, {K}), got {A.shape}")
        A = A.astype(np.float64)
    S = A.shape[0]
    identity = np.broadcast_to(np.arange(K), (S, K))
    if S == 0 or K == 1:
        return np.array(identity)
    # ECR-ITERATIVE-1 starts from an arbitrary pivot
    pivot = A[start]
    perm = None
    for _ in range(max_iterations):
        new = _match(A, pivot, K, kind)
        if perm is not None and np.array_equal(new, perm):
            break
        perm = new
        pivot = _pivot(A, perm, K, kind)
    return perm


def _match(A, pivot, K, kind):
    S = A.shape[0]
    perm = np.empty((S, K), dtype=np.int64)
    if kind == "labels":
        for s in range(S):
            counts = np.bincount(A[s] * K + pivot, minlength=K * K).reshape(K, K)
            rows, cols = linear_sum_assignment(counts, maximize=True)
            perm[s, rows] = cols
        return perm
    agree = np.einsum("sik,ij->skj", A, pivot)
    if kind == "memberships":
        agree += np.einsum("sik,ij->skj", 1.0 - A, 1.0 - pivot)
    for s in range(S):
        rows, cols = linear_sum_assignment(agree[s], maximize=True)
        perm[s, rows] = cols
    return perm


def _pivot(A, perm, K, kind):
    if kind == "labels":
        relabelled = np.take_along_axis(perm, A, axis=1)  # (S, n)
        n = A.shape[1]
        counts = np.zeros((n, K), dtype=np.int64)
        for k in range(K):
            counts[:, k] = (relabelled == k).sum(axis=0)
        return counts.argmax(axis=1)
    inverse = np.argsort(perm, axis=1)  # new label j holds old label inverse[s, j]
    relabelled = np.take_along_axis(A, inverse[:, None, :], axis=2)
    mean = relabelled.mean(axis=0)
    return (mean > 0.5).astype(np.float64) if kind == "memberships" else mean


def relabel(
    dt: xr.DataTree,
    model=None,
    *,
    relabelling: Relabelling | None = None,
    max_iterations: int = MAX_ITERATIONS,
) -> xr.DataTree:
    """``dt`` with every draw's labels permuted onto one reference labelling (ECR,
    module docstring), in every chain, for every posterior variable with the label
    dimension and every variable whose values are labels.

    Parameters
    ----------
    dt : xarray.DataTree
        A DataTree with a ``posterior`` group (``fit``'s result, or ``pm.sample``'s).
    model : pymc.Model, optional
        A zoo model: its :class:`~pp_models.model_info.Relabelling` says what to match.
        Default: what ``fit`` recorded in ``dt.attrs["pp_models_relabelling"]``.
    relabelling : Relabelling, optional
        Say it directly (a model written by hand), e.g.
        ``Relabelling(label_dim="component", allocations="z", label_valued=("z",))``.
    max_iterations : int
        Pivot updates allowed.

    Returns
    -------
    xarray.DataTree
        A copy of ``dt``; ``attrs["pp_models_relabelled"] = 1``. Returned unchanged
        (a copy) when the allocations were not recorded (``var_names``); then
        ``attrs["pp_models_relabelled"] = 0``.

    Raises
    ------
    ValueError
        Nothing says what to match (no model, no ``relabelling``, no recorded one), or
        the allocations do not fit the label dimension.
    """
    if not isinstance(dt, xr.DataTree) or "posterior" not in dt.children:
        raise TypeError("dt must be an xarray.DataTree with a 'posterior' group")
    spec = _spec(dt, model, relabelling)
    if spec is None:
        raise ValueError(
            "relabel: say what to match with model= (a zoo model with "
            "exchangeable labels) or relabelling=Relabelling(...)"
        )
    out = dt.copy()
    posterior = dt["posterior"].to_dataset()
    if spec.allocations not in posterior.data_vars or spec.label_dim not in posterior.dims:
        out.attrs["pp_models_relabelled"] = 0
        return out
    K = posterior.sizes[spec.label_dim]
    nc, nd = posterior.sizes["chain"], posterior.sizes["draw"]
    alloc = posterior[spec.allocations]
    if spec.kind == "labels":
        values = alloc.transpose("chain", "draw", ...).values.reshape(nc * nd, -1)
    else:
        if spec.label_dim not in alloc.dims:
            raise ValueError(
                f"relabel: the allocations {spec.allocations!r} have no "
                f"dimension {spec.label_dim!r}"
            )
        values = alloc.transpose("chain", "draw", ..., spec.label_dim).values
        values = values.reshape(nc * nd, -1, K)
    # the first pivot is chain 0's last draw (past any transient), so a run of fewer
    # chains that shares its first chain starts from the same labelling
    perm = find_permutations(values, K, kind=spec.kind, max_iterations=max_iterations, start=nd - 1)
    perm = perm.reshape(nc, nd, K)
    out["posterior"] = xr.DataTree(apply_permutations(posterior, perm, spec))
    out.attrs["pp_models_relabelled"] = 1
    out.attrs["pp_models_relabelling"] = _spec_json(spec)
    return out


def apply_permutations(ds: xr.Dataset, perm: np.ndarray, spec: Relabelling) -> xr.Dataset:
    """``ds`` with draw ``(c, s)``'s label ``k`` renamed ``perm[c, s, k]``: variables with
    ``spec.label_dim`` (or one of ``spec.also_dims``) reordered along each of those
    dimensions, ``spec.label_valued`` mapped by value."""
    # new label j holds what old label inverse[j] held
    inverse = np.argsort(perm, axis=-1)
    label_dims = (spec.label_dim, *spec.also_dims)
    changed = {}
    for name, var in ds.data_vars.items():
        if not {"chain", "draw"} <= set(var.dims):
            continue
        if name in spec.label_valued:
            v = var.transpose("chain", "draw", ...)
            flat = v.values.reshape(v.shape[0], v.shape[1], -1).astype(np.int64)
            mapped = np.take_along_axis(perm, flat, axis=2).reshape(v.shape)
            changed[name] = v.copy(data=mapped.astype(var.dtype)).transpose(*var.dims)
            continue
        moved = var
        for dim in label_dims:
            if dim in var.dims:
                v = moved.transpose("chain", "draw", dim, ...)
                idx = inverse.reshape(*inverse.shape, *([1] * (v.ndim - 3)))
                moved = v.copy(data=np.take_along_axis(v.values, idx, axis=2))
        if moved is not var:
            changed[name] = moved.transpose(*var.dims)
    return ds.assign(changed)


def _spec(dt, model, relabelling):
    if relabelling is not None:
        if not isinstance(relabelling, Relabelling):
            raise TypeError(
                "relabelling must be a pp_models.model_info.Relabelling, got "
                f"{type(relabelling).__name__}"
            )
        return relabelling
    if model is not None:
        info = get_info(model)
        return info.relabelling if info is not None else None
    recorded = dt.attrs.get("pp_models_relabelling")
    if recorded:
        fields = json.loads(recorded)
        return Relabelling(
            fields["label_dim"],
            fields["allocations"],
            fields["kind"],
            tuple(fields["label_valued"]),
            tuple(fields.get("also_dims", ())),
        )
    return None


def _spec_json(spec: Relabelling) -> str:
    return json.dumps(
        {
            "label_dim": spec.label_dim,
            "allocations": spec.allocations,
            "kind": spec.kind,
            "label_valued": list(spec.label_valued),
            "also_dims": list(spec.also_dims),
        }
    )
