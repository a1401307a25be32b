from django.apps import AppConfig


class RegistrationsConfig(AppConfig):
    name = "registrations"

    def ready(self) -> None:
        # Each feature keeps its items in its own models module; Django imports only ``registrations.models``, so
        # the others are loaded here, and ``tems.dynamo.table_models()`` (table creation, configuration, metering)
        # finds every model of the table before the first request.
        from registrations.checkins import models as checkins_models  # noqa: F401
        from registrations.events import models as events_models  # noqa: F401
        from registrations.messages import models as messages_models  # noqa: F401
        from registrations.offers import models as offers_models  # noqa: F401
        from registrations.privacy import models as privacy_models  # noqa: F401
        from registrations.questions import models as questions_models  # noqa: F401
        from registrations.reports import models as reports_models  # noqa: F401
        from registrations.seating import models as seating_models  # noqa: F401
