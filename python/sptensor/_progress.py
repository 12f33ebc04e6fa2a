"""Optional progress bars (``progress=True``) for long reads and decompositions.

The bars are tqdm's (``tqdm.auto``: a text bar on stderr, a widget in
Jupyter). tqdm is an optional dependency (``pip install tqdm``, or the
package's ``progress`` extra): without it, ``progress=True`` warns once per
process with :class:`ProgressUnavailableWarning` and the call runs without a
bar. A missing cosmetic package should not cost a long run, so this is a
warning rather than an error.

Reads are followed through the context's progress callback
(``spt_context_set_progress``: fractions in [0, 1] from the reading thread),
decompositions through their per-iteration callback (one step per
iteration, the fit or log-likelihood as the bar's postfix).
"""
import warnings

from . import _lib

# spt_progress_fn (sptensor.h): void (*)(void *user_data, const char *stage, double fraction)
PROGRESS_FN = _lib.spt_progress_fn  # the generated callback type (sptensor.h spt_progress_fn)

_READ_STEPS = 1000  # the read bar counts thousandths of the file


class ProgressUnavailableWarning(UserWarning):
    """``progress=True`` was asked for but tqdm is not installed (warned once)."""


_warned = False


def _tqdm_class():
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def make_bar(progress, **tqdm_args):
    """A tqdm bar when `progress` is true and tqdm is importable, else None.

    Without tqdm, the first request in the process warns
    (ProgressUnavailableWarning); later ones are silent."""
    global _warned
    if not progress:
        return None
    tqdm = _tqdm_class()
    if tqdm is None:
        if not _warned:
            _warned = True
            warnings.warn("progress=True needs tqdm (pip install tqdm); running without a progress bar",
                          ProgressUnavailableWarning, stacklevel=3)
        return None
    return tqdm(**tqdm_args)


class IterationBar:
    """One bar step per decomposition iteration, the value as its postfix.

    Fed from _RunControl's per-iteration callback; `close` ends the bar
    (where the run stopped, which may be before max_iters)."""

    def __init__(self, progress, desc, max_iters, label):
        self.label = label
        self.bar = make_bar(progress, desc=desc, total=max(int(max_iters), 0) or None, unit="it", leave=True)

    def step(self, iteration, value):
        if self.bar is None:
            return
        try:
            self.bar.update(max(iteration - self.bar.n, 0))
            self.bar.set_postfix({self.label: f"{value:.6g}"}, refresh=False)
        except Exception:  # a failing bar (closed stream, ...) must not stop the run: drop it
            self.bar = None

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class ContextProgress:
    """A bar fed by a context's progress callback during one library call.

    Use as a context manager around the call: it installs the callback on the
    context and removes it afterwards. Does nothing when no bar is made."""

    def __init__(self, ctx_handle, progress, desc):
        self._ctx_handle = ctx_handle
        self.bar = make_bar(progress, desc=desc, total=_READ_STEPS, leave=True,
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]")
        self._c_function = None
        self._interrupt = None

    def _on_progress(self, _user_data, _stage, fraction):
        try:
            done = int(min(max(fraction, 0.0), 1.0) * _READ_STEPS)
            if done > self.bar.n:
                self.bar.update(done - self.bar.n)
        except KeyboardInterrupt as e:  # Ctrl-C: raise_interrupt() raises it after the call, as without a bar
            self._interrupt = e
        except Exception:  # nothing may unwind into the library: the bar just stops moving
            pass

    def __enter__(self):
        if self.bar is not None:
            self._c_function = PROGRESS_FN(self._on_progress)
            _lib.check(_lib.lib().spt_context_set_progress(self._ctx_handle, self._c_function, None),
                       "spt_context_set_progress")
        return self

    def __exit__(self, *_):
        if self.bar is not None:
            _lib.lib().spt_context_set_progress(self._ctx_handle, PROGRESS_FN(), None)
            self.bar.close()
        return False

    def raise_interrupt(self):
        """Raise the KeyboardInterrupt that arrived inside the callback, if any
        (call once the call's result is owned by Python, so it is freed)."""
        if self._interrupt is not None:
            raise self._interrupt
