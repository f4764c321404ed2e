"""One door in: ``fit`` sends any PyMC model to NUTS, Gibbs steps or ADVI.

>>> from pp_models import finite_mixture, datasets
>>> from inference import fit, summary
>>> model = finite_mixture.model(datasets.load("iris").data, n_components=3)
>>> dt = fit(model, method="gibbs", draws=500, chains=4)   # doctest: +SKIP
>>> summary(dt)                                             # doctest: +SKIP
"""

from inference.fit import METHODS, fit
from inference.summary import summary

__all__ = ["METHODS", "fit", "summary"]
