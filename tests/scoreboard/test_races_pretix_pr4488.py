"""pretix PR #4488: duplicate automatic check-outs."""

from __future__ import annotations

from tests.scoreboard.scenario import Report, not_in_tems

REPORT = Report(
    peer="pretix",
    issue="PR #4488",
    url="https://github.com/pretix/pretix/pull/4488",
    wrong="The automatic check-out at the end of the day could record a check-out more than once for one "
          "ticket.",
    missing="TEMS has no check-out, automatic or manual: the door checks in (once per ticket) and staff may "
            "undo a check-in, so there is nothing to replay.",
)


def test_check_outs_are_not_a_tems_feature():
    not_in_tems(REPORT)
