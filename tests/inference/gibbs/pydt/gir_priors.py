"""The priors the PYDT's getting-it-right tests run at, and why they differ from the
thesis's."""

__all__ = ["GIR_PRIORS"]

# Lighter tails than the thesis's G(1, 1) on the precision (E[X^4] must be finite for the
# z test on mean(X^2)); c ~ G(4, 4) and theta ~ G(2, 4) instead of G(1, 1) and G(2, 0.5)
# (module docstring): with theta >~ 6 the first divergences of 5 points fall within
# e^-700 of t = 1, where float64 Brownian increments underflow and the simulated data tie
# exactly, and with c H_{m-1} near 0 the chain sits for hundreds of draws at times near 1.
# Measured with these priors and the factory's steps (warm cache), rejections
# of the correct sampler at Holm-adjusted 0.01: 0 of 30 at 800 draws (seeds 100-129,
# smallest adjusted p 0.036; ESS median / min: root time 151 / 15, c 456 / 44, alpha
# 177 / 49, sigma2 455 / 362), 1 of 50 at 400 draws (seeds 100-119 and 200-229; seed
# 106: c, adjusted p 0.001 with ESS 297; it passes at 1600). The centred sampler (no
# non-centred updates), same priors, 400 draws, seeds 200-229: 0 of 30, ESS median
# root time 36 (with the updates 96), c 141 (229), alpha 53 (99). With c ~ G(2, 2),
# theta ~ G(2, 2), 400 draws, seeds 200-229: 2 of 30 rejected with the non-centred update
# of c, theta, alpha, 3 of 30 without (ESS of the root time down to 2).
# Branch-point moves on (the factory's n per sweep) / off (branch_moves=0), 1600 draws,
# seeds 100-109, statistics these plus sigma2: with these
# priors 0 / 1 of 10 rejected (off: seed 101 at alpha, adjusted p 0.004); with c ~ G(2,
# 2) 0 / 0; with the thesis's c ~ G(1, 1) 1 / 2 (on: seed 109 at mean(X^2), ESS of c 3;
# off: seeds 104 and 107 at c), and c's smallest raw p <= 0.001 on 3 of 10 seeds either
# way: the sticky chains at small c described above, with or without the moves. At the
# thesis's priors the exact posterior of tests/inference/gibbs/pydt/test_exact_posterior.py
# (independent draws, no regenerated data) is the sharper check.
GIR_PRIORS = {"precision": (6.0, 6.0), "c": (4.0, 4.0), "theta": (2.0, 4.0)}
