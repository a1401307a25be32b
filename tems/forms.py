from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User


class SignUpForm(UserCreationForm):
    email = forms.EmailField(required=True, help_text="Your university e-mail address.")

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")
