"""How long LDA's collapsed Gibbs chains take to settle on Reuters, and how fast the
statistics ``ppzoo check`` scores mix once they have.

One chain per seed, from the balanced start ``ppzoo fit lda`` uses (token ``i`` in topic
``i mod K``), swept by the SparseLDA kernel alone (the kernel the step runs at beta = 1)
with the command line's priors (alpha = 0.1, eta = 0.01, K = 20). After every sweep it
records ``log_joint`` = log p(w, z) and the two checked statistics,
``phi_concentration`` and ``theta_concentration`` (``pp_models.lda.model.DERIVED``, from
the counts as the step reports them). It prints each statistic's mean over every block
of 1,000 sweeps (the drift), then, after discarding the first ``B`` sweeps for several
``B``, the split R-hat of the rest's two halves (``inference.convergence.split_rhat``,
the check's per-chain rule), its bulk ESS and the sweeps per effective draw (the
integrated autocorrelation time in sweeps), and the kernel's CPU milliseconds per
sweep. The chains' values are saved with ``--save DIR`` (one ``.npy`` per seed).

No outside tool does this; it is a study of the zoo's own sampler::

    PYTHONPATH=$PWD python benchmarks/bench_lda_mixing.py --seeds 1 2 --sweeps 25000
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

#: statistics recorded per sweep, in the order of the kernel's summary
NAMES = ("log_joint", "phi_concentration", "theta_concentration")


def run_chain(seed: int, sweeps: int, n_topics: int = 20) -> tuple[np.ndarray, float]:
    """``(sweeps, 3)`` statistics of one chain and its CPU ms per sweep (kernel and
    summary, after the first ten sweeps, which compile)."""
    from custom_ops.lda.gibbs import SparseLDAState
    from custom_ops.lda.summaries import lgamma_tables
    from pp_models.datasets.reuters import load_reuters
    from pp_models.lda.inputs import prepare_corpus

    corpus = prepare_corpus(load_reuters().data)
    words = corpus.words.astype(np.int32)
    state = SparseLDAState(
        words, corpus.doc_ptr, np.arange(corpus.n_tokens) % n_topics, corpus.n_words, n_topics
    )
    alpha, eta = 0.1, 0.01
    alpha_v, eta_v = np.full(n_topics, alpha), np.full(corpus.n_words, eta)
    tables = lgamma_tables(
        alpha, eta, int(np.bincount(words).max()), int(np.diff(corpus.doc_ptr).max())
    )
    rng = np.random.default_rng(seed)
    out = np.empty((sweeps, len(NAMES)))
    start = 0.0
    for i in range(sweeps):
        if i == 10:
            start = time.process_time()
        state.sweep(alpha_v, eta_v, 1.0, rng)
        out[i] = state.summary(alpha, eta, tables)
    ms = (time.process_time() - start) / max(sweeps - 10, 1) * 1e3
    return out, ms


def report(values: np.ndarray, discards=(2000, 5000, 8000, 12000, 20000)) -> str:
    """Block means and, per discarded prefix, split R-hat, bulk ESS and sweeps per
    effective draw of every statistic."""
    import arviz as az
    import xarray as xr

    from inference.convergence import split_rhat

    n = len(values) // 1000 * 1000
    blocks = values[:n].reshape(-1, 1000, len(NAMES)).mean(axis=1)
    lines = []
    for j, name in enumerate(NAMES):
        scale = 1e-3 if name == "log_joint" else 1.0
        fmt = {"log_joint": "{:.1f}", "phi_concentration": "{:.5f}"}.get(name, "{:.4f}")
        lines.append(
            f"  {name} per 1,000 sweeps: " + " ".join(fmt.format(v * scale) for v in blocks[:, j])
        )
    for discard in discards:
        rest = values[discard:]
        if len(rest) < 2000:
            break
        cells = []
        for j, name in enumerate(NAMES):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                ess = float(
                    az.ess(xr.DataArray(rest[None, :, j], dims=("chain", "draw")), method="bulk")
                )
            cells.append(f"{name} {split_rhat(rest[:, j]):.3f}, {ess:.0f}, {len(rest) / ess:.0f}")
        lines.append(f"  after {discard}: split R-hat, ESS, sweeps per ESS: " + " | ".join(cells))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sweeps", type=int, default=25000)
    parser.add_argument("--save", type=Path, default=None, help="folder for the chains")
    args = parser.parse_args(argv)
    for seed in args.seeds:
        values, ms = run_chain(seed, args.sweeps)
        print(f"seed {seed}: {args.sweeps} sweeps, {ms:.2f} CPU ms per sweep", flush=True)
        print(report(values), flush=True)
        if args.save is not None:
            args.save.mkdir(parents=True, exist_ok=True)
            np.save(args.save / f"lda_chain_{seed}.npy", values)


if __name__ == "__main__":
    main()
