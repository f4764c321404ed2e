# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Topics in text: latent Dirichlet allocation
#
# Latent Dirichlet allocation (LDA; Blei, Ng & Jordan 2003; Murphy 2012 §27.3) explains a
# collection of documents by a small number of *topics*, each a distribution over the
# vocabulary. The generative story:
#
# 1. for each topic $k = 1..K$: draw word probabilities $\phi_k \sim \mathrm{Dir}(\eta)$;
# 2. for each document $d$: draw topic proportions $\theta_d \sim \mathrm{Dir}(\alpha)$;
# 3. for each token $i$ of document $d$: draw a topic $z_i \sim \mathrm{Cat}(\theta_d)$,
#    then a word $w_i \sim \mathrm{Cat}(\phi_{z_i})$.
#
# Small $\alpha$ makes documents use few topics; small $\eta$ makes topics use few words.
#
# `pp_models.lda.model` builds this in PyMC two ways:
#
# * **collapsed** (default): $\theta$ and $\phi$ are integrated out and the topic $z_i$
#   of every token is the unknown. Its log density is the collapsed joint
#   $\log p(w, z \mid \alpha, \eta)$ (Murphy Eqs. 27.34, 27.36), and `inference.fit`
#   samples it with the registered collapsed Gibbs step (Griffiths & Steyvers 2004),
#   implemented with SparseLDA's bucket trick (Yao, Mimno & McCallum 2009) in Numba;
# * **explicit** (`collapsed=False`): $\theta$ and $\phi$ are the unknowns and the
#   topics are summed out, $p(w = v \mid \theta_d, \phi) = \sum_k \theta_{dk}\phi_{kv}$:
#   a continuous model for NUTS or (minibatch) ADVI.

# %%
import argparse
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
from scipy.optimize import linear_sum_assignment

from inference import fit
from pp_models import datasets, lda

# `--fast` (the test suite's run) shrinks corpora and runs; without it: the full tutorial.
# parse_known_args lets Jupyter's own command-line arguments pass.
parser = argparse.ArgumentParser()
parser.add_argument("--fast", action="store_true", help="small sizes for a quick test run")
parser.add_argument("--out", default="tutorials_output",
                    help="folder for the figures (created; default tutorials_output)")
OPTIONS = parser.parse_known_args()[0]
FAST = OPTIONS.fast
OUT = Path(OPTIONS.out)  # every figure is saved here, not in the working folder
OUT.mkdir(parents=True, exist_ok=True)
N_BARS_DOCS = 300 if FAST else 1000
BARS_DRAWS, BARS_TUNE = (50, 100) if FAST else (200, 300)
ADVI_ITERATIONS = 1500 if FAST else 6000
REUTERS_DRAWS, REUTERS_TUNE = (10, 40) if FAST else (50, 250)

rng = np.random.default_rng(2004)

# %% [markdown]
# ## The generative story, run forwards
#
# Prior draws need no data beyond the document lengths. Steyvers & Griffiths' toy
# vocabulary has two meanings of "bank"; with $K = 2$ topics and a small $\alpha$ each
# simulated document leans on one topic.

# %%
vocab = ["money", "loan", "bank", "river", "stream"]
lengths = [8, 8, 8]
toy = lda.model([[0] * n for n in lengths], n_topics=2, alpha=0.2, eta=0.5, n_words=5)
z_draw, w_draw = pm.draw([toy["z"], toy["w"]], random_seed=1)
start = 0
for d, n in enumerate(lengths):
    words = [
        f"{vocab[w]}/{z}"
        for w, z in zip(w_draw[start : start + n], z_draw[start : start + n], strict=True)
    ]
    print(f"document {d}: {' '.join(words)}")
    start += n

# %% [markdown]
# ## The bars: topics you can see
#
# Griffiths & Steyvers (2004) made a corpus whose topics are pictures: the vocabulary is
# the 25 pixels of a 5 x 5 image, and each of the 10 topics is a horizontal or vertical
# bar (uniform over its 5 pixels). A document is a bag of 100 pixel "words" mixed from
# the bars with $\theta_d \sim \mathrm{Dir}(1)$.


# %%
def bars_topics():
    topics = np.zeros((10, 25))
    for r in range(5):
        img = np.zeros((5, 5))
        img[r, :] = 0.2
        topics[r] = img.ravel()
        topics[5 + r] = img.T.ravel()
    return topics


def show(images, title, filename, vmax=None):
    """Draw 5 x 5 images in a row, save them as ``filename`` and show them."""
    fig, axes = plt.subplots(1, len(images), figsize=(1.2 * len(images), 1.6))
    for ax, img in zip(axes, images, strict=True):
        ax.imshow(np.reshape(img, (5, 5)), cmap="Greys", vmin=0, vmax=vmax)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(filename, dpi=80)
    plt.show()
    return fig


true_topics = bars_topics()
theta_true = rng.dirichlet(np.ones(10), size=N_BARS_DOCS)
bars_docs = np.array([rng.multinomial(100, t @ true_topics) for t in theta_true])
show(true_topics, "the 10 true topics", OUT / "lda_bars_true_topics.png", vmax=0.25)
show(bars_docs[:10], "10 documents (pixel counts)", OUT / "lda_bars_documents.png")

# %% [markdown]
# Fit the collapsed model with Gibbs sampling. `fit(method="auto")` reads the model's
# hint and gives `z` the collapsed Gibbs step. `z` holds one topic per token (100,000
# here); we keep it out of the trace with `var_names` and record the topics `phi`, which
# the collapsed model reports as Rao-Blackwellised conditional means
# $E[\phi_k \mid z, w] = (n_{kv} + \eta)/(n_k + V\eta)$.

# %%
n_train = round(0.9 * N_BARS_DOCS)
train_bars, test_bars = bars_docs[:n_train], bars_docs[n_train:]
bars_model = lda.model(train_bars, n_topics=10, alpha=1.0, eta=0.01)
t0 = time.perf_counter()
bars_gibbs = fit(
    bars_model, draws=BARS_DRAWS, tune=BARS_TUNE, chains=1, random_seed=1, progressbar=False,
    var_names=["phi"],
)
gibbs_seconds = time.perf_counter() - t0
print(f"collapsed Gibbs: {gibbs_seconds:.1f} s, method {bars_gibbs.attrs['pp_models_method']}")


def match(estimated, true):
    """Order the estimated topics like the true ones (Hungarian matching on L1)."""
    cost = np.abs(estimated[:, None, :] - true[None, :, :]).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    order = rows[np.argsort(cols)]
    return estimated[order], cost[order, np.arange(len(true))]


phi_gibbs, l1_gibbs = match(lda.posterior_topics(bars_gibbs.posterior).values, true_topics)
show(phi_gibbs, "collapsed Gibbs: posterior-mean topics", OUT / "lda_bars_gibbs_topics.png",
     vmax=0.25)
print("L1 error per topic:", np.round(l1_gibbs, 3))

# %% [markdown]
# The log joint density $\log p(w, z)$, recorded by the step for every draw, is the
# natural trace to watch. The plot starts after the tuning sweeps, which `fit` does not
# keep, so most of its climb from the random start is already over: what is left should
# be fluctuation around a level. A drift still visible in the first draws (as with
# `--fast`'s short tuning) says to tune longer.

# %%
fig, ax = plt.subplots(figsize=(5, 2.5))
ax.plot(bars_gibbs.sample_stats["log_joint"].values[0])
ax.set_xlabel(f"draw (after {BARS_TUNE} tuning sweeps)")
ax.set_ylabel("log p(w, z)")
fig.tight_layout()
fig.savefig(OUT / "lda_bars_log_joint.png", dpi=80)
plt.show()

# %% [markdown]
# ## Collapsed Gibbs vs ADVI
#
# The explicit model has continuous unknowns ($\theta$: 900 x 10, $\phi$: 10 x 25), so
# ADVI can fit it; with `batch_size` each iteration sees a random minibatch of documents
# and the likelihood is scaled up by `total_size` (stochastic variational inference).

# %%
explicit = lda.model(train_bars, n_topics=10, alpha=1.0, eta=0.01, collapsed=False, batch_size=100)
t0 = time.perf_counter()
bars_advi = fit(
    explicit,
    method="advi",
    draws=100,
    chains=1,
    random_seed=1,
    progressbar=False,
    n=ADVI_ITERATIONS,
    learning_rate=0.02,
)
advi_seconds = time.perf_counter() - t0
phi_advi, l1_advi = match(bars_advi.posterior["phi"].values[0].mean(0), true_topics)
show(phi_advi, "minibatch ADVI: mean topics", OUT / "lda_bars_advi_topics.png", vmax=0.25)
print(f"ADVI: {advi_seconds:.1f} s; L1 error per topic: {np.round(l1_advi, 3)}")

# %% [markdown]
# Held-out perplexity by *document completion* (Wallach et al. 2009): for each test
# document estimate $\theta_d$ from half its tokens with the topics fixed, then score the
# other half. Lower is better; a model that knew nothing would score 25 (uniform over the
# pixels), and the true topics set the floor.

# %%
for name, topics in [
    ("true topics", true_topics),
    ("collapsed Gibbs", phi_gibbs),
    ("minibatch ADVI", phi_advi),
    ("uniform", np.full((10, 25), 1 / 25)),
]:
    smoothed = 0.999 * topics + 0.001 / 25  # true bars give zero mass off the bar
    score = lda.perplexity(smoothed, test_bars, alpha=1.0, random_seed=0)
    print(f"{name:16s} perplexity {score:6.2f}")

# %% [markdown]
# The trade-off on this corpus: the collapsed sampler integrates $\theta$ and $\phi$
# analytically and moves one token at a time with exact conditionals, so it is both fast
# and accurate; mean-field ADVI optimises ~9,000 parameters by noisy gradients, takes
# longer, and often settles in a local optimum where two bars share a topic. ADVI's
# strengths are elsewhere: it handles models without conjugacy and scales by minibatches.

# %% [markdown]
# ## Reuters: 395 news stories
#
# The shipped Reuters corpus (from the `lda` package's tests; see
# `pp_models/datasets/data/reuters/README.md`) has 84,010 tokens over 4,258 words. We
# hold out 40 stories, fit $K = 20$ topics with $\alpha = 0.1$, $\eta = 0.01$ to the rest,
# and list the most probable words of each topic.

# %%
reuters = datasets.load("reuters")
counts, vocabulary = reuters.data, reuters.feature_names
order = np.random.default_rng(0).permutation(counts.shape[0])
train_rows, test_rows = np.sort(order[40:]), np.sort(order[:40])
reuters_model = lda.model(
    counts[train_rows], n_topics=20, alpha=0.1, eta=0.01, vocabulary=vocabulary
)
t0 = time.perf_counter()
reuters_fit = fit(
    reuters_model, draws=REUTERS_DRAWS, tune=REUTERS_TUNE, chains=1, random_seed=3,
    progressbar=False, var_names=["phi"],
)
print(
    f"{REUTERS_DRAWS + REUTERS_TUNE} sweeps over {int(counts[train_rows].sum()):,} tokens: "
    f"{time.perf_counter() - t0:.1f} s (compilation included)"
)
reuters_topics = lda.posterior_topics(reuters_fit.posterior).values
for k, words in enumerate(lda.top_words(reuters_topics, vocabulary, n=8)):
    print(f"topic {k:2d}: {' '.join(words)}")
# the same as bars (what `ppzoo fit lda --out DIR` saves as topics.png)
lda.plot_top_words(reuters_fit, OUT / "lda_reuters_topics.png")
plt.show()

# %% [markdown]
# Perplexity on the 40 held-out stories, against a unigram model (every topic equal to
# the training word frequencies, smoothed by $\eta$):

# %%
train_freq = np.asarray(counts[train_rows].sum(0)).ravel() + 0.01
unigram = np.tile(train_freq / train_freq.sum(), (20, 1))
held_out = counts[test_rows]
for name, topics in [("LDA K=20", reuters_topics), ("unigram", unigram)]:
    score = lda.perplexity(topics, held_out, alpha=0.1, random_seed=0)
    print(f"{name:9s} perplexity {score:8.1f}")

# %% [markdown]
# ## Where next
#
# * `pp_models.lda.model(docs, n_topics=K, collapsed=False)` with `fit(method="nuts")`
#   gives full posterior draws of $\theta$ and $\phi$ on small corpora (the test suite
#   checks it agrees with the collapsed sampler).
# * `benchmarks/bench_lda.py` compares the collapsed sampler's speed with the `lda`
#   package and tomotopy on this corpus at K = 20, 100 and 500.
# * Topics are identified only up to relabelling: compare chains after matching topics,
#   as `match` does above, and judge convergence on label-free quantities such as
#   `log_joint`.

plt.close("all")
