"""One error shape for the whole API: ``{"error": "<what is wrong>", "field": "<dotted path>"}``
(``field`` only when one field is at fault; 403s also carry ``role``). Bad input is a 4xx,
never a 500: the domain's own errors (GoalError, SpaceError, GuidanceError) are mapped
here, with the field they name."""
from __future__ import annotations

import json
import math
import re

from django.core.exceptions import ObjectDoesNotExist
from django.http import Http404
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from int21web.accounts.roles import RoleError
from int21web.runs.services import RunStateError
from swarm.goals import GoalError
from swarm.guidance import GuidanceError
from swarm.space import SpaceError


class ApiError(Exception):
    def __init__(self, status: int, error: str, field: str | None = None, **extra):
        super().__init__(error)
        self.status, self.error, self.field, self.extra = status, error, field, extra

    def body(self) -> dict:
        out = {"error": self.error}
        if self.field:
            out["field"] = self.field
        return {**out, **self.extra}


def not_found(what: str, pk) -> ApiError:
    return ApiError(404, f"no {what} {pk}")


_FIELD = re.compile(r"^([A-Za-z_]\w*(?:\.\w+)*): (.+)$", re.S)


def split_field(message: str) -> tuple[str | None, str]:
    """``"space.constraints.0.expr: unknown name"`` → ("space.constraints.0.expr", message)."""
    m = _FIELD.match(message)
    if not m:
        return None, message
    return m.group(1).replace("space.space", "space"), message


_SOURCES = ("body", "query", "path", "header", "cookie", "form", "file")
_TYPE_TAGS = {"str", "int", "float", "bool", "none", "dict", "list"}


def loc_field(loc) -> str:
    """ninja's ("body", "payload", "space", "params", 0, "low") → "space.params.0.low"; the
    union-member tags pydantic inserts ("list[int]", "str") are dropped."""
    parts = [str(p) for p in loc]
    if parts and parts[0] in _SOURCES:
        source, parts = parts[0], parts[1:]
        if source == "body" and parts and parts[0] == "payload":
            parts = parts[1:]
    return ".".join(p for p in parts if "[" not in p and p not in _TYPE_TAGS)


def _nul_free(value, where: str = "") -> None:
    """PostgreSQL refuses NUL in text and JSONB: such input is a 400, not a database error."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError(f"{where or 'a value'}: text may not contain NUL characters")
    elif isinstance(value, dict):
        for k, v in value.items():
            _nul_free(k, where)
            _nul_free(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _nul_free(v, f"{where}.{i}" if where else str(i))


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def _finite(text):
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text} is too large for a number")
    return value


def strict_json(text):
    """JSON as PostgreSQL stores it: no NaN/Infinity (Python's json would accept them), no NUL.
    Raises ValueError (json.JSONDecodeError for malformed text)."""
    data = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    _nul_free(data)
    return data


class StrictParser(Parser):
    def parse_body(self, request):
        return strict_json(request.body)

    def parse_querydict(self, data, list_fields, request):
        out = super().parse_querydict(data, list_fields, request)
        try:
            _nul_free(out)
        except ValueError as exc:
            raise ApiError(400, str(exc), field=str(exc).split(":")[0]) from None
        return out


def install(api) -> None:
    """Register the handlers on a NinjaAPI."""

    def respond(request, status: int, body: dict):
        return api.create_response(request, body, status=status)

    @api.exception_handler(ApiError)
    def _api_error(request, exc: ApiError):
        return respond(request, exc.status, exc.body())

    @api.exception_handler(ValidationError)
    def _validation(request, exc: ValidationError):
        errors = [{"field": loc_field(e.get("loc", ())), "error": e.get("msg", "invalid")} for e in exc.errors]
        first = errors[0] if errors else {"field": "", "error": "invalid input"}
        body = {"error": f"{first['field']}: {first['error']}" if first["field"] else first["error"]}
        if first["field"]:
            body["field"] = first["field"]
        body["errors"] = errors
        return respond(request, 400, body)

    @api.exception_handler(AuthenticationError)
    def _anonymous(request, exc):
        return respond(request, 401, {"error": "authentication required: log in, or send "
                                               "'Authorization: Bearer <token>' (manage.py api_token USER)"})

    @api.exception_handler(RoleError)
    def _role(request, exc: RoleError):
        m = re.search(r"needs the (\w+) role", str(exc))
        return respond(request, 403, {"error": str(exc), **({"role": m.group(1)} if m else {})})

    @api.exception_handler(HttpError)
    def _http(request, exc: HttpError):
        body = {"error": str(exc)}
        if str(exc).startswith("Cannot parse request body"):
            cause = exc.__cause__
            if isinstance(cause, ValueError) and not isinstance(cause, json.JSONDecodeError):
                field, _ = split_field(str(cause))      # NUL in a value: name where it is
                body = {"error": str(cause), "field": field or "body"}
            else:
                body = {"error": f"the body is not valid JSON: {cause or exc}", "field": "body"}
        return respond(request, exc.status_code, body)

    @api.exception_handler(Http404)
    def _404(request, exc):
        return respond(request, 404, {"error": str(exc) or "not found"})

    @api.exception_handler(ObjectDoesNotExist)
    def _missing(request, exc):
        return respond(request, 404, {"error": str(exc) or "not found"})

    @api.exception_handler(RunStateError)
    def _state(request, exc: RunStateError):
        return respond(request, 409, {"error": str(exc), "field": exc.field})

    @api.exception_handler(GoalError)
    def _goal(request, exc: GoalError):
        return respond(request, 400, {"error": str(exc), "field": exc.field})

    @api.exception_handler(SpaceError)
    def _space(request, exc: SpaceError):
        return respond(request, 400, {"error": str(exc), "field": f"space.{exc.field}".replace("space.space", "space")})

    @api.exception_handler(GuidanceError)
    def _guidance(request, exc: GuidanceError):
        field, _ = split_field(str(exc))
        return respond(request, 400, {"error": str(exc), "field": field or "op"})
