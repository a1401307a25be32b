"""Check-in at the door: signed tickets, one admission per ticket, decided by DynamoDB (see docs/checkins.md)."""
