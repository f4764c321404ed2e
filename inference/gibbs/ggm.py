"""Column-wise block Gibbs samplers for Bayesian Gaussian graphical models.

- :class:`BGLassoBlockGibbs` (``"bglasso_block_gibbs"``): the Bayesian graphical lasso
  sampler of Wang (2012, §2.4). Each call draws the latent variances ``tau_ij |
  omega_ij`` (``1/tau_ij ~ InvGaussian(lam / |omega_ij|, lam^2)``, Park & Casella
  2008), sweeps the columns of ``Omega`` given them (gamma / normal block updates of
  :func:`custom_ops.ggm.gibbs.column_sweep`) and, with ``lam ~ Gamma(a, rate b)``,
  draws ``lam | Omega ~ Gamma(a + p(p+1)/2, rate b + ||Omega||_1 / 2)`` (the prior's
  normaliser does not depend on lam).
- :class:`SSSLBlockGibbs` (``"sssl_block_gibbs"``): stochastic search structure
  learning (Wang 2015, §2.2): the edge indicators ``z_ij | omega_ij`` replace the
  latent variances (``v1^2`` or ``v0^2``), then the same column sweep.

The latent variables are redrawn from their exact conditionals at the start of every
call, so the step is a Markov kernel on ``Omega`` (and ``lam``) alone that leaves the
posterior invariant; nothing is kept between calls.

Both steps temper (``can_temper``): at inverse temperature ``beta`` the column sweep
samples ``p(Omega) p(X | Omega)^beta``, the Wishart-form likelihood at ``(beta n, beta
S)``; the latent variables and ``lam`` enter only the prior and are drawn as before
(derivation in :mod:`custom_ops.ggm.gibbs`). The number of edges ``sum z`` of
the SSSL step is reported as a sampler statistic.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.distributions.transforms import CholeskyCovTransform
from pytensor.tensor.random.basic import GammaRV

from custom_ops.ggm.gibbs import (
    ColumnPrior,
    Precision,
    WishartData,
    bglasso_latent_variances,
    column_sweep,
    gram,
    packed_cholesky_backward,
    packed_cholesky_forward,
    sssl_latent_variances,
)
from custom_ops.spd_kernels import spd_inverse
from inference.gibbs.base import ZooGibbsStep
from inference.gibbs.registry import register_step
from pp_models.distributions.precision_priors import (
    BayesianGLassoPrecisionRV,
    SpikeSlabPrecisionRV,
)
from pp_models.validation import check_int

__all__ = ["BGLassoBlockGibbs", "SSSLBlockGibbs"]


class _PrecisionBlockGibbs(ZooGibbsStep):
    """Shared plumbing: find ``Omega`` and the data ``X``, read and write the point."""

    precision_op: type = BayesianGLassoPrecisionRV
    #: 1.0 gives the exact ``Gamma(beta n/2 + 1, .)`` conditional of the Schur complement.
    gamma_shape_offset = 1.0
    can_temper = True

    def __init__(self, vars, *, model=None, rng=None, blocked=True, data="X", sweeps=1):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        self.sweeps = check_int(sweeps, "sweeps", minimum=1)
        self._gram_of = (None, None)  # (data, its Gram matrix): observed data never change
        model = self.model
        rvs = [model.values_to_rvs[v] for v in self.vars]
        omegas = [rv for rv in rvs if isinstance(rv.owner.op, self.precision_op)]
        if len(omegas) != 1:
            raise ValueError(
                f"vars: {type(self).__name__} needs exactly one "
                f"{self.precision_op.__name__} variable, got {[rv.name for rv in rvs]}"
            )
        self._omega_rv = omega = omegas[0]
        self._omega_value = model.rvs_to_values[omega].name
        if data not in model.named_vars:
            raise ValueError(f"data: the model has no variable {data!r}")
        x = model.named_vars[data]
        p = int(pt.get_underlying_scalar_constant_value(omega.owner.inputs[-1]))
        self.p = p
        self._x_fn = self.compile_point_fn(x)
        self._omega_fn = self.compile_point_fn(omega)
        self._params_fn = self.compile_point_fn(list(omega.owner.op.dist_params(omega.owner)))
        transform = model.rvs_to_transforms.get(omega)
        # PyMC's Cholesky transform has a Numba fast path (no BLAS threads, no PyTensor
        # call overhead); any other transform goes through PyTensor
        self._packed = isinstance(transform, CholeskyCovTransform)
        natural = pt.dmatrix("omega_natural")
        self._omega_forward = (
            None if transform is None else pytensor.function([natural], transform.forward(natural))
        )
        self._rest = [rv for rv in rvs if rv is not omega]

    def _read(self, point):
        X = np.asarray(self._x_fn(point), dtype=np.float64)
        X = X.reshape(-1, self.p)
        if self._packed:
            omega = packed_cholesky_backward(
                np.asarray(point[self._omega_value], dtype=np.float64), self.p
            )
        else:
            omega = np.array(self._omega_fn(point), dtype=np.float64)
        params = [float(v) for v in self._params_fn(point)[:-1]]
        return X, omega, params

    def _write(self, point, omega, **others):
        if self._packed:
            value = packed_cholesky_forward(omega)
        elif self._omega_forward is None:
            value = omega
        else:
            value = self._omega_forward(omega)
        old = point[self._omega_value]
        return self.updated(point, **{self._omega_value: np.asarray(value, dtype=old.dtype)},
                            **others)

    def _gram(self, X):
        """``X'X``, computed again only when the data differ from the last call's (they
        change between steps only in getting-it-right, where the data are free); it was
        three fifths of a sweep's time on the Sachs data (7466 x 11)."""
        last, S = self._gram_of
        if last is None or last.shape != X.shape or not np.array_equal(last, X):
            X = np.ascontiguousarray(X)
            S = gram(X)
            self._gram_of = (X.copy(), S)
        return S

    def _sweep(self, omega, X, lam, tau):
        sigma = spd_inverse(omega)
        data = WishartData(self._gram(X), float(X.shape[0]))
        column_sweep(self.rng, Precision(omega, sigma), data,
                     ColumnPrior(lam, tau, self.gamma_shape_offset), self.beta)
        return 0.5 * (omega + omega.T)


@register_step
class BGLassoBlockGibbs(_PrecisionBlockGibbs):
    """Wang's (2012) block Gibbs sampler for the Bayesian graphical lasso.

    Parameters
    ----------
    vars : list
        ``Omega`` (a :class:`~pp_models.distributions.BayesianGLassoPrecision`) and,
        when the model puts a Gamma prior on its ``lam``, that ``lam``.
    model : pymc.Model, optional
    rng : seed or Generator, optional
    data : str
        Name of the observed ``(n, p)`` mean-zero normal data with precision ``Omega``.
    sweeps : int
        Full updates per call (per recorded draw): thinning inside the step, so a long
        chain is stored at a fraction of its length.
    """

    name = "bglasso_block_gibbs"
    stats_dtypes_shapes = {"lam": (np.float64, [])}
    precision_op = BayesianGLassoPrecisionRV

    def __init__(self, vars, *, model=None, rng=None, blocked=True, data="X", sweeps=1):
        super().__init__(vars, model=model, rng=rng, blocked=blocked, data=data,
                         sweeps=sweeps)
        lam_param = self._omega_rv.owner.op.dist_params(self._omega_rv.owner)[0]
        self._lam_value = None
        if self._rest:
            (lam_rv,) = self._rest
            if lam_param is not lam_rv or not isinstance(lam_rv.owner.op, GammaRV):
                raise ValueError(
                    f"vars: {lam_rv.name} must be the Gamma-distributed lam of "
                    f"{self._omega_rv.name}"
                )
            shape, scale = lam_rv.owner.op.dist_params(lam_rv.owner)
            self._gamma_fn = self.compile_point_fn([shape, 1.0 / scale])
            self._lam_value = self.model.rvs_to_values[lam_rv].name
            transform = self.model.rvs_to_transforms.get(lam_rv)
            natural = pt.dscalar("lam_natural")
            self._lam_forward = (
                None if transform is None
                else pytensor.function([natural], transform.forward(natural))
            )

    def draw_latent_variances(self, omega, lam):
        """``tau | Omega, lam`` (a method so that tests can plant bugs in a subclass)."""
        return bglasso_latent_variances(self.rng, omega, lam)

    def draw_lam(self, omega, a, b):
        """``lam | Omega ~ Gamma(a + p(p+1)/2, rate b + ||Omega||_1 / 2)``."""
        p = self.p
        return self.rng.gamma(a + p * (p + 1) / 2, 1.0 / (b + 0.5 * np.abs(omega).sum()))

    def step(self, point):
        X, omega, (lam,) = self._read(point)
        others = {}
        for _ in range(self.sweeps):
            tau = self.draw_latent_variances(omega, lam)
            omega = self._sweep(omega, X, lam, tau)
            if self._lam_value is not None:
                a, b = (float(v) for v in self._gamma_fn(point))
                lam = self.draw_lam(omega, a, b)
        if self._lam_value is not None:
            value = lam if self._lam_forward is None else self._lam_forward(lam)
            others[self._lam_value] = np.asarray(value, dtype=point[self._lam_value].dtype)
        return self._write(point, omega, **others), [{"lam": lam}]


@register_step
class SSSLBlockGibbs(_PrecisionBlockGibbs):
    """Wang's (2015) stochastic-search structure learning block Gibbs sampler.

    Parameters
    ----------
    vars : list
        ``Omega`` (a :class:`~pp_models.distributions.SpikeSlabPrecision`).
    model : pymc.Model, optional
    rng : seed or Generator, optional
    data : str
        Name of the observed ``(n, p)`` mean-zero normal data with precision ``Omega``.
    sweeps : int
        Full updates per call (per recorded draw), as for :class:`BGLassoBlockGibbs`.
    """

    name = "sssl_block_gibbs"
    stats_dtypes_shapes = {"n_edges": (np.int64, [])}
    precision_op = SpikeSlabPrecisionRV

    def __init__(self, vars, *, model=None, rng=None, blocked=True, data="X", sweeps=1):
        super().__init__(vars, model=model, rng=rng, blocked=blocked, data=data,
                         sweeps=sweeps)
        if self._rest:
            raise ValueError(f"vars: {type(self).__name__} updates Omega only")

    def draw_latent_variances(self, omega, v0, v1, pi):
        """``(variances, Z) | Omega`` (a method so that tests can plant bugs)."""
        return sssl_latent_variances(self.rng, omega, v0, v1, pi)

    def step(self, point):
        X, omega, (v0, v1, pi, lam) = self._read(point)
        for _ in range(self.sweeps):
            tau, z = self.draw_latent_variances(omega, v0, v1, pi)
            omega = self._sweep(omega, X, lam, tau)
        return self._write(point, omega), [{"n_edges": int(z.sum()) // 2}]
