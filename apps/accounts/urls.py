from django.contrib.auth import views as auth_views
from django.urls import path

from apps.accounts import api, views

app_name = "accounts"

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(template_name="accounts/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("w/<slug:slug>/", views.dashboard, name="dashboard"),
    path("w/<slug:slug>/api-keys/", views.api_keys, name="api_keys"),
    path("w/<slug:slug>/api-keys/<int:key_id>/revoke/", views.api_key_revoke, name="api_key_revoke"),
    path("w/<slug:slug>/members/", views.members, name="members"),
    path("w/<slug:slug>/credentials/", views.credentials, name="credentials"),
    path("w/<slug:slug>/credentials/<int:credential_id>/delete/", views.credential_delete, name="credential_delete"),
]

# Mounted under /api/w/<slug>/ with the namespace "accounts-api".
api_urlpatterns = [
    path("", api.WorkspaceDetailApi.as_view(), name="workspace"),
    path("api-keys", api.ApiKeyListCreateApi.as_view(), name="api_keys"),
    path("api-keys/<int:key_id>/revoke", api.ApiKeyRevokeApi.as_view(), name="api_key_revoke"),
    path("members", api.MemberListApi.as_view(), name="members"),
    path("credentials", api.CredentialListCreateApi.as_view(), name="credentials"),
    path("credentials/<int:credential_id>", api.CredentialDetailApi.as_view(), name="credential"),
]
