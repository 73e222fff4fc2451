"""What `pip install .` ships: every data file exists, and the demo's transcripts are among them."""
import configparser
import os

from cortex.cli.demo import DEMO_SESSIONS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def data_files():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    out = {}
    for target, value in cfg["options.data_files"].items():
        out[target] = [v.strip() for v in value.replace("\n", ",").split(",") if v.strip()]
    return out


def test_every_data_file_exists():
    for target, files in data_files().items():
        for f in files:
            assert os.path.isfile(os.path.join(ROOT, f)), (target, f)


def test_the_demo_sessions_are_installed_with_their_sources():
    shipped = data_files()
    assert "tests/fixtures/transcripts/SOURCES.md" in shipped["share/cortex/demo"]
    for rel, _client in DEMO_SESSIONS:
        target = "share/cortex/demo/" + rel
        assert target in shipped, "the demo session %s is not installed" % rel
        folder = os.path.join(ROOT, "tests", "fixtures", "transcripts", rel)
        biggest = max((f for f in os.listdir(folder) if f.endswith((".jsonl", ".json")) and not f.startswith("agent-")),
                      key=lambda f: os.path.getsize(os.path.join(folder, f)))
        assert "tests/fixtures/transcripts/%s/%s" % (rel, biggest) in shipped[target]


def test_schemas_are_installed():
    shipped = data_files()["share/cortex/schemas"]
    for name in os.listdir(os.path.join(ROOT, "schemas")):
        assert "schemas/" + name in shipped


def test_python_dash_m_cortex_runs_the_cortex_command(tmp_path):
    """`python -m cortex` is the `cortex` command: a real command against a fresh home, its output and code."""
    import subprocess
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, CORTEX_HOME=str(tmp_path / "home with space"), PYTHONPATH=repo, NO_COLOR="1")
    ok = subprocess.run([sys.executable, "-m", "cortex", "status", "--json"], env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    import json
    assert json.loads(ok.stdout)["home"] == str(tmp_path / "home with space")
    bad = subprocess.run([sys.executable, "-m", "cortex", "show", "zzzz"], env=env, capture_output=True, text=True)
    assert bad.returncode != 0 and bad.stderr.strip() and "Traceback" not in bad.stderr
