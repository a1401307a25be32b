"""The relay's periodic jobs: each app names its own in settings; one failing job stops neither the others nor
the relay."""

from django.core.management import call_command

from tems import outbox


def test_a_failing_job_is_logged_and_the_others_still_run(caplog):
    ran = []

    def broken() -> None:
        raise RuntimeError("boom")

    outcome = outbox.run_periodic_jobs({"first": broken, "second": lambda: ran.append("second")})
    assert outcome == {"first": False, "second": True} and ran == ["second"]
    assert "relay job first failed" in caplog.text


def test_the_configured_jobs_are_the_apps_and_relay_outbox_runs_them(settings, monkeypatch):
    assert "event_reminders" in outbox.configured_periodic_jobs()
    ran = []
    settings.RELAY_PERIODIC_JOBS = {"probe": "tests.tems.test_periodic_jobs.probe"}
    monkeypatch.setattr("tests.tems.test_periodic_jobs.RAN", ran)
    monkeypatch.setattr("tems.management.commands.relay_outbox.outbox_relay", lambda: outbox.RelayReport())
    call_command("relay_outbox")
    assert ran == ["probe"]


RAN: list = []


def probe() -> None:
    RAN.append("probe")
