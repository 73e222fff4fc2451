"""`python -m cortex.bench`: the hot-path benchmark (see cortex/bench/run.py)."""
import sys

from cortex.bench.run import main

sys.exit(main())
