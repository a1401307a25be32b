"""The double-click lab (/lab/ and /api/lab/...): races on real DynamoDB, measured, kept and compared.

Everything the lab is lives in this package: the concurrency and metering (``machinery``), its run history and
slots (``models``), the races (``registration``, ``inventory``), the techniques they compare (``techniques``, the
only home of the deliberately broken ones), its forms, views and URLs. It is the one place under ``tems`` that
imports the apps: the rest of ``tems`` is the floor the apps stand on. Nothing is imported here, so that
``tems.models`` can load ``tems.lab.models`` without pulling in the apps.
"""
