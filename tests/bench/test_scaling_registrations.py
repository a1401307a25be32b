"""The registrations scaling paths do what they claim, and their request count does not grow with n."""

import pytest

from tems.dynamo import metered
from tests.bench.scaling_registrations import PATHS


@pytest.mark.parametrize("name", sorted(PATHS))
def test_one_request_costs_the_same_at_ten_and_at_three_hundred(ddb, db, name):
    counts = {}
    for n in (10, 300):
        call = PATHS[name](n)
        with metered() as meter:
            response = call()
        assert response.status_code == 200, response.content
        body = response.json()
        if name == "waitlist position":
            assert [r["position"] for r in body["registrations"]] == [n]
        else:
            assert len(next(iter(body.values()))) == min(n, 20) and (body["next"] is None) == (n <= 20)
        counts[n] = meter.total_requests
    assert counts[300] == counts[10]
