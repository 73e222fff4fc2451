"""Times as records and logs write them."""
import time


def now_iso(t: float = None) -> str:
    """UTC time with milliseconds, the form record times use: 2026-05-11T09:41:50.120Z."""
    t = time.time() if t is None else t
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % (int(t * 1000) % 1000)
