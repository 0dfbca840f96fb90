from __future__ import annotations

from django import forms

from apps.accounts.models import KeyScope, Role


class ApiKeyCreateForm(forms.Form):
    name = forms.CharField(max_length=100)
    scope = forms.ChoiceField(choices=KeyScope.choices, initial=KeyScope.WRITE)


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class WorkspaceCreateForm(forms.Form):
    slug = forms.SlugField(max_length=64)
    name = forms.CharField(max_length=200, required=False)
