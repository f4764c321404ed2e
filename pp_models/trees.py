"""Trees: one representation per kind of tree, shared by every family.

Sections (each owns its kind; families import from here, never re-derive):

- binary merge trees (BHC, agglomerative clustering, metrics): merges, scipy linkage,
  parent vectors, Newick, node sizes, leaves under a node, height;
- rooted trees with divergence times (Pitman-Yor / Dirichlet diffusion trees):
  multifurcating, parent array + divergence times;
- undirected spanning trees (Chow-Liu, mixtures of trees): edge lists over V nodes.

Numba kernels behind them live in :mod:`custom_ops.trees`.
"""

from __future__ import annotations
