#!/usr/bin/env python3
"""Plot the per-iteration history that `sptensor cpd` / `sptensor tucker`
print (fit, or the log-likelihood of `cpd --model poisson`) into an image.

    sptensor cpd X.tns -r 8 | tee run.log
    python3 scripts/plot_fit.py run.log fit.svg        # or fit.png, fit.pdf
    sptensor cpd X.tns -r 8 | python3 scripts/plot_fit.py - fit.png

Reads the CLI's "iter N  fit F ..." (or "iter N  loglik L ...") lines from
the file (or stdin for "-") and draws the value against the iteration, the
picture Python's CPResult.plot_convergence() draws. Needs matplotlib
(pip install matplotlib; Debian: python3-matplotlib). Exit status 0 on
success, 1 when the input holds no iteration lines (run without -q) or the
image cannot be written, 2 for bad arguments.
"""
import argparse
import re
import sys

ITERATION = re.compile(r"^iter +(\d+) +(fit|loglik) +([-+0-9.eE]+)")


def read_history(stream):
    """(label, iterations, values) from the CLI's iteration lines."""
    label, iterations, values = None, [], []
    for line in stream:
        m = ITERATION.match(line)
        if m:
            label = m.group(2)
            iterations.append(int(m.group(1)))
            values.append(float(m.group(3)))
    return label, iterations, values


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", help="the CLI's output (its stdout), or - for stdin")
    parser.add_argument("image", help="image to write; the format follows the extension (.svg, .png, .pdf, ...)")
    parser.add_argument("--title", default=None, help="title (default: the final value and iteration count)")
    args = parser.parse_args(argv)
    try:
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        print("plot_fit.py: matplotlib is not installed (pip install matplotlib)", file=sys.stderr)
        return 1
    try:
        if args.log == "-":
            label, iterations, values = read_history(sys.stdin)
        else:
            with open(args.log, encoding="utf-8", errors="replace") as f:
                label, iterations, values = read_history(f)
    except OSError as e:
        print(f"plot_fit.py: cannot read {args.log}: {e.strerror}", file=sys.stderr)
        return 1
    if not values:
        print(f"plot_fit.py: no 'iter N fit F' lines in {args.log} (was the CLI run with -q?)", file=sys.stderr)
        return 1
    name = "log-likelihood" if label == "loglik" else "fit"
    fig = Figure(figsize=(5.0, 3.5))
    ax = fig.subplots()
    ax.plot(iterations, values, marker="o", markersize=3, linewidth=1.0)
    ax.set_xlabel("iteration")
    ax.set_ylabel(name)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, linewidth=0.3)
    ax.set_title(args.title or f"final {name} {values[-1]:.6g} after {iterations[-1]} iterations", fontsize=9)
    fig.tight_layout()
    try:
        fig.savefig(args.image)
    except (OSError, ValueError) as e:
        print(f"plot_fit.py: cannot write {args.image}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
