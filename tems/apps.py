from django.apps import AppConfig
from django.urls import register_converter


class TemsConfig(AppConfig):
    name = "tems"

    def ready(self) -> None:
        from tems.ids import IdConverter

        # Registered before any URL conf is imported, so every app's urls.py can use <id:...>.
        register_converter(IdConverter, "id")
