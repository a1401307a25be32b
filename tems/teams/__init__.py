"""Organizer teams: who belongs to which team in which role, and which door volunteer is at which event. The
rules of what each role may do are in tems.permissions; the rows live in Django's database (tems.models)."""
