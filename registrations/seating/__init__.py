"""Seating: how a hot event hands out its seats and its waiting list without queueing on one item.

Read in this order (docs/registrations.md has the measurements and the designs rejected); ``models`` holds the
items they write (``SeatShard``, ``SeatGate``, ``WaitlistQueue``, ``WaitlistDepartures``):

- ``shards``: an event's capacity split over seat shards (``SeatShard``), the student's first shard, the reads
  of the shards and a re-slicing added to a caller's transaction.
- ``gate``: the waiting list's gate (``SeatGate``) and each lane's copy of it: someone waits => every shard full.
- ``lanes``: each shard is also a lane of the waiting list; lanes hand out tickets in blocks claimed from the
  event's queue item.
- ``positions``: a ticket's place in the waiting list, from a tree of departure counters and the unused tickets.
- ``router``: one registration request's route, round by round: which shard to try, when to close the gate,
  which lane to join. It owns its state; the transactions themselves are built in
  ``registrations.services.create``.
- ``hints``: what this process has seen of events' seats, one bounded object (``hints``) with one ``reset()``.

This package never imports ``registrations.services``: the services compose its pieces into transactions, and
hand the router what it needs of them (finishing a promotion).
"""
