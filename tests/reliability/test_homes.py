"""A home copied or moved elsewhere: its commands touch only its own files (issue #18, defect 1).

The index once stored absolute record paths, so after `cp -a A B` a `forget --hard` run in B deleted A's
record and left B's, and after `mv A D` it found nothing to delete.
"""
from __future__ import annotations

import os
import shutil
import sqlite3

from cortex.ops import manage
from cortex_testkit import feed, normalize

from .helpers import cortex_cli, record_files, report


def _home_with_records(tmp_path):
    from cortex.core.home import Home
    home = Home(str(tmp_path / "A"))
    feed(home, "cc-2.0.64", dest=tmp_path / "client")
    normalize(home)
    files = record_files(home)
    assert files
    return home, files


def _word_of_one_record(home):
    """A word that names exactly one indexed record."""
    con = sqlite3.connect(home.index_db)
    try:
        row = con.execute("SELECT p.term, p.id FROM postings p JOIN terms t ON t.term=p.term "
                          "WHERE t.df=1 AND length(p.term) > 5 ORDER BY p.term LIMIT 1").fetchone()
    finally:
        con.close()
    assert row
    return row


def _forget_hard(home_root, word):
    from cortex.core.home import Home
    h = Home(str(home_root))
    targets, _ = manage.find_targets(h, word, scope="all", hard=True)
    return manage.forget(h, targets, hard=True)


def test_forget_hard_in_a_copied_home_deletes_in_the_copy_only(tmp_path):
    a, files = _home_with_records(tmp_path)
    word, rid = _word_of_one_record(a)
    b = tmp_path / "B"
    shutil.copytree(a.root, b, symlinks=True)  # cp -a
    out = _forget_hard(b, word)
    from cortex.core.home import Home
    after_a, after_b = record_files(a), record_files(Home(str(b)))
    report("copied_home_forget", deleted=len(out), records_a=len(after_a), records_b=len(after_b))
    assert [s["id"] for s in out] == [rid]
    assert after_a == files, "forget in the copy changed the original home"
    assert len(after_b) == len(files) - 1 and not any(rid in p for p in after_b)


def test_forget_hard_in_a_moved_home_finds_and_deletes_the_record(tmp_path):
    a, files = _home_with_records(tmp_path)
    word, rid = _word_of_one_record(a)
    d = tmp_path / "D"
    os.rename(a.root, d)  # mv A D
    out = _forget_hard(d, word)
    from cortex.core.home import Home
    after = record_files(Home(str(d)))
    assert [s["id"] for s in out] == [rid]
    assert len(after) == len(files) - 1 and not any(rid in p for p in after)


def test_the_index_stores_record_paths_relative_to_the_home(tmp_path):
    a, _ = _home_with_records(tmp_path)
    con = sqlite3.connect(a.index_db)
    try:
        paths = [r[0] for r in con.execute("SELECT path FROM records")]
    finally:
        con.close()
    assert paths and not [p for p in paths if os.path.isabs(p) or a.root in p]
    # and a full rebuild too
    r = cortex_cli(a, "reindex")
    assert r.returncode == 0, r.stderr
    con = sqlite3.connect(a.index_db)
    try:
        paths = [r[0] for r in con.execute("SELECT path FROM records")]
    finally:
        con.close()
    assert paths and not [p for p in paths if os.path.isabs(p)]


def test_an_old_index_with_absolute_paths_of_another_home_never_touches_that_home(tmp_path):
    """An index written before relative paths, copied with its home: its absolute paths name the other
    home; reading them must resolve inside this home."""
    a, files = _home_with_records(tmp_path)
    word, rid = _word_of_one_record(a)
    con = sqlite3.connect(a.index_db)
    con.execute("UPDATE records SET path=? || '/' || path", (a.root,))
    con.commit()
    con.close()
    b = tmp_path / "B"
    shutil.copytree(a.root, b, symlinks=True)
    out = _forget_hard(b, word)
    from cortex.core.home import Home
    assert [s["id"] for s in out] == [rid]
    assert record_files(a) == files
    assert len(record_files(Home(str(b)))) == len(files) - 1


def test_forget_refuses_a_path_outside_the_home(tmp_path):
    a, _ = _home_with_records(tmp_path)
    outside = tmp_path / "outside.md"
    outside.write_text("keep me")
    rec = {"id": "r0123456789abcdef", "scope": "L0", "scope_id": "x", "type": "learned", "text": "t"}
    try:
        manage.forget(a, [(rec, str(outside))], hard=True)
    except Exception:
        pass
    assert outside.read_text() == "keep me"
