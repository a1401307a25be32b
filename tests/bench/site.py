"""URLs of the benchmark's gunicorn: every TEMS URL plus ``/bench/floor``, a view doing one PutItem.

The floor goes through the same middleware (sessions, authentication, CSRF) and the same DynamoDB engine as a
registration, so "registration time / floor time" is the cost of exactly-once itself. It is not in
``tems.urls``: production never serves it.
"""

import uuid

from django.http import HttpRequest, HttpResponse
from django.urls import path
from pynamodb.attributes import UnicodeAttribute
from pynamodb.models import Model

from tems.api import api_view, json_response
from tems.dynamo import TableMeta
from tems.urls import urlpatterns as tems_urlpatterns


class FloorProbe(Model):
    """``BENCH#<uuid>`` / ``FLOOR``: written once per floor request, never read."""

    class Meta(TableMeta):
        pass

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK")

    @classmethod
    def key_for(cls, probe_id: str) -> tuple[str, str]:
        return f"BENCH#{probe_id}", "FLOOR"


@api_view("POST")
def floor(request: HttpRequest) -> HttpResponse:
    probe_id = uuid.uuid4().hex
    # The item serialised by PynamoDB and sent through its connection, as Model.save does, but asking for no
    # consumed capacity, as the registration's transaction does (tems/transactions.py): the PutItem is then
    # the very request its raw counterpart sends, and the difference is the stack alone.
    put = FloorProbe(*FloorProbe.key_for(probe_id)).get_save_kwargs_from_instance()
    FloorProbe._get_connection().connection.dispatch("PutItem", {**put, "ReturnConsumedCapacity": "NONE"})
    return json_response({"probe_id": probe_id}, status=201)


urlpatterns = [path("bench/floor", floor, name="bench_floor"), *tems_urlpatterns]
