"""Convergence checks on label-invariant statistics, with a verdict that says which
failure it is.

A run is ``converged`` under the pooled rule (rank-normalised split R-hat and bulk /
tail ESS over all chains, Vehtari et al. 2021, and no divergent transitions). When it
is not, each chain is checked on its own: the split R-hat of its two halves (drift
within the chain) and its bulk ESS. If every chain passes these but the chains disagree
(pooled R-hat too high), the chains are stationary in different places: ``multimodal``
(then :func:`inference.stacking.stack_chains` weighs them, Yao, Vehtari & Gelman 2022).
Otherwise (a chain drifts, has too few effective draws, or the sampler diverged) the
run is ``not_converged``: running longer is the remedy.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from inference.summary_table import label_variable_names
from pp_models.model_info import posterior_with_labels
from pp_models.validation import check_real

__all__ = [
    "CHAIN_GROUPS_ATTR",
    "EXIT_CODES",
    "TREE_SPLITS",
    "VERDICTS",
    "ConvergenceReport",
    "SplitFrequencies",
    "check_convergence",
    "scalar_quantities",
    "split_frequencies",
    "split_rhat",
    "tree_split_frequencies",
]

#: The verdicts of :attr:`ConvergenceReport.verdict`.
VERDICTS = ("converged", "multimodal", "not_converged")

#: ``ppzoo check``'s exit status for each verdict, and for a run that was interrupted
#: (whatever its draws say: a script must not take a partial run for a result).
EXIT_CODES = {"converged": 0, "not_converged": 1, "multimodal": 3, "interrupted": 4}

#: Root attribute (JSON list, one group id per chain) naming chains started together;
#: then nested R-hat replaces R-hat in the pooled rule.
CHAIN_GROUPS_ATTR = "pp_models_chain_groups"


@dataclass(frozen=True)
class ConvergenceReport:
    """Per-quantity R-hat and ESS against thresholds, per chain and pooled.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per scalar quantity: ``r_hat, ess_bulk, ess_tail`` (pooled; plus
        ``r_hat_nested`` when chains are grouped), ``chain_r_hat`` (the largest split
        R-hat of a chain's halves), ``chain_ess`` (the smallest bulk ESS of a chain),
        ``ok`` (the pooled rule), ``reason``.
    rhat_max, ess_bulk_min, ess_tail_min : float
        The pooled rule's thresholds.
    n_divergent : int or None
        Divergent NUTS transitions, when the data say.
    chains : pandas.DataFrame
        One row per (quantity, chain): ``mean, split_r_hat, ess_bulk, stationary``.
    chain_rhat_max, chain_ess_min : float
        The per-chain thresholds (a chain is stationary when its split R-hat is at most
        ``chain_rhat_max`` and its bulk ESS at least ``chain_ess_min``).
    chain_groups : tuple of int or None
        Group of each chain, when nested R-hat was used.
    splits : SplitFrequencies or None
        For tree-valued chains (PYDT's tree, the mixture of trees' spanning trees), the
        splits' frequencies per chain and their average standard deviation (reported,
        not part of the verdict).
    """

    table: pd.DataFrame
    rhat_max: float
    ess_bulk_min: float
    ess_tail_min: float
    n_divergent: int | None
    chains: pd.DataFrame = field(default_factory=pd.DataFrame)
    chain_rhat_max: float = 1.05
    chain_ess_min: float = 100.0
    chain_groups: tuple | None = None
    splits: SplitFrequencies | None = None

    @property
    def passed(self) -> bool:
        """True when every quantity meets every threshold and nothing diverged."""
        return bool(self.table["ok"].all()) and not self.n_divergent

    @property
    def verdict(self) -> str:
        """``"converged"``, ``"multimodal"`` or ``"not_converged"`` (module docstring)."""
        if self.passed:
            return "converged"
        if self.n_divergent or self.within_chain_failures().any():
            return "not_converged"
        return "multimodal" if self.chains_disagree().any() else "not_converged"

    @property
    def exit_code(self) -> int:
        """``ppzoo check``'s exit status for the verdict (:data:`EXIT_CODES`)."""
        return EXIT_CODES[self.verdict]

    def failures(self) -> pd.DataFrame:
        """The rows that failed."""
        return self.table[~self.table["ok"]]

    def within_chain_failures(self) -> pd.Series:
        """Per quantity: whether some chain is not stationary on its own."""
        if self.chains.empty:
            return pd.Series(False, index=self.table.index)
        bad = ~self.chains["stationary"].astype(bool)
        return (
            bad.groupby(level="quantity", sort=False)
            .any()
            .reindex(self.table.index, fill_value=False)
        )

    def chains_disagree(self) -> pd.Series:
        """Per quantity: whether the pooled R-hat (nested R-hat when chains are grouped)
        failed, or each chain sat at its own constant value."""
        rhat = self.table["r_hat_nested"] if "r_hat_nested" in self.table else self.table["r_hat"]
        return ~(rhat <= self.rhat_max)

    def advice(self) -> str:
        """What failed, and what to try: one line per kind of failure ("" when passed)."""
        if self.passed:
            return ""
        failed = self.failures()
        lines = []

        def names(index) -> str:
            shown = list(index)
            more = f" and {len(shown) - 5} more" if len(shown) > 5 else ""
            return ", ".join(shown[:5]) + more

        drift, few = self._within_chain_kinds()
        verdict = self.verdict
        if verdict == "multimodal":
            apart = failed.index[self.chains_disagree().reindex(failed.index).to_numpy()]
            lines.append(
                f"  {names(apart)}: R-hat above {self.rhat_max} -- each chain is stationary "
                "with enough effective draws, but the chains disagree: they found separate "
                "modes. Chain stacking weighs them (inference.stack_chains; `ppzoo check` "
                "prints the weights for a fit with a log_likelihood group); compare runs "
                "from more starts (--chains 4) and longer (--draws) before trusting one."
            )
        else:
            if len(drift):
                lines.append(
                    f"  {names(drift)}: drift within a chain (split R-hat of its halves "
                    f"above {self.chain_rhat_max}) -- not yet stationary; run longer "
                    "(--tune and --draws, e.g. x4) and keep several chains (--chains 4)."
                )
            if len(few):
                lines.append(
                    f"  {names(few)}: too few effective draws within a chain (need "
                    f"{self.chain_ess_min:g} per chain; {self.ess_bulk_min:g} bulk / "
                    f"{self.ess_tail_min:g} tail over all) -- more --draws or more "
                    "--chains add them."
                )
            rest = [q for q in failed.index if q not in set(drift) | set(few)]
            rhat = [q for q in rest if not self.table.loc[q, "r_hat"] <= self.rhat_max]
            ess = [q for q in rest if q not in rhat]
            if rhat:
                lines.append(
                    f"  {names(rhat)}: R-hat above {self.rhat_max} -- the chains "
                    "disagree; run longer (--tune and --draws, e.g. x4) and keep "
                    "several chains (--chains 4)."
                )
            if ess:
                lines.append(
                    f"  {names(ess)}: too few effective draws (need "
                    f"{self.ess_bulk_min:g} bulk / {self.ess_tail_min:g} tail) -- "
                    "more --draws or more --chains add them."
                )
        if self.n_divergent:
            lines.append(
                f"  {self.n_divergent} divergent NUTS transitions -- the sampler "
                "missed part of the posterior; try a higher target_accept or "
                "another method (--method)."
            )
        return f"What failed ({verdict}) and what to try:\n" + "\n".join(lines)

    def _within_chain_kinds(self) -> tuple[list, list]:
        """Quantities with a drifting chain, and (the others) with a chain of too few
        effective draws."""
        if self.chains.empty:
            return [], []
        c = self.chains
        drifting = ~(c["split_r_hat"] <= self.chain_rhat_max) & c["split_r_hat"].notna()
        short = ~(c["ess_bulk"] >= self.chain_ess_min) & c["ess_bulk"].notna()
        drift = list(dict.fromkeys(c.index[drifting.to_numpy()].get_level_values("quantity")))
        few = [
            q
            for q in dict.fromkeys(c.index[short.to_numpy()].get_level_values("quantity"))
            if q not in drift
        ]
        return drift, few

    def chain_table(self) -> pd.DataFrame:
        """The per-chain table, wide: one row per quantity, ``mean``, ``split_r_hat``
        and ``ess_bulk`` of each chain side by side (worst quantities first)."""
        if self.chains.empty:
            return pd.DataFrame()
        wide = self.chains[["mean", "split_r_hat", "ess_bulk"]].unstack("chain")
        order = self.table["r_hat"].fillna(1.0).sort_values(ascending=False, kind="stable")
        return wide.reindex(order.index)

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        head = (
            f"Convergence: {'PASSED' if self.passed else 'FAILED'}, {self.verdict} "
            f"(R-hat <= {self.rhat_max}, bulk ESS >= {self.ess_bulk_min:g}, "
            f"tail ESS >= {self.ess_tail_min:g}"
            + (", nested R-hat over the chain groups" if self.chain_groups else "")
            + (f"; {self.n_divergent} divergent transitions" if self.n_divergent else "")
            + ")"
        )
        with pd.option_context("display.width", 120, "display.max_rows", 60):
            body = self.table.to_string(float_format=lambda v: f"{v:.3f}")
        return f"{head}\n{body}"

    def chains_text(self) -> str:
        """The per-chain table as text, with its rule in the heading."""
        wide = self.chain_table()
        if wide.empty:
            return ""
        wide.columns = [f"{stat}[{chain}]" for stat, chain in wide.columns]
        with pd.option_context(
            "display.width", 160, "display.max_rows", 60, "display.max_columns", 40
        ):
            body = wide.to_string(float_format=lambda v: f"{v:.3f}")
        return (
            f"Per chain (stationary: split R-hat of its halves <= {self.chain_rhat_max}, "
            f"bulk ESS >= {self.chain_ess_min:g}):\n{body}"
        )


def check_convergence(
    dt: xr.DataTree,
    *,
    var_names=None,
    rhat_max: float = 1.01,
    ess_bulk_min: float = 400,
    ess_tail_min: float = 400,
    chain_rhat_max: float = 1.05,
    chain_ess_min: float | None = None,
    chain_groups: Sequence[int] | None = None,
) -> ConvergenceReport:
    """Check R-hat and effective sample sizes (Vehtari et al. 2021), pooled and per chain.

    By default the quantities checked are the posterior's identified variables and the
    label-invariant statistics a zoo model declared (see ``inference.summary``); raw
    component labels are left out because label switching between chains makes their
    R-hat meaningless. A DataTree straight from ``pm.sample`` (no zoo attributes) has
    every posterior variable checked. A quantity that is constant over every draw of
    every chain passes (e.g. the number of occupied components when it never changes);
    one that is constant within chains but differs between them fails (the chains
    disagree; each is stationary).

    The verdict (:attr:`ConvergenceReport.verdict`): ``converged`` when the pooled rule
    passes; ``multimodal`` when it fails only because the chains disagree while every
    chain is stationary on its own (split R-hat of its halves <= ``chain_rhat_max`` and
    bulk ESS >= ``chain_ess_min``, for every quantity) and nothing diverged;
    ``not_converged`` otherwise. The per-chain split R-hat compares two halves only, so
    it is noisier than the pooled one: its threshold is looser (1.05 by default: with
    n draws per chain its R-hat^2 - 1 is about (chi^2_1 - 1) / (n / 2), beyond 0.1025
    with probability below 1e-3 from n = 200 draws of a stationary chain, and far below
    for longer chains).

    Parameters
    ----------
    dt : xarray.DataTree
        With a ``posterior`` group of at least 2 chains (R-hat needs them).
    var_names : list of str, optional
    rhat_max, ess_bulk_min, ess_tail_min : float
        The pooled rule.
    chain_rhat_max : float
        Largest split R-hat of a chain's halves for the chain to count as stationary.
    chain_ess_min : float, optional
        Smallest bulk ESS of a stationary chain; default ``ess_bulk_min / n_chains``
        (chains that each pass it hold ``ess_bulk_min`` effective draws together).
    chain_groups : sequence of int, optional
        Group of each chain (chains started from one point, Margossian et al. 2024),
        equal-sized groups; default the root attribute ``pp_models_chain_groups`` (JSON)
        if present. Then nested R-hat (``arviz_stats.rhat_nested``) replaces R-hat in the
        pooled rule.

    Returns
    -------
    ConvergenceReport
    """
    if not isinstance(dt, xr.DataTree) or "posterior" not in dt.children:
        raise TypeError("dt must be an xarray.DataTree with a 'posterior' group")
    # R-hat is >= 1 and an ESS >= 0: a threshold outside would fail (or pass) every
    # quantity, and NaN would fail every one, without saying why
    rhat_max = check_real(rhat_max, "rhat_max", minimum=1.0)
    ess_bulk_min = check_real(ess_bulk_min, "ess_bulk_min", minimum=0.0)
    ess_tail_min = check_real(ess_tail_min, "ess_tail_min", minimum=0.0)
    chain_rhat_max = check_real(chain_rhat_max, "chain_rhat_max", minimum=1.0)
    posterior = posterior_with_labels(dt)
    n_chains = posterior.sizes.get("chain", 0)
    if n_chains < 2:
        raise ValueError("convergence checks need at least 2 chains")
    chain_ess_min = (
        ess_bulk_min / n_chains
        if chain_ess_min is None
        else check_real(chain_ess_min, "chain_ess_min", minimum=0.0)
    )
    groups = _chain_groups(dt, chain_groups, n_chains)
    labels = set(label_variable_names(dt))
    if var_names is None:
        var_names = [
            v for v in posterior.data_vars if v not in labels and posterior[v].dtype.kind in "biuf"
        ]
    else:
        var_names = [var_names] if isinstance(var_names, str) else list(var_names)
        missing = [v for v in var_names if v not in posterior.data_vars]
        if missing:
            raise ValueError(f"var_names: not in the posterior: {', '.join(missing)}")
    if not var_names:
        raise ValueError("var_names: nothing to check")

    rows, chain_rows = [], []
    for label, values in scalar_quantities(posterior, var_names):
        row, per_chain = _diagnose(
            label,
            values,
            rhat_max,
            ess_bulk_min,
            ess_tail_min,
            chain_rhat_max,
            chain_ess_min,
            groups,
        )
        rows.append(row)
        chain_rows.extend(per_chain)
    table = pd.DataFrame(rows).set_index("quantity")
    chains = pd.DataFrame(chain_rows).set_index(["quantity", "chain"])

    n_divergent = None
    if "sample_stats" in dt.children and "diverging" in dt["sample_stats"].data_vars:
        n_divergent = int(dt["sample_stats"]["diverging"].sum())
    try:
        splits = tree_split_frequencies(dt)
    except ValueError:  # a tree the family's reader refuses: the verdict stands without it
        splits = None
    return ConvergenceReport(
        table,
        rhat_max,
        ess_bulk_min,
        ess_tail_min,
        n_divergent,
        chains=chains,
        chain_rhat_max=chain_rhat_max,
        chain_ess_min=chain_ess_min,
        chain_groups=None if groups is None else tuple(groups),
        splits=splits,
    )


@dataclass(frozen=True)
class SplitFrequencies:
    """Split (clade, edge) frequencies of tree-valued chains, per chain, and their average
    standard deviation over the chains (ASDSF, as MrBayes reports it: below 0.01 very
    good, below 0.05 adequate).

    Attributes
    ----------
    frequencies : pandas.DataFrame
        One row per split seen in at least ``min_frequency`` of some chain's draws (the
        split's leaves or nodes as its label), one column per chain.
    asdsf : float
        The mean over those splits of the sample standard deviation (ddof 1) of their
        frequencies across chains.
    min_frequency : float
    """

    frequencies: pd.DataFrame
    asdsf: float
    min_frequency: float

    def __str__(self) -> str:
        grade = (
            "very good"
            if self.asdsf < 0.01
            else "adequate"
            if self.asdsf < 0.05
            else "the chains sample different trees"
        )
        sd = self.frequencies.std(axis=1, ddof=1).sort_values(ascending=False)
        worst = self.frequencies.loc[sd.index[:5]]
        with pd.option_context("display.width", 120, "display.max_colwidth", 40):
            body = worst.to_string(float_format=lambda v: f"{v:.3f}")
        return (
            f"Tree splits: ASDSF {self.asdsf:.4f} over {len(self.frequencies)} splits "
            f"seen in >= {self.min_frequency:g} of a chain's draws ({grade}; MrBayes: "
            f"< 0.01 very good, < 0.05 adequate). Least agreed splits:\n{body}"
        )


def _pydt_clades(posterior: xr.Dataset):
    """Per chain, per draw: the clades of the sampled PYDT tree."""
    from pp_models.trees import DiffusionTree

    if "tree" not in posterior.data_vars:
        return None
    packed = np.asarray(posterior["tree"].transpose("chain", "draw", ...).values)
    return [
        [DiffusionTree.from_packed(p, validate=False).clades() for p in chain] for chain in packed
    ]


def _mixture_of_trees_edges(posterior: xr.Dataset):
    """Per chain, per draw: the edges (as pairs of nodes) of the occupied components'
    spanning trees, a label-invariant set (the components' order does not enter)."""
    from pp_models.trees import spanning_tree_edges

    if "trees" not in posterior.data_vars or "z" not in posterior.data_vars:
        return None
    trees = np.asarray(posterior["trees"].transpose("chain", "draw", ...).values)
    z = np.asarray(posterior["z"].transpose("chain", "draw", ...).values)
    n_nodes = trees.shape[-1]
    out = []
    for chain_trees, chain_z in zip(trees, z, strict=True):
        draws = []
        for parents, labels in zip(chain_trees, chain_z, strict=True):
            edges = np.concatenate(
                [spanning_tree_edges(parents[k]) for k in np.unique(labels.astype(np.int64))]
            )
            rows = np.zeros((len(edges), n_nodes), dtype=bool)
            rows[np.arange(len(edges))[:, None], edges] = True
            draws.append(rows)
        out.append(draws)
    return out


#: Tree-valued chains, by family: a function of the posterior (with its labels) giving,
#: per chain and draw, the tree's splits as boolean rows (PYDT: each clade's leaves;
#: mixture of trees: each edge's two nodes, over the occupied components' trees).
TREE_SPLITS = {"pydt": _pydt_clades, "mixture_of_trees": _mixture_of_trees_edges}


def tree_split_frequencies(dt: xr.DataTree, *, min_frequency: float = 0.1):
    """:class:`SplitFrequencies` of a fit whose family samples trees
    (:data:`TREE_SPLITS`), else None.

    Parameters
    ----------
    dt : xarray.DataTree
    min_frequency : float
        Splits below this frequency in every chain are left out (MrBayes's default 0.10).
    """
    family = dt.attrs.get("pp_models_family", "")
    if family not in TREE_SPLITS:
        return None
    splits = TREE_SPLITS[family](posterior_with_labels(dt))
    if splits is None:
        return None
    return split_frequencies(splits, min_frequency=min_frequency)


def split_frequencies(splits, *, min_frequency: float = 0.1) -> SplitFrequencies:
    """Split frequencies per chain and their ASDSF.

    Parameters
    ----------
    splits : sequence (chains) of sequences (draws) of boolean arrays
        Each draw's splits, one boolean row per split (a clade's leaves, an edge's two
        nodes).
    min_frequency : float
        Splits seen less often in every chain are left out of the average.
    """
    min_frequency = check_real(min_frequency, "min_frequency", minimum=0.0, maximum=1.0)
    counts = []
    for chain in splits:
        seen: dict[bytes, int] = {}
        for draw in chain:
            rows = np.atleast_2d(np.asarray(draw, dtype=bool))
            for key in {np.packbits(r).tobytes() + bytes([r.size % 8]) for r in rows}:
                seen[key] = seen.get(key, 0) + 1
        counts.append((seen, len(chain)))
    if len(counts) < 2:
        raise ValueError("splits: split frequencies need at least 2 chains")
    keys = sorted(set().union(*(seen for seen, _ in counts)))
    table = np.array([[seen.get(k, 0) / max(n, 1) for seen, n in counts] for k in keys])
    table = table.reshape(len(keys), len(counts))
    keep = table.max(axis=1) >= min_frequency if len(keys) else np.zeros(0, dtype=bool)
    n_leaves = None
    for chain in splits:
        for draw in chain:
            n_leaves = np.atleast_2d(draw).shape[1]
            break
        if n_leaves is not None:
            break
    labels = [_split_label(k, n_leaves) for k in np.asarray(keys, dtype=object)[keep]]
    frequencies = pd.DataFrame(
        table[keep],
        index=pd.Index(labels, name="split"),
        columns=pd.Index(range(len(counts)), name="chain"),
    )
    asdsf = float(frequencies.std(axis=1, ddof=1).mean()) if len(frequencies) else 0.0
    return SplitFrequencies(frequencies, asdsf, min_frequency)


def _split_label(key: bytes, n_leaves: int) -> str:
    leaves = np.flatnonzero(np.unpackbits(np.frombuffer(key[:-1], dtype=np.uint8))[:n_leaves])
    shown = ",".join(map(str, leaves[:12])) + (",..." if leaves.size > 12 else "")
    return f"{{{shown}}} ({leaves.size})"


def scalar_quantities(posterior: xr.Dataset, var_names):
    """``(label, values)`` of every scalar element of the variables: ``values`` a float
    ``(chain, draw)`` array, ``label`` like ``"name[i, j]"`` (``"name"`` for a scalar)."""
    for name in var_names:
        da = posterior[name]
        extra = [d for d in da.dims if d not in ("chain", "draw")]
        stacked = da.stack(_element=extra) if extra else da.expand_dims("_element", axis=-1)
        stacked = stacked.transpose("chain", "draw", "_element")
        values = np.asarray(stacked.values, dtype=np.float64)
        for i in range(stacked.sizes["_element"]):
            label = name if not extra else f"{name}[{_index_label(stacked, i)}]"
            yield label, values[:, :, i]


def split_rhat(values) -> float:
    """Rank-normalised R-hat of one chain's two halves (Vehtari et al. 2021, Eqs. 3-4 on
    the z-scaled ranks, and on the folded draws; the larger): drift within the chain.
    NaN for a chain shorter than 4 draws or constant."""
    x = np.asarray(values, dtype=np.float64)
    half = x.size // 2
    if half < 2 or np.ptp(x) == 0:
        return np.nan
    halves = np.stack([x[:half], x[-half:]])
    folded = np.abs(halves - np.median(halves))
    return max(_rhat_of_halves(_z_scale(halves)), _rhat_of_halves(_z_scale(folded)))


def _z_scale(ary):
    # Blom's rank offsets, as ArviZ's rank normalisation
    ranks = stats.rankdata(ary, method="average").reshape(ary.shape)
    return stats.norm.ppf((ranks - 0.375) / (ary.size + 0.25))


def _rhat_of_halves(ary):
    n = ary.shape[1]
    within = np.mean(np.var(ary, axis=1, ddof=1))
    between = n * np.var(np.mean(ary, axis=1), ddof=1)
    if within == 0:
        return np.inf if between > 0 else 1.0
    return float(np.sqrt((between / within + n - 1) / n))


def _chain_groups(dt, chain_groups, n_chains):
    if chain_groups is None:
        raw = dt.attrs.get(CHAIN_GROUPS_ATTR)
        if raw is None:
            return None
        chain_groups = json.loads(raw) if isinstance(raw, str) else list(raw)
    groups = np.asarray(chain_groups)
    if groups.ndim != 1 or groups.size != n_chains or groups.dtype.kind not in "iu":
        raise ValueError(
            f"chain_groups must give an integer group for each of the "
            f"{n_chains} chains, got {list(chain_groups)!r}"
        )
    _, counts = np.unique(groups, return_counts=True)
    if counts.size < 2 or np.any(counts != counts[0]):
        raise ValueError(
            f"chain_groups must form at least 2 groups of equal size, got {list(chain_groups)!r}"
        )
    return [int(g) for g in groups]


def _index_label(stacked: xr.DataArray, i: int) -> str:
    index = stacked["_element"].values[i]
    index = index if isinstance(index, tuple) else (index,)
    return ", ".join(str(v) for v in index)


def _per_chain(label, values, chain_rhat_max, chain_ess_min) -> list[dict]:
    rows = []
    for c, chain in enumerate(values):
        if np.ptp(chain) == 0:
            # stuck at one value: stationary, with no defined R-hat or ESS
            rows.append(
                dict(
                    quantity=label,
                    chain=c,
                    mean=float(chain[0]),
                    split_r_hat=np.nan,
                    ess_bulk=np.nan,
                    stationary=True,
                )
            )
            continue
        r_hat = split_rhat(chain)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ess = float(az.ess(xr.DataArray(chain[None], dims=("chain", "draw")), method="bulk"))
        rows.append(
            dict(
                quantity=label,
                chain=c,
                mean=float(np.mean(chain)),
                split_r_hat=r_hat,
                ess_bulk=ess,
                stationary=bool(r_hat <= chain_rhat_max and ess >= chain_ess_min),
            )
        )
    return rows


def _diagnose(
    label, values, rhat_max, ess_bulk_min, ess_tail_min, chain_rhat_max, chain_ess_min, groups
) -> tuple[dict, list[dict]]:
    per_chain = _per_chain(label, values, chain_rhat_max, chain_ess_min)
    chain_part = dict(
        chain_r_hat=max(
            (r["split_r_hat"] for r in per_chain if np.isfinite(r["split_r_hat"])), default=np.nan
        ),
        chain_ess=min(
            (r["ess_bulk"] for r in per_chain if np.isfinite(r["ess_bulk"])), default=np.nan
        ),
    )
    nested = {} if groups is None else {"r_hat_nested": np.nan}
    if np.ptp(values) == 0:
        return dict(
            quantity=label,
            r_hat=1.0,
            ess_bulk=np.nan,
            ess_tail=np.nan,
            **({} if groups is None else {"r_hat_nested": 1.0}),
            **chain_part,
            ok=True,
            reason="constant",
        ), per_chain
    if np.all(np.ptp(values, axis=1) == 0):
        return dict(
            quantity=label,
            r_hat=np.inf,
            ess_bulk=np.nan,
            ess_tail=np.nan,
            **({} if groups is None else {"r_hat_nested": np.inf}),
            **chain_part,
            ok=False,
            reason="each chain stuck at a different value",
        ), per_chain
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        da = xr.DataArray(values, dims=("chain", "draw"))
        r_hat = float(az.rhat(da))
        ess_bulk = float(az.ess(da, method="bulk"))
        ess_tail = float(az.ess(da, method="tail"))
        if groups is not None:
            import arviz_stats

            nested["r_hat_nested"] = float(
                arviz_stats.rhat_nested(values, superchain_ids=groups, chain_axis=0, draw_axis=1)
            )
    reasons = []
    if groups is not None:
        if not nested["r_hat_nested"] <= rhat_max:
            reasons.append(f"nested R-hat {nested['r_hat_nested']:.3f} > {rhat_max}")
    elif not r_hat <= rhat_max:
        reasons.append(f"R-hat {r_hat:.3f} > {rhat_max}")
    if not ess_bulk >= ess_bulk_min:
        reasons.append(f"bulk ESS {ess_bulk:.0f} < {ess_bulk_min:g}")
    if not ess_tail >= ess_tail_min:
        reasons.append(f"tail ESS {ess_tail:.0f} < {ess_tail_min:g}")
    return dict(
        quantity=label,
        r_hat=r_hat,
        ess_bulk=ess_bulk,
        ess_tail=ess_tail,
        **nested,
        **chain_part,
        ok=not reasons,
        reason="; ".join(reasons),
    ), per_chain
