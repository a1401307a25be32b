"""The registrations scaling paths do what they claim, and their request count does not grow with n."""

import pytest

from tems.metering import metered
from tests.bench.scaling_registrations import PAGE, PATHS


@pytest.mark.parametrize("name", sorted(PATHS))
def test_one_request_costs_the_same_at_ten_and_at_three_hundred(ddb, db, name):
    counts = {}
    for n in (10, 300):
        call = PATHS[name](n)
        with metered() as meter:
            answer = call()
        if name.startswith("waitlist position (the read alone)"):
            assert answer == n
        else:
            assert answer.status_code == 200, answer.content
            body = answer.json()
            if name.startswith("waitlist position"):
                assert [r["position"] for r in body["registrations"]] == [n]
            else:
                # A full last page may still carry a cursor (DynamoDB says so only when it next reads nothing).
                assert len(next(iter(body.values()))) == min(n, PAGE) and (n <= PAGE or body["next"] is not None)
        counts[n] = meter.total_requests
    assert counts[300] == counts[10]
