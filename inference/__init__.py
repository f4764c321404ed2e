"""One door in: ``fit`` sends any PyMC model to NUTS, Gibbs steps or ADVI."""
