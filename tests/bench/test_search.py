"""The search section's paths do what they claim: every page answers, the rare word's first page holds its three
events, and a page sends as many requests at 300 events as at 10 (the section measures 100 and 10,000)."""

import pytest

from tems.metering import metered
from tests.bench import search


@pytest.mark.django_db
def test_each_path_costs_the_same_requests_at_ten_and_at_three_hundred_events(ddb):
    requests: dict[int, dict[str, int]] = {}
    for n in (10, 300):
        # Each size on an emptied table: the module's table is shared by its tests.
        for model in (search.Event, search.EventFacet, search.SeatShard):
            with model.batch_write() as batch:
                for item in model.scan():
                    batch.delete(item)
        search.seed(n)
        requests[n] = {}
        for name, (url, user) in search.PATHS.items():
            client = search._client(user)
            with metered() as meter:
                response = client.get(url)
            assert response.status_code == 200, (name, response.content[:300])
            requests[n][name] = meter.total_requests
        found = search._client("bench-student").get(f"/api/events?q={search.RARE}").json()["events"]
        assert sorted(event["id"] for event in found) == [f"bench{number:06d}" for number in search.RARE_EVENTS
                                                           if number < n]
    assert requests[300] == requests[10]
