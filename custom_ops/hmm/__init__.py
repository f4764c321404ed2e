"""Hidden Markov models: the kernels and the Op behind :mod:`pp_models.hmm`.

- :mod:`custom_ops.hmm.forward_backward`: the scaled forward-backward recursion
  (smoothed marginals, expected transition counts, log evidence), Viterbi decoding and
  forward-filtering backward-sampling (FFBS) of a state path, batched over sequences;
- :mod:`custom_ops.hmm.draws`: prior draws of a state path;
- :mod:`custom_ops.hmm.ops`: the forward algorithm's log evidence as a PyTensor Op, with
  its gradient (the smoothed marginals and expected transitions).
"""
