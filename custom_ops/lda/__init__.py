"""Latent Dirichlet allocation: the kernels behind :mod:`pp_models.lda`.

- :mod:`custom_ops.lda.gibbs`: the counts and log joint of the topic assignments, the
  tempering tables, and the SparseLDA sweep (also of power posteriors);
- :mod:`custom_ops.lda.summaries`: the per-draw log p(w, z) and concentrations, from the
  counts or through SparseLDA's topic lists;
- :mod:`custom_ops.lda.dense`: the O(K) collapsed Gibbs sweeps (fused, and blocked for
  vector instructions);
- :mod:`custom_ops.lda.alias`: LightLDA's alias-Metropolis-Hastings sweep, O(1) per
  token;
- :mod:`custom_ops.lda.threads`: one chain swept on several threads (the word x document
  partition, one compiled call per draw);
- :mod:`custom_ops.lda.evaluation`: document completion and Minka's update of the
  document-topic concentration;
- :mod:`custom_ops.lda.predictive`: each token's conditional predictive and replicated
  words given a posterior draw's topics (LOO and the posterior predictive);
- :mod:`custom_ops.lda.likelihood`: log p(w | z) and log p(z | alpha) apart, from count
  matrices (AD-LDA sums the second over partitions).
"""
