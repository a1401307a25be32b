"""tems.metering.metered(): nested meters both count, and hooking a client twice does not count twice."""

from pynamodb.exceptions import DoesNotExist

from inventory.models import InventoryItem
from tems.metering import meter_client, metered


def read_missing_item() -> None:
    try:
        InventoryItem.get(*InventoryItem.key_for("nothing-here"), consistent_read=True)
    except DoesNotExist:
        pass


def test_inner_meter_counts_flow_to_the_outer_one(moto_ddb):
    with metered() as outer:
        read_missing_item()
        with metered() as inner:
            read_missing_item()
    assert inner.requests == {"GetItem": 1}
    assert outer.requests == {"GetItem": 2}


def test_hooking_a_client_again_does_not_double_count(moto_ddb):
    client = InventoryItem._get_connection().connection.client
    with metered():
        pass
    client._tems_metered = False  # as if a second thread raced past the flag on a fresh client
    meter_client(client)
    with metered() as meter:
        read_missing_item()
    assert meter.requests == {"GetItem": 1}
