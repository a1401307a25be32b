"""pretalx #2393: an access code redeemed more often than allowed under near-simultaneous use."""

from __future__ import annotations

from tests.scoreboard.scenario import Report, not_in_tems

REPORT = Report(
    peer="pretalx",
    issue="#2393",
    url="https://github.com/pretalx/pretalx/issues/2393",
    wrong="An access code limited to a number of uses was redeemed more often than allowed when used at nearly "
          "the same time.",
    missing="TEMS has no access codes (every registration is open to any signed-in student), so there is "
            "nothing to replay.",
)


def test_access_codes_are_not_a_tems_feature():
    not_in_tems(REPORT)
