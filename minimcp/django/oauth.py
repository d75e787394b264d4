"""Sign in with the project's own login (``MINIMCP = {"OAUTH": True}``): the Django side of
``minimcp.hosts.site_auth``.

Registered clients and grants live in the project's database (``OAuthClient``, ``OAuthGrant``,
digests only; delete a grant in the admin to sign that client out). The pending request is signed
with ``SECRET_KEY`` (``django.core.signing``). The consent page is the template
``minimcp/consent.html``, rendered behind ``LOGIN_URL`` and CSRF-protected by its own view
(``csrf_protect``, with or without the project's ``CsrfViewMiddleware``); a project overrides it
like any app template.
"""

from __future__ import annotations

import datetime
import io
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.views import redirect_to_login
from django.core import signing
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.template import TemplateDoesNotExist, loader
from django.template.backends.django import DjangoTemplates
from django.utils.cache import add_never_cache_headers
from werkzeug.wrappers import Request

from minimcp.hosts.hosted import display_name, for_the_asker_only, principal_of
from minimcp.server.edges.http import errors
from minimcp.hosts.site_auth import (
    MAX_UNUSED_CLIENTS,
    TEMPLATES,
    UNUSED_CLIENT_LIFETIME,
    Grant,
    GrantKey,
    SiteAuthorizationServer,
    registration_limiter,
)
from minimcp.shared.auth import OAuthClientInformationFull

_SALT = "minimcp.oauth.consent"
_CONSENT_TEMPLATE = "minimcp/consent.html"
#: The engine that reads the default consent page; the project's own engines are asked first.
_DEFAULT_PAGES = DjangoTemplates({"NAME": "minimcp", "DIRS": [TEMPLATES], "APP_DIRS": False, "OPTIONS": {}})
#: Registrations per client address, counted in this process (one project per process).
_REGISTRATIONS = registration_limiter()


class DatabaseGrantStore:
    """``GrantStore`` on the app's models; ``update_grant`` is one conditional UPDATE, so the
    database decides which of two racing requests spends a code.

    Registration is anonymous, so a client no user has allowed (``used`` false) expires after
    ``UNUSED_CLIENT_LIFETIME`` and at most ``MAX_UNUSED_CLIENTS`` of them are kept, the oldest going
    first; each new registration and each grant sweeps what is dead."""

    def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        from minimcp.django.models import OAuthClient

        row = OAuthClient.objects.filter(Q(used=True) | Q(created__gt=_unused_cutoff()), client_id=client_id).first()
        return None if row is None else OAuthClientInformationFull.model_validate(row.registration)

    def add_client(self, client: OAuthClientInformationFull) -> None:
        from minimcp.django.models import OAuthClient

        unused = OAuthClient.objects.filter(used=False)
        unused.filter(created__lte=_unused_cutoff()).delete()
        surplus = unused.order_by("-created", "-pk").values_list("pk", flat=True)[MAX_UNUSED_CLIENTS - 1:]
        OAuthClient.objects.filter(pk__in=list(surplus), used=False).delete()
        OAuthClient.objects.create(client_id=client.client_id, name=client.client_name or "",
                                   registration=client.model_dump(mode="json", exclude_none=True))

    def add_grant(self, grant: Grant) -> None:
        from minimcp.django.models import OAuthClient, OAuthGrant

        now = datetime.datetime.now(datetime.timezone.utc)
        OAuthGrant.objects.filter(Q(code_used=False, code_expires_at__lt=now) | Q(
            code_used=True, access_expires_at__lt=now, refresh_expires_at__lt=now)).delete()
        fields = _columns({name: getattr(grant, name) for name in Grant.__dataclass_fields__})
        fields.pop("client_id")
        OAuthClient.objects.filter(client_id=grant.client_id).update(used=True)
        OAuthGrant.objects.create(client=OAuthClient.objects.get(client_id=grant.client_id),
                                  user_id=fields.pop("subject"), **fields)

    def find_grant(self, key: GrantKey, value: str) -> Grant | None:
        from minimcp.django.models import OAuthGrant

        row = OAuthGrant.objects.select_related("client").filter(**{key: value}).first()
        if row is None:
            return None
        return Grant(
            client_id=row.client.client_id, subject=str(row.user_id), scopes=row.scope.split(), resource=row.resource,
            redirect_uri=row.redirect_uri, redirect_uri_provided_explicitly=row.redirect_uri_provided_explicitly,
            code_challenge=row.code_challenge, code_digest=row.code_digest,
            code_expires_at=row.code_expires_at.timestamp(), code_used=row.code_used,
            access_digest=row.access_digest, access_expires_at=_seconds(row.access_expires_at),
            refresh_digest=row.refresh_digest, refresh_expires_at=_seconds(row.refresh_expires_at))

    def update_grant(self, key: GrantKey, value: str, expected: dict[str, Any], changes: dict[str, Any]) -> bool:
        from minimcp.django.models import OAuthGrant

        return OAuthGrant.objects.filter(**{key: value, **_columns(expected)}).update(**_columns(changes)) == 1

    def delete_grant(self, key: GrantKey, value: str) -> None:
        from minimcp.django.models import OAuthGrant

        OAuthGrant.objects.filter(**{key: value}).delete()


def _unused_cutoff() -> datetime.datetime:
    """Clients registered before this instant and never allowed have expired."""
    return datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=UNUSED_CLIENT_LIFETIME)


def _columns(fields: dict[str, Any]) -> dict[str, Any]:
    """A grant's fields as the model's columns: scopes space-separated, instants as datetimes."""
    columns = dict(fields)
    if "scopes" in columns:
        columns["scope"] = " ".join(columns.pop("scopes"))
    for name, value in columns.items():
        if name.endswith("_expires_at") and value is not None:
            columns[name] = datetime.datetime.fromtimestamp(value, datetime.timezone.utc)
    return columns


def _seconds(moment: datetime.datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


class _Signer:
    def sign(self, data: dict[str, Any]) -> str:
        return signing.dumps(data, salt=_SALT, compress=True)

    def unsign(self, text: str, max_age: int) -> dict[str, Any] | None:
        try:
            data = signing.loads(text, salt=_SALT, max_age=max_age)
        except signing.BadSignature:
            return None
        return data if isinstance(data, dict) else None


def authorization_server(request: HttpRequest, endpoint_path: str, name: str | None) -> SiteAuthorizationServer:
    """The project's authorization server as this request reaches it (its scheme and host)."""
    return SiteAuthorizationServer(DatabaseGrantStore(), _Signer(), request.build_absolute_uri("/"), endpoint_path,
                                   name, _REGISTRATIONS)


def token_user(server: SiteAuthorizationServer, token: str) -> Any:
    """The active user an access token of this site acts as, or ``None``."""
    access = server.load_access_token(token)
    if access is None or access.subject is None:
        return None
    return get_user_model()._default_manager.filter(pk=access.subject, is_active=True).first()


def answer(server: SiteAuthorizationServer, request: HttpRequest) -> HttpResponse:
    """One of the AS tier's endpoints or metadata documents, through its werkzeug handler; the
    documents name the request's host (``ALLOWED_HOSTS`` vets it, but may be ``*``): private."""
    environ = {**request.META, "wsgi.input": io.BytesIO(request.body), "CONTENT_LENGTH": str(len(request.body))}
    reply = server.answer(Request(environ))
    if reply is None:
        return HttpResponse("Not found", status=errors.NotFound.status, content_type="text/plain")
    for_the_asker_only(reply)
    response = HttpResponse(reply.get_data(), status=reply.status_code)
    for name, value in reply.headers.items():
        response[name] = value
    return response


def _consent_page() -> Any:
    """The project's ``minimcp/consent.html`` when it has one, else the default both hosts share
    (``minimcp/templates``, outside this app's folder, so an engine of our own reads it)."""
    try:
        return loader.get_template(_CONSENT_TEMPLATE)
    except TemplateDoesNotExist:
        return _DEFAULT_PAGES.get_template(_CONSENT_TEMPLATE)


def consent(server: SiteAuthorizationServer, request: HttpRequest) -> HttpResponse:
    """The page where a signed-in user allows or denies an MCP client (CSRF: ``csrf_protect`` in ``MCP.urls``)."""
    sealed = request.POST.get("request", "") if request.method == "POST" else request.GET.get("request", "")
    pending = server.pending(sealed)
    if pending is None:
        return HttpResponse("This sign-in link has expired or was changed. Start again from your MCP client.",
                            status=errors.BadHostRequest.status, content_type="text/plain; charset=utf-8")
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if request.method == "POST":
        allowed = request.POST.get("decision") == "allow"
        # Not HttpResponseRedirect: a native client's redirect URI may have a scheme of its own.
        response = HttpResponse(status=errors.REDIRECT)
        response["Location"] = server.decide(pending, principal_of(request.user) if allowed else None)
    else:
        response = HttpResponse(_consent_page().render({
            "pending": pending, "sealed": sealed, "user": request.user, "username": display_name(request.user),
            "site": request.get_host(), "csrf_field": "csrfmiddlewaretoken", "csrf_token": get_token(request),
        }, request))
        response["X-Frame-Options"] = "DENY"
    add_never_cache_headers(response)
    return response
