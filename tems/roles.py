"""The roles a member holds in an organizer team, and the words pages show for them (tems.permissions says
what each may do; tems.models.Membership stores one per person per team)."""

TEAM_ADMIN = "team_admin"
EVENT_MANAGER = "event_manager"
DOOR_VOLUNTEER = "door_volunteer"
INVENTORY_KEEPER = "inventory_keeper"
VIEWER = "viewer"

# In the order the team page offers them, with the words it shows.
ROLES: dict[str, str] = {
    TEAM_ADMIN: "Team admin",
    EVENT_MANAGER: "Event manager",
    DOOR_VOLUNTEER: "Door volunteer",
    INVENTORY_KEEPER: "Inventory keeper",
    VIEWER: "Viewer",
}
