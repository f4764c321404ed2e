"""Draw the README's picture, ``docs/_static/readme.png``.

Two answers of the zoo, with no sampling: the greedy Bayesian
hierarchical clustering tree of the iris flowers (merges the model doubts, r_k < 0.5, in
red) and the graphical-lasso graph of the Sachs protein-signalling data at the penalty
of Murphy's Fig. 26.18 with 18 edges. Run from the repository root:

    python docs/readme_figure.py
"""

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from pp_models import bhc, datasets, ggm

OUT = Path(__file__).resolve().parent / "_static" / "readme.png"

iris = datasets.load("iris")
X = (iris.data - iris.data.mean(0)) / iris.data.std(0)
tree = bhc.greedy(X, likelihood="gaussian", progressbar=False)

sachs = datasets.load("sachs")
graph = ggm.graphical_lasso(np.cov(sachs.data, rowvar=False) / 1000, 7.0)

fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4), width_ratios=(2.2, 1))
tree.plot(ax=left)
left.set_title(f"BHC tree of the 150 irises ({len(set(tree.cut()))} clusters at r_k >= 0.5)")
ggm.plot_graph(graph.adjacency, sachs.feature_names, ax=right, max_width=1.5,
               title=f"graphical lasso on Sachs: {graph.n_edges} edges")
fig.tight_layout()
fig.savefig(OUT, dpi=80)
print(f"wrote {OUT}")
