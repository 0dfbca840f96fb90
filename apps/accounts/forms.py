from __future__ import annotations

from django import forms

from apps.accounts.models import AuthKind, CredentialKind, KeyScope, Role


class ApiKeyCreateForm(forms.Form):
    name = forms.CharField(max_length=100)
    scope = forms.ChoiceField(choices=KeyScope.choices, initial=KeyScope.WRITE)


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class WorkspaceCreateForm(forms.Form):
    slug = forms.SlugField(max_length=64)
    name = forms.CharField(max_length=200, required=False)


class CredentialCreateForm(forms.Form):
    name = forms.CharField(max_length=100)
    kind = forms.ChoiceField(choices=CredentialKind.choices)
    auth_kind = forms.ChoiceField(choices=AuthKind.choices, initial=AuthKind.API_KEY, label="Auth")
    secret = forms.CharField(widget=forms.PasswordInput(render_value=False), strip=True)
    base_url = forms.URLField(required=False, label="Base URL (custom only)")
