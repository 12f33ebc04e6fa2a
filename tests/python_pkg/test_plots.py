"""Pictures: CPResult.viz(), plot_convergence() on every result, and
scripts/plot_fit.py on the CLI's output. Each image is written to a file and
must be a non-empty PNG or SVG; the drawn data must be the model's.

    test_plots.py WORK_DIR DATA_FILE CLI PLOT_SCRIPT

Imports sptensor from PYTHONPATH (the source tree's python/) with the
library from SPTENSOR_LIBRARY. Exit 77 (ctest skip) without numpy or
matplotlib, except under CI=true, where that fails.
"""
import os
import subprocess
import sys


def skip(why):
    if os.environ.get("CI") == "true":
        print(f"FAIL: {why}")
        sys.exit(1)
    print(f"SKIP: {why}")
    sys.exit(77)


try:
    import numpy as np
except ImportError:
    skip("numpy is not installed (scripts/test.sh installs it)")
try:
    import matplotlib  # noqa: F401
except ImportError:
    skip("matplotlib is not installed (scripts/test.sh installs it)")

import sptensor  # noqa: E402

work, data, cli, plot_script = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
PNG = b"\x89PNG\r\n\x1a\n"
failures = []


def check(condition, what):
    print(("ok    " if condition else "FAIL  ") + what)
    if not condition:
        failures.append(what)


def image_kind(path):
    """'png', 'svg' or None, from the file's first bytes; None when empty."""
    with open(path, "rb") as f:
        head = f.read(512)
    if head.startswith(PNG):
        return "png"
    if head.lstrip().startswith(b"<?xml") and b"<svg" in head:
        return "svg"
    return None


def check_image(path, kind):
    check(os.path.isfile(path) and os.path.getsize(path) > 1000 and image_kind(path) == kind,
          f"{os.path.basename(path)} is a non-empty {kind.upper()} image")


X = sptensor.read(data)

# --- CPResult.viz: one row per component, one column per mode -----------------
cp = sptensor.cp_als(X, 3, max_iters=6, tol=0, seed=1)
path = os.path.join(work, "cp_viz.png")
fig, axes = cp.viz(path=path)
check_image(path, "png")
check(np.shape(axes) == (3, 3), "viz: 3 components x 3 modes of panels")
drawn = all(np.array_equal(axes[r][n].lines[0].get_ydata(), cp.factors[n][:, r]) for r in range(3) for n in range(3))
check(drawn, "viz: panel (r, n) draws factor n's column r")
check(axes[0][1].get_title() == "Mode 2", "viz: modes titled 'Mode n' (1-based)")
path = os.path.join(work, "cp_viz.svg")
fig, axes = cp.viz(plots=["bar", "line", "scatter"], mode_titles=["country", "relation", "country"], path=path)
check_image(path, "svg")
check(len(axes[0][0].patches) == X.shape[0] and axes[2][2].collections, "viz: bar and scatter modes")
try:
    cp.viz(plots="pie")
    check(False, "viz: plots='pie' raises ValueError")
except ValueError as e:
    check("plots" in str(e), "viz: plots='pie' raises ValueError naming plots")

# --- plot_convergence: the per-iteration history --------------------------------
path = os.path.join(work, "cp_fit.png")
fig, ax = cp.plot_convergence(path=path)
check_image(path, "png")
check(len(cp.fit_history) == 6 and np.allclose(ax.lines[0].get_ydata(), cp.fit_history)
      and list(ax.lines[0].get_xdata()) == [1, 2, 3, 4, 5, 6], "plot_convergence: fit_history against iterations 1..6")
tk = sptensor.tucker(X, [2, 3, 2], max_iters=3, tol=0)
path = os.path.join(work, "tucker_fit.svg")
fig, ax = tk.plot_convergence(path=path)
check_image(path, "svg")
check(np.allclose(ax.lines[0].get_ydata(), tk.fit_history), "TuckerResult.plot_convergence draws fit_history")
apr = sptensor.cp_apr(X, 2, max_outer_iters=3)
path = os.path.join(work, "apr_loglik.png")
fig, ax = apr.plot_convergence(path=path)
check_image(path, "png")
check(np.allclose(ax.lines[0].get_ydata(), apr.loglik_history) and ax.get_ylabel() == "log-likelihood",
      "APRResult.plot_convergence draws the log-likelihood")
path = os.path.join(work, "apr_viz.png")
apr.viz(path=path)
check_image(path, "png")

# --- without matplotlib: a clear ImportError --------------------------------------
saved = {k: v for k, v in sys.modules.items() if k == "matplotlib" or k.startswith("matplotlib.")}
for k in saved:
    sys.modules[k] = None
sys.modules["matplotlib"] = None
sys.modules["matplotlib.figure"] = None
try:
    cp.viz()
    check(False, "viz without matplotlib raises ImportError")
except ImportError as e:
    check("pip install matplotlib" in str(e), "viz without matplotlib: ImportError saying 'pip install matplotlib'")
finally:
    for k in ("matplotlib", "matplotlib.figure"):
        sys.modules.pop(k, None)
    sys.modules.update(saved)

# --- scripts/plot_fit.py on the CLI's output ----------------------------------------
def cli_log(name, *args):
    log = os.path.join(work, name)
    with open(log, "w") as f:
        subprocess.run([cli, *args], stdout=f, check=True)
    return log


log = cli_log("cpd.log", "cpd", data, "-r", "3", "--iters", "5", "--tol", "0", "--threads", "1")
path = os.path.join(work, "cli_fit.svg")
run = subprocess.run([sys.executable, plot_script, log, path], capture_output=True, text=True)
check(run.returncode == 0, f"plot_fit.py cpd log -> svg (exit {run.returncode} {run.stderr.strip()})")
check_image(path, "svg")
log = cli_log("apr.log", "cpd", data, "-r", "2", "--iters", "3", "--tol", "0", "--model", "poisson", "--threads", "1")
path = os.path.join(work, "cli_loglik.png")
with open(log) as f:
    run = subprocess.run([sys.executable, plot_script, "-", path], stdin=f, capture_output=True, text=True)
check(run.returncode == 0, "plot_fit.py reads stdin (poisson log -> png)")
check_image(path, "png")
log = cli_log("quiet.log", "cpd", data, "-r", "2", "--iters", "2", "-q")
run = subprocess.run([sys.executable, plot_script, log, os.path.join(work, "none.png")], capture_output=True, text=True)
check(run.returncode == 1 and "-q" in run.stderr and not os.path.exists(os.path.join(work, "none.png")),
      "plot_fit.py on a -q log: exit 1, says why, writes nothing")

if failures:
    print(f"test_plots: {len(failures)} check(s) failed")
    sys.exit(1)
print("test_plots: all checks passed")
