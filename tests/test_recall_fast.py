"""recall reads full rows only for hits that could still reach the top k: same hits, same order."""
import os

import pytest

from cortex import recall as R
from cortex.bench import build_home
from cortex.home import Home


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    base = tmp_path_factory.mktemp("recall-fast")
    (base / "proj").mkdir()
    old = os.environ.get("CORTEX_HOME")
    info = build_home(str(base / "home"), 2000, str(base / "proj"))
    if old is None:
        os.environ.pop("CORTEX_HOME", None)
    else:
        os.environ["CORTEX_HOME"] = old
    return Home(info["home"]), str(base / "proj")


@pytest.mark.parametrize("query", ["why did we drop the Redis cache for session tokens", "parser cursor", "SQLite",
                                   "lock the queue worker", "config schema migration fixture"])
@pytest.mark.parametrize("k", [1, 5, 40])
def test_pruned_recall_equals_full_scoring(home, monkeypatch, query, k):
    h, cwd = home
    fast = R.recall(h, query, k=k, cwd=cwd, record_use=False, now=2e9)
    monkeypatch.setattr(R, "_could_reach_top", lambda light, k, m: {rid for _, _, rid in light})
    full = R.recall(h, query, k=k, cwd=cwd, record_use=False, now=2e9)
    assert [x["id"] for x in fast["hits"]] == [x["id"] for x in full["hits"]]
    assert [x["score"] for x in fast["hits"]] == [x["score"] for x in full["hits"]]
    assert len(fast["hits"]) == min(k, len(full["hits"])) and fast["hits"]
