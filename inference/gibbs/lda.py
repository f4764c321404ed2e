"""Collapsed Gibbs sampling of LDA's token topics (Griffiths & Steyvers 2004)."""

from __future__ import annotations

import numpy as np
from pytensor.graph.basic import Variable
from pytensor.graph.traversal import explicit_graph_inputs

from custom_ops.lda.alias import AliasLDAState, gibbs_sweep_alias
from custom_ops.lda.dense import dense_block_width, gibbs_sweep_blocked, gibbs_sweep_dense
from custom_ops.lda.gibbs import (
    SparseLDAState,
    concentrations,
    log_joint,
)
from custom_ops.lda.summaries import draw_summary, lgamma_tables
from custom_ops.lda.threads import ThreadedLDAState
from inference.gibbs.base import ZooGibbsStep
from inference.gibbs.registry import register_step
from pp_models.validation import check_choice, check_int

__all__ = ["ALIAS_MIN_TOPICS", "CollapsedLDAGibbs"]

#: From this many topics ``sampler="auto"`` sweeps replicas below ``beta = 1`` with the
#: alias kernel rather than the dense one (on Reuters at beta 0.5 and 0.1 the alias sweep
#: was 1.6-2.6x the blocked dense one at K = 500 and 1000; the dense one had been
#: measured the faster at K = 20).
ALIAS_MIN_TOPICS = 500


@register_step
class CollapsedLDAGibbs(ZooGibbsStep):
    """Collapsed Gibbs sweeps over the topic ``z`` of every token of an LDA corpus.

    Each call of :meth:`step` does ``sweeps`` full sweeps: every token in turn is
    removed from the counts and its topic redrawn from Murphy (2012) Eq. 27.37,
    ``p(z_i = k | z_-i, w) ∝ (n_wk + eta_w) / (n_k + sum eta) * (n_dk + alpha_k)``, with
    theta and phi integrated out. ``sampler="sparse"`` draws from it by SparseLDA's
    buckets (Yao, Mimno & McCallum 2009), ``"dense"`` by the O(K) scan (from 64 topics
    on laid out in blocks for vector instructions,
    :func:`~custom_ops.lda.dense.gibbs_sweep_blocked`); both simulate the same Markov
    chain. ``"alias"`` takes LightLDA's cycle of a word proposal from a stale Walker
    alias table and a document proposal, each corrected by Metropolis-Hastings (Yuan et
    al. 2015, :mod:`custom_ops.lda.alias`): O(1) per token whatever K, a different
    Markov chain with the same stationary distribution (it mixes more slowly per
    sweep). ``"auto"`` (default) is the sparse sweep at ``beta = 1`` and, at ``beta <
    1`` (a tempered run's hotter replicas), the dense one below
    :data:`ALIAS_MIN_TOPICS` topics and the alias one from there on: the power
    posteriors spread each word and document over more topics, where the buckets lose
    their advantage over the scan at small K and the alias cycle's O(1) wins at large K
    (measured on Reuters, ``docs/benchmarks.md``).

    The count matrices live in the step between calls and are updated in place; they
    are rebuilt from the point only when ``z`` or the words differ from what the step
    last returned (e.g. another step changed them, or a tempered run swapped states).

    It tempers (``can_temper``): at inverse temperature ``beta`` it samples ``p(z |
    alpha) p(w | z, eta)^beta`` (the model's likelihood is the collapsed word term,
    Murphy Eq. 27.36), the word's predictive ``(n_wk + eta_w) / (n_k + sum eta)`` raised
    to ``beta`` in each token's conditional (derivation in
    :mod:`custom_ops.lda.gibbs`, Tempering). :meth:`replica` gives each copy its own
    counts.

    Parameters
    ----------
    vars : list
        The one variable ``z`` (int, shape (N,), tokens document by document).
    words : TensorVariable or int array (N,)
        Word id of every token: usually the model's observed ``w`` (a symbolic
        expression is evaluated on the point, so it may also be a free variable, as in
        getting-it-right tests).
    doc_ptr : int array (D + 1,)
        Token offsets of the documents.
    n_words, n_topics : int
        Vocabulary size V and number of topics K.
    alpha : float or array (K,), eta : float or array (V,)
        Dirichlet parameters.
    sampler : {"auto", "sparse", "dense", "alias"}
    sweeps : int
        Sweeps per draw.
    n_threads : int
        Threads sweeping the one chain (default 1: the serial sampler). With ``n_threads
        = P > 1`` the documents are split into ``P`` blocks and the vocabulary into ``P``
        groups of about equal numbers of tokens, and each sweep has ``P`` epochs in which
        the threads run the SparseLDA sweep over cells that share no document and no word
        (the partition of Yan, Xu & Qi 2009, :mod:`custom_ops.lda.threads`), against the
        one set of counts; only the topic totals are per thread, merged after each epoch.
        Not the serial chain (and not tempered), but its log p(w, z) stays within 1 % of
        the serial sampler's (tested on an LDA-drawn corpus). The chains of such a step
        run one after another in the calling process
        (:attr:`~inference.gibbs.base.ZooGibbsStep.uses_threads`).
    model, rng :
        See :class:`~inference.gibbs.base.ZooGibbsStep`.

    Notes
    -----
    Stats per draw: ``log_joint`` = log p(w, z | alpha, eta) (Murphy Eqs. 27.34 + 27.36;
    the collapsed model's log density, the usual trace for convergence) and
    ``n_changed`` (tokens whose topic changed), and the label-invariant summaries of the
    conditional posterior means ``phi = E[phi | z, w]`` and ``theta = E[theta | z]``
    computed from the counts: ``phi_concentration`` = mean_k sum_v phi_kv^2 and
    ``theta_concentration`` = mean_d sum_k theta_dk^2 (the model's derived statistics,
    so they need no per-draw phi or theta). ``z`` is a vector over all tokens: keep
    it out of the trace on large corpora with ``var_names`` (the step still updates it).
    """

    name = "lda_collapsed_gibbs"
    can_temper = True
    #: the ``"alias"`` sampler's sweep (a twin step names another)
    alias_kernel = staticmethod(gibbs_sweep_alias)
    stats_dtypes_shapes = {
        "log_joint": (np.float64, []),
        "n_changed": (np.int64, []),
        "phi_concentration": (np.float64, []),
        "theta_concentration": (np.float64, []),
    }

    def __init__(
        self,
        vars,
        *,
        words,
        doc_ptr,
        n_words: int,
        n_topics: int,
        alpha=0.1,
        eta=0.01,
        sampler: str = "auto",
        sweeps: int = 1,
        n_threads: int = 1,
        model=None,
        rng=None,
        blocked: bool = True,
    ):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        if len(self.vars) != 1:
            raise ValueError(
                f"vars: CollapsedLDAGibbs updates one variable z, got {self.var_names}"
            )
        check_choice(sampler, "sampler", ("auto", "sparse", "dense", "alias"))
        sweeps = check_int(sweeps, "sweeps", minimum=1)
        self.n_threads = check_int(n_threads, "n_threads", minimum=1)
        self.uses_threads = self.n_threads > 1
        if self.n_threads > 1 and sampler in ("dense", "alias"):
            raise ValueError(
                "n_threads > 1 sweeps with the sparse kernel; "
                f"sampler={sampler!r} cannot serve it: use sampler='auto' or 'sparse'"
            )
        self.n_words = int(n_words)
        self.n_topics = int(n_topics)
        if self.n_topics < 1 or self.n_words < 1:
            raise ValueError("n_topics and n_words must be >= 1")
        self.doc_ptr = np.ascontiguousarray(doc_ptr, dtype=np.int64)
        if self.doc_ptr.ndim != 1 or self.doc_ptr[0] != 0 or np.any(np.diff(self.doc_ptr) < 0):
            raise ValueError("doc_ptr must be non-decreasing offsets starting at 0")
        self.n_tokens = int(self.doc_ptr[-1])
        for name, value, size, what in (
            ("alpha", alpha, self.n_topics, "n_topics"),
            ("eta", eta, self.n_words, "n_words"),
        ):
            if np.ndim(value) not in (0, 1) or np.size(value) not in (1, size):
                raise ValueError(
                    f"{name} must be a scalar or have {what} = {size} entries, "
                    f"got shape {np.shape(value)}"
                )
        # writable copies: a read-only array (a broadcast view) would make Numba compile
        # every kernel a second time, for that type
        self.alpha = np.array(np.broadcast_to(alpha, (self.n_topics,)), np.float64)
        self.eta = np.array(np.broadcast_to(eta, (self.n_words,)), np.float64)
        if np.any(self.alpha <= 0) or np.any(self.eta <= 0):
            raise ValueError("alpha and eta must be > 0")
        # symmetric priors take log_joint's table-lookup path
        self._alpha_ll = self.alpha[0] if np.all(self.alpha == self.alpha[0]) else self.alpha
        self._eta_ll = self.eta[0] if np.all(self.eta == self.eta[0]) else self.eta
        self.sampler = sampler
        self._block_width = dense_block_width(self.n_topics)
        self.sweeps = int(sweeps)
        self._z_name = self.var_names[0]
        if isinstance(words, Variable):
            value_inputs = set(self.model.value_vars)
            replaced = self.model.replace_rvs_by_values([words])[0]
            if any(v in value_inputs for v in explicit_graph_inputs([replaced])):
                self._words_fn = self.compile_point_fn(words)
                self._words_const = None
            else:  # observed data: evaluate once
                self._words_fn = None
                self._words_const = self._check_words(replaced.eval())
        else:
            self._words_fn = None
            self._words_const = self._check_words(np.asarray(words))
        self._state = None
        self._state_words = None
        self._tables = None
        self._last_z = None
        self._lists_stale = False

    def replica(self):
        """A copy for another temperature: it shares the compiled word function and the
        priors, and builds its own counts from the first point it is given (the counts
        are updated in place by every sweep)."""
        new = super().replica()
        new._state = None
        new._state_words = None
        new._tables = None
        new._last_z = None
        new._lists_stale = False
        return new

    @classmethod
    def tempering_error(cls, options) -> str | None:
        """Several threads sample an approximation (stale topic totals within an epoch),
        not the power posterior."""
        n_threads = options.get("n_threads", 1)
        if isinstance(n_threads, int | np.integer) and n_threads > 1:
            return (
                "n_threads > 1: the threaded sweep does not leave the power "
                "posterior exactly invariant; temper with n_threads=1"
            )
        return None

    def instance_tempering_error(self) -> str | None:
        return type(self).tempering_error({"n_threads": self.n_threads})

    # ------------------------------------------------------------------ helpers
    def _check_words(self, words) -> np.ndarray:
        words = np.asarray(words)
        if words.shape != (self.n_tokens,):
            raise ValueError(
                f"words has shape {words.shape}; doc_ptr describes {self.n_tokens} tokens"
            )
        if words.size and (words.min() < 0 or words.max() >= self.n_words):
            raise ValueError(f"words must be word ids in [0, {self.n_words})")
        return np.ascontiguousarray(words, dtype=np.int32)

    def _current_words(self, point) -> np.ndarray:
        if self._words_fn is None:
            return self._words_const
        return self._check_words(self._words_fn(point))

    def _rebuild(self, z, words) -> None:
        z = np.asarray(z)
        if z.shape != (self.n_tokens,):
            raise ValueError(f"{self._z_name} has shape {z.shape}, expected ({self.n_tokens},)")
        if z.size and (z.min() < 0 or z.max() >= self.n_topics):
            raise ValueError(f"{self._z_name} must hold topics in [0, {self.n_topics})")
        old = self._state
        if self.n_threads > 1:
            self._state = ThreadedLDAState(
                words, self.doc_ptr, z, self.n_words, self.n_topics, self.n_threads
            )
            # one generator per block, drawn from the step's own: the chain's draws
            # depend on the step's seed alone
            self._rngs = self.rng.spawn(self._state.n_threads)
            self._lists_stale = False
        else:
            alias = self.sampler == "alias" or (
                self.sampler == "auto" and self.n_topics >= ALIAS_MIN_TOPICS
            )
            state_type = AliasLDAState if alias else SparseLDAState
            self._state = state_type(words, self.doc_ptr, z, self.n_words, self.n_topics)
            self._lists_stale = False
        if self.n_threads == 1 and old is not None and words is self._state_words:
            # same corpus (a tempered run's swaps rebuild the counts often): its tables
            # stay valid, the tempered sweep's depending only on beta and eta besides,
            # the alias tables being proposals that any counts may use
            self._state.power_tables = old.power_tables
            if isinstance(self._state, AliasLDAState) and isinstance(old, AliasLDAState):
                self._state.take_tables(old)
            return
        self._state_words = words
        self._tables = None
        if np.ndim(self._alpha_ll) == 0 and np.ndim(self._eta_ll) == 0 and self.n_tokens:
            # lookups sized by the largest word frequency and document length
            max_word = int(np.bincount(words, minlength=1).max())
            max_doc = int(np.diff(self.doc_ptr).max())
            self._tables = lgamma_tables(self._alpha_ll, self._eta_ll, max_word, max_doc)

    def _kernel(self) -> str:
        """The kernel of the next sweep: the sampler asked for, or ``"auto"``'s choice
        at the current ``beta`` (class docstring)."""
        if self.sampler != "auto":
            return self.sampler
        if self.beta == 1.0:
            return "sparse"
        return "alias" if self.n_topics >= ALIAS_MIN_TOPICS else "dense"

    def _sweep(self) -> None:
        """One sweep over all tokens, in place on ``self._state``.

        The dense kernel leaves the state's sparse topic lists stale; the sparse and
        alias kernels read them, so their sweep after a dense one (``"auto"`` when beta
        became 1) rebuilds them first.
        """
        kernel = self._kernel()
        if kernel != "dense" and self._lists_stale:
            self._rebuild(self._state.z.copy(), self._state_words)
        s = self._state
        self._lists_stale = kernel == "dense"
        if kernel == "alias":  # keeps the topic lists
            self.alias_kernel(*s.kernel_args(self.alpha, self.eta, self.beta), self.rng)
        elif kernel == "sparse":
            s.sweep(self.alpha, self.eta, self.beta, self.rng)
        else:
            prior = s.sweep_prior(self.alpha, self.eta, self.beta)
            if self._block_width:
                gibbs_sweep_blocked(s.tokens, s.counts, prior, self._block_width, self.rng)
            else:
                gibbs_sweep_dense(s.tokens, s.counts, prior, self.rng)

    # -------------------------------------------------------------------- step
    def step(self, point):
        z_in = point[self._z_name]
        words = self._current_words(point)
        fresh = (
            self._state is None
            or not (words is self._state_words or np.array_equal(words, self._state_words))
            or not (z_in is self._last_z or np.array_equal(z_in, self._state.z))
        )
        if fresh:
            self._rebuild(z_in, words)
        if self.n_threads > 1:  # all the draw's sweeps in one compiled call
            self._state.sweep(self.alpha, self.eta, self.beta, self._rngs, self.sweeps)
        else:
            for _ in range(self.sweeps):
                self._sweep()
        state = self._state  # after the sweeps: a sweep may rebuild it
        z_in = np.asarray(z_in)
        z_out, n_changed = state.topics_out(z_in)
        if z_out.dtype != z_in.dtype:
            z_out = z_out.astype(z_in.dtype)
        self._last_z = z_out
        if self._tables is not None and not self._lists_stale:
            ll, phi_c, theta_c = state.summary(self._alpha_ll, self._eta_ll, self._tables)
        elif self._tables is not None:
            ll, phi_c, theta_c = draw_summary(
                state.n_wk, state.n_dk, state.n_k, self._alpha_ll, self._eta_ll, self._tables
            )
        else:
            ll = log_joint(state.n_wk, state.n_dk, state.n_k, self._alpha_ll, self._eta_ll)
            phi_c, theta_c = self._concentrations(state)
        return self.updated(point, **{self._z_name: z_out}), [
            {
                "log_joint": ll,
                "n_changed": n_changed,
                "phi_concentration": phi_c,
                "theta_concentration": theta_c,
            }
        ]

    def _concentrations(self, state) -> tuple[float, float]:
        return concentrations(state.n_wk, state.n_dk, state.n_k, self.alpha, self.eta)

    def counts(self):
        """The current ``(n_wk, n_dk, n_k)`` (copies), or ``None`` before the first step."""
        if self._state is None:
            return None
        s = self._state
        return s.n_wk.copy(), s.n_dk.copy(), s.n_k.copy()
