"""The endpoint's meter (rehearsal/localturk/meter.py): calls per operation, calls in flight
and CPU per call, read and reset over HTTP; nothing else is accepted."""

import pytest
import requests

pytestmark = pytest.mark.mturk


def test_the_meter_counts_each_call_and_its_cpu_and_resets(live_server, mturk_factory):
    url = f"{live_server.url}/localturk/_control/calls"
    client = mturk_factory(attempts=1)
    assert requests.delete(url, timeout=10).status_code == 204

    client.get_account_balance()
    client.get_account_balance()
    figures = requests.get(url, timeout=10).json()
    forged = requests.post(url, json={"calls": 0, "peak_in_flight": 0}, timeout=10)
    requests.delete(url, timeout=10)
    after = requests.get(url, timeout=10).json()

    assert figures["calls"] == 2 and figures["in_flight"] == 0 and figures["peak_in_flight"] == 1
    assert figures["operations"]["GetAccountBalance"]["calls"] == 2
    assert figures["cpu_ms_per_call"] > 0
    assert forged.status_code == 405  # read and reset only
    assert (after["calls"], after["peak_in_flight"], after["operations"]) == (0, 0, {})
