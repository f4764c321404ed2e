"""Gaussian graphical models (Murphy 2012 §26.7).

- :func:`covariance_selection`: MLE of the precision matrix with a known graph
  (Dempster 1972; Hastie et al. 2009 Alg. 17.1).
- :func:`graphical_lasso`, :func:`graphical_lasso_path`: the graphical lasso by block
  coordinate descent (Friedman, Hastie & Tibshirani 2008), both penalty conventions.
"""

from pp_models.ggm.covariance_selection import CovarianceSelectionResult, covariance_selection
from pp_models.ggm.graphical_lasso import (
    GraphicalLassoPath,
    GraphicalLassoResult,
    graphical_lasso,
    graphical_lasso_path,
    lambda_max,
)

__all__ = [
    "CovarianceSelectionResult",
    "GraphicalLassoPath",
    "GraphicalLassoResult",
    "covariance_selection",
    "graphical_lasso",
    "graphical_lasso_path",
    "lambda_max",
]
