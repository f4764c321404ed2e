"""Numba kernels of the trees :mod:`pp_models.trees` represents, one module per kind.

- :mod:`custom_ops.trees.merge`: binary merge trees (scipy's linkage order): validation,
  node sizes and depths;
- :mod:`custom_ops.trees.traversal`: children lists and breadth-first order of any rooted
  tree stored as a parent vector, which the other kinds share;
- :mod:`custom_ops.trees.spanning`: undirected spanning trees (matrix-tree kernels, exact
  sampling, Chow-Liu statistics);
- :mod:`custom_ops.trees.diffusion`: rooted trees with divergence times (Pitman-Yor and
  Dirichlet diffusion trees).

The names of the first two are re-exported here.
"""

from custom_ops.trees.merge import (
    MERGE_ERRORS,
    merges_error,
    node_depths,
    node_sizes,
    validate_merges,
)
from custom_ops.trees.traversal import breadth_first, children_from_counts, children_lists

__all__ = [
    "MERGE_ERRORS",
    "breadth_first",
    "children_from_counts",
    "children_lists",
    "merges_error",
    "node_depths",
    "node_sizes",
    "validate_merges",
]
