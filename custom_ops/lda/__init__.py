"""Latent Dirichlet allocation: the kernels behind :mod:`pp_models.lda`.

- :mod:`custom_ops.lda.gibbs`: collapsed Gibbs sampling of the topic assignments (dense
  and SparseLDA sweeps, also of power posteriors), the counts and log joint they keep;
- :mod:`custom_ops.lda.threads`: one chain swept on several threads (AD-LDA in shared
  memory);
- :mod:`custom_ops.lda.evaluation`: document completion and Minka's update of the
  document-topic concentration;
- :mod:`custom_ops.lda.predictive`: each token's conditional predictive and replicated
  words given a posterior draw's topics (LOO and the posterior predictive);
- :mod:`custom_ops.lda.likelihood`: log p(w | z) and log p(z | alpha) apart, from count
  matrices (AD-LDA sums the second over partitions).
"""
