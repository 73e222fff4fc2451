"""`python -m cortex.bench.devchats`: the developer-chat memory benchmark (see README.md beside this file)."""
import sys

from cortex.bench.devchats.evaluate import main

sys.exit(main())
