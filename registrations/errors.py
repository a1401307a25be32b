from tems.errors import DomainError


class RegistrationError(DomainError):
    """The one domain error of the registrations app (events, registrations, waitlist)."""
