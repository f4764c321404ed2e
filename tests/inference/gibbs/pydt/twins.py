"""Planted-bug twins of the PYDT sampler: each a realistic mistake in a Metropolis-Hastings
ratio or a Jacobian, as a step running a twin kernel (``tests/custom_ops/pydt/twins.py``)
or a subclass of the step."""

from inference.gibbs.pydt import PYDTTreeStep
from tests.custom_ops.pydt.twins import (
    branch_hyper_twin,
    branch_twin,
    no_proposal_ratio_sweep,
    no_time_jacobian_sweep,
    no_transform_jacobian_hyper,
    shortcut_sweep,
)


# --- the twin steps ----------------------------------------------------------------
class ShortcutTreeStep(PYDTTreeStep):
    """Planted bug: the prior-as-proposal acceptance for every subtree."""

    name = "test_pydt_shortcut"
    sweep_kernel = staticmethod(shortcut_sweep())


class NoProposalRatioTreeStep(PYDTTreeStep):
    """Planted bug: detach-reattach accepted by posterior ratio x #nonroot ratio, the
    proposal densities g_R(old) / g_R(new) dropped."""

    name = "test_pydt_no_proposal_ratio"
    sweep_kernel = staticmethod(no_proposal_ratio_sweep())


class NoJacobianTreeStep(PYDTTreeStep):
    """Planted bug: the divergence times slice-sampled in l = log(1 - t) against the
    density in t, without the Jacobian |dt/dl| = 1 - t."""

    name = "test_pydt_no_jacobian"
    sweep_kernel = staticmethod(no_time_jacobian_sweep())


class BranchNoTimeDensityTreeStep(PYDTTreeStep):
    """Planted bug: the branch-point moves without the time proposal's density q_t."""

    name = "test_pydt_branch_no_time_density"
    branch_kernel = staticmethod(branch_twin("time density dropped"))
    hyper_kernel = staticmethod(branch_hyper_twin("time density dropped"))


class NoncentredNoJacobianTreeStep(PYDTTreeStep):
    """Planted bug: the non-centred update of the hyperparameters without
    ``log |dt/dw|``."""

    name = "test_pydt_noncentred_no_jacobian"

    @staticmethod
    def moved_times(parent, log1m_t, n, kind, before, after):
        times, _log_jacobian = PYDTTreeStep.moved_times(parent, log1m_t, n, kind, before,
                                                        after)
        return times, 0.0


class CentredNoJacobianTreeStep(PYDTTreeStep):
    """Planted bug: the hyperparameters slice-sampled on their log / logit scale against
    their prior density in the original scale (the transforms' ``log |d phi / dx|``
    left out)."""

    name = "test_pydt_centred_no_jacobian"
    hyper_kernel = staticmethod(no_transform_jacobian_hyper())

    def hyperprior_logp(self, rvs):
        return self.model.logp(vars=rvs, jacobian=False)


class CentredLikelihoodDroppedTreeStep(PYDTTreeStep):
    """Planted bug: the centred update leaves the likelihood out for every
    hyperparameter, the precision too (on which ``p(X | tree, sigma2)`` does depend)."""

    name = "test_pydt_centred_likelihood_dropped"

    def likelihood_free(self, value_name):
        return True
