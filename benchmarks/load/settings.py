"""The deployment's settings (config/settings.py, read from the same environment) plus one
URL: /trivial/, the baseline view the load benchmark serves beside the HIT pages. The
submission rate limits (config/security.py) are off by default: 50 simulated workers on
one address would hit them on purpose. `run.py --rate-limits` counts every submission as
production does, in Redis (CACHE_URL), under limits too high to refuse any
(LOAD_BENCH_RATE_LIMIT)."""

import os

from config.settings import *  # noqa: F403

ROOT_URLCONF = "benchmarks.load.urls"

SUBMIT_RATE_PER_WORKER = SUBMIT_RATE_PER_ADDRESS = int(os.environ.get("LOAD_BENCH_RATE_LIMIT", "0"))
