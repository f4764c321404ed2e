"""One door in: ``fit`` sends any PyMC model to NUTS, Gibbs steps or ADVI.

>>> from pp_models import finite_mixture, datasets
>>> from inference import fit, summary
>>> model = finite_mixture.model(datasets.load("iris").data, n_components=3)
>>> dt = fit(model, method="gibbs", draws=500, chains=4)   # doctest: +SKIP
>>> summary(dt)                                             # doctest: +SKIP
"""

from inference.fit import METHODS, fit
from inference.summary import summary
from inference.tempering.evidence import EvidenceResult, evidence

__all__ = ["METHODS", "EvidenceResult", "evidence", "fit", "summary"]
