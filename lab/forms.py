"""The lab's two races, from the page and from the API alike; the technique choices come from the registries."""

from django import forms

from lab.techniques import inventory, registration


class RegistrationRaceForm(forms.Form):
    API_FIELDS = ("records_created", "distinct_registration_ids", "claims", "counter", "responses",
                  "dynamodb_requests", "consumed_wcu", "elapsed_ms")

    technique = forms.ChoiceField(choices=[(name, registration.TECHNIQUES[name].label)
                                           for name in registration.RACE_TECHNIQUES])
    taps = forms.IntegerField(min_value=1, max_value=100, initial=10, help_text="1 to 100 taps, fired at once.")
    same_key = forms.BooleanField(required=False, label="All taps share one idempotency key (network retries)",
                                  help_text="Unticked: each tap makes its own key, as double clicks do.")
    latency_ms = forms.IntegerField(min_value=0, max_value=200, initial=20, label="Simulated network delay (ms)",
                                    help_text="0 to 200 ms between the handler's read and its write.")


class LostUpdateForm(forms.Form):
    API_FIELDS = ("expected_quantity", "final_quantity", "lost_units", "conflicts", "retries", "elapsed_ms")

    technique = forms.ChoiceField(choices=[(t.name, t.label) for t in inventory.TECHNIQUES.values()])
    writers = forms.IntegerField(min_value=1, max_value=50, initial=10, help_text="1 to 50 writers at once.")
    units_each = forms.IntegerField(min_value=1, max_value=20, initial=2, label="Units each writer sells",
                                    help_text="1 to 20.")
