"""The audit log: who changed what in an event, an item or a team, and who read whose personal data.

A staff change adds its one entry to the transaction that makes the change (``add_entry``), so the log and the
state cannot disagree and a replayed tap, answered from its record before any transaction, adds none. A read of
personal data writes one entry of its own (``record_read``). The person acting is an ``Actor``, built once per
request (``actor_of``); the log holds their immutable key, never a name (docs/audit.md).
"""

from tems.audit.actors import Actor, actor_of
from tems.audit.services import add_entry, record_read

__all__ = ["Actor", "actor_of", "add_entry", "record_read"]
