"""Waitlist offers: a freed seat held for the head of the line, accepted or declined (see docs/offers.md)."""
