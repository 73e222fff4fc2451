"""Watch inbox/pending/ and call back shortly after events land, until SIGINT/SIGTERM (`cortex-normalize --watch`).

watchdog observes inbox/pending/; a burst of events (Claude Code fires Stop after every turn) is
debounced into one run.  Where no native observer works, watchdog's polling observer takes over.
"""
import signal
import threading
import time

DEBOUNCE_S = 1.0
SAFETY_INTERVAL_S = 600.0


def watch(home, run, debounce: float = DEBOUNCE_S, max_seconds: float = None, on_run=None) -> int:
    """Call `run(home)` when events land in inbox/pending/ (and every SAFETY_INTERVAL_S); the caller
    chooses what a run is, so the inbox knows nothing of the normalizer."""
    from watchdog.events import FileSystemEventHandler
    home.ensure()
    wake = threading.Event()
    stop = threading.Event()

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event):
            wake.set()

    observer = _observer(home.inbox_dir("pending"), Handler())
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(sig, lambda *_: (stop.set(), wake.set()))
        except ValueError:  # not the main thread (tests)
            pass
    started = time.monotonic()
    wake.set()  # process anything already pending
    try:
        while not stop.is_set():
            timeout = SAFETY_INTERVAL_S
            if max_seconds is not None:
                timeout = max(0.0, min(timeout, max_seconds - (time.monotonic() - started)))
            woke = wake.wait(timeout)
            if max_seconds is not None and time.monotonic() - started >= max_seconds:
                break
            if stop.is_set():
                break
            if woke:
                # let the burst settle: each new event restarts the wait
                while True:
                    wake.clear()
                    if not wake.wait(debounce) or stop.is_set():
                        break
            wake.clear()
            stats = run(home)
            if on_run:
                on_run(stats)
    finally:
        observer.stop()
        observer.join(timeout=5)
    return 0


def _observer(path, handler):
    from watchdog.observers import Observer
    try:
        obs = Observer()
        obs.schedule(handler, path, recursive=False)
        obs.start()
        return obs
    except Exception:
        from watchdog.observers.polling import PollingObserver
        obs = PollingObserver(timeout=1)
        obs.schedule(handler, path, recursive=False)
        obs.start()
        return obs
