"""Time limits the benchmark scripts share: one budget for the whole script, and each
measurement a subprocess with its own limit cut to what is left of the budget.

    from budget import Budget, run, log
    budget = Budget(235)
    out, err = run(cmd, min(60, budget.left()))   # err: None, "timeout" or "failed"

A measurement that runs out is reported (`timeout`) instead of stopping the script, and one
that fails prints the tail of its output and is reported (`failed`): the table at the end
shows both, and the other measurements still run.
"""
import subprocess
import sys
import time

TIMEOUT = "timeout"
FAILED = "failed"


def log(text):
    print(text, file=sys.stderr, flush=True)


class Budget:
    """The whole script's time limit, from when it is made."""

    def __init__(self, seconds):
        self.deadline = time.monotonic() + seconds

    def left(self):
        """Seconds left, at least 1 (a measurement past the budget still gets a try)."""
        return max(1.0, self.deadline - time.monotonic())


def run(cmd, timeout, env=None, input=None, shown=None):
    """(stdout, None) when `cmd` succeeds within `timeout` seconds, else (None, TIMEOUT) or
    (None, FAILED), the failure's output tail printed. `input` goes to stdin; `shown` is the
    command as logged (a long inline script left out)."""
    log("+ " + " ".join(shown or cmd) + f" (limit {timeout:.0f} s)")
    try:
        done = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        log(f"  timed out after {timeout:.0f} s")
        return None, TIMEOUT
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        log(f"  FAILED (exit {done.returncode})")
        return None, FAILED
    return done.stdout, None
