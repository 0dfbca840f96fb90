"""Workspace, API keys and members over the API."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts import serializers, services
from apps.accounts.auth import workspace_of
from apps.accounts.models import ApiKey, Credential, Membership


class WorkspaceDetailApi(APIView):
    @extend_schema(responses=serializers.WorkspaceOutput, operation_id="workspace_get")
    def get(self, request: Request, slug: str) -> Response:
        return Response(serializers.WorkspaceOutput(workspace_of(request)).data)


class ApiKeyListCreateApi(APIView):
    @extend_schema(responses=serializers.ApiKeyOutput(many=True), operation_id="api_keys_list")
    def get(self, request: Request, slug: str) -> Response:
        keys = ApiKey.objects.filter(workspace=workspace_of(request))
        return Response(serializers.ApiKeyOutput(keys, many=True).data)

    @extend_schema(
        request=serializers.ApiKeyCreateInput,
        responses={201: serializers.ApiKeyIssuedOutput},
        operation_id="api_keys_create",
    )
    def post(self, request: Request, slug: str) -> Response:
        if isinstance(request.auth, ApiKey):
            raise exceptions.PermissionDenied("an API key cannot mint API keys; create keys from a logged-in session")
        s = serializers.ApiKeyCreateInput(data=request.data)
        s.is_valid(raise_exception=True)
        issued = services.api_key_create(
            workspace=workspace_of(request),
            created_by=request.user if isinstance(request.user, User) else None,
            **s.validated_data,
        )
        data = dict(serializers.ApiKeyOutput(issued.api_key).data)
        data["key"] = issued.raw
        return Response(data, status=201)


class ApiKeyRevokeApi(APIView):
    @extend_schema(request=None, responses=serializers.ApiKeyOutput, operation_id="api_keys_revoke")
    def post(self, request: Request, slug: str, key_id: int) -> Response:
        api_key = get_object_or_404(ApiKey, pk=key_id, workspace=workspace_of(request))
        return Response(serializers.ApiKeyOutput(services.api_key_revoke(api_key=api_key)).data)


class MemberListApi(APIView):
    @extend_schema(responses=serializers.MemberOutput(many=True), operation_id="members_list")
    def get(self, request: Request, slug: str) -> Response:
        rows = Membership.objects.filter(workspace=workspace_of(request)).select_related("user")
        return Response(serializers.MemberOutput(rows, many=True).data)


class CredentialListCreateApi(APIView):
    @extend_schema(responses=serializers.CredentialOutput(many=True), operation_id="credentials_list")
    def get(self, request: Request, slug: str) -> Response:
        rows = Credential.objects.filter(workspace=workspace_of(request))
        return Response(serializers.CredentialOutput(rows, many=True).data)

    @extend_schema(
        request=serializers.CredentialCreateInput,
        responses={201: serializers.CredentialOutput},
        operation_id="credentials_create",
    )
    def post(self, request: Request, slug: str) -> Response:
        s = serializers.CredentialCreateInput(data=request.data)
        s.is_valid(raise_exception=True)
        credential = services.credential_create(
            workspace=workspace_of(request), by=getattr(request, "membership", None), **s.validated_data
        )
        return Response(serializers.CredentialOutput(credential).data, status=201)


class CredentialDetailApi(APIView):
    @extend_schema(responses=serializers.CredentialOutput, operation_id="credentials_get")
    def get(self, request: Request, slug: str, credential_id: int) -> Response:
        credential = get_object_or_404(Credential, pk=credential_id, workspace=workspace_of(request))
        return Response(serializers.CredentialOutput(credential).data)

    @extend_schema(
        request=serializers.CredentialUpdateInput,
        responses=serializers.CredentialOutput,
        operation_id="credentials_update",
    )
    def patch(self, request: Request, slug: str, credential_id: int) -> Response:
        credential = get_object_or_404(Credential, pk=credential_id, workspace=workspace_of(request))
        s = serializers.CredentialUpdateInput(data=request.data)
        s.is_valid(raise_exception=True)
        credential = services.credential_update(
            credential=credential, by=getattr(request, "membership", None), **s.validated_data
        )
        return Response(serializers.CredentialOutput(credential).data)

    @extend_schema(responses={204: None}, operation_id="credentials_delete")
    def delete(self, request: Request, slug: str, credential_id: int) -> Response:
        credential = get_object_or_404(Credential, pk=credential_id, workspace=workspace_of(request))
        services.credential_delete(credential=credential, by=getattr(request, "membership", None))
        return Response(status=204)
