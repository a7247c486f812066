"""The OpenAPI document is valid, and generated requests never get a 5xx or an off-schema answer."""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from openapi_spec_validator import validate
from schemathesis import GenerationMode
from schemathesis.config._checks import NegativeDataRejectionConfig
from schemathesis.specs.openapi.checks import ignored_auth, positive_data_acceptance

from searchsvc.domain.facets import FACETS
from searchsvc.domain.query import DEFAULT_PER_PAGE, MAX_RESULT_WINDOW
from searchsvc.service import DEFAULT_AUTHOR_PER_PAGE
from tests.support import examples

# Per read operation and generation mode (valid requests, and invalid ones where the operation
# has parameters): the 11 read operations make over 1,000 requests in all. `make fuzz-api`
# runs many more (SEARCHSVC_FUZZ_SCALE).
FUZZ_SCALE = int(os.environ.get("SEARCHSVC_FUZZ_SCALE", "1"))
EXAMPLES_PER_OPERATION = 60 * FUZZ_SCALE
# What an invalid request may be answered with: schemathesis' list, and 413 for a query string
# over the service's limit (which every operation documents).
REJECTIONS = (400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429)
# Per write operation, with a write key: the 6 make over 1,000 requests in all.
WRITE_EXAMPLES_PER_OPERATION = 180 * FUZZ_SCALE
WRITE_OPERATIONS = (
    ("/api/v1/records", "POST"),
    ("/api/v1/records/{record_id}", "PUT"),
    ("/api/v1/records/{record_id}", "DELETE"),
    ("/api/v1/records/delete", "POST"),
    ("/api/v1/tasks", "GET"),
    ("/api/v1/tasks/{task_id}", "GET"),
)
DOCUMENTED_PATHS = (
    "/api/v1/search",
    "/api/v1/search.atom",
    "/api/v1/records/{record_id}",
    "/api/v1/records/{record_id}/similar",
    "/api/v1/suggest",
    "/api/v1/facets/{facet}",
    "/api/v1/authors/{name}",
    "/api/v1/stats",
    "/api/v1/records",
    "/api/v1/records/delete",
    "/api/v1/tasks",
    "/api/v1/tasks/{task_id}",
    "/healthz",
    "/readyz",
    "/metrics",
)


# The paths read without a key (writes and tasks are generated with one, below).
READ_PATHS = tuple(
    p
    for p in DOCUMENTED_PATHS
    if p not in ("/api/v1/records", "/api/v1/records/delete") and not p.startswith("/api/v1/tasks")
)


@pytest.fixture(scope="module")
def spec(app):
    response = app.test_client().get("/api/v1/openapi.json")
    assert response.status_code == 200
    return response.get_json()


def test_openapi_document_validates(spec):
    validate(spec)
    assert spec["openapi"].startswith("3.")


def test_every_endpoint_is_documented(spec):
    assert set(spec["paths"]) == set(DOCUMENTED_PATHS)


def test_search_parameters_and_errors_are_documented(spec):
    operation = spec["paths"]["/api/v1/search"]["get"]
    parameters = {p["name"]: p for p in operation["parameters"]}
    assert set(parameters) == {
        "q",
        "author",
        "category",
        "year",
        "year_from",
        "year_to",
        "sort",
        "page",
        "per_page",
        "facets",
        "facet_size",
        "highlight",
        "fields",
        "subject",
        "crosslists",
        "mode",
    }
    assert parameters["crosslists"]["schema"]["enum"] == ["include", "exclude"]
    assert parameters["mode"]["schema"]["enum"] == ["lexical", "hybrid", "semantic"]
    assert parameters["author"]["explode"] is True  # repeatable
    assert parameters["facets"]["explode"] is False  # comma list
    assert parameters["per_page"]["schema"]["maximum"] == 100
    assert {"200", "400", "503", "default"} <= set(operation["responses"])
    error = spec["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]


def test_every_facet_described_once_is_a_repeatable_filter_of_every_search(spec, runner):
    # domain/facets.py describes the facets; the API's parameters, the POST body, the OpenAPI
    # document and the CLI's options follow from that one list.
    get = {p["name"]: p for p in spec["paths"]["/api/v1/search"]["get"]["parameters"]}
    body = spec["paths"]["/api/v1/search"]["post"]["requestBody"]["content"]["application/json"]
    posted = _resolved(spec, body["schema"])["properties"]
    options = runner("search", "--help").output
    for facet in FACETS:
        assert get[facet.name]["explode"] is True, facet.name
        assert posted[facet.name]["type"] == "array", facet.name
        assert f"--{facet.name}" in options, facet.name


def _resolved(spec, schema):
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def fuzzed_schema(app):
    """The app's OpenAPI document for schemathesis, with every check on."""
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app)
    schema.config.checks.negative_data_rejection = NegativeDataRejectionConfig(
        expected_statuses=list(REJECTIONS)
    )
    return schema


@pytest.fixture(scope="module")
def api_schema(app):
    return fuzzed_schema(app)


# schemathesis' pytest plugin (`from_fixture`) does not run under pytest 9 yet, so each
# operation's Hypothesis strategy is driven here directly.
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize(
    ("path", "method"), [*((path, "GET") for path in READ_PATHS), ("/api/v1/search", "POST")]
)
def test_generated_requests_get_no_5xx_and_answers_that_match_the_schema(
    api_schema, path, method, mode
):
    operation = api_schema[path][method]

    def answers_within_the_contract(case):
        # The WSGI test client does not gunzip; compression is tested in test_api_http.py.
        response = case.call(headers={"Accept-Encoding": "identity"})
        assert response.status_code < 500, response.text
        excluded = [positive_data_acceptance] if refused_by_an_unstated_rule(case, response) else []
        case.validate_response(response, excluded_checks=excluded)

    try:
        drive(operation, EXAMPLES_PER_OPERATION, answers_within_the_contract, mode)
    except Unsatisfiable:
        # No parameter, or none with a rule to break (an id is any string).
        assert mode is GenerationMode.NEGATIVE
        pytest.skip("no invalid request of this operation can be made")


def refused_by_an_unstated_rule(case, response) -> bool:
    """Whether a 400 answers a rule the OpenAPI document cannot state (checked here to be
    that rule): the query language's grammar (a 400 that points into the query), or the result
    window, which relates two parameters (page x per_page at most MAX_RESULT_WINDOW)."""
    if response.status_code != 400:
        return False
    error = response.json()["error"]
    sent = case.body if isinstance(case.body, dict) else case.query or {}
    if error["code"] == "invalid_query":
        assert 0 <= error["details"]["position"] <= len(str(sent.get("q", "")))
        return True
    if "page x per_page" in error["message"]:
        default = DEFAULT_AUTHOR_PER_PAGE if "/authors/" in case.path else DEFAULT_PER_PAGE
        page, per_page = int(sent.get("page", 1)), int(sent.get("per_page", default))
        assert page * per_page > MAX_RESULT_WINDOW
        return True
    return False


def drive(operation, count: int, check, mode=GenerationMode.POSITIVE) -> None:
    """Run `check(case)` on `count` (scaled by tests.support.examples) generated requests of an
    OpenAPI operation, the same ones on every run."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=examples(count),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def each(case):
        check(case)

    each()


@pytest.fixture(scope="module")
def write_app(tmp_path_factory):
    from searchsvc.app import create_app
    from searchsvc.tasks import TaskQueue, queue_path
    from searchsvc.tasks.keys import KeyStore
    from tests.support import build_index

    index = build_index(tmp_path_factory.mktemp("openapi-writes") / "index")
    app = create_app({"INDEX": index, "TESTING": True, "WRITE_RATE_LIMIT": ""})
    app.config["TEST_KEY"] = KeyStore(TaskQueue(queue_path(index))).create("t", ("write",))[1]
    return app


@pytest.mark.slow
@pytest.mark.parametrize(("path", "method"), WRITE_OPERATIONS)
def test_generated_writes_with_a_key_get_no_5xx_and_answers_that_match_the_schema(
    write_app, path, method
):
    schema = fuzzed_schema(write_app)
    key = {"Authorization": f"Bearer {write_app.config['TEST_KEY']}"}

    def answers_within_the_contract(case):
        response = case.call(headers={**key, "Accept-Encoding": "identity"})
        assert response.status_code < 500, response.text
        # Schemathesis takes any key it did not make for a wrong one; keys are tested in
        # test_api_writes.py.
        excluded = [ignored_auth]
        if response.status_code in (400, 413):
            # Rules a JSON schema does not state (ids without control characters, the path's
            # id in a PUT body, batch and body limits): clear errors, in the error shape.
            assert set(response.json()) == {"error"}
            excluded.append(positive_data_acceptance)
        if response.status_code == 400 and "page x per_page" in response.json()["error"]["message"]:
            # The result window (page x per_page at most MAX_RESULT_WINDOW) relates two
            # parameters, which a schema cannot state: a clear 400 naming the limit.
            sent = case.body if isinstance(case.body, dict) else case.query or {}
            page, per_page = int(sent.get("page", 1)), int(sent.get("per_page", 10))
            assert page * per_page > MAX_RESULT_WINDOW
            excluded.append(positive_data_acceptance)
        case.validate_response(response, excluded_checks=excluded)

    drive(schema[path][method], WRITE_EXAMPLES_PER_OPERATION, answers_within_the_contract)


def test_writes_document_their_key_body_and_errors(spec):
    assert spec["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key made with `searchsvc keys create`.",
    }
    post = spec["paths"]["/api/v1/records"]["post"]
    assert post["security"] == [{"bearerAuth": []}]
    assert set(post["requestBody"]["content"]) == {"application/json", "application/x-ndjson"}
    assert {"202", "400", "401", "403", "413", "415", "429", "503"} <= set(post["responses"])
    for path, method in WRITE_OPERATIONS:
        assert spec["paths"][path][method.lower()]["security"] == [{"bearerAuth": []}]
    # Reads stay open by default: no key documented on them.
    assert "security" not in spec["paths"]["/api/v1/search"]["get"]
