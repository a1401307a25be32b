from inventory import services
from inventory.errors import InventoryError

# The last column is the keeping team (tems/demo.py's DEMO_TEAMS).
DEMO_ITEMS = (
    ("TSHIRT-M", "Welcome Week T-shirt (M)", "Navy, university logo on the front.", 40, "Store room A, shelf 2",
     "union"),
    ("TSHIRT-L", "Welcome Week T-shirt (L)", "Navy, university logo on the front.", 25, "Store room A, shelf 2",
     "union"),
    ("LANYARD", "Event lanyard", "Blue, with badge clip.", 300, "Reception drawer", "union"),
    ("LABKIT-PY", "Python workshop lab kit", "Raspberry Pi, SD card, cables.", 10, "Computing Lab 2 cupboard",
     "compsoc"),
    ("BADGE-BLANK", "Blank name badge", "Print-your-own, for walk-ins.", 500, "Reception drawer", "union"),
)


def seed_items() -> list[str]:
    """Create the demo items that are missing. The create is conditional, so a second run creates nothing."""
    created = []
    for sku, name, description, quantity, location, team in DEMO_ITEMS:
        try:
            services.item_create(sku=sku, name=name, description=description, quantity=quantity,
                                 location=location, actor="staff", team=team)
        except InventoryError as error:
            if error.code != "conflict":
                raise
        else:
            created.append(sku)
    return created


def seed() -> str:
    """``seed_demo``'s hook: create what is missing, then say how much."""
    return f"{len(seed_items())} inventory item(s)"
