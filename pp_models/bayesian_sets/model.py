"""The Beta-Bernoulli model behind Bayesian Sets, declared in PyMC: :func:`model`.

Heller (2007) Fig. 4.1 compares two hypotheses about a query Q and an item x: they share
one parameter vector theta (left), or x has its own theta' (right). Each is a PyMC model
here (``shared=True`` / ``shared=False``), and the Bayesian Sets log score of x is the
difference of their log evidences, log p(x, Q) - log p(x) p(Q) (Eq. 4.2), which
:func:`~pp_models.bayesian_sets.scores` computes for every item at once in closed form.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import scipy.sparse as sp

from pp_models.bayesian_sets.prior import resolve_prior
from pp_models.bayesian_sets.score import check_inputs
from pp_models.model_info import ZooModelInfo, attach_info
from pp_models.registry import family_of_module
from pp_models.validation import check_row_indices

__all__ = ["model"]


def _dense_rows(X, rows, columns):
    sub = X[rows][:, columns]
    sub = sub.toarray() if sp.issparse(sub) else np.asarray(sub)
    return sub.astype(np.int8)


def model(X, query, *, item=None, shared=True, kappa=2.0, alpha=None, beta=None) -> pm.Model:
    """The Beta-Bernoulli model of a Bayesian Sets query (Heller 2007 Eqs. 4.7-4.8, Fig.
    4.1).

    ``theta_j ~ Beta(alpha_j, beta_j)`` for each informative feature and the query rows
    ``Q ~ Bernoulli(theta)``. With ``item``, the row ``x = X[item]`` joins the model:
    ``x ~ Bernoulli(theta)`` (``shared=True``, Fig. 4.1 left) or ``theta' ~ Beta(alpha,
    beta)``, ``x ~ Bernoulli(theta')`` (``shared=False``, Fig. 4.1 right). The log
    evidence of the first minus that of the second is ``scores(X, query)[item]``.

    Parameters
    ----------
    X : (n, J) binary array or scipy.sparse matrix
        All items; the empirical prior is computed from all of them.
    query : sequence of int
        Row numbers of the query (at least one, distinct, in ``[0, n)``).
    item : int, optional
        A row to add to the model (it may be a query row: the score compares a copy).
    shared : bool
        Whether ``item`` shares the query's theta.
    kappa, alpha, beta
        The prior, as in :func:`~pp_models.bayesian_sets.scores`. Features that every
        item has or none has are left out of the model under the empirical prior (see
        :class:`~pp_models.bayesian_sets.BetaPrior`): their factor in every score is 1.

    Returns
    -------
    pymc.Model
        Free variables ``theta`` (and ``theta_item`` when ``shared=False``), dims
        ``feature`` (the informative column numbers); observed ``Q`` (dims ``query``,
        ``feature``) and ``x``.
    """
    X, query, kappa = check_inputs(X, query, kappa)
    if item is not None:
        item = int(check_row_indices([item], "item", X.shape[0])[0])
    if not isinstance(shared, bool | np.bool_):
        raise TypeError(f"shared must be True or False, got {shared!r}")
    prior = resolve_prior(X, kappa, alpha, beta)
    cols = prior.informative
    coords = {"feature": cols, "query": query}
    with pm.Model(coords=coords) as m:
        theta = pm.Beta("theta", alpha=prior.alpha, beta=prior.beta, dims="feature")
        pm.Bernoulli("Q", p=theta, observed=_dense_rows(X, query, cols),
                     dims=("query", "feature"))
        if item is not None:
            p = theta if shared else pm.Beta("theta_item", alpha=prior.alpha,
                                             beta=prior.beta, dims="feature")
            pm.Bernoulli("x", p=p, observed=_dense_rows(X, [item], cols)[0], dims="feature")
    hypothesis = "x shares theta with Q" if shared else "x has its own theta"
    notes = "Bayesian Sets Beta-Bernoulli model" + (f" ({hypothesis})" if item is not None
                                                    else "")
    return attach_info(m, ZooModelInfo(family=family_of_module(__name__), preferred_method="nuts",
                                       notes=notes))
