"""How the fuzz properties run: their example budget, one savepoint per example, and the
rows a HIT submission may write."""

import os
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction
from hypothesis import HealthCheck, Phase, settings

from crowd.models import Assignment, Comparison, LikertLabel, Worker

# Function-scoped fixtures (the database, a campaign) are shared by every example of a
# property; `isolated()` rolls each example back, so sharing them is intended.
_HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]
# No explain phase: on a failure it reruns the example hundreds of times for little news.
# FUZZ_EXAMPLES sets the budget (90 in the suite; e.g. FUZZ_EXAMPLES=1000 for a long hunt).
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "90"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=_HEALTH,
    print_blob=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)
# Properties whose examples go through the whole HTTP stack or write files.
FUZZ_SLOW = settings(FUZZ, max_examples=max(EXAMPLES * 2 // 3, 10))

ON_POSTGRESQL = connection.vendor == "postgresql"


@contextmanager
def isolated() -> Iterator[None]:
    """Run one example in a savepoint and roll it back, whatever the example did."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def answer_counts() -> dict[str, int]:
    """Everything a HIT submission may write."""
    return {model.__name__: model.objects.count() for model in (Worker, Assignment, LikertLabel, Comparison)}
