"""Bayesian hierarchical clustering (Heller 2007, ch. 3; Heller & Ghahramani 2005).

Estimators (named by algorithm, each returning a frozen :class:`BHCResult`: scipy
linkage, evidence, r_k, tree cut, predictive, DPM lower bound, dendrogram plot):

* :func:`greedy` (``greedy.py``): merge the pair with the largest merge posterior r_k
  (Alg. 3.2: every candidate pair scored once, each node's best in a heap of nodes,
  O(n d) memory);
* :func:`randomized` (``randomized.py``): RBHC for large n (§3.6, Alg. 3.4-3.5);
* :func:`embhc` (``randomized.py``): EMBHC (Alg. 3.6);
* :func:`learn` (``learning.py``): alternates tree building and MAP optimisation of the
  hyperparameters (§3.4.1's EM-like scheme, with the priors of ``priors.py``:
  :class:`LogNormal`, :class:`Gamma`, :data:`DEFAULT_PRIORS`; ``priors=False`` for
  Heller's type-II maximum likelihood).

:func:`model` (``model.py``) is the PyMC model of the DP concentration and the conjugate
prior's hyperparameters for a fixed tree: its potential is the tree-consistent evidence
log p(D | T) (:class:`custom_ops.bhc.evidence.BHCEvidence`), so NUTS or ``find_MAP`` apply.
``fit`` is the deprecated name of the tree builders (``bhc.fit(X, method=...)``).

Likelihoods (conjugate families of :mod:`custom_ops.conjugate`): ``"bernoulli"`` (binary
data, Beta prior per dimension), ``"multinomial"`` (count vectors, Dirichlet),
``"gaussian"`` (Normal-Inverse-Wishart, full covariance), ``"diag_gaussian"``
(independent Normal-Gamma per dimension). The hot loops are in
:mod:`custom_ops.bhc.builders` and :mod:`custom_ops.bhc.evidence`; the tree representation in
:mod:`pp_models.trees`.
"""

from pp_models.bhc import outputs as _outputs
from pp_models.bhc import predictive as _predictive
from pp_models.bhc.defaults import LIKELIHOODS, default_hyper
from pp_models.bhc.deprecated import fit
from pp_models.bhc.greedy import greedy
from pp_models.bhc.learning import learn
from pp_models.bhc.model import OBJECTIVES, model
from pp_models.bhc.priors import DEFAULT_PRIORS, Gamma, LogNormal
from pp_models.bhc.randomized import embhc, randomized
from pp_models.bhc.result import BHCResult
from pp_models.registry import CLIEntry, Family

__all__ = [
    "DEFAULT_PRIORS",
    "FAMILY",
    "LIKELIHOODS",
    "OBJECTIVES",
    "BHCResult",
    "Gamma",
    "LogNormal",
    "default_hyper",
    "embhc",
    "fit",
    "greedy",
    "learn",
    "model",
    "randomized",
]


#: The family's record (pp_models.registry): factory, ppzoo entry, picture, predictive
#: functions.
FAMILY = Family(
    name="bhc",
    description="Bayesian hierarchical clustering: DP concentration and prior "
    "hyperparameters for the greedy BHC tree (potential = DPM evidence lower bound)",
    factory=model,
    cli=CLIEntry(
        methods=("nuts", "advi", "auto"),
        build=lambda dataset, **options: model(dataset.data, **options),
        default_dataset="iris",
        defaults={"likelihood": "gaussian"},
        # NUTS on five hyperparameters mixes fast (docs/benchmarks.md, "Defaults,
        # measured")
        fit_defaults={"draws": 500, "tune": 500, "chains": 4},
    ),
    plot=_outputs.plot_results,
    plot_name="tree",
    posterior_predictive=_predictive.posterior_predictive,
    pointwise_log_likelihood=_predictive.pointwise_log_likelihood,
)
