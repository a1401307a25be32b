"""Staff reports of an event: figures kept as counters by the transactions that change them (docs/reports.md)."""
