# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Bayesian Sets: "more items like these"
#
# Give Bayesian Sets (Ghahramani & Heller 2005; Heller 2007 ch. 4) a handful of items,
# the query $Q=\{x_1,\dots,x_N\}$, and it ranks every other item by how well it would
# fit into a set with them: "clustering on demand". The score of an item $x$ is a Bayes
# factor,
#
# $$\mathrm{score}(x)=\frac{p(x\mid Q)}{p(x)}=\frac{p(x,Q)}{p(x)\,p(Q)},$$
#
# the evidence that $x$ and $Q$ were drawn with the **same** unknown parameters
# $\theta$, over the evidence that they had **different** ones (Heller's Fig. 4.1).
# For binary features with independent Bernoulli($\theta_j$) likelihoods and
# Beta($\alpha_j,\beta_j$) priors the log score is linear in the item (Eqs. 4.12-4.14):
#
# $$\log\mathrm{score}(x)=c+\sum_j q_j x_j,\qquad
#   q_j=\log\frac{\alpha_j+s_j}{\alpha_j}-\log\frac{\beta_j+N-s_j}{\beta_j},$$
#
# where $s_j$ counts the query items with feature $j$. So scoring a whole collection is
# one sparse matrix-vector product. The prior is centred on the data: $\alpha_j=\kappa
# m_j$, $\beta_j=\kappa(1-m_j)$, with $m_j$ the fraction of all items that have feature
# $j$. A feature common in the query but rare in the collection gets a large weight
# $q_j$: the query selects its own features (§4.5).
#
# This tutorial: news stories like three given ones (the Reuters corpus shipped with
# the package), the score as a ratio of two models' evidences, and precision at $k$ on
# labelled data against cosine and tf-idf nearest neighbours.

# %%
import argparse
import time

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_digits
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import normalize

from custom_ops import conjugate as cj
from pp_models import bayesian_sets as bs
from pp_models.datasets import load

# `--fast` (the test suite's run) shrinks the evaluation; parse_known_args lets Jupyter's
# own command-line arguments pass.
parser = argparse.ArgumentParser()
parser.add_argument("--fast", action="store_true", help="small sizes for a quick test run")
FAST = parser.parse_known_args()[0].fast
REPEATS = 3 if FAST else 20  # random queries per digit in section 3
N_LARGE = 20_000 if FAST else 1_000_000  # items in section 5's synthetic collection

# %% [markdown]
# ## 1. Reuters stories like these three
#
# The corpus: 395 Reuters stories from 1996-97 over a 4,258-word vocabulary. Each story
# becomes a binary vector: which words it uses (word presence, not counts). The
# matrix stays sparse throughout.

# %%
reuters = load("reuters")
X = (reuters.data > 0).astype(np.int8).tocsr()
titles = reuters.extras["titles"]
words = np.array(reuters.feature_names)
print(f"{X.shape[0]} stories x {X.shape[1]} words, {X.nnz} ones "
      f"({100 * X.nnz / np.prod(X.shape):.1f}% dense)")

query = [66, 72, 74]  # three stories about the Pope's appendix operation
for i in query:
    print("query:", titles[i])

# %%
ranking = bs.rank(X, query, top=12, exclude_query=True)
print("Bayesian Sets, best completions of the query:")
for i, s in zip(ranking.items, ranking.scores, strict=True):
    print(f"  {s:7.1f}  {titles[i][:80]}")
top_words = ranking.query_weights.top_features(15)
print("\nwords with the largest weights q_j:", ", ".join(words[top_words]))

# %% [markdown]
# The completions are the other stories of the operation and its aftermath. The
# weights say why: words that all three stories use and few other stories do (the
# surgeon's name, "crucitti"; "malignant") weigh most; a word the query lacks gets a
# small negative weight.
#
# The same query by cosine similarity of tf-idf vectors (scikit-learn), averaged over
# the three query stories:

# %%
tfidf = TfidfTransformer().fit_transform(X)
center = sp.csr_matrix(np.asarray(tfidf[query].mean(axis=0)))
nn = NearestNeighbors(metric="cosine", algorithm="brute").fit(tfidf)
idx = nn.kneighbors(center, n_neighbors=15, return_distance=False)[0]
idx = [i for i in idx if i not in query][:12]
print("tf-idf cosine, nearest to the query's mean:")
for i in idx:
    print(f"  {titles[i][:80]}")
shared = len(set(idx) & set(ranking.items))
print(f"\n{shared} of the 12 stories are in both lists")

# %%
fig, ax = plt.subplots(figsize=(8, 4.5))
w = ranking.query_weights.weights
order = np.argsort(w)[::-1][:20]
ax.barh(range(20)[::-1], w[order], color="tab:blue")
ax.set_yticks(range(20)[::-1], words[order])
ax.set_xlabel("weight $q_j$ in the log score")
ax.set_title("Words that define the query (Pope's operation stories)")
ax.axvline(0, color="k", lw=0.5)
fig.tight_layout()
fig.savefig("bayesian_sets_reuters_words.png", dpi=80)
plt.show()

# %% [markdown]
# ## 2. The score is a ratio of two evidences
#
# `bs.model(X, query, item=i, shared=...)` declares Heller's two hypotheses in PyMC:
# the query and story $i$ share one $\theta$ (`shared=True`), or story $i$ has its own
# (`shared=False`). Their log evidences, with $\theta$ integrated out by the zoo's
# conjugate Beta-Bernoulli code, differ by exactly the Bayesian Sets score. (Words that
# every story has or none has would carry no information; the empirical prior leaves
# them out, `bs.beta_prior(X).informative` lists the rest.)

# %%
prior = bs.beta_prior(X)
a, b = prior.alpha, prior.beta
D = X[:, prior.informative].toarray()


def log_evidence(rows):
    """log p(rows), one theta ~ Beta(a, b) per word shared by all rows."""
    return cj.bernoulli_log_marginal(cj.bernoulli_stats(np.ascontiguousarray(rows,
                                                                             float)), (a, b))


scores = bs.scores(X, query)
for i in (ranking.items[0], ranking.items[-1], 0):
    same = log_evidence(D[[*query, i]])
    different = log_evidence(D[query]) + log_evidence(D[[i]])
    print(f"story {i:3d}: log p(x, Q) - log p(x) p(Q) = {same - different:9.3f}   "
          f"score = {scores[i]:9.3f}")
m_same = bs.model(X, query, item=int(ranking.items[0]), shared=True)
m_diff = bs.model(X, query, item=int(ranking.items[0]), shared=False)
print("free variables:", [v.name for v in m_same.free_RVs], "vs",
      [v.name for v in m_diff.free_RVs])

# %% [markdown]
# ## 3. Precision at k on labelled data
#
# With labels we can count. The 1,797 scikit-learn digit images (8x8, grey levels
# binarised at 8) are items; a query is five random images of one digit; a retrieved
# image is correct when it shows the same digit. Precision at $k$ is the fraction of
# correct images among the top $k$ (query excluded), averaged over queries of all ten
# digits. The competitors are nearest-neighbour searches (scikit-learn's
# `NearestNeighbors`) by cosine similarity, averaged over the query items (Heller's COS
# baseline) or the largest over them (nearest to any query item), on the binary pixels
# or on their tf-idf weights. `benchmarks/bench_bayesian_sets.py` times them.

# %%
digits = load_digits()
Xd = (digits.data > 8).astype(np.float64)
yd = digits.target
K = 100


def cosine_mean(rows):
    rows = normalize(rows)
    nn = NearestNeighbors(metric="cosine", algorithm="brute").fit(rows)

    def top(q, k):
        idx = nn.kneighbors(rows[q].mean(0, keepdims=True), n_neighbors=k + len(q),
                            return_distance=False)[0]
        return idx[~np.isin(idx, q)][:k]

    return top


def cosine_any(rows):
    rows = normalize(rows)
    sim = rows @ rows.T  # 1797 x 1797: small enough here

    def top(q, k):
        best = sim[q].max(0)
        best[q] = -np.inf
        return np.lexsort((np.arange(len(best)), -best))[:k]

    return top


methods = {
    "Bayesian Sets": lambda q, k: bs.rank(Xd, q, top=k, exclude_query=True).items,
    "cosine (mean)": cosine_mean(Xd),
    "cosine (nearest to any)": cosine_any(Xd),
    "tf-idf cosine (mean)": cosine_mean(TfidfTransformer().fit_transform(Xd).toarray()),
}
rng = np.random.default_rng(0)
queries = [(c, rng.choice(np.flatnonzero(yd == c), 5, replace=False))
           for c in range(10) for _ in range(REPEATS)]
precision = {}
for name, top in methods.items():
    hits = np.array([yd[top(q, K)] == c for c, q in queries])  # (queries, K)
    precision[name] = hits.cumsum(1) / np.arange(1, K + 1)
print(f"{len(queries)} queries of 5 images")
print(f"{'method':26s}" + "".join(f"{'P@' + str(k):>8s}" for k in (10, 50, 100)))
for name, p in precision.items():
    print(f"{name:26s}" + "".join(f"{p[:, k - 1].mean():8.3f}" for k in (10, 50, 100)))

fig, ax = plt.subplots(figsize=(6.5, 4))
for name, p in precision.items():
    ax.plot(np.arange(1, K + 1), p.mean(0), label=name, lw=2 if name == "Bayesian Sets" else 1)
ax.set_xlabel("k (images retrieved)")
ax.set_ylabel("precision at k")
ax.set_title("Retrieving a digit from 5 examples")
ax.legend()
fig.tight_layout()
fig.savefig("bayesian_sets_precision.png", dpi=80)
# sphinx_gallery_thumbnail_number = 2
plt.show()

# %% [markdown]
# Bayesian Sets keeps its precision deeper into the ranking: past the few nearest
# look-alikes, the images that share the query's *distinctive* pixels (those the
# query has and most images lack) are the ones that show the same digit, and the
# weights $q_j$ find those pixels. Below: a query of five 3s, the pixel weights, and
# the first twelve images retrieved.

# %%
c, q = 3, queries[3 * REPEATS][1]
r = bs.rank(Xd, q, top=12, exclude_query=True)
fig, axes = plt.subplots(2, 12, figsize=(12, 2.6))
for ax in axes.ravel():
    ax.set_axis_off()
for t, i in enumerate(q):
    axes[0, t].imshow(Xd[i].reshape(8, 8), cmap="gray_r")
    axes[0, t].set_title("query", fontsize=8)
im = axes[0, 6].imshow(r.query_weights.weights.reshape(8, 8), cmap="RdBu_r")
axes[0, 6].set_title("weights $q_j$", fontsize=8)
for t, i in enumerate(r.items):
    axes[1, t].imshow(Xd[i].reshape(8, 8), cmap="gray_r")
    axes[1, t].set_title(f"{yd[i]}", fontsize=8, color="k" if yd[i] == c else "r")
fig.tight_layout()
fig.savefig("bayesian_sets_digits.png", dpi=80)
plt.show()

# %% [markdown]
# ## 4. How much does $\kappa$ matter?
#
# Heller found "little sensitivity to the value of the scale factor $\kappa$" (§4.7),
# with order-of-magnitude changes sometimes making a difference:

# %%
for kappa in (0.2, 1.0, 2.0, 10.0, 100.0):
    p50 = np.mean([np.mean(yd[bs.rank(Xd, q, top=50, exclude_query=True,
                                      kappa=kappa).items] == c) for c, q in queries])
    print(f"kappa = {kappa:6.1f}: precision at 50 = {p50:.3f}")

# %% [markdown]
# ## 5. Scale
#
# The cost of a query is one pass over the non-zeros: a synthetic collection of a
# million items with up to 40 features each (1,000,000 x 100,000) is scored without
# ever forming the dense matrix (800 GB as float64).

# %%
rng = np.random.default_rng(1)
nnz_row, d_large = 40, 100_000
cols = rng.zipf(1.3, size=N_LARGE * nnz_row) % d_large
big = sp.csr_matrix((np.ones(cols.size, np.int8), (np.repeat(np.arange(N_LARGE), nnz_row),
                                                   cols)), shape=(N_LARGE, d_large))
big.data[:] = 1
t0 = time.perf_counter()
r = bs.rank(big, [0, 1, 2, 3, 4], top=10)
print(f"{N_LARGE:,} items, {big.nnz:,} ones: one query in {time.perf_counter() - t0:.3f} s")
