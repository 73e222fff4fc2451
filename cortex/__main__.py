"""`python -m cortex ...`: the same as the `cortex` command (useful where the scripts are not on PATH)."""
from cortex.cli.main import run

run()
