"""Evaluation kernels of LDA: topic proportions of held-out documents given fixed topics
(document completion, Wallach et al. 2009 §4) and Minka's (2000) fixed point for the
document-topic Dirichlet parameter. Same count layout as :mod:`custom_ops.lda.gibbs`.

- :func:`sample_theta_fixed_phi`: Gibbs sampling of a document's topics with the
  topics ``phi`` held fixed;
- :func:`minka_alpha_update`: Minka's fixed point for the document-topic Dirichlet
  parameter.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma

from custom_ops.jit import njit_exact

__all__ = ["minka_alpha_update", "sample_theta_fixed_phi"]



@njit_exact
def sample_theta_fixed_phi(words, doc_ptr, phi_wk, alpha, n_burn, n_samples, rng):
    """Posterior-mean topic proportions of documents given fixed topics ``phi``.

    Gibbs-samples each document's topic assignments from
    ``p(z_i = k | z_-i, w, phi) ∝ phi[w_i, k] (n_dk^-i + alpha_k)`` (the topics are
    known, so only the document's counts enter), discards ``n_burn`` sweeps and averages
    the Rao-Blackwellised ``(n_dk + alpha_k) / (L_d + sum alpha)`` over ``n_samples``
    sweeps: Wallach et al. (2009) §4's estimate of theta from the observed half of a
    held-out document.

    Parameters
    ----------
    words : int32 (N,), doc_ptr : int64 (D + 1,)
    phi_wk : float64 (V, K)
        Topic-word probabilities, word-major.
    alpha : float64 (K,)
    n_burn, n_samples : int
    rng : numpy.random.Generator

    Returns
    -------
    theta : float64 (D, K)
    """
    n_topics = phi_wk.shape[1]
    n_docs = doc_ptr.size - 1
    alpha_sum = 0.0
    for k in range(n_topics):
        alpha_sum += alpha[k]
    theta = np.zeros((n_docs, n_topics))
    cum = np.empty(n_topics)
    counts = np.zeros(n_topics, dtype=np.int64)
    for d in range(n_docs):
        start = doc_ptr[d]
        stop = doc_ptr[d + 1]
        length = stop - start
        if length == 0:
            for k in range(n_topics):
                theta[d, k] = alpha[k] / alpha_sum
            continue
        zd = np.empty(length, dtype=np.int64)
        counts[:] = 0
        for i in range(length):
            # initialise from p(z | w, phi) ∝ phi[w, k] alpha_k (no document counts)
            w = words[start + i]
            total = 0.0
            for k in range(n_topics):
                total += phi_wk[w, k] * alpha[k]
                cum[k] = total
            u = rng.random() * total
            t = 0
            while t < n_topics - 1 and cum[t] <= u:
                t += 1
            zd[i] = t
            counts[t] += 1
        for sweep in range(n_burn + n_samples):
            for i in range(length):
                w = words[start + i]
                counts[zd[i]] -= 1
                total = 0.0
                for k in range(n_topics):
                    total += phi_wk[w, k] * (counts[k] + alpha[k])
                    cum[k] = total
                u = rng.random() * total
                t = 0
                while t < n_topics - 1 and cum[t] <= u:
                    t += 1
                zd[i] = t
                counts[t] += 1
            if sweep >= n_burn:
                for k in range(n_topics):
                    theta[d, k] += (counts[k] + alpha[k]) / (length + alpha_sum)
        for k in range(n_topics):
            theta[d, k] /= n_samples
    return theta


def minka_alpha_update(n_dk, alpha, *, n_iter: int = 20, tol: float = 1e-6):
    """Minka's fixed point for the Dirichlet parameter of the document-topic proportions.

    Iterates (Minka 2000, "Estimating a Dirichlet distribution", Eq. 55; Wallach 2008
    §2.2.2 for topic counts)

    .. math:: \\alpha_k \\leftarrow \\alpha_k
        \\frac{\\sum_d \\psi(n_{dk} + \\alpha_k) - D\\,\\psi(\\alpha_k)}
             {\\sum_d \\psi(L_d + \\alpha_0) - D\\,\\psi(\\alpha_0)},
        \\quad \\alpha_0 = \\textstyle\\sum_k \\alpha_k,

    which increases the Dirichlet-multinomial likelihood p(z | alpha) (Murphy Eq.
    27.34) of the current topic counts.

    Parameters
    ----------
    n_dk : int array (D, K)
    alpha : float array (K,)
    n_iter : int
    tol : float
        Stop when the largest relative change is below ``tol``.

    Returns
    -------
    float64 array (K,), the updated alpha.
    """
    counts = np.asarray(n_dk, dtype=np.float64)
    a = np.array(alpha, dtype=np.float64, copy=True)
    keep = counts.sum(axis=1) > 0  # empty documents carry no information about alpha
    counts = counts[keep]
    n_docs = counts.shape[0]
    lengths = counts.sum(axis=1)
    for _ in range(n_iter):
        a0 = a.sum()
        numer = digamma(counts + a).sum(axis=0) - n_docs * digamma(a)
        denom = digamma(lengths + a0).sum() - n_docs * digamma(a0)
        new = a * numer / denom
        new = np.maximum(new, 1e-10)
        change = np.max(np.abs(new - a) / a)
        a = new
        if change < tol:
            break
    return a
