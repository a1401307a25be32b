"""What every benchmark section is given."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class BenchContext:
    endpoint: str  # the DynamoDB Local the models point at
    table_name: str
    region: str
