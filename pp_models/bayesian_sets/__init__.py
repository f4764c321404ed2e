"""Bayesian Sets: retrieval of the items that complete a small query set ("clustering on
demand"; Heller 2007 ch. 4, Ghahramani & Heller 2005).

* :func:`scores` (``score.py``): log p(x | Q) / p(x) of every item under independent
  Beta-Bernoulli features, one (sparse) matrix-vector product (Eqs. 4.11-4.15);
* :func:`rank` (``score.py``): the best-scoring items, a :class:`Ranking`;
* :func:`query_weights` (``score.py``): the query's linear form, its feature weights
  (the implicit feature selection of §4.5) as :class:`QueryWeights`;
* :func:`beta_prior` (``prior.py``): the empirical Beta prior alpha = kappa m,
  beta = kappa (1 - m), as :class:`BetaPrior`;
* :func:`model` (``model.py``): the same Beta-Bernoulli model in PyMC, with the query
  and an item sharing theta or not (Fig. 4.1): the difference of the two models' log
  evidences is the item's score.

There is no ``ppzoo fit`` entry (its :data:`FAMILY` record says why): a retrieval answers a
query in closed form, and the posterior ``ppzoo fit`` would sample (theta given the
query) is a known Beta.
"""

from pp_models.bayesian_sets.model import model
from pp_models.bayesian_sets.prior import BetaPrior, beta_prior
from pp_models.bayesian_sets.score import QueryWeights, Ranking, query_weights, rank, scores
from pp_models.registry import Family, NoCLIEntry

__all__ = [
    "FAMILY",
    "BetaPrior",
    "QueryWeights",
    "Ranking",
    "beta_prior",
    "model",
    "query_weights",
    "rank",
    "scores",
]


#: The family's record (pp_models.registry): factory, ppzoo entry, picture, predictive
#: functions.
FAMILY = Family(
    name="bayesian_sets",
    description="Bayesian Sets: the items that belong with a query set, scored in closed "
    "form (Heller 2007 ch. 4)",
    factory=model,
    cli=NoCLIEntry(
        "a retrieval method: bayesian_sets.rank(X, query) answers a query in closed form "
        "(one sparse matrix-vector product); the posterior `ppzoo fit` would sample, theta "
        "given the query, is a known Beta",
    ),
)
