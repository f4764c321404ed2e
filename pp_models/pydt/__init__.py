"""Pitman-Yor diffusion tree (Knowles 2012 ch. 4): prior draws, the model factory, the
greedy sequential build and post-fit outputs."""

from pp_models.pydt.prior import PriorDraw, sample_prior

__all__ = ["PriorDraw", "sample_prior"]
