"""A small pet shop REST API with its OpenAPI 3 document at ``/openapi.json``, for
``examples/openapi_server.py`` to turn into MCP tools.

Run it with ``python examples/petstore_api.py [--port 0]``; it prints where it serves. Writing
(``POST``/``DELETE``) needs ``Authorization: Bearer <TOKEN>`` (``--token``, default ``pet-secret``).
"""

from __future__ import annotations

import argparse
import json
import threading
from typing import Any, Callable

from werkzeug.exceptions import HTTPException, NotFound
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

PET = {"type": "object", "required": ["id", "name", "species"], "properties": {
    "id": {"type": "integer", "readOnly": True},
    "name": {"type": "string", "description": "What the pet answers to", "minLength": 1},
    "species": {"type": "string", "enum": ["cat", "dog", "fish"]},
    "age": {"type": "integer", "minimum": 0, "nullable": True},
    "category": {"$ref": "#/components/schemas/Category"},
}}
CATEGORY = {"type": "object", "properties": {"name": {"type": "string"},
                                             "parent": {"$ref": "#/components/schemas/Category"}}}


def _error(text: str) -> dict[str, Any]:
    return {"description": text, "content": {"application/json": {"schema": {"type": "object"}}}}


SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Pet shop", "version": "1.0"},
    "servers": [{"url": "/v1"}],
    "paths": {
        "/pets": {
            "get": {"operationId": "listPets", "tags": ["pets"], "summary": "List the pets",
                    "parameters": [
                        {"name": "species", "in": "query", "schema": {"type": "string", "enum": ["cat", "dog", "fish"]}},
                        {"name": "limit", "in": "query", "description": "How many at most",
                         "schema": {"type": "integer", "minimum": 1, "default": 20}}],
                    "responses": {"200": {"description": "The pets"}}},
            "post": {"operationId": "addPet", "tags": ["pets"], "summary": "Add a pet",
                     "requestBody": {"required": True,
                                     "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
                     "responses": {"201": {"description": "Added"}, "401": _error("Not signed in")}},
        },
        "/pets/{petId}": {
            "parameters": [{"name": "petId", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "get": {"operationId": "getPet", "tags": ["pets"], "summary": "One pet",
                    "responses": {"200": {"description": "The pet"}, "404": _error("No such pet")}},
            "delete": {"operationId": "deletePet", "tags": ["admin"], "summary": "Remove a pet",
                       "responses": {"204": {"description": "Removed"}}},
        },
        "/notes/{name}": {
            "get": {"operationId": "readNote", "tags": ["debug"], "summary": "Echo a note's name and a header",
                    "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},
                                   {"name": "X-Request-Id", "in": "header", "schema": {"type": "string"}}],
                    "responses": {"200": {"description": "What arrived"}}},
        },
        "/crash": {
            "get": {"operationId": "crash", "tags": ["debug"], "summary": "Fail with a long error page",
                    "responses": {"500": _error("Always")}},
        },
    },
    "components": {"schemas": {"Pet": PET, "Category": CATEGORY}},
}


class PetShop:
    """The API as a WSGI application, its pets in memory."""

    def __init__(self, token: str = "pet-secret") -> None:
        self.token = token
        self._lock = threading.Lock()  # guards pets and next_id
        self.pets: dict[int, dict[str, Any]] = {1: {"id": 1, "name": "Tom", "species": "cat", "age": 3},
                                                2: {"id": 2, "name": "Rex", "species": "dog", "age": 5}}
        self.next_id = 3
        self.routes = Map([Rule("/openapi.json", endpoint="on_spec"), Rule("/v1/pets", endpoint="on_pets"),
                           Rule("/v1/pets/<int:pet_id>", endpoint="on_pet"), Rule("/v1/notes/<path:name>", endpoint="on_note"),
                           Rule("/v1/crash", endpoint="on_crash")])

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request = Request(environ)
        try:
            endpoint, values = self.routes.bind_to_environ(environ).match()
            response = getattr(self, endpoint)(request, **values)
        except HTTPException as failed:
            response = _json({"error": failed.description}, failed.code or 500)
        return response(environ, start_response)

    def on_spec(self, request: Request) -> Response:
        return _json(SPEC)

    def on_pets(self, request: Request) -> Response:
        if request.method == "POST":
            if request.headers.get("Authorization") != f"Bearer {self.token}":
                return _json({"error": "Sign in: send Authorization: Bearer <token>"}, 401)
            data = request.get_json(silent=True) or {}
            if not data.get("name") or data.get("species") not in ("cat", "dog", "fish"):
                return _json({"error": "A pet needs a name and a species (cat, dog or fish)"}, 422)
            with self._lock:
                pet = {"id": self.next_id, "name": data["name"], "species": data["species"], "age": data.get("age")}
                self.pets[self.next_id] = pet
                self.next_id += 1
            return _json(pet, 201)
        with self._lock:
            found = [p for p in self.pets.values() if request.args.get("species") in (None, p["species"])]
        return _json(found[: int(request.args.get("limit", 20))])

    def on_pet(self, request: Request, pet_id: int) -> Response:
        with self._lock:
            pet = self.pets.get(pet_id)
            if pet is None:
                raise NotFound(f"No pet {pet_id}")
            if request.method == "DELETE":
                if request.headers.get("Authorization") != f"Bearer {self.token}":
                    return _json({"error": "Sign in to remove pets"}, 401)
                del self.pets[pet_id]
                return Response(status=204)
        return _json(pet)

    def on_note(self, request: Request, name: str) -> Response:
        return _json({"name": name, "request_id": request.headers.get("X-Request-Id")})

    def on_crash(self, request: Request) -> Response:
        return Response("Internal error: " + "x" * 10_000, status=500, content_type="text/plain")


def _json(data: Any, status: int = 200) -> Response:
    return Response(json.dumps(data), status=status, content_type="application/json")


if __name__ == "__main__":
    from minimcp.httpd import WSGIServer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    parser.add_argument("--token", default="pet-secret")
    options = parser.parse_args()
    server = WSGIServer(PetShop(options.token), "127.0.0.1", options.port)
    print(f"Pet shop API on http://127.0.0.1:{server.port}/ (spec: /openapi.json)", flush=True)
    server.run()
