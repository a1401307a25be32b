"""Approval of society events: a team whose events need approval creates drafts, and an approver of the team that
oversees it publishes each with one conditional write (docs/registrations.md, "Drafts and approval")."""
