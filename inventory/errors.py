from tems.errors import DomainError


class InventoryError(DomainError):
    """The one domain error of the inventory app (items, edits, adjustments, imports)."""
