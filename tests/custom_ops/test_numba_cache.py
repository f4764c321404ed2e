"""The package's kernels are cached in the user's cache folder (a folder per source
version and optimisation level), not in the package and not by moving Numba's cache for
everyone; a user's NUMBA_CACHE_DIR is used as it is; old sources' folders go only when
asked; cache writes are process-safe; a graph loaded from PyTensor's cache in a new process
finds its kernels."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# a kernel of the package's (njit_exact) and one of another library (plain numba.njit)
KERNEL = """
import numba

from custom_ops.jit import njit_exact


@njit_exact
def twice(x):
    return 2 * x


@numba.njit(cache=True)
def thrice(x):
    return 3 * x
"""

SCRIPT = """
import json, os, sys
import custom_ops
import kernel
from custom_ops import jit
assert kernel.twice(21) == 42 and kernel.thrice(2) == 6
if sys.argv[1:] == ["prune"]:
    jit.prune_kernel_cache()
print(json.dumps({"ours": kernel.twice.stats.cache_path,
                  "theirs": kernel.thrice.stats.cache_path,
                  "env": os.environ.get("NUMBA_CACHE_DIR")}))
"""


def _run(env_extra, tmp_path, *args):
    """Run SCRIPT in a fresh process: where the package's kernel and another library's
    kernel were cached, and NUMBA_CACHE_DIR as the process ended."""
    import json

    # the test run itself sets NUMBA_OPT (tests/conftest.py): start from Numba's default
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_OPT")}
    (tmp_path / "kernel.py").write_text(KERNEL)
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]), **env_extra)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return Path(out["ours"]), Path(out["theirs"]), out["env"]


def test_kernels_are_cached_in_the_user_cache_folder(tmp_path):
    """Ours in the user's cache folder; another library's kernel where Numba puts it
    (beside its source), and Numba's configuration untouched."""
    from custom_ops.jit import kernel_source_version

    ours, theirs, env = _run({"XDG_CACHE_HOME": str(tmp_path / "cache")}, tmp_path)
    folder = tmp_path / "cache" / "pp-models" / "numba" / f"src-{kernel_source_version():x}"
    assert ours.parent == folder
    assert list(ours.glob("*.nbi")), "no Numba index written there"
    assert theirs == tmp_path / "__pycache__" and list(theirs.glob("kernel.thrice*.nbi"))
    assert env is None


def test_each_kernel_source_gets_its_own_cache_folder(tmp_path):
    """A cached kernel holds the code of the kernels it calls from other files, which
    Numba's per-file stamps do not re-check: the cache folder is named by custom_ops'
    source version. Other sources' folders stay until prune_kernel_cache is called, which
    deletes those unused for STALE_AFTER_DAYS and keeps the recent ones."""
    from custom_ops.jit import STALE_AFTER_DAYS

    base = tmp_path / "cache" / "pp-models" / "numba"
    recent, old = base / "src-1", base / "src-2"
    for other, age_days in ((recent, 1), (old, STALE_AFTER_DAYS + 1)):
        other.mkdir(parents=True)
        (other / "kernel-1.py312.nbi").write_bytes(b"code of another source")
        used = other / "last-used"
        used.touch()
        stamp = used.stat().st_mtime - age_days * 86400
        os.utime(used, (stamp, stamp))
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    ours, _, _ = _run(env, tmp_path)
    folder = ours.parent
    assert folder.parent == base and folder.name.startswith("src-")
    assert (folder / "last-used").exists()
    assert recent.exists() and old.exists(), "deleted without being asked"
    assert _run(env, tmp_path, "prune")[0] == ours
    assert recent.exists() and not old.exists() and list(ours.glob("*.nbi"))


def test_prune_kernel_cache_refuses_a_bad_age():
    from custom_ops.jit import prune_kernel_cache

    for bad, error in ((-1, ValueError), (float("nan"), ValueError), (True, TypeError),
                       ("14", TypeError)):
        with pytest.raises(error, match="older_than_days"):
            prune_kernel_cache(older_than_days=bad)


def test_a_users_numba_cache_dir_is_kept(tmp_path):
    mine = tmp_path / "mine"
    ours, theirs, env = _run({"NUMBA_CACHE_DIR": str(mine),
                              "XDG_CACHE_HOME": str(tmp_path / "c")}, tmp_path)
    assert ours.parent == mine and theirs.parent == mine and env == str(mine)
    assert list(ours.glob("kernel.twice*.nbi")) and not (tmp_path / "c").exists()


def test_code_compiled_at_another_level_is_cached_apart(tmp_path):
    """Numba's cache index does not record NUMBA_OPT: -O1 code (the test run's) must not
    be loaded by an -O3 run (a user's, a benchmark's)."""
    ours, _, _ = _run({"XDG_CACHE_HOME": str(tmp_path / "cache"), "NUMBA_OPT": "1"},
                      tmp_path)
    assert ours.parent.parent == tmp_path / "cache" / "pp-models" / "numba-O1"
    assert list(ours.glob("*.nbi"))
    assert not (tmp_path / "cache" / "pp-models" / "numba").exists()


def test_an_unwritable_cache_folder_leaves_the_kernels_uncached(tmp_path):
    """No writable home: the kernels compile in memory and run; nothing is written into
    the package."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    ours, _, _ = _run({"XDG_CACHE_HOME": str(blocker)}, tmp_path)
    assert not ours.exists()
    assert not list((ROOT / "custom_ops").rglob("*.nbi"))


def test_an_edited_kernel_changes_the_graph_cache_key(tmp_path):
    """PyTensor caches an Op's compiled graph under (Op type, props, one integer); the
    integer is the hash of custom_ops' source, so editing any kernel file (here the
    conjugate dispatch, which other modules' Ops call) gives new keys."""
    import shutil

    copy = tmp_path / "custom_ops"
    shutil.copytree(ROOT / "custom_ops", copy, ignore=shutil.ignore_patterns("__pycache__"))
    module = copy / "jit.py"
    script = ("import importlib.util, sys\n"
              f"spec = importlib.util.spec_from_file_location('nc', r'{module}')\n"
              "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
              "print(m.kernel_source_version())")

    def version():
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=120, check=True)
        return int(out.stdout.strip())

    before = version()
    assert version() == before
    dispatch = copy / "conjugate" / "dispatch.py"
    dispatch.write_text(dispatch.read_text() + "\n# edited\n")
    assert version() != before


def test_every_op_registration_is_keyed_on_the_source(monkeypatch):
    import numpy as np
    import pytensor.tensor as pt
    from pytensor.link.numba.dispatch.basic import numba_funcify_and_cache_key

    import custom_ops.jit as cache
    from custom_ops.dpm.crp import crp_logp_op

    node = crp_logp_op(pt.as_tensor(np.array([0, 0, 1])), pt.scalar("a"),
                       pt.scalar("d")).owner
    keys = set()
    for version in (1, 2):
        monkeypatch.setattr(cache, "kernel_source_version", lambda v=version: v)
        keys.add(numba_funcify_and_cache_key(node.op, node=node)[1])
    assert len(keys) == 2

    # and no Op in custom_ops registers around it
    for path in (ROOT / "custom_ops").rglob("*.py"):
        assert "register_funcify_default_op_cache_key(" not in path.read_text() \
            or path.name == "jit.py", path

# Two processes save one signature each into the same Numba cache index at the same
# moment. Numba reads the index, takes the first free data-file number, writes the index,
# then the data; the delays below force the interleaving that corrupted a cold test run:
# both read the empty index and take number 1; the int32 process writes the index first
# and its data last, so the float64 signature ends up mapped to the int32 code.
CONCURRENT_SAVE = """
import importlib.util, pickle, sys, time
from numba.core import caching

folder, name, ready_dir, index_delay, data_delay, locked = sys.argv[1:7]
spec = importlib.util.spec_from_file_location("nc", r"{module}")
nc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nc)
cache_file = nc.LockedIndexDataCacheFile if locked == "1" else caching.IndexDataCacheFile

read_index = caching.IndexDataCacheFile._load_index
write_index = caching.IndexDataCacheFile._save_index
write_data = caching.IndexDataCacheFile._save_data


def slow_read(self):
    index = read_index(self)
    time.sleep(0.6)  # both processes now hold the same (empty) index
    return index


def slow_index_write(self, *args):
    time.sleep(float(index_delay))
    return write_index(self, *args)


def slow_write(self, *args):
    time.sleep(float(data_delay))
    return write_data(self, *args)


caching.IndexDataCacheFile._load_index = slow_read
caching.IndexDataCacheFile._save_index = slow_index_write
caching.IndexDataCacheFile._save_data = slow_write
cache = cache_file(folder, "kernel", source_stamp=0)
# start together: on a loaded machine importing numba takes seconds and varies by more
# than the delays above, so each process waits until all four have imported it
import pathlib
ready = pathlib.Path(ready_dir)
(ready / (locked + name)).touch()
deadline = time.time() + 100
while len(list(ready.iterdir())) < 4 and time.time() < deadline:
    time.sleep(0.005)
cache.save(("signature", name), "code of " + name)
"""


def test_the_cache_lock_keeps_each_signature_with_its_code(tmp_path):
    """With the lock (LockedIndexDataCacheFile, the kernels' cache file) both signatures
    keep their code. Without it (Numba's own save, run at the same time in another folder,
    so this test can fail) one signature is lost and the other maps to the wrong code."""

    from numba.core import caching

    script = CONCURRENT_SAVE.replace("{module}",
                                    str(ROOT / "custom_ops" / "numba_internals.py"))
    ready_dir = tmp_path / "ready"
    ready_dir.mkdir()
    runs = {}
    for locked in ("1", "0"):
        folder = tmp_path / f"locked{locked}"
        folder.mkdir()
        runs[locked] = folder, [
            subprocess.Popen([sys.executable, "-c", script, str(folder), name, str(ready_dir),
                              index_delay, data_delay, locked],
                             stderr=subprocess.PIPE, text=True)
            for name, index_delay, data_delay in (("int32", "0.0", "1.2"),
                                                  ("float64", "0.3", "0.0"))]
    saved = {}
    for locked, (folder, procs) in runs.items():
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
        cache = caching.IndexDataCacheFile(str(folder), "kernel", source_stamp=0)
        saved[locked] = {key[1]: cache.load(key) for key in cache._load_index()}
    assert saved["1"] == {"int32": "code of int32", "float64": "code of float64"}
    assert saved["0"] == {"float64": "code of int32"}


def test_every_kernel_writes_its_cache_under_the_lock():
    from numba.core.dispatcher import Dispatcher

    from custom_ops.conjugate import special
    from custom_ops.jit import KernelCache, LockedIndexDataCacheFile

    assert isinstance(special.digamma, Dispatcher)
    assert isinstance(special.digamma._cache, KernelCache)
    assert isinstance(special.digamma._cache._cache_file, LockedIndexDataCacheFile)


# --- a graph loaded from PyTensor's cache finds its kernels ------------------------------
# The Ops of three families (custom_ops.dpm.collapsed, bhc, pydt) call their kernels through C
# entry points that each process registers with LLVM's linker (custom_ops.jit).
# One script builds a graph of each family's Ops in a first process and loads them in a
# second one sharing its PyTensor and Numba caches; one pair of processes serves the three
# families' tests (a cold pair is ~10 CPU-s of interpreter start, imports and compiling).

# The start of the script: its imports, ``compiled``, the functions Numba compiles in that
# process (none, when everything came from a cache), and ``run``, which records each
# family's numbers and what was compiled while building that family's graph.
GRAPH_SCRIPT_PRELUDE = """
import json
import numpy as np
import pytensor
import pytensor.tensor as pt
from numba.core import event

from custom_ops import jit

compiled = []


class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)

    def on_end(self, ev):
        pass


event.register("numba:compile", Listener())
result = {}


def run(family, build):
    start = len(compiled)
    result[family] = build()
    result[family]["compiled"] = compiled[start:]
"""

# A graph with CollapsedLogLik and its gradient.
COLLAPSED_GRAPH = """
def collapsed_graph():
    from custom_ops.dpm import collapsed

    rng = np.random.default_rng(3)
    z = np.array([0, 2, 2, 5, 0, 5, 5, 1])
    X = rng.normal(size=(8, 3))
    m0, k0, nu0, S0 = pt.dvector("m0"), pt.dscalar("k0"), pt.dscalar("nu0"), pt.dmatrix("S0")
    ll = collapsed.collapsed_loglik("gaussian", z, X, m0, k0, nu0, S0)
    fn = pytensor.function([m0, k0, nu0, S0], [ll, *pytensor.grad(ll, [m0, k0, nu0, S0])],
                           mode="NUMBA")
    args = (np.zeros(3), np.array(0.5), np.array(4.5), 2.0 * np.eye(3))
    out = [np.asarray(o).tolist() for o in fn(*args)]
    bad = fn(np.zeros(3), np.array(-1.0), np.array(4.5), np.eye(3))  # invalid kappa0
    return {"out": out, "bad": [np.asarray(o).tolist() for o in bad],
            "reference": collapsed.collapsed_loglik_value(
                "gaussian", z, X, [a.tolist() for a in args])}


run("collapsed", collapsed_graph)
"""

# BHCEvidence and its gradient (custom_ops.bhc.evidence), two likelihoods, one of them with
# invalid data: the kernels' input checks come back through the C entry points as codes
# that the graph turns into the Op's ValueErrors.
BHC_GRAPH = """
def bhc_graph():
    from pytensor.compile.mode import Mode

    from custom_ops.bhc import evidence as bhc

    rng = np.random.default_rng(4)
    n = 9
    # a caterpillar tree: leaves 0 and 1 first, then each next leaf joins the last cluster
    merges = np.array([[0, 1]] + [[t + 1, n + t - 1] for t in range(1, n - 1)])
    data, tree, alpha = pt.dmatrix("data"), pt.lmatrix("merges"), pt.dscalar("alpha")
    cases = {
        "bernoulli": ((rng.random((n, 3)) < 0.4).astype(float),
                      [np.array([1.0, 0.5, 2.0]), np.array([0.7, 1.5, 1.0])]),
        "gaussian": (rng.normal(size=(n, 3)),
                     [np.zeros(3), np.array(0.5), np.array(5.5), 2.0 * np.eye(3)]),
    }
    by_family = {}
    for family, (X, values) in cases.items():
        names = bhc.cj.FAMILIES[family].hyper_names
        hyper = [pt.as_tensor_variable(v).type(name) for v, name in zip(values, names)]
        lp, log_r = bhc.bhc_log_evidence(data, tree, alpha, likelihood=family,
                                         **dict(zip(names, hyper)))
        outputs = [lp, log_r, *pytensor.grad(lp + log_r.sum(), [alpha, *hyper])]
        inputs = [data, tree, alpha, *hyper]
        fn = pytensor.function(inputs, outputs, mode="NUMBA")
        by_perform = pytensor.function(inputs, outputs, mode=Mode(linker="py"))
        args = [X, merges, np.array(1.7), *values]
        bad_data = X.copy()
        bad_data[2, 1] = np.nan
        errors = []
        for bad in ([bad_data, *args[1:]], [X, merges[::-1], *args[2:]]):
            try:
                fn(*bad)
            except ValueError as error:
                errors.append(str(error))
        by_family[family] = {"out": [np.asarray(o).tolist() for o in fn(*args)],
                             "perform": [np.asarray(o).tolist() for o in by_perform(*args)],
                             "errors": errors}
    return {"result": by_family, "messages": [bhc.BAD_DATA, bhc.BAD_MERGES]}


run("bhc", bhc_graph)
"""

# PYDTLogProb and its gradient: a multifurcating tree over 5 leaves (root 8 -> 5, 6,
# leaf 4; slot 7 unused), the value and every gradient with data as a variable
# (wrt_data=True) and as a constant (False), then invalid parameters (alpha >= 1) through
# the same graph.
PYDT_GRAPH = """
def pydt_graph():
    from custom_ops.pydt import ops as pydt

    parent = np.array([5, 5, 6, 6, 8, 8, 8, -2, -1])
    log1m_t = np.log1p(-np.array([0.6, 0.8, 0.0, 0.2]))
    X = np.random.default_rng(4).normal(size=(5, 3))
    pydt.check_tree(parent, log1m_t, 5)
    l1, Xv = pt.dvector("log1m_t"), pt.dmatrix("X")
    c, theta, alpha, sigma2 = (pt.dscalar(name) for name in ("c", "theta", "alpha", "sigma2"))
    params = [c, theta, alpha, sigma2]
    lp, ll = pydt.PYDTLogProb()(parent, l1, Xv, *params)
    total = 0.7 * lp + 1.3 * ll
    fn = pytensor.function([l1, Xv, *params],
                           [lp, ll, *pytensor.grad(total, [l1, Xv, *params])], mode="NUMBA")
    lp_c, ll_c = pydt.PYDTLogProb()(parent, l1, pt.constant(X), *params)
    fn_const = pytensor.function([l1, *params],
                                 pytensor.grad(lp_c + ll_c, [l1, *params]), mode="NUMBA")
    args = (1.5, 0.8, 0.3, 0.9)
    out = [np.asarray(o).tolist() for o in fn(log1m_t, X, *args)]
    out_const = [np.asarray(o).tolist() for o in fn_const(log1m_t, *args)]
    bad = [np.asarray(o).tolist() for o in fn(log1m_t, X, 1.5, 0.8, 1.2, 0.9)]
    ref = pydt.pydt_value_and_grad(parent, log1m_t, X, pydt.PYDTParameters(*args),
                                   pydt.Cotangents(0.7, 1.3))
    ref_const = pydt.pydt_value_and_grad(parent, log1m_t, X, pydt.PYDTParameters(*args),
                                         pydt.Cotangents(1.0, 1.0))
    return {"out": out, "out_const": out_const, "bad": bad,
            "reference": [np.asarray(r).tolist() for r in ref],
            "reference_const": [np.asarray(r).tolist() for r in ref_const]}


run("pydt", pydt_graph)
"""

GRAPHS_SCRIPT = GRAPH_SCRIPT_PRELUDE + COLLAPSED_GRAPH + BHC_GRAPH + PYDT_GRAPH + """
print(json.dumps({"result": result,
                  "entry_cache_hits": {symbol: entry.cache_hits for symbol, entry
                                       in jit._ENTRY_POINTS.items()}}))
"""

FAMILIES = ("collapsed", "bhc", "pydt")


def run_twice_on_one_cache(script, tmp_path):
    """Run ``script`` in two fresh processes sharing one PyTensor and Numba cache; each
    prints one JSON line last. The second process loads what the first compiled."""
    import json

    env = dict(os.environ, PYTHONPATH=str(ROOT),
               PYTENSOR_FLAGS=f"base_compiledir={tmp_path / 'pytensor'}")

    def run():
        proc = subprocess.run([sys.executable, "-c", script], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    return run(), run()


@pytest.fixture(scope="module")
def graphs_run_twice(tmp_path_factory):
    return run_twice_on_one_cache(GRAPHS_SCRIPT, tmp_path_factory.mktemp("graphs"))


def family_run(graphs_run_twice, family):
    """(first process's results, second's, second's entry point cache hits) for one
    family; the second process registered no entry point but the three families'."""
    first, second = graphs_run_twice
    hits = second["entry_cache_hits"]
    assert {symbol.split("_")[1] for symbol in hits} <= set(FAMILIES), hits
    return (first["result"][family], second["result"][family],
            {symbol: n for symbol, n in hits.items() if symbol.startswith(f"ppm_{family}_")})


# The three families' graphs are built in one pair of processes: their tests share a
# worker, the BHC one, where the collapsed and PYDT kernels are already in Numba's cache
# (their families' bigger groups are scheduled first, and PYDT's on that worker).
on_the_bhc_worker = pytest.mark.xdist_group("family-bhc")


@on_the_bhc_worker
def test_a_collapsed_graph_loaded_from_pytensors_cache_finds_its_kernels(graphs_run_twice):
    """The second process loads the compiled graph from PyTensor's cache; its calls into
    the kernels resolve to the C entry points that process registered (a missing symbol
    would fail at link time) and give the same numbers."""
    import numpy as np

    first, second, hits = family_run(graphs_run_twice, "collapsed")
    assert any("numba_funcified_fgraph" in name for name in first["compiled"])
    assert not [name for name in second["compiled"]
                if "fgraph" in name or "collapsed" in name], second["compiled"]
    assert sorted(symbol.split("_")[2] for symbol in hits) == ["grad", "value"], hits
    assert list(hits.values()) == [1, 1]
    assert second["out"] == first["out"]
    assert np.isclose(first["out"][0], first["reference"], rtol=1e-12)
    # an invalid hyperparameter gives -inf and a zero gradient, as the kernels do
    assert second["bad"][0] == -np.inf
    assert not np.any(np.concatenate([np.ravel(g) for g in second["bad"][1:]]))


@on_the_bhc_worker
def test_a_bhc_graph_loaded_from_pytensors_cache_finds_its_kernels(graphs_run_twice):
    """As for the collapsed Ops: the second process compiles no graph and no kernel, its
    graphs call the entry points it loaded from Numba's cache, and they compute what the
    Ops' perform computes, values and gradients; invalid data or trees raise the Op's
    ValueErrors through the entry points' status codes."""
    import numpy as np

    first, second, hits = family_run(graphs_run_twice, "bhc")
    assert any("numba_funcified_fgraph" in name for name in first["compiled"])
    assert not [name for name in second["compiled"]
                if "fgraph" in name or "forward" in name or "grad" in name], \
        second["compiled"]
    assert sorted(symbol.rsplit("_", 1)[0] for symbol in hits) == ["ppm_bhc_forward",
                                                                   "ppm_bhc_grad"], hits
    assert list(hits.values()) == [1, 1], hits
    for family in ("bernoulli", "gaussian"):
        ours, reference = second["result"][family], first["result"][family]
        assert ours["out"] == reference["out"], family
        for value, expected in zip(ours["out"], ours["perform"], strict=True):
            np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12)
        assert len(ours["out"]) == 2 + 1 + {"bernoulli": 2, "gaussian": 4}[family]
        assert ours["errors"] == second["messages"], family


@on_the_bhc_worker
def test_a_pydt_graph_loaded_from_pytensors_cache_finds_its_kernels(graphs_run_twice):
    """PYDTLogProb and its gradient call their kernels through C entry points
    (custom_ops.pydt.ops, "Numba registrations"): a graph loaded from PyTensor's cache in a
    new process finds them, loaded from Numba's cache, and gives the numbers of the
    kernels."""
    import numpy as np

    first, second, hits = family_run(graphs_run_twice, "pydt")
    assert any("numba_funcified_fgraph" in name for name in first["compiled"])
    assert not [name for name in second["compiled"]
                if "fgraph" in name or "pydt" in name or "entry" in name], second["compiled"]
    assert sorted(symbol.split("_")[2] for symbol in hits) == ["forward", "grad"], hits
    assert list(hits.values()) == [1, 1]
    assert second["out"] == first["out"] and second["out_const"] == first["out_const"]
    # (lp, ll, d log1m_t, d X, d c, d theta, d alpha, d sigma2), weights 0.7 and 1.3
    lp, ll, g_l, g_x, *g_params = first["reference"]
    got = first["out"]
    np.testing.assert_allclose(got[:2], [lp, ll], rtol=1e-12)
    # the unused slot's entry of d log1m_t is zero in both
    np.testing.assert_allclose(got[2], g_l, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[3], g_x, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[4:], g_params, rtol=1e-10, atol=1e-12)
    _, _, g_l, _, *g_params = first["reference_const"]
    np.testing.assert_allclose(first["out_const"][0], g_l, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(first["out_const"][1:], g_params, rtol=1e-10, atol=1e-12)
    # alpha >= 1 is outside the parameter space: zero density and NaN gradients, as the
    # kernels give, in the process that loaded everything from the caches
    assert second["bad"][:2] == [-np.inf, -np.inf]
    assert all(np.all(np.isnan(g)) for g in second["bad"][2:])
