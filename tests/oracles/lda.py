"""Every topic assignment of a tiny corpus, with its prior and likelihood, by sequential
Pólya urns (independently of the kernels' Gamma-function forms).

``log p(z | alpha)``: each document draws its tokens' topics from a Pólya urn with
``alpha``; ``log p(w | z, eta)``: each topic draws its tokens' words from one with
``eta`` (Murphy 2012 Eqs. 27.34 and 27.36 by the chain rule). The power posterior at
beta is ``softmax(prior + beta likelihood)`` over the ``K^N`` assignments and the
evidence ``log p(w) = logsumexp(prior + likelihood)``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import logsumexp

__all__ = ["LDAEnumeration"]


class LDAEnumeration:
    """All ``n_topics ** n_tokens`` assignments of ``docs`` (lists of word ids)."""

    def __init__(self, docs, n_topics: int, alpha, eta):
        self.docs = [list(d) for d in docs]
        self.words = np.concatenate([np.asarray(d, dtype=np.int64) for d in self.docs])
        self.n_topics = int(n_topics)
        self.alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (n_topics,))
        n_words = int(self.words.max()) + 1
        self.eta = np.broadcast_to(np.asarray(eta, dtype=np.float64), (n_words,))
        self.states = np.array(list(itertools.product(range(n_topics),
                                                      repeat=self.words.size)))
        self.parts = np.array([self._parts(z) for z in self.states])

    def _parts(self, z):
        K, alpha, eta = self.n_topics, self.alpha, self.eta
        lp = ll = 0.0
        n_kw = np.zeros((K, eta.size))
        i = 0
        for doc in self.docs:
            n_dk = np.zeros(K)
            for j, w in enumerate(doc):
                k = z[i]
                lp += math.log((n_dk[k] + alpha[k]) / (j + alpha.sum()))
                ll += math.log((n_kw[k, w] + eta[w]) / (n_kw[k].sum() + eta.sum()))
                n_dk[k] += 1
                n_kw[k, w] += 1
                i += 1
        return lp, ll

    def index(self, z) -> int:
        """Position of assignment ``z`` in :attr:`states`."""
        return int(np.dot(z, self.n_topics ** np.arange(len(z) - 1, -1, -1)))

    def power_posterior(self, beta: float) -> np.ndarray:
        logp = self.parts[:, 0] + beta * self.parts[:, 1]
        p = np.exp(logp - logp.max())
        return p / p.sum()

    def log_evidence(self) -> float:
        return float(logsumexp(self.parts.sum(axis=1)))
