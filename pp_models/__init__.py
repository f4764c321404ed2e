"""pp-models: a probabilistic-programming model zoo on PyMC 6.

Each model family is a module with a pure factory that returns a ``pymc.Model``
(``pp_models.finite_mixture.model(X, n_components)``, ...); random variables PyMC lacks
live in ``pp_models.distributions``; shipped data sets in ``pp_models.datasets``.
"""

__version__ = "0.1.0"
