"""The double-click lab (/lab/ and /api/lab/...): races on real DynamoDB, measured, kept and compared.

Everything the lab is lives in this app: the concurrency and metering (``machinery``), its run history and slots
(``models``, loaded by Django's start-up like any app's models), the races (``registration``, ``inventory``), the
techniques they compare (``techniques``, the only home of the deliberately broken ones), its forms, views and URLs.
It is an app of its own because it looks at the other apps side by side: it imports ``registrations`` and
``inventory``, while ``tems`` (the floor they all stand on) imports none of them, nor the lab.
"""
