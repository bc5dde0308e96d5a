"""The deployment's settings (config/settings.py, read from the same environment) plus one
URL: /trivial/, the baseline view the load benchmark serves beside the HIT pages. The
submission rate limits (config/security.py) are off: 50 simulated workers on one address
would hit them on purpose, and the benchmark measures the HIT path itself; the limiter's
cost is, per limit, an add and an increment in the shared cache."""

from config.settings import *  # noqa: F401,F403

ROOT_URLCONF = "benchmarks.load.urls"

SUBMIT_RATE_PER_WORKER = 0
SUBMIT_RATE_PER_ADDRESS = 0
